//! TCP across one lossy leg: every lost segment is resent by a kernel, so
//! no request is lost and the loss shows as replies late by about a
//! retransmission timeout. Netem's drops of the data segments against the
//! resends both kernels counted (`TCP_INFO` as Synapse reports it, and
//! `/proc/net/snmp` of each host), the late replies in the client's log
//! against Synapse's placing of them on a leg, and what the report says.

use super::outputs::Scenario;
use super::sheet::{Interval, Sheet, Unit, ms};
use super::stats::{count_interval, per_check_confidence};
use serde_json::Value;

/// Linux's smallest retransmission timeout (`TCP_RTO_MIN`).
const RTO_MIN_NS: f64 = 200e6;
/// A reply at least this much slower than the fastest counts as late in
/// the client's log: half the smallest timeout, so that the check that
/// none came late by less than a whole one can fail.
const LATE_NS: i64 = 100_000_000;

/// The two scenarios, `tcp-loss-forward` and `tcp-loss-reverse`.
pub fn check(sheet: &mut Sheet, s: &Scenario) {
    let forward = s.told()["leg"] == "fwd";
    // The impaired leg's qdisc is on its sending host: A (the client)
    // forward, B (the server) reverse.
    let (leg, host) = if forward {
        ("forward", 'a')
    } else {
        ("reverse", 'b')
    };
    let told = s.told();
    sheet.scenario(
        s,
        &format!(
            "TCP (`--tcp`, one request in flight, {} requests) with the {leg} leg alone \
             impaired: `netem {}` on the segments carrying a {} (IP length {}), `netem {}` \
             on its other packets; the other leg left alone. A late reply is one at least \
             {} slower than the fastest in the client's log.",
            500,
            told[&format!("netem_{}_data", &told["leg"])],
            if forward { "request" } else { "reply" },
            told["ip_len"],
            told[&format!("netem_{}_other", &told["leg"])],
            ms(LATE_NS as f64),
        ),
    );
    let j = s.json("run");
    let p = &j["packets"];
    let n = |k: &str| p[k].as_i64().unwrap_or(-1);
    sheet.expect("exit status", 0, i64::from(s.run_rc("run")));
    sheet.expect("requests", 500, n("sent"));
    sheet.expect("lost (TCP resends them)", 0, n("lost"));
    sheet.expect("late (past the 5 s timeout)", 0, n("late"));
    let k = &j["tcp"]["kernel"];
    let kv = |key: &str| k[key].as_i64().unwrap_or(-1);
    let band = |snap| s.qdisc(snap, host, "10:");
    let (before, after) = (band("before"), band("after"));
    let drops = after.drops as i64 - before.drops as i64;
    let through = after.packets as i64 - before.packets as i64;
    let resends_there = s.snmp_delta("before", "after", 'b', "Tcp.RetransSegs");
    let resends_here = s.snmp_delta("before", "after", 'a', "Tcp.RetransSegs");
    sheet.exact(
        "client's resends: Synapse (`TCP_INFO`) against the client host's kernel",
        resends_here,
        kv("retransmits"),
        "`/proc/net/snmp` Tcp RetransSegs, host A",
    );
    if forward {
        sheet.exact(
            "netem's drops = the client's resends",
            drops,
            kv("retransmits"),
            "`tc -s qdisc` 10: dropped, against `tcpi_total_retrans`",
        );
        sheet.exact(
            "requests through netem, sent or dropped",
            through + drops,
            n("sent") + kv("retransmits"),
            "`tc -s qdisc` 10: against requests + the client's resends",
        );
        sheet.row(
            "the server's resends (replies whose ACK rode on a lost request)",
            "at most netem's drops",
            &resends_there.to_string(),
            &drops.to_string(),
            "at most (`/proc/net/snmp` RetransSegs, host B)",
            (0..=drops).contains(&resends_there),
        );
    } else {
        sheet.exact(
            "netem's drops = the server's resends",
            drops,
            resends_there,
            "`tc -s qdisc` 10: dropped, against `/proc/net/snmp` RetransSegs, host B",
        );
        sheet.exact(
            "replies through netem, sent or dropped",
            through + drops,
            n("received") + resends_there,
            "`tc -s qdisc` 10: against replies + the server's resends",
        );
        sheet.exact(
            "the client's resends were all of requests the server had",
            kv("dsack_dups"),
            kv("retransmits"),
            "DSACKs the client got (`tcpi_dsack_dups`) against its resends",
        );
    }
    rates(sheet, s, &j, through + drops, drops);
    places(sheet, s, &j, forward);
}

