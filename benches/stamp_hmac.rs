//! What authenticated STAMP adds per packet: the reflector's work on one
//! request (verify, rewrite in place, sign) and the client's (sign a
//! request, verify a reply), next to the same work unauthenticated, in the
//! same run, alternating, on one pinned thread.
//!
//! Run: cargo bench --bench stamp_hmac

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;
use synapse_engine::stamp;
use synapse_engine::stamp::{ErrorEstimate, Layout, Reflection, SenderPacket, WireTime};
use synapse_engine::stamp_key::StampKey;
use synapse_engine::{Role, choose_cpu, pin_thread};

const N: u32 = 1_000_000;
const ROUNDS: usize = 5;

/// ns per request: the reflector's answer in layout `at`, with `key`.
fn reflector(at: Layout, key: Option<&StampKey>) -> f64 {
    let mut buf = [0u8; 112];
    let start = Instant::now();
    for seq in 0..N {
        SenderPacket {
            seq,
            timestamp: WireTime::from_unix_ns(u64::from(seq)),
            error: ErrorEstimate::UNSYNCHRONIZED,
            ssid: 0,
        }
        .encode_as(&mut buf, at);
        if let Some(k) = key {
            k.sign(&mut buf);
        }
        // The reflector's share starts here; the request above is the
        // client's, and is timed the same way in both modes.
        if let Some(k) = key {
            assert!(k.verifies(black_box(&buf)));
        }
        let how = Reflection {
            t2: WireTime::from_unix_ns(1),
            ttl: 64,
            seq: None,
            error: ErrorEstimate::UNSYNCHRONIZED,
        };
        stamp::reflect_in_place(&mut buf, at, how, || WireTime::from_unix_ns(2)).unwrap();
        if let Some(k) = key {
            k.sign(&mut buf);
            assert!(k.verifies(black_box(&buf)));
        }
        black_box(&buf);
    }
    start.elapsed().as_nanos() as f64 / f64::from(N)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (cpu, _) = choose_cpu(None, Role::Client).unwrap();
    pin_thread(cpu).unwrap();
    let key = StampKey::from_hex("00112233445566778899aabbccddeeff").unwrap();
    println!(
        "one request and its answer (client sign + reflector verify, reflect, sign + client verify), ns, CPU {cpu}"
    );
    let (mut open, mut auth) = (Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        let o = reflector(Layout::OPEN, None);
        let a = reflector(Layout::AUTHENTICATED, Some(&key));
        println!("round {round}: unauthenticated {o:7.1}   authenticated {a:7.1}");
        open.push(o);
        auth.push(a);
    }
    let (o, a) = (median(&mut open), median(&mut auth));
    println!(
        "median: unauthenticated {o:.1} ns, authenticated {a:.1} ns: HMAC work {:.1} ns per exchange (4 HMACs), {:.1} ns per HMAC",
        a - o,
        (a - o) / 4.0
    );
    // Machine-readable (benches/run-all.sh): result NAME NS ROUNDS
    println!("result open_ns {o:.2} {ROUNDS}");
    println!("result auth_ns {a:.2} {ROUNDS}");
}
