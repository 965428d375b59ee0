//! The reflector: echoes every datagram to its sender, unchanged.
//!
//! One unconnected socket serves every client at once, so no client is ever
//! locked out (the original tool's connected fast path refused other peers
//! for ~300 ms after a run). Per datagram: `recvfrom`, `sendto` of exactly
//! the bytes received, one clock read and a session counter bump; a new peer
//! costs a table insert. Sessions idle for `session_idle` are reported as
//! ended.
//!
//! With a log (`synapse server --log`), the socket also stamps in the
//! kernel, both ways, and each answer's points go to the log's ring; the
//! TX stamps are read off the error queue after each send. Without one,
//! nothing of that runs.

use super::affinity::place_current_thread;
use super::client::is_network_error;
use super::protocol::{self, RECV_BUFFER};
use super::response::{ResponsePoints, ResponseStamps};
use super::socket::{bind_udp, set_wait_mode};
use super::stamp::{self, NtpTime};
use super::sys::{self, RawAddr, timestamping};
use super::{EngineError, Placement, StopFlag};
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the reflector wakes when idle, and publishes session state.
const TICK: Duration = Duration::from_millis(100);
/// Sessions tracked individually; further peers are only counted in totals.
const MAX_SESSIONS: usize = 4096;

/// Reflector settings.
#[derive(Debug, Clone)]
pub struct ReflectorConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// CPU to pin to, already validated.
    pub cpu: usize,
    /// Whether the CPU was picked automatically.
    pub cpu_auto: bool,
    /// Spin on non-blocking receive.
    pub busy_poll: bool,
    /// Ask for `SCHED_FIFO`.
    pub rt: bool,
    /// A peer silent this long has ended its session.
    pub session_idle: Duration,
    /// Capacity of the event ring.
    pub ring_capacity: usize,
    /// What to answer.
    pub protocol: Protocol,
    /// Room for answers on their way to the per-packet log (0: no log).
    pub log_capacity: usize,
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
    /// STAMP: datagrams that were not test packets (dropped, unanswered).
    pub malformed: u64,
    /// STAMP: answers whose T2 had to come from user space because the
    /// kernel gave no RX stamp.
    pub t2_from_user: u64,
    /// Datagrams from a service port (below 1024: echo, STAMP, …), not
    /// answered, so that two reflectors can never be set bouncing a
    /// (spoofed) datagram between them.
    pub refused: u64,
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
}

/// A running reflector.
#[derive(Debug)]
pub struct ReflectorRun {
    /// Session and totals events for a front end.
    pub events: rtrb::Consumer<ReflectorEvent>,
    /// Each answer's points, for the per-packet log (when asked for).
    pub responses: Option<rtrb::Consumer<ResponsePoints>>,
    /// The bound address (with the real port when 0 was asked for).
    pub local: SocketAddr,
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
        let lost = || EngineError::Io {
            context: "reflector thread panicked or was already joined",
            source: io::Error::other("reflector thread gone"),
        };
        self.handle
            .take()
            .ok_or_else(lost)?
            .join()
            .unwrap_or_else(|_| Err(lost()))
    }
}

