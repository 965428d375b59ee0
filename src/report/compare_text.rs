//! A comparison of runs in words: the table `synapse compare` prints, the
//! lines of the report's baseline section and the sentence that says which
//! method was used. The method itself is `synapse_stats::significance`.

use std::io::{self, Write};
use synapse_stats::significance::{
    Between, Comparison, Figure, FigureComparison, SpreadSource, UNBOUNDED_RATIO, Verdict, Within,
    one_run_a_side_floor,
};
use synapse_units::format_ns;

/// A signed time: `+1.04 ms`, `−2.0 µs`.
fn signed_ns(v: f64) -> String {
    if v < 0.0 {
        format!("−{}", format_ns(-v))
    } else {
        format!("+{}", format_ns(v))
    }
}

/// A signed percentage: `+3.2 %`, `−12 %`.
fn signed_percent(v: f64) -> String {
    let digits = if v.abs() < 10.0 { 1 } else { 0 };
    if v < 0.0 {
        format!("−{:.*} %", digits, -v)
    } else {
        format!("+{v:.digits$} %")
    }
}

/// A ratio B/A as a factor, two significant digits: `×0.79`, `×2.7`, `×81`.
fn factor(r: f64) -> String {
    let digits = (1 - r.log10().floor() as i32).max(0) as usize;
    format!("×{r:.digits$}")
}

/// A latency ratio as a reader takes it in: a percentage of A while B is
/// within half to twice A (`+3.2 %`, `−40 %`), a factor beyond (`×2.7`,
/// `×0.31`): a change's interval is a ratio, and a percentage of a large
/// slowdown's lower end reads as "−100 %".
fn relative(ratio: f64) -> String {
    if (0.5..=2.0).contains(&ratio) {
        signed_percent(100.0 * (ratio - 1.0))
    } else {
        factor(ratio)
    }
}

/// A change in the figure's own terms: a time and its part of A, or loss
/// points.
fn change(f: &FigureComparison, v: f64, percent: Option<f64>) -> String {
    if f.figure == Figure::Loss {
        let sign = if v < 0.0 { "−" } else { "+" };
        return format!("{sign}{:.2} pt", v.abs());
    }
    match percent {
        Some(p) => format!("{} ({})", signed_ns(v), relative(1.0 + p / 100.0)),
        None => signed_ns(v),
    }
}

/// A side's figure: `14.7 µs`, `0.00 %`.
fn level(f: &FigureComparison, v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if f.figure == Figure::Loss => format!("{v:.2} %"),
        Some(v) => format_ns(v),
    }
}

/// The interval: `−12 % to +21 %` (within half to twice A), `×0.79 to
/// ×9.3` (beyond), `unbounded` (four decades wide or more: the data
/// cannot bound it), or `−0.10 to +0.10 pt` for the loss.
pub fn interval(f: &FigureComparison) -> Option<String> {
    let (lo, hi) = f.ci_low.zip(f.ci_high)?;
    Some(if f.figure == Figure::Loss {
        let s = |v: f64| {
            if v < 0.0 {
                format!("−{:.2}", -v)
            } else {
                format!("+{v:.2}")
            }
        };
        format!("{} to {} pt", s(lo), s(hi))
    } else if f.ci_unbounded {
        "unbounded".into()
    } else {
        match f.ci_low_ratio.zip(f.ci_high_ratio) {
            Some((rl, rh)) if (0.5..=2.0).contains(&rl) && (0.5..=2.0).contains(&rh) => {
                format!("{} to {}", relative(rl), relative(rh))
            }
            Some((rl, rh)) => format!("{} to {}", factor(rl), factor(rh)),
            None => format!("{} to {}", signed_ns(lo), signed_ns(hi)),
        }
    })
}

/// The verdict of a figure, and why when it is not resolved.
pub fn figure_verdict(f: &FigureComparison) -> String {
    if !f.resolved {
        return format!("{} (not resolved)", f.verdict.words());
    }
    f.verdict.words().to_string()
}

