use super::*;
use crate::intervals::{IntervalRecorder, empty_histogram};
use crate::{Record, RecordKind};
use std::time::Duration;
use synapse_units::format_ns;

/// A reproducible stream of numbers in [0, 1).
struct Uniform(SplitMix);

impl Uniform {
    fn new(seed: u64) -> Self {
        Self(SplitMix::new(seed))
    }
    fn next(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Exponential with mean `m`.
    fn exp(&mut self, m: f64) -> f64 {
        -m * (1.0 - self.next()).ln()
    }
}

/// A run of `intervals` 100 ms intervals of 200 RTTs each: a floor of
/// `floor_ns`, exponential queueing, and a slow drift that makes
/// neighbouring intervals alike (autocorrelation); every 50th request lost
/// when `lossy`.
fn synthetic(seed: u64, floor_ns: f64, intervals: u64, lossy: bool) -> Vec<Interval> {
    let mut u = Uniform::new(seed);
    let mut rec = IntervalRecorder::new(Duration::from_millis(100));
    let mut drift = 0.0;
    for i in 0..intervals {
        drift = 0.8 * drift + u.exp(2_000.0) - 2_000.0;
        for j in 0..200u64 {
            let at = i * 100_000_000 + j * 500_000;
            let seq = i * 200 + j;
            if lossy && seq % 50 == 0 {
                rec.add_record(
                    at,
                    &Record::event(RecordKind::Lost, seq, 0, false),
                    1_000_000,
                    "",
                );
                continue;
            }
            let rtt = (floor_ns + drift.max(-floor_ns / 2.0) + u.exp(5_000.0)) as u64;
            rec.add_record(at, &Record::sample(seq, 0, rtt, false), 0, "");
        }
    }
    rec.finish(intervals * 100_000_000)
}

fn run(label: &str, seed: u64, floor_ns: f64) -> Run {
    Run::from_intervals(label, &synthetic(seed, floor_ns, 40, false), "")
}

fn fig(c: &Comparison, f: Figure) -> &FigureComparison {
    c.figures.iter().find(|x| x.figure == f).unwrap()
}

#[test]
fn t_quantiles_match_the_tables() {
    for (p, df, want) in [
        (0.975, 1.0, 12.706),
        (0.975, 4.0, 2.776),
        (0.975, 30.0, 2.042),
        (0.995, 10.0, 3.169),
        (0.95, 1000.0, 1.646),
    ] {
        let got = t_quantile(p, df);
        assert!(
            (got - want).abs() < 0.002,
            "t({p}, {df}) = {got}, not {want}"
        );
    }
}

#[test]
fn a_run_has_the_figures_its_merged_histogram_has() {
    let iv = synthetic(7, 50_000.0, 12, true);
    let mut whole = empty_histogram();
    for i in &iv {
        whole.add(i.get(RTT).unwrap()).unwrap();
    }
    let r = Run::from_intervals("a", &iv, "");
    assert_eq!(r.intervals(), 12);
    assert_eq!(r.figures[0], Some(whole.value_at_quantile(0.5) as f64));
    assert_eq!(r.figures[3], Some(whole.value_at_quantile(0.999) as f64));
    assert_eq!(r.figures[4], Some(whole.mean()));
    assert_eq!((r.sent, r.unanswered), (2_400, 48));
    assert_eq!(r.figures[5], Some(2.0));
    // Resampling every interval once gives back the same figures.
    let all: Vec<usize> = (0..12).collect();
    let again = r.figures_of_slices(&all, &mut vec![0; r.values.len()]);
    for k in [0, 1, 2, 3, 5] {
        assert_eq!(again[k], r.figures[k], "figure {k}");
    }
    let mean = again[4].unwrap();
    assert!((mean - whole.mean()).abs() / whole.mean() < 1e-3, "{mean}");
}

#[test]
fn a_run_against_itself_shows_no_difference() {
    let a = run("a", 1, 60_000.0);
    let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&a), None);
    for f in &c.figures {
        assert_eq!(f.difference, Some(0.0), "{}", f.sentence);
        assert!(!f.significant, "{}", f.sentence);
        assert!(f.ci_low.unwrap() <= 0.0 && f.ci_high.unwrap() >= 0.0);
    }
    assert!(!c.regression);
    assert!(
        fig(&c, Figure::P50)
            .sentence
            .starts_with("p50: no significant difference (0 ns, 95 % CI "),
        "{}",
        fig(&c, Figure::P50).sentence
    );
}

#[test]
fn one_run_a_side_finds_a_shift_within_the_runs_but_calls_no_regression_without_min_effect() {
    let a = run("a", 1, 60_000.0);
    let b = run("b", 2, 160_000.0);
    let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), None);
    let p50 = fig(&c, Figure::P50);
    assert_eq!(p50.method, Method::WithinRun);
    // Beyond the runs' own noise, but one run a side cannot call it.
    assert!(p50.excludes_zero && !p50.significant, "{}", p50.sentence);
    let (lo, hi) = (p50.ci_low.unwrap(), p50.ci_high.unwrap());
    assert!(
        lo < 100_000.0 + 3_000.0 && hi > 100_000.0 - 3_000.0,
        "{lo}..{hi}"
    );
    assert!(
        p50.sentence.contains("slower, 95 % CI")
            && p50.sentence.contains("one run a side cannot separate"),
        "{}",
        p50.sentence
    );
    assert!(!c.regression, "one run a side needs --min-effect");
    let with_effect = compare(
        std::slice::from_ref(&a),
        std::slice::from_ref(&b),
        Some(50.0),
    );
    let p50 = fig(&with_effect, Figure::P50);
    assert!(
        with_effect.regression && p50.significant,
        "{}",
        p50.sentence
    );
    assert!(
        p50.sentence.contains("beyond --min-effect"),
        "{}",
        p50.sentence
    );
    assert!(
        !compare(
            std::slice::from_ref(&a),
            std::slice::from_ref(&b),
            Some(500.0)
        )
        .regression
    );
    assert!(
        !compare(&[b], &[a], Some(1.0)).regression,
        "faster is no regression"
    );
}

