//! The client: a pinned thread measuring round trips to one reflector.
//!
//! [`start_client`] binds (so a bad address fails at once, synchronously)
//! and starts the thread; the loop itself is in [`pingpong`]. Results leave
//! through a lock-free ring of [`Record`]s for live consumers and through
//! the [`ClientOutcome`] the thread returns, whose statistics are
//! authoritative: a consumer that falls behind loses nothing from them.

mod armed_wait;
pub mod extensions;
mod far_error;
mod give_up;
pub mod group;
mod output;
pub mod paced;
mod pingpong;
pub mod prober;
mod recv_timeout;
mod run_loop;
mod run_token;
mod seen;
pub mod sequence;
mod stamps;
mod stop;
mod tcp;

use super::affinity::{Placement, Role, ThreadPlacement, place_current_thread};
use super::mono::Mono;
use super::points::Points;
use super::protocol::stamp::TimeFormat;
use super::protocol::stamp_key::StampKey;
use super::protocol::tlv::StampTlvs;
use super::socket::{
    ClientSockets, GroupSocketOptions, client_sockets, group_socket, is_this_host, paced_socket,
    wildcard_for,
};
use super::timestamping::phc_map::{NicClockFigures, PhcMap};
use super::timestamping::{self, TimestampMode, capabilities::Source};
use super::{EngineError, StopFlag};
use output::{ClientSink, Output};
use paced::schedule::Schedule;
use paced::{Budget, PacedStamps, Pacer, PacerConfig, ProbeConfig, SlotWake};
use pingpong::Pinger;
use recv_timeout::RecvTimeout;
use stamps::ClientStamps;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use stop::STOP_CHECK;
use synapse_stats::{Record, SegmentSet, Shape, Stats};

/// Everything the client loop needs to know.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The reflector.
    pub server: SocketAddr,
    /// Local address to bind (default: wildcard of the server's family).
    pub bind: Option<SocketAddr>,
    /// Stop after this many measured packets (`None`: run until stopped or
    /// until `duration`).
    pub packets: Option<u64>,
    /// Stop after measuring this long.
    pub duration: Option<Duration>,
    /// Packets sent first and excluded from statistics.
    pub warmup: u64,
    /// How long to wait for each reply.
    pub timeout: Duration,
    /// Payload bytes.
    pub size: usize,
    /// Where the thread runs and how it waits.
    pub thread: ThreadPlacement,
    /// Capacity of the ring to the live consumer, in records.
    pub ring_capacity: usize,
    /// Which clock stamps the packets.
    pub timestamps: TimestampMode,
    /// Speak STAMP (RFC 8762) instead of plain echo.
    pub stamp: bool,
    /// STAMP: the Session-Sender Identifier sent (RFC 8972; 0: none).
    pub ssid: u16,
    /// STAMP authenticated mode's shared key.
    pub stamp_key: Option<StampKey>,
    /// STAMP: the format of the T1 it sends (NTP or PTP; replies are read
    /// by their own Z bit).
    pub stamp_format: TimeFormat,
    /// Class of service: the TOS (Traffic Class) byte requests leave with,
    /// set once on the socket, and each reply's read on arrival (`None`:
    /// the system's marks, nothing read).
    pub marks: Option<u8>,
    /// STAMP: the RFC 8972 TLVs each request carries.
    pub tlvs: StampTlvs,
    /// Kernel stamps in ping-pong: TX stamps on one packet in this many.
    pub tx_stamp_every: u32,
    /// Capacity of the per-packet log ring, in packets (0: no log).
    pub log_capacity: usize,
    /// Send on this schedule (paced) instead of ping-pong.
    pub schedule: Option<Schedule>,
    /// UDP datagrams, or request and response over TCP.
    pub transport: super::Transport,
    /// TCP: a new connection per transaction (TCP_CRR).
    pub connect_each: bool,
    /// Paced TCP (the agent's peers): the first slot's offset from the
    /// start.
    pub phase: Duration,
    /// TCP: a peer that refuses, resets or is silent is never an error:
    /// its requests count lost and the connection is tried again with
    /// backoff, until stopped (the agent's peers).
    pub keep_trying: bool,
    /// End the run once no request has had a timely reply for this long
    /// (after the first reply: before it, a silent peer is an error at
    /// once); `None`: never.
    pub give_up_after: Option<Duration>,
    /// A multicast `server` (a group): how the requests are sent and whom
    /// each waits for.
    pub multicast: group::MulticastOptions,
}

