//! `--fail-on-regression`: this run against its profile's baseline by the
//! test `synapse compare` uses, over the baseline's stored runs (their
//! interval logs) and this run's slices of consecutive requests, with the
//! same `--min-effect`, and the same three verdicts. A baseline without
//! stored runs (set before Synapse kept them) is judged by the old rule
//! instead, p50 or p99 worse by more than `--min-effect`, and the report
//! says so: a verdict never rests on a test it did not do.

use crate::config::baseline_runs;
use crate::config::{BaselineComparison, RegressionRule};
use crate::plan::ClientPlan;
use synapse_stats::Summary;
use synapse_stats::significance::{Options, Run, Spread, Verdict, compare};
use synapse_stats::slices::Slice;

/// The run against the profile's baseline, judged when the run asked to
/// be; `None` without a baseline or without replies.
pub fn judge(
    plan: &ClientPlan,
    summary: &Summary,
    slices: &[Slice],
    spread: Spread,
    source: &str,
) -> Option<BaselineComparison> {
    let baseline = plan.profile.baseline.as_ref()?;
    let mut c = baseline.compare(summary, None)?;
    if let Some(why) = baseline.unlike(&plan.run_kind(), source) {
        // Apples and pears: no change is computed, and a regression asked
        // for is not checked (so never passed).
        c.not_compared = Some(why);
        if plan.profile.fail_on_regression {
            c.rule = Some(RegressionRule::Unchecked);
            c.rule_note = c.not_compared.clone();
        }
        return Some(c);
    }
    if !plan.profile.fail_on_regression {
        return Some(c);
    }
    let min = plan.profile.min_effect;
    let name = plan.profile.name.as_deref().unwrap_or_default();
    c.min_effect_percent = min;
    match baseline_runs::load(&plan.profile.config_path, name) {
        Ok(runs) if !runs.is_empty() => {
            let a: Vec<Run> = runs
                .iter()
                .map(|(path, log)| {
                    let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
                    let label = format!("baseline:{name}/{}", file.unwrap_or_default());
                    Run::from_intervals(&label, &log.intervals, "")
                })
                .collect();
            let this = Run::from_slices("this run", slices);
            let opts = Options {
                min_effect_percent: min,
                spread,
            };
            let test = compare(&a, &[this], &opts);
            c.verdict = Some(test.verdict);
            c.regressed = test.verdict == Verdict::Regression;
            c.rule = Some(RegressionRule::Significance);
            c.rule_note = Some(format!(
                "the test of synapse compare against the baseline's {} stored: {}",
                synapse_units::count_of(runs.len() as u64, "run"),
                super::compare_text::method(&test)
            ));
            c.test = Some(test);
        }
        stored => old_rule(&mut c, stored.err(), min),
    }
    Some(c)
}

/// A baseline without stored runs: p50 or p99 worse than the baseline's
/// stored figures by more than `--min-effect`, or not checked at all.
fn old_rule(
    c: &mut BaselineComparison,
    unreadable: Option<crate::config::ConfigError>,
    min: Option<f64>,
) {
    let why = match unreadable {
        Some(e) => format!("the baseline's stored runs could not be read ({e})"),
        None => "the baseline has no interval logs (it was set before Synapse kept them; set it again for the test of synapse compare)".into(),
    };
    c.limit_percent = min;
    c.regressed = min.is_some_and(|l| c.change_percent.p50 > l || c.change_percent.p99 > l);
    c.verdict = min.map(|_| {
        if c.regressed {
            Verdict::Regression
        } else {
            Verdict::NoRegression
        }
    });
    c.rule = Some(match min {
        Some(_) => RegressionRule::FixedPercent,
        None => RegressionRule::Unchecked,
    });
    c.rule_note = Some(match min {
        Some(l) => format!(
            "{why}: judged by the old rule instead, p50 or p99 worse than the baseline's by more than {l} % (--min-effect), with no interval"
        ),
        None => format!("{why}, and without --min-effect the old rule has no limit: not checked"),
    });
}
