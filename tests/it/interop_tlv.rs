//! RFC 8972 STAMP extensions against an independent implementation,
//! stamp-suite 1.0 (crates.io), both ways, open and authenticated: each
//! TLV Synapse speaks, checked against what stamp-suite prints (its JSON
//! output) rather than against Synapse's own idea of it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::Value;
use std::io::Read;
use std::process::{Command, Stdio};

const KEY: &str = "00112233445566778899aabbccddeeff";

/// A stamp-suite reflector on 127.0.0.1 printing JSON; ask it for what it
/// printed with [`Reflector::stop`].
struct Reflector {
    guard: Guard,
    port: u16,
}

impl Reflector {
    fn start(bin: &std::path::Path, extra: &[&str]) -> Self {
        let port = free_udp_port();
        let child = Command::new(bin)
            .args(["-i", "-S", "127.0.0.1", "-o", &port.to_string()])
            .args(["--stateful-reflector", "--output-format", "json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_udp_bound(port);
        Self {
            guard: Guard(child),
            port,
        }
    }

    /// Ctrl-C, then the statistics it printed (its one session's).
    fn stop(mut self) -> Value {
        self.guard.interrupt();
        let mut text = String::new();
        self.guard
            .0
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let stats: Value = text
            .lines()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no statistics from stamp-suite: {text}"));
        assert_eq!(
            stats["sessions"].as_array().map(Vec::len),
            Some(1),
            "{stats}"
        );
        stats["sessions"][0].clone()
    }
}

fn synapse_client(port: u16, extra: &[&str]) -> Value {
    success_json(
        &synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--stamp"])
            .args([
                "--packets",
                "300",
                "--warmup",
                "10",
                "--json",
                "--threshold",
                "1s",
            ])
            .args(extra)
            .output()
            .unwrap(),
    )
}

/// Synapse's sender with every TLV to stamp-suite's reflector, told its
/// clock is kept by `sync`: the counters, addresses and ports Synapse
/// reads back are the ones stamp-suite says it saw, and so is the clock.
fn every_tlv_to_stamp_suite(bin: &std::path::Path, sync: &str, auth: bool) -> (Value, Value) {
    let key = key_file(&format!("{KEY}\n"), 0o600);
    let mut extra = vec!["--clock-sync-source", sync];
    let mut ours = vec!["--tlv", "all", "--dscp", "AF41", "--ecn", "ect1"];
    if auth {
        extra.extend(["-A", "A", "--hmac-key", KEY]);
        ours.extend(["--hmac-key-file", key.path().to_str().unwrap()]);
    }
    let r = Reflector::start(bin, &extra);
    let j = synapse_client(r.port, &ours);
    (j, r.stop())
}

fn check_every_tlv(j: &Value, session: &Value, sync: &str) {
    let e = &j["stamp_extensions"];
    let total = j["packets"]["received"].as_u64().unwrap() + 10;
    assert_eq!(e["replies"], total, "{e}");
    assert_eq!(
        (
            e["unrecognized"].as_u64(),
            e["malformed"].as_u64(),
            e["integrity_failed"].as_u64()
        ),
        (Some(0), Some(0), Some(0)),
        "{e}"
    );
    // Direct Measurement: its counters as it printed them.
    let d = &e["direct"];
    assert_eq!(
        d["reflector_received"], session["packets_received"],
        "{d} {session}"
    );
    assert_eq!(
        d["reflector_transmitted"].as_u64().unwrap() + 1,
        session["packets_transmitted"].as_u64().unwrap(),
        "before the last"
    );
    assert_eq!(
        (d["forward_lost"].as_u64(), d["backward_lost"].as_u64()),
        (Some(0), Some(0))
    );
    // Location: where it saw the requests come from and go to.
    let loc = &e["location"];
    assert_eq!(loc["source_seen"], session["client"], "{loc} {session}");
    assert_eq!(loc["destination_seen"], session["local"], "{loc}");
    assert_eq!(
        loc["source_seen"], j["config"]["local"],
        "no NAT on loopback"
    );
    // Timestamp Information: the source it was told.
    let clock = &e["timestamp_info"];
    assert_eq!(
        (clock["t2_sync"].as_str(), clock["t3_sync"].as_str()),
        (Some(sync), Some(sync)),
        "{clock}"
    );
    // Follow-Up: every answer but the first followed up.
    let fu = &e["follow_up"];
    assert_eq!(
        (fu["matched"].as_u64(), fu["none_yet"].as_u64()),
        (Some(total - 1), Some(1)),
        "{fu}"
    );
    // Class of service: it reported the request's marks, and marked its
    // reply as the TLV asked (DSCP1 AF41, EC1 ECT(1)).
    let received = j["packets"]["received"].clone();
    for leg in ["forward", "backward"] {
        let l = &j["class_of_service"][leg];
        assert_eq!(l["dscp_received"][0]["name"], "AF41", "{leg}: {l}");
        assert_eq!(l["dscp_received"][0]["count"], received, "{leg}");
        assert_eq!(l["ecn_received"]["ect1"], received, "{leg}");
    }
    assert_eq!(
        j["class_of_service"]["backward"]["dscp_sent"][0]["name"], "AF41",
        "as it said"
    );
}

#[test]
fn the_synapse_sender_reads_every_tlv_of_stamp_suites_reflector() {
    let Some(bin) = tool("stamp-suite", "the_synapse_sender_reads_every_tlv") else {
        return;
    };
    for (sync, shown) in [("ntp", "ntp"), ("ptp", "ptp"), ("local", "local")] {
        let (j, session) = every_tlv_to_stamp_suite(&bin, sync, false);
        check_every_tlv(&j, &session, shown);
        assert_eq!(j["stamp_extensions"]["hmac_verified"], 0);
    }
}

#[test]
fn the_authenticated_synapse_sender_reads_every_tlv_under_stamp_suites_hmac_tlv() {
    let Some(bin) = tool(
        "stamp-suite",
        "the_authenticated_synapse_sender_reads_every_tlv",
    ) else {
        return;
    };
    let (j, session) = every_tlv_to_stamp_suite(&bin, "ntp", true);
    check_every_tlv(&j, &session, "ntp");
    let e = &j["stamp_extensions"];
    assert_eq!(
        e["hmac_verified"], e["replies"],
        "each reply's HMAC TLV verified: {e}"
    );
    assert_eq!(e["hmac_failed"], 0);
    assert_eq!(j["unauthenticated_replies"], 0);
}

/// `synapse server` (STAMP on its own port), and stamp-suite's sender run
/// against it with `args`: what stamp-suite printed (its summary, and its
/// per-packet lines), and what the server printed.
fn stamp_suite_against_synapse(
    bin: &std::path::Path,
    server_args: &[&str],
    args: &[&str],
) -> (Value, String, String) {
    let (echo, stamp) = (free_udp_port(), free_udp_port());
    let server = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
        .args(["--stamp-port", &stamp.to_string()])
        .args(server_args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, stdout, _) = wait_until_ready(server);
    let out = Command::new(bin)
        .args(["-r", "127.0.0.1", "-p", &stamp.to_string()])
        .args(args)
        .args(["-d", "10", "--output-format", "json", "-R"])
        .output()
        .unwrap();
    let (printed, _) = Server { guard, stdout }.interrupt_and_collect();
    let text = String::from_utf8_lossy(&out.stdout);
    let summary = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary from stamp-suite: {text}"));
    (
        summary,
        String::from_utf8_lossy(&out.stderr).into(),
        printed,
    )
}

const EVERY_TLV: [&str; 11] = [
    "--cos",
    "--dscp",
    "46",
    "--ecn",
    "2",
    "--timestamp-info",
    "--direct-measurement",
    "--location",
    "--follow-up-telemetry",
    "--extra-padding",
    "8",
];

/// stamp-suite's checks of the TLVs Synapse's reflector answered: every
/// type processed (no U, M or I), its counters those of the requests it
/// sent and the server printed, every answer but the first followed up
/// with a send time that puts the reply on the wire a little before it
/// arrived (stamp-suite's reverse delay from it).
fn check_synapse_answers(s: &Value, printed: &str, n: u64) {
    assert_eq!(s["packets_received"], n, "{s}");
    let m = &s["measurements"];
    let v = &m["tlv_validation"];
    for kind in ["1", "2", "3", "4", "5", "7"] {
        let t = &v["by_type"][kind];
        assert_eq!(t["observed"], n, "type {kind}: {v}");
        for flag in ["unrecognized", "malformed", "integrity_failed"] {
            assert_eq!(t["flags"][flag], 0, "type {kind} {flag}: {v}");
        }
    }
    let d = &m["direct_measurement"]["latest_transmit"];
    assert_eq!(
        (
            d["sender_tx"].as_u64(),
            d["reflector_rx"].as_u64(),
            d["reflector_tx"].as_u64()
        ),
        (Some(n), Some(n), Some(n - 1)),
        "{m}"
    );
    assert!(printed.contains(&format!("{n} packets")), "{printed}");
    assert!(
        printed.contains(&format!("{} answers carried a follow-up", n - 1)),
        "{printed}"
    );
    let fu = &m["follow_up"];
    assert_eq!(
        (fu["matched"].as_u64(), fu["unavailable"].as_u64()),
        (Some(n - 1), Some(1)),
        "{fu}"
    );
    assert_eq!(
        (fu["unmatched"].as_u64(), fu["ambiguous"].as_u64()),
        (Some(0), Some(0)),
        "{fu}"
    );
    let back = &fu["reverse_delay"];
    let (min, max) = (
        back["min_ms"].as_f64().unwrap(),
        back["max_ms"].as_f64().unwrap(),
    );
    let rtt_max = s["max_rtt_ms"].as_f64().unwrap();
    assert!(
        min > 0.0 && max < rtt_max,
        "T4 − T3 from the follow-up: {back}, RTT max {rtt_max}"
    );
}

#[test]
fn stamp_suites_sender_gets_every_tlv_answered_by_the_synapse_reflector() {
    let Some(bin) = tool("stamp-suite", "stamp_suites_sender_gets_every_tlv_answered") else {
        return;
    };
    let mut args = EVERY_TLV.to_vec();
    args.extend(["-c", "50"]);
    let (s, per_packet, printed) = stamp_suite_against_synapse(&bin, &[], &args);
    check_synapse_answers(&s, &printed, 50);
    assert_eq!(
        s["measurements"]["tlv_validation"]["hmac"]["not_requested"],
        50
    );
    // Sent ECT(0), arrived ECT(0): the reflector's report says no CE.
    assert!(!per_packet.contains("CoS:CE"), "{per_packet}");
    assert_eq!(s["congestion"]["ce_replies"], 0);
}

#[test]
fn stamp_suites_authenticated_sender_gets_every_tlv_answered_under_hmac() {
    let Some(bin) = tool(
        "stamp-suite",
        "stamp_suites_authenticated_sender_gets_every_tlv",
    ) else {
        return;
    };
    let key = key_file(&format!("{KEY}\n"), 0o600);
    let server = ["--hmac-key-file", key.path().to_str().unwrap()];
    let mut args = EVERY_TLV.to_vec();
    args.extend(["-c", "50", "-A", "A", "--hmac-key", KEY]);
    let (s, _, printed) = stamp_suite_against_synapse(&bin, &server, &args);
    check_synapse_answers(&s, &printed, 50);
    let hmac = &s["measurements"]["tlv_validation"]["hmac"];
    assert_eq!(
        (hmac["verified"].as_u64(), hmac["failed"].as_u64()),
        (Some(50), Some(0)),
        "{hmac}"
    );
}

/// A TLV whose length claims more than the datagram holds (stamp-suite's
/// diagnostic `--malformed bad-length`): Synapse answers it with M, which
/// stamp-suite counts, and counts it itself.
#[test]
fn a_tlv_running_past_the_datagram_comes_back_malformed_to_stamp_suite() {
    let Some(bin) = tool("stamp-suite", "a_tlv_running_past_the_datagram") else {
        return;
    };
    let args = ["--cos", "--malformed", "bad-length", "-c", "20"];
    let (s, _, printed) = stamp_suite_against_synapse(&bin, &[], &args);
    assert_eq!(s["packets_received"], 20, "answered all the same: {s}");
    let flags = &s["measurements"]["tlv_validation"]["flags"];
    assert_eq!(flags["malformed"], 20, "{flags}");
    assert_eq!(
        s["measurements"]["tlv_validation"]["by_type"]["4"]["flags"]["malformed"], 0,
        "the CoS TLV before it was answered"
    );
    assert!(
        printed.contains("0 unrecognized, 20 malformed"),
        "{printed}"
    );
}
