//! TCP mode end to end, with the real binary: against `synapse server`
//! (which answers TCP on its UDP echo port), against socat's TCP echo,
//! against test peers that split their replies, hold them, reset the
//! connection or refuse it, and over a veth pair between two network
//! namespaces.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use crate::common::{json_of, start_server, synapse, tool};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A TCP echo peer on 127.0.0.1 run by the test, each connection served
/// by `serve` on its own thread, until dropped.
struct Peer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Peer {
    fn start(serve: fn(TcpStream, u64)) -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut n = 0;
            while !flag.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        s.set_nodelay(true).unwrap();
                        let k = n;
                        std::thread::spawn(move || serve(s, k));
                        n += 1;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Echoes 8-byte requests, each reply with `each` applied first.
fn echo_requests(mut s: TcpStream, mut each: impl FnMut(&mut TcpStream, &[u8; 8]) -> bool) {
    let mut b = [0u8; 8];
    while s.read_exact(&mut b).is_ok() {
        if !each(&mut s, &b) {
            return;
        }
    }
}

fn client(addr: &str, extra: &[&str]) -> std::process::Output {
    synapse()
        .args(["client", addr, "--tcp", "--json"])
        .args(extra)
        .current_dir(common::scratch_dir())
        .output()
        .unwrap()
}

/// The JSON of a run that passed; its report and errors when it did not.
fn passed(out: &std::process::Output) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    json_of(&out.stdout)
}

fn segment<'a>(json: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    json["breakdown"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["segment"] == name)
        .unwrap_or_else(|| panic!("no {name} segment: {json}"))
}

#[test]
fn request_response_against_synapse_server_splits_and_counts() {
    let (server, port) = start_server(&[]);
    let out = client(
        &format!("127.0.0.1:{port}"),
        &[
            "--packets",
            "2000",
            "--warmup",
            "50",
            "--tx-stamp-every",
            "1",
        ],
    );
    let json = passed(&out);
    assert_eq!(json["packets"]["received"], 2000, "{json}");
    assert_eq!(json["packets"]["lost"], 0);
    assert_eq!(json["config"]["transport"], "tcp");
    let tcp = &json["tcp"];
    assert_eq!(tcp["connections"], 1, "one connection for the run: {tcp}");
    assert_eq!(tcp["reconnects"], 0);
    let acks = &tcp["acks"];
    let stamped = acks["separate"].as_u64().unwrap()
        + acks["piggybacked"].as_u64().unwrap()
        + acks["missing"].as_u64().unwrap();
    assert_eq!(
        stamped, 2000,
        "every sampled request's ACK is accounted: {acks}"
    );
    assert_eq!(acks["missing"], 0, "the kernel stamps every ACK: {acks}");
    assert!(tcp["kernel"]["min_rtt_ns"].as_u64().unwrap() > 0, "{tcp}");
    for name in ["send_path", "network", "receive_path"] {
        assert_eq!(segment(&json, name)["samples"], 2000, "{name}");
    }
    let (rest, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0), "{rest}");
    assert!(
        rest.contains("TCP totals: 1 connection, 16,400 bytes echoed")
            || rest.contains("TCP totals: 1 connection, 16400 bytes echoed"),
        "8 bytes each way for 2050 requests: {rest}"
    );
}

#[test]
fn a_peer_that_answers_after_its_delayed_ack_gives_the_kernel_rtt_apart() {
    // Replies held 60 ms: the far kernel's ACK goes out on its own first.
    let peer = Peer::start(|s, _| {
        echo_requests(s, |s, b| {
            std::thread::sleep(Duration::from_millis(60));
            s.write_all(b).is_ok()
        });
    });
    let out = client(
        &peer.addr(),
        &[
            "--packets",
            "8",
            "--warmup",
            "2",
            "--tx-stamp-every",
            "1",
            "--timeout",
            "1s",
            "--threshold",
            "1s",
        ],
    );
    let json = passed(&out);
    assert_eq!(json["packets"]["received"], 8, "{json}");
    let acks = &json["tcp"]["acks"];
    assert!(acks["separate"].as_u64().unwrap() >= 4, "{acks}");
    let kernel = segment(&json, "kernel_rtt");
    let far = segment(&json, "far_share");
    assert!(kernel["samples"].as_u64().unwrap() >= 4, "{kernel}");
    let (k, f) = (
        kernel["p50_ns"].as_u64().unwrap(),
        far["p50_ns"].as_u64().unwrap(),
    );
    assert!(k < 40_000_000, "kernel RTT on loopback: {k} ns");
    assert!(
        f >= 20_000_000,
        "the far side held each reply 60 ms: {f} ns"
    );
    assert!(json["rtt_ns"]["p50"].as_u64().unwrap() >= 60_000_000);
}

