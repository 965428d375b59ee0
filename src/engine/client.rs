//! The client: a pinned thread playing ping-pong with one reflector.
//!
//! Per packet the loop does exactly: encode (no allocation), one clock read,
//! `send`, `recv` (blocking, or spinning when busy-polling), one clock read,
//! a histogram record and a ring push. With kernel timestamps it also reads
//! `CLOCK_REALTIME` next to each monotonic read, receives with `recvmsg` (RX
//! stamps ride in its control data), and, after the reply is in hand and the
//! RTT taken, reads the packet's TX stamps off the error queue, so stamping
//! costs the measured round trip only what the kernel itself adds. The
//! socket is connected, so the
//! kernel neither looks up a route per packet nor hands us other sources'
//! datagrams; those land on a catch-all socket sharing the port, drained
//! every `STRAY_DRAIN_EVERY` packets and after each timeout. Anything else
//! (a late reply, a timeout) is rare and may cost a syscall more.

use super::affinity::place_current_thread;
use super::capabilities::Source;
use super::points::Points;
use super::protocol::{Codec, EchoCodec, RECV_BUFFER, StampSender};
use super::sequence::{Reply, SequenceTracker};
use super::socket::{ClientSockets, client_sockets, set_wait_mode, wildcard_for};
use super::sys::timestamping::{Stamps, realtime_ns};
use super::sys::{self, RawAddr};
use super::timestamps::{self, TimestampMode};
use super::tx_stamps::StampReader;
use super::{EngineError, Placement, StopFlag};
use crate::stats::{Record, RecordKind, SegmentSet, Split, Stats};
use socket2::Socket;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// After this many unanswered requests with not a single reply, the peer is
/// declared unreachable instead of waiting out the whole run.
const GIVE_UP_AFTER: u64 = 10;
/// How often (in packets) the catch-all socket is checked for strays.
const STRAY_DRAIN_EVERY: u64 = 1024;

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
    /// CPU to pin to, already validated.
    pub cpu: usize,
    /// Whether the CPU was picked automatically.
    pub cpu_auto: bool,
    /// Spin on non-blocking receive.
    pub busy_poll: bool,
    /// Ask for `SCHED_FIFO`.
    pub rt: bool,
    /// Capacity of the ring to the live consumer, in records.
    pub ring_capacity: usize,
    /// Which clock stamps the packets.
    pub timestamps: TimestampMode,
    /// Speak STAMP (RFC 8762) instead of plain echo.
    pub stamp: bool,
    /// Capacity of the per-packet log ring, in packets (0: no log).
    pub log_capacity: usize,
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
    /// How the packets were stamped.
    pub stamping: StampingInfo,
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
        let lost = || EngineError::Io {
            context: "measurement thread panicked or was already joined",
            source: io::Error::other("measurement thread gone"),
        };
        self.handle
            .take()
            .ok_or_else(lost)?
            .join()
            .unwrap_or_else(|_| Err(lost()))
    }
}

/// Binds the socket (so a bad address fails here, synchronously) and starts
/// the pinned measurement thread.
pub fn start_client(cfg: ClientConfig, stop: StopFlag) -> Result<ClientRun, EngineError> {
    let sockets = client_sockets(
        cfg.bind.unwrap_or_else(|| wildcard_for(cfg.server)),
        cfg.server,
    )?;
    set_wait_mode(&sockets.fast, cfg.busy_poll, receive_slice(cfg.timeout))?;
    let local = sockets.local;
    let chosen = timestamps::choose(cfg.timestamps, local.ip())?;
    let kernel = chosen.source != Source::User;
    let hardware = chosen.source == Source::Hardware;
    let reader = if kernel {
        Some(
            StampReader::enable(sockets.fast.as_raw_fd(), hardware)
                .map_err(EngineError::io("cannot enable SO_TIMESTAMPING"))?,
        )
    } else {
        None
    };
    let stamping = StampingInfo {
        source: chosen.source,
        interface: chosen.interface.clone(),
        note: chosen.note.clone(),
        hardware_enabled_here: chosen.hardware.as_ref().is_some_and(|g| g.changed()),
        stamp: cfg.stamp,
        segments: SegmentSet::for_run(kernel, cfg.stamp, hardware),
    };
    let (log, points) = if cfg.log_capacity > 0 {
        let (p, c) = rtrb::RingBuffer::new(cfg.log_capacity);
        (Some(p), Some(c))
    } else {
        (None, None)
    };
    let segments = stamping.segments;
    let thread_info = stamping.clone();
    let (producer, records) = rtrb::RingBuffer::new(cfg.ring_capacity.max(1));
    let overflow = Arc::new(AtomicU64::new(0));
    let thread_stop = stop.clone();
    let thread_overflow = Arc::clone(&overflow);
    let handle = std::thread::Builder::new()
        .name("synapse-client".into())
        .spawn(move || {
            // Hardware stamping stays on until this thread is done.
            let _hardware = chosen.hardware;
            let placement = place_current_thread(cfg.cpu, cfg.cpu_auto, cfg.rt);
            let stamping = Stamping {
                reader,
                log,
                segments,
            };
            let mut pinger = Pinger::new(&cfg, &sockets, producer, thread_overflow, stamping);
            let outcome = pinger.run(&cfg, &thread_stop, placement);
            outcome.map(|o| ClientOutcome {
                stamping: thread_info,
                ..o
            })
        })
        .map_err(EngineError::io("cannot start the measurement thread"))?;
    Ok(ClientRun {
        records,
        points,
        local,
        stamping,
        stop,
        overflow,
        handle: Some(handle),
    })
}

