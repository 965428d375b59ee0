//! Latency under load on loopback, end to end through the binary: a bare
//! `synapse --load` (its in-process reflector and load server), its JSON
//! `load` object and its per-packet log's PHASE column; a client against
//! `synapse server --load-port`, its text report, and its options kept in
//! a profile.

use crate::common::*;
use serde_json::Value;

/// The phases' names of a JSON report.
fn names(j: &Value) -> Vec<&str> {
    j["load"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect()
}

#[test]
fn a_bare_load_run_tags_every_probe_with_its_phase() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probes.csv");
    let out = synapse()
        .args([
            "--load",
            "download",
            "--load-phase",
            "2s",
            "--load-streams",
            "1",
        ])
        .args(["--json", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    let j = success_json(&out);
    assert_eq!(names(&j), ["idle", "download", "idle"]);
    assert_eq!(
        j["config"]["protocol"], "stamp",
        "the in-process reflector answers STAMP"
    );
    let d = &j["load"]["phases"][1];
    assert!(d["goodput_bps"]["down"].as_f64().unwrap() > 1e6, "{d}");
    assert!(
        d["goodput_bps"].get("up").is_none(),
        "not loaded that way: {d}"
    );
    assert_eq!(d["streams"]["down"], 1);
    for key in [
        "send_path",
        "send_queue",
        "forward",
        "far_side",
        "backward",
        "receive_path",
    ] {
        assert!(
            d["stage_inflation_ns"][key].is_f64(),
            "{key} measured on loopback: {d}"
        );
    }
    assert!(
        d["stage_inflation_ns"].get("network").is_none(),
        "the legs are split: {d}"
    );
    assert_eq!(
        j["load"]["clock"]["drift_ppm"].as_f64().map(f64::round),
        Some(0.0),
        "one clock"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().ends_with(",PHASE"));
    let phases: Vec<&str> = lines.map(|l| l.rsplit(',').next().unwrap()).collect();
    let count = |p: &str| phases.iter().filter(|x| **x == p).count();
    assert!(
        count("idle") > 50 && count("download") > 100,
        "{} rows",
        phases.len()
    );
    // Every probe the report counts is a row of the log.
    let sent: u64 = j["load"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["loss"]["sent"].as_u64().unwrap())
        .sum();
    assert!(
        phases.len() as u64 >= sent,
        "{} rows, {sent} probes measured",
        phases.len()
    );
}

#[test]
fn a_client_against_a_load_port_reports_its_phases_and_keeps_them_in_a_profile() {
    let _one = one_at_a_time();
    let (server, echo, banner) =
        start_server_with_banner(&["--load-port", "0", "--load-max-rate", "200mbit"]);
    let port = banner
        .split("Load sessions (bulk TCP) on 127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let out = synapse()
        .args(["client", &format!("127.0.0.1:{echo}"), "--no-ui"])
        .args([
            "--load",
            "upload",
            "--load-phase",
            "1s",
            "--load-port",
            &port,
        ])
        .args(["--min-rpm", "1", "--save-profile", "lp", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Latency under load (echo probes every 10.00 ms"),
        "{text}"
    );
    assert!(text.contains("  upload "), "{text}");
    assert!(
        text.contains("✓ upload ") && text.contains("(--min-rpm)"),
        "{text}"
    );
    let shown = synapse()
        .args(["profiles", "show", "lp", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    for kept in ["load", "upload", "load_phase", "min_rpm"] {
        assert!(shown.contains(kept), "{kept} kept in the profile: {shown}");
    }
    let (log, _) = server.interrupt_and_collect();
    assert!(log.contains("load: session from 127.0.0.1:"), "{log}");
    assert!(log.contains("ended: 1 phase,"), "{log}");
}