#[test]
fn a_reply_in_two_pieces_is_read_whole_and_counted() {
    let peer = Peer::start(|s, _| {
        echo_requests(s, |s, b| {
            s.write_all(&b[..3]).is_ok() && {
                std::thread::sleep(Duration::from_millis(5));
                s.write_all(&b[3..]).is_ok()
            }
        });
    });
    let out = client(
        &peer.addr(),
        &["--packets", "40", "--warmup", "2", "--threshold", "1s"],
    );
    let json = passed(&out);
    assert_eq!(json["packets"]["received"], 40, "{json}");
    assert_eq!(json["packets"]["stray"], 0, "no piece taken for a reply");
    assert_eq!(json["tcp"]["pieces"]["split"], 40, "{}", json["tcp"]);
    assert!(json["rtt_ns"]["min"].as_u64().unwrap() >= 5_000_000);
}

/// A peer with Nagle's algorithm on that writes each reply in two parts:
/// the second waits for the client's delayed ACK of the first, tens of
/// milliseconds, and the report names the cause.
#[test]
fn replies_held_by_nagle_on_the_peer_are_named() {
    let peer = Peer::start(|s, _| {
        s.set_nodelay(false).unwrap();
        echo_requests(s, |s, b| {
            s.write_all(&b[..3]).is_ok() && s.write_all(&b[3..]).is_ok()
        });
    });
    let out = synapse()
        .args(["client", &peer.addr(), "--tcp", "--no-ui"])
        .args(["--packets", "20", "--warmup", "5", "--threshold", "1s"])
        .current_dir(common::scratch_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("Nagle's algorithm"), "{text}");
    let stalled: u64 = text
        .split(" with 30-250 ms between pieces")
        .next()
        .and_then(|head| head.rsplit('(').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no stalled count: {text}"));
    assert!(stalled >= 10, "most of 20 replies stall: {text}");
}

#[test]
fn a_reset_mid_run_is_counted_and_the_client_reconnects() {
    // The first connection is reset after 100 replies; later ones echo.
    let peer = Peer::start(|s, k| {
        let mut left = if k == 0 { 100 } else { u32::MAX };
        let keep = s.try_clone().unwrap();
        echo_requests(s, |s, b| {
            left -= 1;
            if left == 0 {
                socket2::SockRef::from(&keep)
                    .set_linger(Some(Duration::ZERO))
                    .unwrap();
                return false;
            }
            s.write_all(b).is_ok()
        });
    });
    let out = client(
        &peer.addr(),
        &["--packets", "500", "--warmup", "0", "--max-loss", "100"],
    );
    let json = passed(&out);
    let tcp = &json["tcp"];
    assert_eq!(tcp["broken"][0], 1, "one reset: {tcp}");
    assert!(tcp["reconnects"].as_u64().unwrap() >= 1, "{tcp}");
    assert!(tcp["connections"].as_u64().unwrap() >= 2, "{tcp}");
    let received = json["packets"]["received"].as_u64().unwrap();
    let lost = json["packets"]["lost"].as_u64().unwrap();
    assert!(lost >= 1, "the request the reset took: {json}");
    assert_eq!(received + lost, 500, "{}", json["packets"]);
    assert!(received >= 490, "{}", json["packets"]);
}

#[test]
fn a_refused_connection_is_a_one_line_error() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    let out = client(&addr, &["--packets", "10"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "as UDP's refusal: {err}");
    assert!(err.contains("refused the TCP connection"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn without_a_server_it_measures_its_own_tcp_echo_on_loopback() {
    let out = synapse()
        .args([
            "--tcp",
            "--packets",
            "300",
            "--json",
            "--tx-stamp-every",
            "16",
        ])
        .current_dir(common::scratch_dir())
        .output()
        .unwrap();
    let json = passed(&out);
    assert_eq!(json["config"]["mode"], "loopback", "{json}");
    assert_eq!(json["config"]["transport"], "tcp", "{json}");
    assert_eq!(json["packets"]["received"], 300, "{json}");
    assert_eq!(json["tcp"]["connections"], 1, "{json}");
    // Its own reflector answered over TCP: the kernel stamped the run.
    assert!(segment(&json, "send_path")["p50_ns"].as_u64().unwrap() > 0);
    // Headless text too, naming the in-process peer.
    let out = synapse()
        .args(["--tcp", "--no-ui", "--packets", "50"])
        .current_dir(common::scratch_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("Target:   the in-process reflector on 127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("Mode:     TCP request/response"), "{text}");
}

#[test]
fn tcp_options_that_do_not_fit_are_usage_errors() {
    let (_server, port) = start_server(&[]);
    let addr = format!("127.0.0.1:{port}");
    for (args, says) in [
        (vec!["client", &addr, "--connect-each"], "add --tcp"),
        (
            vec!["client", &addr, "--tcp", "--interval", "1ms"],
            "UDP only",
        ),
        (vec!["client", &addr, "--tcp", "--stamp"], "plain echo"),
        (vec!["client", &addr, "--tcp=sctp"], "not a transport"),
        (
            vec!["client", &addr, "--tcp", "--ecn", "ect0"],
            "ECN bits are its kernel's",
        ),
    ] {
        let out = synapse()
            .args(&args)
            .args(["--packets", "5", "--json"])
            .current_dir(common::scratch_dir())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn connect_each_opens_one_connection_per_transaction() {
    let (_server, port) = start_server(&[]);
    let out = client(
        &format!("127.0.0.1:{port}"),
        &["--connect-each", "--packets", "200", "--warmup", "10"],
    );
    let json = passed(&out);
    assert_eq!(json["packets"]["received"], 200, "{json}");
    let tcp = &json["tcp"];
    assert_eq!(tcp["connect_each"], true);
    assert_eq!(tcp["connections"], 210, "{tcp}");
    let connect = tcp["connect_ns"]["p50"].as_u64().unwrap();
    let first = tcp["first_byte_ns"]["p50"].as_u64().unwrap();
    assert!(connect > 0 && first > connect, "{tcp}");
}

#[test]
fn socat_as_a_tcp_echo_peer() {
    let Some(socat) = tool("socat", "socat_as_a_tcp_echo_peer") else {
        return;
    };
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let child = std::process::Command::new(socat)
        .arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"))
        .arg("PIPE")
        .spawn()
        .unwrap();
    let _guard = common::Guard(child);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "socat never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = client(&format!("127.0.0.1:{port}"), &["--packets", "1000"]);
    let json = passed(&out);
    assert_eq!(json["packets"]["received"], 1000, "{json}");
    assert_eq!(json["tcp"]["broken"], serde_json::json!([0, 0, 0, 0]));
}

#[test]
fn ctrl_c_keeps_what_was_measured() {
    let (_server, port) = start_server(&[]);
    let child = synapse()
        .args(["client", &format!("127.0.0.1:{port}"), "--tcp", "--json"])
        .args(["--duration", "60s", "--warmup", "10"])
        .current_dir(common::scratch_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    common::unsafe_free_kill(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "interrupted, as with UDP: never a pass"
    );
    let json = json_of(&out.stdout);
    assert_eq!(json["interrupted"], true);
    assert!(
        json["packets"]["received"].as_u64().unwrap() > 100,
        "{json}"
    );
    assert_eq!(json["tcp"]["connections"], 1);
}

#[test]
fn the_server_caps_connections_per_source() {
    let (server, port, banner) =
        common::start_server_with_banner(&["--max-connections-per-source", "2"]);
    assert!(
        banner.contains(&format!("TCP echo on 127.0.0.1:{port} (at most 2")),
        "{banner}"
    );
    let held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    for mut s in &held {
        s.write_all(b"ping").unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"ping");
    }
    let mut third = TcpStream::connect(("127.0.0.1", port)).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = third.write_all(b"ping");
    let mut b = [0u8; 4];
    let got = third.read(&mut b);
    assert!(
        matches!(got, Ok(0)) || got.is_err(),
        "the third is closed unanswered: {got:?}"
    );
    drop(held);
    let (rest, _) = server.interrupt_and_collect();
    assert!(
        rest.contains("TCP totals: 2 connections") && rest.contains("1 over the per-source cap"),
        "{rest}"
    );
}

#[test]
fn over_a_veth_pair_between_namespaces() {
    if !common::netns::usable("over_a_veth_pair_between_namespaces") {
        return;
    }
    let ns = common::netns::Namespaces::new();
    let _server = ns.server_in_b();
    let out = ns
        .synapse_in(&ns.a)
        .args(["client", &format!("{}:7007", common::netns::B_ADDR)])
        .args([
            "--tcp",
            "--json",
            "--packets",
            "500",
            "--tx-stamp-every",
            "1",
        ])
        .current_dir(common::scratch_dir())
        .output()
        .unwrap();
    let json = passed(&out);
    assert_eq!(json["packets"]["received"], 500, "{json}");
    assert_eq!(json["tcp"]["connections"], 1);
    assert_eq!(
        json["breakdown"]["interface"], "vsyn0",
        "{}",
        json["breakdown"]
    );
    assert_eq!(segment(&json, "network")["samples"], 500);
}

/// Replies made late by resends at the very start of a run are each put
/// down to the forward leg, though the first was slower than the second
/// (so the second is not four times the fastest so far). The reflector's
/// host drops the first and the third request segments it gets: request
/// 0 is resent once, and request 1 once (the lab saw such a run place 33
/// of 34 late replies: the second reply went unasked and its resend was
/// counted on no leg).
#[test]
fn resends_at_the_start_of_a_run_are_each_placed() {
    use common::netns::{self, B_ADDR, Namespaces};
    if !netns::usable("resends_at_the_start_of_a_run_are_each_placed") {
        return;
    }
    let ns = Namespaces::new();
    let _server = ns.server_in_b();
    // Requests of 100 bytes are IP packets of 152 (20 + a 32-byte TCP
    // header with timestamps): the first 4 (608 bytes of quota) go to a
    // chain that drops every other one, from the first.
    ns.iptables(&ns.b, &["-N", "first4"]);
    ns.iptables(
        &ns.b,
        &[
            "-A",
            "first4",
            "-m",
            "statistic",
            "--mode",
            "nth",
            "--every",
            "2",
            "--packet",
            "0",
            "-j",
            "DROP",
        ],
    );
    ns.iptables(
        &ns.b,
        &[
            "-A", "INPUT", "-p", "tcp", "--dport", "7007", "-m", "length", "--length", "152", "-m",
            "quota", "--quota", "608", "-j", "first4",
        ],
    );
    let out = ns
        .synapse_in(&ns.a)
        .args(["client", &format!("{B_ADDR}:7007"), "--tcp", "--json"])
        .args(["--size", "100", "--packets", "20", "--warmup", "0"])
        .args(["--timeout", "5s", "--threshold", "10s"])
        .output()
        .unwrap();
    let json = passed(&out);
    assert_eq!(json["packets"]["received"], 20, "{json}");
    let tcp = &json["tcp"];
    assert_eq!(
        tcp["kernel"]["retransmits"], 2,
        "two requests resent: {tcp}"
    );
    assert_eq!(
        tcp["resends"]["forward"], 2,
        "each on the forward leg: {tcp}"
    );
    assert_eq!(tcp["resends"]["leg"], "forward", "{tcp}");
}

/// TCP over IPv6: the server on [::1] (its port read from its banner), one
/// connection for the run and one per transaction, both split.
#[test]
fn over_ipv6_loopback() {
    let child = synapse()
        .args([
            "server",
            "--no-ui",
            "--stamp-port",
            "0",
            "--bind",
            "[::1]:0",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (_guard, _stdout, banner) = common::wait_until_ready(child);
    let port: u16 = banner
        .split("listening on [::1]:")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in the banner: {banner}"));
    let addr = format!("[::1]:{port}");
    let json = passed(&client(
        &addr,
        &[
            "--packets",
            "500",
            "--warmup",
            "20",
            "--tx-stamp-every",
            "1",
        ],
    ));
    assert_eq!(json["packets"]["received"], 500, "{json}");
    assert_eq!(json["tcp"]["connections"], 1, "{json}");
    for name in ["send_path", "network", "receive_path"] {
        assert_eq!(segment(&json, name)["samples"], 500, "{name}");
    }
    let json = passed(&client(
        &addr,
        &["--packets", "100", "--warmup", "5", "--connect-each"],
    ));
    assert_eq!(json["packets"]["received"], 100, "{json}");
    assert_eq!(
        json["tcp"]["connections"], 105,
        "one per transaction: {json}"
    );
}
