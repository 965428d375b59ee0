//! STAMP (RFC 8762) both ways, against peers built here byte by byte from
//! the RFC's layout (not with Synapse's own codec): `synapse server` as a
//! session-reflector driven by a hand-made session-sender, and `synapse
//! client --stamp` as a session-sender answered by a hand-made reflector.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::io::Read;
use std::net::UdpSocket;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const NTP_UNIX: u64 = 2_208_988_800;

fn ntp_now() -> (u32, u32) {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    (
        (d.as_secs() + NTP_UNIX) as u32,
        ((u64::from(d.subsec_nanos()) << 32) / 1_000_000_000) as u32,
    )
}

fn ntp_secs(b: &[u8]) -> f64 {
    let s = u32::from_be_bytes(b[..4].try_into().unwrap());
    let f = u32::from_be_bytes(b[4..8].try_into().unwrap());
    f64::from(s) + f64::from(f) / 4_294_967_296.0
}

/// Figure 3: sequence, timestamp, error estimate (S=1, scale 1, mult 2), 30 MBZ.
fn sender_packet(seq: u32, (secs, frac): (u32, u32)) -> Vec<u8> {
    let mut p = Vec::with_capacity(44);
    p.extend(seq.to_be_bytes());
    p.extend(secs.to_be_bytes());
    p.extend(frac.to_be_bytes());
    p.extend([0x81, 0x02]);
    p.extend([0u8; 30]);
    p
}

fn start(args: &[&str]) -> (Guard, u16, u16) {
    let (echo, stamp) = (free_udp_port(), free_udp_port());
    let child = synapse()
        .args([
            "server",
            "--no-ui",
            "--bind",
            &format!("127.0.0.1:{echo}"),
            "--stamp-port",
            &stamp.to_string(),
        ])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_echo(echo);
    (Guard(child), echo, stamp)
}

