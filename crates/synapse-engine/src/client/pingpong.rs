//! The ping-pong loop: one request in flight, the next sent when the reply
//! (or its timeout) comes.
//!
//! Per packet the loop does exactly: encode (no allocation), one clock read,
//! `send`, `recv` (blocking, or spinning when busy-polling), one clock read,
//! a histogram record and a ring push: two system calls, as a bare C loop.
//! Blocking, the receive is the wait: the socket blocks with `SO_RCVTIMEO`
//! armed once (see `recv_timeout.rs`), and only what is left of a wait
//! after it (a lost or late reply) is waited in `ppoll`. With kernel
//! timestamps it also reads `CLOCK_REALTIME` next to each monotonic read,
//! receives with `recvmsg` (RX stamps ride in its control data), and, after
//! the reply is in hand and the RTT taken, reads the packet's TX stamps off
//! the error queue, so stamping costs the measured round trip only what the
//! kernel itself adds. The socket is connected, so the kernel neither looks
//! up a route per packet nor hands us other sources' datagrams; those land
//! on a catch-all socket sharing the port, drained every
//! `STRAY_DRAIN_EVERY` packets and after each timeout. Anything else (a
//! late reply, a timeout) is rare and may cost a syscall more.

use super::armed_wait::{self, Receive, Waiting};
use super::extensions::{Held, TlvTally, marks_of};
use super::far_error;
use super::give_up::GiveUp;
use super::run_loop::{Exchanges, Packet};
use super::run_token::run_token;
use super::seen::{GIVE_UP_AFTER, Seen};
use super::sequence::{Reply, SequenceTracker};
use super::stamps::ClientStamps;
use super::stop::pause_until;
use super::{ClientConfig, ClientOutcome, Output};
use crate::mono::Mono;
use crate::points::{PacketStatus, Points};
use crate::protocol::{Codec, EchoCodec, RECV_BUFFER, StampSender};
use crate::socket::ClientSockets;
use crate::sys;
use crate::sys::addr::RawAddr;
use crate::sys::cmsg::ControlBuf;
use crate::sys::errno::{is_network_error, is_send_drop};
use crate::sys::icmp_error::IcmpReport;
use crate::sys::timestamping::Stamps;
use crate::wall_clock::WallClock;
use crate::{EngineError, StopFlag};
use socket2::Socket;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::Duration;
use synapse_stats::{FarSide, Outage, OutageDetector, Record, RecordKind, Split, Stats};

/// How often (in packets) the catch-all socket is checked for strays.
const STRAY_DRAIN_EVERY: u64 = 1024;

/// How waiting for one reply ended.
enum Wait {
    Answered,
    TimedOut,
    /// The network said no (ICMP) before any reply: the errno it reported.
    Unreachable(i32),
    /// The stop flag was raised while waiting; the packet is not counted.
    Stopped,
    /// Lost, and the silence it ends is past `give_up_after`: the run ends.
    GaveUp,
}

/// The request a datagram may answer: its number, when it left, and
/// whether it is a warm-up one.
#[derive(Clone, Copy)]
struct Awaited {
    seq: u64,
    t1: Mono,
    warmup: bool,
}

/// How a datagram arrived: when (the monotonic clock, and the realtime one
/// when read, else 0) and with which RX stamps.
#[derive(Clone, Copy)]
struct Arrival {
    now: Mono,
    rx: Stamps,
    t4_user: u64,
}

