//! Reordering, duplication, corruption and a rate limit with its queue:
//! each against what netem was told and what the kernel counted.

use super::loss::port;
use super::outputs::Scenario;
use super::sheet::{Interval, Sheet, Unit, ms};
use super::stats::{count_interval, per_check_confidence};
use super::truth::{arrived, check_accounting, check_direction, place};
use serde_json::Value;

pub fn check(sheet: &mut Sheet, s: &Scenario) {
    match s.name.as_str() {
        "reorder" => reorder(sheet, s),
        "duplicate" => duplicate(sheet, s),
        "corrupt" => corrupt(sheet, s),
        _ => rate(sheet, s),
    }
}

/// Exit status, accounting and loss placement of run `run` (reflector
/// log `srv`); the run's JSON.
fn basics(sheet: &mut Sheet, s: &Scenario, run: &str) -> Value {
    let (j, rows) = (s.json(run), s.client_log(run));
    sheet.expect(&format!("{run}: exit status"), 0, i64::from(s.run_rc(run)));
    check_accounting(sheet, run, &j, &rows);
    let truth = place(&rows, &arrived(&s.server_log("srv"), "stamp", port(&j)));
    check_direction(sheet, run, &j, &truth);
    j
}

fn n(j: &Value, path: &[&str]) -> i64 {
    let mut v = j;
    for p in path {
        v = &v[p];
    }
    v.as_i64().unwrap_or(-1)
}

fn reorder(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "The forward leg alone: `netem delay 20ms reorder 25%`: a quarter of the \
         requests leave at once, the rest 20 ms later, so each early one overtakes \
         the four before it.",
    );
    let j = basics(sheet, s, "run");
    for key in ["late", "duplicate"] {
        sheet.expect(&format!("run: {key}"), 0, n(&j, &["packets", key]));
    }
    // Which requests netem let through at once: their one-way delay (the
    // reflector's kernel stamp less the send) is far below the 20 ms.
    let rows = s.client_log("run");
    let early = rows
        .iter()
        .filter(|r| r.status == "ok")
        .filter_map(|r| r.forward())
        .filter(|&d| d < 10_000_000)
        .count() as i64;
    let sent = n(&j, &["packets", "sent"]);
    let (lo, hi) = count_interval(sent as u64, s.told_f64("reorder"), 1.0);
    sheet.within(
        "requests sent at once",
        &format!("25 % of {sent}"),
        &early.to_string(),
        Interval {
            lo,
            hi,
            got_lo: early as f64,
            got_hi: early as f64,
            unit: Unit::Count,
            how: format!("binomial, {:.3} %", per_check_confidence()),
        },
    );
    // What the reflector's kernel saw, and what Synapse reports.
    let mut by_arrival: Vec<(i64, u64)> = s
        .server_log("srv")
        .iter()
        .filter(|r| r.proto == "stamp")
        .filter_map(|r| Some((r.t2?, r.request())))
        .collect();
    by_arrival.sort_unstable();
    let mut highest = None;
    let overtaken = by_arrival
        .iter()
        .filter(|&&(_, k)| {
            let late = highest.is_some_and(|h| k < h);
            highest = highest.max(Some(k));
            late
        })
        .count() as i64;
    let truth = place(&rows, &arrived(&s.server_log("srv"), "stamp", port(&j)));
    sheet.exact(
        "reordered (RFC 4737): requests at the reflector",
        overtaken,
        n(&j, &["packets", "reordered"]),
        "by B's kernel RX stamps",
    );
    sheet.exact(
        "reordered (RFC 4737): replies at the client",
        truth.reordered,
        n(&j, &["packets", "reordered"]),
        "in the order A's socket delivered them (T4 user)",
    );
    let (p10, p50) = (n(&j, &["rtt_ns", "p10"]), n(&j, &["rtt_ns", "p50"]));
    sheet.row(
        "RTT p10 below 10 ms, p50 above",
        "25 % at once, 75 % after 20 ms",
        "",
        &format!("p10 {}, p50 {}", ms(p10 as f64), ms(p50 as f64)),
        "both groups seen",
        (0..10_000_000).contains(&p10) && p50 > 20_000_000,
    );
}

fn duplicate(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "`netem duplicate 10%` on the forward leg (run `fwd`: requests), then on the \
         reverse leg (run `rev`: replies). netem's duplicates are what its qdisc sent \
         beyond what it was given.",
    );
    for (run, host) in [("fwd", 'a'), ("rev", 'b')] {
        let j = basics(sheet, s, run);
        let sent = n(&j, &["packets", "sent"]);
        let through = s.qdisc(&format!("{run}-1"), host, "1:").packets as i64
            - s.qdisc(&format!("{run}-0"), host, "1:").packets as i64;
        let dups = through - sent;
        sheet.exact(
            &format!("{run}: duplicates"),
            dups,
            n(&j, &["packets", "duplicate"]),
            "`tc -s qdisc` sent less the requests",
        );
        let (lo, hi) = count_interval(sent as u64, s.told_f64("dup"), 1.0);
        sheet.within(
            &format!("{run}: netem's duplicates against its rate"),
            &format!("10 % of {sent}"),
            &dups.to_string(),
            Interval {
                lo,
                hi,
                got_lo: dups as f64,
                got_hi: dups as f64,
                unit: Unit::Count,
                how: format!("binomial, {:.3} %", per_check_confidence()),
            },
        );
    }
}

