//! `synapse compare`: did it get slower? B against A for p50, p90, p99,
//! p99.9, the mean and the loss, each with a confidence interval and one of
//! three verdicts; text or JSON; exit 0 no regression, 3 regression, 4
//! inconclusive. The method is in [`synapse_stats::significance`] and
//! docs/compare.md; the words in [`crate::report::compare_text`].

use crate::cli::compare::CompareArgs;
use crate::error::{AppError, exit};
use crate::report::compare_text;
use crate::report::runs::{self, Input};
use serde::Serialize;
use std::io::Write;
use synapse_stats::load::compare::{PhaseChange, change};
use synapse_stats::significance::{Comparison, Options, Verdict, compare};

/// One comparison: which runs, and what came of them.
#[derive(Debug, Serialize)]
struct Pair<'a> {
    a: Vec<&'a str>,
    b: Vec<&'a str>,
    #[serde(flatten)]
    comparison: Comparison,
    /// What the intervals rest on, in a sentence.
    method: String,
    /// Load runs: each phase's p50 inflation, B against A.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    load: Vec<PhaseChange>,
    /// Multicast runs: each responder both sides heard, B against A.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    responders: Vec<ResponderPair>,
}

/// One responder of multicast runs, B against A.
#[derive(Debug, Serialize)]
struct ResponderPair {
    /// Its name, else its address.
    responder: String,
    #[serde(flatten)]
    comparison: Comparison,
    method: String,
}

/// Each responder heard in a run of A and in a run of B, compared as
/// runs of their own (those heard on one side only are not: there is
/// nothing to hold them against).
fn responder_pairs(a: &[&Input], b: &[&Input], opts: &Options) -> Vec<ResponderPair> {
    let side = |runs: &[&Input], key: &str| -> Vec<synapse_stats::significance::Run> {
        runs.iter()
            .flat_map(|i| &i.responders)
            .filter(|r| r.key == key)
            .map(|r| r.input.run.clone())
            .collect()
    };
    let mut keys: Vec<&str> = a
        .iter()
        .flat_map(|i| &i.responders)
        .map(|r| r.key.as_str())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let (ra, rb) = (side(a, key), side(b, key));
            if rb.is_empty() {
                return None;
            }
            let comparison = compare(&ra, &rb, opts);
            Some(ResponderPair {
                responder: key.to_string(),
                method: compare_text::method(&comparison),
                comparison,
            })
        })
        .collect()
}

/// Every run's load, when each is a load run's report.
fn load_reads<'a>(side: &[&'a Input]) -> Option<Vec<&'a crate::report::load_runs::LoadRead>> {
    side.iter().map(|i| i.load.as_ref()).collect()
}

/// Each loaded phase both sides ran, B against A, when every run of both
/// is a load run's report.
fn load_changes(a: &[&Input], b: &[&Input], min_effect: Option<f64>) -> Vec<PhaseChange> {
    let (Some(la), Some(lb)) = (load_reads(a), load_reads(b)) else {
        return Vec::new();
    };
    let runs = |side: &[&crate::report::load_runs::LoadRead], name: &str| {
        side.iter()
            .filter_map(|l| l.inflations().find(|(n, _)| *n == name).map(|x| x.1))
            .collect::<Vec<_>>()
    };
    let mut names: Vec<&str> = la
        .iter()
        .flat_map(|l| l.inflations().map(|x| x.0))
        .collect();
    names.dedup();
    names
        .into_iter()
        .filter_map(|n| {
            change(
                n,
                &runs(&la, n),
                &runs(&lb, n),
                min_effect.map(|m| m / 100.0),
            )
        })
        .collect()
}

/// The exit status of a verdict: 0 no regression, 3 a regression, 4 (or
/// 3, when inconclusive counts as failure) inconclusive.
pub fn exit_status(v: Verdict, inconclusive_fails: bool) -> i32 {
    match v {
        Verdict::NoRegression => exit::PASS,
        Verdict::Regression => exit::FAIL,
        Verdict::Inconclusive if inconclusive_fails => exit::FAIL,
        Verdict::Inconclusive => exit::INCONCLUSIVE,
    }
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
    let opts = Options {
        min_effect_percent: args.effect.min_effect,
        spread: crate::calibrate::spread_for_this_host(),
    };
    let pairs: Vec<Pair> = sides
        .into_iter()
        .map(|(a, b)| {
            let ra: Vec<_> = a.iter().map(|i| i.run.clone()).collect();
            let rb: Vec<_> = b.iter().map(|i| i.run.clone()).collect();
            let comparison = compare(&ra, &rb, &opts);
            Pair {
                a: a.iter().map(|i| i.label.as_str()).collect(),
                b: b.iter().map(|i| i.label.as_str()).collect(),
                method: compare_text::method(&comparison),
                load: load_changes(&a, &b, args.effect.min_effect),
                responders: responder_pairs(&a, &b, &opts),
                comparison,
            }
        })
        .collect();
    let verdict = Verdict::all(pairs.iter().flat_map(|p| {
        std::iter::once(p.comparison.verdict)
            .chain(p.load.iter().map(|c| c.verdict))
            .chain(p.responders.iter().map(|r| r.comparison.verdict))
    }));
    if args.json {
        serde_json::to_writer(
            &mut *out,
            &serde_json::json!({"comparisons": pairs, "verdict": verdict}),
        )
        .map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        for i in a.iter().chain(&b) {
            writeln!(out, "{}: {}", i.label, i.what)?;
        }
        for p in &pairs {
            writeln!(out)?;
            let c = &p.comparison;
            writeln!(
                out,
                "{} against {} ({} against {}):",
                p.b.join(" "),
                p.a.join(" "),
                synapse_units::count_of(c.runs_b as u64, "run"),
                synapse_units::count_of(c.runs_a as u64, "run"),
            )?;
            compare_text::write_comparison(out, c)?;
            compare_text::write_load_changes(out, &p.load)?;
            for r in &p.responders {
                writeln!(out, "\nResponder {}:", r.responder)?;
                compare_text::write_comparison(out, &r.comparison)?;
            }
        }
        if verdict == Verdict::Inconclusive && args.effect.fail_on_inconclusive {
            writeln!(
                out,
                "\nInconclusive counts as a failure here (--fail-on-inconclusive): exit 3"
            )?;
        }
    }
    Ok(exit_status(verdict, args.effect.fail_on_inconclusive))
}