/// `p99 +3.2 µs (+4.1 %), 95 % CI −12 % to +21 %, could show +30 %:
/// inconclusive`: one figure in a line, for the report's baseline section.
pub fn figure_sentence(f: &FigureComparison) -> String {
    let name = f.figure.name();
    let Some(d) = f.difference else {
        return format!("{name}: not measured on both sides: inconclusive");
    };
    let mut s = format!("{name} {}", change(f, d, f.difference_percent));
    if let Some(ci) = interval(f) {
        s.push_str(&format!(", 95 % CI {ci}"));
    }
    match detectable(f) {
        Some(shown) if shown == NONE => s.push_str(", could show no change at all"),
        Some(shown) => s.push_str(&format!(", could show {shown}")),
        None => {}
    }
    s.push_str(&format!(": {}", figure_verdict(f)));
    if !f.resolved {
        s.push_str(&format!(
            " ({} samples beyond it are needed on each side)",
            synapse_stats::significance::BEYOND
        ));
    }
    s
}

/// What "could show" says when the data could call no change a
/// regression (beyond ×100).
const NONE: &str = "none";

/// The smallest worsening this data could have called a regression.
fn detectable(f: &FigureComparison) -> Option<String> {
    let d = f.detectable?;
    Some(if f.figure == Figure::Loss {
        format!("+{d:.2} pt")
    } else {
        match f.detectable_percent.map(|p| 1.0 + p / 100.0) {
            Some(r) if r > UNBOUNDED_RATIO => NONE.into(),
            Some(r) => relative(r),
            None => signed_ns(d),
        }
    })
}

/// What the intervals rest on, in a sentence.
pub fn method(c: &Comparison) -> String {
    let p50 = c.figures.iter().find(|f| f.figure == Figure::P50);
    let between = p50.and_then(|f| f.between);
    let within = p50.and_then(|f| f.within);
    let spread = &c.spread;
    let sds = format!(
        "σ of ln p50 {:.2}, p99 {:.2}, p99.9 {:.2}",
        spread.log_sd[0], spread.log_sd[2], spread.log_sd[3]
    );
    let prior = match &spread.source {
        SpreadSource::Assumed => format!(
            "the assumed allowance ({sds}; not measured on this host: synapse calibrate measures it)"
        ),
        SpreadSource::Host { .. } | SpreadSource::HostOrAssumed { .. } => {
            format!("{} ({sds})", spread.describe())
        }
    };
    let mut s = match between {
        Some(Between::Runs) => format!(
            "the variation between runs from these {} + {} runs, pooled with {prior} as a prior of {:.0} degrees of freedom",
            c.runs_a, c.runs_b, spread.df
        ),
        _ => {
            let floor =
                |f: Figure| one_run_a_side_floor(spread, f).map_or_else(String::new, factor);
            format!(
                "one run a side, so the variation between runs is not in the data: it is {prior}, so no change within p50 {}, p99 {}, p99.9 {} can be called a regression, however quiet the runs",
                floor(Figure::P50),
                floor(Figure::P99),
                floor(Figure::P999)
            )
        }
    };
    s.push_str(match within {
        Some(Within::BlockBootstrap) => {
            "; each run's own noise from a moving-block bootstrap over its slices of consecutive requests"
        }
        Some(Within::Binomial) => "; each run's own noise binomial",
        _ => "; each run's own noise is not known (figures only: no slices in these inputs)",
    });
    s.push_str(&format!(
        "; the six intervals hold together with {:.0} % confidence (each at 1 − 0.05/6)",
        c.confidence * 100.0
    ));
    s
}

/// `--min-effect 10 %`, or what its absence means.
pub fn margin(c: &Comparison) -> String {
    match c.min_effect_percent {
        Some(m) => format!("--min-effect {m} % of A (the loss: of A's loss, or of 1 % when A lost less)"),
        None => "no --min-effect: a regression is an interval beyond zero, and no regression is never claimed".into(),
    }
}