/// How waiting for one reply ended.
enum Wait {
    Answered,
    TimedOut,
    /// The network said no (ICMP): the errno it reported.
    Unreachable(i32),
    /// The stop flag was raised while waiting; the packet is not counted.
    Stopped,
}

/// ICMP errors the kernel reports on a socket with `IP_RECVERR` (or a
/// connected one). Mid-run they mean "this packet is lost", not "give up".
pub(crate) fn is_network_error(errno: i32) -> bool {
    matches!(
        errno,
        libc::ECONNREFUSED
            | libc::EHOSTUNREACH
            | libc::ENETUNREACH
            | libc::EHOSTDOWN
            | libc::ENONET
            | libc::EMSGSIZE
            | libc::EACCES
            | libc::EPERM
    )
}

/// Errors on send that mean "this datagram did not go out" rather than
/// "something is broken here": the network errors, and a full local queue
/// (ENOBUFS, which Linux reports once `IP_RECVERR` is on).
fn is_send_drop(errno: i32) -> bool {
    is_network_error(errno) || errno == libc::ENOBUFS
}

/// Sleeps until `deadline` in slices, so `stop` is still noticed. Returns
/// whether it was.
fn pause_until(deadline: Instant, stop: &StopFlag) -> bool {
    loop {
        if stop.is_raised() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep((deadline - now).min(STOP_CHECK));
    }
}

/// The longest the blocking receive sleeps before looking at the stop flag:
/// a long `--timeout` must not make Ctrl-C or the display's keys wait.
pub(crate) const STOP_CHECK: Duration = Duration::from_millis(100);

/// What the loop is given for timestamping: the socket's stamp reader (kernel
/// stamps on), the per-packet log's ring, and the segments to split into.
struct Stamping {
    reader: Option<StampReader>,
    log: Option<rtrb::Producer<Points>>,
    segments: SegmentSet,
}

/// The measurement loop's state. Everything is allocated in `new`.
struct Pinger<'a> {
    socket: &'a Socket,
    catcher: &'a Socket,
    from: RawAddr,
    codec: Codec,
    buf: Vec<u8>,
    /// Kernel stamps, when on.
    stamps: Option<StampReader>,
    /// Read `CLOCK_REALTIME` next to the monotonic clock (kernel stamps or
    /// STAMP need it).
    realtime: bool,
    /// The packet in flight: its points so far, its TX stamp number, and
    /// whether it went out at all (a failed send has no stamps to fetch).
    points: Points,
    tx_id: u32,
    tx_sent: bool,
    /// Every settled packet's points, for the per-packet log.
    log: Option<rtrb::Producer<Points>>,
    log_overflow: u64,
    tracker: SequenceTracker,
    stats: Stats,
    ring: rtrb::Producer<Record>,
    overflow: Arc<AtomicU64>,
    epoch: Instant,
    timeout: Duration,
    /// The socket's receive timeout: the timeout, or `STOP_CHECK` if shorter.
    slice: Duration,
    busy_poll: bool,
    /// Packets below this sequence number are warm-up.
    warmup: u64,
    /// The socket's receive timeout is shorter than `slice` right now.
    shortened: bool,
    /// Fresh replies so far.
    replies_seen: u64,
    /// Late or duplicate replies so far: proof the peer answers, slowly.
    late_seen: u64,
    /// STAMP requests that came back unchanged: a plain echo server.
    echoed_requests: u64,
}

