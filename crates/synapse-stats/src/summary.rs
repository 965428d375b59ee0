//! The numbers a finished (or running) measurement reduces to.

use super::{
    Counters, JitterFigures, LossDirection, OneWayFigures, RttFigures, ScheduleFigures, Stats,
};
use serde::Serialize;
use std::time::Duration;

/// One bar of the distribution: `[low, high)` nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistributionBucket {
    /// Inclusive lower bound (ns).
    pub low_ns: u64,
    /// Exclusive upper bound (ns); `None` for "and above".
    pub high_ns: Option<u64>,
    /// Samples in the bucket.
    pub count: u64,
    /// The percentiles that fall in it (`p50`, `p99`, `max`).
    pub marks: Vec<&'static str>,
}

/// Where the samples are: buckets whose edges sit on round values at the
/// measured percentiles (min, p10, p50, p90, p99, p99.9, max), so each holds
/// a known share, with log-spaced edges added where a bucket would span
/// more than a factor of 2.5: a tail that runs from 20 µs to 1 ms is cut
/// into 20, 50, 100, 200, 500 µs instead of hiding in one bar.
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
    /// Measured time, excluding warm-up: from the first measured request
    /// leaving to the last one's reply or timeout (seconds); `null` with
    /// fewer than two requests (one request has a round trip, not a run's
    /// length).
    pub duration_s: Option<f64>,
    /// Requests per second over `duration_s`; `null` where that is.
    pub rate_pps: Option<f64>,
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

/// Buckets at most.
const MAX_BUCKETS: usize = 12;
/// A bucket wider than this factor is cut.
const WIDEST: f64 = 2.5;

