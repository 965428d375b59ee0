//! `synapse server` against real clients: several at once, back to back,
//! third-party echo servers, and hostile input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::net::UdpSocket;
use std::process::Stdio;
use std::time::Duration;

fn client_json(port: u16, packets: u32) -> serde_json::Value {
    let out = synapse()
        .args([
            "client",
            &format!("127.0.0.1:{port}"),
            "--json",
            "--threshold",
            "1s",
        ])
        .args(["--packets", &packets.to_string(), "--warmup", "20"])
        // Correctness, not latency: a loaded CI box may stall a thread for
        // longer than the 100 ms default, and that is not a lost packet.
        .args(["--timeout", "2000ms"])
        .output()
        .unwrap();
    success_json(&out)
}

fn assert_clean(j: &serde_json::Value, packets: u64) {
    let p = &j["packets"];
    assert_eq!(p["sent"], packets);
    assert_eq!(p["received"], packets, "{p}");
    for key in ["lost", "late", "duplicate", "reordered", "stray"] {
        assert_eq!(p[key], 0, "packets.{key}: {p}");
    }
}

#[test]
fn two_clients_at_once_are_both_clean() {
    let (_server, port) = start_server(&[]);
    let a = std::thread::spawn(move || client_json(port, 20_000));
    let b = std::thread::spawn(move || client_json(port, 20_000));
    assert_clean(&a.join().unwrap(), 20_000);
    assert_clean(&b.join().unwrap(), 20_000);
}

#[test]
fn a_client_can_start_again_immediately() {
    let (_server, port) = start_server(&[]);
    for _ in 0..3 {
        assert_clean(&client_json(port, 500), 500);
    }
}

/// Datagrams that queue up (ten sockets sending before reading, and an
/// eleventh sending a 65,507-byte one in mid-burst) are answered in
/// batches: each socket gets exactly its own bytes back, in order, and every
/// session and the totals count them, whichever path answered them. A
/// reflector the machine kept from reading for long enough loses some to
/// its full receive queue: each one missing must be one the kernel counted
/// as dropped, and the rest still its socket's own, in order. (No rate
/// limits: the burst, from one address, would outrun the buckets whenever
/// the reflector reads it faster than it refills, which is the limits'
/// test, not this one.)
#[test]
fn a_burst_from_many_sockets_is_answered_datagram_for_datagram() {
    // A busy-poll reflector spins a CPU: nothing else measures beside it.
    let _one = one_at_a_time();
    let unlimited = ["--max-pps", "0", "--max-total-pps", "0"];
    for mode in [&unlimited[..], &[&unlimited[..], &["--busy-poll"]].concat()] {
        let (server, port) = start_server(mode);
        let sockets: Vec<UdpSocket> = (0..10)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let big = UdpSocket::bind("127.0.0.1:0").unwrap();
        let payload = |s: usize, i: usize| -> Vec<u8> {
            (0..=(i % 97)).map(|k| (s * 31 + i + k) as u8).collect()
        };
        for i in 0..100 {
            for (s, socket) in sockets.iter().enumerate() {
                socket.send_to(&payload(s, i), ("127.0.0.1", port)).unwrap();
            }
            if i == 50 {
                big.send_to(&[0xAB; 65_507], ("127.0.0.1", port)).unwrap();
            }
        }
        let mut buf = vec![0u8; 70_000];
        let mut got = Vec::new();
        for (s, socket) in sockets.iter().chain([&big]).enumerate() {
            socket
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            let sent: Vec<Vec<u8>> = if s < 10 {
                (0..100).map(|i| payload(s, i)).collect()
            } else {
                vec![vec![0xAB; 65_507]]
            };
            // Each reply the next of this socket's own, in order: a
            // missing one is skipped over, never another's taken.
            let mut next = sent.iter();
            let mut answered = 0;
            while let Ok(n) = socket.recv(&mut buf) {
                assert!(
                    next.any(|p| p[..] == buf[..n]),
                    "{mode:?}: socket {s}: reply {answered} is not one of its own, in order"
                );
                answered += 1;
                if answered == sent.len() {
                    break;
                }
            }
            got.push(answered);
        }
        // Read while the reflector's socket is open (the count goes with it).
        let mut ports = vec![port];
        ports.extend(
            sockets
                .iter()
                .chain([&big])
                .map(|s| s.local_addr().unwrap().port()),
        );
        let dropped: u64 = ports.iter().map(|&p| proc_udp::drops(p)).sum();
        let server_drops = proc_udp::drops(port);
        let (out, code) = server.interrupt_and_collect();
        assert_eq!(code, Some(0));
        let answered: usize = got.iter().sum();
        assert_eq!(
            1_001 - answered as u64,
            dropped,
            "{mode:?}: every one missing dropped by the kernel: {got:?}: {out}"
        );
        for n in &got[..10] {
            assert!(
                out.contains(&format!("  {n} packets  ")),
                "{mode:?}: a session of {n}: {out}"
            );
        }
        assert!(
            out.contains(&format!(
                "totals: 11 sessions, {} packets,",
                thousands(1_001 - server_drops)
            )),
            "{mode:?}: {server_drops} dropped on arrival: {out}"
        );
    }
}