#[test]
fn too_few_intervals_give_no_interval_and_only_min_effect_judges() {
    let a = Run::from_intervals("a", &synthetic(1, 60_000.0, 4, false), "");
    let b = Run::from_intervals("b", &synthetic(2, 90_000.0, 4, false), "");
    let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), None);
    let p50 = fig(&c, Figure::P50);
    assert_eq!(p50.method, Method::None);
    assert_eq!(p50.ci_low, None);
    assert!(p50.sentence.contains("(no interval"), "{}", p50.sentence);
    assert!(!c.regression);
    assert!(compare(&[a], &[b], Some(10.0)).regression);
}

/// Runs whose p50 differs from run to run by `spread_ns` (the run-to-run
/// part), as JSON reports would give them.
fn runs_from_figures(u: &mut Uniform, n: usize, center: f64, spread_ns: f64) -> Vec<Run> {
    (0..n)
        .map(|i| {
            // A sum of uniforms: near normal, mean 0, sd `spread_ns`.
            let z: f64 = (0..12).map(|_| u.next()).sum::<f64>() - 6.0;
            let p50 = center + spread_ns * z;
            let f = [
                Some(p50),
                Some(p50 * 1.2),
                Some(p50 * 2.0),
                Some(p50 * 4.0),
                Some(p50 * 1.1),
                Some(0.0),
            ];
            Run::from_figures(&format!("r{i}"), f, 10_000, 0)
        })
        .collect()
}

#[test]
fn several_runs_a_side_hold_run_to_run_variation_and_rarely_cry_wolf() {
    let mut u = Uniform::new(99);
    let trials = 400;
    let mut alarms = 0;
    for _ in 0..trials {
        let a = runs_from_figures(&mut u, 3, 60_000.0, 6_000.0);
        let b = runs_from_figures(&mut u, 3, 60_000.0, 6_000.0);
        let c = compare(&a, &b, None);
        assert_eq!(fig(&c, Figure::P50).method, Method::RunToRun);
        alarms += usize::from(c.figures.iter().any(|f| f.significant));
    }
    let rate = alarms as f64 / trials as f64;
    assert!(
        rate <= 0.05,
        "A/A false alarms in {:.1} % of pairs",
        rate * 100.0
    );
    // A shift of eight run-to-run deviations is found, and its interval
    // holds it. (Three runs a side and six simultaneous intervals leave
    // t = 5.6 at four degrees of freedom: smaller shifts need more runs.)
    let mut found = 0;
    let mut held = 0;
    for _ in 0..100 {
        let a = runs_from_figures(&mut u, 3, 60_000.0, 6_000.0);
        let b = runs_from_figures(&mut u, 3, 108_000.0, 6_000.0);
        let p50 = fig(&compare(&a, &b, None), Figure::P50).clone();
        found += usize::from(p50.significant && p50.regression);
        held += usize::from(p50.ci_low.unwrap() < 48_000.0 && p50.ci_high.unwrap() > 48_000.0);
    }
    assert!(found >= 80, "the shift was found in {found} of 100");
    assert!(held >= 95, "its interval held it in {held} of 100");
}

#[test]
fn a_baseline_of_several_runs_judges_a_single_new_run() {
    let mut u = Uniform::new(5);
    let base = runs_from_figures(&mut u, 5, 60_000.0, 3_000.0);
    let same = runs_from_figures(&mut u, 1, 60_000.0, 0.0);
    let slow = runs_from_figures(&mut u, 1, 120_000.0, 0.0);
    let c = compare(&base, &same, None);
    assert_eq!(fig(&c, Figure::P50).method, Method::RunToRun);
    assert!(!c.regression, "{:?}", fig(&c, Figure::P50));
    let c = compare(&base, &slow, None);
    assert!(c.regression && fig(&c, Figure::P50).significant);
    let p50 = fig(&c, Figure::P50);
    let want = format!(
        "p50 is {} slower, 95 % CI ",
        format_ns(p50.difference.unwrap())
    );
    assert!(p50.sentence.starts_with(&want), "{}", p50.sentence);
    assert!((p50.difference.unwrap() - 60_000.0).abs() < 6_000.0);
    assert!(
        !compare(&base, &slow, Some(150.0)).regression,
        "smaller than --min-effect"
    );
}

#[test]
fn loss_without_any_on_either_side_is_no_difference() {
    let a = run("a", 1, 60_000.0);
    let b = run("b", 2, 60_000.0);
    let loss = fig(&compare(&[a], &[b], None), Figure::Loss).clone();
    assert_eq!(loss.difference, Some(0.0));
    assert!(!loss.significant);
    assert_eq!(loss.unit, "percent");
    let lossy = Run::from_intervals("l", &synthetic(3, 60_000.0, 40, true), "");
    let clean = run("c", 4, 60_000.0);
    let loss = fig(&compare(&[clean], &[lossy], None), Figure::Loss).clone();
    assert!(loss.excludes_zero, "{}", loss.sentence);
    assert!(
        loss.sentence
            .starts_with("loss is 2.00 points higher, 95 % CI "),
        "{}",
        loss.sentence
    );
}
