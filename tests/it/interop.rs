//! Synapse against independent STAMP implementations (stamp-suite, from
//! crates.io): its sender against their reflector, stateless and stateful,
//! and their sender against its reflector.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::process::{Command, Stdio};

/// A stamp-suite reflector on 127.0.0.1, killed when dropped.
fn stamp_suite_reflector(bin: &std::path::Path, extra: &[&str]) -> (Guard, u16) {
    let port = free_udp_port();
    let child = Command::new(bin)
        .args(["-i", "-S", "127.0.0.1", "-o", &port.to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_udp_bound(port);
    (Guard(child), port)
}

fn paced_stamp_run(port: u16) -> serde_json::Value {
    success_json(
        &synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--stamp", "--json"])
            .args([
                "--interval",
                "1ms",
                "--packets",
                "1000",
                "--threshold",
                "1s",
            ])
            .output()
            .unwrap(),
    )
}

#[test]
fn paced_stamp_against_stamp_suite_tells_stateless_from_stateful() {
    let Some(bin) = tool("stamp-suite", "paced_stamp_against_stamp_suite") else {
        return;
    };
    let (_stateless, port) = stamp_suite_reflector(&bin, &[]);
    let j = paced_stamp_run(port);
    assert_eq!(j["packets"]["received"], 1000, "{j}");
    assert_eq!(j["loss_direction"]["reflector"], "stateless", "{j}");
    assert!(
        j["one_way_ns"]["application"]["forward"]["p50"].is_i64(),
        "{j}"
    );
    let (_stateful, port) = stamp_suite_reflector(&bin, &["--stateful-reflector"]);
    let j = paced_stamp_run(port);
    assert_eq!(j["packets"]["received"], 1000, "{j}");
    assert_eq!(j["loss_direction"]["reflector"], "stateful", "{j}");
}

/// Synapse's reflector (STAMP on its own port), and stamp-suite's sender
/// run against it with `args`: the summary it printed.
fn stamp_suite_against_synapse(bin: &std::path::Path, args: &[&str]) -> serde_json::Value {
    stamp_suite_against(bin, &[], args)
}

/// [`stamp_suite_against_synapse`], the server started with `server_args`.
fn stamp_suite_against(
    bin: &std::path::Path,
    server_args: &[&str],
    args: &[&str],
) -> serde_json::Value {
    let (echo, stamp) = (free_udp_port(), free_udp_port());
    let server = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
        .args(["--stamp-port", &stamp.to_string()])
        .args(server_args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (_server, _out, _) = wait_until_ready(server);
    let out = Command::new(bin)
        .args(["-r", "127.0.0.1", "-p", &stamp.to_string()])
        .args(args)
        .args(["-d", "5", "--output-format", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary from stamp-suite: {text}"))
}

#[test]
fn stamp_suite_measures_the_stateful_synapse_reflector() {
    let Some(bin) = tool("stamp-suite", "stamp_suite_measures_the_synapse_reflector") else {
        return;
    };
    let summary = stamp_suite_against_synapse(&bin, &["-c", "100"]);
    assert_eq!(summary["packets_sent"], 100, "{summary}");
    assert_eq!(summary["packets_received"], 100, "{summary}");
    // Our own count for its session, 0..=99: a stateful reflector.
    assert_eq!(
        summary["measurements"]["last_reflector_sequence"], 99,
        "{summary}"
    );
}

/// RFC 8972 §3: stamp-suite sends an SSID and stops at the first answer
/// that does not carry it back; every answer from Synapse's reflector must.
#[test]
fn stamp_suite_gets_its_ssid_back_from_the_synapse_reflector() {
    let Some(bin) = tool("stamp-suite", "stamp_suite_gets_its_ssid_back") else {
        return;
    };
    let args = ["--ssid", "4660", "--on-zero-ssid", "stop", "-c", "50"];
    let summary = stamp_suite_against_synapse(&bin, &args);
    assert_eq!(summary["packets_sent"], 50, "{summary}");
    assert_eq!(summary["packets_received"], 50, "{summary}");
}

/// Synapse's `--ssid` against stamp-suite's reflector: the SSID goes out in
/// octets 14-15, comes back copied, and every reply counts.
#[test]
fn the_synapse_sender_with_an_ssid_is_answered_by_stamp_suite() {
    let Some(bin) = tool("stamp-suite", "the_synapse_sender_with_an_ssid") else {
        return;
    };
    let (_reflector, port) = stamp_suite_reflector(&bin, &[]);
    let j = success_json(
        &synapse()
            .args([
                "client",
                &format!("127.0.0.1:{port}"),
                "--stamp",
                "--ssid",
                "4660",
            ])
            .args(["--json", "--packets", "500", "--warmup", "10"])
            .output()
            .unwrap(),
    );
    assert_eq!(j["packets"]["received"], 500, "{j}");
    assert_eq!(j["packets"]["stray"], 0, "{j}");
}

const KEY: &str = "00112233445566778899aabbccddeeff";

/// Authenticated STAMP (RFC 8762 §4.2.2): stamp-suite's sender with the
/// same key is answered in full (and checks our HMACs); with another key,
/// or none, it gets nothing.
#[test]
fn stamp_suite_authenticated_sender_against_the_synapse_reflector() {
    let Some(bin) = tool("stamp-suite", "stamp_suite_authenticated_sender") else {
        return;
    };
    let key = key_file(&format!("{KEY}\n"), 0o600);
    let server = ["--hmac-key-file", key.path().to_str().unwrap()];
    let signed = ["-A", "A", "--hmac-key", KEY, "-c", "50"];
    let summary = stamp_suite_against(&bin, &server, &signed);
    assert_eq!(summary["packets_sent"], 50, "{summary}");
    assert_eq!(summary["packets_received"], 50, "{summary}");
    let other = "ff112233445566778899aabbccddeeff";
    let forged = ["-A", "A", "--hmac-key", other, "-c", "10", "--timeout", "1"];
    let summary = stamp_suite_against(&bin, &server, &forged);
    assert_eq!(summary["packets_received"], 0, "another key: {summary}");
    let plain = stamp_suite_against(&bin, &server, &["-c", "10", "--timeout", "1"]);
    assert_eq!(plain["packets_received"], 0, "no key: {plain}");
}

/// Synapse's authenticated sender against stamp-suite's authenticated
/// reflector: every reply verifies and is measured.
#[test]
fn the_authenticated_synapse_sender_is_answered_by_stamp_suite() {
    let Some(bin) = tool("stamp-suite", "the_authenticated_synapse_sender") else {
        return;
    };
    let (_reflector, port) = stamp_suite_reflector(&bin, &["-A", "A", "--hmac-key", KEY]);
    let key = key_file(&format!("{KEY}\n"), 0o600);
    let j = success_json(
        &synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--stamp"])
            .args(["--hmac-key-file", key.path().to_str().unwrap()])
            .args(["--json", "--packets", "500", "--warmup", "10"])
            .output()
            .unwrap(),
    );
    assert_eq!(j["packets"]["received"], 500, "{j}");
    assert_eq!(j["unauthenticated_replies"], 0, "{j}");
    assert_eq!(j["config"]["size"], 112, "{j}");
}

/// One host, one clock: every one-way figure Synapse calls trusted holds
/// the truth (a delay between two points on one clock is never below
/// zero, and the two legs between the kernel's cut points fit in the
/// round trip), and the clocks' offset, whose truth is 0, is within its
/// bound; no drift is claimed.
fn check_one_clock(j: &serde_json::Value) {
    let w = &j["one_way_ns"];
    assert_eq!(w["same_clock"], true, "{w}");
    let rtt_max = j["rtt_ns"]["max"].as_i64().unwrap();
    let mut trusted = 0;
    for cut in ["kernel", "application"] {
        for leg in ["forward", "backward"] {
            let d = &w[cut][leg];
            assert!(d["samples"].as_u64().unwrap() > 0, "{cut} {leg}: {w}");
            if d["trusted"] == true {
                trusted += 1;
                let (min, max) = (d["min"].as_i64().unwrap(), d["max"].as_i64().unwrap());
                assert!(
                    min >= 0 && max <= rtt_max,
                    "{cut} {leg} out of [0, RTT]: {d}"
                );
            }
        }
        let o = &w[cut]["clocks"];
        let (offset, bound) = (
            o["offset_ns"].as_i64().unwrap(),
            o["bound_ns"].as_i64().unwrap(),
        );
        assert!(
            offset.abs() <= bound,
            "{cut}: truth 0 outside {offset} ± {bound}"
        );
        assert_eq!(o["drift"]["resolved"], false, "{cut}: {o}");
    }
    assert_eq!(trusted, 4, "one clock: no clock error: {w}");
}

fn paced_stamp(port: u16, extra: &[&str]) -> serde_json::Value {
    success_json(
        &synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--stamp", "--json"])
            .args([
                "--interval",
                "1ms",
                "--packets",
                "2000",
                "--threshold",
                "1s",
            ])
            .args(extra)
            .output()
            .unwrap(),
    )
}

/// stamp-suite's reflector writing PTP timestamps (its Z bit set): Synapse
/// reads T2 and T3 by that bit, whichever format its own T1 is in.
#[test]
fn synapse_reads_the_ptp_timestamps_of_stamp_suites_reflector() {
    let Some(bin) = tool("stamp-suite", "synapse_reads_the_ptp_timestamps") else {
        return;
    };
    let (_reflector, port) = stamp_suite_reflector(&bin, &["-K", "PTP"]);
    for ours in ["ntp", "ptp"] {
        let j = paced_stamp(port, &["--stamp-format", ours]);
        assert_eq!(j["packets"]["received"], 2000, "{j}");
        check_one_clock(&j);
    }
}

/// Synapse's reflector writing PTP timestamps, read by stamp-suite's
/// sender by their Z bit (its one-way delays, on one host: above zero and
/// within the round trip); and by Synapse's own sender.
#[test]
fn the_synapse_reflector_writes_ptp_timestamps_for_stamp_suite_and_itself() {
    let Some(bin) = tool("stamp-suite", "the_synapse_reflector_writes_ptp") else {
        return;
    };
    let server = ["--stamp-format", "ptp"];
    let synced = synapse_engine::protocol::clock_state::ClockState::of_this_host().synchronized;
    for theirs in ["PTP", "NTP"] {
        let all = stamp_suite_against(&bin, &server, &["-K", theirs, "-c", "200"]);
        assert_eq!(all["packets_received"], 200, "{all}");
        let owd = &all["owd"];
        let r = &owd["clock_quality"]["last_reflector"];
        assert_eq!(r["format"], "PTP", "the Z bit: {owd}");
        assert_eq!(r["synchronized"], synced, "the S bit: {owd}");
        if !synced {
            assert_eq!(
                (r["scale"].as_u64(), r["multiplier"].as_u64()),
                (Some(63), Some(255))
            );
        }
        let rtt_max = all["measurements"]["reply_rtt"]["max_ms"].as_f64().unwrap();
        for leg in ["forward", "reverse"] {
            let (min, max) = (
                owd[format!("{leg}_min_ms")].as_f64().unwrap(),
                owd[format!("{leg}_max_ms")].as_f64().unwrap(),
            );
            assert!(min > 0.0 && max < rtt_max, "{theirs} {leg}: {owd}");
        }
    }
    let (echo, stamp) = (free_udp_port(), free_udp_port());
    let child = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
        .args(["--stamp-port", &stamp.to_string()])
        .args(server)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (_server, _out, _) = wait_until_ready(child);
    check_one_clock(&paced_stamp(stamp, &["--tlv", "follow-up"]));
}
