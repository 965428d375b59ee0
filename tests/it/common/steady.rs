//! Whether the machine left a run alone. A test that asserts a verdict
//! between two runs needs each run's level to hold still: while other
//! tests load both CPUs, a spell of slow slices (the peer's or the
//! client's thread descheduled for a while) makes a run's level drift, and
//! the verdict on a drifting run is, rightly, "inconclusive". Such a run
//! is measured again; the verdict is asserted only on runs the machine
//! left alone, and never loosened.

use std::process::Output;

/// Runs whose slices' medians were this many times the run's are slow spells.
const SPELL: f64 = 10.0;
/// A slice whose median is this many times the run's is a stall on its own
/// (the machine kept the thread off a CPU for most of the slice): one is
/// enough to dominate the spread of a run's slices, which the comparison's
/// interval is built from.
const STALL: f64 = 100.0;
/// A run with more than this share of its slices in spells was disturbed.
const MOST: f64 = 0.05;
/// Runs measured at most, before the test gives up on a quiet machine.
const ATTEMPTS: usize = 3;

/// A JSON report's p50 and its slices' medians (empty slices left out).
fn slice_medians(report: &serde_json::Value) -> Option<(f64, Vec<u64>)> {
    let p50 = report["rtt_ns"]["p50"].as_f64()?;
    let slices = report["slices"]["items"].as_array()?;
    let medians = slices
        .iter()
        .filter_map(|s| synapse::hdr_log::decode_histogram(s["rtt"].as_str()?).ok())
        .filter(|h| !h.is_empty())
        .map(|h| h.value_at_quantile(0.5))
        .collect();
    Some((p50, medians))
}

/// How far a run's level strayed within it: the largest factor between a
/// slice's median and the run's p50, either way (1.0: every slice at the
/// run's level). `None` for a report without slices.
pub fn level_drift(report: &serde_json::Value) -> Option<f64> {
    let (p50, medians) = slice_medians(report)?;
    medians
        .iter()
        .map(|&m| (m as f64 / p50).ln().abs().exp())
        .reduce(f64::max)
}

/// Why the machine disturbed the run a JSON report describes, if it did.
pub fn disturbance(report: &serde_json::Value) -> Option<String> {
    let (p50, medians) = slice_medians(report)?;
    let slow = medians.iter().filter(|&&m| m as f64 > SPELL * p50).count();
    let stalled = medians.iter().filter(|&&m| m as f64 > STALL * p50).count();
    if stalled > 0 {
        return Some(format!(
            "{stalled} of {} slices had a median over {STALL} x the run's p50 ({p50} ns)",
            medians.len()
        ));
    }
    (slow as f64 > MOST * medians.len() as f64).then(|| {
        format!(
            "{slow} of {} slices had a median over {SPELL} x the run's p50 ({p50} ns)",
            medians.len()
        )
    })
}

/// `run`'s output, measured again (up to `ATTEMPTS` times) while the
/// machine disturbed it; a run that is not a JSON report is returned as it
/// is, for the test's own assertions to show.
pub fn undisturbed(what: &str, mut run: impl FnMut() -> Output) -> Output {
    let mut why = String::new();
    for attempt in 1..=ATTEMPTS {
        let out = run();
        let report = std::str::from_utf8(&out.stdout)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t.trim()).ok());
        match report.as_ref().and_then(disturbance) {
            None => return out,
            Some(w) => {
                super::announce::retry(what, attempt, &w);
                why = w;
            }
        }
    }
    panic!("{what}: the machine disturbed all {ATTEMPTS} runs, the last: {why}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of `slices` slices of 40 µs requests, the first `slow` of
    /// them a spell at `spell_ns`.
    fn report_at(slices: usize, slow: usize, spell_ns: u64) -> serde_json::Value {
        let items: Vec<_> = (0..slices)
            .map(|i| {
                let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
                let rtt = if i < slow { spell_ns } else { 40_000 };
                h.record_n(rtt, 40).unwrap();
                serde_json::json!({ "rtt": synapse::hdr_log::encode_histogram(&h) })
            })
            .collect();
        serde_json::json!({ "rtt_ns": { "p50": 40_000 }, "slices": { "items": items } })
    }

    /// [`report_at`] with 1 ms spells.
    fn report(slices: usize, slow: usize) -> serde_json::Value {
        report_at(slices, slow, 1_000_000)
    }

    #[test]
    fn one_stalled_slice_disturbs_a_run() {
        let why = disturbance(&report_at(64, 1, 10_000_000)).expect("a 250 x slice");
        assert!(
            why.starts_with("1 of 64 slices had a median over 100"),
            "{why}"
        );
        assert_eq!(
            disturbance(&report_at(64, 1, 3_000_000)),
            None,
            "75 x: no stall"
        );
    }

    #[test]
    fn a_runs_level_drift_is_its_farthest_slice_either_way() {
        assert_eq!(level_drift(&report(64, 0)).map(|d| d.round()), Some(1.0));
        let slower = level_drift(&report_at(64, 1, 50_000)).unwrap();
        assert!((slower - 1.25).abs() < 0.01, "{slower}");
        let faster = level_drift(&report_at(64, 1, 20_000)).unwrap();
        assert!((faster - 2.0).abs() < 0.01, "{faster}");
        assert_eq!(level_drift(&serde_json::json!({})), None, "not a report");
    }

    #[test]
    fn a_spell_of_slow_slices_disturbs_a_run_and_a_slow_slice_alone_does_not() {
        assert_eq!(disturbance(&report(64, 0)), None);
        assert_eq!(disturbance(&report(64, 3)), None, "3 of 64: within 5 %");
        let why = disturbance(&report(64, 20)).expect("a third of the run in a spell");
        assert!(why.starts_with("20 of 64 slices"), "{why}");
        assert_eq!(disturbance(&serde_json::json!({})), None, "not a report");
    }
}