#[test]
fn answers_stamp_session_senders_byte_for_byte() {
    let (mut server, _, port) = start(&[]);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let synced = synapse_engine::protocol::clock_state::ClockState::of_this_host().synchronized;
    for (reflector_seq, seq) in [(0u32, 1u32), (1, 2), (2, 0xFFFF_FFFF)] {
        let t1 = ntp_now();
        let request = sender_packet(seq, t1);
        s.send_to(&request, ("127.0.0.1", port)).unwrap();
        let mut r = [0u8; 128];
        let (n, _) = s.recv_from(&mut r).unwrap();
        let r = &r[..n];
        assert_eq!(n, 44, "symmetric size");
        assert_eq!(
            &r[0..4],
            &reflector_seq.to_be_bytes(),
            "stateful reflector: its own count for this sender, from 0"
        );
        // The error estimate: S as the kernel says of this host's clock,
        // Z = 0 (NTP format), a multiplier that is never 0.
        assert_eq!(r[12] & 0x80 != 0, synced, "S bit");
        assert_eq!(r[12] & 0x40, 0, "Z bit");
        assert_ne!(r[13], 0, "multiplier");
        if !synced {
            assert_eq!(
                &r[12..14],
                &[0x3f, 0xff],
                "unsynchronised: the largest error"
            );
        }
        assert_eq!(&r[14..16], &[0, 0], "MBZ");
        assert_eq!(
            &r[24..28],
            &seq.to_be_bytes(),
            "session-sender sequence echoed"
        );
        assert_eq!(
            &r[28..36],
            &request[4..12],
            "session-sender timestamp echoed"
        );
        assert_eq!(
            &r[36..38],
            &[0x81, 0x02],
            "session-sender error estimate echoed"
        );
        assert_eq!(&r[38..40], &[0, 0], "MBZ");
        assert_eq!(r[40], 64, "TTL of the request as it arrived");
        assert_eq!(&r[41..44], &[0, 0, 0], "MBZ");
        let (t1, t2, t3) = (
            ntp_secs(&request[4..12]),
            ntp_secs(&r[16..24]),
            ntp_secs(&r[4..12]),
        );
        // One host, one clock: T1 ≤ T2 ≤ T3, all within a second.
        assert!(
            t1 - 1e-6 <= t2 && t2 <= t3 && t3 - t1 < 1.0,
            "T1 {t1} T2 {t2} T3 {t3}"
        );
    }
    // Zero padding (RFC 8762) comes back as sent. Octets after the base
    // packet that are not zeros are RFC 8972 TLVs: here a header claiming
    // 0xABAB octets, so it is malformed (M flag, RFC 8972 §4) and the rest
    // comes back untouched, never read as more TLVs. Malformed base
    // packets get nothing.
    let mut r = [0u8; 128];
    let mut padded = sender_packet(9, ntp_now());
    padded.extend([0; 20]);
    s.send_to(&padded, ("127.0.0.1", port)).unwrap();
    let (n, _) = s.recv_from(&mut r).unwrap();
    assert_eq!((n, &r[44..64]), (64, &[0; 20][..]));
    let mut garbage = sender_packet(9, ntp_now());
    garbage.extend([0xAB; 20]);
    s.send_to(&garbage, ("127.0.0.1", port)).unwrap();
    let (n, _) = s.recv_from(&mut r).unwrap();
    assert_eq!((n, r[44], &r[45..64]), (64, 0x40, &[0xAB; 19][..]));
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    s.send_to(&[1, 2, 3], ("127.0.0.1", port)).unwrap();
    let mut zero_mult = sender_packet(10, ntp_now());
    zero_mult[13] = 0;
    s.send_to(&zero_mult, ("127.0.0.1", port)).unwrap();
    assert!(
        s.recv_from(&mut r).is_err(),
        "malformed packets are not answered"
    );

    server.interrupt();
    let mut out = String::new();
    server
        .0
        .stdout
        .as_mut()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(server.0.wait().unwrap().code(), Some(0));
    assert!(
        out.contains(&format!("STAMP (RFC 8762) reflector on 127.0.0.1:{port}")),
        "{out}"
    );
    assert!(
        out.contains("STAMP totals: 1 session, 5 packets reflected (refused: 2 malformed)"),
        "{out}"
    );
    assert!(
        !out.contains("T2 from user space"),
        "the kernel stamped every request: {out}"
    );
}

/// The default STAMP port (862) unavailable, in use here or for want of
/// privilege, is a note, and echo goes on. (A port given with --stamp-port
/// that cannot be bound is an error: see tests/it/small.rs.)
#[test]
fn an_unavailable_default_stamp_port_is_noted_once_and_echo_goes_on() {
    // Taken here when this runs as root; refused to a user anyway.
    let _taken = UdpSocket::bind("127.0.0.1:862");
    let echo = free_udp_port();
    let child = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Guard(child);
    wait_for_echo(echo);
    server.interrupt();
    let mut err = String::new();
    server
        .0
        .stderr
        .as_mut()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(server.0.wait().unwrap().code(), Some(0));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("synapse: note: STAMP not served (cannot bind UDP 127.0.0.1:862: "),
        "{err}"
    );
    assert!(err.ends_with("); plain echo goes on\n"), "{err}");
}

