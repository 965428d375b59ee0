//! `synapse compare`: did it get slower? B against A for p50, p90, p99,
//! p99.9, the mean and the loss, each with a confidence interval and a
//! plain sentence; text or JSON; exit 3 on a regression. The method is in
//! [`synapse_stats::significance`] and docs/compare.md.

use crate::cli::compare::CompareArgs;
use crate::error::{AppError, exit};
use crate::report::runs::{self, Input};
use serde::Serialize;
use std::io::Write;
use synapse_stats::significance::{Comparison, FigureComparison, compare};
use synapse_units::format_ns;

/// One comparison: which runs, and what came of them.
#[derive(Debug, Serialize)]
struct Pair<'a> {
    a: Vec<&'a str>,
    b: Vec<&'a str>,
    #[serde(flatten)]
    comparison: Comparison,
}

/// Runs `synapse compare`; the exit status.
pub fn run(args: &CompareArgs, out: &mut impl Write) -> Result<i32, AppError> {
    let prefix = runs::prefix(args.peer.as_deref());
    let load = |specs: &[String]| -> Result<Vec<Input>, AppError> {
        let mut all = Vec::new();
        for s in specs {
            all.extend(runs::load(s, args.config.as_ref(), &prefix)?);
        }
        Ok(all)
    };
    let a = load(&args.a)?;
    let b = load(&args.b)?;
    // Without `--`: the first run is A, each other one is compared with it.
    let sides: Vec<(Vec<&Input>, Vec<&Input>)> = if args.b.is_empty() {
        let first_spec = runs::load(&args.a[0], args.config.as_ref(), &prefix)?.len();
        if a.len() <= first_spec {
            return Err(AppError::Usage(
                "compare needs two runs at least: A B, or A1 A2 -- B1 B2".into(),
            ));
        }
        let (base, rest) = a.split_at(first_spec);
        rest.iter()
            .map(|r| (base.iter().collect(), vec![r]))
            .collect()
    } else {
        vec![(a.iter().collect(), b.iter().collect())]
    };
    let pairs: Vec<Pair> = sides
        .into_iter()
        .map(|(a, b)| {
            let ra: Vec<_> = a.iter().map(|i| i.run.clone()).collect();
            let rb: Vec<_> = b.iter().map(|i| i.run.clone()).collect();
            Pair {
                a: a.iter().map(|i| i.label.as_str()).collect(),
                b: b.iter().map(|i| i.label.as_str()).collect(),
                comparison: compare(&ra, &rb, args.effect.min_effect),
            }
        })
        .collect();
    let regression = pairs.iter().any(|p| p.comparison.regression);
    if args.json {
        serde_json::to_writer(
            &mut *out,
            &serde_json::json!({"comparisons": pairs, "regression": regression}),
        )
        .map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        for i in a.iter().chain(&b) {
            writeln!(out, "{}: {}", i.label, i.what)?;
        }
        for p in &pairs {
            writeln!(out)?;
            write_pair(out, p)?;
        }
    }
    Ok(if regression { exit::FAIL } else { exit::PASS })
}

fn cell(c: &FigureComparison, v: Option<f64>, signed: bool) -> String {
    match v {
        None => "—".into(),
        Some(v) if c.unit == "percent" => {
            if signed {
                format!("{} pt", synapse_units::signed(v, 2))
            } else {
                format!("{v:.2} %")
            }
        }
        Some(v) if signed => synapse_units::signed_ns(v),
        Some(v) => format_ns(v),
    }
}

fn write_pair(out: &mut impl Write, p: &Pair) -> std::io::Result<()> {
    let c = &p.comparison;
    writeln!(
        out,
        "{} against {} ({} against {}):",
        p.b.join(" "),
        p.a.join(" "),
        synapse_units::count_of(c.runs_b as u64, "run"),
        synapse_units::count_of(c.runs_a as u64, "run"),
    )?;
    writeln!(
        out,
        "  {:<7}{:>12}{:>12}{:>12}  95 % CI (simultaneous)",
        "", "A", "B", "B − A"
    )?;
    for f in &c.figures {
        let ci = match (f.ci_low, f.ci_high) {
            (Some(lo), Some(hi)) => {
                format!("{} to {}", cell(f, Some(lo), true), cell(f, Some(hi), true))
            }
            _ => "—".into(),
        };
        let mark = match (f.regression, f.significant, f.excludes_zero) {
            (true, ..) => "  ✗ regression",
            (false, true, _) => "  significant",
            (false, false, true) => "  (beyond these runs' own noise only)",
            _ => "",
        };
        writeln!(
            out,
            "  {:<7}{:>12}{:>12}{:>12}  {ci}{mark}",
            f.figure.name(),
            cell(f, f.a, false),
            cell(f, f.b, false),
            cell(f, f.difference, true)
        )?;
    }
    for f in &c.figures {
        writeln!(out, "  {}", f.sentence)?;
    }
    writeln!(out, "  Method: {}", c.note)?;
    if let Some(m) = c.min_effect_percent {
        writeln!(out, "  --min-effect: {m} % of A")?;
    }
    let worse: Vec<&str> = c
        .figures
        .iter()
        .filter(|f| f.regression)
        .map(|f| f.figure.name())
        .collect();
    if worse.is_empty() {
        writeln!(out, "  Verdict: no regression")
    } else {
        writeln!(out, "  Verdict: ✗ REGRESSION in {}", worse.join(", "))
    }
}
