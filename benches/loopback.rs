//! End-to-end RTT on loopback: Synapse's client against Synapse's reflector,
//! side by side with a bare reference ping-pong (minimal `std::net` loops,
//! pinned to the same CPUs), alternating A B C D A B C D: Synapse with
//! user-space stamps only, Synapse with kernel software timestamps (the
//! split), Synapse with the server's per-answer log (the reflector stamps
//! both ways and reads its error queue), and the bare loop. Blocking, then
//! busy-poll.
//!
//! Run: cargo bench --bench loopback            (SYNAPSE_BENCH_ROUNDS=N to change rounds)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::UdpSocket;
use std::time::{Duration, Instant};
use synapse_engine::{
    ClientConfig, Protocol, ReflectorConfig, Role, StopFlag, ThreadPlacement, TimestampMode,
    choose_cpu, pin_thread, start_client, start_reflector,
};

const WARMUP: u64 = 2_000;

struct Round {
    p50: u64,
    p99: u64,
}

/// The bare reference: a reflector thread and a client thread, each pinned,
/// each a handful of lines of `std::net`.
fn bare(busy: bool, client_cpu: usize, reflector_cpu: usize, packets: u64) -> Round {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    server.set_nonblocking(busy).unwrap();
    let reflector = std::thread::spawn(move || {
        pin_thread(reflector_cpu).unwrap();
        let mut buf = [0u8; 2048];
        loop {
            match server.recv_from(&mut buf) {
                Ok((0, _)) => return,
                Ok((n, from)) => {
                    server.send_to(&buf[..n], from).unwrap();
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => panic!("{e}"),
            }
        }
    });
    let client = std::thread::spawn(move || {
        pin_thread(client_cpu).unwrap();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(addr).unwrap();
        sock.set_nonblocking(busy).unwrap();
        let mut rtts = Vec::with_capacity(packets as usize);
        let mut buf = [0u8; 2048];
        for seq in 0..WARMUP + packets {
            let t1 = Instant::now();
            sock.send(&seq.to_le_bytes()).unwrap();
            loop {
                match sock.recv(&mut buf) {
                    Ok(_) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                    Err(e) => panic!("{e}"),
                }
            }
            if seq >= WARMUP {
                rtts.push(t1.elapsed().as_nanos() as u64);
            }
        }
        sock.send(&[]).unwrap();
        rtts
    });
    let mut rtts = client.join().unwrap();
    reflector.join().unwrap();
    rtts.sort_unstable();
    let at = |q: f64| rtts[((rtts.len() - 1) as f64 * q) as usize];
    Round {
        p50: at(0.5),
        p99: at(0.99),
    }
}

/// Synapse: the real engine, with a consumer draining the ring the way the
/// headless runner does.
fn synapse(
    busy: bool,
    client_cpu: usize,
    reflector_cpu: usize,
    packets: u64,
    timestamps: TimestampMode,
    server_log: bool,
) -> Round {
    let pinned = |cpu| ThreadPlacement {
        cpu,
        cpu_auto: false,
        busy_poll: busy,
        rt: false,
        keep_awake: false,
    };
    let mut reflector = start_reflector(
        ReflectorConfig {
            thread: pinned(reflector_cpu),
            // Room for every answer: the ring is read after the round.
            log_capacity: if server_log { 1 << 17 } else { 0 },
            ..ReflectorConfig::new("127.0.0.1:0".parse().unwrap(), Protocol::Echo)
        },
        StopFlag::new(),
    )
    .unwrap();
    let mut run = start_client(
        ClientConfig {
            packets: Some(packets),
            warmup: WARMUP,
            thread: pinned(client_cpu),
            ring_capacity: 1 << 17,
            timestamps,
            ..ClientConfig::new(reflector.local)
        },
        StopFlag::new(),
    )
    .unwrap();
    while !run.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
        while run.records.pop().is_ok() {}
    }
    let outcome = run.join().unwrap();
    reflector.stop();
    let served = reflector.join().unwrap();
    if let Some(mut answers) = reflector.responses.take() {
        assert_eq!(served.log_overflow, 0);
        let mut logged = 0;
        while let Ok(a) = answers.pop() {
            assert!(a.response_ns().is_some(), "answer without kernel stamps");
            logged += 1;
        }
        assert_eq!(logged, packets + WARMUP, "every answer logged");
    }
    let h = outcome.stats.histogram();
    if timestamps == TimestampMode::Software {
        let b = outcome
            .stats
            .breakdown()
            .expect("software stamps give a split");
        for seg in b.segments().iter() {
            assert_eq!(b.missing(seg), 0, "missing {seg:?} stamps");
        }
    }
    assert_eq!(
        outcome.stats.counters().received,
        packets,
        "loopback lost packets"
    );
    Round {
        p50: h.value_at_quantile(0.5),
        p99: h.value_at_quantile(0.99),
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn compare(label: &str, busy: bool, packets: u64, rounds: usize, c: usize, r: usize) {
    println!(
        "\n{label}: {rounds} rounds x {packets} packets (+{WARMUP} warm-up), client CPU {c}, reflector CPU {r}"
    );
    let (mut sp50, mut sp99, mut bp50, mut bp99) = (vec![], vec![], vec![], vec![]);
    let (mut kp50, mut kp99) = (vec![], vec![]);
    let (mut lp50, mut lp99) = (vec![], vec![]);
    let us = |ns: u64| ns as f64 / 1e3;
    for round in 1..=rounds {
        let s = synapse(busy, c, r, packets, TimestampMode::User, false);
        let k = synapse(busy, c, r, packets, TimestampMode::Software, false);
        let l = synapse(busy, c, r, packets, TimestampMode::User, true);
        let b = bare(busy, c, r, packets);
        println!(
            "  round {round}: synapse p50 {:>7.2} p99 {:>7.2} | +kernel stamps p50 {:>7.2} p99 {:>7.2} | +server log p50 {:>7.2} p99 {:>7.2} | bare p50 {:>7.2} p99 {:>7.2} (µs)",
            us(s.p50),
            us(s.p99),
            us(k.p50),
            us(k.p99),
            us(l.p50),
            us(l.p99),
            us(b.p50),
            us(b.p99)
        );
        lp50.push(l.p50);
        lp99.push(l.p99);
        sp50.push(s.p50);
        sp99.push(s.p99);
        kp50.push(k.p50);
        kp99.push(k.p99);
        bp50.push(b.p50);
        bp99.push(b.p99);
    }
    let (s50, s99, b50, b99) = (median(sp50), median(sp99), median(bp50), median(bp99));
    let (k50, k99) = (median(kp50), median(kp99));
    let (l50, l99) = (median(lp50), median(lp99));
    println!(
        "  median:  synapse p50 {:.2} p99 {:.2} | +kernel stamps p50 {:.2} p99 {:.2} | +server log p50 {:.2} p99 {:.2} | bare p50 {:.2} p99 {:.2} (µs)",
        us(s50),
        us(s99),
        us(k50),
        us(k99),
        us(l50),
        us(l99),
        us(b50),
        us(b99)
    );
    println!(
        "  ratios:  synapse/bare p50 {:.3} p99 {:.3} | stamps on/off p50 {:.3} p99 {:.3} | server log on/off p50 {:.3} p99 {:.3}",
        s50 as f64 / b50 as f64,
        s99 as f64 / b99 as f64,
        k50 as f64 / s50 as f64,
        k99 as f64 / s99 as f64,
        l50 as f64 / s50 as f64,
        l99 as f64 / s99 as f64
    );
    // Machine-readable (benches/run-all.sh): result MODE.CONFIG P50_NS P99_NS ROUNDS
    let mode = if busy { "busy" } else { "blocking" };
    for (name, p50, p99) in [
        ("user", s50, s99),
        ("kernel", k50, k99),
        ("log", l50, l99),
        ("bare", b50, b99),
    ] {
        println!("result {mode}.{name} {p50} {p99} {rounds}");
    }
}

fn main() {
    let rounds = std::env::var("SYNAPSE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let (c, _) = choose_cpu(None, Role::Client).unwrap();
    let (r, _) = choose_cpu(None, Role::Reflector).unwrap();
    compare("blocking", false, 20_000, rounds, c, r);
    compare("busy-poll", true, 100_000, rounds, c, r);
}