/// A session-reflector written from RFC 8762 figure 4, answering `count`
/// requests with T3 − T2 of exactly `dwell_ns`. Before the 31st request's
/// answer it sends a malformed 20-byte datagram. Checks each request's
/// layout (figure 3) on the way.
fn hand_made_reflector(count: usize, dwell_ns: u64) -> (u16, std::thread::JoinHandle<()>) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let port = s.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        for (i, own_seq) in (0..count).zip(1000u32..) {
            let mut q = [0u8; 128];
            let (n, from) = s.recv_from(&mut q).unwrap();
            let q = &q[..n];
            assert_eq!(n, 44, "unauthenticated sender packets are 44 octets");
            let err = u16::from_be_bytes([q[12], q[13]]);
            assert_eq!(err & 0x4000, 0, "Z = 0: NTP timestamps");
            assert_ne!(err & 0xFF, 0, "error multiplier must not be zero");
            assert!(q[14..44].iter().all(|&b| b == 0), "MBZ");
            let t1 = ntp_secs(&q[4..12]);
            let (secs, frac) = ntp_now();
            assert!((f64::from(secs) + f64::from(frac) / 4_294_967_296.0 - t1).abs() < 5.0);
            let t2 = (u64::from(secs) << 32) | u64::from(frac);
            // dwell in 2^-32 s units
            let t3 = t2 + (dwell_ns << 32) / 1_000_000_000;
            let mut r = Vec::with_capacity(44);
            r.extend(own_seq.to_be_bytes());
            r.extend(t3.to_be_bytes());
            r.extend([0x00, 0x01]);
            r.extend([0, 0]);
            r.extend(t2.to_be_bytes());
            r.extend(&q[0..4]);
            r.extend(&q[4..12]);
            r.extend(&q[12..14]);
            r.extend([0, 0]);
            r.push(64);
            r.extend([0, 0, 0]);
            assert_eq!(r.len(), 44);
            if i == 30 {
                s.send_to(&[0xEE; 20], from).unwrap();
            }
            s.send_to(&r, from).unwrap();
        }
    });
    (port, handle)
}

#[test]
fn synapse_client_speaks_stamp_to_another_reflector() {
    let (port, reflector) = hand_made_reflector(60, 7_000);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stamp.csv");
    let out = synapse()
        .args(["client", &format!("127.0.0.1:{port}"), "--stamp", "--json"])
        .args(["--packets", "50", "--warmup", "10", "--timeout", "2000ms"])
        .args(["--threshold", "1s", "--timestamps", "user", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    reflector.join().unwrap();
    let j = success_json(&out);
    assert_eq!(j["packets"]["received"], 50);
    assert_eq!(j["packets"]["lost"], 0);
    assert_eq!(
        j["packets"]["stray"], 1,
        "the malformed datagram is counted"
    );
    let segs = j["breakdown"]["segments"].as_array().unwrap();
    assert_eq!(segs.len(), 1, "user-space stamps: only the dwell");
    assert_eq!(segs[0]["segment"], "server_dwell");
    let p50 = segs[0]["p50_ns"].as_u64().unwrap();
    assert!(p50.abs_diff(7_000) <= 10, "dwell p50 {p50}");
    let text = std::fs::read_to_string(&log).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t2, t3) = (column("T2_SW"), column("T3_SW"));
    for row in text.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f[column("STATUS")], "ok", "{row}");
        let at = |i: usize| -> u64 {
            let (s, n) = f[i].split_once('.').unwrap();
            s.parse::<u64>().unwrap() * 1_000_000_000 + n.parse::<u64>().unwrap()
        };
        let dwell = at(t3) - at(t2);
        assert!(dwell.abs_diff(7_000) <= 1, "T3 - T2 = {dwell} ns");
    }
}

/// Ping-pong, and a paced run too short to give up on its peer (50 slots
/// of 1 ms, under ten 50 ms timeouts): both name the fault, neither
/// reports every request lost and as many strays.
#[test]
fn stamp_against_a_plain_echo_server_says_so() {
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    echo.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let port = echo.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 128];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            let _ = echo.send_to(&buf[..n], from);
        }
    });
    for paced in [&[][..], &["--interval", "1ms"][..]] {
        let out = synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--stamp", "--no-ui"])
            .args(["--packets", "50", "--timeout", "50ms"])
            .args(paced)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{paced:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            format!(
                "synapse: error: 127.0.0.1:{port} echoes STAMP requests back unchanged: it is a plain echo server, not a STAMP session-reflector (drop --stamp)"
            ),
            "{paced:?}"
        );
    }
}