/// `n` as the reports print it (`1,001`).
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bound to the wildcard address, the reflector answers from the address
/// each request came to, not the one the route back prefers (127.0.0.1
/// here): clients that take replies only from where they sent (connected
/// sockets, as Synapse's own) get every one, echo and STAMP, one at a time
/// and in a burst (answered in batches).
#[test]
fn a_wildcard_reflector_answers_from_the_address_asked() {
    let (port, stamp_port) = (free_udp_port(), free_udp_port());
    let child = synapse()
        .args(["server", "--no-ui", "--bind", &format!("0.0.0.0:{port}")])
        .args(["--stamp-port", &stamp_port.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (_guard, _stdout, _) = wait_until_ready(child);
    for (to, stamp) in [
        (format!("127.0.0.2:{port}"), false),
        (format!("127.0.0.3:{stamp_port}"), true),
    ] {
        let out = synapse()
            .args([
                "client",
                &to,
                "--json",
                "--packets",
                "200",
                "--timeout",
                "2000ms",
            ])
            .args(stamp.then_some("--stamp"))
            .output()
            .unwrap();
        assert_clean(&success_json(&out), 200);
    }
    let sockets: Vec<UdpSocket> = (0..4)
        .map(|_| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.connect(("127.0.0.2", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            s
        })
        .collect();
    for i in 0..50u8 {
        for s in &sockets {
            s.send(&[i]).unwrap();
        }
    }
    let mut buf = [0u8; 8];
    for s in &sockets {
        for i in 0..50u8 {
            let n = s.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[i]);
        }
    }
}

#[test]
fn sessions_are_reported_as_they_end_and_totals_on_ctrl_c() {
    let (server, port) = start_server(&["--session-idle", "200ms"]);
    assert_clean(&client_json(port, 1000), 1000);
    // Idle long enough for the session to end while the server runs on.
    std::thread::sleep(Duration::from_millis(600));
    // A second client still talking when Ctrl-C comes is reported too.
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.send_to(&[1; 100], ("127.0.0.1", port)).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let (out, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = out.lines().collect();
    // 1020 packets (1000 + 20 warm-up) of 8 bytes.
    assert!(lines[0].starts_with("session ended: 127.0.0.1:"), "{out}");
    assert!(lines[0].ends_with("  1,020 packets  8,160 bytes"), "{out}");
    assert!(lines[1].ends_with("  1 packet  100 bytes"), "{out}");
    assert_eq!(
        lines[2], "totals: 2 sessions, 1,021 packets, 8,260 bytes echoed",
        "{out}"
    );
    assert_eq!(lines.len(), 3, "{out}");
}

#[test]
fn the_reflector_echoes_anything_exactly_and_survives() {
    let (_server, port) = start_server(&[]);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = vec![0u8; 70_000];
    let big: Vec<u8> = (0..65_507u32).map(|i| (i * 7 % 251) as u8).collect();
    let garbage: Vec<u8> = (0..333u32).map(|i| (i * 13 % 256) as u8).collect();
    for payload in [&b""[..], b"x", &garbage, &big] {
        s.send_to(payload, ("127.0.0.1", port)).unwrap();
        let (n, _) = s.recv_from(&mut buf).unwrap();
        assert_eq!(
            &buf[..n],
            payload,
            "echo of {} bytes differs",
            payload.len()
        );
    }
    assert_clean(&client_json(port, 300), 300);
}

#[test]
fn interoperates_with_socat_as_an_rfc862_echo_server() {
    for size in ["8", "512"] {
        // One socat per run, without `fork`: UDP4-LISTEN answers the first
        // peer it hears from in a single process. The forking RECVFROM mode
        // starts a process per datagram, and under a loaded CI run it once
        // stopped answering for good after 235 packets.
        let port = free_udp_port();
        let socat = std::process::Command::new("socat")
            .args([&format!("UDP4-LISTEN:{port},bind=127.0.0.1"), "PIPE"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("socat must be installed (.ci/run installs it)");
        let _socat = Guard(socat);
        wait_for_udp_bound(port);
        let out = synapse()
            .args([
                "client",
                &format!("127.0.0.1:{port}"),
                "--json",
                "--threshold",
                "1s",
            ])
            // A generous timeout: socat is an ordinary process that a loaded
            // test run may deschedule for longer than the 100 ms default.
            .args([
                "--packets",
                "300",
                "--warmup",
                "10",
                "--size",
                size,
                "--timeout",
                "1000ms",
            ])
            .output()
            .unwrap();
        let j = success_json(&out);
        assert_eq!(
            j["packets"]["received"], 300,
            "size {size}: {}",
            j["packets"]
        );
    }
}

#[test]
fn ipv6_loopback_works() {
    let port = free_udp_port();
    let child = synapse()
        .args([
            "server",
            "--no-ui",
            "--stamp-port",
            "0",
            "--bind",
            &format!("[::1]:{port}"),
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Guard(child);
    std::thread::sleep(Duration::from_millis(300));
    let out = synapse()
        .args([
            "client",
            &format!("[::1]:{port}"),
            "--json",
            "--packets",
            "300",
            "--threshold",
            "1s",
        ])
        .output()
        .unwrap();
    assert_clean(&success_json(&out), 300);
}

#[test]
fn datagrams_from_service_ports_are_never_answered() {
    let (server, port) = start_server(&[]);
    // A spoofed "reply" from another reflector's port (here: port 999) must
    // not start two reflectors bouncing it forever. Binding below 1024
    // needs root, as CI has.
    let service = UdpSocket::bind("127.0.0.1:999").expect("this test needs root to bind port 999");
    service
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    service.send_to(b"bounce me", ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 64];
    assert!(
        service.recv_from(&mut buf).is_err(),
        "answered a service port"
    );
    let (out, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0));
    assert!(out.contains("(refused: 1 service port)"), "{out}");
}

/// An echo server that cuts datagrams short is named as such, not taken
/// for one that does not answer.
#[test]
fn a_truncating_echo_server_is_named() {
    let port = free_udp_port();
    let socat = std::process::Command::new("socat")
        .args([&format!("UDP4-LISTEN:{port},bind=127.0.0.1"), "PIPE"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("socat must be installed (.ci/run installs it)");
    let _socat = Guard(socat);
    wait_for_udp_bound(port);
    let out = synapse()
        .args(["client", &format!("127.0.0.1:{port}"), "--no-ui"])
        .args(["--size", "9000", "--timeout", "200ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("were 8192 bytes, expected 9000 (the echo server truncates)"),
        "{err}"
    );
}

/// `--allow`: a source outside the networks gets nothing back and is
/// counted as "not allowed"; one inside is answered as before.
#[test]
fn only_allowed_sources_are_answered_and_the_rest_counted() {
    let (server, port) = start_server(&["--allow", "127.0.0.1/32", "--allow", "::1"]);
    let ask = |from: &str| {
        let s = UdpSocket::bind(from).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        s.send_to(b"anyone there?", ("127.0.0.1", port)).unwrap();
        let mut buf = [0u8; 64];
        s.recv_from(&mut buf).map(|(n, _)| buf[..n].to_vec()).ok()
    };
    assert_eq!(ask("127.0.0.1:0").as_deref(), Some(&b"anyone there?"[..]));
    for _ in 0..3 {
        assert_eq!(ask("127.0.0.2:0"), None, "127.0.0.2 is not allowed");
    }
    let (out, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0));
    assert!(out.contains("(refused: 3 not allowed)"), "{out}");
    assert!(out.contains("totals: 1 session, 1 packet"), "{out}");
}

#[test]
fn the_banner_names_the_allowed_networks_and_bad_ones_are_refused() {
    let (_server, _, banner) =
        start_server_with_banner(&["--allow", "192.0.2.0/24", "--allow", "2001:db8::/32"]);
    assert!(
        banner.contains("Answering only 192.0.2.0/24, 2001:db8::/32"),
        "{banner}"
    );
    let out = synapse()
        .args(["server", "--no-ui", "--allow", "10.0.0.0/40"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the prefix length must be 0..=32"), "{err}");
}

/// The same from real, distinct addresses: a reflector in one network
/// namespace, two sources in the other (10.231.0.1 allowed, 10.231.0.3
/// not), over a veth pair.
#[test]
fn allow_lists_hold_between_network_namespaces() {
    use crate::common::netns::{self, A_ADDR, B_ADDR, Namespaces};
    if !netns::usable("allow_lists_hold_between_network_namespaces") {
        return;
    }
    let ns = Namespaces::new();
    let server = ns.two_sources_and_a_server(&["--allow", &format!("{A_ADDR}/32")]);
    let measure = |from: &str| {
        ns.synapse_in(&ns.a)
            .args(["client", &format!("{B_ADDR}:7007"), "--bind", from])
            .args([
                "--json",
                "--packets",
                "200",
                "--warmup",
                "0",
                "--timeout",
                "50ms",
            ])
            .output()
            .unwrap()
    };
    let allowed = measure(A_ADDR);
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    assert_eq!(json_of(&allowed.stdout)["packets"]["received"], 200);
    let refused = measure("10.231.0.3");
    assert!(
        !refused.status.success(),
        "a source not allowed got answers"
    );
    let (out, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0));
    // The refused client gives up after its first unanswered requests: each
    // of them was counted, none answered.
    let n: u64 = out
        .split(" not allowed)")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no refusal count: {out}"));
    assert!(n >= 1, "{out}");
    assert!(out.contains("totals: 1 session, 200 packets"), "{out}");
}

/// Datagrams the kernel's per-CPU input queues dropped, every CPU
/// (`/proc/net/softnet_stat`'s second column, hexadecimal).
fn backlog_drops() -> u64 {
    std::fs::read_to_string("/proc/net/softnet_stat")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|h| u64::from_str_radix(h, 16).unwrap())
        .sum()
}

/// Answers merged for one source (UDP GSO) over a link with a small MTU:
/// 1,400-byte answers cannot go as one message there (the kernel refuses
/// GSO past the MTU) and go one by one, fragmented; 200-byte ones go
/// merged. A paced client at 40,000 requests/s keeps several waiting at
/// the reflector, so it batches. Every request is answered, whole: a
/// reply the client did not get is one its own socket buffer or a busy
/// CPU's input queue dropped (counted by the kernel), never a mangled or
/// missing answer.
#[test]
fn bursts_over_a_small_mtu_link_are_answered_whole() {
    use crate::common::netns::{self, A_ADDR, B_ADDR, Namespaces};
    if !netns::usable("bursts_over_a_small_mtu_link_are_answered_whole") {
        return;
    }
    let ns = Namespaces::new();
    for (name, dev) in [(&ns.a, "vsyn0"), (&ns.b, "vsyn1")] {
        netns::ip(&["-n", name, "link", "set", dev, "mtu", "1280"]);
    }
    let server = ns.two_sources_and_a_server(&[]);
    let rcvbuf_errors = |name: &str| ns.udp_counter(name, "RcvbufErrors");
    for size in ["1400", "200", "1400"] {
        let dropped_before = rcvbuf_errors(&ns.a);
        let backlog_before = backlog_drops();
        let out = ns
            .synapse_in(&ns.a)
            .args(["client", &format!("{B_ADDR}:7007"), "--bind", A_ADDR])
            .args(["--json", "--rate", "40000", "--duration", "1s"])
            .args(["--size", size, "--warmup", "0", "--timeout", "500ms"])
            .output()
            .unwrap();
        let j = json_of(&out.stdout);
        let sent = j["packets"]["sent"].as_u64().unwrap();
        let received = j["packets"]["received"].as_u64().unwrap();
        let dropped = rcvbuf_errors(&ns.a) - dropped_before;
        // A CPU starved by other work (a busy runner) lets the veth's
        // per-CPU input queue overflow too: the kernel counts those
        // drops machine-wide (other tests' among them), so they bound
        // what is missing beyond the client's own socket's drops.
        let backlog = backlog_drops() - backlog_before;
        assert!(sent > 1000, "{size} bytes: {j}");
        assert!(received + dropped <= sent, "{size} bytes: {j}");
        assert!(
            received + dropped + backlog >= sent,
            "{size} bytes, {dropped} dropped by the socket, {backlog} by the input queues: {j}"
        );
        assert_eq!(j["packets"]["stray"], 0, "{size} bytes: {j}");
    }
    assert_eq!(
        rcvbuf_errors(&ns.b),
        0,
        "the reflector's socket dropped requests"
    );
    let (out, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0));
    assert!(
        !out.contains("send error") && !out.contains("refused"),
        "{out}"
    );
}

/// `--user`: the ports are bound first, then the server is that user for
/// good (real, effective and saved ids, every thread), and still answers.
#[test]
fn the_server_drops_to_its_user_after_binding() {
    if !is_root() {
        announce::skip(
            "the_server_drops_to_its_user_after_binding",
            "needs root (CI runs as root)",
        );
        return;
    }
    let nobody = std::process::Command::new("id")
        .args(["-u", "nobody"])
        .output()
        .unwrap();
    let uid = String::from_utf8_lossy(&nobody.stdout).trim().to_string();
    let (server, port, banner) = start_server_with_banner(&["--user", "nobody"]);
    assert!(
        banner.contains(&format!("Running as nobody (uid {uid}")),
        "{banner}"
    );
    let pid = server.guard.0.id();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    for task in tasks {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap();
        let ids = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
        let ids: Vec<&str> = ids.split_whitespace().skip(1).collect();
        assert_eq!(ids, [uid.as_str(); 4], "{status}");
    }
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    s.send_to(b"still here", ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 32];
    assert_eq!(s.recv(&mut buf).unwrap(), 10);
    let (_, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0));
    let out = synapse()
        .args([
            "server",
            "--no-ui",
            "--bind",
            "127.0.0.1:0",
            "--stamp-port",
            "0",
        ])
        .args(["--user", "no-such-user-here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--user no-such-user-here: no such user"),
        "{err}"
    );
}
