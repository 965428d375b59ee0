//! The reflector: answers every client at once, plain echo (RFC 862: the
//! bytes back, unchanged) or STAMP (RFC 8762: the test packet rewritten in
//! place).
//!
//! - `serve`: the pinned loop. One unconnected socket serves every client,
//!   so no client is ever locked out (a socket connected to one client for
//!   speed refuses every other peer while it stays connected).
//! - `sessions`: one session per peer, reported as ended after
//!   `session_idle` of silence.
//! - `answer_log`: with `synapse server --log`, the socket also stamps in the
//!   kernel, both ways, and each answer's points go to the log's ring.
//!   Without one, nothing of that runs.

pub mod admission;
mod answer_log;
mod follow_up;
pub mod groups;
pub mod limits;
mod peer_hash;
mod serve;
mod sessions;
mod stamp_counters;
pub mod tcp;
mod test_clock;

pub use answer_log::AnswerPoints;

use super::affinity::{Role, ThreadPlacement, place_current_thread};
use super::protocol::stamp_key::StampKey;
use super::socket::{bind_udp, set_wait_mode};
use super::sys::timestamping;
use super::timestamping::phc_map::PhcMap;
use super::{EngineError, Placement, StopFlag};
use crate::protocol::responder_name::ResponderName;
use admission::Admission;
use answer_log::AnswerLog;
use groups::{GroupJoins, Membership};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;
use std::time::Duration;

/// Reflector settings.
#[derive(Debug, Clone)]
pub struct ReflectorConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// Where the thread runs and how it waits.
    pub thread: ThreadPlacement,
    /// A peer silent this long has ended its session.
    pub session_idle: Duration,
    /// Capacity of the event ring.
    pub ring_capacity: usize,
    /// What to answer.
    pub protocol: Protocol,
    /// Room for answers on their way to the per-packet log (0: no log).
    pub log_capacity: usize,
    /// Who is answered, and how much.
    pub admission: Admission,
    /// STAMP authenticated mode: answer only requests signed with this key,
    /// and sign the answers.
    pub stamp_key: Option<StampKey>,
    /// The NIC stamps too.
    pub hardware: Option<NicStamping>,
    /// STAMP: the format of the T2 and T3 it writes (RFC 8762 §4.2.1; the
    /// Z bit of its error estimate says which).
    pub stamp_format: crate::protocol::stamp::TimeFormat,
    /// Multicast groups to join (none: unicast only).
    pub groups: GroupJoins,
    /// The name its plain echo answers carry when a request asks (a
    /// multicast client tells its responders apart by it).
    pub name: Option<ResponderName>,
}

/// A reflector's NIC stamps its packets: the caller switched its stamping
/// on and holds the guard that puts it back.
#[derive(Debug, Clone, Default)]
pub struct NicStamping {
    /// The NIC's clock on the system clock, when it could be read: a
    /// Follow-Up then carries the NIC's send time.
    pub clock: Option<PhcMap>,
}

impl ReflectorConfig {
    /// A `protocol` reflector on `bind`: blocking, on the CPU Synapse picks,
    /// sessions ending after a second of silence, no log.
    pub fn new(bind: SocketAddr, protocol: Protocol) -> Self {
        Self {
            bind,
            thread: ThreadPlacement::auto(Role::Reflector),
            session_idle: Duration::from_secs(1),
            ring_capacity: 8192,
            protocol,
            log_capacity: 0,
            admission: Admission::default(),
            stamp_key: None,
            hardware: None,
            stamp_format: crate::protocol::stamp::TimeFormat::Ntp,
            groups: GroupJoins::default(),
            name: None,
        }
    }
}

/// What a reflector answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// RFC 862 echo: every datagram back, unchanged.
    Echo,
    /// STAMP (RFC 8762) session-reflector: T2 from the kernel's RX stamp,
    /// T3 read just before the send; malformed packets get no answer.
    Stamp,
}

/// One client as the reflector sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    /// The client's address.
    pub peer: SocketAddr,
    /// Datagrams echoed.
    pub packets: u64,
    /// Bytes echoed.
    pub bytes: u64,
    /// When it was last heard from, in ns since the reflector started.
    pub last_seen_ns: u64,
    /// Its datagrams not answered (rate, malformed, unauthenticated: the
    /// reasons that can follow a session's admission).
    pub refused: Refusals,
}