impl ClientConfig {
    /// A ping-pong run's budget is spent: `measured` requests sent after
    /// the warm-up, or the time from `start` (the first of them) to `now`
    /// (worked out only when the budget is a time).
    #[inline]
    pub(crate) fn budget_spent(&self, measured: u64, start: Mono, now: Mono) -> bool {
        self.packets.is_some_and(|n| measured >= n)
            || self
                .duration
                .is_some_and(|d| now.duration_since(start) >= d)
    }

    /// Plain echo to `server` until stopped: no warm-up, 100 ms timeout,
    /// 8-byte payload, user-space stamps, blocking on the CPU Synapse picks.
    pub fn new(server: SocketAddr) -> Self {
        Self {
            server,
            bind: None,
            packets: None,
            duration: None,
            warmup: 0,
            timeout: Duration::from_millis(100),
            size: 8,
            thread: ThreadPlacement::auto(Role::Client),
            ring_capacity: 1 << 16,
            timestamps: TimestampMode::User,
            stamp: false,
            ssid: 0,
            stamp_key: None,
            stamp_format: TimeFormat::Ntp,
            marks: None,
            tlvs: StampTlvs::default(),
            tx_stamp_every: 1,
            log_capacity: 0,
            schedule: None,
            transport: super::Transport::Udp,
            connect_each: false,
            phase: Duration::ZERO,
            keep_trying: false,
            give_up_after: None,
            multicast: group::MulticastOptions::default(),
        }
    }
}

/// How a run stamps its packets, for reports and the display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StampingInfo {
    /// The source in use.
    pub source: Source,
    /// The interface the packets leave by, when known.
    pub interface: Option<String>,
    /// Why it is not what was asked for.
    pub note: Option<String>,
    /// Synapse switched the NIC's hardware stamping on for this run (and
    /// puts the old setting back at the end).
    pub hardware_enabled_here: bool,
    /// The protocol carries the reflector's T2/T3 (STAMP).
    pub stamp: bool,
    /// The segments the run can measure.
    pub segments: SegmentSet,
    /// Kernel stamps: TX stamps on one packet in this many (1: all); the
    /// split comes from those packets.
    pub tx_every: u32,
    /// STAMP Follow-Up Telemetry: T3 is the reflector's kernel TX stamp,
    /// carried by the next reply.
    pub follow_up: bool,
    /// The reflector's Follow-Ups came from its NIC (known once replies
    /// came: reports set it).
    pub follow_up_hardware: bool,
}

impl Default for StampingInfo {
    fn default() -> Self {
        Self {
            source: Source::User,
            interface: None,
            note: None,
            hardware_enabled_here: false,
            stamp: false,
            segments: SegmentSet::default(),
            tx_every: 1,
            follow_up: false,
            follow_up_hardware: false,
        }
    }
}

