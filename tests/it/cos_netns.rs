//! Class of service per leg through a real router: three network
//! namespaces (client A, router R, reflector B), the router re-marking the
//! DSCP of one leg (iptables `DSCP --set-dscp-class`) and marking CE on the
//! other's ECN-capable packets (iptables `ECN --ecn-ip-ect 3`, as an AQM
//! would), in its FORWARD chain: the network does it, not either end. Each
//! change must be put on the leg where it happened, exactly: every packet
//! of that leg, and none of the other's. Root, `ip` and `iptables` (with
//! the `DSCP` and `ECN` targets) are needed; without them the tests say so
//! and pass.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::routed::{A_ADDR, B_ADDR, Routed};
use crate::common::*;
use serde_json::Value;
use std::process::{Command, Stdio};

/// Whether the test can run here: root, tools, and the iptables targets.
fn can_route(test: &str) -> bool {
    if !netns::usable(test) {
        return false;
    }
    let targets = std::fs::read_to_string("/proc/net/ip_tables_targets").unwrap_or_default();
    let have = |t: &str| targets.lines().any(|l| l == t);
    if !(have("DSCP") && have("ECN")) {
        // The modules may load on first use: try one rule in a namespace.
        let probe = Routed::new();
        let ok = Command::new("ip")
            .args([
                "netns", "exec", &probe.r, "iptables", "-t", "mangle", "-A", "FORWARD",
            ])
            .args(["-p", "udp", "-j", "ECN", "--ecn-ip-ect", "3"])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            announce::skip(test, "iptables has no ECN target here (xt_ECN)");
            return false;
        }
    }
    true
}

fn leg<'a>(j: &'a Value, leg: &str) -> &'a Value {
    &j["class_of_service"][leg]
}

/// One leg's arrivals: every reply, all with `dscp` and ECN `ecn`; how many
/// were re-marked and how many marked CE on the way.
fn assert_leg(j: &Value, name: &str, dscp: &str, ecn: &str, remarked: u64, ce: u64) {
    let l = leg(j, name);
    let n = j["packets"]["received"].as_u64().unwrap();
    assert_eq!(n, 200, "{j}");
    assert_eq!(l["reported"], n, "{name}: {l}");
    assert_eq!(
        l["dscp_received"].as_array().unwrap().len(),
        1,
        "{name}: {l}"
    );
    assert_eq!(l["dscp_received"][0]["name"], dscp, "{name}: {l}");
    assert_eq!(l["dscp_received"][0]["count"], n, "{name}");
    assert_eq!(l["ecn_received"][ecn], n, "{name}: {l}");
    assert_eq!(l["remarked"], remarked, "{name}: {l}");
    assert_eq!(
        (l["ce"].as_u64(), l["ce_on_path"].as_u64()),
        (Some(ce), Some(ce)),
        "{name}: {l}"
    );
}

/// The router re-marks the requests EF → AF11 and congests the replies:
/// the forward leg is re-marked on every packet and has no CE, the
/// backward leg keeps EF and is CE on every packet.
#[test]
fn a_remarked_forward_leg_and_a_congested_backward_leg_are_told_apart() {
    if !can_route("a_remarked_forward_leg_and_a_congested_backward_leg") {
        return;
    }
    let t = Routed::new();
    t.remark("cosra", "AF11");
    t.congest("cosrb");
    let server = t.server();
    let args = [
        "--stamp", "--dscp", "EF", "--ecn", "ect0", "--tlv", "location",
    ];
    let j = t.client(&format!("{B_ADDR}:8862"), &args);
    assert_leg(&j, "forward", "AF11", "ect0", 200, 0);
    assert_leg(&j, "backward", "EF", "ce", 0, 200);
    assert_eq!(
        leg(&j, "backward")["dscp_sent"][0]["name"],
        "EF",
        "the reflector marked it EF"
    );
    // A router, not a NAT: the reflector saw this host's own address.
    let loc = &j["stamp_extensions"]["location"];
    let seen = loc["source_seen"].as_str().unwrap();
    assert!(seen.starts_with(&format!("{A_ADDR}:")), "{loc}");
    assert_eq!(loc["source_translated"], false, "{loc}");
    drop(server);
}

