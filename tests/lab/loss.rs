//! Loss: random at 1 % and 20 %, each on one leg; bursty (Gilbert-Elliott);
//! an outage. Synapse's lost count against netem's drop counter exactly,
//! each loss placed on its leg against the reflector's log exactly, and
//! netem's own rate against what it was told, statistically.

use super::outputs::Scenario;
use super::sheet::{Interval, Sheet, Unit, ms};
use super::stats::{count_interval, markov_inflation, per_check_confidence};
use super::truth::{arrived, check_accounting, check_direction, place};
use serde_json::Value;
use std::collections::HashSet;

/// The unimpaired run: what the kernel under test adds by itself.
pub fn baseline(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "No netem: the floor every other scenario sits on, measured the same way \
         (STAMP, a request every 5 ms).",
    );
    let (j, rows) = (s.json("run"), s.client_log("run"));
    sheet.expect("exit status", 0, i64::from(s.run_rc("run")));
    check_accounting(sheet, "run", &j, &rows);
    let truth = place(&rows, &arrived(&s.server_log("srv"), "stamp", port(&j)));
    check_direction(sheet, "run", &j, &truth);
    for (what, fig) in [
        ("RTT", &j["rtt_ns"]),
        (
            "forward one-way",
            &j["one_way_ns"]["application"]["forward"],
        ),
        (
            "backward one-way",
            &j["one_way_ns"]["application"]["backward"],
        ),
    ] {
        let shown = format!("p50 {}, p99 {}", ms(f(&fig["p50"])), ms(f(&fig["p99"])));
        sheet.row(what, "nothing", "", &shown, "shown: the floor", true);
    }
}

/// The scenarios of the loss group.
pub fn check(sheet: &mut Sheet, s: &Scenario) {
    match s.name.as_str() {
        "loss-burst" => burst(sheet, s),
        "outage" => outage(sheet, s),
        _ => random(sheet, s),
    }
}

/// The leg a single-flow scenario impaired, and the host its qdisc is on.
fn leg(s: &Scenario) -> (&'static str, char, String) {
    let told = s.told();
    match (told.get("netem_fwd"), told.get("netem_rev")) {
        (Some(t), _) => ("forward", 'a', t.clone()),
        (_, Some(t)) => ("reverse", 'b', t.clone()),
        _ => panic!("{}: no netem told", s.name),
    }
}

/// The common part: exit status, accounting, placement; netem's drops.
fn common(sheet: &mut Sheet, s: &Scenario, what: &str) -> (Value, i64) {
    let (name, host, netem) = leg(s);
    sheet.scenario(s, &format!("The {name} leg alone: `netem {netem}`. {what}"));
    let (j, rows) = (s.json("run"), s.client_log("run"));
    sheet.expect("exit status", 0, i64::from(s.run_rc("run")));
    check_accounting(sheet, "run", &j, &rows);
    let truth = place(&rows, &arrived(&s.server_log("srv"), "stamp", port(&j)));
    check_direction(sheet, "run", &j, &truth);
    let drops =
        s.qdisc("after", host, "1:").drops as i64 - s.qdisc("before", host, "1:").drops as i64;
    sheet.exact(
        "lost = netem's drops",
        drops,
        j["packets"]["lost"].as_i64().unwrap_or(-1),
        "`tc -s qdisc` dropped",
    );
    (j, drops)
}

fn random(sheet: &mut Sheet, s: &Scenario) {
    let (j, drops) = common(sheet, s, "");
    let p = s.told_f64("loss");
    let n = j["packets"]["sent"].as_u64().unwrap_or(0);
    let (lo, hi) = count_interval(n, p, 1.0);
    sheet.within(
        "netem's drops against its rate",
        &format!("{:.0} % of {n}", p * 100.0),
        &drops.to_string(),
        count(lo, hi, drops, "binomial"),
    );
}

