//! An impaired flow measured beside a reference flow (`two_flows` in
//! lib.sh): the impaired leg's delay, percentile by percentile, against
//! netem's own distribution added to the reference's per-packet delays;
//! the other leg unchanged; losses placed on the right leg, packet by
//! packet; and plain echo saying it cannot tell.

use super::outputs::{ClientRow, Scenario};
use super::sheet::{Interval, Sheet, Unit, ms};
use super::stats::{Convolved, Netem, hdr_bucket, per_check_confidence};
use super::truth::{arrived, check_accounting, check_direction, place};
use serde_json::Value;

const PERCENTILES: [(f64, &str); 4] = [(0.10, "p10"), (0.50, "p50"), (0.90, "p90"), (0.99, "p99")];

/// How far an emulated machine couples the two flows' figures: a
/// millisecond, its resolution under emulation. Every figure here ends at
/// a kernel's stamp, never at the client's user-space receive: there the
/// impaired flow's replies arrive bunched (its jitter reorders them), and
/// the two client processes, served one after another at ~1 ms a reply
/// under TCG, starve each other (the receive path, T4 driver → T4 user,
/// spreads 0.3-4.3 ms between p10 and p90 in either flow; seen in CI: the
/// reference's median 2 ms over the impaired flow's). So the backward
/// one-way is the kernel's (T4 driver − T3), and the RTT is taken less the
/// receive path. (The forward leg's netem sits on the client's own egress,
/// before its driver stamp, so T1 stays the application's.)
const COUPLING_NS: i64 = 1_000_000;

/// Every check of one two-flow scenario.
pub fn check(sheet: &mut Sheet, s: &Scenario) {
    let told = s.told();
    let leg = told["leg"].clone();
    let (mu, sigma) = (s.told_f64("mu_ns") as i64, s.told_f64("sigma_ns") as i64);
    let dist = told["dist"].clone();
    sheet.scenario(s, &description(&told, &leg, &dist));
    let netem = if dist == "uniform" {
        Netem::uniform(mu, sigma)
    } else {
        Netem::table(&dist, mu, sigma)
    };
    let add: Vec<i64> = netem.delays.iter().map(|d| d - mu).collect();
    let (reference, test) = (s.client_log("ref"), s.client_log("test"));
    let j = s.json("test");
    for run in ["ref", "test"] {
        sheet.expect(&format!("{run}: exit status"), 0, i64::from(s.run_rc(run)));
    }
    let (impaired, other) = if leg == "fwd" {
        ("forward", "backward")
    } else {
        ("backward", "forward")
    };
    let one_way = |r: &ClientRow, which: &str| {
        if which == "forward" {
            r.forward()
        } else {
            r.backward_kernel()
        }
    };
    let figure = |which: &str| {
        let layer = if which == "forward" {
            "application"
        } else {
            "kernel"
        };
        &j["one_way_ns"][layer][which]
    };
    let ok = |rows: &[ClientRow], f: &dyn Fn(&ClientRow) -> Option<i64>| -> Vec<i64> {
        rows.iter()
            .filter(|r| r.status == "ok")
            .filter_map(f)
            .collect()
    };
    let base = ok(&reference, &|r| one_way(r, impaired));
    let n = j["packets"]["received"].as_u64().unwrap_or(0) as usize;
    let conv = Convolved::new(base.clone(), add.clone());
    let what = format!("{impaired} one-way");
    // p99 bounded above only: its lower bound is the reference's slowest
    // 1 %, which a stall of the reference's process alone inflates (seen:
    // 0.01-0.15 ms under the floor in one run of three).
    percentiles(
        sheet,
        &what,
        &conv,
        figure(impaired),
        (n, base.len()),
        (COUPLING_NS, COUPLING_NS, &["p99"]),
    );
    rtt_less_dwell(sheet, (&reference, &test), add, n);
    // The other leg: what the reference saw, nothing added, give or take
    // the flows' coupling: the delay netem adds is tens of milliseconds. Its tail (p90
    // and p99, the slowest 10 % and 1 %) is another matter under emulation:
    // either flow's tail is whichever process a stall caught, between its
    // clock read and the kernel (seen: p99 2.5 ms apart either way; p90
    // 3.65 ms against a reference's 2.2 ms, and 0.20 ms against a
    // reference's 3.64 ms, in CI). So the tail is bounded above only, by
    // half the delay netem adds to 99 % of packets: had the impaired leg's
    // delay been put on this leg, its tail would be past that. p10 and p50
    // still hold it to the reference from both sides.
    let base = ok(&reference, &|r| one_way(r, other));
    let conv = Convolved::new(base.clone(), vec![0]);
    let what = format!("{other} one-way (not impaired)");
    // Half of what netem adds to 99 % of packets (its 1st percentile).
    let least = netem.delays.get(netem.delays.len() / 100).copied();
    let tail = (least.unwrap_or(0) / 2).max(COUPLING_NS);
    percentiles(
        sheet,
        &what,
        &conv,
        figure(other),
        (n, base.len()),
        (COUPLING_NS, tail, &["p90", "p99"]),
    );
    losses(sheet, s, &leg, &reference, &test);
}

