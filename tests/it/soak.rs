//! A soak: for 20 s, four sources flood a reflector's echo port with valid
//! requests, garbage, oversized datagrams, requests from a service port and
//! from outside `--allow`, while two clients measure: one on the flooded
//! echo port, one (authenticated STAMP) on the STAMP port, which the same
//! process serves beside it and which no flood reaches while it measures
//! (its junk, signed-but-malformed and random, comes first, alone).
//!
//! The kernel counts drops per socket, not per sender, so only the STAMP
//! client's loss can be held to its own drops: it loses nothing the kernel
//! did not drop on its socket while it measured. The echo client shares
//! its socket with the flood, so its loss is held to that socket's drops,
//! flood included: a bound, not the same claim. The reflector's memory
//! stays flat, and every refusal is counted by reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use crate::common::{Server, json_of, proc_udp, synapse, wait_until_ready};
use std::net::UdpSocket;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use synapse_engine::stamp_key::StampKey;

const KEY: &str = "00112233445566778899aabbccddeeff";
const SOAK: Duration = Duration::from_secs(20);

/// Sends what `next` makes, from `from`, to `to` at about `pps`, until
/// `stop`. Send errors (a full buffer) are ignored: this is a flood.
fn flood(
    from: &str,
    to: u16,
    pps: u64,
    stop: Arc<AtomicBool>,
    next: impl Fn(u64) -> Vec<u8> + Send + 'static,
) -> JoinHandle<u64> {
    let from = from.to_string();
    std::thread::spawn(move || {
        let sock = UdpSocket::bind(&from).unwrap();
        let start = Instant::now();
        let mut sent = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let _ = sock.send_to(&next(sent), ("127.0.0.1", to));
            sent += 1;
            let due = Duration::from_nanos(sent * 1_000_000_000 / pps);
            if let Some(ahead) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(ahead);
            }
        }
        sent
    })
}