/// Netem's drops and the late replies against the loss rate told.
fn rates(sheet: &mut Sheet, s: &Scenario, j: &Value, segments: i64, drops: i64) {
    let p = s.told_f64("loss");
    let (lo, hi) = count_interval(segments as u64, p, 1.0);
    sheet.within(
        "netem's drops against its rate",
        &format!("{:.0} % of {segments}", p * 100.0),
        &drops.to_string(),
        count(lo, hi, drops, "binomial"),
    );
    let late = late_extras(s).len() as i64;
    let n = j["packets"]["sent"].as_u64().unwrap_or(0);
    let (lo, hi) = count_interval(n, p, 1.0);
    sheet.within(
        "late replies (the first try lost) against the rate",
        &format!("{:.0} % of {n}", p * 100.0),
        &late.to_string(),
        count(lo, hi, late, "binomial"),
    );
}

/// The late replies' delays, what the RTT's tail shows, and Synapse's
/// placing of them on a leg, in JSON and in the report's sentence.
fn places(sheet: &mut Sheet, s: &Scenario, j: &Value, forward: bool) {
    let extras = late_extras(s);
    let rto = j["tcp"]["kernel"]["rto_ns"].as_f64().unwrap_or(f64::NAN);
    let least = extras.iter().copied().min().unwrap_or(-1) as f64;
    sheet.bounded(
        "least a resend added to a reply",
        "Linux's minimum RTO, up to the client's RTO + 100 ms",
        &format!("RTO {}", ms(rto)),
        Interval {
            lo: RTO_MIN_NS,
            hi: rto + 100e6,
            got_lo: least,
            got_hi: least,
            unit: Unit::Ns,
            how: "smallest (RTT − fastest) of the late replies in the log".into(),
        },
    );
    let rtt = &j["rtt_ns"];
    let (min, p50, p99) = (f(&rtt["min"]), f(&rtt["p50"]), f(&rtt["p99"]));
    sheet.row(
        "RTT p99 − min",
        "at least an RTO (more than 1 % of replies late)",
        "",
        &ms(p99 - min),
        "≥ 200 ms",
        p99 - min >= RTO_MIN_NS,
    );
    sheet.row(
        "RTT p50 − min",
        "below 100 ms (most replies not late)",
        "",
        &ms(p50 - min),
        "< 100 ms",
        p50 - min < LATE_NS as f64,
    );
    let r = &j["tcp"]["resends"];
    let c = |k: &str| r[k].as_i64().unwrap_or(-1);
    let late = extras.len() as i64;
    let placed = c("forward") + c("reverse") + c("far_resent") + c("after_ack") + c("far_side");
    sheet.exact(
        "late replies: Synapse's (`tcp.resends`) against the log's",
        late,
        placed,
        "every late reply placed",
    );
    let (on_leg, off_leg, leg) = if forward {
        (c("forward"), c("reverse") + c("far_resent"), "forward")
    } else {
        (c("reverse") + c("far_resent"), c("forward"), "reverse")
    };
    sheet.exact(
        &format!("late replies placed on the {leg} leg"),
        late - c("after_ack") - c("far_side"),
        on_leg,
        "all but those Synapse could not place",
    );
    sheet.expect("late replies placed on the other leg", 0, off_leg);
    if forward {
        sheet.expect("late replies not placed", 0, c("after_ack") + c("far_side"));
    }
    sheet.row(
        "`tcp.resends.leg`",
        leg,
        "",
        r["leg"].as_str().unwrap_or("none"),
        "the same",
        r["leg"] == leg,
    );
    let said = r["summary"].as_str().unwrap_or_default();
    let want = format!(
        "on the {leg} leg ({})",
        if forward {
            "client → server"
        } else {
            "server → client"
        }
    );
    sheet.row(
        "the report's sentence (`tcp.resends.summary`, printed as is in the text report)",
        &format!("latency, not loss, {want}"),
        "",
        said,
        "says both",
        said.starts_with("retransmissions showed as latency, not loss") && said.contains(&want),
    );
}

/// (RTT − the fastest) of every reply in the client's log at least
/// `LATE_NS` slower than the fastest, ns.
fn late_extras(s: &Scenario) -> Vec<i64> {
    let rtts: Vec<i64> = s.client_log("run").iter().filter_map(|r| r.rtt).collect();
    let fastest = rtts.iter().copied().min().unwrap_or(0);
    rtts.iter()
        .map(|r| r - fastest)
        .filter(|&e| e >= LATE_NS)
        .collect()
}

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

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}