impl<'a> Pinger<'a> {
    fn new(
        cfg: &ClientConfig,
        sockets: &'a ClientSockets,
        ring: rtrb::Producer<Record>,
        overflow: Arc<AtomicU64>,
        stamping: Stamping,
    ) -> Self {
        let epoch = Instant::now();
        // A per-run token lets the codec reject datagrams from other runs.
        let token = u64::from(std::process::id()) << 32 ^ epoch.elapsed().as_nanos() as u64;
        let codec = if cfg.stamp {
            Codec::Stamp(StampSender::new(cfg.size))
        } else {
            Codec::Echo(EchoCodec::new(cfg.size, token ^ cfg.server.port() as u64))
        };
        Self {
            socket: &sockets.fast,
            catcher: &sockets.catcher,
            from: RawAddr::empty(),
            codec,
            buf: vec![0; RECV_BUFFER],
            // STAMP carries T1; kernel stamps are subtracted from user ones.
            realtime: cfg.stamp || stamping.reader.is_some(),
            stamps: stamping.reader,
            points: Points::default(),
            tx_id: 0,
            tx_sent: false,
            log: stamping.log,
            log_overflow: 0,
            tracker: SequenceTracker::new(),
            stats: Stats::with_segments(stamping.segments),
            ring,
            overflow,
            epoch,
            timeout: cfg.timeout,
            slice: receive_slice(cfg.timeout),
            busy_poll: cfg.busy_poll,
            warmup: cfg.warmup,
            shortened: false,
            replies_seen: 0,
            late_seen: 0,
            echoed_requests: 0,
        }
    }

    fn run(
        &mut self,
        cfg: &ClientConfig,
        stop: &StopFlag,
        placement: Placement,
    ) -> Result<ClientOutcome, EngineError> {
        let fd = self.socket.as_raw_fd();
        let mut measure_start: Option<Instant> = None;
        let mut seq = 0u64;
        let mut last = Instant::now();
        while !stop.is_raised() {
            let warmup = seq < cfg.warmup;
            if !warmup {
                let start = *measure_start.get_or_insert(last);
                let measured = seq - cfg.warmup;
                if cfg.packets.is_some_and(|n| measured >= n)
                    || cfg
                        .duration
                        .is_some_and(|d| last.duration_since(start) >= d)
                {
                    break;
                }
            }
            if seq.is_multiple_of(STRAY_DRAIN_EVERY) {
                self.drain_strays(seq, warmup);
            }
            self.tracker.sent(seq);
            // The two clocks back to back, so the realtime span the split
            // partitions and the monotonic RTT differ only by a clock read.
            // Encoding (STAMP carries T1) is inside the RTT, as in any loop
            // that builds its request after reading the clock.
            let t1_user = if self.realtime { realtime_ns() } else { 0 };
            let t1 = Instant::now();
            let payload = self.codec.encode(seq, t1_user);
            let sent = sys::send(fd, payload);
            self.points = Points {
                seq,
                t1_user: self.realtime.then_some(t1_user),
                ..Points::default()
            };
            self.tx_sent = sent.is_ok();
            if let Some(stamps) = &mut self.stamps {
                if sent.is_ok() {
                    self.tx_id = stamps.sent();
                } else {
                    stamps.send_failed();
                }
            }
            let (wait, now) = match sent {
                Ok(_) => self.wait_for(seq, t1, warmup, stop)?,
                // An ICMP error from an earlier packet, no route, a firewall
                // or a full queue surfaces on send: this packet never left.
                // It counts as lost after its timeout, as if it had gone out,
                // so a dead link paces the run instead of spinning it.
                Err(e) if e.raw_os_error().is_some_and(is_send_drop) => {
                    sys::drain_error_queue(fd);
                    let errno = e.raw_os_error().unwrap_or(0);
                    if self.replies_seen == 0 {
                        (Wait::Unreachable(errno), Instant::now())
                    } else {
                        let stopped = pause_until(t1 + self.timeout, stop);
                        let now = Instant::now();
                        if stopped {
                            (Wait::Stopped, now)
                        } else {
                            let at = self.at_ns(now);
                            self.time_out(seq, at, warmup);
                            (Wait::Unreachable(errno), now)
                        }
                    }
                }
                Err(e) => {
                    return Err(EngineError::Send {
                        addr: cfg.server,
                        source: e,
                    });
                }
            };
            last = now;
            match wait {
                Wait::Stopped => break,
                // Before any reply, errors mean the peer cannot be reached.
                Wait::Unreachable(errno) if self.replies_seen == 0 => {
                    return Err(match errno {
                        libc::ECONNREFUSED => EngineError::Refused(cfg.server),
                        _ => EngineError::Send {
                            addr: cfg.server,
                            source: io::Error::from_raw_os_error(errno),
                        },
                    });
                }
                Wait::TimedOut if self.replies_seen == 0 && seq + 1 >= GIVE_UP_AFTER => {
                    let timeout_ms = cfg.timeout.as_millis() as u64;
                    return Err(if self.echoed_requests > 0 {
                        EngineError::NotStamp(cfg.server)
                    } else if self.late_seen > 0 {
                        EngineError::TooSlow {
                            addr: cfg.server,
                            timeout_ms,
                        }
                    } else {
                        EngineError::NoReply {
                            addr: cfg.server,
                            packets: seq + 1,
                            timeout_ms,
                        }
                    });
                }
                _ => {}
            }
            seq += 1;
        }
        self.drain_strays(seq, false);
        Ok(ClientOutcome {
            stats: self.stats.clone(),
            measured: measure_start.map_or(Duration::ZERO, |s| last.duration_since(s)),
            placement,
            interrupted: stop.is_raised(),
            ring_overflow: self.overflow.load(Ordering::Relaxed),
            log_overflow: self.log_overflow,
            stale_stamps: self.stamps.as_ref().map_or(0, |s| s.stale),
            stamping: StampingInfo::default(),
        })
    }