/// Many sockets of one address, round robin: more sessions than allowed.
fn flood_from_many_ports(from: &str, to: u16, stop: Arc<AtomicBool>) -> JoinHandle<u64> {
    let socks: Vec<UdpSocket> = (0..32)
        .map(|_| UdpSocket::bind(format!("{from}:0")).unwrap())
        .collect();
    std::thread::spawn(move || {
        let mut sent = 0u64;
        let big = vec![0xA5u8; 60_000];
        while !stop.load(Ordering::Relaxed) {
            for s in &socks {
                // Oversized for a measurement, legal for UDP: answered (when
                // within the limits) with exactly as many bytes.
                let _ = s.send_to(&big, ("127.0.0.1", to));
                sent += 1;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        sent
    })
}

/// A STAMP request signed with the key but malformed (error multiplier 0),
/// or random bytes: the STAMP reflector must count both, answer neither.
fn stamp_junk(n: u64) -> Vec<u8> {
    if n.is_multiple_of(2) {
        let key = StampKey::from_hex(KEY).unwrap();
        let mut p = vec![0u8; 112];
        p[..4].copy_from_slice(&(n as u32).to_be_bytes());
        key.sign(&mut p);
        p
    } else {
        let len = (n * 7919 % 300) as usize;
        (0..len).map(|i| (i as u64 * n % 251) as u8).collect()
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Waits until nothing is queued at `port`: the reflector has read all
/// it was sent.
fn wait_drained(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while proc_udp::queued(port) > 0 {
        assert!(Instant::now() < deadline, "port {port} never drained");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn refusals(totals_line: &str) -> String {
    totals_line
        .split("(refused: ")
        .nth(1)
        .map(|r| r.trim_end_matches(')').to_string())
        .unwrap_or_default()
}

#[test]
fn a_flooded_reflector_keeps_its_clients_its_memory_and_its_counts() {
    // Its flood fills both CPUs for 20 s: no other measurement beside it.
    let _one = common::one_at_a_time();
    let root = common::is_root();
    let key = common::key_file(KEY, 0o600);
    let key_path = key.path().to_str().unwrap();
    let (echo, stamp) = (common::free_udp_port(), common::free_udp_port());
    let child = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
        .args([
            "--stamp-port",
            &stamp.to_string(),
            "--hmac-key-file",
            key_path,
        ])
        .args(["--allow", "127.0.0.0/30", "--allow", "127.0.0.4/31"])
        .args(["--max-pps", "1000", "--burst", "50", "--max-sessions", "16"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, stdout, _) = wait_until_ready(child);
    let server = Server { guard, stdout };
    let pid = server.guard.0.id();
    let stop = Arc::new(AtomicBool::new(false));
    // The STAMP port's junk first, alone: after it, the STAMP client is the
    // only sender to that socket, so its drops there are its own.
    let junk = flood("127.0.0.3:0", stamp, 20_000, Arc::clone(&stop), stamp_junk);
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let mut offered = junk.join().unwrap();
    wait_drained(stamp);
    let stamp_drops_before = proc_udp::drops(stamp);
    let stop = Arc::new(AtomicBool::new(false));
    let client = |extra: &[&str], port: u16| {
        synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--json"])
            .args(["--interval", "5ms", "--duration", "20s", "--warmup", "0"])
            .args(["--timeout", "500ms"])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The clients first: their sessions exist before the table fills.
    let clients = [
        client(&[], echo),
        client(&["--stamp", "--hmac-key-file", key_path], stamp),
    ];
    std::thread::sleep(Duration::from_millis(300));
    let s = || Arc::clone(&stop);
    // The rate flood next, so that its session exists before the sources
    // from many ports fill the table (else it is refused for sessions, not rate).
    let mut floods = vec![flood("127.0.0.2:0", echo, 20_000, s(), |n| {
        n.to_be_bytes().to_vec()
    })];
    std::thread::sleep(Duration::from_millis(300));
    floods.push(flood_from_many_ports("127.0.0.4", echo, s()));
    floods.push(flood("127.0.0.6:0", echo, 5_000, s(), |_| vec![1; 64]));
    if root {
        // A service port needs root to bind.
        floods.push(flood("127.0.0.5:999", echo, 5_000, s(), |_| vec![2; 32]));
    } else {
        common::announce::skip(
            "a_flooded_reflector_keeps_its_clients…: the service-port source",
            "binding a service port needs root (CI runs as root)",
        );
    }
    std::thread::sleep(Duration::from_secs(4));
    let rss_early = rss_kib(pid);
    std::thread::sleep(SOAK - Duration::from_secs(5));
    let rss_late = rss_kib(pid);
    stop.store(true, Ordering::Relaxed);
    offered += floods.into_iter().map(|f| f.join().unwrap()).sum::<u64>();
    let reports: Vec<_> = clients
        .into_iter()
        .map(|c| json_of(&c.wait_with_output().unwrap().stdout))
        .collect();
    // Each client's loss against the drops of the socket it sent to, read
    // once both are done: the echo port's include the flood's, the STAMP
    // port's are the client's own.
    let drops = [
        ("echo, shared with the flood", proc_udp::drops(echo)),
        (
            "STAMP, its own",
            proc_udp::drops(stamp) - stamp_drops_before,
        ),
    ];
    for (r, (socket, dropped)) in reports.iter().zip(drops) {
        let lost = r["packets"]["lost"].as_u64().unwrap();
        assert!(r["packets"]["received"].as_u64().unwrap() > 3000, "{r}");
        assert!(
            lost <= dropped,
            "{lost} lost with {dropped} dropped by the kernel on its socket ({socket}): {r}"
        );
    }
    let drops: u64 = drops.iter().map(|d| d.1).sum();
    let (out, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0));
    println!(
        "{offered} flood datagrams; RSS {rss_early} -> {rss_late} KiB; {drops} kernel drops\n{out}"
    );
    assert!(
        rss_late <= rss_early + 1024,
        "RSS grew from {rss_early} to {rss_late} KiB"
    );
    let echo_line = out.lines().find(|l| l.starts_with("totals:")).unwrap();
    let stamp_line = out
        .lines()
        .find(|l| l.starts_with("STAMP totals:"))
        .unwrap();
    let (e, st) = (refusals(echo_line), refusals(stamp_line));
    for reason in ["rate", "sessions", "not allowed"] {
        assert!(
            e.contains(reason),
            "echo refusals lack {reason}: {echo_line}"
        );
    }
    if root {
        assert!(e.contains("service port"), "{echo_line}");
    }
    for reason in ["unauthenticated", "malformed"] {
        assert!(
            st.contains(reason),
            "STAMP refusals lack {reason}: {stamp_line}"
        );
    }
}