/// Synapse's percentiles of `figures` against the expected distribution
/// of `n` samples (`m` in the reference), each interval widened by
/// `slack` ns; the percentiles named in `above_only` are bounded from
/// above only, by the interval's top plus `tail`.
/// What a two-flow scenario set, in words, for its sheet.
fn description(told: &std::collections::HashMap<String, String>, leg: &str, dist: &str) -> String {
    let test_netem = &told[&format!("netem_{leg}_test")];
    let how = if dist == "uniform" {
        "uniform jitter (no table: `rnd % 2σ + μ − σ`)".to_string()
    } else {
        format!("{dist} jitter (its own table, as `tabledist()` computes it)")
    };
    format!(
        "The {} leg alone: `netem {test_netem}` on the impaired flow; `netem {}` on the \
         reference flow beside it, at the same time. Expected: the reference's per-packet \
         figures plus netem's {how}; intervals at {:.3} % each, widened by {} (the flows' \
         coupling under emulation). The backward one-way is the kernel's (T4 driver − T3) \
         and the RTT is taken less the client's receive path: under emulation the two \
         client processes starve each other there.",
        if leg == "fwd" { "forward" } else { "reverse" },
        told[&format!("netem_{leg}_reference")],
        per_check_confidence(),
        ms(COUPLING_NS as f64)
    )
}

/// The round trip less the reflector's dwell (T3 − T2, its own clock),
/// and the client's receive path (T4 driver → T4 user; see COUPLING_NS),
/// packet by packet from the log: the part netem was told about. One
/// reflector serves both
/// flows, and under emulation it is starved by tens of ms at a time,
/// unevenly between them (dwell p50 17 ms for the reference, 35 ms for the
/// impaired flow), far beyond what these rows resolve; the dwell itself is
/// Synapse's own figure.
fn rtt_less_dwell(
    sheet: &mut Sheet,
    (reference, test): (&[ClientRow], &[ClientRow]),
    add: Vec<i64>,
    n: usize,
) {
    let net = |rows: &[ClientRow]| -> Vec<i64> {
        rows.iter()
            .filter(|r| r.status == "ok")
            .filter_map(|r| Some(r.t4_kernel? - r.t1? - (r.t3? - r.t2?)))
            .collect()
    };
    let rtt_base = net(reference);
    let conv = Convolved::new(rtt_base.clone(), add);
    let rtt = quantiles(net(test));
    percentiles(
        sheet,
        "RTT less the dwell and the receive path",
        &conv,
        &rtt,
        (n, rtt_base.len()),
        (COUPLING_NS, COUPLING_NS, &["p99"]),
    );
}

/// p10, p50, p90 and p99 of `values` as a JSON object, each the value of
/// rank ⌈p·n⌉ (as HdrHistogram reports a quantile).
fn quantiles(mut values: Vec<i64>) -> Value {
    values.sort_unstable();
    let at = |p: f64| {
        let rank = ((p * values.len() as f64).ceil() as usize).max(1);
        values.get(rank - 1).copied()
    };
    let mut o = serde_json::Map::new();
    for (p, key) in PERCENTILES {
        o.insert(key.into(), at(p).into());
    }
    Value::Object(o)
}