fn corrupt(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "The forward leg alone: `netem corrupt 10%` flips one random bit of a \
         request's first bytes: for an 86-byte STAMP frame, anywhere in it. The \
         receiving kernel drops it (Ethernet address or type, IP header checksum, UDP \
         checksum), so a corrupted request is a request lost on the forward leg, \
         never a datagram with wrong bytes; only a flip in the Ethernet source \
         address (or the destination's group bit) leaves it deliverable.",
    );
    let j = basics(sheet, s, "run");
    let d = |host, key: &str| s.snmp_delta("before", "after", host, key);
    let reached =
        s.link("after", 'b', "vb", "rx.packets") - s.link("before", 'b', "vb", "rx.packets");
    let delivered = d('b', "Udp.InDatagrams");
    let lost = n(&j, &["packets", "lost"]);
    sheet.exact(
        "lost = requests that reached B but not the reflector",
        reached - delivered,
        lost,
        "vb's RX packets less B's `Udp InDatagrams`",
    );
    let link = reached - d('b', "Ip.InReceives");
    let shown = format!(
        "UDP checksum {}, other UDP {}, IP header {}, Ethernet {link}",
        d('b', "Udp.InCsumErrors"),
        d('b', "Udp.InErrors") - d('b', "Udp.InCsumErrors"),
        d('b', "Ip.InHdrErrors"),
    );
    sheet.exact(
        "dropped by the kernel, by layer",
        d('b', "Udp.InErrors") + d('b', "Ip.InHdrErrors") + link,
        lost,
        &shown,
    );
    sheet.expect(
        "stray (a corrupted datagram taken in)",
        0,
        n(&j, &["packets", "stray"]),
    );
    let frame = 14 + 20 + 8 + 44;
    let survive = 49.0 / (8.0 * f64::from(frame));
    let p = s.told_f64("corrupt") * (1.0 - survive);
    let sent = n(&j, &["packets", "sent"]);
    let (lo, hi) = count_interval(sent as u64, p, 1.0);
    sheet.within(
        "lost against the corruption rate",
        &format!("10 % × (1 − 49/{}) of {sent}", 8 * frame),
        "",
        Interval {
            lo,
            hi,
            got_lo: lost as f64,
            got_hi: lost as f64,
            unit: Unit::Count,
            how: format!("binomial, {:.3} %", per_check_confidence()),
        },
    );
}

fn rate(sheet: &mut Sheet, s: &Scenario) {
    let (bps, limit, wire) = (
        s.told_f64("rate_bps"),
        s.told_f64("limit"),
        s.told_f64("wire_bytes"),
    );
    let service = wire * 8.0 / bps * 1e9;
    sheet.scenario(
        s,
        &format!(
            "The forward leg alone: `netem rate 400kbit limit 40`; 1000-byte requests \
             ({wire} bytes on the wire, so {} each) every 10 ms: twice what it carries. \
             The queue fills, and each request it takes waits behind a full queue.",
            ms(service)
        ),
    );
    let j = basics(sheet, s, "run");
    let q = |snap| s.qdisc(snap, 'a', "1:");
    sheet.exact(
        "lost = netem's drops",
        q("after").drops as i64 - q("before").drops as i64,
        n(&j, &["packets", "lost"]),
        "`tc -s qdisc` dropped",
    );
    sheet.exact(
        "received = what netem let through",
        q("after").packets as i64 - q("before").packets as i64,
        n(&j, &["packets", "received"]),
        "`tc -s qdisc` sent",
    );
    let got = n(&j, &["one_way_ns", "application", "forward", "p50"]) as f64;
    sheet.bounded(
        "forward one-way p50: the queue",
        &format!("limit × {} = {}", ms(service), ms(limit * service)),
        "",
        Interval {
            lo: (limit - 1.0) * service,
            hi: (limit + 1.0) * service + 10e6,
            got_lo: got,
            got_hi: got,
            unit: Unit::Ns,
            how: "within a packet's time (+10 ms of emulation above)".into(),
        },
    );
    let back = n(&j, &["one_way_ns", "application", "backward", "p50"]) as f64;
    sheet.bounded(
        "backward one-way p50 (not impaired)",
        "no queue",
        "",
        Interval {
            lo: 0.0,
            hi: service,
            got_lo: back,
            got_hi: back,
            unit: Unit::Ns,
            how: "below one packet's time".into(),
        },
    );
}