/// The overall line: `Verdict: ✗ REGRESSION in p50, p99`, `Verdict: no
/// regression`, `Verdict: inconclusive (…)`.
pub fn verdict_line(c: &Comparison) -> String {
    match c.verdict {
        Verdict::Regression => {
            let worse: Vec<&str> = c.regressed().map(|f| f.figure.name()).collect();
            format!("Verdict: ✗ REGRESSION in {}", worse.join(", "))
        }
        Verdict::NoRegression => format!(
            "Verdict: ✓ no regression (every figure within ±{} %)",
            c.min_effect_percent.unwrap_or_default()
        ),
        Verdict::Inconclusive => {
            let open: Vec<&str> = c
                .figures
                .iter()
                .filter(|f| f.verdict == Verdict::Inconclusive)
                .map(|f| f.figure.name())
                .collect();
            format!(
                "Verdict: ? inconclusive: neither a regression nor its absence shown for {}",
                open.join(", ")
            )
        }
    }
}

/// The table of one comparison, its method and its verdict.
pub fn write_comparison(out: &mut impl Write, c: &Comparison) -> io::Result<()> {
    writeln!(
        out,
        "  {:<7}{:>11}{:>11}  {:<24}{:<24}{:<11}verdict",
        "", "A", "B", "B − A", "95 % CI", "could show"
    )?;
    for f in &c.figures {
        let diff = f
            .difference
            .map_or_else(|| "—".to_string(), |d| change(f, d, f.difference_percent));
        writeln!(
            out,
            "  {:<7}{:>11}{:>11}  {:<24}{:<24}{:<11}{}",
            f.figure.name(),
            level(f, f.a),
            level(f, f.b),
            diff,
            interval(f).unwrap_or_else(|| "—".into()),
            detectable(f).unwrap_or_else(|| "—".into()),
            figure_verdict(f)
        )?;
    }
    let unresolved: Vec<&str> = c
        .figures
        .iter()
        .filter(|f| !f.resolved)
        .map(|f| f.figure.name())
        .collect();
    if !unresolved.is_empty() {
        writeln!(
            out,
            "  Not resolved: {} (fewer than {} samples beyond it in a run)",
            unresolved.join(", "),
            synapse_stats::significance::BEYOND
        )?;
    }
    writeln!(out, "  Method: {}", method(c))?;
    writeln!(out, "  Margin: {}", margin(c))?;
    writeln!(out, "  {}", verdict_line(c))
}

/// Load runs: each phase's p50 inflation, B against A, and its verdict.
pub fn write_load_changes(
    out: &mut impl Write,
    changes: &[synapse_stats::load::compare::PhaseChange],
) -> io::Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  Under load, p50 inflation over idle (B − A, 95 % CI):"
    )?;
    for c in changes {
        writeln!(
            out,
            "  {:<14}{:>11} {:>11} {:>11}  {} to {}  {}",
            c.phase,
            synapse_units::signed_ns(c.a_ns),
            synapse_units::signed_ns(c.b_ns),
            synapse_units::signed_ns(c.change_ns),
            synapse_units::signed_ns(c.low_ns),
            synapse_units::signed_ns(c.high_ns),
            c.verdict.words()
        )?;
    }
    if changes.iter().any(|c| c.runs_a < 2 || c.runs_b < 2) {
        writeln!(
            out,
            "  (one run a side: its interval holds each run's own noise, not how much runs differ)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::significance::{Options, Run, compare};

    fn runs(p50: f64, n: usize) -> Vec<Run> {
        (0..n)
            .map(|i| {
                let x = p50 * (1.0 + 0.01 * i as f64);
                Run::from_figures(
                    "r",
                    [Some(x), Some(x), Some(x), Some(x), Some(x), Some(0.0)],
                    100_000,
                    0,
                )
            })
            .collect()
    }

    #[test]
    fn a_regression_is_named_with_its_interval_and_method() {
        let c = compare(
            &runs(15_000.0, 1),
            &runs(1_215_000.0, 1),
            &Options::with_min_effect(None),
        );
        let mut out = Vec::new();
        write_comparison(&mut out, &c).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.contains("Verdict: ✗ REGRESSION in p50, p90, p99, p99.9, mean"),
            "{t}"
        );
        assert!(t.contains("one run a side, so the variation between runs is not in the data: it is the assumed allowance"), "{t}");
        assert!(t.contains("figures only"), "{t}");
        let p50 = &c.figures[0];
        let s = figure_sentence(p50);
        assert!(s.starts_with("p50 +1.20 ms (×81), 95 % CI ×"), "{s}");
        assert!(s.ends_with(": regression"), "{s}");
    }

    #[test]
    fn inconclusive_and_no_regression_say_so() {
        let c = compare(
            &runs(15_000.0, 1),
            &runs(15_150.0, 1),
            &Options::with_min_effect(Some(5.0)),
        );
        let line = verdict_line(&c);
        assert!(
            line.starts_with(
                "Verdict: ? inconclusive: neither a regression nor its absence shown for p50"
            ),
            "{line}"
        );
        assert!(margin(&c).starts_with("--min-effect 5 % of A"));
        let quiet = Options {
            min_effect_percent: Some(10.0),
            spread: synapse_stats::significance::Spread {
                source: SpreadSource::Host {
                    calibrated_at: "2026-11-27T00:00:00Z".into(),
                    runs: 10,
                },
                log_sd: [0.01; 5],
                df: 9.0,
            },
        };
        let c = compare(&runs(15_000.0, 5), &runs(15_000.0, 5), &quiet);
        assert_eq!(
            verdict_line(&c),
            "Verdict: ✓ no regression (every figure within ±10 %)"
        );
        assert!(
            method(&c).starts_with(
                "the variation between runs from these 5 + 5 runs, pooled with this host's"
            ),
            "{}",
            method(&c)
        );
    }
}

