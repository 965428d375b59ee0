//! The engine through its library API and real sockets: a scripted
//! misbehaving peer with exact expected counts, and a consumer that never
//! reads its ring.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;
use synapse_engine::{
    ClientConfig, Protocol, ReflectorConfig, StopFlag, start_client, start_reflector,
};
use synapse_stats::Counters;

fn client_config(
    server: SocketAddr,
    packets: u64,
    warmup: u64,
    timeout_ms: u64,
    ring: usize,
) -> ClientConfig {
    ClientConfig {
        bind: Some("127.0.0.1:0".parse().unwrap()),
        packets: Some(packets),
        warmup,
        timeout: Duration::from_millis(timeout_ms),
        ring_capacity: ring,
        ..ClientConfig::new(server)
    }
}

fn seq_of(buf: &[u8]) -> u64 {
    u64::from_le_bytes(buf[..8].try_into().unwrap())
}

/// Receives the next request, asserting it carries `want`.
fn expect(peer: &UdpSocket, want: u64) -> (Vec<u8>, SocketAddr) {
    let mut buf = [0u8; 64];
    let (n, from) = peer.recv_from(&mut buf).unwrap();
    assert_eq!(seq_of(&buf[..n]), want, "peer expected request {want}");
    (buf[..n].to_vec(), from)
}

#[test]
fn a_misbehaving_peer_is_classified_exactly() {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server = peer.local_addr().unwrap();
    let mut run = start_client(client_config(server, 10, 0, 150, 1024), StopFlag::new()).unwrap();

    let script = std::thread::spawn(move || {
        // 0: a clean echo.
        let (p, c) = expect(&peer, 0);
        peer.send_to(&p, c).unwrap();
        // 1: dropped.
        expect(&peer, 1);
        // 2: echoed twice.
        let (p, c) = expect(&peer, 2);
        peer.send_to(&p, c).unwrap();
        peer.send_to(&p, c).unwrap();
        // 3: held back until 4 arrives, then answered after 4: late and reordered.
        let (p3, c) = expect(&peer, 3);
        let (p4, _) = expect(&peer, 4);
        peer.send_to(&p4, c).unwrap();
        peer.send_to(&p3, c).unwrap();
        // 5: garbage of the wrong size, a stray from another host, then the echo.
        let (p, c) = expect(&peer, 5);
        peer.send_to(b"garbage!!", c).unwrap();
        stranger.send_to(&p, c).unwrap();
        peer.send_to(&p, c).unwrap();
        // 6: answered only after the client gave up and sent 7: late, in order.
        let (p6, c) = expect(&peer, 6);
        let (p7, _) = expect(&peer, 7);
        peer.send_to(&p6, c).unwrap();
        peer.send_to(&p7, c).unwrap();
        // 8: a reply for a sequence never sent, then the real one.
        let (p, c) = expect(&peer, 8);
        let mut bogus = p.clone();
        bogus[..8].copy_from_slice(&1_000u64.to_le_bytes());
        peer.send_to(&bogus, c).unwrap();
        peer.send_to(&p, c).unwrap();
        // 9: dropped.
        expect(&peer, 9);
    });

    let outcome = run.join().unwrap();
    script.join().unwrap();
    assert_eq!(
        *outcome.stats.counters(),
        Counters {
            sent: 10,
            received: 6, // 0 2 4 5 7 8
            lost: 2,     // 1 9
            late: 2,     // 3 6
            duplicate: 1,
            reordered: 1, // 3 after 4
            stray: 3,     // garbage, stranger, unknown sequence
        }
    );
    assert_eq!(outcome.stats.histogram().len(), 6);
}

#[test]
fn warmup_is_excluded_from_statistics() {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server = peer.local_addr().unwrap();
    let mut run = start_client(client_config(server, 3, 4, 100, 64), StopFlag::new()).unwrap();
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        for _ in 0..7 {
            let (n, c) = peer.recv_from(&mut buf).unwrap();
            peer.send_to(&buf[..n], c).unwrap();
        }
    });
    let outcome = run.join().unwrap();
    echo.join().unwrap();
    assert_eq!(outcome.stats.counters().sent, 3);
    assert_eq!(outcome.stats.counters().received, 3);
}

