//! One peer of a paced run: its address and wire format, its schedule and
//! budget, and what it has in flight.

use super::in_flight::InFlight;
use super::schedule::{Schedule, Slots};
use crate::client::extensions::{Held, TlvTally};
use crate::client::seen::Seen;
use crate::client::sequence::{SequenceTracker, WINDOW};
use crate::protocol::stamp::TimeFormat;
use crate::protocol::stamp_key::StampKey;
use crate::protocol::tlv::StampTlvs;
use crate::protocol::{Codec, EchoCodec, Reply, StampSender};
use crate::sys::addr::RawAddr;
use std::net::SocketAddr;
use std::time::Duration;
use synapse_stats::OutageDetector;

/// When a peer stops sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// After this many measured requests.
    Packets(u64),
    /// After this long of measured slots.
    Duration(Duration),
    /// When the run is stopped.
    Unbounded,
}

/// What one peer is asked for.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// The reflector.
    pub addr: SocketAddr,
    /// Its send schedule.
    pub schedule: Schedule,
    /// Its first slot, after the run's start (peers spread out this way).
    pub phase: Duration,
    /// Requests sent first and left out of the figures.
    pub warmup: u64,
    /// When it stops.
    pub budget: Budget,
    /// Payload bytes.
    pub size: usize,
    /// STAMP instead of plain echo.
    pub stamp: bool,
    /// STAMP: the Session-Sender Identifier sent (RFC 8972; 0: none).
    pub ssid: u16,
    /// STAMP authenticated mode's shared key.
    pub key: Option<StampKey>,
    /// Class of service: the TOS byte its requests leave with (`None`: the
    /// system's); the replies' marks are read when set.
    pub marks: Option<u8>,
    /// STAMP: the RFC 8972 TLVs each request carries.
    pub tlvs: StampTlvs,
    /// STAMP: the format of the T1 it sends (NTP or PTP).
    pub stamp_format: TimeFormat,
}

/// A peer's state during the run.
#[derive(Debug)]
pub struct Probe {
    pub cfg: ProbeConfig,
    pub raw: RawAddr,
    pub codec: Codec,
    pub tracker: SequenceTracker,
    pub in_flight: InFlight,
    pub slots: Slots,
    /// The next sequence number to send (missed slots take none).
    pub next_seq: u64,
    pub outages: OutageDetector,
    pub seen: Seen,
    /// Requests that went unanswered before any reply came.
    pub unanswered: u64,
    /// The first measured slot, ns since the epoch.
    pub measure_start_ns: Option<u64>,
    /// When it stopped sending (its budget spent), ns since the epoch.
    pub done_ns: Option<u64>,
    /// The last measured request's end, its reply or its timeout, ns since
    /// the epoch: where the run's measured time ends (not the schedule's
    /// next slot, which may be an hour on).
    pub resolved_ns: Option<u64>,
    /// The TOS its requests are sent with, when the socket's is another.
    pub send_tos: Option<u8>,
    /// Follow-Up Telemetry: the answered request waiting for the next reply.
    pub follows_up: bool,
    pub held: Option<Held>,
    /// Its last reply, decoded in place (`Codec::decode_into`): one per
    /// peer, as a plain echo writes only the sequence number and the rest
    /// must stay what its own codec left.
    pub reply: Reply,
    /// What its replies' TLVs said, kept only when the report shows it
    /// (STAMP with TLVs asked): a plain echo has nothing to tally.
    pub tallying: bool,
    pub tally: TlvTally,
}

/// Requests that may be in flight at once for a schedule and timeout.
/// Poisson gaps bunch up, so it keeps twice the mean and then some.
pub fn in_flight_bound(schedule: &Schedule, timeout: Duration) -> u64 {
    let mean = (timeout.as_nanos() as u64).div_ceil(schedule.interval_ns()) + 1;
    match schedule.pattern {
        synapse_stats::Pattern::Poisson => mean * 2 + 64,
        _ => mean + 1,
    }
}

/// The most a peer may have in flight: what the sequence tracker remembers.
pub const MAX_IN_FLIGHT: u64 = WINDOW;

impl Probe {
    /// A peer whose slots start at `start_ns` (plus its phase); `token`
    /// marks the run's echo requests, `seed` draws Poisson gaps.
    pub fn new(cfg: ProbeConfig, timeout: Duration, start_ns: u64, token: u64, seed: u64) -> Self {
        let codec = if cfg.stamp {
            let sender =
                StampSender::new(cfg.size, cfg.ssid, cfg.key.clone()).with_format(cfg.stamp_format);
            Codec::Stamp(sender.with_tlvs(cfg.tlvs, cfg.marks.unwrap_or(0)))
        } else {
            Codec::Echo(EchoCodec::new(cfg.size, token))
        };
        let bound = in_flight_bound(&cfg.schedule, timeout).min(MAX_IN_FLIGHT);
        // Late and duplicate replies are told apart for a while after their
        // deadline: sixteen timeouts' worth, and never fewer than 1,024.
        let remembered = (bound * 16).max(1_024);
        let first = start_ns + cfg.phase.as_nanos() as u64;
        Self {
            raw: RawAddr::from_socket_addr(cfg.addr),
            codec,
            tracker: SequenceTracker::with_window(remembered),
            in_flight: InFlight::new(bound as usize),
            slots: Slots::new(cfg.schedule, first, seed),
            next_seq: 0,
            outages: OutageDetector::default(),
            seen: Seen::default(),
            unanswered: 0,
            measure_start_ns: None,
            done_ns: None,
            resolved_ns: None,
            send_tos: None,
            follows_up: cfg.stamp && cfg.tlvs.follow_up,
            held: None,
            reply: Reply::plain(0),
            tallying: cfg.stamp && !cfg.tlvs.is_empty(),
            tally: TlvTally::default(),
            cfg,
        }
    }

    /// Whether request `seq` is part of the warm-up.
    #[inline]
    pub fn is_warmup(&self, seq: u64) -> bool {
        seq < self.cfg.warmup
    }

    /// Whether the slot due at `due_ns` is past the budget.
    #[inline]
    pub fn budget_spent(&self, due_ns: u64) -> bool {
        let Some(start) = self.measure_start_ns else {
            return false;
        };
        match self.cfg.budget {
            Budget::Packets(n) => self.next_seq - self.cfg.warmup >= n,
            Budget::Duration(d) => due_ns - start >= d.as_nanos() as u64,
            Budget::Unbounded => false,
        }
    }

    /// The newest sequence number sent (for widening STAMP's 32 bits).
    #[inline]
    pub fn newest(&self) -> u64 {
        self.next_seq.saturating_sub(1)
    }
}
