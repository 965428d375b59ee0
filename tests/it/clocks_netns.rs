//! Two hosts on one clock: namespaces A and B joined by a veth pair, a
//! paced STAMP run of 20 s from A to Synapse's reflector in B. Synapse
//! cannot know both ends read one kernel's clock (B is another address),
//! so everything it says of the clocks comes from the stamps; the truth is
//! known here: the offset is 0 and nothing drifts. The figures between
//! the kernel's cut points (T1 and T4 the kernel's stamps here, T2 the
//! reflector's kernel RX stamp, T3 its kernel TX stamp carried by
//! Follow-Up) must hold that truth: the offset within its printed bound,
//! that bound tight on veth, the two legs alike, no drift claimed.

use crate::common::netns::{self, B_ADDR, Namespaces};
use crate::common::*;

#[test]
fn on_one_clock_the_offset_holds_zero_and_the_kernel_legs_agree() {
    if !netns::usable("on_one_clock_the_offset_holds_zero") {
        return;
    }
    let _one = one_at_a_time();
    let ns = Namespaces::new();
    let _server = ns.server_in_b();
    let out = ns
        .synapse_in(&ns.a)
        .args([
            "client",
            &format!("{B_ADDR}:8862"),
            "--stamp",
            "--tlv",
            "follow-up",
        ])
        .args(["--interval", "10ms", "--duration", "20s", "--warmup", "10"])
        .args(["--json", "--threshold", "1s", "--timeout", "500ms"])
        .output()
        .unwrap();
    let j = success_json(&out);
    let w = &j["one_way_ns"];
    assert_eq!(w["same_clock"], false, "another address: {w}");
    let k = &w["kernel"];
    let o = &k["clocks"];
    let (offset, bound) = (
        o["offset_ns"].as_i64().unwrap(),
        o["bound_ns"].as_i64().unwrap(),
    );
    println!("offset {offset} ± {bound} ns; drift {}", o["drift"]);
    assert!(
        offset.abs() <= bound,
        "the truth, 0, is outside {offset} ± {bound}"
    );
    assert!(bound <= 20_000, "a tight exchange on veth: ± {bound} ns");
    assert_eq!(o["steps"].as_array().map(Vec::len), Some(0), "{o}");
    assert_eq!(o["drift"]["resolved"], false, "no drift on one clock: {o}");
    let p50 = |leg: &str| k[leg]["p50"].as_i64().unwrap();
    let (fwd, bwd) = (p50("forward"), p50("backward"));
    println!("kernel legs: forward p50 {fwd} ns, backward p50 {bwd} ns");
    assert!(
        (fwd - bwd).abs() <= 2_000,
        "kernel cut points, one clock, one veth: {fwd} against {bwd}"
    );
    let received = j["packets"]["received"].as_u64().unwrap();
    assert!(received >= 1_900, "{received} replies");
    assert!(
        k["backward"]["samples"].as_u64().unwrap() >= received - 20,
        "a measured T3 from Follow-Up on nearly every reply: {k}"
    );
    // Both ends say what this kernel says of its clock: an unsynchronised
    // clock bounds nothing, and then no delay is a figure.
    let synced = synapse_engine::protocol::clock_state::ClockState::of_this_host().synchronized;
    let e = &w["clock_errors"];
    assert_eq!(e["replies"], received, "{e}");
    if synced {
        assert!(w["error_bound_ns"].is_u64(), "{w}");
    } else {
        assert_eq!(e["reflector_unsynchronized"], received, "{e}");
        assert!(w["error_bound_ns"].is_null(), "{w}");
        assert_eq!(k["forward"]["trusted"], false, "{k}");
        let why = w["untrusted_reason"].as_str().unwrap();
        assert!(why.contains("synchronised (S=0"), "{why}");
    }
}