/// What the reflector tells its front end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReflectorEvent {
    /// Periodic state of an active session.
    Active(SessionInfo),
    /// A session went idle and was closed.
    Ended(SessionInfo),
    /// Periodic totals since start, and the reflector's clock (ns since it
    /// started) when they were taken.
    Totals(ReflectorTotals, u64),
}

/// Counters over the reflector's whole life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReflectorTotals {
    /// Datagrams echoed.
    pub packets: u64,
    /// Bytes echoed.
    pub bytes: u64,
    /// Distinct sessions started.
    pub sessions: u64,
    /// Echoes the kernel refused to send.
    pub send_errors: u64,
    /// Datagrams too large for the receive buffer (not echoed: the reflector
    /// never sends more, or other, bytes than it received).
    pub oversized: u64,
    /// STAMP: answers whose T2 had to come from user space because the
    /// kernel gave no RX stamp.
    pub t2_from_user: u64,
    /// Datagrams not answered, by why.
    pub refused: Refusals,
    /// STAMP: requests with RFC 8972 TLVs, and the TLVs refused.
    pub tlv: TlvTotals,
}

/// What the STAMP reflector made of requests' RFC 8972 TLVs. A refused
/// TLV is answered with its flag set (the request is still answered, as
/// §4 says), never read past the datagram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TlvTotals {
    /// Requests that carried TLVs.
    pub requests: u64,
    /// TLVs answered U: a type this reflector does not know, or left
    /// unprocessed after a malformed one.
    pub unrecognized: u64,
    /// TLVs answered M: a length their type does not allow, or one that
    /// claims more octets than the datagram holds.
    pub malformed: u64,
    /// Requests whose TLVs were all answered I: their HMAC TLV was
    /// missing (authenticated mode), misplaced or wrong.
    pub integrity_failed: u64,
    /// Answers that carried the previous answer's real send time.
    pub follow_ups: u64,
}

impl TlvTotals {
    /// What was counted since `base` was taken.
    pub fn since(&self, base: &TlvTotals) -> TlvTotals {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        TlvTotals {
            requests: d(self.requests, base.requests),
            unrecognized: d(self.unrecognized, base.unrecognized),
            malformed: d(self.malformed, base.malformed),
            integrity_failed: d(self.integrity_failed, base.integrity_failed),
            follow_ups: d(self.follow_ups, base.follow_ups),
        }
    }
}

/// Why a datagram was not answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// From a service port (below 1024: echo, STAMP, …), so that two
    /// reflectors can never be set bouncing a (spoofed) datagram between
    /// them.
    ServicePort,
    /// From a source outside `--allow`.
    NotAllowed,
    /// A new session while `--max-sessions` are open.
    Sessions,
    /// Over its source's `--max-pps` or over `--max-total-pps`.
    Rate,
    /// STAMP: not a test packet.
    Malformed,
    /// Authenticated STAMP: no HMAC, or one that does not verify.
    Unauthenticated,
}

/// Datagrams not answered, counted by [`Refusal`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Refusals {
    /// [`Refusal::ServicePort`].
    pub service_port: u64,
    /// [`Refusal::NotAllowed`].
    pub not_allowed: u64,
    /// [`Refusal::Sessions`].
    pub sessions: u64,
    /// [`Refusal::Rate`].
    pub rate: u64,
    /// [`Refusal::Malformed`].
    pub malformed: u64,
    /// [`Refusal::Unauthenticated`].
    pub unauthenticated: u64,
}

impl Refusals {
    /// The reasons' names, as reports and metric labels spell them.
    pub const REASONS: [&'static str; 6] = [
        "service_port",
        "not_allowed",
        "sessions",
        "rate",
        "malformed",
        "unauthenticated",
    ];

    /// Counts one refusal.
    #[inline]
    pub fn count(&mut self, why: Refusal) {
        *match why {
            Refusal::ServicePort => &mut self.service_port,
            Refusal::NotAllowed => &mut self.not_allowed,
            Refusal::Sessions => &mut self.sessions,
            Refusal::Rate => &mut self.rate,
            Refusal::Malformed => &mut self.malformed,
            Refusal::Unauthenticated => &mut self.unauthenticated,
        } += 1;
    }

