//! TCP ping-pong over one connection: the request written whole (one
//! `send`), the reply read whole (one `recv` when the stream brings it in
//! one piece, as a bare C loop), the next request when it is in. As with
//! UDP, a reply not in by its timeout counts its request lost, and the
//! next request goes out on the same connection behind it: when the late
//! reply comes (the stream keeps the order), it is counted late. A lost
//! connection loses the requests waiting on it; the client opens it again
//! (see `link.rs`), and while it cannot, each request it could not send
//! counts lost at its timeout, so a run that has a budget still ends.
//!
//! With kernel stamps, one transaction in `--tx-stamp-every` is a sample:
//! `TCP_INFO` is read before it is sent and after its reply is in (both
//! outside the timed part), its request asks for SCHED, SND and ACK
//! stamps, and its reply is received with its RX stamp. The segments that
//! crossed meanwhile say whether the far kernel's ACK came on its own.

use super::conn::Sent;
use super::frame::Frame;
use super::kernel::KernelWatch;
use super::link::Link;
use super::slow::SlowRule;
use crate::client::output::Output;
use crate::client::paced::schedule::Slots;
use crate::client::run_loop::{Exchanges, Packet};
use crate::client::seen::{GIVE_UP_AFTER, Seen};
use crate::client::sequence::SequenceTracker;
use crate::client::{ClientConfig, ClientOutcome};
use crate::mono::Mono;
use crate::points::Points;
use crate::protocol::EchoCodec;
use crate::sys::clock::realtime_ns;
use crate::sys::tcp as sys_tcp;
use crate::{EngineError, StopFlag};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use synapse_stats::tcp::Break;
use synapse_stats::{OutageDetector, Record, RecordKind, Stats, TcpLive, TcpStats};

/// How waiting for one reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    Answered,
    TimedOut,
    /// The connection was lost; the request with it.
    Broken(Break),
    /// No connection to send on: the request counted lost at its timeout.
    Unsent,
    /// The stop flag was raised; the request is not counted.
    Stopped,
}

/// The TCP ping-pong's state. Everything is allocated in `new`.
pub(crate) struct TcpPinger<'a> {
    pub(super) cfg: &'a ClientConfig,
    pub(super) link: Link,
    pub(super) codec: EchoCodec,
    pub(super) frame: Frame,
    pub(super) tracker: SequenceTracker,
    pub(super) stats: Stats,
    pub(super) tcp: TcpStats,
    pub(super) kernel: KernelWatch,
    pub(super) live: Arc<TcpLive>,
    pub(super) out: Output,
    pub(super) log_overflow: u64,
    pub(super) outages: OutageDetector,
    /// The stop rule for a silent peer.
    pub(super) give_up: crate::client::give_up::GiveUp,
    /// A connection was lost: the first request lost with it and when it
    /// left. Every loss of a connection is an outage, however few
    /// requests it took.
    pub(super) broken_since: Option<(u64, u64)>,
    pub(super) epoch: Mono,
    pub(super) seen: Seen,
    /// The request in flight's points.
    pub(super) points: Points,
    /// Whether it is one of the stamped sample.
    pub(super) sampled: bool,
    /// `TCP_INFO` before the sampled request: segments in, data segments in.
    pub(super) segs_before: Option<(u32, u32)>,
    /// Requests sent on the open connection and not answered yet.
    pub(super) unanswered: u64,
    /// A reply came on the open connection.
    pub(super) replied_on_conn: bool,
    /// Which replies have the kernel asked whether it resent: those far
    /// slower than the fastest so far, or as late as a resend makes one.
    pub(super) slow: SlowRule,
    /// Replies that were not our requests.
    pub(super) strays: u64,
    /// Paced (the agent's peers): the slots requests leave in.
    slots: Option<Slots>,
}

