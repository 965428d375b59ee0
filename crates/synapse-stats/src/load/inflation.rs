//! Inflation: a loaded phase's round-trip percentiles less the idle
//! baseline's, each with a 95 % interval.
//!
//! The interval reuses the comparison's machinery ([`crate::significance`]):
//! each side is cut into slices of consecutive probes and resampled by the
//! moving-block bootstrap (a full queue slows many probes in a row, so
//! probes are not independent: the blocks keep a spell together), the two
//! sides independently; the 2.5th and 97.5th percentiles of the replicate
//! differences bound the change. No offset enters: a round trip is read on
//! one clock.

use crate::intervals::empty_histogram;
use crate::significance::{BEYOND, MIN_SLICES, Run, beyond};
use crate::slices::Slice;
use serde::Serialize;

/// The percentiles an inflation is given for.
pub const QUANTILES: [(&str, f64); 3] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)];

/// One percentile's figure and its 95 % interval, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    /// The figure.
    pub ns: f64,
    /// The interval (`None`: too few probes to resample, or the
    /// percentile is not resolved: fewer than 10 probes beyond it).
    pub ci_low: Option<f64>,
    /// Its upper end.
    pub ci_high: Option<f64>,
    /// At least 10 probes lie beyond the percentile on each side.
    pub resolved: bool,
}

impl Figure {
    /// Nothing yet.
    const NONE: Self = Self {
        ns: 0.0,
        ci_low: None,
        ci_high: None,
        resolved: false,
    };
}

/// Figures at p50, p90 and p99, in [`QUANTILES`] order.
pub type Figures = [Figure; 3];

/// The answered probes' round trips, cut into slices of consecutive
/// probes (`None`: no timely reply): at least [`MIN_SLICES`] of them when
/// there are enough probes, each a few.
pub fn slices(rtts: &[Option<u64>]) -> Vec<Slice> {
    let buckets = empty_histogram();
    let size = (rtts.len() / (4 * MIN_SLICES)).max(4);
    rtts.chunks(size)
        .map(|chunk| {
            let mut v: Vec<u64> = chunk
                .iter()
                .flatten()
                .map(|&r| buckets.highest_equivalent(r.max(1)))
                .collect();
            v.sort_unstable();
            let mut rtt: Vec<(u64, u64)> = Vec::new();
            for x in v {
                match rtt.last_mut() {
                    Some((last, n)) if *last == x => *n += 1,
                    _ => rtt.push((x, 1)),
                }
            }
            Slice {
                start_ns: 0,
                end_ns: 0,
                rtt,
                unanswered: chunk.iter().filter(|r| r.is_none()).count() as u64,
            }
        })
        .collect()
}

/// Percentile `q` of a run with its bootstrap replicates, sorted.
fn side(run: &Run, q: f64, k: usize, seed: u64) -> Option<(f64, Vec<f64>)> {
    let point = run.figures[k]?;
    let mut reps = run.quantile_replicates(q, seed);
    reps.sort_by(f64::total_cmp);
    Some((point, reps))
}

/// A percentile interval that holds its own figure: the bootstrap's
/// percentiles of a median on bucketed values can fall both to one side
/// of it, and an interval that leaves out the figure it bounds helps no
/// reader (widening it only errs on the careful side).
fn holding(ci: Option<(f64, f64)>, point: f64) -> Option<(f64, f64)> {
    ci.map(|(lo, hi)| (lo.min(point), hi.max(point)))
}