/// The mirror image: the requests are congested, the replies re-marked
/// EF → CS1.
#[test]
fn a_congested_forward_leg_and_a_remarked_backward_leg_are_told_apart() {
    if !can_route("a_congested_forward_leg_and_a_remarked_backward_leg") {
        return;
    }
    let t = Routed::new();
    t.congest("cosra");
    t.remark("cosrb", "CS1");
    let server = t.server();
    let j = t.client(
        &format!("{B_ADDR}:8862"),
        &["--stamp", "--dscp", "EF", "--ecn", "ect0"],
    );
    assert_leg(&j, "forward", "EF", "ce", 0, 200);
    // The reply is marked as the request asked (EC1 ECT(0)): the router
    // found it ECN-capable and left its ECN alone, only its DSCP changed.
    assert_leg(&j, "backward", "CS1", "ect0", 200, 0);
    // The text report says the same, leg by leg.
    let out = t
        .synapse_in(&t.a)
        .args([
            "client",
            &format!("{B_ADDR}:8862"),
            "--no-ui",
            "--packets",
            "50",
        ])
        .args([
            "--stamp",
            "--dscp",
            "EF",
            "--ecn",
            "ect0",
            "--threshold",
            "1s",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let forward = text
        .split("→ forward")
        .nth(1)
        .unwrap()
        .split("← backward")
        .next()
        .unwrap();
    assert!(forward.contains("arrived: EF ×50 (0 re-marked)"), "{text}");
    assert!(
        forward.contains("CE 50, 50 set on this leg's path"),
        "{text}"
    );
    let backward = text.split("← backward").nth(1).unwrap();
    assert!(
        backward.contains("arrived: CS1 ×50 (50 re-marked)"),
        "{text}"
    );
    assert!(backward.contains("CE 0"), "{text}");
    drop(server);
}

/// stamp-suite's sender through the same router to Synapse's reflector:
/// the forward leg congested, so Synapse's Class of Service TLV says CE
/// on every answer, which stamp-suite prints per packet (`CoS:CE`, the
/// forward path's mark); the backward leg re-marked, which it cannot see,
/// and no CE there. Then the other way round: only the replies congested,
/// and stamp-suite sees CE on them (its reply ECN), never in the TLV.
#[test]
fn stamp_suite_reads_the_forward_leg_from_synapses_cos_tlv() {
    if !can_route("stamp_suite_reads_the_forward_leg") {
        return;
    }
    let Some(bin) = tool("stamp-suite", "stamp_suite_reads_the_forward_leg") else {
        return;
    };
    for forward in [true, false] {
        let t = Routed::new();
        t.congest(if forward { "cosra" } else { "cosrb" });
        let server = t.server();
        let out = Command::new("ip")
            .args(["netns", "exec", &t.a])
            .arg(&bin)
            .args(["-r", B_ADDR, "-p", "8862", "-c", "30", "-d", "10"])
            .args([
                "--cos",
                "--dscp",
                "46",
                "--ecn",
                "2",
                "--ecn-max-delay",
                "10",
            ])
            .args(["--output-format", "json", "-R"])
            .output()
            .unwrap();
        drop(server);
        let per_packet = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = per_packet
            .lines()
            .filter(|l| l.starts_with("seq="))
            .collect();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let s: Value = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "summary")
            .unwrap_or_else(|| panic!("{stdout}"));
        assert_eq!(s["packets_received"], 30, "{s}");
        assert_eq!(lines.len(), 30, "{per_packet}");
        let marked = lines.iter().filter(|l| l.contains("CoS:CE")).count();
        assert_eq!(
            marked,
            if forward { 30 } else { 0 },
            "forward={forward}: {per_packet}"
        );
        assert_eq!(s["congestion"]["ce_replies"], 30, "CE on either leg: {s}");
    }
}

/// Synapse's sender to stamp-suite's reflector through the router, the
/// requests re-marked AF41 → CS2 and the replies congested: stamp-suite's
/// TLV reports the re-marked DSCP, and the CE is on the backward leg.
#[test]
fn synapse_reads_stamp_suites_cos_tlv_per_leg() {
    if !can_route("synapse_reads_stamp_suites_cos_tlv_per_leg") {
        return;
    }
    let Some(bin) = tool("stamp-suite", "synapse_reads_stamp_suites_cos_tlv_per_leg") else {
        return;
    };
    let t = Routed::new();
    t.remark("cosra", "CS2");
    t.congest("cosrb");
    let child = Command::new("ip")
        .args(["netns", "exec", &t.b])
        .arg(&bin)
        .args(["-i", "-S", B_ADDR, "-o", "8862", "--stateful-reflector"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _reflector = Guard(child);
    t.wait_udp_bound(&t.b, 8862);
    let j = t.client(
        &format!("{B_ADDR}:8862"),
        &["--stamp", "--dscp", "AF41", "--ecn", "ect0"],
    );
    assert_leg(&j, "forward", "CS2", "ect0", 200, 0);
    assert_leg(&j, "backward", "AF41", "ce", 0, 200);
}

/// Plain echo: only the reply leg can be read, by this host; the forward
/// leg is "not reported", whatever the router did to it.
#[test]
fn plain_echo_reports_the_reply_leg_and_says_the_request_leg_is_unknown() {
    if !can_route("plain_echo_reports_the_reply_leg") {
        return;
    }
    let t = Routed::new();
    t.remark("cosra", "AF11");
    t.remark("cosrb", "CS3");
    let server = t.server();
    let j = t.client(&format!("{B_ADDR}:7007"), &["--dscp", "EF"]);
    let f = leg(&j, "forward");
    assert_eq!(
        (f["reported"].as_u64(), f["not_reported"].as_u64()),
        (Some(0), Some(200)),
        "{f}"
    );
    let b = leg(&j, "backward");
    assert_eq!(b["dscp_received"][0]["name"], "CS3", "{b}");
    assert_eq!(
        b["remarked"],
        Value::Null,
        "what the echo server sent is unknown"
    );
    drop(server);
}

/// TCP: `--dscp` marks every segment the client sends, the handshake's
/// too, over one kept connection and with one per transaction; the
/// router counts them (a stream's segments have no TOS to read back, so
/// the report has no per-leg figures).
#[test]
fn a_tcp_connection_carries_its_dscp_on_every_segment() {
    if !netns::usable("a_tcp_connection_carries_its_dscp_on_every_segment") {
        return;
    }
    let t = Routed::new();
    let server = t.server();
    for (extra, least) in [(None, 206), (Some("--connect-each"), 3 * 205)] {
        t.run(&t.r.clone(), "iptables", &["-t", "mangle", "-F", "FORWARD"]);
        for negate in [false, true] {
            let mut rule = vec!["-t", "mangle", "-A", "FORWARD", "-i", "cosra", "-p", "tcp"];
            rule.extend(["-m", "dscp"]);
            if negate {
                rule.push("!");
            }
            rule.extend(["--dscp-class", "EF"]);
            t.run(&t.r.clone(), "iptables", &rule);
        }
        let mut args = vec!["--tcp", "--dscp", "EF"];
        args.extend(extra);
        let j = t.client(&format!("{B_ADDR}:7007"), &args);
        assert_eq!(j["packets"]["received"], 200, "{extra:?}: {j}");
        let listed = Command::new("ip")
            .args(["netns", "exec", &t.r, "iptables", "-t", "mangle"])
            .args(["-L", "FORWARD", "-v", "-x", "-n"])
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&listed.stdout).to_string();
        // Each rule's line starts with its packet count.
        let packets: Vec<u64> = listed
            .lines()
            .filter(|l| l.contains("DSCP match"))
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(packets.len(), 2, "{listed}");
        // 205 requests (warm-up included) and the handshake: one, or with
        // a connection each, three segments (SYN, request, FIN) apiece.
        assert!(packets[0] >= least, "{extra:?}: marked EF: {listed}");
        assert_eq!(packets[1], 0, "{extra:?}: every segment marked: {listed}");
    }
    drop(server);
}
