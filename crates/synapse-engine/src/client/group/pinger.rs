//! The multicast ping-pong loop: send to the group, gather the answers of
//! the responders expected until they are all in or the timeout passes,
//! then settle the request: its TX stamps fetched, each answer recorded
//! for its responder (with its split), each silent responder's loss, the
//! group's own record, the spread and skew.

use super::pacing::{GroupPacing, Slot};
use super::responders::{Responders, Sender};
use super::round::Round;
use super::{
    DISCOVERY_ROUNDS, GroupOutcome, MulticastOptions, ResponderEntry, ResponderOutcome,
    ResponderPoints,
};
use crate::client::armed_wait::{self, Receive, Waiting};
use crate::client::output::Output;
use crate::client::prober::PeerRecord;
use crate::client::run_loop::{Exchanges, Packet};
use crate::client::run_token::run_token;
use crate::client::seen::{GIVE_UP_AFTER, Seen};
use crate::client::sequence::Reply;
use crate::client::stamps::ClientStamps;
use crate::client::stop::pause_until;
use crate::client::{ClientConfig, ClientOutcome};
use crate::mono::Mono;
use crate::points::{PacketStatus, Points};
use crate::protocol::responder_name::{self, NAMED_SIZE};
use crate::protocol::tlv::StampTlvs;
use crate::protocol::{Codec, EchoCodec, RECV_BUFFER, StampSender};
use crate::sys;
use crate::sys::addr::RawAddr;
use crate::sys::errno::{is_network_error, is_send_drop};
use crate::sys::io::Received;
use crate::sys::timestamping::Stamps;
use crate::wall_clock::WallClock;
use crate::{EngineError, StopFlag};
use socket2::Socket;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use synapse_stats::fan_out::skew_of;
use synapse_stats::{FanOut, OutageDetector, Record, RecordKind, Shape, Split, Stats};

/// Where a responder's records go: its own ring, and what it missed.
pub(in crate::client) struct AnswerRing {
    /// Each responder's records, tagged with its index.
    pub ring: rtrb::Producer<PeerRecord>,
    /// Records the ring had no room for.
    pub overflow: Arc<AtomicU64>,
    /// Each responder as it is first heard (room for every one).
    pub directory: rtrb::Producer<ResponderEntry>,
    /// Each responder's rows for the per-packet log, when one is kept.
    pub log: Option<rtrb::Producer<ResponderPoints>>,
}

/// The loop's state. Everything but a new responder's entry is allocated
/// in `new`.
pub(in crate::client) struct GroupPinger<'a> {
    socket: &'a Socket,
    group: RawAddr,
    from: RawAddr,
    codec: Codec,
    reply: crate::protocol::Reply,
    buf: Vec<u8>,
    stamps: Option<ClientStamps>,
    /// Read `CLOCK_REALTIME` beside the monotonic clock (kernel stamps or
    /// STAMP).
    realtime: bool,
    /// Whether an answer's points split its round trip.
    splitting: bool,
    /// STAMP: the wall clock is read for every request (T1 travels).
    stamp: bool,
    /// Whether the request in flight is one of the stamped sample (TX
    /// stamps asked, RX stamps read): the split comes from those alone,
    /// as in unicast ping-pong.
    in_sample: bool,
    /// Its wall clock is read.
    read_realtime: bool,
    /// A per-packet log is kept: every request's wall clock is read.
    logging: bool,
    wall: WallClock,
    /// The request in flight: its own points (T1 user, then its TX stamps).
    sent: Points,
    tx_sent: bool,
    round: Round,
    responders: Responders,
    options: MulticastOptions,
    stats: Stats,
    outages: OutageDetector,
    fan_out: FanOut,
    out: Output,
    answers: AnswerRing,
    log_overflow: u64,
    epoch: Mono,
    timeout: Duration,
    busy_poll: bool,
    armed: Option<Duration>,
    warmup: u64,
    /// An agent's group: a request that cannot leave (no route yet) is
    /// lost, never an error, even before any answer.
    keep_trying: bool,
    seen: Seen,
    strange: u64,
    unlisted: u64,
    requests: u64,
    last_seq: u64,
    /// Paced (`--interval`, `--rate`): the slots the requests leave in.
    pacing: Option<GroupPacing>,
    /// The budget, when a count (`--packets`).
    packets: Option<u64>,
    /// When the request in flight's answers are due: its timeout, or its
    /// next slot when that comes first.
    deadline: Mono,
    /// How late the request in flight left after its slot, ns.
    lag_ns: u64,
}

