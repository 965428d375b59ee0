//! Two hosts, two clocks: Synapse's clock offset and drift against a
//! reflector clock stepped and slewed by known amounts, with an NTP-style
//! probe of other code (tests/lab/clockprobe.py) reading the offset
//! before and after each run. An offset measured over a round trip is off
//! by at most half that round trip, whichever way the path is lopsided:
//! that is every bound below, nothing looser.

use super::outputs::Scenario;
use super::sheet::{Interval, Sheet, Unit, ms};
use serde_json::Value;

/// The phases side a ran, in order, and the step told before each.
const PHASES: [(&str, &str); 4] = [
    ("base", "as booted"),
    ("plus50ms", "stepped +50 ms"),
    ("minus1s", "stepped a further −1.05 s"),
    ("skew", "tick 10010 µs (+1000 ppm)"),
];

/// The probe's reading: offset (reflector minus client), its round trip,
/// and when (the client's clock), ns.
struct Probe {
    offset: f64,
    rtt: f64,
    at: f64,
}

fn probe(s: &Scenario, file: &str) -> Probe {
    let text = std::fs::read_to_string(s.dir.join(file)).unwrap_or_default();
    let v: Value = serde_json::from_str(text.trim()).unwrap_or_default();
    let get = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Probe {
        offset: get("offset_ns"),
        rtt: get("rtt_ns"),
        at: get("at_ns"),
    }
}

/// What Synapse said of one phase: its offset and the bound on it (half
/// its fastest round trip).
struct Said {
    offset: f64,
    bound: f64,
    drift_ppm: f64,
    rtt_p50: f64,
    seconds: f64,
}

fn said(j: &Value) -> Said {
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    Said {
        offset: f(&j["one_way_ns"]["clock_offset_ns"]),
        bound: f(&j["rtt_ns"]["min"]) / 2.0,
        drift_ppm: f(&j["one_way_ns"]["clock_drift_ppm"]),
        rtt_p50: f(&j["rtt_ns"]["p50"]),
        seconds: f(&j["duration_s"]),
    }
}

pub fn check(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "Two guests, two kernels, two clocks, joined by an emulated link (QEMU \
         `-netdev socket` over loopback). Synapse's STAMP client in A, its reflector in \
         B; before and after each run an independent probe (tests/lab/clockprobe.py, \
         user-space clock reads, the fastest of 100 exchanges) reads B's clock minus \
         A's. Between runs B's clock is stepped (`clock_settime`) and then slewed (its \
         kernel tick, `adjtimex -t`). Every bound is half a round trip: what an offset \
         measured over that round trip can be off by.",
    );
    let mut offsets = Vec::new();
    for (phase, what) in PHASES {
        let j = s.json(phase);
        sheet.expect(&format!("{phase}: exit status"), 0, s.run_rc(phase).into());
        let (p0, p1) = (
            probe(s, &format!("{phase}-probe0.json")),
            probe(s, &format!("{phase}-probe1.json")),
        );
        let got = said(&j);
        // The truth moved between the probes only in the skewed phase.
        let lo = p0.offset.min(p1.offset) - p0.rtt.max(p1.rtt) / 2.0;
        let hi = p0.offset.max(p1.offset) + p0.rtt.max(p1.rtt) / 2.0;
        sheet.bounded(
            &format!("{phase}: clock offset ({what})"),
            &format!("probe {} / {}", ms(p0.offset), ms(p1.offset)),
            "",
            Interval {
                lo: lo - got.bound,
                hi: hi + got.bound,
                got_lo: got.offset,
                got_hi: got.offset,
                unit: Unit::Ns,
                how: format!(
                    "the probes' span ± half their round trip ± half Synapse's fastest ({})",
                    ms(got.bound)
                ),
            },
        );
        offsets.push((got, p0, p1));
    }
    steps(sheet, s, &offsets);
    skew(sheet, &offsets[3]);
    negative_figures(sheet, s);
}

/// Each step told, against the change in Synapse's offset. A step is
/// `now + step` set at a `now` read earlier: it falls short by the time
/// between the read and the set (the probe's server times it, `lag`).
fn steps(sheet: &mut Sheet, s: &Scenario, o: &[(Said, Probe, Probe)]) {
    let told = [
        (s.told_f64("step_plus"), s.told_f64("step_plus_lag")),
        (s.told_f64("step_minus"), s.told_f64("step_minus_lag")),
    ];
    for (i, (step, lag)) in told.iter().enumerate() {
        let (before, after) = (&o[i].0, &o[i + 1].0);
        let probes = o[i + 1].1.offset - o[i].2.offset;
        sheet.bounded(
            &format!("offset change across the step of {}", ms(*step)),
            &format!(
                "{}, set {} after its read; probes {}",
                ms(*step),
                ms(*lag),
                ms(probes)
            ),
            "",
            Interval {
                lo: step - lag - before.bound - after.bound,
                hi: step + before.bound + after.bound,
                got_lo: after.offset - before.offset,
                got_hi: after.offset - before.offset,
                unit: Unit::Ns,
                how: "short by at most the lag, ± half of each run's fastest round trip".into(),
            },
        );
    }
}

/// The slewed run: Synapse's drift against the probes' (their offsets over
/// the time between them). A least-squares line through points each off
/// by at most `e` over a span `T` has its slope off by at most `3e/T`
/// (evenly spread points); `e` is half the median round trip (the fastest
/// of each stretch of the run is below it).
fn skew(sheet: &mut Sheet, (got, p0, p1): &(Said, Probe, Probe)) {
    let span = p1.at - p0.at;
    let truth = (p1.offset - p0.offset) / span * 1e6;
    let truth_err = (p0.rtt + p1.rtt) / 2.0 / span * 1e6;
    let line_err = 3.0 * (got.rtt_p50 / 2.0) / (got.seconds * 1e9) * 1e6;
    sheet.bounded(
        "skew: clock drift, ppm",
        &format!("+1000 ppm told; probes {truth:+.0} ppm"),
        "",
        Interval {
            lo: truth - truth_err - line_err,
            hi: truth + truth_err + line_err,
            got_lo: got.drift_ppm,
            got_hi: got.drift_ppm,
            unit: Unit::Number,
            how: format!("± the probes' bound ({truth_err:.0}) ± the line's ({line_err:.0})"),
        },
    );
}

/// The text report never shows a negative one-way delay as a figure.
fn negative_figures(sheet: &mut Sheet, s: &Scenario) {
    for (phase, _) in PHASES {
        let text =
            std::fs::read_to_string(s.dir.join(format!("{phase}-text.txt"))).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.trim_start().starts_with("Forward:") || l.trim_start().starts_with("Backward:")
            })
            .collect();
        let negative = lines
            .iter()
            .any(|l| l.contains("P50 −") || l.contains("P99 −"));
        sheet.row(
            &format!("{phase}: one-way figures in the text report"),
            "no negative delay shown",
            "",
            &lines.join(" / ").replace('|', "\\|"),
            "none negative",
            !lines.is_empty() && !negative,
        );
    }
}