/// The measurement loop's state. Everything is allocated in `new`.
pub(super) struct Pinger<'a> {
    socket: &'a Socket,
    catcher: &'a Socket,
    from: RawAddr,
    codec: Codec,
    /// The last reply decoded, written in place (`Codec::decode_into`).
    reply: crate::protocol::Reply,
    buf: Vec<u8>,
    /// Kernel stamps, when on.
    stamps: Option<ClientStamps>,
    /// Read `CLOCK_REALTIME` next to the monotonic clock (kernel stamps or
    /// STAMP need it).
    realtime: bool,
    /// Whether the packet in flight reads it.
    read_realtime: bool,
    /// The wall time of a monotonic reading.
    wall: WallClock,
    /// The packet in flight: its points so far, and whether it went out
    /// asking for TX stamps (a failed send, or one outside the sample, has
    /// none to fetch).
    points: Points,
    tx_sent: bool,
    /// Whether the packet in flight is one of the stamped sample; the
    /// split comes only from those, so that every segment is from the same
    /// packets.
    in_sample: bool,
    /// Whether a packet's points can split its round trip at all: only
    /// with kernel stamps or STAMP's T2/T3 (a plain echo with user-space
    /// stamps has no segment with both ends, `Split::NONE`, known at plan
    /// time).
    splitting: bool,
    /// Whether every packet's points are read (a per-packet log, a held
    /// reply, STAMP's far side, class-of-service marks), known at plan
    /// time; else only the stamped sample's are, for their split.
    points_always: bool,
    /// Whether the packet in flight keeps its points: no other packet's
    /// are written or read. Kept, though `points_always || splitting &&
    /// in_sample` gives it: worked out at each use it cost 4 instructions
    /// a round trip more.
    pointing: bool,
    out: Output,
    log_overflow: u64,
    tracker: SequenceTracker,
    stats: Stats,
    outages: OutageDetector,
    epoch: Mono,
    timeout: Duration,
    busy_poll: bool,
    /// Blocking mode: how long one receive may block on its own (the
    /// socket's `SO_RCVTIMEO`); `None`: waits are all `ppoll`.
    armed: Option<Duration>,
    /// Packets below this sequence number are warm-up.
    warmup: u64,
    seen: Seen,
    /// Class of service is read off every reply: its control data's room
    /// (packets outside the stamped sample), and the last reply's TOS.
    marks: Option<Box<ControlBuf>>,
    reply_tos: Option<u8>,
    /// Follow-Up Telemetry: the answered packet waiting for the next reply.
    holding: bool,
    held: Option<Held>,
    /// What the replies' TLVs said, kept only when the report shows it
    /// (STAMP with TLVs asked): a plain echo has nothing to tally.
    tallying: bool,
    tally: TlvTally,
    /// Whether a reply carries the reflector's numbers (STAMP): a plain
    /// echo's far side is none and its marks are only the TOS read here,
    /// known at plan time.
    reflector_numbers: bool,
    /// The last ICMP report read off the error queue, until the error it
    /// explains is recorded.
    icmp: Option<IcmpReport>,
    /// The stop rule for a silent peer.
    give_up: GiveUp,
}

impl<'a> Pinger<'a> {
    pub(super) fn new(
        cfg: &ClientConfig,
        sockets: &'a ClientSockets,
        armed: Option<Duration>,
        out: Output,
        stamps: Option<ClientStamps>,
        stats: Stats,
    ) -> Self {
        let epoch = Mono::now();
        let token = run_token(epoch);
        let holding = cfg.stamp && cfg.tlvs.follow_up;
        let points_always = out.log.is_some() || holding || cfg.stamp || cfg.marks.is_some();
        let codec = if cfg.stamp {
            let sender = StampSender::new(cfg.size, cfg.ssid, cfg.stamp_key.clone())
                .with_format(cfg.stamp_format);
            Codec::Stamp(sender.with_tlvs(cfg.tlvs, cfg.marks.unwrap_or(0)))
        } else {
            Codec::Echo(EchoCodec::new(cfg.size, token))
        };
        Self {
            socket: &sockets.fast,
            catcher: &sockets.catcher,
            from: RawAddr::empty(),
            codec,
            reply: crate::protocol::Reply::plain(0),
            buf: vec![0; RECV_BUFFER],
            // STAMP carries T1; kernel stamps are subtracted from user ones;
            // a per-packet log shows the user points (as paced runs do).
            realtime: cfg.stamp || stamps.is_some() || out.log.is_some(),
            splitting: cfg.stamp || stamps.is_some(),
            read_realtime: false,
            wall: WallClock::sync(),
            stamps,
            points: Points::default(),
            tx_sent: false,
            in_sample: true,
            points_always,
            pointing: true,
            out,
            log_overflow: 0,
            tracker: SequenceTracker::new(),
            stats,
            outages: OutageDetector::default(),
            epoch,
            timeout: cfg.timeout,
            busy_poll: cfg.thread.busy_poll,
            armed,
            warmup: cfg.warmup,
            seen: Seen::default(),
            marks: cfg.marks.map(|_| Box::default()),
            reply_tos: None,
            holding,
            held: None,
            tallying: cfg.stamp && !cfg.tlvs.is_empty(),
            tally: TlvTally::default(),
            reflector_numbers: cfg.stamp,
            icmp: None,
            give_up: GiveUp::new(cfg.give_up_after),
        }
    }