/// What a finished run hands back.
#[derive(Debug, Clone)]
pub struct ClientOutcome {
    /// Authoritative statistics: every record, whether or not the live
    /// consumer kept up.
    pub stats: Stats,
    /// Measured time, from the first post-warm-up send to the end.
    pub measured: Duration,
    /// Where the thread ran.
    pub placement: Placement,
    /// The run ended because it was asked to stop.
    pub interrupted: bool,
    /// Records the live consumer missed because its ring was full.
    pub ring_overflow: u64,
    /// Packets the per-packet log missed because its writer fell behind.
    pub log_overflow: u64,
    /// TX stamps that came too late to be matched to their packet.
    pub stale_stamps: u64,
    /// Authenticated STAMP: datagrams refused as replies because their
    /// HMAC did not verify (never measured).
    pub unauthenticated: u64,
    /// How the packets were stamped.
    pub stamping: StampingInfo,
    /// TCP: its connections, handshakes, ACKs and the kernel's view.
    pub tcp: Option<synapse_stats::TcpFigures>,
    /// STAMP: what the replies' RFC 8972 TLVs said (`None`: none asked).
    pub extensions: Option<extensions::TlvSummary>,
    /// Hardware stamps: how the NIC's clock was placed on the system clock.
    pub nic_clock: Option<NicClockFigures>,
    /// The run gave up on a silent peer (`give_up_after`): how long no
    /// request had had a timely reply when it did.
    pub gave_up: Option<Duration>,
    /// A multicast run: each responder's figures, and the fan-out.
    pub group: Option<group::GroupOutcome>,
}

/// A running client.
#[derive(Debug)]
pub struct ClientRun {
    /// Records as they happen, for a live consumer.
    pub records: rtrb::Consumer<Record>,
    /// Every packet's points, for a per-packet log (when asked for).
    pub points: Option<rtrb::Consumer<Points>>,
    /// The local address the client sends from.
    pub local: SocketAddr,
    /// How packets are stamped.
    pub stamping: StampingInfo,
    /// What its statistics hold, for consumers that keep their own.
    pub shape: Shape,
    /// TCP: the connection's state and the kernel's view, as they go.
    pub tcp_live: Option<Arc<synapse_stats::TcpLive>>,
    /// A multicast run: each responder's records as they happen, tagged
    /// with its index (the order it was first heard in).
    pub responders: Option<rtrb::Consumer<prober::PeerRecord>>,
    /// Records of that ring it had no room for.
    pub responder_overflow: Arc<AtomicU64>,
    /// A multicast run: each responder as it is first heard (its index,
    /// name and address), once.
    pub responder_directory: Option<rtrb::Consumer<group::ResponderEntry>>,
    /// A multicast run's per-packet log rows, each responder's (when a
    /// log is kept).
    pub responder_points: Option<rtrb::Consumer<group::ResponderPoints>>,
    stop: StopFlag,
    overflow: Arc<AtomicU64>,
    handle: Option<JoinHandle<Result<ClientOutcome, EngineError>>>,
}

impl ClientRun {
    /// Asks the thread to stop after its current packet.
    pub fn stop(&self) {
        self.stop.raise();
    }

    /// Whether the thread has finished (or was already joined).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Records dropped from the live view so far.
    pub fn ring_overflow(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
    }

    /// Waits for the thread and returns its outcome. The ring stays
    /// readable afterwards, so the last records can still be drained.
    pub fn join(&mut self) -> Result<ClientOutcome, EngineError> {
        super::join_once(
            &mut self.handle,
            "measurement thread panicked or was already joined",
        )
    }
}

