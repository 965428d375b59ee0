use super::*;
use crate::slices::{Slice, SliceRecorder};
use crate::{Record, RecordKind};

/// A reproducible stream of numbers.
struct Uniform(SplitMix);

impl Uniform {
    fn new(seed: u64) -> Self {
        Self(SplitMix::new(seed))
    }
    fn next(&mut self) -> f64 {
        self.0.unit()
    }
    /// Exponential with mean `m`.
    fn exp(&mut self, m: f64) -> f64 {
        -m * self.next().ln()
    }
    /// Near-normal, mean 0, sd 1 (a sum of twelve uniforms).
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.next()).sum::<f64>() - 6.0
    }
}

/// A run of `n` requests: a floor, exponential queueing and a slow drift
/// that makes neighbours alike (autocorrelation), every RTT multiplied by
/// `factor`; every 50th request lost when `lossy`.
fn synthetic(seed: u64, floor_ns: f64, factor: f64, n: u64, lossy: bool) -> Vec<Slice> {
    let mut u = Uniform::new(seed);
    let mut rec = SliceRecorder::new();
    let mut drift = 0.0;
    for seq in 0..n {
        if seq % 20 == 0 {
            drift = 0.8 * drift + u.exp(0.1 * floor_ns) - 0.1 * floor_ns;
        }
        let at = seq * 20_000;
        if lossy && seq % 50 == 0 {
            rec.record(&Record::event(RecordKind::Lost, seq, at, false));
            continue;
        }
        let rtt = factor * (floor_ns + drift.max(-floor_ns / 2.0) + u.exp(0.2 * floor_ns));
        rec.record(&Record::sample(seq, at, rtt as u64, false));
    }
    rec.finish()
}

fn run(label: &str, seed: u64, floor_ns: f64, factor: f64) -> Run {
    Run::from_slices(label, &synthetic(seed, floor_ns, factor, 4_000, false))
}

fn fig(c: &Comparison, f: Figure) -> &FigureComparison {
    c.figures.iter().find(|x| x.figure == f).unwrap()
}

/// No run-to-run variation known or assumed: the within-run part alone.
fn within_only(min_effect: Option<f64>) -> Options {
    Options {
        min_effect_percent: min_effect,
        spread: Spread {
            source: SpreadSource::Assumed,
            log_sd: [0.0; 5],
            df: 1e9,
        },
    }
}

#[test]
fn a_run_has_the_figures_of_its_samples() {
    let slices = synthetic(7, 50_000.0, 1.0, 3_000, true);
    let r = Run::from_slices("a", &slices);
    assert!(r.slices() >= MIN_SLICES, "{}", r.slices());
    let mut h = crate::intervals::empty_histogram();
    for s in &slices {
        for &(v, n) in &s.rtt {
            h.record_n(v, n).unwrap();
        }
    }
    assert_eq!(r.figures[0], Some(h.value_at_quantile(0.5) as f64));
    assert_eq!(r.figures[3], Some(h.value_at_quantile(0.999) as f64));
    assert!((r.figures[4].unwrap() - h.mean()).abs() / h.mean() < 1e-3);
    assert_eq!((r.sent, r.unanswered), (3_000, 60));
    assert_eq!(r.figures[5], Some(2.0));
    assert!(r.resolves(Figure::P99), "29 beyond p99");
    assert!(!r.resolves(Figure::P999), "2 beyond p99.9 of 2,940");
}

#[test]
fn a_run_against_itself_holds_zero_and_is_inconclusive_without_a_margin() {
    let a = run("a", 1, 60_000.0, 1.0);
    let c = compare(
        std::slice::from_ref(&a),
        std::slice::from_ref(&a),
        &Options::with_min_effect(None),
    );
    for f in &c.figures {
        assert_eq!(f.difference, Some(0.0));
        assert!(
            f.ci_low.unwrap() <= 0.0 && f.ci_high.unwrap() >= 0.0,
            "{f:?}"
        );
        assert_eq!(f.verdict, Verdict::Inconclusive, "{f:?}");
    }
    assert_eq!(c.verdict, Verdict::Inconclusive);
    let p50 = fig(&c, Figure::P50);
    assert_eq!(
        (p50.between, p50.within),
        (Some(Between::Prior), Some(Within::BlockBootstrap))
    );
}

