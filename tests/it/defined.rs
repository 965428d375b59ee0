//! Figures only where the measurement defines them (issue 50): no length
//! or rate from one request, a paced run's length from its first request
//! to its last reply (not the schedule's next slot), a warm-up that never
//! waits an hour in silence, and STAMP's Follow-Up counts that agree with
//! the loss counts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::time::{Duration, Instant};

#[test]
fn one_request_has_no_length_and_no_rate() {
    let out = synapse()
        .args(["--json", "--packets", "1", "--threshold", "1s"])
        .output()
        .unwrap();
    let j = success_json(&out);
    assert_eq!(j["packets"]["sent"], 1);
    assert!(j["duration_s"].is_null() && j["rate_pps"].is_null(), "{j}");
    assert!(j["rtt_ns"]["p50"].is_u64(), "its round trip it has");
    let out = synapse()
        .args(["--no-ui", "--packets", "1", "--threshold", "1s"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Duration: none from 1 request (no length or rate without two)"),
        "{text}"
    );
    assert!(!text.contains("packets/second"), "{text}");
}

/// An hour's interval, one request: no default warm-up (it would have
/// waited the hour in silence), and the run's length is not the hour the
/// schedule's next slot is away.
#[test]
fn a_slow_schedule_neither_warms_up_for_an_hour_nor_claims_one() {
    let started = Instant::now();
    let out = synapse()
        .args([
            "--json",
            "--interval",
            "1h",
            "--packets",
            "1",
            "--threshold",
            "1s",
        ])
        .output()
        .unwrap();
    let j = success_json(&out);
    assert_eq!(j["config"]["warmup"], 0, "{}", j["config"]);
    assert_eq!(j["packets"]["received"], 1);
    assert!(j["duration_s"].is_null(), "{j}");
    assert!(
        started.elapsed() < Duration::from_secs(600),
        "nowhere near an hour"
    );
    // A warm-up asked for is kept, and said before it starts.
    let mut child = synapse()
        .args([
            "--no-ui",
            "--interval",
            "10s",
            "--warmup",
            "5",
            "--packets",
            "1",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().unwrap()),
        &mut err,
    )
    .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        err.contains("--warmup 5 at one request every 10 s: the first measured request leaves after 50 s of warm-up"),
        "{err}"
    );
}

/// A paced STAMP run with Follow-Up: a slot the sender skipped (a busy
/// machine skips some at 1 ms) no longer costs the held request its
/// Follow-Up, so with nothing lost every Follow-Up finds its request.
#[test]
fn follow_ups_agree_with_the_loss_counts() {
    let _one = one_at_a_time();
    let out = synapse()
        .args([
            "--json",
            "--stamp",
            "--interval",
            "1ms",
            "--tlv",
            "follow-up",
        ])
        .args(["--packets", "2000", "--threshold", "1s", "--timeout", "1s"])
        .output()
        .unwrap();
    let j = success_json(&out);
    let p = &j["packets"];
    let f = &j["stamp_extensions"]["follow_up"];
    if p["lost"] == 0 && p["late"] == 0 {
        assert_eq!(
            f["unmatched"], 0,
            "nothing lost, so none named another: {f} {p}"
        );
    }
    let sent = p["sent"].as_u64().unwrap() + j["config"]["warmup"].as_u64().unwrap();
    let all = ["matched", "none_yet", "unmatched"]
        .iter()
        .map(|k| f[k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(
        all,
        sent - p["lost"].as_u64().unwrap(),
        "one Follow-Up per reply: {f} {p}"
    );
}
