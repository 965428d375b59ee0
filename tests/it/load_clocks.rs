//! The one-way stages of a load run under a reflector clock made to drift
//! and to step mid-run (a test build's reflector shifts every timestamp it
//! writes: `SYNAPSE_TEST_REFLECTOR_CLOCK`; a namespace has no clock of its
//! own). The drift is read from the idle phases and followed, the step is
//! found and flagged, and neither is read as inflation: the queue (a
//! shallow 10 Mbit/s bucket toward the client) stays on the way back.

use crate::common::announce;
use crate::common::bottleneck::{Bottleneck, Egress};
use crate::common::netns;
use crate::common::*;
use serde_json::Value;

fn download(lab: &Bottleneck, clock: &str) -> Value {
    let _server = lab.server_with(&[], &[("SYNAPSE_TEST_REFLECTOR_CLOCK", clock)]);
    let out = lab
        .client(&[
            "--load",
            "download",
            "--load-phase",
            "5s",
            "--load-streams",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out.stdout)
}

/// A download whose queue formed, and whether it did: the round trip's
/// own median inflation (read apart from the stages under test) at least
/// 5 ms, of the 16 ms the bucket holds. A busy machine can keep the bulk
/// senders from filling it; such a run is measured again, up to three
/// times, each retry said, and when none filled it the checks of where the
/// queue sits are said unjudged (the clock's are made on the last run).
fn download_queued(lab: &Bottleneck, clock: &str, test: &str) -> (Value, bool) {
    for attempt in 1..=3 {
        let j = download(lab, clock);
        let rtt = j["load"]["phases"][1]["inflation_ns"]["p50"]
            .as_f64()
            .unwrap();
        if rtt >= 5e6 {
            return (j, true);
        }
        let why = format!(
            "the download's median round trip was inflated by {:.2} ms: its queue did not form",
            rtt / 1e6
        );
        announce::retry(test, attempt, &why);
        if attempt == 3 {
            announce::unjudged(test, &format!("where the queue sits ({clock})"), &why);
            return (j, false);
        }
    }
    unreachable!("the third attempt returns")
}

#[test]
fn drift_is_followed_and_a_step_flagged_neither_read_as_inflation() {
    let test = "drift_is_followed_and_a_step_flagged_neither_read_as_inflation";
    if !netns::usable(test) {
        return;
    }
    if std::env::var_os("SYNAPSE_TEST_BIN").is_some() || !cfg!(debug_assertions) {
        crate::common::announce::skip(
            test,
            "only a test (debug) build's reflector shifts its clock",
        );
        return;
    }
    let _one = one_at_a_time();
    let lab = Bottleneck::new();
    lab.bucket(Egress::RouterToClient, "20kb");

    // 300 ppm: the offset moves 1.5 ms over the 5 s phase.
    let (j, queued) = download_queued(&lab, "drift_ppm=300", test);
    let clock = &j["load"]["clock"];
    let drift = clock["drift_ppm"].as_f64().unwrap();
    println!(
        "drift {drift} ppm; {}",
        j["load"]["phases"][1]["stage_inflation_ns"]
    );
    assert!(
        (drift - 300.0).abs() < 30.0,
        "300 ppm read from the idle phases: {drift}"
    );
    assert_eq!(
        clock["steps"].as_array().map(Vec::len),
        Some(0),
        "a slew is no step"
    );
    let d = &j["load"]["phases"][1];
    let stage = |k: &str| d["stage_inflation_ns"][k].as_f64().unwrap();
    assert!(
        stage("forward").abs() < 300_000.0,
        "no queue that way: {}",
        d["stage_inflation_ns"]
    );
    if queued {
        assert!(
            stage("backward") > 5e6,
            "the queue: {}",
            d["stage_inflation_ns"]
        );
        assert!(d["stage_share"]["backward"].as_f64().unwrap() > 0.9);
    }

    // A step of +40 ms three seconds in: inside the download phase.
    let (j, queued) = download_queued(&lab, "step_ms=40,step_at_s=3", test);
    let steps = j["load"]["clock"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{}", j["load"]["clock"]);
    let size = steps[0]["size_ns"].as_f64().unwrap();
    let bound = steps[0]["bound_ns"].as_f64().unwrap();
    println!("step {size} ± {bound} ns");
    assert!(
        (size - 40e6).abs() <= bound,
        "+40 ms within {size} ± {bound}"
    );
    assert!(bound < 20e6, "read closely enough to tell: ± {bound}");
    let d = &j["load"]["phases"][1];
    assert_eq!(d["clock_step"], true, "flagged: {d}");
    let s = &d["stage_inflation_ns"];
    assert!(
        s.get("forward").is_none() && s.get("backward").is_none(),
        "not split: {s}"
    );
    let network = s["network"].as_f64().unwrap();
    assert!(network < 30e6, "not the step: {s}");
    assert!(!queued || network > 5e6, "the queue: {s}");
    let rtt = d["inflation_ns"]["p50"].as_f64().unwrap();
    assert!(rtt < 30e6, "the round trip never sees an offset: {rtt}");
}