    /// The counts in the order of [`Refusals::REASONS`].
    pub fn counts(&self) -> [u64; 6] {
        [
            self.service_port,
            self.not_allowed,
            self.sessions,
            self.rate,
            self.malformed,
            self.unauthenticated,
        ]
    }

    /// All refusals.
    pub fn total(&self) -> u64 {
        self.counts().iter().sum()
    }

    /// What was counted since `base` was taken.
    pub fn since(&self, base: &Refusals) -> Refusals {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        Refusals {
            service_port: d(self.service_port, base.service_port),
            not_allowed: d(self.not_allowed, base.not_allowed),
            sessions: d(self.sessions, base.sessions),
            rate: d(self.rate, base.rate),
            malformed: d(self.malformed, base.malformed),
            unauthenticated: d(self.unauthenticated, base.unauthenticated),
        }
    }
}

impl std::fmt::Display for Refusals {
    /// `1,200 rate, 3 unauthenticated` (the non-zero reasons), or `none`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for (name, n) in Self::REASONS.iter().zip(self.counts()) {
            if n > 0 {
                let sep = if first { "" } else { ", " };
                let n = synapse_units::group_thousands(n);
                write!(f, "{sep}{n} {}", name.replace('_', " "))?;
                first = false;
            }
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// What a stopped reflector hands back.
#[derive(Debug, Clone)]
pub struct ReflectorOutcome {
    /// Life totals.
    pub totals: ReflectorTotals,
    /// Where the thread ran.
    pub placement: Placement,
    /// Sessions that ended without the front end hearing of it: those still
    /// open at the stop, and ended ones the event ring had no room for.
    pub open_at_stop: Vec<SessionInfo>,
    /// Answers the log's ring had no room for.
    pub log_overflow: u64,
    /// TX stamps that came after their answer had been logged.
    pub stale_stamps: u64,
    /// Multicast groups left as it stopped.
    pub groups_left: usize,
}

/// A running reflector.
#[derive(Debug)]
pub struct ReflectorRun {
    /// Session and totals events for a front end.
    pub events: rtrb::Consumer<ReflectorEvent>,
    /// Each answer's points, for the per-packet log (when asked for).
    pub responses: Option<rtrb::Consumer<AnswerPoints>>,
    /// The bound address (with the real port when 0 was asked for).
    pub local: SocketAddr,
    /// The multicast groups it joined.
    pub joined: Vec<Membership>,
    /// The interface it joined them on (`None`: the route's).
    pub join_interface: Option<String>,
    stop: StopFlag,
    handle: Option<JoinHandle<Result<ReflectorOutcome, EngineError>>>,
}

impl ReflectorRun {
    /// Whether the thread has ended (stopped, or failed).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Asks the thread to stop (within one tick).
    pub fn stop(&self) {
        self.stop.raise();
    }