#[test]
fn one_run_a_side_calls_a_shift_far_beyond_any_run_to_run_spread() {
    // 1 ms on a 15 µs median: far beyond the assumed spread.
    let a = Run::from_slices("a", &synthetic(1, 15_000.0, 1.0, 3_000, false));
    let b = Run::from_slices("b", &synthetic(2, 1_015_000.0, 1.0, 3_000, false));
    let c = compare(
        std::slice::from_ref(&a),
        std::slice::from_ref(&b),
        &Options::with_min_effect(None),
    );
    let p50 = fig(&c, Figure::P50);
    assert_eq!(p50.verdict, Verdict::Regression, "{p50:?}");
    assert_eq!(c.verdict, Verdict::Regression);
    assert!(p50.ci_low.unwrap() > 100_000.0, "{p50:?}");
    // Faster is never a regression.
    assert_ne!(
        compare(&[b], &[a], &Options::with_min_effect(Some(5.0))).verdict,
        Verdict::Regression
    );
}

#[test]
fn one_run_a_side_is_inconclusive_within_the_assumed_spread() {
    // +1 %: far inside what runs of one configuration differ by.
    let a = run("a", 1, 60_000.0, 1.0);
    let b = run("b", 2, 60_000.0, 1.01);
    for m in [None, Some(5.0), Some(50.0)] {
        let c = compare(
            std::slice::from_ref(&a),
            std::slice::from_ref(&b),
            &Options::with_min_effect(m),
        );
        assert_eq!(c.verdict, Verdict::Inconclusive, "--min-effect {m:?}");
        let p50 = fig(&c, Figure::P50);
        // It says how large a change it could have shown: more than the
        // assumed spread allows.
        assert!(p50.detectable_percent.unwrap() > 50.0, "{p50:?}");
    }
}

#[test]
fn the_within_run_part_alone_finds_a_small_shift() {
    // What a comparison of two halves of one run (the live `m`) sees:
    // no run-to-run part, so +20 % is found.
    let a = run("a", 1, 60_000.0, 1.0);
    let b = run("b", 2, 60_000.0, 1.2);
    let c = compare(&[a], &[b], &within_only(None));
    let p50 = fig(&c, Figure::P50);
    assert_eq!(p50.verdict, Verdict::Regression, "{p50:?}");
    let (lo, hi) = (p50.ci_low_percent.unwrap(), p50.ci_high_percent.unwrap());
    assert!(lo < 20.0 && hi > 20.0, "{lo}..{hi}");
}

/// Runs as JSON reports without their slices give them: each run's
/// figures drawn with a run-to-run spread of `sd` on the log scale.
fn runs_from_figures(u: &mut Uniform, n: usize, center: f64, sd: f64) -> Vec<Run> {
    (0..n)
        .map(|i| {
            let x = center * (sd * u.normal()).exp();
            let f = [
                Some(x),
                Some(x * 1.2),
                Some(x * 2.0),
                Some(x * 4.0),
                Some(x * 1.1),
                Some(0.0),
            ];
            Run::from_figures(&format!("r{i}"), f, 100_000, 0)
        })
        .collect()
}

#[test]
fn several_runs_a_side_show_no_regression_within_a_margin() {
    // An equivalence case: five runs a side with a 2 % spread, the same
    // centre, on a host whose calibration measured a 3 % spread, with
    // --min-effect 10: every interval inside ±10 %.
    let mut u = Uniform::new(3);
    let a = runs_from_figures(&mut u, 5, 60_000.0, 0.02);
    let b = runs_from_figures(&mut u, 5, 60_000.0, 0.02);
    let host = |m| Options {
        min_effect_percent: m,
        spread: quiet_host(),
    };
    let c = compare(&a, &b, &host(Some(10.0)));
    for f in &c.figures {
        assert_eq!(f.verdict, Verdict::NoRegression, "{f:?}");
        assert_eq!(f.between, Some(Between::Runs));
    }
    assert_eq!(c.verdict, Verdict::NoRegression);
    // The same runs with a margin of 1 %: not shown.
    assert_eq!(
        compare(&a, &b, &host(Some(1.0))).verdict,
        Verdict::Inconclusive
    );
    // Without a margin, never.
    assert_eq!(compare(&a, &b, &host(None)).verdict, Verdict::Inconclusive);
    // With the assumed spread (20 %, a weak prior) five runs a side are
    // not yet enough to show ±10 %.
    let c = compare(&a, &b, &Options::with_min_effect(Some(10.0)));
    assert_eq!(c.verdict, Verdict::Inconclusive);
}