/// The run's sockets: ping-pong's pair, or the paced one; and the local
/// address.
fn bind_work(cfg: &ClientConfig) -> Result<(Work, SocketAddr), EngineError> {
    let bind = cfg.bind.unwrap_or_else(|| wildcard_for(cfg.server));
    Ok(match cfg.schedule {
        // A group's run, ping-pong or paced, is the group pinger's.
        _ if cfg.server.ip().is_multicast() => {
            let m = &cfg.multicast;
            let options = GroupSocketOptions {
                hops: m.hops,
                interface: m.interface,
                loopback: m.loopback,
                join: m.join,
            };
            let (socket, local) = group_socket(bind, cfg.server, &options)?;
            let armed = if cfg.thread.busy_poll {
                socket.set_nonblocking(true).map(|()| None)
            } else {
                RecvTimeout::arm(&socket, cfg.timeout.min(STOP_CHECK)).map(|r| r.armed)
            }
            .map_err(EngineError::io("cannot configure socket"))?;
            mark(&socket, cfg)?;
            (Work::Group(socket, armed), local)
        }
        None => {
            let sockets = client_sockets(bind, cfg.server)?;
            // Busy-polling spins on a non-blocking socket; blocking mode
            // waits in the receive itself (see recv_timeout.rs).
            let armed = if cfg.thread.busy_poll {
                sockets.fast.set_nonblocking(true).map(|()| None)
            } else {
                RecvTimeout::arm(&sockets.fast, cfg.timeout.min(STOP_CHECK)).map(|r| r.armed)
            }
            .map_err(EngineError::io("cannot configure socket"))?;
            mark(&sockets.fast, cfg)?;
            let local = sockets.local;
            (Work::PingPong(sockets, armed), local)
        }
        Some(schedule) => {
            // The paced loop marks its own socket (see `paced`).
            let (socket, local) = paced_socket(bind, cfg.server)?;
            (Work::Paced(socket, schedule), local)
        }
    })
}

/// Class of service, set once: the requests' TOS byte, and the replies'
/// read on arrival.
fn mark(socket: &socket2::Socket, cfg: &ClientConfig) -> Result<(), EngineError> {
    let Some(tos) = cfg.marks else {
        return Ok(());
    };
    let fd = socket.as_raw_fd();
    let v6 = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .is_some_and(|a| a.is_ipv6());
    super::sys::marks::set_tos(fd, v6, tos).map_err(EngineError::io("cannot set IP_TOS"))?;
    super::sys::marks::enable_recv_tos(fd, v6).map_err(EngineError::io("cannot enable IP_RECVTOS"))
}

/// Binds the socket (so a bad address fails here, synchronously) and starts
/// the pinned measurement thread: ping-pong, or paced when the config has
/// a schedule.
pub fn start_client(cfg: ClientConfig, stop: StopFlag) -> Result<ClientRun, EngineError> {
    if cfg.transport == super::Transport::Tcp {
        return tcp::start(cfg, stop);
    }
    let (work, local) = bind_work(&cfg)?;
    let chosen = timestamping::choose(cfg.timestamps, local.ip())?;
    let kernel = chosen.source != Source::User;
    let hardware = chosen.source == Source::Hardware;
    // Paced runs stamp every packet: their split is per probe, and a
    // probe's rate is the user's choice, not the loop's.
    let tx_every = match work {
        Work::PingPong(..) | Work::Group(..) if kernel => cfg.tx_stamp_every.max(1),
        _ => 1,
    };
    let stamps = kernel
        .then(|| work.enable_stamps(hardware, tx_every, chosen.clock.clone()))
        .transpose()
        .map_err(EngineError::io("cannot enable SO_TIMESTAMPING"))?;
    let stamping = stamping_of(&cfg, &chosen, tx_every);
    let grouped = matches!(work, Work::Group(..));
    // A group's log rows are its responders': they go on their own ring.
    let (unicast_log, group_log) = match grouped {
        true => (0, cfg.log_capacity),
        false => (cfg.log_capacity, 0),
    };
    let (output, rings) = Output::with_rings(cfg.ring_capacity, unicast_log);
    let (answers, answered) = group::answer_rings(cfg.ring_capacity, group_log);
    let shape = shape_of(&cfg, stamping.segments);
    let stats = Stats::shaped(shape);
    let (thread_info, thread_stop) = (stamping.clone(), stop.clone());
    let nic_map = chosen.clock.clone();
    let handle = std::thread::Builder::new()
        .name("synapse-client".into())
        .spawn(move || {
            // Hardware stamping stays on until this thread is done.
            let _hardware = chosen.hardware;
            let placed = place_current_thread(cfg.thread);
            let placement = placed.placement.clone();
            let outcome = match (work, stamps) {
                (Work::PingPong(sockets, armed), stamps) => {
                    let stamps = stamps.map(Stamping::into_ping_pong);
                    let mut pinger =
                        Pinger::new(&cfg, &sockets, armed, output, stamps.flatten(), stats);
                    run_loop::run(&mut pinger, &cfg, &thread_stop, placement)
                }
                (Work::Group(socket, armed), stamps) => {
                    let stamps = stamps.and_then(Stamping::into_ping_pong);
                    let run = GroupRun {
                        cfg: &cfg,
                        socket: &socket,
                        armed,
                        stop: &thread_stop,
                    };
                    run.run(output, answers, stamps, (stats, shape), placement)
                }
                (Work::Paced(socket, schedule), stamps) => {
                    let stamps = stamps.and_then(Stamping::into_paced);
                    let run = PacedRun {
                        cfg: &cfg,
                        schedule,
                        socket: &socket,
                        stop: &thread_stop,
                        local,
                    };
                    run.run(output, stats, stamps, placement)
                }
            };
            outcome.map(|o| ClientOutcome {
                stamping: thread_info,
                nic_clock: nic_map.as_ref().map(PhcMap::figures),
                ..o
            })
        })
        .map_err(EngineError::io("cannot start the measurement thread"))?;
    Ok(ClientRun {
        records: rings.records,
        points: rings.points,
        local,
        shape,
        stamping,
        tcp_live: None,
        responder_overflow: answered.overflow,
        responders: grouped.then_some(answered.records),
        responder_directory: grouped.then_some(answered.directory),
        responder_points: answered.points,
        stop,
        overflow: rings.overflow,
        handle: Some(handle),
    })
}