fn burst(sheet: &mut Sheet, s: &Scenario) {
    let (pg, r) = (s.told_f64("ge_p"), s.told_f64("ge_r"));
    let (j, drops) = common(
        sheet,
        s,
        "Outages (two or more requests in a row without a reply) against the runs of \
         requests the reflector never saw.",
    );
    let n = j["packets"]["sent"].as_u64().unwrap_or(0);
    let seen = arrived(&s.server_log("srv"), "stamp", port(&j));
    let runs = missing_runs(n, &seen);
    sheet.exact(
        "outages (runs of 2 or more lost)",
        runs.iter().filter(|&&l| l >= 2).count() as i64,
        j["outages"]["count"].as_i64().unwrap_or(-1),
        "runs missing from the reflector's log",
    );
    // Where the longest run is, and what the client's log says of it and
    // of its neighbours: a mismatch here says which requests differ.
    let (first, longest) = longest_run(n, &seen);
    let rows = s.client_log("run");
    let around: Vec<String> = rows
        .iter()
        .filter(|r| r.seq + 1 >= first && r.seq <= first + longest)
        .map(|r| format!("{} {}", r.seq, r.status))
        .collect();
    sheet.exact(
        "longest outage, requests",
        longest as i64,
        j["outages"]["longest_packets"].as_i64().unwrap_or(-1),
        &format!(
            "longest such run: from {first}; the client's log there: {}",
            around.join(", ")
        ),
    );
    let pi = pg / (pg + r);
    let (lo, hi) = count_interval(n, pi, markov_inflation(pg, r));
    sheet.within(
        "netem's drops against its model",
        &format!("p/(p+r) = {:.1} % of {n}", pi * 100.0),
        &drops.to_string(),
        count(lo, hi, drops, "two-state Markov chain"),
    );
    let bursts = runs.len() as f64;
    let mean = runs.iter().sum::<u64>() as f64 / bursts.max(1.0);
    let sd = ((1.0 - r) / (r * r) / bursts.max(1.0)).sqrt();
    let z = super::stats::z();
    sheet.within(
        "netem's mean burst, requests",
        &format!("1/r = {:.2}", 1.0 / r),
        &format!("{mean:.2} over {bursts:.0} bursts"),
        Interval {
            lo: 1.0 / r - z * sd,
            hi: 1.0 / r + z * sd,
            got_lo: mean,
            got_hi: mean,
            unit: Unit::Number,
            how: "geometric bursts".into(),
        },
    );
}

/// The first request number and length of the longest run below `n`
/// missing from `seen` (the first such run if several are as long).
fn longest_run(n: u64, seen: &HashSet<u64>) -> (u64, u64) {
    let (mut best, mut start) = ((0, 0), 0);
    for k in 0..=n {
        if k == n || seen.contains(&k) {
            if k - start > best.1 {
                best = (start, k - start);
            }
            start = k + 1;
        }
    }
    best
}

/// The lengths of the runs of request numbers below `n` missing from `seen`.
fn missing_runs(n: u64, seen: &HashSet<u64>) -> Vec<u64> {
    let mut runs = Vec::new();
    let mut current = 0;
    for k in 0..n {
        if seen.contains(&k) {
            if current > 0 {
                runs.push(current);
            }
            current = 0;
        } else {
            current += 1;
        }
    }
    if current > 0 {
        runs.push(current);
    }
    runs
}

fn outage(sheet: &mut Sheet, s: &Scenario) {
    let (j, drops) = common(
        sheet,
        s,
        "Then `loss 100%` for about 3 s, then `loss 0%` (`tc qdisc change`).",
    );
    let t = |k: &str| s.told_f64(k) * 1e9;
    sheet.expect("outages", 1, j["outages"]["count"].as_i64().unwrap_or(-1));
    sheet.exact(
        "outage, requests",
        drops,
        j["outages"]["longest_packets"].as_i64().unwrap_or(-1),
        "netem's drops",
    );
    // The drops began between the two clock reads around the first change
    // and ended between those around the second; an outage runs from its
    // first lost request leaving to the next reply.
    let interval = 5e6;
    let lo = t("outage_end") - t("outage_started") - interval;
    let hi = t("outage_ended") - t("outage_start") + interval + 100e6;
    let got = j["outages"]["longest_ms"].as_f64().unwrap_or(-1.0) * 1e6;
    sheet.bounded(
        "outage, time",
        "loss 100 % for the window the script timed",
        "",
        Interval {
            lo,
            hi,
            got_lo: got,
            got_hi: got,
            unit: Unit::Ns,
            how: "the window, ± a request interval and a round trip".into(),
        },
    );
}

/// A count against its interval.
fn count(lo: f64, hi: f64, got: i64, how: &str) -> Interval {
    Interval {
        lo,
        hi,
        got_lo: got as f64,
        got_hi: got as f64,
        unit: Unit::Count,
        how: format!("{how}, {:.3} %", per_check_confidence()),
    }
}

/// The client port of a run, from its JSON.
pub fn port(j: &Value) -> u16 {
    let local = j["config"]["local"].as_str().unwrap_or_default();
    local
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}