/// Authenticated mode end to end on loopback: signed requests are
/// answered and measured; a plain client gets nothing from that reflector,
/// and is counted as unauthenticated.
#[test]
fn an_authenticated_reflector_answers_signed_requests_only() {
    let key = key_file("00112233445566778899aabbccddeeff\n", 0o600);
    let path = key.path().to_str().unwrap();
    let echo = free_udp_port();
    let stamp = free_udp_port();
    let child = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
        .args(["--stamp-port", &stamp.to_string(), "--hmac-key-file", path])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, stdout, banner) = wait_until_ready(child);
    assert!(banner.contains("authenticated requests only"), "{banner}");
    let server = Server { guard, stdout };
    let client = |extra: &[&str]| {
        synapse()
            .args(["client", &format!("127.0.0.1:{stamp}"), "--stamp", "--json"])
            .args(["--packets", "100", "--warmup", "0", "--timeout", "100ms"])
            .args(extra)
            .output()
            .unwrap()
    };
    let j = success_json(&client(&["--hmac-key-file", path]));
    assert_eq!(j["packets"]["received"], 100, "{j}");
    assert!(j["breakdown"]["segments"].is_array(), "the split: {j}");
    let plain = client(&[]);
    assert_eq!(plain.status.code(), Some(2), "no answer without the key");
    let (out, _) = server.interrupt_and_collect();
    assert!(
        out.contains("STAMP totals: 2 sessions, 100 packets reflected"),
        "{out}"
    );
    assert!(out.contains("(refused: 10 unauthenticated)"), "{out}");
}

/// A reflector whose answers do not carry our HMAC (another key, or a
/// man in the middle): none is measured, each is counted, and the run
/// says why it got no reply.
#[test]
fn answers_that_fail_the_hmac_are_counted_never_measured() {
    let forger = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = forger.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = forger.recv_from(&mut buf) {
            // A well-formed answer (T2 set) whose HMAC no longer matches.
            buf[32..40].copy_from_slice(&[0xE0, 0, 0, 1, 0, 0, 0, 1]);
            let _ = forger.send_to(&buf[..n], from);
        }
    });
    let key = key_file("00112233445566778899aabbccddeeff", 0o600);
    let out = synapse()
        .args(["client", &format!("127.0.0.1:{port}"), "--stamp"])
        .args(["--hmac-key-file", key.path().to_str().unwrap()])
        .args([
            "--no-ui",
            "--packets",
            "20",
            "--warmup",
            "0",
            "--timeout",
            "50ms",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no answer carries a valid HMAC"), "{err}");
}

/// The key file is checked before anything is sent: readable by others,
/// too short, or given without --stamp, each a one-line usage error.
#[test]
fn bad_key_files_are_usage_errors() {
    let open = key_file("00112233445566778899aabbccddeeff", 0o644);
    let short = key_file("0011", 0o600);
    for (args, says) in [
        (
            vec![
                "client",
                "--stamp",
                "--hmac-key-file",
                open.path().to_str().unwrap(),
            ],
            "chmod 600",
        ),
        (
            vec!["server", "--hmac-key-file", short.path().to_str().unwrap()],
            "at least 16",
        ),
        (
            vec!["client", "--hmac-key-file", short.path().to_str().unwrap()],
            "needs --stamp",
        ),
        (
            vec![
                "server",
                "--stamp-port",
                "0",
                "--hmac-key-file",
                "/nonexistent",
            ],
            "needs --stamp",
        ),
    ] {
        let out = synapse().args(&args).arg("--no-ui").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(says) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}

/// `synapse --stamp --hmac-key-file` on loopback: the in-process reflector
/// authenticates with the client's key, so the run is answered in full.
#[test]
fn the_loopback_reflector_shares_the_clients_key() {
    let key = key_file("00112233445566778899aabbccddeeff", 0o600);
    let j = success_json(
        &synapse()
            .args(["--stamp", "--hmac-key-file", key.path().to_str().unwrap()])
            .args(["--json", "--packets", "200", "--warmup", "10"])
            .output()
            .unwrap(),
    );
    assert_eq!(j["packets"]["received"], 200, "{j}");
    assert_eq!(j["unauthenticated_replies"], 0, "{j}");
}
