//! The paced loop: requests leave on a schedule, whatever the replies do.
//!
//! One pinned thread and one unconnected socket serve every peer of the
//! run (the client has one; a fleet agent many). The thread sends each
//! slot on time, reads replies as they come, matching them to their
//! request by peer address and sequence number, and settles every request
//! at its deadline, in order. Between events it sleeps in `ppoll` until
//! just before the next slot and stays awake for the rest ([`waiter`] says
//! why); with `--busy-poll` it never sleeps.
//!
//! Per request: one clock read (two with the realtime stamp a STAMP
//! request or the log needs), `sendto`, a ring slot, and a deadline in a
//! FIFO. Per reply: `recvfrom` (or `recvmsg` with kernel stamps), one clock
//! read, a decode, a ring lookup, a histogram record and a ring push.
//! Nothing allocates after the start.

mod errors;
mod in_flight;
mod probe;
mod receive;
pub mod schedule;
mod stamps;
mod trace_turn;
mod waiter;

pub use probe::{Budget, MAX_IN_FLIGHT, ProbeConfig, in_flight_bound};
pub use stamps::PacedStamps;

use crate::client::seen::GIVE_UP_AFTER;
use crate::client::stop::STOP_CHECK;
use crate::mono::Mono;
use crate::points::{PacketStatus, Points};
use crate::sys;
use crate::sys::addr::RawAddr;
use crate::sys::clock::realtime_ns;
use crate::sys::cmsg::ControlBuf;
use crate::sys::errno::is_send_drop;
use crate::sys::poll::Readiness;
use crate::wall_clock::WallClock;
use crate::{EngineError, StopFlag};
use in_flight::{Entry, State};
use probe::Probe;
use socket2::Socket;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;
use synapse_stats::{Outage, OutageDetector, Record, RecordKind};
use waiter::Waiter;

/// How often the wall clock's offset is read again (a second).
const WALL_SYNC_NS: u64 = 1_000_000_000;

/// Probe index of a datagram from no peer of the run.
pub const NO_PROBE: usize = usize::MAX;

/// Where a paced run's results go.
pub trait Sink {
    /// One record about `probe` (or [`NO_PROBE`]: a stray from elsewhere).
    fn record(&mut self, probe: usize, r: Record);
    /// One log row about `probe` (measured requests only). By reference:
    /// a row is a few hundred bytes, copied only by a sink that keeps it.
    fn row(&mut self, probe: usize, p: &Points);
}

/// How the run ended, for the outcome.
#[derive(Debug, Clone, Copy)]
pub struct Ended {
    /// Measured time of each probe: from its first measured slot to when
    /// it stopped sending.
    pub measured: Duration,
    /// Stopped by the flag rather than by its budget.
    pub interrupted: bool,
    /// TX stamps that came after their request was settled.
    pub stale_stamps: u64,
    /// Datagrams refused as replies for want of a valid HMAC.
    pub unauthenticated: u64,
    /// What the first peer's replies' TLVs said.
    pub tally: crate::client::extensions::TlvTally,
    /// The single peer had been silent this long when the run gave up on
    /// it (`PacerConfig::give_up_after`).
    pub gave_up: Option<Duration>,
}

/// The loop's state. Everything is allocated in `new`.
pub struct Pacer<'a, S: Sink> {
    fd: i32,
    _socket: &'a Socket,
    probes: Vec<Probe>,
    /// Peer address → probe, for runs with more than one.
    by_addr: HashMap<SocketAddr, usize>,
    /// Next slot of every probe still sending: (due ns, probe).
    slots: BinaryHeap<Reverse<(u64, usize)>>,
    /// Every request in flight, in send order: (deadline ns, probe, seq).
    /// One timeout for all makes send order deadline order.
    deadlines: VecDeque<(u64, usize, u64)>,
    waiter: Waiter,
    stamps: Option<PacedStamps>,
    buf: Vec<u8>,
    from: RawAddr,
    epoch: Mono,
    /// The wall time of a monotonic reading (`wall_clock`): a slot, a T1
    /// and a T4 are each the wall time of the one monotonic read the loop
    /// makes, not a second read that a preemption could put apart from it
    /// (a packet then logged as sent before its slot, or a split that
    /// disagrees with its RTT).
    wall: WallClock,
    /// When `wall` was read, ns since the epoch: it is read again, before
    /// a send, once `WALL_SYNC_NS` have passed, so a step of the wall clock
    /// is followed within that long.
    wall_synced_ns: u64,
    timeout_ns: u64,
    busy_poll: bool,
    /// End the run with the reason when the (single) peer never answers.
    give_up: bool,
    /// End a single-peer run once its requests have had no timely reply
    /// for this long, ns.
    give_up_after_ns: Option<u64>,
    wake: SlotWake,
    /// Poll the socket on the next turn: something may be waiting.
    poll: bool,
    /// The run slept since the last slot (else the margin ages).
    slept: bool,
    /// Stamped requests left since the error queue was last read.
    unread_tx: bool,
    /// Class of service is read off replies: control data's room (when no
    /// kernel stamps bring it), and the last reply's TOS.
    marks: Option<Box<ControlBuf>>,
    reply_tos: Option<u8>,
    /// A trace run on this socket between the schedule's requests (the
    /// agent's prober).
    trace: Option<crate::trace::TraceSlot>,
    sink: S,
}

