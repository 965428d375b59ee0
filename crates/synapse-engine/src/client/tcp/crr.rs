//! `--connect-each` (netperf's TCP_CRR): per transaction a new
//! connection, the request, the whole reply, and the close. The round
//! trip runs from before the socket is made to the reply in hand; the
//! handshake's share is timed apart (`connect` returning, the reply's first
//! byte). The system calls are a bare C loop's (socket, connect, send,
//! recv, close) plus `TCP_NODELAY` and, blocking, the two timeouts that
//! keep a dead peer from holding the run (`SO_SNDTIMEO` bounds `connect`,
//! `SO_RCVTIMEO` the receive); busy-polling needs neither (the socket is
//! non-blocking from birth and the client spins on `send`, then `recv`).

use super::conn::{Opener, failure_of};
use super::frame::Frame;
use crate::client::output::Output;
use crate::client::recv_timeout::armed_for;
use crate::client::run_loop::{Exchanges, Packet};
use crate::client::seen::{GIVE_UP_AFTER, Seen};
use crate::client::sequence::SequenceTracker;
use crate::client::stop::{STOP_CHECK, pause_until};
use crate::client::{ClientConfig, ClientOutcome};
use crate::mono::Mono;
use crate::points::{PacketStatus, Points};
use crate::protocol::EchoCodec;
use crate::sys;
use crate::sys::clock::realtime_ns;
use crate::sys::poll::Readiness;
use crate::sys::tcp as sys_tcp;
use crate::{EngineError, StopFlag};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Duration;
use synapse_stats::tcp::{Break, ConnectFailure};
use synapse_stats::{OutageDetector, Record, RecordKind, Stats, TcpStats};

/// How one transaction ended.
enum Done {
    /// The reply, whole: when it was in, and when the connection was.
    Answered {
        end: Mono,
        connected: Mono,
    },
    /// No reply by the deadline, or no connection.
    Lost,
    Stopped,
}

/// The connect-each loop's state. Allocated in `new`.
pub(crate) struct TcpCrr<'a> {
    cfg: &'a ClientConfig,
    opener: Opener,
    server: SockAddr,
    /// Blocking: the receive timeout armed on each socket.
    armed: Option<Duration>,
    codec: EchoCodec,
    frame: Frame,
    tracker: SequenceTracker,
    stats: Stats,
    tcp: TcpStats,
    out: Output,
    log_overflow: u64,
    outages: OutageDetector,
    /// The stop rule for a silent peer.
    give_up: crate::client::give_up::GiveUp,
    epoch: Mono,
    seen: Seen,
    /// Wall clock reads for the log's rows (only with a log).
    realtime: bool,
    /// The last attempt was refused (nothing listens).
    refused: bool,
    /// Replies that were not our requests.
    strays: u64,
}

impl<'a> TcpCrr<'a> {
    pub(crate) fn new(
        cfg: &'a ClientConfig,
        opener: Opener,
        out: Output,
        stats: Stats,
        token: u64,
        tick: Duration,
    ) -> Self {
        let armed = (!opener.busy_poll)
            .then(|| armed_for(cfg.timeout.min(STOP_CHECK), tick))
            .flatten();
        Self {
            server: SockAddr::from(opener.server),
            opener,
            armed,
            realtime: out.log.is_some(),
            cfg,
            codec: EchoCodec::new(cfg.size, token),
            frame: Frame::new(cfg.size),
            tracker: SequenceTracker::new(),
            stats,
            tcp: TcpStats::new(true),
            out,
            log_overflow: 0,
            outages: OutageDetector::default(),
            give_up: crate::client::give_up::GiveUp::new(cfg.give_up_after),
            epoch: Mono::now(),
            seen: Seen::default(),
            refused: false,
            strays: 0,
        }
    }

    /// Why no transaction was ever answered.
    fn silence(&self, tried: u64) -> EngineError {
        let addr = self.cfg.server;
        if self.strays > 0 {
            return EngineError::NotEcho(addr);
        }
        if self.tcp.connections == 0 {
            return EngineError::TcpConnect {
                addr,
                reason: format!("{tried} attempts failed"),
            };
        }
        self.seen.silence(addr, tried, self.cfg.timeout)
    }

