//! The agent: two agents probing each other across an impaired leg,
//! scraped by a real Prometheus. The delay and the loss netem was told
//! must show in PromQL with the right magnitude, and the agents' lost
//! counters must add up to every probe datagram the kernel dropped.

use super::outputs::Scenario;
use super::sheet::{Interval, Sheet, Unit, ms};
use super::stats::{count_interval, per_check_confidence};
use serde_json::Value;
use std::collections::HashMap;

/// An instant query's value per `source`.
fn by_source(s: &Scenario, query: &str) -> HashMap<String, f64> {
    let text = std::fs::read_to_string(s.dir.join(format!("{query}.json"))).unwrap_or_default();
    let v: Value = serde_json::from_str(&text).unwrap_or_default();
    v["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let source = r["metric"]["source"].as_str()?.to_string();
            let value = r["value"][1].as_str()?.parse().ok()?;
            Some((source, value))
        })
        .collect()
}

pub fn check(sheet: &mut Sheet, s: &Scenario) {
    let mu = s.told_f64("mu_ns");
    sheet.scenario(
        s,
        "`synapse agent` in each host, each probing the other every 10 ms (A over \
         STAMP, B plain echo); a real Prometheus in A scrapes both every second. UDP \
         leaving A goes through `netem delay 30ms loss 10%`, so both pairs see 30 ms \
         more round trip and 10 % loss (A's requests, A's answers to B). Queries over \
         the last 15 s of the impairment; then the loss is lifted, every probe \
         settled, and the agents stopped.",
    );
    let got = by_source(s, "p50");
    for source in ["a", "b"] {
        let v = got.get(source).copied().unwrap_or(f64::NAN) * 1e9;
        // netem adds mu to every round trip; the emulated kernel adds its
        // own floor (a few ms under TCG, see the baseline), less than
        // 10 ms at the median. A native bucket is 2^(1/8) wide.
        sheet.bounded(
            &format!("{source}→ RTT p50 (PromQL, native histogram)"),
            &format!("{} + the floor", ms(mu)),
            "",
            Interval {
                lo: mu / 1.0905,
                hi: (mu + 10e6) * 1.0905,
                got_lo: v,
                got_hi: v,
                unit: Unit::Ns,
                how: "above the delay told, within the floor, ± a bucket".into(),
            },
        );
    }
    let ratio = by_source(s, "loss_ratio");
    let samples = by_source(s, "samples");
    let p = s.told_f64("loss");
    for source in ["a", "b"] {
        let got = ratio.get(source).copied().unwrap_or(f64::NAN);
        let k = samples.get(source).copied().unwrap_or(0.0);
        let (lo, hi) = count_interval(k as u64, p, 1.0);
        sheet.within(
            &format!("{source}→ loss ratio (PromQL)"),
            &format!("10 % of {k:.0}"),
            "",
            Interval {
                lo: lo / k,
                hi: hi / k,
                got_lo: got,
                got_hi: got,
                unit: Unit::Ratio,
                how: format!("binomial, {:.3} %", per_check_confidence()),
            },
        );
    }
    let (lost, late) = (by_source(s, "lost_total"), by_source(s, "late_total"));
    let counted: f64 = ["a", "b"]
        .iter()
        .map(|src| {
            lost.get(*src).copied().unwrap_or(f64::NAN) - late.get(*src).copied().unwrap_or(0.0)
        })
        .sum();
    let (kernel, how) = kernel_drops(s);
    sheet.exact(
        "lost (not late), both agents, in Prometheus",
        kernel,
        counted as i64,
        &how,
    );
}

/// Every probe datagram the kernel dropped, the whole run (read once the
/// agents are stopped), and how it adds up. netem drops a GSO packet (the
/// echo reflector's answer to requests that queued up together) as one, so
/// what it dropped in datagrams is what the filter's action passed to it
/// (each segment a datagram) less what it sent on; the other place a probe
/// can be dropped is a UDP socket's receive queue (`InErrors`, which counts
/// `RcvbufErrors`).
fn kernel_drops(s: &Scenario) -> (i64, String) {
    let netem = s.qdisc("quiet", 'a', "20:");
    let passed = s.filter_passed("quiet", 'a');
    let dropped = passed as i64 - netem.packets as i64;
    let in_errors = |host| {
        s.snmp("quiet", host)
            .get("Udp.InErrors")
            .copied()
            .unwrap_or(0)
    };
    let (a, b) = (in_errors('a'), in_errors('b'));
    let mut how = format!(
        "the datagrams netem dropped, {passed} passed to it − {} sent on ({} drops: a GSO \
         packet is one), + `Udp.InErrors` A {a}, B {b}",
        netem.packets, netem.drops
    );
    if netem.qlen > 0 {
        how.push_str(&format!("; netem still held {}", netem.qlen));
    }
    (dropped + a + b, how)
}