/// Binds and starts the pinned reflector thread.
pub fn start_reflector(cfg: ReflectorConfig, stop: StopFlag) -> Result<ReflectorRun, EngineError> {
    let socket = bind_udp(cfg.bind)?;
    set_wait_mode(&socket, cfg.busy_poll, TICK)?;
    // Bursts from many clients should queue, not drop; failure is harmless.
    let _ = socket.set_recv_buffer_size(4 << 20);
    let local = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .unwrap_or(cfg.bind);
    let fd = socket.as_raw_fd();
    let cannot_stamp = EngineError::io("cannot enable SO_TIMESTAMPING");
    let (mut log, responses, stamp_type) = if cfg.log_capacity > 0 {
        let (tx, rx) = rtrb::RingBuffer::new(cfg.log_capacity);
        let (log, kind) = ResponseStamps::enable(fd, tx).map_err(cannot_stamp)?;
        (Some(log), Some(rx), Some(kind))
    } else if cfg.protocol == Protocol::Stamp {
        let flags = timestamping::flags::RX_SOFTWARE | timestamping::flags::REPORT_SOFTWARE;
        let kind = timestamping::enable(fd, flags).map_err(cannot_stamp)?;
        (None, None, Some(kind))
    } else {
        (None, None, None)
    };
    if cfg.protocol == Protocol::Stamp {
        timestamping::enable_ttl(fd, local.is_ipv6())
            .map_err(EngineError::io("cannot enable IP_RECVTTL"))?;
    }
    if stamp_type.is_some() {
        // The kernel switches RX stamping on a moment after it is asked;
        // datagrams before then would go unstamped.
        timestamping::wait_for_rx_stamping(Duration::from_millis(500));
    }
    let (mut producer, events) = rtrb::RingBuffer::new(cfg.ring_capacity.max(16));
    let thread_stop = stop.clone();
    let handle = std::thread::Builder::new()
        .name("synapse-reflector".into())
        .spawn(move || {
            let placement = place_current_thread(cfg.cpu, cfg.cpu_auto, cfg.rt);
            let mut echo = Echo::new(cfg.session_idle);
            let wire = Wire {
                protocol: cfg.protocol,
                stamp_type,
                busy_poll: cfg.busy_poll,
            };
            let totals = echo.serve(&socket, wire, log.as_mut(), &thread_stop, &mut producer)?;
            let (log_overflow, stale_stamps) = log.map_or((0, 0), |l| (l.overflow, l.stale));
            Ok(ReflectorOutcome {
                totals,
                placement,
                open_at_stop: echo.unreported(),
                log_overflow,
                stale_stamps,
            })
        })
        .map_err(EngineError::io("cannot start the reflector thread"))?;
    Ok(ReflectorRun {
        events,
        responses,
        local,
        stop,
        handle: Some(handle),
    })
}

/// How the socket is read and answered.
#[derive(Clone, Copy)]
struct Wire {
    protocol: Protocol,
    /// The timestamping control-message type, when the socket stamps.
    stamp_type: Option<i32>,
    busy_poll: bool,
}

struct Session {
    addr: RawAddr,
    info: SessionInfo,
}

struct Echo {
    sessions: Vec<Session>,
    /// Where each peer's session is in `sessions`. Sized for
    /// `MAX_SESSIONS` up front, so a new peer never allocates.
    index: HashMap<SocketAddr, usize>,
    /// Index of the session that sent the previous datagram: the common case
    /// of one busy client skips the table search.
    last: usize,
    totals: ReflectorTotals,
    idle_ns: u64,
    epoch: Instant,
    /// Session-ended events waiting for room in the ring; they must not be
    /// dropped, because headless mode prints one line per session.
    backlog: Vec<ReflectorEvent>,
}

impl Echo {
    fn new(idle: Duration) -> Self {
        Self {
            sessions: Vec::with_capacity(MAX_SESSIONS),
            index: HashMap::with_capacity(MAX_SESSIONS),
            last: usize::MAX,
            totals: ReflectorTotals::default(),
            idle_ns: idle.as_nanos() as u64,
            epoch: Instant::now(),
            backlog: Vec::new(),
        }
    }