/// A host whose calibration measured runs 3 % apart, on 10 runs.
fn quiet_host() -> Spread {
    Spread {
        source: SpreadSource::Host {
            calibrated_at: "2026-11-27T00:00:00Z".into(),
            runs: 10,
        },
        log_sd: [0.03; 5],
        df: 9.0,
    }
}

#[test]
fn a_baseline_of_two_runs_and_one_new_run_can_still_find_a_large_change() {
    // Two stored runs and one new one: the data's single degree of freedom
    // is pooled with the prior's seven, not used alone (t ≈ 76 at one).
    let mut u = Uniform::new(5);
    let base = runs_from_figures(&mut u, 2, 60_000.0, 0.05);
    let slow = runs_from_figures(&mut u, 1, 180_000.0, 0.0);
    let c = compare(&base, &slow, &Options::with_min_effect(None));
    let p50 = fig(&c, Figure::P50);
    assert_eq!(p50.verdict, Verdict::Regression, "{p50:?}");
    assert_eq!(p50.df, Some(ASSUMED_DF + 1.0));
}

/// Simultaneous coverage: the share of trials in which every latency
/// figure's interval holds the true change, ln(factor).
fn coverage(
    trials: usize,
    mut pair: impl FnMut(usize) -> (Vec<Run>, Vec<Run>, f64),
    opts: &Options,
) -> f64 {
    let mut held = 0;
    for t in 0..trials {
        let (a, b, factor) = pair(t);
        let c = compare(&a, &b, opts);
        let truth = factor.ln();
        let all = c.figures[..5].iter().all(|f| {
            let lo = (f.ci_low_percent.unwrap() / 100.0).ln_1p();
            let hi = (f.ci_high_percent.unwrap() / 100.0).ln_1p();
            lo <= truth + 1e-12 && truth <= hi + 1e-12
        });
        held += usize::from(all);
    }
    held as f64 / trials as f64
}

#[test]
fn intervals_over_runs_cover_a_known_shift() {
    // Runs whose figures move from run to run by sd 0.1 (log), B slower by
    // 30 %; three runs a side, and a baseline of five against one run.
    let mut u = Uniform::new(11);
    let opts = Options::with_min_effect(None);
    for (na, nb) in [(3, 3), (5, 1), (2, 2)] {
        let cov = coverage(
            400,
            |_| {
                let a = runs_from_figures(&mut u, na, 60_000.0, 0.1);
                let b = runs_from_figures(&mut u, nb, 78_000.0, 0.1);
                (a, b, 1.3)
            },
            &opts,
        );
        assert!(cov >= 0.93, "{na} against {nb}: {:.1} %", cov * 100.0);
    }
}

#[test]
fn one_run_a_side_covers_a_known_shift_when_the_spread_is_as_assumed() {
    // Each run's level drawn with the assumed spread: the prior is true.
    let mut u = Uniform::new(13);
    let cov = coverage(
        400,
        |_| {
            let a = runs_from_figures(&mut u, 1, 60_000.0, ASSUMED_LOG_SD[0]);
            let b = runs_from_figures(&mut u, 1, 120_000.0, ASSUMED_LOG_SD[0]);
            (a, b, 2.0)
        },
        &Options::with_min_effect(None),
    );
    assert!(cov >= 0.93, "{:.1} %", cov * 100.0);
}

#[test]
fn the_block_bootstrap_covers_a_known_shift_of_autocorrelated_samples() {
    // No run-to-run part at all: the within-run interval alone must hold
    // the true factor (1.25) for every latency figure together.
    let cov = coverage(
        60,
        |t| {
            let t = t as u64;
            let a = run("a", 1_000 + t, 50_000.0, 1.0);
            let b = run("b", 2_000 + t, 50_000.0, 1.25);
            (vec![a], vec![b], 1.25)
        },
        &within_only(None),
    );
    assert!(cov >= 0.93, "{:.1} %", cov * 100.0);
}