/// What a UDP run's stamps are, as its front ends describe them.
fn stamping_of(
    cfg: &ClientConfig,
    chosen: &timestamping::Timestamping,
    tx_every: u32,
) -> StampingInfo {
    let (kernel, hardware) = (
        chosen.source != Source::User,
        chosen.source == Source::Hardware,
    );
    StampingInfo {
        source: chosen.source,
        interface: chosen.interface.clone(),
        note: chosen.note.clone(),
        hardware_enabled_here: chosen.hardware.as_ref().is_some_and(|g| g.changed()),
        stamp: cfg.stamp,
        segments: SegmentSet::for_run(kernel, cfg.stamp, hardware)
            .with_wire(chosen.clock.is_some()),
        tx_every,
        follow_up: cfg.stamp && cfg.tlvs.follow_up,
        follow_up_hardware: false,
    }
}

/// What a run's statistics hold: the segments it can measure, a schedule
/// when paced, one-way delays with STAMP.
fn shape_of(cfg: &ClientConfig, segments: SegmentSet) -> Shape {
    Shape {
        cos: cfg.marks,
        segments,
        schedule: cfg.schedule.map(|s| (s.pattern, s.interval_ns())),
        one_way: cfg.stamp.then(|| is_this_host(cfg.server.ip())),
    }
}

/// The sockets of one kind of run.
enum Work {
    /// The sockets, and the receive timeout armed on the fast one
    /// (`None`: it never blocks, or its waits are all `ppoll`).
    PingPong(ClientSockets, Option<Duration>),
    Paced(socket2::Socket, Schedule),
    /// Multicast ping-pong: the unconnected socket, and its armed timeout.
    Group(socket2::Socket, Option<Duration>),
}

/// Kernel stamping, switched on for one kind of run. Built once per run.
#[allow(clippy::large_enum_variant)]
enum Stamping {
    PingPong(ClientStamps),
    Paced(PacedStamps),
}

impl Stamping {
    fn into_ping_pong(self) -> Option<ClientStamps> {
        match self {
            Stamping::PingPong(s) => Some(s),
            Stamping::Paced(_) => None,
        }
    }

    fn into_paced(self) -> Option<PacedStamps> {
        match self {
            Stamping::Paced(s) => Some(s),
            Stamping::PingPong(_) => None,
        }
    }
}