#[test]
fn a_stalled_consumer_loses_nothing_from_the_final_statistics() {
    let reflector = start_reflector(
        ReflectorConfig::new("127.0.0.1:0".parse().unwrap(), Protocol::Echo),
        StopFlag::new(),
    )
    .unwrap();
    // A ring of 16 records, never read: the live view overflows at once.
    let mut run = start_client(
        client_config(reflector.local, 5_000, 10, 1000, 16),
        StopFlag::new(),
    )
    .unwrap();
    let outcome = run.join().unwrap();
    let c = outcome.stats.counters();
    assert_eq!(c.sent, 5_000);
    assert_eq!(c.received + c.lost + c.late, 5_000);
    assert_eq!(outcome.stats.histogram().len(), c.received);
    assert!(
        c.received > 4_900,
        "loopback should not lose packets: {c:?}"
    );
    assert!(
        outcome.ring_overflow >= 5_010 - 16,
        "ring overflow {}",
        outcome.ring_overflow
    );
    let mut reflector = reflector;
    reflector.stop();
    let totals = reflector.join().unwrap().totals;
    assert_eq!(totals.packets, 5_010);
}

#[test]
fn stop_flag_ends_an_unbounded_run_promptly() {
    // Two spinning threads: nothing else measures beside them.
    let _one = crate::common::one_at_a_time();
    let mut cfg = ReflectorConfig::new("127.0.0.1:0".parse().unwrap(), Protocol::Echo);
    cfg.thread.busy_poll = true;
    let mut reflector = start_reflector(cfg, StopFlag::new()).unwrap();
    let stop = StopFlag::new();
    let mut cfg = client_config(reflector.local, 0, 0, 100, 1024);
    cfg.packets = None;
    cfg.thread.busy_poll = true;
    let mut run = start_client(cfg, stop.clone()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    stop.raise();
    let started = std::time::Instant::now();
    let outcome = run.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(outcome.interrupted);
    assert!(outcome.stats.counters().received > 0);
    reflector.stop();
    reflector.join().unwrap();
}

#[test]
fn a_late_reply_to_a_warmup_packet_is_not_counted() {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let server = peer.local_addr().unwrap();
    // Two warm-up packets (0, 1), then two measured ones (2, 3).
    let mut run = start_client(client_config(server, 2, 2, 100, 1024), StopFlag::new()).unwrap();
    let script = std::thread::spawn(move || {
        let (p, c) = expect(&peer, 0);
        peer.send_to(&p, c).unwrap();
        // Warm-up packet 1 is answered only after measured packet 2.
        let (p1, c) = expect(&peer, 1);
        let (p2, _) = expect(&peer, 2);
        peer.send_to(&p2, c).unwrap();
        peer.send_to(&p1, c).unwrap();
        let (p, c) = expect(&peer, 3);
        peer.send_to(&p, c).unwrap();
    });
    let outcome = run.join().unwrap();
    script.join().unwrap();
    assert_eq!(
        *outcome.stats.counters(),
        Counters {
            sent: 2,
            received: 2,
            ..Counters::default()
        },
        "the warm-up packet's late reply belongs to the warm-up"
    );
}

#[test]
fn replies_slower_than_the_timeout_are_reported_as_such() {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let server = peer.local_addr().unwrap();
    let mut run = start_client(client_config(server, 100, 0, 20, 1024), StopFlag::new()).unwrap();
    // Answer each request only once the next one has arrived.
    let slow = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let mut held: Option<(Vec<u8>, SocketAddr)> = None;
        while let Ok((n, from)) = peer.recv_from(&mut buf) {
            if let Some((p, c)) = held.take() {
                peer.send_to(&p, c).unwrap();
            }
            held = Some((buf[..n].to_vec(), from));
        }
    });
    let e = run.join().unwrap_err().to_string();
    slow.join().unwrap();
    assert_eq!(
        e,
        format!("replies from {server} arrive after the 20 ms timeout: raise --timeout")
    );
}

#[test]
fn stopping_does_not_wait_out_a_long_timeout() {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server = peer.local_addr().unwrap();
    let stop = StopFlag::new();
    // A silent peer and a one-minute timeout.
    let mut run = start_client(client_config(server, 10, 0, 60_000, 1024), stop.clone()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let asked = std::time::Instant::now();
    stop.raise();
    let outcome = run.join().unwrap();
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "took {:?}",
        asked.elapsed()
    );
    assert!(outcome.interrupted);
    assert_eq!(
        outcome.stats.counters().sent,
        0,
        "the abandoned packet is not counted"
    );
    drop(peer);
}
