//! Two hosts, two clocks: Synapse's clock offset, its step and its drift
//! against a reflector clock stepped and slewed by known amounts, with an
//! NTP-style probe of other code (tests/lab/clockprobe.py) reading the
//! offset before and after each run; and chrony synchronising the
//! reflector's clock mid-run, which its replies' S bit must say within the
//! second. An offset measured over a round trip is off by at most half
//! that round trip less the far end's dwell, whichever way the path is
//! lopsided: that is every bound below, nothing looser.

use super::outputs::Scenario;
use super::sheet::{Interval, Sheet, Unit, ms};
use serde_json::Value;
use std::collections::HashMap;

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

/// The clocks as Synapse read them (kernel cut points when it had them).
fn clocks(j: &Value) -> &Value {
    let w = &j["one_way_ns"];
    if w["kernel"].is_object() {
        &w["kernel"]["clocks"]
    } else {
        &w["application"]["clocks"]
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The probes' span around a run, widened by half their round trips.
fn span(p0: &Probe, p1: &Probe) -> (f64, f64) {
    let half = p0.rtt.max(p1.rtt) / 2.0;
    (
        p0.offset.min(p1.offset) - half,
        p0.offset.max(p1.offset) + half,
    )
}

pub fn check(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "Two guests, two kernels, two clocks, joined by an emulated link (QEMU \
         `-netdev socket` over loopback). Synapse's STAMP client in A, its reflector in \
         B; before and after each run an independent probe (tests/lab/clockprobe.py, \
         user-space clock reads, the fastest of 100 exchanges) reads B's clock minus \
         A's. B's clock is stepped −40 ms (`clock_settime`) 3 s into a run, then its \
         frequency raised +100 ppm (`adjtimex -f`) for a 20 s run; last, Debian's chronyd \
         in B synchronises its clock to one in A while a run goes on. Every bound on an \
         offset is half a round trip less the far end's dwell.",
    );
    for phase in ["base", "step", "slew", "chrony"] {
        sheet.expect(&format!("{phase}: exit status"), 0, s.run_rc(phase).into());
    }
    let (b0, b1) = (probe(s, "base-probe0.json"), probe(s, "base-probe1.json"));
    offset_row(
        sheet,
        "base: clock offset (as booted)",
        &s.json("base"),
        &b0,
        &b1,
    );
    step(sheet, s);
    slew(sheet, s);
    chrony(sheet, s);
    negative_figures(sheet, s);
}

/// A run's offset (the tightest exchange since its last step) against the
/// probes around it.
fn offset_row(sheet: &mut Sheet, figure: &str, j: &Value, p0: &Probe, p1: &Probe) {
    let c = clocks(j);
    let (offset, bound) = (f(&c["offset_ns"]), f(&c["bound_ns"]));
    let (lo, hi) = span(p0, p1);
    sheet.bounded(
        figure,
        &format!("probe {} / {}", ms(p0.offset), ms(p1.offset)),
        "",
        Interval {
            lo: lo - bound,
            hi: hi + bound,
            got_lo: offset,
            got_hi: offset,
            unit: Unit::Ns,
            how: format!(
                "the probes' span ± half their round trip ± Synapse's bound ({})",
                ms(bound)
            ),
        },
    );
}

/// The step mid-run: found once, the offset before and after each within
/// its bound of the probe on that side, and the run's offset the one after.
fn step(sheet: &mut Sheet, s: &Scenario) {
    let j = s.json("step");
    let (p0, p1) = (probe(s, "step-probe0.json"), probe(s, "step-probe1.json"));
    let c = clocks(&j);
    let steps = c["steps"].as_array().cloned().unwrap_or_default();
    sheet.expect("step: steps Synapse found", 1, steps.len() as i64);
    let Some(st) = steps.first() else {
        return;
    };
    for (side, p, at, bound) in [
        ("before", &p0, "from_ns", "from_bound_ns"),
        ("after", &p1, "to_ns", "to_bound_ns"),
    ] {
        let (v, b) = (f(&st[at]), f(&st[bound]));
        sheet.bounded(
            &format!("step: offset {side} the step, at {:.1} s", f(&st["at_s"])),
            &format!("probe {}", ms(p.offset)),
            "",
            Interval {
                lo: p.offset - p.rtt / 2.0 - b,
                hi: p.offset + p.rtt / 2.0 + b,
                got_lo: v,
                got_hi: v,
                unit: Unit::Ns,
                how: format!(
                    "± half the probe's round trip ± Synapse's bound ({})",
                    ms(b)
                ),
            },
        );
    }
    let (told, lag) = (s.told_f64("step"), s.told_f64("step_lag"));
    let size = f(&st["to_ns"]) - f(&st["from_ns"]);
    let b = f(&st["to_bound_ns"]) + f(&st["from_bound_ns"]);
    sheet.bounded(
        "step: its size",
        &format!("{}, set {} after its read", ms(told), ms(lag)),
        "",
        Interval {
            lo: told - lag - b,
            hi: told + b,
            got_lo: size,
            got_hi: size,
            unit: Unit::Ns,
            how: "short by at most the lag, ± both bounds".into(),
        },
    );
    offset_row(sheet, "step: clock offset at the end", &j, &p1, &p1);
}

/// The slewed run: Synapse's drift against the probes' (their offsets
/// over the time between them), claimed, and within its own interval (and
/// the probes' error) of theirs.
fn slew(sheet: &mut Sheet, s: &Scenario) {
    let j = s.json("slew");
    let (p0, p1) = (probe(s, "slew-probe0.json"), probe(s, "slew-probe1.json"));
    offset_row(sheet, "slew: clock offset (+100 ppm)", &j, &p0, &p1);
    let d = &clocks(&j)["drift"];
    let (ppm, within) = (f(&d["ppm"]), f(&d["interval_ppm"]));
    let span = p1.at - p0.at;
    let truth = (p1.offset - p0.offset) / span * 1e6;
    let truth_err = (p0.rtt + p1.rtt) / 2.0 / span * 1e6;
    sheet.bounded(
        "slew: clock drift, ppm",
        &format!(
            "+{} ppm told; probes {truth:+.1} ppm",
            s.told_f64("freq_ppm")
        ),
        "",
        Interval {
            lo: truth - truth_err - within,
            hi: truth + truth_err + within,
            got_lo: ppm,
            got_hi: ppm,
            unit: Unit::Number,
            how: format!("± the probes' bound ({truth_err:.1}) ± Synapse's interval ({within:.1})"),
        },
    );
    sheet.row(
        "slew: a drift claimed",
        "its interval excludes 0",
        "",
        &format!("{ppm:+.2} ± {within:.2} ppm"),
        "resolved",
        d["resolved"] == true,
    );
}

/// chrony in B: the replies say S=0 until B's kernel says its clock is
/// synchronised, and S=1 from the next second on (the reflector reads its
/// clock's state about once a second, at a tick of 100 ms).
fn chrony(sheet: &mut Sheet, s: &Scenario) {
    let text = std::fs::read_to_string(s.dir.join("../b/chrony-b.txt")).unwrap_or_default();
    let told: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
    let synced = told.get("synced_at_ns").and_then(|v| v.parse::<f64>().ok());
    let before = told.get("synchronised_before").copied();
    sheet.row(
        "chrony: B's kernel says synchronised",
        "after chronyd starts, not before",
        &format!("before: {}, at: {:?}", before.unwrap_or("?"), synced),
        "",
        "chrony-b.txt",
        before == Some("0") && synced.is_some(),
    );
    let Some(at) = synced else {
        return;
    };
    let text = std::fs::read_to_string(s.dir.join("chrony.csv")).unwrap_or_default();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n);
    let (Some(t3), Some(err)) = (col("T3_SW"), col("REFLECTOR_ERROR")) else {
        sheet.row(
            "chrony: the log",
            "T3_SW, REFLECTOR_ERROR",
            "",
            "missing",
            "",
            false,
        );
        return;
    };
    let (mut early, mut late, mut first) = (0, 0, None::<f64>);
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let (Some(t), Some(e)) = (
            f.get(t3)
                .and_then(|v| super::outputs::ns(Some(&v.to_string()))),
            f.get(err),
        ) else {
            continue;
        };
        let t = t as f64;
        let says = *e != "unsynchronised";
        early += u32::from(says && t < at);
        late += u32::from(!says && t > at + 1.2e9);
        if says {
            first = Some(first.map_or(t, |x| x.min(t)));
        }
    }
    let after = first.map_or(f64::NAN, |f| f - at);
    sheet.row(
        "chrony: the reflector's S bit",
        "0 before B's kernel says synchronised; 1 on every reply after the next second",
        "",
        &format!(
            "first S=1 at +{} (T3); {early} S=1 before, {late} S=0 after 1.2 s",
            ms(after)
        ),
        "within 1.2 s (a second and a tick)",
        early == 0 && late == 0 && (0.0..=1.2e9).contains(&after),
    );
}

/// The text report never shows a negative one-way delay as a figure.
fn negative_figures(sheet: &mut Sheet, s: &Scenario) {
    for phase in ["base", "step", "slew"] {
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
