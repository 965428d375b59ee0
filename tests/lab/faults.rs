//! Faults on the path: the reflector killed and started again, the link
//! cut and restored, the path MTU lowered below the request size. Every
//! case must be reported truthfully, and nothing measured before it lost.

use super::loss::port;
use super::outputs::Scenario;
use super::sheet::{Interval, Sheet, Unit, ms};
use super::truth::{arrived, check_accounting, check_direction, place};
use serde_json::Value;

pub fn check(sheet: &mut Sheet, s: &Scenario) {
    match s.name.as_str() {
        "reflector-restart" => restart(sheet, s),
        "link-cut" => link_cut(sheet, s),
        _ => mtu(sheet, s),
    }
}

fn n(j: &Value, path: &[&str]) -> i64 {
    let mut v = j;
    for p in path {
        v = &v[p];
    }
    v.as_i64().unwrap_or(-1)
}

/// Exit status and accounting; the run's JSON.
fn basics(sheet: &mut Sheet, s: &Scenario, run: &str) -> Value {
    let (j, rows) = (s.json(run), s.client_log(run));
    sheet.expect(&format!("{run}: exit status"), 0, i64::from(s.run_rc(run)));
    check_accounting(sheet, run, &j, &rows);
    sheet.expect(
        &format!("{run}: replies in the log"),
        n(&j, &["packets", "received"]),
        rows.iter().filter(|r| r.status == "ok").count() as i64,
    );
    j
}

/// One outage, its length within `[lo, hi]` ns.
fn one_outage(sheet: &mut Sheet, j: &Value, told: &str, lo: f64, hi: f64) {
    sheet.expect("outages", 1, n(j, &["outages", "count"]));
    sheet.expect(
        "outage, requests = lost",
        n(j, &["packets", "lost"]),
        n(j, &["outages", "longest_packets"]),
    );
    let got = j["outages"]["longest_ms"].as_f64().unwrap_or(-1.0) * 1e6;
    sheet.bounded(
        "outage, time",
        told,
        "",
        Interval {
            lo,
            hi,
            got_lo: got,
            got_hi: got,
            unit: Unit::Ns,
            how: "the window the script timed, ± 0.2 s (clock reads, one reply)".into(),
        },
    );
}

fn restart(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "`kill -KILL` of the reflector mid-run; a new one on the same ports 2 s later. \
         While none listens, B's kernel counts the requests as `Udp NoPorts` (and \
         answers port unreachable); the ones queued on the dead socket vanish with it.",
    );
    let j = basics(sheet, s, "run");
    let sent = n(&j, &["packets", "sent"]);
    let a = |key: &str| s.snmp_delta("before", "after", 'a', key);
    // A's kernel delivered the replies and the client's own loopback
    // probes (what it sent beyond its requests).
    let replies = a("Udp.InDatagrams") - (a("Udp.OutDatagrams") - sent);
    sheet.exact(
        "received = replies A's kernel delivered",
        replies,
        n(&j, &["packets", "received"]),
        "A's `Udp InDatagrams` less the client's own probes",
    );
    let no_ports = s.snmp_delta("before", "after", 'b', "Udp.NoPorts");
    let (kill, ready) = (s.told_f64("kill") * 1e9, s.told_f64("ready") * 1e9);
    // Read once the killed reflector was reaped: only a request sent
    // before then can have been queued on its socket.
    let killed = s.told_f64("killed") * 1e9;
    let rows = s.client_log("run");
    let lost_before_kill = rows
        .iter()
        .filter(|r| r.status == "lost" && r.t1.is_some_and(|t| (t as f64) < killed + 50e6))
        .count() as f64;
    let lost = n(&j, &["packets", "lost"]);
    sheet.bounded(
        "lost beyond B's `Udp NoPorts`",
        "queued on the killed socket",
        &format!("`Udp NoPorts` {no_ports}"),
        Interval {
            lo: 0.0,
            hi: lost_before_kill,
            got_lo: (lost - no_ports) as f64,
            got_hi: (lost - no_ports) as f64,
            unit: Unit::Count,
            how: "no more than the lost requests sent before it was reaped (+50 ms)".into(),
        },
    );
    let lost = n(&j, &["packets", "lost"]);
    sheet.exact(
        "loss direction unknown",
        lost,
        n(&j, &["loss_direction", "unknown"]),
        "the reflector's count restarted: nothing to place them by",
    );
    let outside = rows
        .iter()
        .filter(|r| r.status == "lost")
        .filter(|r| {
            r.t1.is_none_or(|t| (t as f64) < kill - 0.2e9 || (t as f64) > ready + 0.2e9)
        })
        .count() as i64;
    sheet.expect(
        "lost requests sent outside the reflector's absence",
        0,
        outside,
    );
    // It begins by the time the killed one was reaped and ends with the
    // first answer of the new one: after it was started, and before the
    // script saw it ready.
    let restart = s.told_f64("restart") * 1e9;
    one_outage(
        sheet,
        &j,
        &format!(
            "reaped to restarted {}, killed to ready {}",
            ms(restart - killed),
            ms(ready - kill)
        ),
        restart - killed - 0.2e9,
        ready - kill + 0.2e9,
    );
}

