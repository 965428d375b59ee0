//! Kernel timestamps and the round-trip split through the real binary: on
//! loopback, and between two network namespaces joined by a veth pair that
//! the test creates and removes (root, as CI has). Every packet of the
//! per-packet log is checked: stamps present, in order, and the segments
//! adding up to the RTT.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::netns::{B_ADDR, Namespaces};
use crate::common::*;
use std::process::{Command, Stdio};

const HEADER: &str = "SEQ,STATUS,T1_SW,T1_SCHED,T1_DRV,T1_HW,T2_HW,T2_SW,T3_SW,T3_HW,T4_HW,T4_DRV,T4_SW,RTT,SCHED,REFLECTOR_SEQ,T3_DRV,FWD_DSCP,FWD_ECN,REV_DSCP,REV_ECN,T1_ACK,ACK_ON_REPLY,T0_SW,CONNECTED_SW,T1_WIRE,REFLECTOR_ERROR,CLIENT_ERROR,PATH_ERROR,PATH_ERROR_FROM";

/// The server's `--log` header.
const SERVER_HEADER: &str =
    "PROTO,PEER,SEQ,T2_HW,T2_DRV,T2_SW,T3_SW,T3_SCHED,T3_DRV,T3_HW,RESPONSE,RESPONSE_HW";

/// One CSV row, by column name.
struct Row {
    header: &'static str,
    fields: Vec<String>,
}

fn ns(field: &str) -> Option<u64> {
    if field.is_empty() {
        return None;
    }
    match field.split_once('.') {
        Some((s, n)) => {
            assert_eq!(n.len(), 9, "nanoseconds are 9 digits: {field}");
            Some(s.parse::<u64>().unwrap() * 1_000_000_000 + n.parse::<u64>().unwrap())
        }
        None => Some(field.parse().unwrap()),
    }
}

impl Row {
    fn text(&self, column: &str) -> &str {
        let i = self.header.split(',').position(|c| c == column).unwrap();
        &self.fields[i]
    }
    fn get(&self, column: &str) -> Option<u64> {
        ns(self.text(column))
    }
    fn need(&self, column: &str) -> u64 {
        self.get(column)
            .unwrap_or_else(|| panic!("packet {:?}: no {column}", self.get("SEQ")))
    }
}

fn read_csv(path: &std::path::Path, header: &'static str) -> Vec<Row> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header));
    lines
        .map(|l| {
            let fields: Vec<String> = l.split(',').map(str::to_string).collect();
            assert_eq!(fields.len(), header.split(',').count(), "{l}");
            Row { header, fields }
        })
        .collect()
}

fn read_log(path: &std::path::Path) -> Vec<Row> {
    read_csv(path, HEADER)
}

/// Checks every logged packet: all software points there and ordered, the
/// reflector's T2 ≤ T3 with STAMP, no hardware points, and the realtime
/// span the segments partition equal to the monotonic RTT to the
/// nanosecond.
fn check_log(rows: &[Row], packets: usize, stamp: bool) {
    assert_eq!(rows.len(), packets, "one row per measured packet");
    for r in rows {
        assert_eq!(r.text("STATUS"), "ok", "packet {:?}", r.get("SEQ"));
        let rtt = r.need("RTT");
        let t1 = r.need("T1_SW");
        let sched = r.need("T1_SCHED");
        let drv = r.need("T1_DRV");
        let rx = r.need("T4_DRV");
        let t4 = r.need("T4_SW");
        assert!(
            t1 <= sched && sched <= drv && drv <= rx && rx <= t4,
            "out of order: {t1} {sched} {drv} {rx} {t4}"
        );
        for hw in ["T1_HW", "T2_HW", "T3_HW", "T4_HW"] {
            assert_eq!(r.get(hw), None, "no NIC clock here");
        }
        if stamp {
            let (t2, t3) = (r.need("T2_SW"), r.need("T3_SW"));
            assert!(t2 <= t3, "reflector stamps out of order: {t2} {t3}");
            assert!(t3 - t2 < rx - drv, "dwell longer than the whole far side");
        } else {
            assert_eq!((r.get("T2_SW"), r.get("T3_SW")), (None, None));
        }
        // send + network + dwell + receive = T4 user − T1 user, and both
        // user points are the wall times of the two monotonic reads the RTT
        // is taken from (one offset per packet: wall_clock.rs), so the span
        // is the RTT exactly, however the thread was scheduled.
        assert_eq!(
            t4 - t1,
            rtt,
            "packet {:?}: T4 user − T1 user is not the RTT",
            r.get("SEQ")
        );
    }
}