fn at(sorted: &[f64], p: f64) -> f64 {
    sorted[((p * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)]
}

/// Each percentile of `rtts`, with its 95 % interval within the run.
pub fn percentiles(rtts: &[Option<u64>]) -> Option<Figures> {
    let run = Run::from_slices("phase", &slices(rtts));
    let n = run.replies();
    let mut out = [Figure::NONE; 3];
    for (k, &(_, q)) in QUANTILES.iter().enumerate() {
        let (point, reps) = side(&run, q, k, 0x1A ^ k as u64)?;
        let resolved = beyond(n, q) >= BEYOND;
        let ci = (resolved && !reps.is_empty()).then(|| (at(&reps, 0.025), at(&reps, 0.975)));
        let ci = holding(ci, point);
        out[k] = Figure {
            ns: point,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            resolved,
        };
    }
    Some(out)
}

/// The loaded percentiles less the idle ones, with 95 % intervals of the
/// differences; `None` when either side has no answered probe.
pub fn inflation(idle: &[Option<u64>], loaded: &[Option<u64>]) -> Option<Figures> {
    let (a, b) = (
        Run::from_slices("idle", &slices(idle)),
        Run::from_slices("loaded", &slices(loaded)),
    );
    let mut out = [Figure::NONE; 3];
    for (k, &(_, q)) in QUANTILES.iter().enumerate() {
        let (pa, ra) = side(&a, q, k, 0x1D1E ^ k as u64)?;
        let (pb, rb) = side(&b, q, k, 0x10AD ^ k as u64)?;
        let resolved = beyond(a.replies(), q) >= BEYOND && beyond(b.replies(), q) >= BEYOND;
        let n = ra.len().min(rb.len());
        let mut diffs: Vec<f64> = rb.iter().zip(&ra).map(|(l, i)| l - i).collect();
        diffs.sort_by(f64::total_cmp);
        let ci = (resolved && n > 0).then(|| (at(&diffs, 0.025), at(&diffs, 0.975)));
        let ci = holding(ci, pb - pa);
        out[k] = Figure {
            ns: pb - pa,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            resolved,
        };
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix;

    /// `n` round trips around `base_ns`, ±10 %.
    fn around(base_ns: u64, n: usize, seed: u64) -> Vec<Option<u64>> {
        let mut rng = SplitMix::new(seed);
        (0..n)
            .map(|_| Some(base_ns + (rng.unit() * 0.2 * base_ns as f64) as u64 - base_ns / 10))
            .collect()
    }

    #[test]
    fn a_known_shift_is_found_inside_its_interval() {
        let idle = around(1_000_000, 600, 1);
        let loaded = around(101_000_000, 600, 2);
        let f = inflation(&idle, &loaded).unwrap();
        let p50 = f[0];
        assert!((p50.ns - 100_000_000.0).abs() < 3_000_000.0, "{p50:?}");
        let (lo, hi) = (p50.ci_low.unwrap(), p50.ci_high.unwrap());
        assert!(lo < p50.ns && p50.ns < hi, "{p50:?}");
        assert!(lo > 90e6 && hi < 110e6, "tight around +100 ms: {p50:?}");
        assert!(
            f[1].resolved && !f[2].resolved,
            "p99 of 600 has 6 beyond it"
        );
        assert_eq!(f[2].ci_low, None, "no interval for what is not resolved");
    }

    #[test]
    fn no_load_no_inflation_within_the_interval() {
        let idle = around(5_000_000, 800, 3);
        let same = around(5_000_000, 800, 4);
        let p50 = inflation(&idle, &same).unwrap()[0];
        assert!(
            p50.ci_low.unwrap() <= 0.0 && p50.ci_high.unwrap() >= 0.0,
            "{p50:?}"
        );
    }

    #[test]
    fn losses_are_left_out_and_nothing_answered_is_no_figure() {
        let mut idle = around(1_000_000, 100, 5);
        idle.extend([None; 50]);
        let s = slices(&idle);
        assert_eq!(s.iter().map(|x| x.unanswered).sum::<u64>(), 50);
        assert_eq!(s.iter().map(Slice::requests).sum::<u64>(), 150);
        assert!(inflation(&idle, &[None; 40]).is_none());
        let p = percentiles(&idle).unwrap();
        assert!(p[0].ns > 0.8e6 && p[0].ns < 1.2e6, "{p:?}");
    }
}
