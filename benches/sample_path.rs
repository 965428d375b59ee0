//! Sample path throughput: what every measured packet costs after the
//! socket calls. Synapse's path (engine-side `Stats::record` + ring push, then
//! consumer-side pop + `Stats::record`, on two pinned threads) side by side
//! with a bare reference (one thread recording straight into a histogram),
//! alternating A B A B. Then, on one thread, in the same run: what the
//! engine's `Stats::record` costs per sample, for a ping-pong run and for a
//! paced STAMP run (schedule, jitter, one-way delays, loss direction), next
//! to the bare histogram record.
//!
//! Run: cargo bench --bench sample_path

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;
use synapse_engine::{Role, choose_cpu, pin_thread};
use synapse_stats::{FarSide, Pattern, Record, Shape, Stats};

const N: u64 = 20_000_000;
/// Rounds unless SYNAPSE_BENCH_ROUNDS says otherwise.
const ROUNDS: usize = 5;

fn rounds() -> usize {
    std::env::var("SYNAPSE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(ROUNDS)
}

fn rtt(i: u64) -> u64 {
    // A spread of plausible RTTs, so the histogram touches many buckets.
    20_000 + (i.wrapping_mul(2_654_435_761) % 200_000)
}

/// Synapse: producer records and pushes, consumer pops and records.
fn synapse_path(cpu_a: usize, cpu_b: usize) -> f64 {
    let (mut tx, mut rx) = rtrb::RingBuffer::<Record>::new(1 << 17);
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        pin_thread(cpu_a).unwrap();
        let mut engine_stats = Stats::new();
        let mut dropped = 0u64;
        for i in 0..N {
            let r = Record::sample(i, i, rtt(i), false);
            engine_stats.record(&r);
            // The engine never waits; here we count what a real run would drop.
            if tx.push(r).is_err() {
                dropped += 1;
            }
        }
        (engine_stats.counters().received, dropped)
    });
    pin_thread(cpu_b).unwrap();
    let mut live = Stats::new();
    let mut got = 0u64;
    loop {
        match rx.pop() {
            Ok(r) => {
                live.record(&r);
                got += 1;
            }
            Err(_) if producer.is_finished() && rx.is_empty() => break,
            Err(_) => std::hint::spin_loop(),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let (recorded, dropped) = producer.join().unwrap();
    assert_eq!(recorded, N, "engine statistics must hold every sample");
    assert_eq!(got + dropped, N);
    if dropped > 0 {
        eprintln!("  (live view dropped {dropped} records: consumer slower than producer)");
    }
    N as f64 / secs
}

/// Reference: the bare minimum, one thread, one histogram.
fn bare_reference(cpu: usize) -> f64 {
    pin_thread(cpu).unwrap();
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 120_000_000_000, 3).unwrap();
    let start = Instant::now();
    for i in 0..N {
        h.saturating_record(rtt(i));
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(h.len(), N);
    N as f64 / secs
}

/// One thread: the engine's own `Stats::record` per sample, in ns, for
/// statistics of the given shape.
fn stats_record(cpu: usize, shape: Shape) -> f64 {
    pin_thread(cpu).unwrap();
    let mut s = Stats::shaped(shape);
    let start = Instant::now();
    for i in 0..N {
        let (fwd, bwd) = (30_000 + (i % 7) as i64, 40_000 - (i % 5) as i64);
        let far = FarSide::new(i as u32)
            .with_application(Some(fwd + 5_000), Some(bwd + 5_000))
            .with_kernel(Some(fwd), Some(bwd))
            .with_errors(Some(1_000.0), Some(1_000.0));
        let r = Record::sample(i, i * 1_000, rtt(i), false)
            .with_send_lag(i % 3_000)
            .with_far(far);
        s.record(std::hint::black_box(&r));
    }
    let ns = start.elapsed().as_nanos() as f64 / N as f64;
    assert_eq!(s.counters().received, N);
    ns
}

/// One thread: the bare histogram record, in ns per sample.
fn bare_ns(cpu: usize) -> f64 {
    1e9 / bare_reference(cpu)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (a, _) = choose_cpu(None, Role::Client).unwrap();
    let (b, _) = choose_cpu(None, Role::Reflector).unwrap();
    let rounds = rounds();
    println!(
        "sample path, {N} samples per round, {rounds} rounds, producer CPU {a}, consumer CPU {b}"
    );
    let (mut syn, mut bare) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let s = synapse_path(a, b);
        let r = bare_reference(a);
        println!(
            "round {round}: synapse {:6.1} M samples/s   bare histogram {:6.1} M/s",
            s / 1e6,
            r / 1e6
        );
        syn.push(s);
        bare.push(r);
    }
    let (s, r) = (median(&mut syn), median(&mut bare));
    println!(
        "median:  synapse {:.1} M samples/s, bare {:.1} M/s, ratio bare/synapse {:.2}",
        s / 1e6,
        r / 1e6,
        r / s
    );
    let paced = Shape {
        schedule: Some((Pattern::Periodic, 1_000_000)),
        one_way: Some(false),
        ..Shape::default()
    };
    println!("\nStats::record on one thread, CPU {a}, ns per sample");
    let (mut pp, mut pc, mut br) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        let (x, y, z) = (
            stats_record(a, Shape::default()),
            stats_record(a, paced),
            bare_ns(a),
        );
        println!("round {round}: ping-pong {x:5.1}   paced STAMP {y:5.1}   bare histogram {z:5.1}");
        pp.push(x);
        pc.push(y);
        br.push(z);
    }
    let (x, y, z) = (median(&mut pp), median(&mut pc), median(&mut br));
    println!("median:  ping-pong {x:.1} ns, paced STAMP {y:.1} ns, bare {z:.1} ns");
    // Machine-readable (benches/run-all.sh).
    println!("result path.synapse_msps {:.2} {rounds}", s / 1e6);
    println!("result path.bare_msps {:.2} {rounds}", r / 1e6);
    println!("result record.pingpong_ns {x:.2} {rounds}");
    println!("result record.paced_ns {y:.2} {rounds}");
    println!("result record.bare_ns {z:.2} {rounds}");
}