    /// Waits for the thread. The event ring stays readable afterwards, so
    /// the last events can still be drained.
    pub fn join(&mut self) -> Result<ReflectorOutcome, EngineError> {
        super::join_once(
            &mut self.handle,
            "reflector thread panicked or was already joined",
        )
    }
}

/// Binds and starts the pinned reflector thread.
pub fn start_reflector(cfg: ReflectorConfig, stop: StopFlag) -> Result<ReflectorRun, EngineError> {
    let socket = bind_udp(cfg.groups.binding(cfg.bind))?;
    let mut joined = cfg.groups.join(socket.as_raw_fd(), cfg.bind)?;
    let answer_to_group = cfg.groups.answer_to_group && cfg.groups.any();
    if answer_to_group {
        joined.answer_by_interface(cfg.bind.is_ipv6())?;
    }
    let (memberships, join_interface) = (joined.memberships.clone(), joined.interface.clone());
    set_wait_mode(&socket, cfg.thread.busy_poll, serve::TICK)?;
    // Bursts from many clients should queue, not drop; failure is harmless.
    let _ = socket.set_recv_buffer_size(4 << 20);
    let local = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .unwrap_or(cfg.bind);
    let (log, responses, rx_cmsg) = enable_timestamps(&socket, &cfg, local)?;
    let answer_from_arrival = local.ip().is_unspecified();
    if answer_from_arrival {
        crate::sys::pktinfo::enable(socket.as_raw_fd(), local.is_ipv6())
            .map_err(EngineError::io("cannot enable IP_PKTINFO"))?;
    }
    let (mut producer, events) = rtrb::RingBuffer::new(cfg.ring_capacity.max(16));
    let thread_stop = stop.clone();
    let handle = std::thread::Builder::new()
        .name("synapse-reflector".into())
        .spawn(move || {
            let placed = place_current_thread(cfg.thread);
            let placement = placed.placement.clone();
            let wire = serve::Wire {
                protocol: cfg.protocol,
                rx_cmsg,
                busy_poll: cfg.thread.busy_poll,
                answer_from_arrival,
                answer_to_group,
                local,
                hardware: cfg.hardware.is_some(),
                format: cfg.stamp_format,
            };
            let mut reflector =
                serve::Reflector::new(&socket, wire, log, cfg.session_idle, cfg.admission);
            reflector.authenticate_with(cfg.stamp_key);
            reflector.stamp_wire_with(cfg.hardware.and_then(|h| h.clock));
            reflector.name_answers(cfg.name);
            let served = reflector.serve(&thread_stop, &mut producer);
            let groups_left = joined.leave();
            served?;
            Ok(ReflectorOutcome {
                groups_left,
                ..reflector.finish(placement)
            })
        })
        .map_err(EngineError::io("cannot start the reflector thread"))?;
    Ok(ReflectorRun {
        events,
        responses,
        local,
        joined: memberships,
        join_interface,
        stop,
        handle: Some(handle),
    })
}

/// What the socket stamps: both ways with a log (the answer log matches TX
/// stamps), RX for STAMP (T2) with TX stamps numbered but asked per answer
/// (Follow-Up), nothing otherwise. Returns the log, its ring's reading
/// end, and the RX stamps' control-message type.
type Stamping = (
    Option<AnswerLog>,
    Option<rtrb::Consumer<AnswerPoints>>,
    Option<i32>,
);

fn enable_timestamps(
    socket: &socket2::Socket,
    cfg: &ReflectorConfig,
    local: SocketAddr,
) -> Result<Stamping, EngineError> {
    let fd = socket.as_raw_fd();
    let cannot_stamp = EngineError::io("cannot enable SO_TIMESTAMPING");
    let hardware = cfg.hardware.is_some();
    let (log, responses, rx_cmsg) = if cfg.log_capacity > 0 {
        let (tx, rx) = rtrb::RingBuffer::new(cfg.log_capacity);
        let (log, kind) = AnswerLog::enable(fd, tx, hardware).map_err(cannot_stamp)?;
        (Some(log), Some(rx), Some(kind))
    } else if cfg.protocol == Protocol::Stamp {
        // No TX stamp unless an answer asks (Follow-Up): OPT_ID numbers
        // only those, so answers that do not ask cost nothing.
        let mut flags = timestamping::flags::RX_SOFTWARE
            | timestamping::flags::REPORT_SOFTWARE
            | timestamping::flags::OPTIONS;
        if hardware {
            flags |= libc::SOF_TIMESTAMPING_RX_HARDWARE | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
        }
        let kind = timestamping::enable(fd, flags).map_err(cannot_stamp)?;
        (None, None, Some(kind))
    } else {
        (None, None, None)
    };
    if cfg.protocol == Protocol::Stamp {
        crate::sys::sockopt::enable_ttl(fd, local.is_ipv6())
            .map_err(EngineError::io("cannot enable IP_RECVTTL"))?;
        // The CoS TLV reports what each request arrived with.
        crate::sys::marks::enable_recv_tos(fd, local.is_ipv6())
            .map_err(EngineError::io("cannot enable IP_RECVTOS"))?;
    }
    if rx_cmsg.is_some() {
        // The kernel switches RX stamping on a moment after it is asked;
        // datagrams before then would go unstamped.
        timestamping::wait_for_rx_stamping(Duration::from_millis(500));
    }
    Ok((log, responses, rx_cmsg))
}