fn percentiles(
    sheet: &mut Sheet,
    what: &str,
    conv: &Convolved,
    figures: &Value,
    (n, m): (usize, usize),
    (slack, tail, above_only): (i64, i64, &[&str]),
) {
    for (p, key) in PERCENTILES {
        let Some(got) = figures[key].as_i64() else {
            sheet.row(
                &format!("{what} {key}"),
                "",
                "",
                "missing",
                "reported",
                false,
            );
            continue;
        };
        let (lo, hi) = conv.interval(p, n, m);
        let above_only = above_only.contains(&key);
        let slack = if above_only { tail } else { slack };
        // A one-way delay on one kernel is never below 0.
        let lo = if above_only { 0 } else { lo - slack };
        let hi = hi + slack;
        let (got_lo, got_hi) = hdr_bucket(got);
        sheet.within(
            &format!("{what} {key}"),
            &ms(conv.quantile(p) as f64),
            "",
            Interval {
                lo: lo as f64,
                hi: hi as f64,
                got_lo: got_lo as f64,
                got_hi: got_hi as f64,
                unit: Unit::Ns,
                how: if above_only {
                    format!(
                        "at most the expected + {} (a stall may catch either flow's tail)",
                        ms(slack as f64)
                    )
                } else if slack == 0 {
                    format!("order statistic of {n} (reference {m})")
                } else {
                    format!(
                        "order statistic of {n} (reference {m}), ± {}",
                        ms(slack as f64)
                    )
                },
            },
        );
    }
}

/// Each flow's losses against the reflector's log and netem's counters.
fn losses(sheet: &mut Sheet, s: &Scenario, leg: &str, reference: &[ClientRow], test: &[ClientRow]) {
    let server = s.server_log("srv");
    let host = if leg == "fwd" { 'a' } else { 'b' };
    let mut band_lost = 0;
    for (run, rows, band) in [("ref", reference, "10:"), ("test", test, "20:")] {
        let j = s.json(run);
        check_accounting(sheet, run, &j, rows);
        let truth = place(rows, &arrived(&server, "stamp", port(run)));
        check_direction(sheet, run, &j, &truth);
        let dropped =
            s.qdisc("after", host, band).drops as i64 - s.qdisc("before", host, band).drops as i64;
        if run == "ref" {
            sheet.exact(
                "ref: lost = netem's drops",
                dropped,
                truth.lost,
                "`tc -s qdisc`, the reference's band",
            );
        } else {
            band_lost = dropped - truth.lost;
        }
        sheet.exact(
            &format!("{run}: reordered (RFC 4737)"),
            truth.reordered,
            j["packets"]["reordered"].as_i64().unwrap_or(-1),
            "replies after a later one's, in the order A's socket delivered them (T4 user)",
        );
    }
    if s.dir.join("echo.txt").exists() {
        echo(sheet, s, &server, band_lost);
    }
}

/// Plain echo beside them: its losses counted, their direction unknown.
fn echo(sheet: &mut Sheet, s: &Scenario, server: &[super::outputs::ServerRow], band_lost: i64) {
    let rows = s.client_log("echo");
    let truth = place(&rows, &arrived(server, "echo", port("echo")));
    let text = s.text("echo");
    let lost = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Packets:"))
        // `3,000 sent, 155 lost (5.17%)`: the word before "lost" (the
        // counts have thousands separators, so no splitting on commas).
        .and_then(|l| l.split(" lost").next())
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.replace(',', "").parse::<i64>().ok())
        .unwrap_or(-1);
    sheet.exact(
        "echo: lost (text report)",
        truth.lost,
        lost,
        "requests logged lost",
    );
    sheet.exact(
        "echo: lost = netem's drops",
        band_lost,
        lost,
        "impaired band's drops less the STAMP flow's",
    );
    let said = text
        .lines()
        .find(|l| l.contains("Loss by direction"))
        .unwrap_or("(nothing)");
    sheet.row(
        "echo: loss direction",
        &format!(
            "{} forward, {} backward (truth)",
            truth.forward, truth.backward
        ),
        "",
        said.trim(),
        "says unknown, guesses nothing",
        said.contains("unknown") && !said.contains("forward") && !said.contains("backward"),
    );
}

/// The client port each flow binds (lib.sh's two_flows and scenarios).
fn port(run: &str) -> u16 {
    match run {
        "ref" => 9001,
        "test" => 9002,
        _ => 9003,
    }
}