impl<'a> TcpPinger<'a> {
    pub(crate) fn new(
        cfg: &'a ClientConfig,
        link: Link,
        out: Output,
        stats: Stats,
        live: Arc<TcpLive>,
        token: u64,
    ) -> Self {
        let mut tcp = TcpStats::new(false);
        tcp.connections = u64::from(link.conn.is_some());
        live.set_connected(link.conn.is_some(), 0);
        Self {
            cfg,
            link,
            codec: EchoCodec::new(cfg.size, token),
            frame: Frame::new(cfg.size),
            tracker: SequenceTracker::new(),
            stats,
            tcp,
            kernel: KernelWatch::default(),
            live,
            out,
            log_overflow: 0,
            outages: OutageDetector::default(),
            give_up: crate::client::give_up::GiveUp::new(cfg.give_up_after),
            broken_since: None,
            epoch: Mono::now(),
            seen: Seen::default(),
            points: Points::default(),
            sampled: false,
            segs_before: None,
            unanswered: 0,
            replied_on_conn: false,
            slow: SlowRule::default(),
            strays: 0,
            slots: cfg
                .schedule
                .map(|sch| Slots::new(sch, cfg.phase.as_nanos() as u64, token.rotate_left(29))),
        }
    }

    /// Paced: waits for the next slot; slots already more than half an
    /// interval late are skipped, each counted missed (irtt's rule, as the
    /// UDP prober's). Whether the stop flag was raised meanwhile.
    fn wait_for_slot(&mut self, seq: u64, warmup: bool, stop: &StopFlag) -> bool {
        let Some(slots) = self.slots.as_mut() else {
            return false;
        };
        let tolerance = self.cfg.schedule.map_or(0, |s| s.tolerance_ns());
        let now = Mono::now().ns_since(self.epoch);
        let mut missed = 0u32;
        while now > slots.due_ns().saturating_add(tolerance) {
            slots.advance();
            missed += 1;
        }
        let due = self.epoch + Duration::from_nanos(slots.due_ns());
        slots.advance();
        for _ in 0..missed {
            self.emit(Record::event(RecordKind::Missed, seq, now, warmup));
        }
        crate::client::stop::pause_until(due, stop)
    }

    /// The run is over: the connection closes, an outage still going on
    /// ends with it.
    fn finish_run(&mut self, last: Mono) {
        self.link.close(&mut self.tcp, &mut self.kernel, &self.live);
        let at = self.at_ns(last);
        let forced = self.broken_since.take();
        match (self.outages.end(at), forced) {
            (Some(o), _) => self.emit_outage(o.seq, o.packets, o.length_ns),
            (None, Some((first, since))) => {
                self.emit_outage(first, 1, at.saturating_sub(since));
            }
            (None, None) => {}
        }
    }