    /// One transaction: connect, request, reply, close.
    fn transact(&mut self, seq: u64, warmup: bool, stop: &StopFlag) -> Result<Done, EngineError> {
        let t0_user = self.realtime.then(realtime_ns);
        let t0 = Mono::now();
        let deadline = t0 + self.cfg.timeout;
        self.tracker.sent(seq);
        let done = match self.socket() {
            Ok(socket) => self.converse(&socket, seq, deadline, stop)?,
            Err(e) => return Err(EngineError::io("cannot create a TCP socket")(e)),
        };
        let mut row = Points {
            seq,
            t0_user,
            ..Points::default()
        };
        match done {
            Done::Answered { end, connected } => {
                let rtt = end.ns_since(t0);
                let first = self.frame.first_at.unwrap_or(end);
                if !warmup {
                    self.tcp
                        .handshake(connected.ns_since(t0), first.ns_since(t0));
                    self.tcp
                        .reply_pieces(self.frame.pieces, self.frame.spread_ns(end));
                }
                self.frame.reset();
                self.tcp.connections += 1;
                self.seen.replies += 1;
                let at_ns = self.at_ns(end);
                self.emit(
                    Record::sample(seq, at_ns, rtt, warmup)
                        .with_split(synapse_stats::Split::UNSAMPLED),
                );
                if !warmup && let Some(o) = self.outages.answered(at_ns) {
                    self.emit(Record::outage(o.seq, o.packets as u32, at_ns, o.length_ns));
                }
                let to_wall = |i: Mono| t0_user.map(|t| t + i.ns_since(t0));
                row.status = PacketStatus::Ok;
                row.rtt_ns = Some(rtt);
                row.connected = to_wall(connected);
                row.t4_user = to_wall(end);
            }
            Done::Lost => {
                self.frame.reset();
                self.tracker.timed_out(seq);
                self.emit(Record::event(
                    RecordKind::Lost,
                    seq,
                    self.at_ns(deadline),
                    warmup,
                ));
                if !warmup {
                    self.outages.missed(seq, self.at_ns(t0));
                    self.give_up.lost(&self.outages, self.at_ns(deadline));
                }
                if self.seen.replies == 0 && self.refused {
                    return Err(EngineError::TcpRefused(self.cfg.server));
                }
                // Never faster than one attempt per timeout.
                if pause_until(deadline, stop) {
                    return Ok(Done::Stopped);
                }
            }
            Done::Stopped => return Ok(Done::Stopped),
        }
        if !warmup {
            self.log_overflow += u64::from(self.out.log_row(&row));
        }
        Ok(done)
    }

    /// A new socket: Nagle off, `--dscp` on; blocking, with its waits
    /// bounded; busy-polling, non-blocking from the start.
    fn socket(&self) -> io::Result<Socket> {
        let kind = if self.opener.busy_poll || self.armed.is_none() {
            Type::STREAM.nonblocking()
        } else {
            Type::STREAM
        };
        let socket = Socket::new(
            Domain::for_address(self.opener.server),
            kind,
            Some(Protocol::TCP),
        )?;
        sys_tcp::set_nodelay(socket.as_raw_fd())?;
        self.opener.mark(&socket)?;
        if let Some(armed) = self.armed.filter(|_| !self.opener.busy_poll) {
            socket.set_write_timeout(Some(self.cfg.timeout))?;
            socket.set_read_timeout(Some(armed))?;
        }
        if let Some(bind) = self.opener.bind {
            socket.bind(&bind.into())?;
        }
        Ok(socket)
    }