    /// Waits for the reply to `seq`, classifying everything that arrives
    /// meanwhile, until it comes, its deadline passes, or `stop` is raised.
    /// Returns how it ended and the time it did (the clock read for the RTT).
    fn wait_for(
        &mut self,
        seq: u64,
        t1: Instant,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(Wait, Instant), EngineError> {
        let fd = self.socket.as_raw_fd();
        let deadline = t1 + self.timeout;
        loop {
            let received = self.receive(fd, deadline, stop);
            let now = Instant::now();
            let t4_user = if self.realtime { realtime_ns() } else { 0 };
            let at_ns = self.at_ns(now);
            match received {
                Ok((got, rx)) => {
                    let decoded = if got.truncated {
                        None
                    } else {
                        self.codec.decode(&self.buf[..got.len], seq)
                    };
                    // Late and duplicate replies concern *their* packet, which
                    // may be a warm-up one even when this one is not.
                    let (kind, about) = match decoded.map(|r| (r, self.tracker.on_reply(r.seq))) {
                        Some((reply, Reply::Fresh)) => {
                            self.replies_seen += 1;
                            let rtt = now.duration_since(t1).as_nanos() as u64;
                            let p = &mut self.points;
                            p.rtt_ns = Some(rtt);
                            p.t2 = reply.t2;
                            p.t3 = reply.t3;
                            p.t4_driver = rx.software;
                            p.t4_hw = rx.hardware;
                            p.t4_user = self.realtime.then_some(t4_user);
                            let split = self.settle(warmup);
                            self.emit(Record::sample(seq, at_ns, rtt, warmup).with_split(split));
                            self.restore_timeout();
                            return Ok((Wait::Answered, now));
                        }
                        Some((r, Reply::Late { reordered })) => {
                            (RecordKind::Late { reordered }, r.seq)
                        }
                        Some((r, Reply::Duplicate)) => (RecordKind::Duplicate, r.seq),
                        Some((_, Reply::Stray)) | None => {
                            if self.codec.is_echoed_stamp_request(&self.buf[..got.len]) {
                                self.echoed_requests += 1;
                            }
                            (RecordKind::Stray, seq)
                        }
                    };
                    if kind != RecordKind::Stray {
                        self.late_seen += 1;
                    }
                    let about_warmup = if kind == RecordKind::Stray {
                        warmup
                    } else {
                        about < self.warmup
                    };
                    self.emit(Record::event(kind, about, at_ns, about_warmup));
                    if now >= deadline {
                        return Ok((self.time_out(seq, at_ns, warmup), now));
                    }
                    self.rearm(deadline - now);
                }
                Err(e) => match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => {
                        if now >= deadline {
                            return Ok((self.time_out(seq, at_ns, warmup), now));
                        }
                        if stop.is_raised() {
                            self.restore_timeout();
                            return Ok((Wait::Stopped, now));
                        }
                        self.rearm(deadline - now);
                    }
                    Some(errno) if is_network_error(errno) => {
                        sys::drain_error_queue(fd);
                        self.time_out(seq, at_ns, warmup);
                        return Ok((Wait::Unreachable(errno), now));
                    }
                    _ => return Err(EngineError::io("receive failed")(e)),
                },
            }
        }
    }