/// What the loop needs besides its probes.
#[derive(Debug, Clone, Copy)]
pub struct PacerConfig {
    /// How long a request may wait for its reply.
    pub timeout: Duration,
    /// Spin instead of sleeping.
    pub busy_poll: bool,
    /// End the run when the peer never answers (single-peer runs).
    pub give_up: bool,
    /// End a single-peer run once no request has had a timely reply for
    /// this long (`None`: never).
    pub give_up_after: Option<Duration>,
    /// How the loop wakes for its slots (unless it busy-polls).
    pub wake: SlotWake,
}

/// How a sleeping loop wakes for its slots and deadlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotWake {
    /// Wake a little before each slot and spin to it, so the request
    /// leaves on time (a measurement run: one peer, few slots a second).
    SpinToSlot,
    /// Sleep to the first tick (multiples of this many ns since the start)
    /// at or after the next slot or deadline, and serve everything due by
    /// then in one wake-up. A request leaves up to a tick after its slot,
    /// which its send lag records; its RTT is timed from when it really
    /// left, so nothing measured is bent. An agent: thousands of slots a
    /// second, where a wake-up per slot, per deadline and per reply would
    /// cost more CPU than the probes.
    Ticks(u64),
}

impl<'a, S: Sink> Pacer<'a, S> {
    /// A loop over `socket` (unconnected, non-blocking, bound), stamping
    /// in the kernel when `stamps` were enabled on it.
    pub fn new(
        socket: &'a Socket,
        peers: Vec<ProbeConfig>,
        cfg: PacerConfig,
        stamps: Option<PacedStamps>,
        sink: S,
    ) -> Self {
        let fd = socket.as_raw_fd();
        let token = sys::random::random_u64().unwrap_or_else(|_| realtime_ns());
        let epoch = Mono::now();
        let wall = WallClock::sync();
        // The first slots leave a little after the start, so setting up
        // is not counted as lateness.
        let start_ns = 1_000_000;
        let probes: Vec<Probe> = peers
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let seed = token.rotate_left(i as u32 % 64) ^ i as u64;
                Probe::new(p, cfg.timeout, start_ns, token, seed)
            })
            .collect();
        let in_flight: usize = probes.iter().map(|p| p.in_flight.capacity()).sum();
        let by_addr = if probes.len() > 1 {
            probes
                .iter()
                .enumerate()
                .map(|(i, p)| (p.cfg.addr, i))
                .collect()
        } else {
            HashMap::new()
        };
        let slots = probes
            .iter()
            .enumerate()
            .map(|(i, p)| Reverse((p.slots.due_ns(), i)))
            .collect();
        let mut probes = probes;
        let marks = mark_socket(fd, &mut probes);
        Self {
            fd,
            _socket: socket,
            probes,
            by_addr,
            slots,
            deadlines: VecDeque::with_capacity(in_flight),
            waiter: Waiter::default(),
            stamps,
            buf: vec![0; crate::protocol::RECV_BUFFER],
            from: RawAddr::empty(),
            wall,
            wall_synced_ns: 0,
            epoch,
            timeout_ns: cfg.timeout.as_nanos() as u64,
            busy_poll: cfg.busy_poll,
            give_up: cfg.give_up,
            give_up_after_ns: cfg.give_up_after.map(|d| d.as_nanos() as u64),
            wake: cfg.wake,
            poll: false,
            slept: false,
            unread_tx: false,
            marks,
            reply_tos: None,
            trace: None,
            sink,
        }
    }

    /// One record about probe `p`: the request it holds for its follow-up
    /// goes first, as it is (see `extensions`). A slot skipped or an error
    /// the path gave says nothing about the held request's reply, whose
    /// Follow-Up the next reply still brings: those leave it held (else
    /// every skipped slot cost a Follow-Up, counted as naming nothing).
    #[inline]
    fn record(&mut self, p: usize, r: Record) {
        if !matches!(r.kind, RecordKind::Missed | RecordKind::PathError) {
            self.release_held(p);
        }
        self.sink.record(p, r);
    }

    /// Probe `p`'s held request, recorded as it is.
    #[inline]
    fn release_held(&mut self, p: usize) {
        if let Some(h) = self.probes.get_mut(p).and_then(|probe| probe.held.take()) {
            self.sink.record(p, h.record);
        }
    }

    /// The results' destination, once the run is over.
    pub fn into_sink(self) -> S {
        self.sink
    }

    #[inline]
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed_ns()
    }

    /// The wall time at `since_epoch` ns after the epoch.
    #[inline]
    fn wall_ns(&self, since_epoch: u64) -> u64 {
        self.wall.at(self.epoch.plus_ns(since_epoch))
    }

    /// Runs until every probe has spent its budget and settled its last
    /// request, or until `stop` is raised.
    pub fn run(&mut self, stop: &StopFlag) -> Result<Ended, EngineError> {
        // Sleeps end when asked, not up to 50 µs later.
        let _ = sys::sched::set_timer_slack(1);
        let mut gave_up;
        loop {
            let now = self.now_ns();
            if self.trace.is_some() {
                self.trace_turn(now)?;
            }
            if let Some(&Reverse((due, p))) = self.slots.peek()
                && due <= now
            {
                self.fire(p, now)?;
                continue;
            }
            // The TX stamps of every request just sent, in one read before
            // any reply: else each reply's wake-up reads the queue, and a
            // non-empty queue ends the next sleep at once.
            if std::mem::take(&mut self.unread_tx) {
                self.absorb_error_queue()?;
            }
            if std::mem::take(&mut self.poll) {
                self.receive_all()?;
            }
            let now = self.now_ns();
            self.expire(now)?;
            gave_up = self.silent_too_long(now);
            if stop.is_raised()
                || gave_up.is_some()
                || (self.slots.is_empty() && self.deadlines.is_empty())
            {
                break;
            }
            self.wait()?;
        }
        tracing::debug!(
            sleeps = self.waiter.sleeps,
            mean_overshoot_ns = self.waiter.overshoot_total_ns / self.waiter.sleeps.max(1),
            margin_ns = self.waiter.margin_ns(),
            "paced timer"
        );
        let ended = self.close(stop.is_raised());
        self.diagnose_silence()?;
        Ok(Ended { gave_up, ..ended })
    }

    /// How long a single peer's requests have had no timely reply at
    /// `now`, once that is `give_up_after` or more.
    fn silent_too_long(&self, now: u64) -> Option<Duration> {
        let limit = self.give_up_after_ns?;
        let [probe] = self.probes.as_slice() else {
            return None;
        };
        let silent = now.saturating_sub(probe.outages.since_ns()?);
        (silent >= limit).then(|| Duration::from_nanos(silent))
    }

    /// A single-peer run that ended without a reply, too soon to give up
    /// on it (`GIVE_UP_AFTER` timeouts), while what came instead names the
    /// peer's fault: the error ping-pong gives, not a report of every
    /// request lost and as many strays.
    fn diagnose_silence(&self) -> Result<(), EngineError> {
        match self.probes.as_slice() {
            [probe] if self.give_up && probe.seen.replies == 0 && probe.seen.names_a_fault() => {
                Err(probe.seen.silence(
                    probe.cfg.addr,
                    probe.unanswered,
                    Duration::from_nanos(self.timeout_ns),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Sleeps (or not) until the next slot, the next deadline, a datagram
    /// or `STOP_CHECK`, whichever is first.
    fn wait(&mut self) -> Result<(), EngineError> {
        let now = self.now_ns();
        let until = |t: Option<u64>| t.map_or(u64::MAX, |t| t.saturating_sub(now));
        let to_slot = until(self.slots.peek().map(|r| r.0.0));
        let to_deadline = until(self.deadlines.front().map(|d| d.0))
            .min(STOP_CHECK.as_nanos() as u64)
            .min(until(self.trace_due()));
        let sleep = match self.wake {
            _ if self.busy_poll => None,
            SlotWake::SpinToSlot => self.waiter.sleep_for(to_slot, to_deadline),
            SlotWake::Ticks(tick) => {
                let ns = to_tick(now, to_slot, tick).min(to_tick(now, to_deadline, tick));
                (ns > 0).then(|| Duration::from_nanos(ns))
            }
        };
        let Some(sleep) = sleep else {
            // Awake: look at the socket on every turn until the slot.
            self.poll = true;
            std::hint::spin_loop();
            return Ok(());
        };
        let readiness = sys::poll::wait_readable(self.fd, sleep)
            .map_err(EngineError::io("cannot wait for the socket"))?;
        match readiness {
            Readiness::TimedOut => {
                let woke = self.now_ns();
                let late = woke.saturating_sub(now + sleep.as_nanos() as u64);
                self.waiter.woke(late, woke);
                self.slept = true;
            }
            Readiness::Readable => self.poll = true,
            Readiness::ErrorQueue => {
                self.absorb_error_queue()?;
                self.poll = true;
            }
        }
        Ok(())
    }

    /// Probe `p`'s slot is due at `now`: sends it, skips it as missed, or
    /// retires the probe when its budget is spent.
    fn fire(&mut self, p: usize, now: u64) -> Result<(), EngineError> {
        self.slots.pop();
        if !std::mem::take(&mut self.slept) && !self.busy_poll {
            self.waiter.stayed_awake(now);
        }
        let probe = &mut self.probes[p];
        let due = probe.slots.due_ns();
        // The budget counts from the first measured slot, sent or skipped:
        // a skipped one counted from the next would add a slot to the run.
        if !probe.is_warmup(probe.next_seq) && probe.measure_start_ns.is_none() {
            probe.measure_start_ns = Some(due);
        }
        let result = if now - due > probe.cfg.schedule.tolerance_ns() {
            // Past half-way to the next slot: skipped, never made up for.
            let seq = probe.next_seq;
            // Its lateness enters the latency from the schedule, as
            // HdrHistogram's recordValueWithExpectedInterval does: a stall
            // shows as every slot it swallowed, not as one long sample.
            let r = Record::event(RecordKind::Missed, seq, now, probe.is_warmup(seq))
                .with_send_lag(now - due);
            self.record(p, r);
            Ok(())
        } else {
            // Outside any round trip: before the send reads its clock.
            if now - self.wall_synced_ns >= WALL_SYNC_NS {
                self.wall = WallClock::sync();
                self.wall_synced_ns = now;
            }
            self.send(p, due)
        };
        let probe = &mut self.probes[p];
        probe.slots.advance();
        let next = probe.slots.due_ns();
        if probe.budget_spent(next) {
            probe.done_ns = Some(next);
        } else {
            self.slots.push(Reverse((next, p)));
        }
        result
    }

    /// Sends probe `p`'s next request for the slot due at `due`.
    #[inline]
    fn send(&mut self, p: usize, due: u64) -> Result<(), EngineError> {
        let probe = &mut self.probes[p];
        let seq = probe.next_seq;
        let warmup = probe.is_warmup(seq);
        let (mut t1_user, mut t1, mut sent) = self.send_once(p, seq);
        if sent
            .as_ref()
            .is_err_and(|e| e.raw_os_error().is_some_and(sys::errno::is_pending_icmp))
        {
            // A pending ICMP error about an earlier request (a dead peer's,
            // sent just before in the same tick) fails this send without
            // sending it, and is consumed by failing it: this request's own
            // fate is a second try, with its clocks read afresh. (A route
            // that is really gone fails the second try too; a local
            // firewall's EPERM is this send's own and is not retried.)
            if let Some(stamps) = &mut self.stamps {
                stamps.send_failed();
            }
            self.absorb_error_queue()?;
            (t1_user, t1, sent) = self.send_once(p, seq);
        }
        let sched = self.wall_ns(due);
        let probe = &mut self.probes[p];
        probe.tracker.sent(seq);
        probe.next_seq += 1;
        let entry = Entry {
            seq,
            state: State::Pending,
            sent_ns: t1,
            lag_ns: t1.saturating_sub(due),
            answered_ns: 0,
            tx_sent: sent.is_ok(),
            warmup,
            points: Points {
                seq,
                t1_user: Some(t1_user),
                sched: Some(sched),
                ..Points::default()
            },
        };
        let displaced = probe.in_flight.insert(entry);
        self.deadlines.push_back((t1 + self.timeout_ns, p, seq));
        if let Some(stamps) = &mut self.stamps {
            if sent.is_ok() {
                self.unread_tx = true;
                if let Some(gone) = stamps.sent(p, seq) {
                    self.file_tx(gone);
                }
            } else {
                stamps.send_failed();
            }
        }
        if let Some(old) = displaced {
            // More in flight than the ring was sized for: the oldest is
            // settled now, lost, a little before its deadline.
            self.settle(p, old, t1)?;
        }
        match sent {
            Ok(_) => Ok(()),
            // The request never left (an ICMP error from an earlier one, no
            // route, a firewall, a full queue): lost at its deadline, like
            // any other, so a dead link costs one loss per slot.
            Err(e) if e.raw_os_error().is_some_and(is_send_drop) => {
                let report = sys::errqueue::drain_error_queue(self.fd);
                self.refused_before_any_reply(p, e.raw_os_error())?;
                self.path_error(report, e.raw_os_error());
                Ok(())
            }
            Err(e) => Err(EngineError::Send {
                addr: self.probes[p].cfg.addr,
                source: e,
            }),
        }
    }

    /// Reads the clocks, encodes request `seq` of probe `p` and sends it:
    /// (T1 wall clock, T1 monotonic, what `sendto` said).
    #[inline]
    fn send_once(&mut self, p: usize, seq: u64) -> (u64, u64, std::io::Result<usize>) {
        let t1 = self.now_ns();
        let t1_user = self.wall_ns(t1);
        let probe = &mut self.probes[p];
        let payload = probe.codec.encode(seq, t1_user);
        let sent = match probe.send_tos {
            None => sys::io::send_to(self.fd, payload, &probe.raw),
            Some(tos) => sys::marks::send_to_marked(self.fd, payload, &probe.raw, tos),
        };
        (t1_user, t1, sent)
    }

    /// An ICMP "port unreachable" before any reply ends a single-peer run
    /// at once: nobody is listening there.
    fn refused_before_any_reply(&self, p: usize, errno: Option<i32>) -> Result<(), EngineError> {
        let probe = &self.probes[p];
        if self.give_up && probe.seen.replies == 0 && errno == Some(libc::ECONNREFUSED) {
            return Err(EngineError::Refused(probe.cfg.addr));
        }
        Ok(())
    }

    /// Settles every request whose deadline passed before `now`, in order.
    #[inline]
    fn expire(&mut self, now: u64) -> Result<(), EngineError> {
        while let Some(&(deadline, p, seq)) = self.deadlines.front() {
            if deadline >= now {
                break;
            }
            self.deadlines.pop_front();
            if self.settle_answered(p, seq, deadline) {
                continue;
            }
            if let Some(entry) = self.probes[p].in_flight.take(seq) {
                self.settle(p, entry, deadline)?;
            }
        }
        Ok(())
    }

    /// `settle` for request `seq` of probe `p` when its reply came, where
    /// it lies in the ring (an entry is a few hundred bytes, copied out
    /// only to be dropped): its TX stamps filed, its row written, an
    /// outage it ends reported. `false` when it is not in flight answered.
    #[inline]
    fn settle_answered(&mut self, p: usize, seq: u64, at_ns: u64) -> bool {
        let Self {
            probes,
            stamps,
            sink,
            ..
        } = self;
        let probe = &mut probes[p];
        let Some(e) = probe
            .in_flight
            .get_mut(seq)
            .filter(|e| e.state == State::Answered)
        else {
            return false;
        };
        file_late_tx(stamps, p, e);
        let outage = answered_leaves(p, e, sink, &mut probe.outages);
        probe.in_flight.clear(seq);
        if let Some(o) = outage {
            self.record(p, outage_record(o, at_ns));
        }
        true
    }

    /// A request leaves the ring at `at_ns`: answered (its row is written,
    /// an outage it ends is reported) or lost.
    fn settle(&mut self, p: usize, mut entry: Entry, at_ns: u64) -> Result<(), EngineError> {
        file_late_tx(&mut self.stamps, p, &mut entry);
        let probe = &mut self.probes[p];
        if !entry.warmup {
            let end = if entry.state == State::Answered {
                entry.answered_ns
            } else {
                at_ns
            };
            probe.resolved_ns = probe.resolved_ns.max(Some(end));
        }
        if entry.state == State::Answered {
            // It had a reply: no silence to give up on.
            if let Some(o) = answered_leaves(p, &mut entry, &mut self.sink, &mut probe.outages) {
                self.record(p, outage_record(o, at_ns));
            }
            return Ok(());
        }
        entry.points.status = PacketStatus::Lost;
        probe.tracker.timed_out(entry.seq);
        if !entry.warmup {
            probe.outages.missed(entry.seq, entry.sent_ns);
        }
        if probe.seen.replies == 0 {
            probe.unanswered += 1;
        }
        let lost = Record::event(RecordKind::Lost, entry.seq, at_ns, entry.warmup)
            .with_send_lag(entry.lag_ns);
        self.record(p, lost);
        if !entry.warmup {
            self.sink.row(p, &entry.points);
        }
        let probe = &self.probes[p];
        // Requests in flight together time out together: silence is given
        // up on after as long as ping-pong waits (GIVE_UP_AFTER timeouts
        // back to back), not after ten timeouts a millisecond apart, which
        // a reflector starved for 110 ms on a busy host would fail.
        if self.give_up
            && probe.seen.replies == 0
            && probe.unanswered >= GIVE_UP_AFTER
            && at_ns >= GIVE_UP_AFTER * self.timeout_ns
        {
            return Err(probe.seen.silence(
                probe.cfg.addr,
                probe.unanswered,
                Duration::from_nanos(self.timeout_ns),
            ));
        }
        Ok(())
    }

    /// The run is over: answered requests still in the ring are settled
    /// (rows, outages); pending ones, cut short by a stop, are not counted.
    fn close(&mut self, interrupted: bool) -> Ended {
        let now = self.now_ns();
        while let Some((_, p, seq)) = self.deadlines.pop_front() {
            if let Some(entry) = self.probes[p].in_flight.take(seq)
                && entry.state == State::Answered
            {
                let _ = self.settle(p, entry, now);
            }
        }
        let mut measured = Duration::ZERO;
        for p in 0..self.probes.len() {
            self.release_held(p);
            let probe = &mut self.probes[p];
            let end = probe.resolved_ns.or(probe.done_ns).unwrap_or(now);
            if let Some(start) = probe.measure_start_ns {
                measured = measured.max(Duration::from_nanos(end.saturating_sub(start)));
            }
            if let Some(o) = probe.outages.end(open_outage_end(end, probe.done_ns)) {
                self.record(p, outage_record(o, now));
            }
        }
        Ended {
            measured,
            interrupted,
            stale_stamps: self.stamps.as_ref().map_or(0, PacedStamps::stale),
            unauthenticated: self.probes.iter().map(|p| p.seen.unauthenticated).sum(),
            tally: self.probes.first().map(|p| p.tally).unwrap_or_default(),
            gave_up: None,
        }
    }
}

/// Where an outage still open when the run ends stops: when the request
/// after its last would have left (the schedule's next slot), or when
/// the last one's wait ran out, whichever came first. Mid-run an outage
/// ends with the next timely reply, about a slot after its last request;
/// ending it at the last timeout instead would make two requests lost at
/// the end of a 10 ms schedule a 1 s outage, and FAIL `--max-outage`.
fn open_outage_end(resolved_ns: u64, done_ns: Option<u64>) -> u64 {
    done_ns.map_or(resolved_ns, |done| done.min(resolved_ns))
}

/// Files the TX stamps request `e` of probe `p` still waits for, if they
/// came. Always inlined: on the hot path (every answered request) the
/// call cost as much as its check.
#[inline(always)]
fn file_late_tx(stamps: &mut Option<PacedStamps>, p: usize, e: &mut Entry) {
    if e.tx_sent
        && e.points.t1_driver.is_none()
        && let Some(tx) = stamps.as_mut().and_then(|s| s.take(p, e.seq))
    {
        receive::put_tx(&mut e.points, tx);
    }
}

/// An answered request leaves, in its slot or out of it: its row written
/// (measured requests); the outage its reply ended, if any, to record.
/// (The log's ring and the records' are read apart: a row before the
/// outage record it ends is no change of order anyone sees.)
#[inline]
fn answered_leaves<S: Sink>(
    p: usize,
    e: &mut Entry,
    sink: &mut S,
    outages: &mut OutageDetector,
) -> Option<Outage> {
    e.points.status = PacketStatus::Ok;
    if e.warmup {
        return None;
    }
    sink.row(p, &e.points);
    outages.answered(e.answered_ns)
}

/// Class of service, set once on the socket: the probes' TOS byte when
/// they share one (else each request carries its own), and the replies'
/// read on arrival when any probe asks. Returns the control data's room
/// for reading them.
fn mark_socket(fd: i32, probes: &mut [Probe]) -> Option<Box<ControlBuf>> {
    let first = probes.iter().find_map(|p| p.cfg.marks)?;
    let v6 = probes.iter().any(|p| p.cfg.addr.is_ipv6());
    let shared = probes.iter().all(|p| p.cfg.marks.unwrap_or(0) == first);
    if !(shared && sys::marks::set_tos(fd, v6, first).is_ok()) {
        for p in probes.iter_mut() {
            p.send_tos = Some(p.cfg.marks.unwrap_or(0));
        }
    }
    // Failing to read the marks leaves them "not reported", never 0.
    let _ = sys::marks::enable_recv_tos(fd, v6);
    Some(Box::default())
}

/// From `now`, how long to the first multiple of `tick` at or after
/// `now + to` (`to` itself without a tick, or when that is never).
fn to_tick(now: u64, to: u64, tick: u64) -> u64 {
    match now.checked_add(to) {
        Some(at) if tick > 0 => at.div_ceil(tick).saturating_mul(tick) - now,
        _ => to,
    }
}

fn outage_record(o: Outage, at_ns: u64) -> Record {
    let packets = u32::try_from(o.packets).unwrap_or(u32::MAX);
    Record::outage(o.seq, packets, at_ns, o.length_ns)
}

#[cfg(test)]
mod tests {
    use super::{open_outage_end, to_tick};

    #[test]
    fn an_outage_open_at_the_end_stops_at_the_next_slot_or_the_last_wait() {
        // A 10 ms schedule waiting 1 s for its last reply: the next slot.
        assert_eq!(
            open_outage_end(1_990_000_000, Some(1_000_000_000)),
            1_000_000_000
        );
        // A 10 s schedule waiting 1 s: the last wait.
        assert_eq!(
            open_outage_end(1_990_000_000, Some(10_990_000_000)),
            1_990_000_000
        );
        // Stopped before its budget was spent: the last wait.
        assert_eq!(open_outage_end(1_990_000_000, None), 1_990_000_000);
    }

    #[test]
    fn a_tick_rounds_each_wake_up_up_to_its_grid() {
        // Due 0.3 ms from 10.2 ms: the 11 ms tick, 0.8 ms away.
        assert_eq!(to_tick(10_200_000, 300_000, 1_000_000), 800_000);
        // Due on a tick: that tick, not the next.
        assert_eq!(to_tick(10_200_000, 800_000, 1_000_000), 800_000);
        assert_eq!(to_tick(10_000_000, 0, 1_000_000), 0, "due now, on a tick");
        // Events 0.1 and 0.6 ms away share one wake-up.
        assert_eq!(
            to_tick(10_200_000, 100_000, 1_000_000),
            to_tick(10_200_000, 600_000, 1_000_000)
        );
    }

    #[test]
    fn without_a_tick_or_an_event_the_wait_is_unchanged() {
        assert_eq!(to_tick(10_200_000, 300_000, 0), 300_000);
        assert_eq!(to_tick(10_200_000, u64::MAX, 1_000_000), u64::MAX);
        assert!(to_tick(5, u64::MAX - 10, 1_000_000) >= u64::MAX - 10);
    }
}
