//! How well a paced run kept its send schedule, and latency counted from
//! the schedule rather than from the send (so a sender that stalls cannot
//! hide its stall: coordinated omission).

use super::hdr_counts::HdrCounts;
use super::rtt_figures::RttFigures;
use super::{MAX_TRACKABLE_NS, Record, RecordKind};
use serde::Serialize;

/// How the send times are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// One request in flight; the next when the reply (or its timeout)
    /// comes. Not a schedule.
    PingPong,
    /// `start + k·interval`.
    Periodic,
    /// Exponential gaps of mean `interval` (RFC 2330 / RFC 3432).
    Poisson,
}

impl Pattern {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::PingPong => "ping-pong",
            Pattern::Periodic => "periodic",
            Pattern::Poisson => "poisson",
        }
    }
}

/// The schedule's figures (JSON `schedule`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScheduleFigures {
    /// `periodic` or `poisson`.
    pub pattern: Pattern,
    /// The (mean) interval, ns.
    pub interval_ns: u64,
    /// Slots skipped because the sender could not make them (each one is
    /// in `rtt_from_schedule_ns` with the lateness it had when skipped).
    pub misses: u64,
    /// Send time minus scheduled time, median, ns.
    pub error_p50_ns: u64,
    /// … 99th percentile.
    pub error_p99_ns: u64,
    /// … largest.
    pub error_max_ns: u64,
}

/// Accumulates a paced run's schedule. Allocates once, in `new`.
#[derive(Debug, Clone)]
pub struct ScheduleStats {
    pattern: Pattern,
    interval_ns: u64,
    misses: u64,
    /// Send-time error of every request sent (2 significant digits). Both
    /// are `HdrCounts`: the measurement thread records them per packet.
    error: HdrCounts,
    /// RTT plus send-time error of every answered request, and the lateness
    /// of every slot skipped (a lower bound on what it would have taken).
    from_schedule: HdrCounts,
}

impl ScheduleStats {
    /// Empty, for a run sending on `pattern` every `interval_ns` (mean).
    pub fn new(pattern: Pattern, interval_ns: u64) -> Self {
        #[allow(clippy::expect_used)]
        let h = |digits| {
            HdrCounts::new(MAX_TRACKABLE_NS, digits).expect("constant histogram bounds are valid")
        };
        Self {
            pattern,
            interval_ns,
            misses: 0,
            error: h(2),
            from_schedule: h(3),
        }
    }

    /// The pattern and interval.
    pub fn setup(&self) -> (Pattern, u64) {
        (self.pattern, self.interval_ns)
    }

    /// The same schedule, with nothing recorded.
    pub fn emptied(&self) -> Self {
        Self::new(self.pattern, self.interval_ns)
    }

    /// Accounts for one (post-warm-up) record. Always inlined into
    /// `Stats::record`, on the measurement thread: the call cost as much
    /// as its two counts.
    #[inline(always)]
    pub fn record(&mut self, r: &Record) {
        match r.kind {
            RecordKind::Sample => {
                self.error.record(r.send_lag_ns);
                self.from_schedule
                    .record(r.rtt_ns.saturating_add(r.send_lag_ns).max(1));
            }
            RecordKind::Lost => self.error.record(r.send_lag_ns),
            RecordKind::Missed => {
                self.misses += 1;
                self.from_schedule.record(r.send_lag_ns.max(1));
            }
            _ => {}
        }
    }

    /// Adds another run's figures.
    pub fn merge(&mut self, other: &ScheduleStats) {
        self.misses += other.misses;
        self.error.add(&other.error);
        self.from_schedule.add(&other.from_schedule);
    }

    /// The schedule's figures, once anything was sent.
    pub fn figures(&self) -> Option<ScheduleFigures> {
        let e = self.error.histogram();
        (!e.is_empty() || self.misses > 0).then(|| ScheduleFigures {
            pattern: self.pattern,
            interval_ns: self.interval_ns,
            misses: self.misses,
            error_p50_ns: e.value_at_quantile(0.5),
            error_p99_ns: e.value_at_quantile(0.99),
            error_max_ns: e.max(),
        })
    }

    /// Latency from the scheduled send time, when any reply came.
    pub fn from_schedule(&self) -> Option<RttFigures> {
        RttFigures::of(self.from_schedule.histogram())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lags_misses_and_latency_from_the_schedule() {
        let mut s = ScheduleStats::new(Pattern::Periodic, 1_000_000);
        assert_eq!(s.figures(), None);
        for i in 0..100u64 {
            let r = Record::sample(i, 0, 50_000, false).with_send_lag(if i == 99 {
                400_000
            } else {
                2_000
            });
            s.record(&r);
        }
        s.record(&Record::event(RecordKind::Missed, 100, 0, false).with_send_lag(700_000));
        s.record(&Record::event(RecordKind::Lost, 101, 0, false).with_send_lag(3_000));
        let f = s.figures().unwrap();
        assert_eq!(f.misses, 1);
        assert!(
            f.error_p50_ns.abs_diff(2_000) <= 20,
            "two significant digits: {f:?}"
        );
        assert!(f.error_max_ns.abs_diff(400_000) < 4_000, "{f:?}");
        let late = s.from_schedule().unwrap();
        // The skipped slot is in, with the lateness it had.
        assert!(late.max.abs_diff(700_000) < 700, "{late:?}");
        assert!(late.p99.abs_diff(450_000) < 500, "{late:?}");
        assert_eq!(late.min, 52_000);
    }

    #[test]
    fn a_stall_shows_as_every_slot_it_swallowed() {
        // A 50 ms stall at 1 ms: the slots due during it are skipped as the
        // sender wakes, each as late as it was; the first sent is 50 ms late.
        let mut s = ScheduleStats::new(Pattern::Periodic, 1_000_000);
        for i in 0..950u64 {
            s.record(&Record::sample(i, 0, 50_000, false));
        }
        for k in 0..49u64 {
            let lag = 50_000_000 - k * 1_000_000;
            s.record(&Record::event(RecordKind::Missed, 950 + k, 0, false).with_send_lag(lag));
        }
        s.record(&Record::sample(999, 0, 50_000, false).with_send_lag(1_000_000));
        let f = s.from_schedule().unwrap();
        assert_eq!(s.figures().unwrap().misses, 49);
        // 999 entries: the stall is 5 % of them, so p99 sits inside it.
        assert!(f.p99 > 30_000_000, "{f:?}");
        assert!(f.max >= 49_000_000, "{f:?}");
    }
}