/// How waiting for a request's answers ended.
enum Wait {
    /// Every responder expected answered in time.
    Complete,
    /// The deadline passed first.
    TimedOut,
    /// Stop was raised: the request is not counted.
    Stopped,
}

impl<'a> GroupPinger<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(in crate::client) fn new(
        cfg: &ClientConfig,
        socket: &'a Socket,
        armed: Option<Duration>,
        out: Output,
        answers: AnswerRing,
        stamps: Option<ClientStamps>,
        stats: Stats,
        shape: Shape,
    ) -> Self {
        let epoch = Mono::now();
        let codec = if cfg.stamp {
            let sender = StampSender::new(cfg.size, cfg.ssid, cfg.stamp_key.clone())
                .with_format(cfg.stamp_format);
            // Each answer's responder-name TLV tells who answered.
            let tlvs = cfg.tlvs.union(StampTlvs::NAME);
            Codec::Stamp(sender.with_tlvs(tlvs, cfg.marks.unwrap_or(0)))
        } else {
            Codec::Echo(EchoCodec::asking_names(
                cfg.size.max(NAMED_SIZE),
                run_token(epoch),
            ))
        };
        let kernel = stamps.is_some();
        // A log's rows carry every request's wall-clock times.
        let logging = answers.log.is_some();
        // The first slot a millisecond after the start, so setting up is
        // not counted as lateness.
        let pacing = cfg
            .schedule
            .map(|s| GroupPacing::new(s, 1_000_000, run_token(epoch).rotate_left(17)));
        Self {
            socket,
            group: RawAddr::from_socket_addr(cfg.server),
            from: RawAddr::empty(),
            codec,
            reply: crate::protocol::Reply::plain(0),
            buf: vec![0; RECV_BUFFER],
            stamps,
            realtime: cfg.stamp || kernel || logging,
            logging,
            splitting: cfg.stamp || kernel,
            stamp: cfg.stamp,
            in_sample: true,
            read_realtime: false,
            wall: WallClock::sync(),
            sent: Points::default(),
            tx_sent: false,
            round: Round::default(),
            responders: Responders::new(shape),
            options: cfg.multicast,
            stats,
            outages: OutageDetector::default(),
            fan_out: FanOut::new(),
            out,
            answers,
            log_overflow: 0,
            epoch,
            timeout: cfg.timeout,
            busy_poll: cfg.thread.busy_poll,
            armed,
            warmup: cfg.warmup,
            keep_trying: cfg.keep_trying,
            seen: Seen::default(),
            strange: 0,
            unlisted: 0,
            requests: 0,
            last_seq: 0,
            pacing,
            packets: cfg.packets,
            deadline: epoch,
            lag_ns: 0,
        }
    }

    #[inline]
    fn at_ns(&self, t: Mono) -> u64 {
        t.ns_since(self.epoch)
    }

    /// The responders a request waits for now.
    fn expected(&self) -> usize {
        match self.options.responders {
            Some(n) => n as usize,
            None => self.responders.len().max(1),
        }
    }

    /// Whether request `seq` may end before its deadline once `count`
    /// responders answered.
    fn complete(&self, seq: u64, count: usize) -> bool {
        let discovering = self.options.responders.is_none() && seq < DISCOVERY_ROUNDS;
        !discovering && count >= self.expected()
    }

    /// Sends request `seq` to the group and gathers its answers.
    fn exchange(
        &mut self,
        seq: u64,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(Wait, Mono), EngineError> {
        let fd = self.socket.as_raw_fd();
        for r in self.responders.all_mut() {
            r.tracker.sent(seq);
        }
        if !warmup {
            self.requests += 1;
        }
        let index = seq.checked_sub(self.warmup);
        self.in_sample = self.stamps.as_mut().is_none_or(|s| s.samples(index));
        self.read_realtime = self.realtime && (self.stamp || self.in_sample || self.logging);
        let t1 = Mono::now();
        let slot: Option<Slot> = self.pacing.as_mut().map(GroupPacing::take);
        self.deadline = t1 + self.timeout;
        let mut sched = None;
        if let Some(slot) = slot {
            self.deadline = self.deadline.min(self.epoch.plus_ns(slot.next_ns));
            self.lag_ns = self.at_ns(t1).saturating_sub(slot.due_ns);
            sched = Some(self.wall.at(self.epoch.plus_ns(slot.due_ns)));
        }
        let t1_user = if self.read_realtime {
            self.wall.at(t1)
        } else {
            0
        };
        let payload = self.codec.encode(seq, t1_user);
        let sent = match &self.stamps {
            Some(s) => s.send_to(fd, payload, &self.group, self.in_sample),
            None => sys::io::send_to(fd, payload, &self.group),
        };
        self.sent = Points {
            seq,
            t1_user: self.read_realtime.then_some(t1_user),
            sched,
            ..Points::default()
        };
        self.round.start(seq, t1, warmup);
        self.tx_sent = sent.is_ok() && self.stamps.is_some() && self.in_sample;
        if let Some(stamps) = self.stamps.as_mut().filter(|_| self.in_sample) {
            if sent.is_ok() {
                stamps.sent();
            } else {
                stamps.send_failed();
            }
        }
        match sent {
            Ok(_) => self.gather(seq, stop),
            // No route, a full queue: this request never left. It is
            // lost after its timeout, as if it had gone out, so a dead
            // link paces the run instead of spinning it.
            Err(e)
                if e.raw_os_error().is_some_and(is_send_drop)
                    && (self.seen.replies > 0 || self.keep_trying) =>
            {
                let _ = sys::errqueue::drain_error_queue(fd);
                let stopped = pause_until(self.deadline, stop);
                let wait = if stopped {
                    Wait::Stopped
                } else {
                    Wait::TimedOut
                };
                Ok((wait, Mono::now()))
            }
            Err(e) => Err(EngineError::Send {
                addr: self
                    .group
                    .to_socket_addr()
                    .unwrap_or(std::net::SocketAddr::from(([0u8; 4], 0))),
                source: e,
            }),
        }
    }

    /// Receives answers to `seq` until every responder expected is in, its
    /// deadline passes, or `stop` is raised.
    fn gather(&mut self, seq: u64, stop: &StopFlag) -> Result<(Wait, Mono), EngineError> {
        let fd = self.socket.as_raw_fd();
        let deadline = self.deadline;
        let mut fresh = true;
        loop {
            let how = Waiting {
                fd,
                busy_poll: self.busy_poll,
                armed: self.armed,
            };
            let received = armed_wait::receive(self, how, deadline, fresh, stop);
            fresh = false;
            let now = Mono::now();
            match received {
                Ok((got, rx)) if now <= deadline => {
                    self.on_datagram(got, rx, now);
                    if self.complete(seq, self.round.count()) {
                        return Ok((Wait::Complete, now));
                    }
                }
                // After the deadline: the request is settled first, then
                // what came is classified (late, for its responder).
                Ok((got, rx)) => {
                    self.settle();
                    self.on_datagram(got, rx, now);
                    return Ok((Wait::TimedOut, now));
                }
                Err(e) => match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => {
                        if now >= deadline {
                            return Ok((Wait::TimedOut, now));
                        }
                        if stop.is_raised() {
                            return Ok((Wait::Stopped, now));
                        }
                    }
                    // An ICMP error about the group is nobody's answer.
                    Some(errno) if is_network_error(errno) => self.absorb(fd),
                    _ => return Err(EngineError::io("receive failed")(e)),
                },
            }
        }
    }

    /// Reads the error queue: TX stamps go to the request in flight.
    fn absorb(&mut self, fd: RawFd) {
        match self.stamps.as_mut() {
            Some(s) => {
                s.absorb(fd);
            }
            None => {
                let _ = sys::errqueue::drain_error_queue(fd);
            }
        }
    }

    /// Classifies one datagram: a responder's timely answer to the request
    /// in flight (filed in the round), its late or repeated answer (its
    /// record), or a stray (the group's).
    fn on_datagram(&mut self, got: Received, rx: Stamps, now: Mono) {
        let at_ns = self.at_ns(now);
        let current = self.round.seq;
        let datagram = &self.buf[..got.len];
        let decoded = !got.truncated && self.codec.decode_into(datagram, current, &mut self.reply);
        if !decoded {
            self.stray(at_ns);
            return;
        }
        let name = match self.codec {
            Codec::Echo(_) => responder_name::told(datagram),
            Codec::Stamp(_) => self.reply.tlv.name,
        };
        let seq = self.reply.seq;
        let known = self.responders.len();
        let i = match self.responders.find_or_add(name, &self.from, seq, current) {
            Sender::Known(i) if i >= known => {
                self.announce(i);
                self.settled_before_heard(i, seq, current, at_ns);
                i
            }
            Sender::Known(i) => i,
            Sender::Strange => {
                self.strange += 1;
                return self.stray(at_ns);
            }
            Sender::Unlisted => {
                self.unlisted += 1;
                return self.stray(at_ns);
            }
        };
        let about_warmup = seq < self.warmup;
        let kind = match self.responders.all_mut()[i].tracker.on_reply(seq) {
            Reply::Fresh if seq == current => {
                self.seen.replies += 1;
                let mut points = self.sent;
                let t4_user = self.read_realtime.then(|| self.wall.at(now));
                points.answered(now.ns_since(self.round.t1), &self.reply, rx, t4_user);
                self.round.answered(i, now, points);
                return;
            }
            Reply::Fresh | Reply::Stray => {
                return self.stray(at_ns);
            }
            Reply::Late { reordered } => RecordKind::Late { reordered },
            Reply::Duplicate => RecordKind::Duplicate,
        };
        self.seen.late += 1;
        self.emit_for(i, Record::event(kind, seq, at_ns, about_warmup));
        if !about_warmup {
            // Its own row, with when it came: the request's row said lost.
            let status = match kind {
                RecordKind::Duplicate => PacketStatus::Duplicate,
                _ => PacketStatus::Late,
            };
            let t4_user = self.read_realtime.then(|| self.wall.at(now));
            self.log_for(
                i,
                Points {
                    seq,
                    status,
                    t4_driver: rx.software,
                    t4_hw: rx.hardware,
                    t4_user,
                    ..Points::default()
                },
            );
        }
    }

    /// Responder `i`, first heard answering request `first`, was asked
    /// every request since (the tracker counts them sent): those settled
    /// before it was known, `first` to `current` less one, are its losses,
    /// so that its late answer to one corrects a loss, as anyone's does,
    /// and its requests stay its answers, late ones and losses.
    fn settled_before_heard(&mut self, i: usize, first: u64, current: u64, at_ns: u64) {
        for seq in first..current {
            let warmup = seq < self.warmup;
            self.emit_for(i, Record::event(RecordKind::Lost, seq, at_ns, warmup));
            if !warmup {
                let row = Points {
                    seq,
                    status: PacketStatus::Lost,
                    ..Points::default()
                };
                self.log_for(i, row);
            }
        }
    }

    /// Responder `i` was heard for the first time: a live front end is
    /// told who it is (its ring has room for every one).
    fn announce(&mut self, i: usize) {
        let entry = self.entry(i);
        let _ = self.answers.directory.push(entry);
    }

    /// Who responder `i` is.
    fn entry(&self, i: usize) -> ResponderEntry {
        let r = &self.responders.all()[i];
        ResponderEntry {
            index: i as u32,
            name: r.name,
            address: r.address,
        }
    }

    /// A datagram that is no responder's answer: the group's stray.
    fn stray(&mut self, at_ns: u64) {
        let warmup = self.round.warmup;
        self.emit(Record::event(
            RecordKind::Stray,
            self.round.seq,
            at_ns,
            warmup,
        ));
    }

    /// The request in flight is settled: its TX stamps fetched, each
    /// timely answer recorded for its responder, each silent responder's
    /// loss, and the group's record.
    fn settle(&mut self) {
        if self.round.settled {
            return;
        }
        self.round.settled = true;
        self.last_seq = self.round.seq;
        if let Some(stamps) = self.stamps.as_mut().filter(|_| self.tx_sent) {
            stamps.collect(self.socket.as_raw_fd(), &mut self.sent);
            for a in self.round.answers_mut() {
                a.points.t1_sched = self.sent.t1_sched;
                a.points.t1_driver = self.sent.t1_driver;
                a.points.t1_hw = self.sent.t1_hw;
                a.points.t1_wire = self.sent.t1_wire;
            }
        }
        self.tx_sent = false;
        self.record_answers();
        self.record_silent();
        self.record_group();
    }

    /// Each timely answer, as a sample of its responder.
    fn record_answers(&mut self) {
        let (seq, warmup) = (self.round.seq, self.round.warmup);
        for k in 0..self.round.count() {
            let a = self.round.answers()[k];
            let (Some(at), Some(rtt)) = (a.at, a.points.rtt_ns) else {
                continue;
            };
            let at_ns = self.at_ns(at);
            let record = Record::sample(seq, at_ns, rtt, warmup)
                .with_split(self.split_of(&a.points))
                .with_far(a.points.far_side())
                .with_send_lag(self.lag_ns);
            self.emit_for(a.responder, record);
            if !warmup {
                let row = Points {
                    status: PacketStatus::Ok,
                    ..a.points
                };
                self.log_for(a.responder, row);
            }
            let r = &mut self.responders.all_mut()[a.responder];
            r.last_answer = Some((seq, at_ns));
            if warmup {
                r.outages.reset();
            } else if let Some(o) = r.outages.answered(at_ns) {
                let outage = outage_record(o, at_ns);
                self.emit_for(a.responder, outage);
            }
        }
    }

    /// Each known responder that did not answer in time: lost, for it.
    fn record_silent(&mut self) {
        let (seq, warmup, t1) = (self.round.seq, self.round.warmup, self.round.t1);
        let (lost_ns, sent_ns) = (self.at_ns(self.deadline), self.at_ns(t1));
        let lost = Record::event(RecordKind::Lost, seq, lost_ns, warmup).with_send_lag(self.lag_ns);
        for i in 0..self.responders.len() {
            if self.round.heard_from(i) || self.responders.all()[i].first_seq > seq {
                continue;
            }
            let r = &mut self.responders.all_mut()[i];
            r.tracker.timed_out(seq);
            if !warmup {
                r.outages.missed(seq, sent_ns);
            }
            self.emit_for(i, lost);
            if !warmup {
                let row = Points {
                    status: PacketStatus::Lost,
                    ..self.sent
                };
                self.log_for(i, row);
            }
        }
    }

    /// The group's own record (answered when every expected responder
    /// answered in time, by the slowest answer; lost otherwise), and the
    /// request's spread and skew.
    fn record_group(&mut self) {
        let (seq, warmup, t1) = (self.round.seq, self.round.warmup, self.round.t1);
        if !warmup && let Some(spread) = self.round.spread_ns() {
            self.fan_out.spread(spread);
            let stamps = self.round.answers().iter().map(|a| {
                let error = a.points.reflector_error.and_then(|e| e.bound_ns());
                (a.points.t2, error.map(|e| e.ceil() as u64))
            });
            self.fan_out.skew(skew_of(stamps));
        }
        let slowest = self.round.answers().last().copied();
        let complete = self.round.count() >= self.expected();
        match slowest.and_then(|a| Some((a.at?, a.points.rtt_ns?, a.points))) {
            Some((at, rtt, points)) if complete => {
                let at_ns = self.at_ns(at);
                let split = self.split_of(&points);
                let record = Record::sample(seq, at_ns, rtt, warmup).with_split(split);
                self.emit(record.with_send_lag(self.lag_ns));
                if !warmup && let Some(o) = self.outages.answered(at_ns) {
                    self.emit(outage_record(o, at_ns));
                }
            }
            _ => {
                let lost_ns = self.at_ns(self.deadline);
                let lost = Record::event(RecordKind::Lost, seq, lost_ns, warmup);
                self.emit(lost.with_send_lag(self.lag_ns));
                if !warmup {
                    self.outages.missed(seq, self.at_ns(t1));
                }
            }
        }
    }

    fn split_of(&self, points: &Points) -> Split {
        if self.splitting {
            points.split()
        } else {
            Split::NONE
        }
    }

    /// The group's record: its statistics, then the live ring.
    fn emit(&mut self, record: Record) {
        self.stats.record(&record);
        if self.out.ring.push(record).is_err() {
            self.out.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A responder's record: its statistics, then its ring.
    fn emit_for(&mut self, responder: usize, record: Record) {
        self.responders.all_mut()[responder].stats.record(&record);
        let tagged = PeerRecord {
            peer: responder as u32,
            record,
        };
        if self.answers.ring.push(tagged).is_err() {
            self.answers.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A row of responder `i` for the per-packet log, if one is kept. A
    /// full ring costs the log that row (counted), never the measurement.
    fn log_for(&mut self, i: usize, points: Points) {
        if self.answers.log.is_none() {
            return;
        }
        let row = ResponderPoints {
            responder: self.entry(i),
            points,
        };
        let full = self
            .answers
            .log
            .as_mut()
            .is_some_and(|l| l.push(row).is_err());
        self.log_overflow += u64::from(full);
    }

    /// Paced: skips the slots already too late (each recorded missed, for
    /// the group and every responder), then waits for the next. `Some`
    /// (when) ends the run: stop was raised, or the skipped slots spent
    /// the budget (a count of slots, sent or skipped).
    fn await_slot(&mut self, seq: u64, warmup: bool, stop: &StopFlag) -> Option<Mono> {
        loop {
            let now = Mono::now();
            let now_ns = now.ns_since(self.epoch);
            let Some(lag) = self.pacing.as_mut()?.skip_if_late(now_ns, !warmup) else {
                break;
            };
            let missed = Record::event(RecordKind::Missed, seq, now_ns, warmup).with_send_lag(lag);
            self.emit(missed);
            for i in 0..self.responders.len() {
                self.emit_for(i, missed);
            }
            if !warmup && self.slots_spent(seq) {
                return Some(now);
            }
        }
        let pacing = self.pacing.as_ref()?;
        match pacing.wait(self.epoch, self.busy_poll, stop) {
            Some(()) => None,
            None => Some(Mono::now()),
        }
    }

    /// Paced with a count (`--packets`): whether the measured slots sent
    /// before request `seq` and those skipped make it up.
    fn slots_spent(&self, seq: u64) -> bool {
        let (Some(pacing), Some(n)) = (&self.pacing, self.packets) else {
            return false;
        };
        seq.saturating_sub(self.warmup) + pacing.missed >= n
    }

    /// What the run found, for the outcome.
    fn group_outcome(&self, group: std::net::SocketAddr) -> GroupOutcome {
        GroupOutcome {
            group,
            responders: self
                .responders
                .all()
                .iter()
                .map(|r| ResponderOutcome {
                    address: r.address,
                    name: r.name,
                    stats: r.stats.clone(),
                    first_seq: r.first_seq,
                    last_answer: r.last_answer,
                })
                .collect(),
            expected: self.expected() as u32,
            expected_asked: self.options.responders.is_some(),
            fan_out: self.fan_out.clone(),
            strange: self.strange,
            unlisted: self.unlisted,
            requests: self.requests,
            last_seq: self.last_seq,
        }
    }
}

/// An outage's record.
fn outage_record(o: synapse_stats::Outage, at_ns: u64) -> Record {
    let packets = u32::try_from(o.packets).unwrap_or(u32::MAX);
    Record::outage(o.seq, packets, at_ns, o.length_ns)
}

impl Exchanges for GroupPinger<'_> {
    /// A group's run keeps its length: responders come and go, and each
    /// one's silence is told in its own row, not by ending the run.
    fn gave_up(&self) -> Option<Duration> {
        None
    }

    fn before(&mut self, seq: u64, warmup: bool, _: Mono, _: &StopFlag) -> bool {
        if seq.is_multiple_of(1024) {
            // A step of the wall clock is followed within this many.
            self.wall = WallClock::sync();
        }
        // Paced: the slots skipped count in the budget, as the sent ones.
        !warmup && self.slots_spent(seq)
    }

    fn packet(&mut self, cfg: &ClientConfig, seq: u64, warmup: bool, stop: &StopFlag) -> Packet {
        if self.pacing.is_some()
            && let Some(ended) = self.await_slot(seq, warmup, stop)
        {
            return Ok((true, ended));
        }
        let (wait, now) = self.exchange(seq, warmup, stop)?;
        match wait {
            // Not counted: nothing is recorded of it.
            Wait::Stopped => return Ok((true, now)),
            Wait::Complete | Wait::TimedOut => self.settle(),
        }
        // An agent's group keeps asking: its members may join later.
        if self.seen.replies == 0 && seq + 1 >= GIVE_UP_AFTER && !self.keep_trying {
            let timeout_ms = cfg.timeout.as_millis() as u64;
            return Err(if self.seen.late > 0 {
                EngineError::TooSlow {
                    addr: cfg.server,
                    timeout_ms,
                }
            } else {
                EngineError::NoResponder {
                    group: cfg.server,
                    packets: seq + 1,
                    timeout_ms,
                }
            });
        }
        Ok((false, now))
    }

    fn finish(&mut self, _: u64, last: Mono) {
        let at_ns = self.at_ns(last);
        if let Some(o) = self.outages.end(at_ns) {
            self.emit(outage_record(o, at_ns));
        }
        for i in 0..self.responders.len() {
            if let Some(o) = self.responders.all_mut()[i].outages.end(at_ns) {
                self.emit_for(i, outage_record(o, at_ns));
            }
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
            group: Some(self.group_outcome(cfg.server)),
            ..base
        }
    }
}

impl Receive for GroupPinger<'_> {
    type Got = (Received, Stamps);

    /// One datagram with its source (and its RX stamps, for a request of
    /// the stamped sample).
    #[inline]
    fn recv_one(&mut self, fd: RawFd, now: bool) -> io::Result<(Received, Stamps)> {
        match &mut self.stamps {
            Some(s) if self.in_sample => s
                .recv_from(fd, &mut self.buf, &mut self.from, now)
                .map(|m| (m.received, m.stamps)),
            // Outside the sample: a bare `recvfrom`, no control data.
            _ if now => sys::io::recv_from_now(fd, &mut self.buf, &mut self.from)
                .map(|r| (r, Stamps::default())),
            _ => sys::io::recv_from(fd, &mut self.buf, &mut self.from)
                .map(|r| (r, Stamps::default())),
        }
    }

    /// TX stamps go to the request in flight; an ICMP report about the
    /// group is no answer, and the wait goes on.
    fn on_error_queue(&mut self, fd: RawFd) -> Option<io::Result<Self::Got>> {
        self.absorb(fd);
        None
    }
}