    /// Serves until stopped.
    fn serve(
        &mut self,
        socket: &socket2::Socket,
        wire: Wire,
        mut log: Option<&mut ResponseStamps>,
        stop: &StopFlag,
        events: &mut rtrb::Producer<ReflectorEvent>,
    ) -> Result<ReflectorTotals, EngineError> {
        let fd = socket.as_raw_fd();
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut from = RawAddr::empty();
        let mut control = timestamping::ControlBuf::default();
        let mut next_tick = 0u64;
        loop {
            let received = match wire.stamp_type {
                None => sys::recv_from(fd, &mut buf, &mut from)
                    .map(|got| (got, timestamping::Stamps::default(), None)),
                Some(kind) => {
                    timestamping::recv_stamped(fd, &mut buf, Some(&mut from), &mut control, kind)
                        .map(|m| (m.received, m.stamps, m.ttl))
                }
            };
            let now_ns = self.epoch.elapsed().as_nanos() as u64;
            match received {
                Ok((got, ..)) if got.truncated => self.totals.oversized += 1,
                Ok(_) if from.port() < 1024 => self.totals.refused += 1,
                Ok((got, rx, ttl)) => {
                    let logging = log.is_some();
                    let t2_user = logging.then(timestamping::realtime_ns);
                    let packet = &mut buf[..got.len];
                    // Answered: Some(the user-space T3, if one was read).
                    let answered = match wire.protocol {
                        Protocol::Echo => Some(logging.then(timestamping::realtime_ns)),
                        Protocol::Stamp => self.stamp_reply(packet, rx.software, ttl).map(Some),
                    };
                    if let Some(t3_user) = answered {
                        let sent = sys::send_to(fd, packet, &from);
                        if sent.is_err() {
                            self.totals.send_errors += 1;
                        }
                        self.account(&from, got.len as u64, now_ns);
                        if let (Some(log), Some(peer)) = (log.as_deref_mut(), from.to_socket_addr())
                        {
                            let p = ResponsePoints {
                                seq: match wire.protocol {
                                    Protocol::Echo => protocol::echo_seq(packet),
                                    Protocol::Stamp => stamp::sequence_of(packet).map(u64::from),
                                },
                                t2_user,
                                t3_user,
                                ..ResponsePoints::received(wire.protocol, peer, rx)
                            };
                            match sent {
                                Ok(_) => log.sent(fd, p),
                                Err(_) => log.send_failed(p),
                            }
                        }
                    }
                }
                Err(e) => match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => {}
                    // An ICMP error about some client (gone, too big, no
                    // route): other clients must not suffer for it. The
                    // log reads the queue itself, so TX stamps are kept.
                    Some(errno) if is_network_error(errno) => match log.as_deref_mut() {
                        Some(log) => log.collect(fd),
                        None => sys::drain_error_queue(fd),
                    },
                    _ => return Err(EngineError::io("receive failed")(e)),
                },
            }
            if now_ns >= next_tick {
                next_tick = now_ns + TICK.as_nanos() as u64;
                if let Some(log) = log.as_deref_mut() {
                    log.collect(fd);
                }
                self.tick(now_ns, events);
                if stop.is_raised() {
                    break;
                }
            } else if wire.busy_poll && stop.is_raised() {
                break;
            }
        }
        if let Some(log) = log {
            log.collect(fd);
            log.finish();
        }
        self.flush_backlog(events);
        Ok(self.totals)
    }

    /// Turns a STAMP request into its answer in place and returns the T3 it
    /// carries. `None` for a malformed request, which is counted and not
    /// answered.
    fn stamp_reply(&mut self, packet: &mut [u8], t2: Option<u64>, ttl: Option<u8>) -> Option<u64> {
        let t2 = t2.unwrap_or_else(|| {
            self.totals.t2_from_user += 1;
            timestamping::realtime_ns()
        });
        let mut t3 = 0;
        let read_t3 = || {
            t3 = timestamping::realtime_ns();
            NtpTime::from_unix_ns(t3)
        };
        let ok =
            stamp::reflect_in_place(packet, NtpTime::from_unix_ns(t2), ttl.unwrap_or(0), read_t3)
                .is_ok();
        self.totals.malformed += u64::from(!ok);
        ok.then_some(t3)
    }

    #[inline]
    fn account(&mut self, from: &RawAddr, bytes: u64, now_ns: u64) {
        self.totals.packets += 1;
        self.totals.bytes += bytes;
        let idx = if self
            .sessions
            .get(self.last)
            .is_some_and(|s| s.addr.same_as(from))
        {
            self.last
        } else {
            let Some(peer) = from.to_socket_addr() else {
                return;
            };
            match self.index.get(&peer) {
                Some(&i) => i,
                None if self.sessions.len() < MAX_SESSIONS => {
                    self.totals.sessions += 1;
                    self.index.insert(peer, self.sessions.len());
                    self.sessions.push(Session {
                        addr: *from,
                        info: SessionInfo {
                            peer,
                            packets: 0,
                            bytes: 0,
                            last_seen_ns: now_ns,
                        },
                    });
                    self.sessions.len() - 1
                }
                None => return,
            }
        };
        self.last = idx;
        let info = &mut self.sessions[idx].info;
        info.packets += 1;
        info.bytes += bytes;
        info.last_seen_ns = now_ns;
    }

    /// Closes idle sessions and publishes state. Runs every `TICK`.
    fn tick(&mut self, now_ns: u64, events: &mut rtrb::Producer<ReflectorEvent>) {
        let idle_ns = self.idle_ns;
        let mut i = 0;
        while i < self.sessions.len() {
            let info = self.sessions[i].info;
            if now_ns.saturating_sub(info.last_seen_ns) >= idle_ns {
                self.backlog.push(ReflectorEvent::Ended(info));
                self.index.remove(&info.peer);
                self.sessions.swap_remove(i);
                if let Some(moved) = self.sessions.get(i) {
                    self.index.insert(moved.info.peer, i);
                }
                self.last = usize::MAX;
            } else {
                i += 1;
            }
        }
        // Ended sessions first: they must not lose their ring slots to the
        // best-effort snapshots below (a slow UI just sees fewer of those).
        self.flush_backlog(events);
        for s in &self.sessions {
            let _ = events.push(ReflectorEvent::Active(s.info));
        }
        let _ = events.push(ReflectorEvent::Totals(self.totals, now_ns));
    }

    /// Everything the front end has not been told has ended.
    fn unreported(&mut self) -> Vec<SessionInfo> {
        let ended = self.backlog.drain(..).filter_map(|e| match e {
            ReflectorEvent::Ended(s) => Some(s),
            _ => None,
        });
        ended
            .chain(self.sessions.drain(..).map(|s| s.info))
            .collect()
    }

    fn flush_backlog(&mut self, events: &mut rtrb::Producer<ReflectorEvent>) {
        let room = events.slots().min(self.backlog.len());
        for ev in self.backlog.drain(..room) {
            let _ = events.push(ev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> RawAddr {
        RawAddr::from_socket_addr(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    #[test]
    fn sessions_are_found_through_the_index_across_expiry() {
        let mut echo = Echo::new(Duration::from_nanos(100));
        let (mut tx, mut rx) = rtrb::RingBuffer::new(64);
        // Three peers, interleaved so the last-sender shortcut is not enough.
        for port in [1, 2, 3, 1, 3, 2, 1] {
            echo.account(&addr(port), 10, 0);
        }
        assert_eq!(echo.totals.sessions, 3);
        assert_eq!(echo.index.len(), 3);
        // Peer 1 stays active; 2 and 3 go idle and are removed (swap_remove
        // moves entries, so the index must follow them).
        echo.account(&addr(1), 10, 150);
        echo.tick(200, &mut tx);
        assert_eq!(echo.sessions.len(), 1);
        assert_eq!(echo.index.len(), 1);
        for (peer, &i) in &echo.index {
            assert_eq!(echo.sessions[i].info.peer, *peer);
        }
        echo.account(&addr(3), 10, 210);
        echo.account(&addr(1), 10, 220);
        let one = echo.sessions[echo.index[&addr(1).to_socket_addr().unwrap()]].info;
        assert_eq!((one.packets, one.bytes), (5, 50));
        assert_eq!(echo.totals.sessions, 4, "peer 3 came back as a new session");
        let ended: Vec<_> = std::iter::from_fn(|| rx.pop().ok())
            .filter_map(|e| match e {
                ReflectorEvent::Ended(s) => Some((s.peer.port(), s.packets)),
                _ => None,
            })
            .collect();
        assert_eq!(ended.len(), 2);
        assert!(
            ended.contains(&(2, 2)) && ended.contains(&(3, 2)),
            "{ended:?}"
        );
    }
}
