//! Load runs compared (`synapse compare` of their JSON reports): each
//! phase's p50 inflation, B against A, with a 95 % interval and one of the
//! comparison's three verdicts ([`crate::significance::judge`]).
//!
//! A run's inflation comes with its own 95 % interval (the block
//! bootstrap within the run); it is read back as a normal error, σ =
//! half its width / 1.96. A side of one run has that error alone; a side
//! of several has the larger of the spread between its runs and their own
//! errors (divided by the runs). The change's interval is the two sides'
//! errors combined: `B − A ± 1.96 √(σ²_A + σ²_B)`. One run a side cannot
//! see how much runs differ from each other; the text says so.

use crate::significance::judge::judge;
use crate::significance::{Margin, Verdict};
use serde::Serialize;

/// z for a two-sided 95 % interval.
const Z95: f64 = 1.959_963_985;

/// One run's inflation of a phase, and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseRun {
    /// Its p50 inflation, ns.
    pub p50_ns: f64,
    /// Its 95 % interval, when the run had one.
    pub ci: Option<(f64, f64)>,
}

/// A phase's inflation, B against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseChange {
    /// The phase's name (`download`, …).
    pub phase: String,
    /// Each side's mean p50 inflation, ns.
    pub a_ns: f64,
    /// B's.
    pub b_ns: f64,
    /// B − A, ns, and its 95 % interval.
    pub change_ns: f64,
    /// Its lower end.
    pub low_ns: f64,
    /// Its upper end.
    pub high_ns: f64,
    /// Regression, no regression or inconclusive.
    pub verdict: Verdict,
    /// Runs each side.
    pub runs_a: usize,
    /// B's runs.
    pub runs_b: usize,
}

/// A side's mean and the variance of that mean; `None` when a run gave
/// no interval (its error is unknown).
fn side(runs: &[PhaseRun]) -> Option<(f64, f64)> {
    let n = runs.len() as f64;
    if runs.is_empty() {
        return None;
    }
    let mean = runs.iter().map(|r| r.p50_ns).sum::<f64>() / n;
    let within = runs
        .iter()
        .map(|r| r.ci.map(|(lo, hi)| ((hi - lo) / (2.0 * Z95)).powi(2)))
        .sum::<Option<f64>>()?
        / n;
    let between = if runs.len() >= 2 {
        runs.iter().map(|r| (r.p50_ns - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some((mean, within.max(between) / n))
}

/// Phase `phase`'s inflation, B against A; `min_effect` (a fraction of
/// A's inflation) is the margin a change must stay within for "no
/// regression". `None` when a side has no run, or a run no interval.
pub fn change(
    phase: &str,
    a: &[PhaseRun],
    b: &[PhaseRun],
    min_effect: Option<f64>,
) -> Option<PhaseChange> {
    let (ma, va) = side(a)?;
    let (mb, vb) = side(b)?;
    let d = mb - ma;
    let half = Z95 * (va + vb).sqrt();
    let margin = min_effect.map(|m| Margin::points(m * ma.abs()));
    Some(PhaseChange {
        phase: phase.into(),
        a_ns: ma,
        b_ns: mb,
        change_ns: d,
        low_ns: d - half,
        high_ns: d + half,
        verdict: judge(d - half, d + half, margin),
        runs_a: a.len(),
        runs_b: b.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ms: f64, half_ms: f64) -> PhaseRun {
        PhaseRun {
            p50_ns: ms * 1e6,
            ci: Some(((ms - half_ms) * 1e6, (ms + half_ms) * 1e6)),
        }
    }

    #[test]
    fn a_queue_that_grew_is_a_regression_and_one_that_held_is_not() {
        let grew = change("download", &[run(13.0, 0.5)], &[run(500.0, 20.0)], None).unwrap();
        assert_eq!(grew.verdict, Verdict::Regression);
        assert!((grew.change_ns - 487e6).abs() < 1.0);
        // ±20 and ±0.5 ms combined: ±20.006 ms.
        assert!(
            (grew.high_ns - grew.change_ns - 20.006e6).abs() < 0.01e6,
            "{grew:?}"
        );
        let held = change(
            "download",
            &[run(100.0, 2.0)],
            &[run(101.0, 2.0)],
            Some(0.1),
        )
        .unwrap();
        assert_eq!(
            held.verdict,
            Verdict::NoRegression,
            "within ±10 ms: {held:?}"
        );
        let open = change("download", &[run(100.0, 2.0)], &[run(101.0, 2.0)], None).unwrap();
        assert_eq!(
            open.verdict,
            Verdict::Inconclusive,
            "no margin, no equivalence"
        );
    }

    #[test]
    fn several_runs_a_side_bring_their_own_spread() {
        let a = [run(100.0, 1.0), run(140.0, 1.0), run(120.0, 1.0)];
        let b = [run(130.0, 1.0)];
        let c = change("upload", &a, &b, None).unwrap();
        // The runs of A differ by far more than their own intervals say.
        assert!(c.high_ns - c.low_ns > 30e6, "{c:?}");
        assert_eq!(c.verdict, Verdict::Inconclusive);
        let no_ci = PhaseRun {
            p50_ns: 1.0,
            ci: None,
        };
        assert!(change("x", &[no_ci], &b, None).is_none());
    }
}
