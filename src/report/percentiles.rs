//! The run's percentiles with what they rest on: how many replies, how
//! many beyond each (fewer than 10 and it is not resolved: p99.99 of 2,000
//! is the maximum), and an interval within the run (the moving-block
//! bootstrap over its slices of consecutive requests; the noise between
//! runs is not in it).

use serde::Serialize;
use synapse_stats::Summary;
use synapse_stats::significance::{BEYOND, Run, beyond};
use synapse_stats::slices::Slice;

/// Percentiles reported, with their names.
pub const REPORTED: [(&str, f64); 5] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
];

/// One percentile of the run's replies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Percentile {
    /// `p99`.
    pub name: &'static str,
    /// 0.99.
    pub quantile: f64,
    /// Its value, ns.
    pub ns: u64,
    /// Replies it rests on.
    pub samples: u64,
    /// Replies beyond it.
    pub beyond: u64,
    /// At least 10 beyond it: more than the largest few.
    pub resolved: bool,
    /// 95 % interval within the run (`null`: too few slices to resample).
    pub ci_low_ns: Option<f64>,
    /// Its upper end.
    pub ci_high_ns: Option<f64>,
}

/// The reported percentiles of a run (none without replies).
pub fn of(summary: &Summary, slices: &[Slice]) -> Vec<Percentile> {
    let Some(r) = summary.rtt_ns.as_ref() else {
        return Vec::new();
    };
    let n = summary.packets.received;
    let run = Run::from_slices("run", slices);
    let values = [r.p50, r.p90, r.p99, r.p999, r.p9999];
    REPORTED
        .iter()
        .zip(values)
        .enumerate()
        .map(|(i, (&(name, q), ns))| {
            let past = beyond(n, q);
            let mut reps = run.quantile_replicates(q, 0xC1 ^ i as u64);
            reps.sort_by(f64::total_cmp);
            let at = |p: f64| {
                (!reps.is_empty()).then(|| {
                    reps[((p * (reps.len() - 1) as f64).round() as usize).min(reps.len() - 1)]
                })
            };
            let resolved = past >= BEYOND;
            Percentile {
                name,
                quantile: q,
                ns,
                samples: n,
                beyond: past,
                resolved,
                // An unresolved percentile's resamples only shuffle the
                // largest few: no interval.
                ci_low_ns: at(0.025).filter(|_| resolved),
                ci_high_ns: at(0.975).filter(|_| resolved),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use synapse_stats::slices::SliceRecorder;
    use synapse_stats::{Record, Stats};

    #[test]
    fn each_percentile_says_what_it_rests_on() {
        let (mut stats, mut slices) = (Stats::new(), SliceRecorder::new());
        for i in 0..2_000u64 {
            let r = Record::sample(i, i * 20_000, 15_000 + (i * 7919) % 5_000, false);
            stats.record(&r);
            slices.record(&r);
        }
        let s = Summary::from_stats(&stats, Duration::from_secs(1));
        let p = of(&s, &slices.finish());
        let names: Vec<_> = p.iter().map(|p| p.name).collect();
        assert_eq!(names, ["p50", "p90", "p99", "p99.9", "p99.99"]);
        assert_eq!(
            (p[0].samples, p[0].beyond, p[0].resolved),
            (2_000, 1_000, true)
        );
        let (lo, hi) = (p[0].ci_low_ns.unwrap(), p[0].ci_high_ns.unwrap());
        assert!(
            lo <= p[0].ns as f64 && p[0].ns as f64 <= hi,
            "{lo} {} {hi}",
            p[0].ns
        );
        assert_eq!((p[3].beyond, p[3].resolved), (2, false));
        assert_eq!(p[3].ci_low_ns, None);
        assert_eq!(
            (p[4].beyond, p[4].resolved),
            (0, false),
            "p99.99 of 2,000 is the maximum"
        );
        assert!(of(&Summary::from_stats(&Stats::new(), Duration::ZERO), &[]).is_empty());
    }
}