    /// One datagram with its RX stamps, blocking (for at most one receive
    /// slice) or spinning until something arrives, the deadline passes or
    /// `stop` is raised.
    #[inline]
    fn receive(
        &mut self,
        fd: i32,
        deadline: Instant,
        stop: &StopFlag,
    ) -> io::Result<(sys::Received, Stamps)> {
        if !self.busy_poll {
            return self.receive_once(fd);
        }
        loop {
            match self.receive_once(fd) {
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    if stop.is_raised() || Instant::now() >= deadline {
                        return Err(e);
                    }
                    std::hint::spin_loop();
                }
                other => return other,
            }
        }
    }

    #[inline]
    fn receive_once(&mut self, fd: i32) -> io::Result<(sys::Received, Stamps)> {
        match &mut self.stamps {
            Some(s) => s.recv(fd, &mut self.buf).map(|m| (m.received, m.stamps)),
            None => sys::recv(fd, &mut self.buf).map(|r| (r, Stamps::default())),
        }
    }

    /// The packet in flight is settled (answered or lost): its TX stamps
    /// are fetched, its points logged, and its split returned. Runs after
    /// the RTT is taken, so none of this is inside it.
    #[inline]
    fn settle(&mut self, warmup: bool) -> Split {
        if let Some(stamps) = &mut self.stamps
            && self.tx_sent
        {
            stamps.collect(self.socket.as_raw_fd(), self.tx_id, &mut self.points);
        }
        if !warmup
            && let Some(log) = &mut self.log
            && log.push(self.points).is_err()
        {
            self.log_overflow += 1;
        }
        self.points.split()
    }

    fn time_out(&mut self, seq: u64, at_ns: u64, warmup: bool) -> Wait {
        self.settle(warmup);
        self.tracker.timed_out(seq);
        self.emit(Record::event(RecordKind::Lost, seq, at_ns, warmup));
        self.restore_timeout();
        self.drain_strays(seq, warmup);
        Wait::TimedOut
    }

    /// Counts whatever other sources sent to our port. Never blocks.
    fn drain_strays(&mut self, seq: u64, warmup: bool) {
        let fd = self.catcher.as_raw_fd();
        while sys::recv_from(fd, &mut self.buf, &mut self.from).is_ok() {
            let at_ns = self.at_ns(Instant::now());
            self.emit(Record::event(RecordKind::Stray, seq, at_ns, warmup));
        }
    }

    /// Rare path: keeps waiting with `remaining` left. The next blocking
    /// receive must end at the deadline, not a whole slice later.
    fn rearm(&mut self, remaining: Duration) {
        if !self.busy_poll && remaining < self.slice {
            let _ = self
                .socket
                .set_read_timeout(Some(remaining.max(Duration::from_micros(1))));
            self.shortened = true;
        }
    }

    #[inline]
    fn restore_timeout(&mut self) {
        if self.shortened {
            let _ = self.socket.set_read_timeout(Some(self.slice));
            self.shortened = false;
        }
    }

    #[inline]
    fn at_ns(&self, now: Instant) -> u64 {
        now.duration_since(self.epoch).as_nanos() as u64
    }

    /// Records into the authoritative statistics, then offers the record to
    /// the live consumer. A full ring costs the live view, never the totals.
    #[inline]
    fn emit(&mut self, record: Record) {
        self.stats.record(&record);
        if self.ring.push(record).is_err() {
            self.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The blocking receive timeout for a per-packet `timeout`.
fn receive_slice(timeout: Duration) -> Duration {
    timeout.min(STOP_CHECK)
}
