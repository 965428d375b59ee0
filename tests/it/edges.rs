//! Numbers that stay true at the edges: a dead or stopped peer, late
//! replies against an exact deadline, strays during warm-up, runs without
//! replies, outages, truncating echo servers, a shared --bind port, loss
//! in the verdict, and signals. The real binary against peers with a
//! script, so every count is known in advance.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::net::UdpSocket;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn client(args: &[&str]) -> Output {
    synapse()
        .arg("client")
        .args(args)
        .args(["--timestamps", "user"])
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out.stdout)
}

fn counter(j: &serde_json::Value, key: &str) -> u64 {
    j["packets"][key].as_u64().unwrap()
}

/// Item 1: after the reflector dies, the run loses about one request per
/// timeout, as on a real link, instead of flooding on ICMP errors.
#[test]
fn a_dead_reflector_paces_the_run_at_one_loss_per_timeout() {
    let (server, port) = start_server(&[]);
    let run = synapse()
        .args(["client", &format!("127.0.0.1:{port}"), "--json"])
        .args(["--duration", "3s", "--timeout", "100ms", "--warmup", "10"])
        .args(["--timestamps", "user"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    unsafe_free_kill(server.guard.0.id(), "KILL");
    let out = run.wait_with_output().unwrap();
    let j = json(&out);
    let lost = counter(&j, "lost");
    // About 2 s after the kill at one loss per 100 ms: 20, give or take
    // the timing of the kill.
    assert!((12..=30).contains(&lost), "lost {lost}: {j}");
    assert!(counter(&j, "sent") <= counter(&j, "received") + 30, "{j}");
}

/// The deadline is exact: a reply 6.5 ms after its request, with a 5 ms
/// timeout, is late, never a sample, in both wait modes.
fn late_replies_are_late(extra: &[&str], delay: Duration, timeout_ms: u64, packets: u64) {
    // Every tenth request answered late; the others at once, even while a
    // late one is pending (so no scheduling hiccup of the peer's makes a
    // second reply late).
    let peer = ScriptedPeer::start(move |seq| {
        if seq % 10 == 5 {
            Answer::Later(delay)
        } else {
            Answer::Echo
        }
    });
    let timeout = format!("{timeout_ms}ms");
    let n = packets.to_string();
    let addr = peer.addr();
    let mut args = vec![&addr[..], "--json", "--packets", &n, "--warmup", "0"];
    args.extend(["--timeout", &timeout, "--threshold", "1s"]);
    args.extend(extra);
    let j = json(&client(&args));
    // Each slow reply is late; only the last one may come after the run has
    // ended, and then it is lost. Never a sample.
    let (late, lost) = (counter(&j, "late"), counter(&j, "lost"));
    assert_eq!(late + lost, packets / 10, "{j}");
    assert!(late >= packets / 10 - 1, "{j}");
    assert_eq!(counter(&j, "received"), packets - packets / 10, "{j}");
    let max = j["rtt_ns"]["max"].as_u64().unwrap();
    assert!(
        max < timeout_ms * 1_000_000,
        "a sample above the timeout: {max} ns"
    );
}

// 2 ms past a 20 ms timeout: inside the tick SO_RCVTIMEO rounds up to,
// and far enough from the other replies that a scheduling hiccup of this
// machine's (several ms, now and then) makes none of them late.
#[test]
fn a_reply_2ms_after_a_20ms_timeout_is_late_blocking() {
    late_replies_are_late(&[], Duration::from_millis(22), 20, 200);
}

#[test]
fn a_reply_2ms_after_a_20ms_timeout_is_late_busy_polling() {
    late_replies_are_late(&["--busy-poll"], Duration::from_millis(22), 20, 200);
}

#[test]
fn a_reply_after_the_default_100ms_timeout_is_late() {
    late_replies_are_late(&[], Duration::from_millis(102), 100, 30);
    late_replies_are_late(&["--busy-poll"], Duration::from_millis(102), 100, 30);
}

/// After a loss the next request leaves when the timeout is up, not a
/// kernel tick later: 40 lost requests at 5 ms take about 200 ms.
#[test]
fn losses_are_paced_by_the_timeout() {
    let peer = ScriptedPeer::start(|seq| if seq < 5 { Answer::Echo } else { Answer::Drop });
    let out = client(&[
        &peer.addr(),
        "--json",
        "--packets",
        "40",
        "--warmup",
        "5",
        "--timeout",
        "5ms",
    ]);
    let j = json(&out);
    assert_eq!(counter(&j, "lost"), 40, "{j}");
    let seconds = j["duration_s"].as_f64().unwrap();
    // A rounded-up wait (8-16 ms per 5 ms timeout) would take 320 ms or more.
    assert!(seconds < 0.3, "40 × 5 ms took {seconds} s");
}

/// Item 3: strays from another source during warm-up are warm-up's.
#[test]
fn strays_during_warmup_are_not_counted() {
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let peer = ScriptedPeer::start_with(
        |_| Answer::Echo,
        move |seq, from| {
            if seq == 3 {
                for _ in 0..10 {
                    stranger.send_to(b"not yours", from).unwrap();
                }
            }
        },
    );
    let j = json(&client(&[
        &peer.addr(),
        "--json",
        "--packets",
        "100",
        "--warmup",
        "50",
        "--threshold",
        "1s",
    ]));
    assert_eq!(counter(&j, "stray"), 0, "{j}");
    assert_eq!(counter(&j, "received"), 100, "{j}");
}

/// Item 4: the per-run token (bytes 8..16 of a request) is random, not
/// the process id with a few bits of clock.
#[test]
fn every_run_has_a_random_token() {
    let tokens = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = tokens.clone();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 64];
        for _ in 0..4 {
            let (n, from) = socket.recv_from(&mut buf).unwrap();
            seen.lock()
                .unwrap()
                .push(u64::from_le_bytes(buf[8..16].try_into().unwrap()));
            socket.send_to(&buf[..n], from).unwrap();
        }
    });
    let mut pids = Vec::new();
    for _ in 0..4 {
        let child = synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--json"])
            .args(["--packets", "1", "--warmup", "0", "--size", "16"])
            .args(["--timestamps", "user", "--threshold", "1s"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        pids.push(u64::from(child.id()));
        assert!(child.wait_with_output().unwrap().status.success());
    }
    peer.join().unwrap();
    let tokens = tokens.lock().unwrap();
    for (t, pid) in tokens.iter().zip(&pids) {
        assert_ne!(t >> 32, *pid, "token {t:#x} carries the pid {pid}");
    }
    let mut distinct = tokens.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{tokens:x?}");
    // Random 64-bit tokens differ in about half their bits.
    let differing = (tokens[0] ^ tokens[1]).count_ones();
    assert!(differing >= 12, "{:#x} vs {:#x}", tokens[0], tokens[1]);
}

/// Item 5: no replies, no RTT figure: JSON null, "—" in the text.
#[test]
fn a_run_without_replies_has_no_rtt() {
    let peer = ScriptedPeer::start(|seq| if seq < 5 { Answer::Echo } else { Answer::Drop });
    let addr = peer.addr();
    let args = [
        &addr[..],
        "--packets",
        "10",
        "--warmup",
        "5",
        "--timeout",
        "20ms",
    ];
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let out = client(&with_json);
    assert_eq!(out.status.code(), Some(3));
    let j = json_of(&out.stdout);
    assert!(j["rtt_ns"].is_null(), "{j}");
    assert_eq!(counter(&j, "lost"), 10);
    let mut text = args.to_vec();
    text.push("--no-ui");
    let out = client(&text);
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains("  Mean:             —"), "{report}");
    assert!(!report.contains("0 ns"), "{report}");
    assert!(
        report.contains("✗ FAIL: no replies were received"),
        "{report}"
    );
}

