//! The numbers a finished (or running) measurement reduces to.

use super::{
    Counters, JitterFigures, LossDirection, OneWayFigures, RttFigures, ScheduleFigures, Stats,
};
use serde::Serialize;
use std::time::Duration;

/// One bar of the distribution: `[low, high)` nanoseconds, or an open-ended
/// outlier bucket when `high` is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DistributionBucket {
    /// Inclusive lower bound (ns).
    pub low_ns: u64,
    /// Exclusive upper bound (ns); `None` for "and above".
    pub high_ns: Option<u64>,
    /// Samples in the bucket.
    pub count: u64,
}

/// Linear buckets of a "nice" width covering the bulk of the samples, with
/// everything past p99.9 gathered in a final outlier bucket.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Distribution {
    /// The buckets, lowest first.
    pub buckets: Vec<DistributionBucket>,
}

/// Everything a report needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// RTT figures (ns); `None` (JSON `null`) when no reply came back: no
    /// replies, no RTT.
    pub rtt_ns: Option<RttFigures>,
    /// Packet accounting.
    pub packets: Counters,
    /// Measured time, excluding warm-up (seconds).
    pub duration_s: f64,
    /// Requests per second over `duration_s`.
    pub rate_pps: f64,
    /// Runs of two or more requests without a timely reply.
    pub outages: super::Outages,
    /// Paced runs: the send schedule and how it was kept (`null` in
    /// ping-pong).
    pub schedule: Option<ScheduleFigures>,
    /// Paced runs: latency from each request's scheduled send time, so a
    /// sender's own stalls count against it.
    pub rtt_from_schedule_ns: Option<RttFigures>,
    /// Round-trip jitter: |IPDV| between replies to consecutive requests
    /// (RFC 5481 §4.1), |D| between consecutive arrivals and the RFC 3550
    /// estimator, over RTTs.
    pub jitter_ns: Option<JitterFigures>,
    /// STAMP: one-way delays (each with its own one-way jitter) and the
    /// clocks they were read on.
    pub one_way_ns: Option<OneWayFigures>,
    /// STAMP: the lost requests split by direction.
    pub loss_direction: Option<LossDirection>,
    /// Class of service per leg (`null` unless the run marks or reads it).
    pub class_of_service: Option<super::CosFigures>,
    /// Histogram shape.
    #[serde(skip)]
    pub distribution: Distribution,
}

const MAX_BUCKETS: u64 = 10;

impl Summary {
    /// Reduces statistics measured over `duration`.
    pub fn from_stats(stats: &Stats, duration: Duration) -> Self {
        let rtt_ns = RttFigures::of(stats.histogram());
        let packets = *stats.counters();
        let duration_s = duration.as_secs_f64();
        let rate_pps = if duration_s > 0.0 {
            packets.sent as f64 / duration_s
        } else {
            0.0
        };
        Self {
            rtt_ns,
            packets,
            duration_s,
            rate_pps,
            outages: *stats.outages(),
            schedule: stats.schedule().and_then(|s| s.figures()),
            rtt_from_schedule_ns: stats.schedule().and_then(|s| s.from_schedule()),
            jitter_ns: stats.jitter().figures(),
            one_way_ns: stats.one_way().and_then(|w| w.figures()),
            loss_direction: stats.direction().figures(packets.lost),
            class_of_service: stats.cos().map(super::CosStats::figures),
            distribution: Distribution::from_stats(stats),
        }
    }
}

/// The smallest of 1, 2, 5 × 10^k that is at least `x`.
fn nice_ceil(x: u64) -> u64 {
    let mut unit = 1u64;
    loop {
        for m in [1, 2, 5] {
            if unit * m >= x {
                return unit * m;
            }
        }
        unit *= 10;
    }
}

impl Distribution {
    fn from_stats(stats: &Stats) -> Self {
        let h = stats.histogram();
        if h.is_empty() {
            return Self::default();
        }
        let (lo, hi) = (h.min(), h.value_at_quantile(0.999));
        let width = nice_ceil((hi - lo).div_ceil(MAX_BUCKETS - 2).max(1));
        let start = lo / width * width;
        let n = ((hi - start) / width + 1).min(MAX_BUCKETS);
        let end = start + n * width;
        let mut buckets: Vec<DistributionBucket> = (0..n)
            .map(|i| DistributionBucket {
                low_ns: start + i * width,
                high_ns: Some(start + (i + 1) * width),
                count: 0,
            })
            .collect();
        let mut outliers = 0;
        for v in h.iter_recorded() {
            let value = h.highest_equivalent(v.value_iterated_to()).min(h.max());
            let count = v.count_at_value();
            if value >= end {
                outliers += count;
            } else {
                buckets[((value - start) / width) as usize].count += count;
            }
        }
        if outliers > 0 {
            buckets.push(DistributionBucket {
                low_ns: end,
                high_ns: None,
                count: outliers,
            });
        }
        Self { buckets }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Record;

    fn stats_of(rtts: &[u64]) -> Stats {
        let mut s = Stats::new();
        for (i, &r) in rtts.iter().enumerate() {
            s.record(&Record::sample(i as u64, 0, r, false));
        }
        s
    }

    #[test]
    fn nice_ceil_picks_one_two_five() {
        assert_eq!(nice_ceil(1), 1);
        assert_eq!(nice_ceil(3), 5);
        assert_eq!(nice_ceil(6), 10);
        assert_eq!(nice_ceil(1_999), 2_000);
        assert_eq!(nice_ceil(2_001), 5_000);
    }

    #[test]
    fn figures_match_the_samples() {
        let s = stats_of(&[10_000, 20_000, 30_000, 40_000]);
        let sum = Summary::from_stats(&s, Duration::from_secs(2));
        let r = sum.rtt_ns.unwrap();
        assert_eq!(r.min, 10_000);
        assert!((r.mean - 25_000.0).abs() < 50.0);
        // 3 significant digits: max is the top of 40 000's bucket (width 32).
        assert!((40_000..40_040).contains(&r.max), "{}", r.max);
        assert_eq!(sum.packets.sent, 4);
        assert!((sum.rate_pps - 2.0).abs() < 1e-9);
    }

    #[test]
    fn no_replies_give_no_rtt_figures_and_no_buckets() {
        let sum = Summary::from_stats(&Stats::new(), Duration::ZERO);
        assert_eq!(sum.rtt_ns, None);
        assert_eq!(sum.rate_pps, 0.0);
        assert!(sum.distribution.buckets.is_empty());
    }

    #[test]
    fn distribution_counts_every_sample_once_and_isolates_outliers() {
        let mut rtts: Vec<u64> = (0..10_000).map(|i| 10_000 + (i % 50) * 1_000).collect();
        rtts.extend([5_000_000; 5]);
        let s = stats_of(&rtts);
        let d = Distribution::from_stats(&s);
        let total: u64 = d.buckets.iter().map(|b| b.count).sum();
        assert_eq!(total, rtts.len() as u64);
        let last = d.buckets.last().unwrap();
        assert_eq!(last.high_ns, None);
        assert_eq!(last.count, 5);
        assert!(d.buckets.len() <= MAX_BUCKETS as usize + 1);
        for w in d.buckets.windows(2) {
            assert_eq!(w[0].high_ns, Some(w[1].low_ns));
        }
    }
}