/// Checks the JSON `breakdown`: the right segments, none missing, and the
/// segment means adding up to the mean RTT.
fn check_breakdown(j: &serde_json::Value, packets: u64, keys: &[&str]) {
    let b = &j["breakdown"];
    assert_eq!(b["timestamps"], "software", "{b}");
    let segs = b["segments"].as_array().unwrap();
    let got: Vec<_> = segs
        .iter()
        .map(|s| s["segment"].as_str().unwrap())
        .collect();
    assert_eq!(got, keys);
    let mut sum = 0.0;
    for s in segs {
        assert_eq!(s["samples"], packets, "{s}");
        assert_eq!(s["missing"], 0, "{s}");
        assert!(s["p50_ns"].as_u64().unwrap() <= s["p99_ns"].as_u64().unwrap());
        sum += s["mean_ns"].as_f64().unwrap();
    }
    let mean = j["rtt_ns"]["mean"].as_f64().unwrap();
    assert!(
        (sum - mean).abs() < 1_000.0 + mean * 0.005,
        "segment means {sum} vs RTT mean {mean}"
    );
    let sources: Vec<_> = b["points"].as_array().unwrap().iter().collect();
    let of = |p: &str| {
        sources.iter().find(|s| s["point"] == p).unwrap()["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(of("T1 driver"), "kernel software (CLOCK_REALTIME)");
    assert_eq!(of("T4 hw"), "not measured");
}

fn run_json(cmd: &mut Command) -> serde_json::Value {
    success_json(&cmd.output().unwrap())
}

/// Generous reply timeout: correctness here, not latency.
const QUIET: [&str; 4] = ["--timeout", "2000ms", "--threshold", "1s"];

#[test]
fn loopback_echo_is_split_and_logged_packet_by_packet() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("packets.csv");
    let j = run_json(
        synapse()
            .args(["--json", "--packets", "400", "--warmup", "50"])
            .args(["--timestamps", "software", "--log"])
            .arg(&log)
            .args(QUIET),
    );
    check_breakdown(&j, 400, &["send_path", "network", "receive_path"]);
    assert_eq!(j["log"]["rows"], 400);
    assert_eq!(j["log"]["dropped"], 0);
    check_log(&read_log(&log), 400, false);
}

#[test]
fn loopback_stamp_adds_the_server_dwell() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("packets.csv");
    let j = run_json(
        synapse()
            .args(["--json", "--packets", "300", "--warmup", "50", "--stamp"])
            .args(["--timestamps", "software", "--log"])
            .arg(&log)
            .args(QUIET),
    );
    assert_eq!(j["config"]["protocol"], "stamp");
    check_breakdown(
        &j,
        300,
        &["send_path", "network", "server_dwell", "receive_path"],
    );
    check_log(&read_log(&log), 300, true);
}

#[test]
fn user_timestamps_mean_no_split_and_an_empty_kernel_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("packets.csv");
    let j = run_json(
        synapse()
            .args(["--json", "--packets", "50", "--warmup", "5"])
            .args(["--timestamps", "user", "--log"])
            .arg(&log)
            .args(QUIET),
    );
    assert!(j["breakdown"].is_null(), "{}", j["breakdown"]);
    assert_eq!(j["config"]["timestamps"], "user");
    let rows = read_log(&log);
    assert_eq!(rows.len(), 50);
    for r in &rows {
        // The user-space points are there (as in a paced run's log), on
        // the wall clock of the monotonic reads the RTT is taken from; the
        // kernel's are not.
        assert_eq!(r.need("T4_SW") - r.need("T1_SW"), r.need("RTT"));
        for c in ["T1_SCHED", "T1_DRV", "T4_DRV"] {
            assert_eq!(
                r.get(c),
                None,
                "user mode asks the kernel for no stamp: {c}"
            );
        }
    }
}