/// Item 6: a blackhole of 1.5 s is an outage of about 15 requests and
/// 1.5 s, in the JSON and the text; and a run with it fails on loss.
#[test]
fn a_blackhole_is_reported_as_an_outage() {
    let started = std::sync::Mutex::new(None::<Instant>);
    let peer = ScriptedPeer::start(move |seq| {
        if seq < 20 {
            return Answer::Echo;
        }
        let mut t = started.lock().unwrap();
        let since = t.get_or_insert_with(Instant::now).elapsed();
        if since < Duration::from_millis(1_500) {
            Answer::Drop
        } else {
            Answer::Echo
        }
    });
    let out = client(&[
        &peer.addr(),
        "--json",
        "--packets",
        "300",
        "--warmup",
        "20",
        "--timeout",
        "100ms",
    ]);
    assert_eq!(out.status.code(), Some(3), "15 of 300 lost is 5 %");
    let j = json_of(&out.stdout);
    let o = &j["outages"];
    assert_eq!(o["count"], 1, "{j}");
    let longest = o["longest_ms"].as_f64().unwrap();
    assert!((1_400.0..2_000.0).contains(&longest), "{longest}");
    assert!(o["total_ms"].as_f64().unwrap() >= longest);
    let packets = o["longest_packets"].as_u64().unwrap();
    assert!((14..=17).contains(&packets), "{packets}");
    let loss = &j["verdict"]["criteria"][1];
    assert_eq!(
        (loss["metric"].as_str(), loss["held"].as_bool()),
        (Some("loss"), Some(false))
    );
}