    /// Connects, sends the request and reads the reply whole.
    fn converse(
        &mut self,
        socket: &Socket,
        seq: u64,
        deadline: Mono,
        stop: &StopFlag,
    ) -> Result<Done, EngineError> {
        let fd = socket.as_raw_fd();
        let connected = match socket.connect(&self.server) {
            Ok(()) => Some(Mono::now()),
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) && self.nonblocking() => None,
            Err(e) => return Ok(self.failed(&e)),
        };
        let len = self.codec.encode(seq).len();
        let sent = loop {
            let payload = self.codec.encode(seq);
            match sys_tcp::send_now(fd, payload) {
                Ok(n) if n == len => break Mono::now(),
                Ok(_) => return Ok(self.lost(Break::Stalled)),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && connected.is_none() => {
                    if stop.is_raised() {
                        return Ok(Done::Stopped);
                    }
                    if Mono::now() >= deadline {
                        self.tcp.connect_failed(ConnectFailure::TimedOut);
                        return Ok(Done::Lost);
                    }
                    self.wait_connect(fd, deadline)?;
                }
                Err(e) if connected.is_none() => return Ok(self.failed(&e)),
                Err(e) => {
                    return Ok(self.lost(super::conn::break_of(e.raw_os_error().unwrap_or(0))));
                }
            }
        };
        let connected = connected.unwrap_or(sent);
        while !self.frame.complete() {
            match self.read(fd, deadline, stop) {
                Ok(0) => return Ok(self.lost(Break::Closed)),
                Ok(n) => self.frame.took(n, None),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    return Ok(if stop.is_raised() {
                        Done::Stopped
                    } else {
                        Done::Lost
                    });
                }
                Err(e) => {
                    return Ok(self.lost(super::conn::break_of(e.raw_os_error().unwrap_or(0))));
                }
            }
        }
        let end = Mono::now();
        if self.codec.decode(&self.frame.buf) != Some(seq) {
            // Not our request back: not an echo server.
            self.strays += 1;
            self.stats
                .record(&Record::event(RecordKind::Stray, seq, 0, false));
            return Ok(Done::Lost);
        }
        self.refused = false;
        Ok(Done::Answered { end, connected })
    }

    /// Opening the connection failed.
    fn failed(&mut self, e: &io::Error) -> Done {
        let why = failure_of(e);
        self.refused = why == ConnectFailure::Refused;
        self.tcp.connect_failed(why);
        Done::Lost
    }

    fn nonblocking(&self) -> bool {
        self.opener.busy_poll || self.armed.is_none()
    }

    /// Blocking with short timeouts: waits (`ppoll`) until the handshake
    /// is done; busy-polling spins on the send instead.
    fn wait_connect(&self, fd: i32, deadline: Mono) -> Result<(), EngineError> {
        if self.opener.busy_poll {
            std::hint::spin_loop();
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Mono::now());
        crate::sys::poll::wait_writable(fd, left.min(STOP_CHECK))
            .map(|_| ())
            .map_err(EngineError::io("waiting for a connection failed"))
    }

    /// More of the reply, within the deadline: `EAGAIN` when none came.
    fn read(&mut self, fd: i32, deadline: Mono, stop: &StopFlag) -> io::Result<usize> {
        loop {
            let got = if self.opener.busy_poll || self.armed.is_none() {
                sys_tcp::recv_now(fd, self.frame.rest())
            } else {
                sys_tcp::recv(fd, self.frame.rest())
            };
            match got {
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => {
                    let now = Mono::now();
                    if now >= deadline || stop.is_raised() {
                        return Err(io::Error::from_raw_os_error(libc::EAGAIN));
                    }
                    if self.opener.busy_poll {
                        std::hint::spin_loop();
                    } else if let Readiness::Readable =
                        sys::poll::wait_readable(fd, (deadline - now).min(STOP_CHECK))?
                    {
                        return sys_tcp::recv_now(fd, self.frame.rest());
                    }
                }
                other => return other,
            }
        }
    }

    fn lost(&mut self, why: Break) -> Done {
        self.tcp.broke(why);
        Done::Lost
    }

    fn at_ns(&self, now: Mono) -> u64 {
        now.ns_since(self.epoch)
    }

    fn emit(&mut self, record: Record) {
        self.stats.record(&record);
        if self.out.ring.push(record).is_err() {
            self.out.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Exchanges for TcpCrr<'_> {
    fn before(&mut self, _: u64, _: bool, _: Mono, _: &StopFlag) -> bool {
        false
    }

    fn gave_up(&self) -> Option<Duration> {
        self.give_up.gave_up
    }

    #[inline]
    fn packet(&mut self, _: &ClientConfig, seq: u64, warmup: bool, stop: &StopFlag) -> Packet {
        let done = self.transact(seq, warmup, stop)?;
        let now = Mono::now();
        if matches!(done, Done::Stopped) || self.give_up.gave_up.is_some() {
            return Ok((true, now));
        }
        if self.seen.replies == 0 && seq + 1 >= GIVE_UP_AFTER {
            return Err(self.silence(seq + 1));
        }
        Ok((false, now))
    }

    /// An outage still going on when the run ends ends with it.
    fn finish(&mut self, _: u64, last: Mono) {
        if let Some(o) = self.outages.end(self.at_ns(last)) {
            self.emit(Record::outage(
                o.seq,
                o.packets as u32,
                self.at_ns(last),
                o.length_ns,
            ));
        }
    }

    fn tallies(&self) -> (&Stats, u64, u64) {
        let ring = self.out.overflow.load(Ordering::Relaxed);
        (&self.stats, ring, self.log_overflow)
    }

    fn outcome(&self, _: &ClientConfig, base: ClientOutcome) -> ClientOutcome {
        ClientOutcome {
            tcp: Some(self.tcp.figures()),
            ..base
        }
    }
}