/// Issue 51: a ratio interval is read in log space: a slowdown's lower end
/// is a factor, never "−100 %"; an interval the data cannot bound says so.
#[cfg(test)]
mod ratio_tests {
    use super::*;
    use synapse_stats::significance::{Options, Run, compare};

    fn run(p50: f64, spread: f64, slices: u64) -> Run {
        // A run's slices of consecutive requests, their RTTs around p50.
        let slices: Vec<synapse_stats::slices::Slice> = (0..slices)
            .map(|i| {
                let x = (p50 * (1.0 + spread * ((i * 7 % 11) as f64 / 10.0 - 0.5))) as u64;
                synapse_stats::slices::Slice {
                    start_ns: i,
                    end_ns: i + 1,
                    rtt: vec![(x, 40)],
                    unanswered: 0,
                }
            })
            .collect();
        Run::from_slices("r", &slices)
    }

    #[test]
    fn a_slowdowns_interval_is_a_factor_and_an_unbounded_one_says_so() {
        let (a, b) = (run(40_000.0, 0.1, 64), run(108_000.0, 0.1, 64));
        let c = compare(&[a], &[b], &Options::with_min_effect(None));
        let p50 = &c.figures[0];
        let ci = interval(p50).unwrap();
        assert!(!ci.contains('%') && ci.contains('×'), "{ci}");
        assert!(
            !figure_sentence(p50).contains("−100 %"),
            "{}",
            figure_sentence(p50)
        );
        let (lo, hi) = (p50.ci_low_ratio.unwrap(), p50.ci_high_ratio.unwrap());
        assert!(lo > 0.0 && lo < 2.7 && hi > 2.7, "{lo} {hi}");
        // A spread between runs as wide as the figures: nothing bounds
        // the change, and the words say so plainly.
        let bare = |x: f64| {
            Run::from_figures(
                "r",
                [Some(x), Some(x), Some(x), Some(x), Some(x), Some(0.0)],
                100,
                0,
            )
        };
        let wild = Options {
            min_effect_percent: None,
            spread: synapse_stats::significance::Spread {
                source: SpreadSource::Assumed,
                log_sd: [3.0; 5],
                df: 4.0,
            },
        };
        let c = compare(&[bare(40_000.0)], &[bare(108_000.0)], &wild);
        let p50 = &c.figures[0];
        assert!(p50.ci_unbounded);
        assert_eq!(interval(p50).unwrap(), "unbounded");
        let s = figure_sentence(p50);
        assert!(
            s.contains("95 % CI unbounded, could show no change at all: inconclusive"),
            "{s}"
        );
        assert_eq!(relative(0.3), "×0.30");
        assert_eq!(relative(1.5), "+50 %");
        assert_eq!(relative(0.999_7), "−0.0 %");
        assert_eq!(factor(1395.0), "×1395");
        assert_eq!(factor(0.0007), "×0.00070");
    }
}