/// Item 6 with a real reflector stopped for 2 s: the replies come late, the
/// outage is about 2 s long, and the verdict fails on loss.
#[test]
fn a_stopped_reflector_is_an_outage_of_late_replies() {
    let (server, port) = start_server(&[]);
    let pid = server.guard.0.id();
    let run = synapse()
        .args(["client", &format!("127.0.0.1:{port}"), "--json"])
        .args(["--duration", "4s", "--timeout", "100ms", "--warmup", "10"])
        .args(["--timestamps", "user"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    unsafe_free_kill(pid, "STOP");
    std::thread::sleep(Duration::from_secs(2));
    unsafe_free_kill(pid, "CONT");
    let out = run.wait_with_output().unwrap();
    let j = json_of(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{j}");
    let late = counter(&j, "late");
    assert!(late >= 15, "{j}");
    let o = &j["outages"];
    assert!(o["count"].as_u64().unwrap() >= 1, "{j}");
    let longest = o["longest_ms"].as_f64().unwrap();
    assert!((1_700.0..2_800.0).contains(&longest), "{longest}: {j}");
    // Little loss of the many requests a ping-pong sends, but a 2 s outage:
    // the verdict fails on that, and on nothing else.
    let failed: Vec<&str> = j["verdict"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["held"] == false)
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["outage"], "{j}");
}

/// Item 8: two clients cannot share an explicit --bind port.
#[test]
fn an_explicit_bind_port_in_use_by_another_client_is_refused() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let port = free_udp_port();
    let bind = format!("127.0.0.1:{port}");
    let first = synapse()
        .args(["client", &peer.addr(), "--bind", &bind, "--json"])
        .args(["--duration", "3s", "--timestamps", "user"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _first = Guard(first);
    crate::common::wait_for_udp_bound(port);
    let out = client(&[&peer.addr(), "--bind", &bind, "--no-ui", "--packets", "10"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot bind UDP {bind}: address already in use")),
        "{err}"
    );
}

/// Item 9: loss counts in the verdict; a figure names itself.
#[test]
fn loss_and_percentiles_decide_the_verdict() {
    // Every 20th request dropped: 5 % loss.
    let peer = ScriptedPeer::start(|seq| {
        if seq % 20 == 19 {
            Answer::Drop
        } else {
            Answer::Echo
        }
    });
    let addr = peer.addr();
    let base = [
        &addr[..],
        "--packets",
        "200",
        "--warmup",
        "0",
        "--timeout",
        "20ms",
        "--threshold",
        "1s",
    ];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        client(&args)
    };
    let out = run(&["--no-ui"]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("✗ FAIL: loss 5.00 %, above 1 %  (lost + late, of sent; --max-loss)"),
        "{text}"
    );
    assert_eq!(run(&["--no-ui", "--max-loss", "10"]).status.code(), Some(0));
    let out = run(&["--json", "--max-loss", "10", "--threshold", "p99=1ns"]);
    assert_eq!(out.status.code(), Some(3));
    let j = json_of(&out.stdout);
    let failed: Vec<&str> = j["verdict"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["held"] == false)
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["p99"], "{j}");
    let p99 = j["verdict"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "p99")
        .unwrap()
        .clone();
    assert_eq!(p99["limit"], 1.0);
    assert!(p99["value"].as_f64().unwrap() > 1.0);
}

/// Item 10: SIGHUP is a stop, not a death: the report comes, marked
/// interrupted, never PASS, with 128 + SIGHUP's number; the server prints
/// its totals.
#[test]
fn sighup_ends_a_headless_run_with_its_report() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let child = synapse()
        .args(["client", &peer.addr(), "--json", "--duration", "30s"])
        .args(["--timestamps", "user", "--threshold", "1s"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    unsafe_free_kill(child.id(), "HUP");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129), "{:?}", out.status);
    let j = json_of(&out.stdout);
    assert_eq!(j["interrupted"], true);
    assert_eq!(
        (j["outcome"].as_str(), j["interrupted_by"].as_str()),
        (Some("interrupted"), Some("SIGHUP"))
    );
    assert!(counter(&j, "received") > 0);

    let (server, port) = start_server(&[]);
    let j = json(&client(&[
        &format!("127.0.0.1:{port}"),
        "--json",
        "--packets",
        "50",
    ]));
    assert_eq!(counter(&j, "received"), 50);
    unsafe_free_kill(server.guard.0.id(), "HUP");
    let mut server = server;
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut server.stdout, &mut rest).unwrap();
    let status = server.guard.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(rest.contains("totals: 1 session, 250 packets"), "{rest}");
}