#[test]
fn loss_is_compared_in_points() {
    let clean = run("c", 4, 60_000.0, 1.0);
    let lossy = Run::from_slices("l", &synthetic(3, 60_000.0, 1.0, 4_000, true));
    let c = compare(
        std::slice::from_ref(&clean),
        &[lossy],
        &Options::with_min_effect(None),
    );
    let loss = fig(&c, Figure::Loss);
    assert_eq!(loss.unit, "percent");
    assert!((loss.difference.unwrap() - 2.0).abs() < 1e-9, "{loss:?}");
    assert_eq!(loss.verdict, Verdict::Regression, "{loss:?}");
    assert_eq!(loss.difference_percent, None, "points, not percent of A");
    // Nothing lost either side: no difference, and not a regression.
    let c = compare(
        std::slice::from_ref(&clean),
        std::slice::from_ref(&clean),
        &Options::with_min_effect(Some(10.0)),
    );
    let loss = fig(&c, Figure::Loss);
    assert_eq!(loss.difference, Some(0.0));
    assert_ne!(loss.verdict, Verdict::Regression);
}

#[test]
fn an_unresolved_percentile_is_inconclusive_whatever_its_interval() {
    // 500 requests: p99.9 is the maximum.
    let a = Run::from_slices("a", &synthetic(1, 15_000.0, 1.0, 500, false));
    let b = Run::from_slices("b", &synthetic(2, 1_015_000.0, 1.0, 500, false));
    let c = compare(&[a], &[b], &Options::with_min_effect(None));
    let p999 = fig(&c, Figure::P999);
    assert!(!p999.resolved);
    assert_eq!(p999.verdict, Verdict::Inconclusive);
    assert_eq!(fig(&c, Figure::P50).verdict, Verdict::Regression);
}

use spread::ASSUMED_DF;
use spread::ASSUMED_LOG_SD;

/// Issue 51: what README.md and docs/compare.md say one run a side can
/// call a regression is what the statistics give.
#[test]
fn the_docs_say_what_one_run_a_side_can_call() {
    let spread = Spread::assumed();
    let floor = |f: Figure| super::one_run_a_side_floor(&spread, f).unwrap();
    let text = |x: f64| {
        if x < 10.0 {
            format!("×{x:.1}")
        } else {
            format!("×{x:.0}")
        }
    };
    let (p50, p99, p999) = (
        text(floor(Figure::P50)),
        text(floor(Figure::P99)),
        text(floor(Figure::P999)),
    );
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let flat = |t: String| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let compare = flat(std::fs::read_to_string(root.join("docs/compare.md")).unwrap());
    let want = format!(
        "p50 must change by more than {p50}, p99 by more than {p99} and p99.9 by more than {p999}"
    );
    assert!(
        compare.contains(&want),
        "docs/compare.md should say: {want}"
    );
    let readme = flat(std::fs::read_to_string(root.join("README.md")).unwrap());
    let want = format!("a p50 regression only beyond about {p50}");
    assert!(readme.contains(&want), "README.md should say: {want}");
    assert!(!readme.contains("calls a regression only beyond `--min-effect`"));
    // The ×2.7 of issue 51 is below it; and it is a floor: no pair of
    // runs, whatever their own noise, gets a narrower interval.
    assert!(floor(Figure::P50) > 2.7);
    let alpha = (1.0 - CONFIDENCE) / Figure::ALL.len() as f64;
    for w in [0.0, 0.001, 0.01, 0.02, 0.05, 0.2] {
        for df_w in [5.0, 50.0, 1e6] {
            let tau2 = spread.log_sd[0].powi(2);
            let var = 2.0 * tau2 + 2.0 * w;
            let spread_df =
                (2.0 * tau2).powi(2) / spread.df + if w > 0.0 { 2.0 * w * w / df_w } else { 0.0 };
            let half = special::t_quantile(1.0 - alpha / 2.0, var * var / spread_df) * var.sqrt();
            assert!(
                half.exp() >= floor(Figure::P50) * (1.0 - 1e-9),
                "w {w} df {df_w}: ×{}",
                half.exp()
            );
        }
    }
}
