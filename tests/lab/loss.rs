//! Loss: random at 1 % and 20 %, each on one leg; bursty (Gilbert-Elliott);
//! an outage. Synapse's lost count against netem's drop counter exactly,
//! each loss placed on its leg against the reflector's log exactly, and
//! netem's own rate against what it was told, statistically.

use super::outputs::{ClientRow, Scenario};
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
    longest_outage(sheet, &j, &s.client_log("run"), &seen);
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

/// The longest outage is the longest in time (what `--max-outage` judges),
/// which is not always the one of most requests: a stalled guest can hold
/// the reply that ends a short run. So the client's log says which run
/// Synapse timed longest, and the reflector's log how many requests that
/// run lost; the time is the log's own (seen: equal to the ns). Runs
/// timed within 0.1 ms of each other are all taken as candidates: the log
/// is on the wall clock, which the engine re-reads against its monotonic
/// one every few seconds.
/// How far the log's wall-clock times may stray from the engine's own.
const WALL_READING_NS: i64 = 100_000;

fn longest_outage(sheet: &mut Sheet, j: &Value, rows: &[ClientRow], seen: &HashSet<u64>) {
    let timed = timed_outages(rows);
    let Some(&(_, top)) = timed.iter().max_by_key(|o| o.1) else {
        sheet.expect("outages in the client's log", 1, 0);
        return;
    };
    let candidates: Vec<(u64, u64)> = timed
        .iter()
        .filter(|o| o.1 >= top - WALL_READING_NS)
        .map(|&(first, _)| {
            (
                first,
                (first..).take_while(|k| !seen.contains(k)).count() as u64,
            )
        })
        .collect();
    let got = j["outages"]["longest_packets"].as_u64().unwrap_or(0);
    let lost: Vec<String> = candidates.iter().map(|c| c.1.to_string()).collect();
    let firsts: Vec<String> = candidates.iter().map(|c| c.0.to_string()).collect();
    sheet.row(
        "longest outage, requests",
        "",
        &lost.join(" or "),
        &got.to_string(),
        &format!(
            "equal (the run the client's log times longest, {}, from request {}: \
             those the reflector never saw)",
            ms(top as f64),
            firsts.join(" or ")
        ),
        candidates.iter().any(|c| c.1 == got),
    );
    let reported = j["outages"]["longest_ms"].as_f64().unwrap_or(-1.0) * 1e6;
    sheet.bounded(
        "longest outage, time",
        &format!("the client's log: {}", ms(top as f64)),
        "",
        Interval {
            lo: (top - WALL_READING_NS) as f64,
            hi: (top + WALL_READING_NS) as f64,
            got_lo: reported,
            got_hi: reported,
            unit: Unit::Ns,
            how: "± 0.1 ms (the log's wall clock)".into(),
        },
    );
}

/// The runs of two or more requests without an `ok` in the client's log,
/// each as its first request and its length as Synapse times one: from
/// the first leaving (T1) to the next timely reply (that request's T1 +
/// RTT); one open at the end stops at the slot after its last.
fn timed_outages(rows: &[ClientRow]) -> Vec<(u64, i64)> {
    let mut rows: Vec<&ClientRow> = rows.iter().collect();
    rows.sort_by_key(|r| r.seq);
    let slot = rows
        .windows(2)
        .filter_map(|w| Some(w[1].sched? - w[0].sched?))
        .filter(|&d| d > 0)
        .min()
        .unwrap_or(0);
    let (mut out, mut open) = (Vec::new(), None::<(u64, i64, u64)>);
    for r in &rows {
        if r.status != "ok" {
            let (first, t1, count) = open.unwrap_or((r.seq, r.t1.unwrap_or(0), 0));
            open = Some((first, t1, count + 1));
        } else if let Some((first, t1, count)) = open.take()
            && count >= 2
        {
            out.push((first, r.t1.unwrap_or(0) + r.rtt.unwrap_or(0) - t1));
        }
    }
    if let (Some((first, t1, count)), Some(last)) = (open, rows.last())
        && count >= 2
    {
        out.push((first, last.sched.unwrap_or(0) + slot - t1));
    }
    out
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