impl Summary {
    /// Reduces statistics measured over `duration`.
    pub fn from_stats(stats: &Stats, duration: Duration) -> Self {
        let rtt_ns = RttFigures::of(stats.histogram());
        let packets = *stats.counters();
        // No length or rate from fewer than two requests.
        let duration_s =
            (packets.sent >= 2 && !duration.is_zero()).then_some(duration.as_secs_f64());
        let rate_pps = duration_s.map(|d| packets.sent as f64 / d);
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

/// Round values, ten a decade: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k.
const STEPS: [u64; 10] = [10, 12, 15, 20, 25, 30, 40, 50, 60, 80];

/// The decade of `x`: the largest power of ten at most `x` (at least 1).
fn decade(x: u64) -> u64 {
    let mut p = 1u64;
    while p.saturating_mul(10) <= x {
        p *= 10;
    }
    p
}

/// The largest round value at most `x` (at least 1).
fn round_below(x: u64) -> u64 {
    let p = decade(x);
    STEPS
        .iter()
        .map(|&s| s * p / 10)
        .filter(|&v| v >= 1 && v <= x.max(1))
        .max()
        .unwrap_or(p)
}

/// The smallest round value above `x`.
fn round_above(x: u64) -> u64 {
    let p = decade(x);
    STEPS
        .iter()
        .map(|&s| s * p / 10)
        .chain([10 * p])
        .filter(|&v| v > x)
        .min()
        .unwrap_or(10 * p)
}

/// A round value near the geometric middle of `lo` and `hi`.
fn round_between(lo: u64, hi: u64) -> Option<u64> {
    let mid = ((lo as f64) * (hi as f64)).sqrt() as u64;
    let v = round_below(mid);
    (v > lo && v < hi).then_some(v)
}

impl Distribution {
    fn from_stats(stats: &Stats) -> Self {
        let h = stats.histogram();
        if h.is_empty() {
            return Self::default();
        }
        let marks: [(&'static str, u64); 7] = [
            ("min", h.highest_equivalent(h.min())),
            ("p10", h.value_at_quantile(0.1)),
            ("p50", h.value_at_quantile(0.5)),
            ("p90", h.value_at_quantile(0.9)),
            ("p99", h.value_at_quantile(0.99)),
            ("p99.9", h.value_at_quantile(0.999)),
            ("max", h.max()),
        ];
        // Each percentile's bucket starts at the round value below it and
        // ends at the one above: the bulk is drawn at its own scale.
        let mut edges: Vec<u64> = marks[..6].iter().map(|&(_, v)| round_below(v)).collect();
        edges.extend(marks[2..].iter().map(|&(_, v)| round_above(v)));
        edges.sort_unstable();
        edges.dedup();
        // Cut the widest buckets until none spans more than WIDEST.
        while edges.len() <= MAX_BUCKETS {
            let widest = edges
                .windows(2)
                .enumerate()
                .map(|(i, w)| (i, w[1] as f64 / w[0] as f64))
                .filter(|&(_, r)| r > WIDEST)
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((i, _)) = widest else { break };
            let Some(v) = round_between(edges[i], edges[i + 1]) else {
                break;
            };
            edges.insert(i + 1, v);
        }
        let mut buckets: Vec<DistributionBucket> = edges
            .windows(2)
            .map(|w| DistributionBucket {
                low_ns: w[0],
                high_ns: Some(w[1]),
                count: 0,
                marks: Vec::new(),
            })
            .collect();
        let last = buckets.len() - 1;
        let at = |v: u64| {
            edges
                .partition_point(|&e| e <= v)
                .saturating_sub(1)
                .min(last)
        };
        for v in h.iter_recorded() {
            let value = h.highest_equivalent(v.value_iterated_to()).min(h.max());
            let i = at(value);
            buckets[i].count += v.count_at_value();
        }
        for (name, v) in marks {
            let i = at(v.min(h.max()));
            buckets[i].marks.push(name);
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
    fn round_values_are_ten_a_decade() {
        assert_eq!(round_below(1), 1);
        assert_eq!(round_below(14_700), 12_000);
        assert_eq!(round_below(15_000), 15_000);
        assert_eq!(round_below(999), 800);
        assert_eq!(round_below(1_060_000), 1_000_000);
        assert_eq!(round_above(14_700), 15_000);
        assert_eq!(round_above(15_000), 20_000);
        assert_eq!(round_above(7), 8);
        assert_eq!(round_between(20_000, 1_000_000), Some(120_000));
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
        assert!(sum.rate_pps.is_some_and(|r| (r - 2.0).abs() < 1e-9));
        assert_eq!(sum.duration_s, Some(2.0));
    }

    #[test]
    fn one_request_has_no_length_and_no_rate() {
        let sum = Summary::from_stats(&stats_of(&[50_000]), Duration::from_micros(50));
        assert_eq!((sum.duration_s, sum.rate_pps), (None, None));
        assert!(sum.rtt_ns.is_some(), "its round trip it has");
    }

    #[test]
    fn no_replies_give_no_rtt_figures_and_no_buckets() {
        let sum = Summary::from_stats(&Stats::new(), Duration::ZERO);
        assert_eq!(sum.rtt_ns, None);
        assert_eq!(sum.rate_pps, None);
        assert!(sum.distribution.buckets.is_empty());
    }

    #[test]
    fn distribution_counts_every_sample_once_and_shows_the_tail() {
        // 98.9 % between 14 and 16 µs, a tail to 1 ms: not one bar.
        let mut rtts: Vec<u64> = (0..9_890).map(|i| 14_000 + (i % 20) * 100).collect();
        rtts.extend((0..110).map(|i| 20_000 + i * 9_000));
        let s = stats_of(&rtts);
        let d = Distribution::from_stats(&s);
        let total: u64 = d.buckets.iter().map(|b| b.count).sum();
        assert_eq!(total, rtts.len() as u64);
        assert!(d.buckets.len() <= MAX_BUCKETS, "{:?}", d.buckets);
        for w in d.buckets.windows(2) {
            assert_eq!(w[0].high_ns, Some(w[1].low_ns));
            let ratio = w[0].high_ns.unwrap() as f64 / w[0].low_ns as f64;
            assert!(
                ratio <= WIDEST + 1e-9 || w[0].count == 0 || d.buckets.len() == MAX_BUCKETS,
                "{w:?}"
            );
        }
        let tail: u64 = d
            .buckets
            .iter()
            .filter(|b| b.low_ns >= 100_000)
            .map(|b| b.count)
            .sum();
        assert!(
            tail > 0 && d.buckets.iter().filter(|b| b.low_ns >= 20_000).count() >= 3,
            "{:?}",
            d.buckets
        );
        let with = |m| d.buckets.iter().position(|b| b.marks.contains(&m)).unwrap();
        assert!(with("p50") <= with("p99") && with("p99") <= with("max"));
        assert!(d.buckets.last().unwrap().marks.contains(&"max"));
    }
}