    /// The local address the requests leave from.
    fn local(&self) -> std::net::SocketAddr {
        self.socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Sends request `seq` and waits for its reply. Returns how the wait
    /// ended and the time it did.
    fn exchange(
        &mut self,
        cfg: &ClientConfig,
        seq: u64,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(Wait, Mono), EngineError> {
        let fd = self.socket.as_raw_fd();
        self.tracker.sent(seq);
        // The wall time is the monotonic reading's own (see wall_clock.rs),
        // so the realtime span the split partitions is the RTT exactly.
        // Encoding (STAMP carries T1) is inside the RTT, as in any loop
        // that builds its request after reading the clock.
        let index = seq.checked_sub(cfg.warmup);
        let stamped = self.stamps.as_mut().is_none_or(|s| s.samples(index));
        // The wall clock only where something needs it: STAMP's T1, a
        // split (packets outside the sample have none), or a log (no
        // sample then: `stamped`).
        self.read_realtime = self.realtime && (cfg.stamp || stamped);
        let t1 = Mono::now();
        let t1_user = if self.read_realtime {
            self.wall.at(t1)
        } else {
            0
        };
        let payload = self.codec.encode(seq, t1_user);
        let sent = match &self.stamps {
            Some(stamps) => stamps.send(fd, payload, stamped),
            None => sys::io::send(fd, payload),
        };
        self.pointing = self.points_always || (self.splitting && stamped);
        if self.pointing {
            self.points = Points {
                seq,
                t1_user: self.read_realtime.then_some(t1_user),
                ..Points::default()
            };
        }
        self.tx_sent = sent.is_ok() && stamped;
        self.in_sample = stamped;
        if let Some(stamps) = self.stamps.as_mut().filter(|_| stamped) {
            if sent.is_ok() {
                stamps.sent();
            } else {
                stamps.send_failed();
            }
        }
        match sent {
            Ok(_) => self.wait_for(seq, t1, warmup, stop),
            // An ICMP error from an earlier packet, no route, a firewall
            // or a full queue surfaces on send: this packet never left.
            // It counts as lost after its timeout, as if it had gone out,
            // so a dead link paces the run instead of spinning it.
            Err(e) if e.raw_os_error().is_some_and(is_send_drop) => {
                let errno = e.raw_os_error().unwrap_or(0);
                if self.seen.replies == 0 {
                    let _ = self.clear_error_queue(fd);
                    return Ok((Wait::Unreachable(errno), Mono::now()));
                }
                self.path_error(seq, Mono::now(), errno, warmup);
                let stopped = pause_until(t1 + self.timeout, stop);
                let now = Mono::now();
                if stopped {
                    return Ok((Wait::Stopped, now));
                }
                Ok((self.time_out(seq, t1, warmup), now))
            }
            Err(e) => Err(EngineError::Send {
                addr: cfg.server,
                source: e,
            }),
        }
    }

    /// Before any reply, errors and silence mean the peer cannot be
    /// reached: the run ends with the reason.
    fn give_up_if_unreachable(
        &self,
        cfg: &ClientConfig,
        seq: u64,
        wait: Wait,
    ) -> Result<(), EngineError> {
        if self.seen.replies > 0 {
            return Ok(());
        }
        match wait {
            Wait::Unreachable(libc::ECONNREFUSED) => Err(EngineError::Refused(cfg.server)),
            Wait::Unreachable(errno) => Err(EngineError::Send {
                addr: cfg.server,
                source: io::Error::from_raw_os_error(errno),
            }),
            Wait::TimedOut if seq + 1 >= GIVE_UP_AFTER => {
                Err(self.seen.silence(cfg.server, seq + 1, cfg.timeout))
            }
            _ => Ok(()),
        }
    }

    /// Waits for the reply to `seq`, classifying everything that arrives
    /// meanwhile, until it comes, its deadline passes, or `stop` is raised.
    /// Returns how it ended and the time it did (the clock read for the RTT).
    /// The deadline is kept to the clock: a reply after it is late, never
    /// a sample, however the wait was woken.
    fn wait_for(
        &mut self,
        seq: u64,
        t1: Mono,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(Wait, Mono), EngineError> {
        let fd = self.socket.as_raw_fd();
        let deadline = t1 + self.timeout;
        // The first receive starts right after the send, with the whole
        // timeout ahead: it may block without reading the clock first.
        let mut fresh = true;
        loop {
            let received = self.receive(fd, deadline, fresh, stop);
            fresh = false;
            let now = Mono::now();
            let t4_user = if self.read_realtime {
                self.wall.at(now)
            } else {
                0
            };
            match received {
                Ok((got, rx)) if now > deadline => {
                    // Lost at its deadline; what came is classified after
                    // that (a late reply, if it was this one).
                    let wait = self.time_out(seq, t1, warmup);
                    let arrival = Arrival { now, rx, t4_user };
                    self.on_datagram(got, arrival, Awaited { seq, t1, warmup });
                    return Ok((wait, now));
                }
                Ok((got, rx)) => {
                    let arrival = Arrival { now, rx, t4_user };
                    if self.on_datagram(got, arrival, Awaited { seq, t1, warmup }) {
                        return Ok((Wait::Answered, now));
                    }
                }
                Err(e) => match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => {
                        if now >= deadline {
                            return Ok((self.time_out(seq, t1, warmup), now));
                        }
                        if stop.is_raised() {
                            return Ok((Wait::Stopped, now));
                        }
                    }
                    Some(errno) if is_network_error(errno) => {
                        if self.seen.replies == 0 {
                            let _ = self.clear_error_queue(fd);
                            self.time_out(seq, t1, warmup);
                            return Ok((Wait::Unreachable(errno), now));
                        }
                        // Mid-run, an ICMP error (a reflector that died)
                        // is recorded, but only the request's deadline
                        // says it is lost: a dead peer paces the run at
                        // one loss per timeout.
                        self.path_error(seq, now, errno, warmup);
                    }
                    _ => return Err(EngineError::io("receive failed")(e)),
                },
            }
        }
    }

    /// Classifies one datagram that arrived while `awaited` waited.
    /// Returns whether it was that request's fresh reply (then recorded as
    /// a sample). Always inlined into the wait (its two calls), as are its
    /// two halves: as a call of its own its prologue, epilogue and
    /// argument moves cost some 20 instructions a round trip.
    #[inline(always)]
    fn on_datagram(&mut self, got: sys::io::Received, arrival: Arrival, awaited: Awaited) -> bool {
        let at_ns = self.at_ns(arrival.now);
        let decoded = !got.truncated
            && self
                .codec
                .decode_into(&self.buf[..got.len], awaited.seq, &mut self.reply);
        // Late and duplicate replies concern *their* packet, which may be
        // a warm-up one even when this one is not.
        match decoded.then(|| self.tracker.on_reply(self.reply.seq)) {
            Some(Reply::Fresh) => {
                self.on_fresh_reply(arrival, awaited, at_ns);
                true
            }
            other => {
                self.on_other_datagram(other, got.len, arrival, awaited, at_ns);
                false
            }
        }
    }

    /// `awaited`'s own reply: its RTT, its points and split, its record
    /// (held for a Follow-Up when one may come), and the end of an outage.
    #[inline(always)]
    fn on_fresh_reply(&mut self, arrival: Arrival, awaited: Awaited, at_ns: u64) {
        let Awaited { seq, t1, warmup } = awaited;
        self.seen.replies += 1;
        let rtt = arrival.now.ns_since(t1);
        if self.pointing {
            let t4_user = self.read_realtime.then_some(arrival.t4_user);
            self.points.answered(rtt, &self.reply, arrival.rx, t4_user);
            if self.reflector_numbers || self.marks.is_some() {
                self.points.marks = marks_of(&self.reply, self.reply_tos);
            }
            self.points.follow_up = self.holding;
        }
        self.follow_up();
        let split = self.settle(warmup);
        // After the TX stamps are in: T1 kernel is one of its points.
        let far = if self.reflector_numbers {
            self.points.far_side()
        } else {
            FarSide::NONE
        };
        let record = Record::sample(seq, at_ns, rtt, warmup)
            .with_split(split)
            .with_far(far)
            // Marks are only ever written where `points_always`.
            .with_marks(self.points.marks);
        if self.holding {
            self.held = Some(Held {
                record,
                row: (!warmup).then_some(self.points),
                points: self.points,
            });
        } else {
            self.emit(record);
        }
        if !warmup && let Some(o) = self.outages.answered(at_ns) {
            self.emit_outage(o);
        }
    }

    /// Anything else that came: a late or repeated reply (counted against
    /// its own packet, logged in a row of its own) or a stray datagram
    /// (and why it is one, when its form says).
    #[inline(always)]
    fn on_other_datagram(
        &mut self,
        verdict: Option<Reply>,
        len: usize,
        arrival: Arrival,
        awaited: Awaited,
        at_ns: u64,
    ) {
        let (kind, about) = match verdict {
            Some(Reply::Late { reordered }) => {
                if self.tallying {
                    self.tally.reply(&self.reply.tlv);
                }
                (RecordKind::Late { reordered }, self.reply.seq)
            }
            Some(Reply::Duplicate) => (RecordKind::Duplicate, self.reply.seq),
            // A stray (`on_datagram` took the fresh reply already).
            _ => {
                let datagram = &self.buf[..len];
                if self.codec.is_echoed_stamp_request(datagram) {
                    self.seen.echoed_requests += 1;
                } else if self.codec.failed_authentication(datagram) {
                    self.seen.unauthenticated += 1;
                }
                if let Some(expected) = self.codec.truncated_echo(datagram) {
                    self.seen.truncated = Some((len, expected));
                }
                (RecordKind::Stray, awaited.seq)
            }
        };
        if kind != RecordKind::Stray {
            self.seen.late += 1;
        }
        let about_warmup = if kind == RecordKind::Stray {
            awaited.warmup
        } else {
            about < self.warmup
        };
        self.emit(Record::event(kind, about, at_ns, about_warmup));
        let status = match kind {
            RecordKind::Late { .. } => Some(PacketStatus::Late),
            RecordKind::Duplicate => Some(PacketStatus::Duplicate),
            _ => None,
        };
        if let Some(status) = status.filter(|_| !about_warmup) {
            // Its own row, with when it came: the packet's row said lost.
            self.log(Points {
                seq: about,
                status,
                t4_driver: arrival.rx.software,
                t4_hw: arrival.rx.hardware,
                t4_user: self.read_realtime.then_some(arrival.t4_user),
                ..Points::default()
            });
        }
    }

    /// One datagram with its RX stamps, by the one armed wait
    /// (`armed_wait.rs`): until something arrives, the deadline passes or
    /// `stop` is raised (then `EAGAIN`). `fresh`: the packet was just
    /// sent, so the whole timeout is ahead.
    #[inline]
    fn receive(
        &mut self,
        fd: i32,
        deadline: Mono,
        fresh: bool,
        stop: &StopFlag,
    ) -> io::Result<(sys::io::Received, Stamps)> {
        let how = Waiting {
            fd,
            busy_poll: self.busy_poll,
            armed: self.armed,
        };
        armed_wait::receive(self, how, deadline, fresh, stop)
    }

    /// Empties the error queue: TX stamps go to the packet in flight; an
    /// ICMP error it held is kept for [`Pinger::path_error`], and its
    /// errno returned.
    fn clear_error_queue(&mut self, fd: i32) -> Option<i32> {
        let report = match &mut self.stamps {
            Some(s) => s.absorb(fd),
            None => sys::errqueue::drain_error_queue(fd),
        };
        if report.is_some() {
            self.icmp = report;
        }
        report.map(|r| r.errno)
    }

    /// The far side or the path answered request `seq` with an error
    /// (`errno`, and the report the error queue held, when it held one):
    /// recorded and written to its row, never counted as its loss (its
    /// deadline decides that).
    #[cold]
    fn path_error(&mut self, seq: u64, now: Mono, errno: i32, warmup: bool) {
        let fd = self.socket.as_raw_fd();
        let _ = self.clear_error_queue(fd);
        let report = self.icmp.take();
        let e = report.map_or_else(|| far_error::of_errno(errno), |r| far_error::of_report(&r));
        // The error names its request when its quote does (it may be about
        // the one before, whose deadline passed).
        let about = report
            .and_then(|r| self.codec.quoted_seq(r.quoted.bytes(), seq))
            .unwrap_or(seq);
        if self.pointing && about == seq {
            self.points.path_error = Some(e);
        }
        let at_ns = self.at_ns(now);
        let warmup = if about == seq {
            warmup
        } else {
            about < self.warmup
        };
        self.emit(Record::path_error(about, at_ns, e, warmup));
    }

    /// The packet in flight is settled (answered or lost): its TX stamps
    /// are fetched, its points logged, and its split returned. Runs after
    /// the RTT is taken, so none of this is inside it. Always inlined, as
    /// `on_datagram` is.
    #[inline(always)]
    fn settle(&mut self, warmup: bool) -> Split {
        if !self.pointing {
            // Not in the stamped sample, and nothing reads its points.
            return if self.splitting {
                Split::UNSAMPLED
            } else {
                Split::NONE
            };
        }
        if let Some(stamps) = &mut self.stamps
            && self.tx_sent
        {
            stamps.collect(self.socket.as_raw_fd(), &mut self.points);
        }
        self.points.status = if self.points.rtt_ns.is_some() {
            PacketStatus::Ok
        } else {
            PacketStatus::Lost
        };
        // A packet held for its follow-up is logged when released.
        let held = self.holding && self.points.rtt_ns.is_some();
        if !(warmup || held) {
            self.release_held();
            self.log_overflow += u64::from(self.out.log_row(&self.points));
        }
        if !self.splitting {
            Split::NONE
        } else if self.in_sample {
            self.points.split()
        } else {
            Split::UNSAMPLED
        }
    }

    /// Request `seq`, sent at `t1`, got no reply by its deadline: lost
    /// (until a late reply says otherwise).
    /// A row for the per-packet log, if there is one. A full ring costs
    /// the log that row (counted), never the measurement a wait.
    #[inline]
    fn log(&mut self, row: Points) {
        self.release_held();
        self.log_now(row);
    }

    #[inline]
    fn log_now(&mut self, row: Points) {
        self.log_overflow += u64::from(self.out.log_row(&row));
    }

    fn time_out(&mut self, seq: u64, t1: Mono, warmup: bool) -> Wait {
        self.settle(warmup);
        self.tracker.timed_out(seq);
        let at_ns = self.at_ns(t1 + self.timeout);
        self.emit(Record::event(RecordKind::Lost, seq, at_ns, warmup));
        self.drain_strays(seq, warmup);
        if !warmup {
            self.outages.missed(seq, self.at_ns(t1));
            if self.give_up.lost(&self.outages, at_ns) {
                return Wait::GaveUp;
            }
        }
        Wait::TimedOut
    }

    fn emit_outage(&mut self, o: Outage) {
        let packets = u32::try_from(o.packets).unwrap_or(u32::MAX);
        let at_ns = self.at_ns(Mono::now());
        self.emit(Record::outage(o.seq, packets, at_ns, o.length_ns));
    }

    /// Counts whatever other sources sent to our port. Never blocks.
    fn drain_strays(&mut self, seq: u64, warmup: bool) {
        let fd = self.catcher.as_raw_fd();
        while sys::io::recv_from(fd, &mut self.buf, &mut self.from).is_ok() {
            let at_ns = self.at_ns(Mono::now());
            self.emit(Record::event(RecordKind::Stray, seq, at_ns, warmup));
        }
    }

    #[inline]
    fn at_ns(&self, now: Mono) -> u64 {
        now.ns_since(self.epoch)
    }

    /// Records into the authoritative statistics, then offers the record to
    /// the live consumer. A full ring costs the live view, never the totals.
    #[inline]
    fn emit(&mut self, record: Record) {
        self.release_held();
        self.emit_now(record);
    }

    /// A reply's TLVs are tallied, and its Follow-Up goes to the packet
    /// held for it, which is then released (see `extensions`).
    #[inline]
    fn follow_up(&mut self) {
        // Nothing is held without TLVs (`holding` implies `tallying`).
        if !self.tallying {
            return;
        }
        let reply = &self.reply;
        self.tally.reply(&reply.tlv);
        if let (Some(fu), Some(held)) = (reply.tlv.follow_up, self.held.as_mut()) {
            let matched = held.follow_up(&fu, reply.reflector_error.format());
            self.tally.follow_up(&fu, matched);
        } else if let Some(fu) = reply.tlv.follow_up {
            self.tally.follow_up(&fu, false);
        }
        self.release_held();
    }

    /// The held packet goes out as it is: its record, then its row.
    #[inline]
    fn release_held(&mut self) {
        // Nothing is ever held without Follow-Up asked: skip the take
        // (it moves the whole slot out) on every other run.
        if !self.holding {
            return;
        }
        if let Some(h) = self.held.take() {
            self.emit_now(h.record);
            if let Some(row) = h.row {
                self.log_now(row);
            }
        }
    }

    #[inline]
    fn emit_now(&mut self, record: Record) {
        self.stats.record(&record);
        if self.out.ring.push(record).is_err() {
            self.out.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Exchanges for Pinger<'_> {
    fn gave_up(&self) -> Option<Duration> {
        self.give_up.gave_up
    }

    /// Strays are drained and the wall clock followed every
    /// `STRAY_DRAIN_EVERY` packets, and once as warm-up ends: whatever
    /// other sources sent meanwhile belongs to it, not to the figures.
    #[inline]
    fn before(&mut self, seq: u64, warmup: bool, _: Mono, _: &StopFlag) -> bool {
        if seq == self.warmup && self.warmup > 0 {
            self.drain_strays(seq, true);
        }
        if seq.is_multiple_of(STRAY_DRAIN_EVERY) {
            self.drain_strays(seq, warmup);
            // A step of the wall clock is followed within this many
            // packets.
            self.wall = WallClock::sync();
        }
        false
    }

    #[inline]
    fn packet(&mut self, cfg: &ClientConfig, seq: u64, warmup: bool, stop: &StopFlag) -> Packet {
        let (wait, now) = self.exchange(cfg, seq, warmup, stop)?;
        if matches!(wait, Wait::Stopped | Wait::GaveUp) {
            return Ok((true, now));
        }
        self.give_up_if_unreachable(cfg, seq, wait)?;
        Ok((false, now))
    }

    fn finish(&mut self, seq: u64, last: Mono) {
        self.drain_strays(seq, false);
        self.release_held();
        // An outage still going on when the run ends ends with it.
        if let Some(o) = self.outages.end(self.at_ns(last)) {
            self.emit_outage(o);
        }
    }

    fn tallies(&self) -> (&Stats, u64, u64) {
        let ring = self.out.overflow.load(Ordering::Relaxed);
        (&self.stats, ring, self.log_overflow)
    }

    fn outcome(&self, cfg: &ClientConfig, base: ClientOutcome) -> ClientOutcome {
        ClientOutcome {
            stale_stamps: self.stamps.as_ref().map_or(0, ClientStamps::stale),
            unauthenticated: self.seen.unauthenticated,
            extensions: (cfg.stamp && !cfg.tlvs.is_empty())
                .then(|| self.tally.summary(cfg.tlvs, self.local(), cfg.server)),
            ..base
        }
    }
}

impl Receive for Pinger<'_> {
    type Got = (sys::io::Received, Stamps);

    /// One datagram, told not to wait when `now`: with RX stamps when the
    /// packet in flight is one of the stamped sample, with the reply's TOS
    /// when marks are read, else a bare `recv` (a spin on `recvmsg` with
    /// control data polls more slowly, and the RX stamps of packets outside
    /// the sample would be thrown away).
    #[inline]
    fn recv_one(&mut self, fd: RawFd, now: bool) -> io::Result<(sys::io::Received, Stamps)> {
        use sys::timestamping::{recv_stamped, recv_stamped_now};
        let (got, tos) = match (&mut self.stamps, &mut self.marks) {
            (Some(s), _) if self.in_sample && now => s.recv_now(fd, &mut self.buf),
            (Some(s), _) if self.in_sample => s.recv(fd, &mut self.buf),
            // Class of service: the reply's TOS rides in the control data.
            (_, Some(control)) if now => recv_stamped_now(fd, &mut self.buf, control, -1),
            (_, Some(control)) => recv_stamped(fd, &mut self.buf, None, control, -1),
            _ if now => {
                return sys::io::recv_now(fd, &mut self.buf).map(|r| (r, Stamps::default()));
            }
            _ => return sys::io::recv(fd, &mut self.buf).map(|r| (r, Stamps::default())),
        }
        .map(|m| (m.received, m))?;
        self.reply_tos = tos.tos;
        Ok((got, tos.stamps))
    }

    /// TX stamps go to the packet in flight; an ICMP error the queue held
    /// ends the wait with its errno.
    fn on_error_queue(&mut self, fd: RawFd) -> Option<io::Result<Self::Got>> {
        self.clear_error_queue(fd)
            .map(|errno| Err(io::Error::from_raw_os_error(errno)))
    }
}