fn link_cut(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "`ip link set va down` in the client's host mid-run, `up` 2 s later. The \
         client's sends fail at once (no route): those requests never leave.",
    );
    let j = basics(sheet, s, "run");
    let rows = s.client_log("run");
    let truth = place(&rows, &arrived(&s.server_log("srv"), "stamp", port(&j)));
    check_direction(sheet, "run", &j, &truth);
    let no_route = s.snmp_delta("before", "after", 'a', "Ip.OutNoRoutes");
    sheet.row(
        "sends refused",
        "",
        &format!("`Ip OutNoRoutes` {no_route}"),
        &format!("{} lost", n(&j, &["packets", "lost"])),
        "shown (each refused send is tried twice)",
        true,
    );
    // Each `ip` command is bracketed by clock reads (on a busy host one
    // takes a good part of a second): the link went down between `down`
    // and `downed`, and up between `upping` and `up`.
    let t = |k: &str| s.told_f64(k) * 1e9;
    let (down, downed, upping, up) = (t("down"), t("downed"), t("upping"), t("up"));
    one_outage(
        sheet,
        &j,
        &format!("down to up: {} to {}", ms(upping - downed), ms(up - down)),
        upping - downed - 0.2e9,
        up - down + 0.2e9,
    );
}

fn mtu(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "1400-byte STAMP requests; mid-run a router between the hosts gets a route to \
         B with MTU 1000 (IPv4: the requests carry DF, so it answers \"fragmentation \
         needed\") and then, in a second run, 1280 (IPv6: \"packet too big\"). The \
         client's kernel learns the path MTU and fragments the requests from then on.",
    );
    for (run, key, discards, mtu, frag) in [
        (
            "v4",
            "IcmpMsg.OutType3",
            "Ip.OutDiscards",
            "mtu 1000",
            "Ip.FragCreates",
        ),
        (
            "v6",
            "Icmp6OutPktTooBigs",
            "Ip6OutDiscards",
            "mtu 1280",
            "Ip6FragCreates",
        ),
    ] {
        let j = basics(sheet, s, run);
        let rows = s.client_log(run);
        let truth = place(&rows, &arrived(&s.server_log("srv"), "stamp", port(&j)));
        check_direction(sheet, run, &j, &truth);
        let d = |host, k: &str| s.snmp_delta(&format!("{run}-0"), &format!("{run}-1"), host, k);
        sheet.exact(
            &format!("{run}: lost = the router's ICMP errors + A's discards"),
            d('r', key) + d('a', discards),
            n(&j, &["packets", "lost"]),
            &format!(
                "R's `{key}` {} + A's `{discards}` {} (a request built for the old MTU)",
                d('r', key),
                d('a', discards)
            ),
        );
        let route =
            std::fs::read_to_string(s.dir.join(format!("route-{run}.txt"))).unwrap_or_default();
        let frags = d('a', frag);
        sheet.row(
            &format!("{run}: measured on, fragmented"),
            mtu,
            &format!(
                "A's `{frag}` {frags}; route: {}",
                route.split_whitespace().collect::<Vec<_>>().join(" ")
            ),
            &format!("{} received", n(&j, &["packets", "received"])),
            "the client's kernel learned it and Synapse went on",
            route.contains(mtu) && frags > 0,
        );
    }
}
