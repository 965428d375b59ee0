//! `synapse calibrate` end to end: the real binary measures this machine
//! (`--quick`), keeps the result, and a later run reports against it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use crate::common::{success_json, synapse};
use serde_json::Value;

/// One measurement at a time: two calibrations (or a calibration and
/// another test that measures) side by side would each spin two threads on
/// this machine's two cores, and measure each other.
fn calibrate(state: &std::path::Path) -> Value {
    let _one = common::one_at_a_time();
    success_json(
        &synapse()
            .args(["calibrate", "--quick", "--json", "--state"])
            .arg(state)
            .output()
            .unwrap(),
    )
}

const KEYS: [&str; 9] = [
    "clock_read_ns",
    "syscall_ns",
    "context_switch_same_core_ns",
    "wakeup_cross_core_ns",
    "udp_blocking_rtt_ns",
    "tcp_blocking_rtt_ns",
    "udp_busy_poll_rtt_ns",
    "tx_timestamping_cost_ns",
    "timer_overshoot_ns",
];

fn two_cpus() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

#[test]
fn the_figures_have_their_fixed_keys_and_the_order_physics_demands() {
    let test = "the_figures_have_their_fixed_keys_and_the_order_physics_demands";
    if !two_cpus() {
        common::announce::skip(test, "needs two CPUs for the cross-core figures");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("calibration.json");
    let doc = calibrate(&state);
    for key in KEYS {
        assert!(doc[key].is_number(), "{key}: {}", doc[key]);
        assert!(doc["p99"][key].is_number(), "p99 {key}");
    }
    let ns = |k: &str| doc[k].as_f64().unwrap();
    assert!(ns("clock_read_ns") > 0.0);
    assert!(ns("clock_read_ns") < ns("syscall_ns"), "{doc}");
    assert!(
        ns("syscall_ns") < ns("context_switch_same_core_ns"),
        "{doc}"
    );
    assert!(ns("timer_overshoot_ns") >= 0.0);
    // A TCP round trip on loopback wakes both sides as UDP's does, and
    // runs more stack: never under the syscall. (That spinning beats
    // waking holds only with a CPU free for each spinner, which a busy
    // runner does not give: benches/calibrate_vs_c.sh checks it, and TCP
    // within 20 x UDP, on a quiet machine.)
    assert!(ns("tcp_blocking_rtt_ns") > ns("syscall_ns"), "{doc}");
    for key in KEYS.iter().filter(|k| **k != "tx_timestamping_cost_ns") {
        assert!(
            doc["p99"][*key].as_f64().unwrap() >= ns(key),
            "p99 below p50: {key}"
        );
    }
    // The audit: every item says what it is now; the ones to change say how.
    let audit = doc["audit"].as_array().unwrap();
    assert_eq!(audit.len(), 9);
    for f in audit {
        assert!(f["now"].is_string());
        assert_eq!(f["ok"].as_bool().unwrap(), f["fix"].is_null(), "{f}");
    }
    // Kept, with host and kernel, as printed.
    assert_eq!(doc["kept"].as_str(), Some(state.to_str().unwrap()));
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(kept["syscall_ns"], doc["syscall_ns"]);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(kept["kernel"].as_str(), Some(kernel.trim()));
}

#[test]
fn a_run_after_calibrating_reports_its_p50_against_the_floor() {
    if !two_cpus() {
        common::announce::skip(
            "a_run_after_calibrating_reports_its_p50_against_the_floor",
            "needs two CPUs for the loopback floor",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("synapse").join("calibration.json");
    let doc = calibrate(&state);
    let run = |extra: &[&str]| -> Value {
        success_json(
            &synapse()
                .env("XDG_STATE_HOME", dir.path())
                .args(["--no-ui", "--json", "--packets", "2000"])
                .args(extra)
                .output()
                .unwrap(),
        )
    };
    let _one = common::one_at_a_time();
    let busy = run(&["--busy-poll"]);
    let floor = &busy["floor"];
    assert_eq!(floor["mode"], "busy_poll");
    assert_eq!(floor["floor_p50_ns"], doc["udp_busy_poll_rtt_ns"]);
    let ratio = floor["ratio"].as_f64().unwrap();
    let p50 = busy["rtt_ns"]["p50"].as_f64().unwrap();
    assert!((ratio - p50 / floor["floor_p50_ns"].as_f64().unwrap()).abs() < 1e-9);
    assert_eq!(floor["remote_peer"], false);
    let blocking = run(&[]);
    assert_eq!(blocking["floor"]["mode"], "blocking");
    assert_eq!(
        blocking["floor"]["two_wakeups_ns"].as_f64(),
        doc["wakeup_cross_core_ns"].as_f64().map(|w| 2.0 * w)
    );
    // The text report says it in words.
    let out = synapse()
        .env("XDG_STATE_HOME", dir.path())
        .args(["--no-ui", "--packets", "2000", "--busy-poll"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("this host's loopback busy-poll floor"),
        "{text}"
    );
}

#[test]
fn without_a_calibration_no_floor_is_claimed() {
    let out = synapse()
        .args(["--no-ui", "--json", "--packets", "200"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["floor"].is_null(), "{}", doc["floor"]);
}

#[test]
fn bad_cpus_are_a_usage_error() {
    for (cpus, says) in [
        ("0,0", "must differ"),
        ("0,4096", "not one this process may run on"),
        ("x", "A,B"),
    ] {
        let out = synapse()
            .args(["calibrate", "--quick", "--no-save", "--cpus", cpus])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--cpus {cpus}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "--cpus {cpus}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

/// Starts a full calibration (a few seconds), waits until it says it is
/// measuring `step` (`None`: for a second; `--json` says nothing on the
/// way), and interrupts it as Ctrl-C would. Returns its exit code and
/// stdout.
fn interrupted_at(step: Option<&str>, args: &[&str]) -> (Option<i32>, String) {
    use std::io::{BufRead, BufReader, Read};
    let _one = common::one_at_a_time();
    let mut child = synapse()
        .arg("calibrate")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(step) = step {
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let wanted = format!("measuring {step}…");
        let mut seen = Vec::new();
        for line in stderr.lines() {
            let line = line.unwrap();
            let found = line.ends_with(&wanted);
            seen.push(line);
            if found {
                break;
            }
        }
        assert!(
            seen.last().is_some_and(|l| l.ends_with(&wanted)),
            "never said {wanted:?}: {seen:?}"
        );
    } else {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    common::unsafe_free_kill(child.id(), "INT");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (child.wait().unwrap().code(), out)
}

/// Ctrl-C keeps what was measured: the figures so far are printed, the
/// rest are not made up, nothing is kept (it would replace a whole
/// calibration) and the exit status says it was interrupted.
#[test]
fn ctrl_c_prints_the_figures_so_far_and_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("calibration.json");
    let state_arg = state.to_str().unwrap();
    let (code, out) = interrupted_at(Some("timer overshoot"), &["--state", state_arg]);
    assert_eq!(code, Some(130), "{out}");
    let row = |label: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} row: {out}"))
            .to_string()
    };
    assert!(row("syscall (getpid)").contains(" ns"), "{out}");
    let busy = row("UDP RTT, busy-poll, two CPUs");
    assert_eq!(
        busy.split_whitespace().rev().take(2).collect::<Vec<_>>(),
        ["-", "-"],
        "{out}"
    );
    assert!(
        out.contains("(interrupted: the figures shown as - were not measured)"),
        "{out}"
    );
    assert!(out.contains("Not kept: interrupted"), "{out}");
    assert!(!state.exists(), "a calibration in part was kept");

    // A second in: the clock reads are done (milliseconds), the last
    // figure (a second of busy-poll after four seconds of others) is not.
    let (code, out) = interrupted_at(None, &["--json", "--state", state_arg]);
    assert_eq!(code, Some(130), "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["interrupted"], true);
    assert!(doc["clock_read_ns"].is_number(), "{doc}");
    assert!(doc["tx_timestamping_cost_ns"].is_null(), "{doc}");
    assert!(doc["kept"].is_null() && !state.exists(), "{doc}");
}