#[test]
fn hardware_on_loopback_is_refused_with_the_reason() {
    let out = synapse()
        .args(["--no-ui", "--packets", "10", "--timestamps", "hardware"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "synapse: error: --timestamps hardware: lo: no hardware clock (try --timestamps software, or auto)"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_reflector_asked_for_hardware_it_cannot_have_refuses_to_start() {
    let port = free_udp_port();
    let bind = format!("127.0.0.1:{port}");
    let cases = [
        (
            "hardware",
            "0.0.0.0:0",
            "--timestamps hardware: the wildcard address is not one NIC's address; name the NIC (hardware=IFACE)",
        ),
        (
            "hardware",
            bind.as_str(),
            "--timestamps hardware: lo: no hardware clock (try --timestamps software, or auto)",
        ),
        (
            "hardware=lo",
            "0.0.0.0:0",
            "--timestamps hardware: lo: no hardware clock (try --timestamps software, or auto)",
        ),
        (
            "user",
            bind.as_str(),
            "invalid value 'user' for '--timestamps <SOURCE>': 'user' is not a reflector timestamp source (expected software, auto[=IFACE] or hardware[=IFACE])",
        ),
        (
            "auto=",
            bind.as_str(),
            "invalid value 'auto=' for '--timestamps <SOURCE>': 'auto=' names no interface (e.g. auto=eth0)",
        ),
    ];
    for (source, bind, why) in cases {
        let out = synapse()
            .args(["server", "--no-ui", "--stamp-port", "0", "--tcp-port", "0"])
            .args(["--bind", bind, "--timestamps", source])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{source} on {bind}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!("synapse: error: {why}")),
            "{source}: {err}"
        );
        assert!(out.stdout.is_empty(), "nothing served, nothing printed");
    }
    // Giving up privilege would leave the NIC's setting unrestorable.
    let out = synapse()
        .args([
            "server",
            "--no-ui",
            "--timestamps",
            "hardware=eth9",
            "--user",
            "nobody",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "synapse: error: --timestamps hardware=eth9 with --user nobody: once running as nobody \
         the server could not put the NIC's timestamping setting back; leave one out"
    );
}

#[test]
fn a_reflector_on_auto_says_what_it_stamps_with_and_answers() {
    let (server, port, banner) = start_server_with_banner(&["--timestamps", "auto=lo"]);
    assert!(
        banner.contains(
            "Timestamps: software on lo (no hardware timestamps (lo: no hardware clock): using software)"
        ),
        "{banner}"
    );
    let out = synapse()
        .args([
            "client",
            &format!("127.0.0.1:{port}"),
            "--no-ui",
            "--packets",
            "20",
        ])
        .args(QUIET)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(server);
}

#[test]
fn auto_on_loopback_falls_back_to_software_and_says_so() {
    let out = synapse()
        .args(["--no-ui", "--packets", "100", "--warmup", "10"])
        .args(QUIET)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Round-trip breakdown (software timestamps on lo, plain echo):"),
        "{text}"
    );
    assert!(
        text.contains("Note: no hardware timestamps (lo: no hardware clock): using software"),
        "{text}"
    );
    assert!(text.contains("Missing stamps: none"), "{text}");
}

#[test]
fn across_a_veth_pair_both_protocols_split_the_round_trip() {
    let ns = Namespaces::new();
    let _server = ns.server_in_b();
    let dir = tempfile::tempdir().unwrap();
    for (stamp, port) in [(false, 7007), (true, 8862)] {
        let log = dir.path().join(format!("veth-{stamp}.csv"));
        let mut cmd = ns.synapse_in(&ns.a);
        cmd.args(["client", &format!("{B_ADDR}:{port}"), "--json"])
            .args([
                "--packets",
                "300",
                "--warmup",
                "50",
                "--timestamps",
                "software",
            ])
            .args(QUIET)
            .arg("--log")
            .arg(&log);
        if stamp {
            cmd.arg("--stamp");
        }
        let j = run_json(&mut cmd);
        assert_eq!(j["breakdown"]["interface"], "vsyn0");
        let keys: &[&str] = if stamp {
            &["send_path", "network", "server_dwell", "receive_path"]
        } else {
            &["send_path", "network", "receive_path"]
        };
        check_breakdown(&j, 300, keys);
        check_log(&read_log(&log), 300, stamp);
    }
}

#[test]
fn across_a_veth_pair_hardware_is_detected_absent() {
    let ns = Namespaces::new();
    let _server = ns.server_in_b();
    let out = ns
        .synapse_in(&ns.a)
        .args([
            "client",
            &format!("{B_ADDR}:7007"),
            "--no-ui",
            "--packets",
            "5",
        ])
        .args(["--timestamps", "hardware"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "synapse: error: --timestamps hardware: vsyn0: no hardware clock (try --timestamps software, or auto)"
    );
    let j = run_json(
        ns.synapse_in(&ns.a)
            .args(["client", &format!("{B_ADDR}:7007"), "--json"])
            .args(["--packets", "50", "--warmup", "5", "--timestamps", "auto"])
            .args(QUIET),
    );
    assert_eq!(j["config"]["timestamps"], "software");
    assert_eq!(
        j["breakdown"]["note"],
        "no hardware timestamps (vsyn0: no hardware clock): using software"
    );
}

#[test]
fn ctrl_c_keeps_every_logged_packet() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("packets.csv");
    let child = synapse()
        .args(["--json", "--duration", "60s", "--warmup", "10", "--log"])
        .arg(&log)
        .args(QUIET)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = Guard(child);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    guard.interrupt();
    let mut guard = guard;
    let mut out = String::new();
    std::io::Read::read_to_string(guard.0.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert_eq!(guard.0.wait().unwrap().code(), Some(130), "interrupted");
    let j = json_of(out.as_bytes());
    assert_eq!(j["interrupted"], true);
    let sent = j["packets"]["sent"].as_u64().unwrap();
    assert!(sent > 0);
    assert_eq!(j["log"]["rows"], sent);
    assert_eq!(j["log"]["dropped"], 0);
    assert_eq!(
        read_log(&log).len() as u64,
        sent,
        "every measured packet is in the file"
    );
}

/// The server's `--log`: every answer, echo and STAMP, with the reflector's
/// kernel and user-space points in order, and agreeing with the client's
/// own log of the same packets (one host, one clock): the server received
/// after the client's driver sent, answered before the client's driver
/// received, and STAMP's T2/T3 fields are the very points the server
/// logged.
#[test]
fn the_server_logs_every_answer_with_its_kernel_stamps() {
    let dir = tempfile::tempdir().unwrap();
    let server_log = dir.path().join("server.csv");
    let (echo, stamp) = (free_udp_port(), free_udp_port());
    let child = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
        .args(["--stamp-port", &stamp.to_string(), "--log"])
        .arg(&server_log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, mut out, banner) = wait_until_ready(child);
    assert!(banner.contains("Logging every answer to"), "{banner}");
    let mut client_logs = Vec::new();
    for (proto, port) in [("echo", echo), ("stamp", stamp)] {
        let log = dir.path().join(format!("client-{proto}.csv"));
        let mut cmd = synapse();
        cmd.args(["client", &format!("127.0.0.1:{port}"), "--json"])
            .args(["--packets", "200", "--warmup", "10"])
            .args(["--timestamps", "software", "--log"])
            .arg(&log)
            .args(QUIET);
        if proto == "stamp" {
            cmd.arg("--stamp");
        }
        run_json(&mut cmd);
        client_logs.push((proto, read_log(&log)));
    }
    guard.interrupt();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let mut guard = guard;
    assert_eq!(guard.0.wait().unwrap().code(), Some(0), "{rest}");
    assert!(
        rest.contains(&format!(
            "log: 420 answers written to {}",
            server_log.display()
        )),
        "{rest}"
    );

    let rows = read_csv(&server_log, SERVER_HEADER);
    assert_eq!(
        rows.len(),
        420,
        "warm-up packets are answered and logged too"
    );
    for r in &rows {
        let t2 = r.need("T2_DRV");
        let t2_user = r.need("T2_SW");
        let t3_user = r.need("T3_SW");
        let sched = r.need("T3_SCHED");
        let t3 = r.need("T3_DRV");
        assert!(
            t2 <= t2_user && t2_user <= t3_user && t3_user <= sched && sched <= t3,
            "out of order: {t2} {t2_user} {t3_user} {sched} {t3}"
        );
        assert_eq!(r.get("RESPONSE"), Some(t3 - t2));
        for hw in ["T2_HW", "T3_HW", "RESPONSE_HW"] {
            assert_eq!(r.get(hw), None, "no NIC clock here");
        }
    }
    for (proto, client) in &client_logs {
        assert_eq!(client.len(), 200);
        for c in client {
            let seq = c.need("SEQ");
            // The server logs the number on the wire: Synapse numbers its
            // STAMP requests from 1 (so a stateless reflector gives itself
            // away), its echo requests from 0, as its own log does.
            let wire = if *proto == "stamp" { seq + 1 } else { seq };
            let s = rows
                .iter()
                .find(|r| r.text("PROTO") == *proto && r.get("SEQ") == Some(wire))
                .unwrap_or_else(|| panic!("{proto} packet {seq} is not in the server's log"));
            assert!(c.need("T1_DRV") <= s.need("T2_DRV"), "{proto} {seq}");
            assert!(s.need("T3_DRV") <= c.need("T4_DRV"), "{proto} {seq}");
            if *proto == "stamp" {
                // Carried in NTP format: 2^-32 s steps, so within 1 ns.
                assert!(c.need("T2_SW").abs_diff(s.need("T2_DRV")) <= 1, "{seq}");
                assert!(c.need("T3_SW").abs_diff(s.need("T3_SW")) <= 1, "{seq}");
            }
        }
    }
}

#[test]
fn an_unwritable_server_log_is_refused_before_anything_binds() {
    let port = free_udp_port();
    let out = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{port}")])
        .args(["--stamp-port", "0", "--log", "/nonexistent-dir/server.csv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "synapse: error: --log /nonexistent-dir/server.csv: No such file or directory"
    );
    assert!(out.stdout.is_empty(), "nothing was started");
}

/// Sampled TX stamps (the ping-pong default without --log): each packet
/// asks for them with chance 1/N (random, so the count is binomial: held
/// within 6 standard deviations of n/N, and never 0); the split comes from
/// exactly those, every segment from the same packets (none counted
/// missing), and adds up to their own mean RTT; the report says how it was
/// sampled.
#[test]
fn sampled_tx_stamps_split_only_their_own_packets() {
    for (every, packets) in [(None, 5_120), (Some("64"), 2_560), (Some("1"), 200)] {
        let n = every.map_or(256, |n| n.parse::<u64>().unwrap());
        let mean = packets as f64 / n as f64;
        let spread = 6.0 * (mean * (1.0 - 1.0 / n as f64)).sqrt();
        let (lo, hi) = ((mean - spread).max(1.0), mean + spread);
        let mut cmd = synapse();
        cmd.args([
            "--json",
            "--packets",
            &packets.to_string(),
            "--warmup",
            "50",
        ])
        .args(["--timestamps", "software"])
        .args(QUIET);
        if let Some(n) = every {
            cmd.args(["--tx-stamp-every", n]);
        }
        let j = run_json(&mut cmd);
        let b = &j["breakdown"];
        assert_eq!(b["tx_stamp_every"], n, "{b}");
        let segments = b["segments"].as_array().unwrap();
        let taken = segments[0]["samples"].as_f64().unwrap();
        assert!(
            (lo..=hi).contains(&taken),
            "{taken} stamped of {packets}, 1 in {n}: outside [{lo:.0}, {hi:.0}]"
        );
        let mut sum = 0.0;
        for s in segments {
            assert_eq!(s["samples"].as_f64(), Some(taken), "the same packets: {s}");
            assert_eq!(s["missing"], 0, "{s}");
            sum += s["mean_ns"].as_f64().unwrap();
        }
        let theirs = b["split_packets_rtt_mean_ns"].as_f64().unwrap();
        assert!(
            (sum - theirs).abs() < 1_000.0 + theirs * 0.005,
            "segment means {sum} vs their packets' RTT mean {theirs}"
        );
        assert_eq!(
            j["packets"]["received"], packets,
            "every packet is still measured"
        );
    }
}