impl Work {
    fn enable_stamps(
        &self,
        hardware: bool,
        every: u32,
        clock: Option<PhcMap>,
    ) -> std::io::Result<Stamping> {
        Ok(match self {
            Work::PingPong(s, _) => Stamping::PingPong(
                ClientStamps::enable(s.fast.as_raw_fd(), hardware, every)?.with_clock(clock),
            ),
            Work::Paced(s, _) => {
                Stamping::Paced(PacedStamps::enable(s.as_raw_fd(), hardware)?.with_clock(clock))
            }
            Work::Group(s, _) => Stamping::PingPong(
                ClientStamps::enable(s.as_raw_fd(), hardware, every)?.with_clock(clock),
            ),
        })
    }
}

/// A multicast run on its thread: a function of its own, never inlined
/// into the thread's body, so the unicast loop there is compiled as it
/// was (its registers, its instructions per round trip).
struct GroupRun<'a> {
    cfg: &'a ClientConfig,
    socket: &'a socket2::Socket,
    armed: Option<Duration>,
    stop: &'a StopFlag,
}

impl GroupRun<'_> {
    #[inline(never)]
    fn run(
        self,
        output: Output,
        answers: group::AnswerRing,
        stamps: Option<ClientStamps>,
        (stats, shape): (Stats, Shape),
        placement: Placement,
    ) -> Result<ClientOutcome, EngineError> {
        let mut pinger = group::GroupPinger::new(
            self.cfg,
            self.socket,
            self.armed,
            output,
            answers,
            stamps,
            stats,
            shape,
        );
        run_loop::run(&mut pinger, self.cfg, self.stop, placement)
    }
}

/// A paced client run on its thread.
struct PacedRun<'a> {
    cfg: &'a ClientConfig,
    schedule: Schedule,
    socket: &'a socket2::Socket,
    stop: &'a StopFlag,
    /// Where the requests leave from (for the Location TLV's NAT check).
    local: SocketAddr,
}

impl PacedRun<'_> {
    fn run(
        self,
        output: Output,
        stats: Stats,
        stamps: Option<PacedStamps>,
        placement: Placement,
    ) -> Result<ClientOutcome, EngineError> {
        let cfg = self.cfg;
        let budget = match (cfg.packets, cfg.duration) {
            (Some(n), _) => Budget::Packets(n),
            (None, Some(d)) => Budget::Duration(d),
            (None, None) => Budget::Unbounded,
        };
        let peer = ProbeConfig {
            addr: cfg.server,
            schedule: self.schedule,
            phase: Duration::ZERO,
            warmup: cfg.warmup,
            budget,
            size: cfg.size,
            stamp: cfg.stamp,
            ssid: cfg.ssid,
            key: cfg.stamp_key.clone(),
            marks: cfg.marks,
            tlvs: cfg.tlvs,
            stamp_format: cfg.stamp_format,
        };
        let pacer_cfg = PacerConfig {
            timeout: cfg.timeout,
            busy_poll: cfg.thread.busy_poll,
            give_up: true,
            give_up_after: cfg.give_up_after,
            wake: SlotWake::SpinToSlot,
        };
        let sink = ClientSink {
            out: output,
            stats,
            log_overflow: 0,
        };
        let mut pacer = Pacer::new(self.socket, vec![peer], pacer_cfg, stamps, sink);
        let ended = pacer.run(self.stop)?;
        let sink = pacer.into_sink();
        Ok(ClientOutcome {
            ring_overflow: sink.out.overflow.load(Ordering::Relaxed),
            stats: sink.stats,
            measured: ended.measured,
            placement,
            interrupted: ended.interrupted,
            log_overflow: sink.log_overflow,
            stale_stamps: ended.stale_stamps,
            unauthenticated: ended.unauthenticated,
            stamping: StampingInfo::default(),
            tcp: None,
            extensions: (cfg.stamp && !cfg.tlvs.is_empty())
                .then(|| ended.tally.summary(cfg.tlvs, self.local, cfg.server)),
            nic_clock: None,
            gave_up: ended.gave_up,
            group: None,
        })
    }
}