    /// One request: on the open connection, or on one opened again for
    /// it; without one by its timeout, it is lost unsent.
    fn transact(
        &mut self,
        seq: u64,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(Wait, Mono), EngineError> {
        let slot_end = Mono::now() + self.cfg.timeout;
        loop {
            let now = Mono::now();
            if self
                .link
                .reopen(now, &mut self.tcp, &mut self.kernel, &self.live)
            {
                return self.exchange(seq, warmup, stop);
            }
            if !self.cfg.keep_trying && self.seen.replies == 0 && self.link.refused() {
                return Err(EngineError::TcpRefused(self.cfg.server));
            }
            let now = Mono::now();
            // Paced, a request that finds no connection is lost at once:
            // waiting for one would cost the following slots.
            if now >= slot_end || self.slots.is_some() {
                return Ok((self.unsent(seq, slot_end - self.cfg.timeout, warmup), now));
            }
            let retry = self.link.next_try().min(slot_end);
            if crate::client::stop::pause_until(retry, stop) {
                return Ok((Wait::Stopped, Mono::now()));
            }
        }
    }

    /// Sends request `seq` on the open connection and waits for its reply.
    fn exchange(
        &mut self,
        seq: u64,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(Wait, Mono), EngineError> {
        let index = seq.checked_sub(self.cfg.warmup);
        let Some(conn) = self.link.conn.as_mut() else {
            return Ok((Wait::Unsent, Mono::now()));
        };
        self.sampled = conn.stamps.as_mut().is_some_and(|s| s.samples(index));
        self.segs_before = if self.sampled {
            sys_tcp::tcp_info(conn.fd)
                .ok()
                .map(|i| (i.segs_in, i.data_segs_in))
        } else {
            None
        };
        let t1_user = if self.sampled { realtime_ns() } else { 0 };
        let t1 = Mono::now();
        let payload = self.codec.encode(seq);
        let sent = conn.send(payload, self.sampled, t1 + self.cfg.timeout);
        self.tracker.sent(seq);
        self.points = Points {
            seq,
            t1_user: self.sampled.then_some(t1_user),
            ..Points::default()
        };
        self.unanswered += 1;
        match sent {
            Ok(Sent::Whole) => self.wait_for(seq, t1, warmup, stop),
            Ok(Sent::Lost(why)) => Ok((self.broke(why, seq, t1, warmup), Mono::now())),
            Err(e) => Err(EngineError::Send {
                addr: self.cfg.server,
                source: e,
            }),
        }
    }

    /// Before any reply, a peer that refuses, closes every connection, is
    /// silent or answers something else is reported, and the run ends.
    fn give_up_if_unreachable(&self, seq: u64, wait: Wait) -> Result<(), EngineError> {
        if self.cfg.keep_trying || self.seen.replies > 0 {
            return Ok(());
        }
        let addr = self.cfg.server;
        let (closed, how) = self.link.ended_before_reply;
        match wait {
            Wait::Broken(_) if closed >= 3 => Err(EngineError::TcpClosed {
                addr,
                times: closed,
                how: if how == Break::Reset {
                    "reset"
                } else {
                    "closed"
                },
            }),
            _ if self.strays >= GIVE_UP_AFTER => Err(EngineError::NotEcho(addr)),
            Wait::Unsent if seq + 1 >= GIVE_UP_AFTER => Err(EngineError::TcpConnect {
                addr,
                reason: self
                    .link
                    .last_failure
                    .as_ref()
                    .map_or_else(|| "no connection".into(), |(_, e)| e.to_string()),
            }),
            Wait::TimedOut if seq + 1 >= GIVE_UP_AFTER => {
                Err(self.seen.silence(addr, seq + 1, self.cfg.timeout))
            }
            _ => Ok(()),
        }
    }

    /// Nanoseconds since the run started.
    #[inline]
    pub(super) fn at_ns(&self, now: Mono) -> u64 {
        now.ns_since(self.epoch)
    }
}

impl Exchanges for TcpPinger<'_> {
    fn gave_up(&self) -> Option<Duration> {
        self.give_up.gave_up
    }

    /// `TCP_INFO` read when due; a paced run waits for its slot.
    #[inline]
    fn before(&mut self, seq: u64, warmup: bool, last: Mono, stop: &StopFlag) -> bool {
        if self.kernel.due(last)
            && let Some(conn) = &self.link.conn
        {
            let _ = self.kernel.read(conn.fd, &self.live);
        }
        self.wait_for_slot(seq, warmup, stop)
    }

    #[inline]
    fn packet(&mut self, _: &ClientConfig, seq: u64, warmup: bool, stop: &StopFlag) -> Packet {
        let (wait, now) = self.transact(seq, warmup, stop)?;
        if wait == Wait::Stopped || self.give_up.gave_up.is_some() {
            return Ok((true, now));
        }
        self.give_up_if_unreachable(seq, wait)?;
        Ok((false, now))
    }

    fn finish(&mut self, _: u64, last: Mono) {
        self.finish_run(last);
    }

    fn tallies(&self) -> (&Stats, u64, u64) {
        let ring = self.out.overflow.load(Ordering::Relaxed);
        (&self.stats, ring, self.log_overflow)
    }

    fn outcome(&self, _: &ClientConfig, base: ClientOutcome) -> ClientOutcome {
        ClientOutcome {
            stale_stamps: self.link.stale,
            tcp: Some(self.figures()),
            ..base
        }
    }
}
