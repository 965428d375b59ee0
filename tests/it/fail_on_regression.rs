//! `--set-baseline` keeps the run's interval log in the store, and
//! `--fail-on-regression` judges a later run against it by the test of
//! `synapse compare`: through the real binary, against loopback peers,
//! one that echoes at once and one that answers a known time later.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A 1 s client run against `peer` with the config file `config`.
fn run(config: &Path, peer: &str, extra: &[&str]) -> Output {
    synapse()
        .args(["client", peer, "--json", "--duration", "1s"])
        .args(["--threshold", "1s", "--hdr-interval", "50ms", "--config"])
        .arg(config)
        .args(extra)
        .output()
        .unwrap()
}

fn figure<'a>(test: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    test["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == name)
        .unwrap()
}

#[test]
fn a_slower_peer_fails_against_the_stored_runs_and_a_like_one_passes() {
    let _one = one_at_a_time();
    const DELAY: Duration = Duration::from_millis(2);
    let fast = ScriptedPeer::start(|_| Answer::Echo);
    let slow = ScriptedPeer::start(|_| Answer::Later(DELAY));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");

    let out = run(
        &config,
        &fast.addr(),
        &["--save-profile", "lab", "--set-baseline"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stored = dir.path().join("baselines/lab/run-1.hlog");
    assert!(stored.is_file(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(1 run kept in "),
        "{}",
        text(&out.stderr)
    );
    // `compare` reads the stored run as `baseline:lab`.
    let out = synapse()
        .args(["compare", "--json", "--config"])
        .arg(&config)
        .args(["baseline:lab", "baseline:lab"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let j = json_of(&out.stdout);
    assert_eq!(j["comparisons"][0]["runs_a"], 1);
    assert_eq!(
        figure(&j["comparisons"][0], "p50")["method"],
        "within_run",
        "the stored run has its intervals"
    );

    // One stored run cannot show run-to-run variation: without
    // --min-effect no regression could be called, so it is refused.
    let out = run(
        &config,
        &slow.addr(),
        &["--profile", "lab", "--fail-on-regression"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("the baseline of profile 'lab' holds one run"),
        "{}",
        text(&out.stderr)
    );

    let regression = [
        "--profile",
        "lab",
        "--fail-on-regression",
        "--min-effect",
        "500",
    ];
    let out = run(&config, &slow.addr(), &regression);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let j = json_of(&out.stdout);
    let b = &j["baseline"];
    assert_eq!(b["rule"], "significance");
    assert_eq!(b["regressed"], true);
    assert_eq!(b["min_effect_percent"], 500.0);
    let p50 = figure(&b["test"], "p50");
    assert_eq!(p50["significant"], true, "{p50}");
    assert_eq!(p50["regression"], true, "{p50}");
    assert!(
        p50["difference"].as_f64().unwrap() > DELAY.as_nanos() as f64 * 0.9,
        "{p50}"
    );
    assert_eq!(j["verdict"]["regressed"], true);
    assert_eq!(j["verdict"]["pass"], false);

    let out = run(&config, &fast.addr(), &regression);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let j = json_of(&out.stdout);
    assert_eq!(j["baseline"]["rule"], "significance");
    assert_eq!(j["baseline"]["regressed"], false);
    assert_eq!(j["verdict"]["pass"], true);

    // The text report says which rule judged the run.
    let out = synapse()
        .args(["client", &slow.addr(), "--no-ui", "--duration", "1s"])
        .args(["--threshold", "1s", "--hdr-interval", "50ms", "--config"])
        .arg(&config)
        .args(regression)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let t = text(&out.stdout);
    assert!(
        t.contains("--fail-on-regression (significance test): regressed"),
        "{t}"
    );
    assert!(
        t.contains("✗ FAIL: p50 is significantly worse than the baseline's runs: +"),
        "{t}"
    );
}

#[test]
fn runs_added_to_a_baseline_show_run_to_run_variation_and_need_no_min_effect() {
    let _one = one_at_a_time();
    const DELAY: Duration = Duration::from_millis(2);
    let fast = ScriptedPeer::start(|_| Answer::Echo);
    let slow = ScriptedPeer::start(|_| Answer::Later(DELAY));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");

    // The first run added starts the baseline; two more join it.
    for (i, extra) in [
        ["--save-profile", "lab"],
        ["--profile", "lab"],
        ["--profile", "lab"],
    ]
    .iter()
    .enumerate()
    {
        let out = run(
            &config,
            &fast.addr(),
            &[extra[0], extra[1], "--add-to-baseline"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("run added: "),
            "{}",
            text(&out.stderr)
        );
        let kept = format!("({} kept in ", common_count(i + 1));
        assert!(text(&out.stderr).contains(&kept), "{}", text(&out.stderr));
        assert!(
            dir.path()
                .join(format!("baselines/lab/run-{}.hlog", i + 1))
                .is_file()
        );
    }
    let out = synapse()
        .args(["compare", "--json", "--config"])
        .arg(&config)
        .args(["baseline:lab", "--", "baseline:lab"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(json_of(&out.stdout)["comparisons"][0]["runs_a"], 3);

    // Three runs a side of A: the test is over runs, so no --min-effect is
    // needed, and a peer 2 ms slower is a regression.
    let out = run(
        &config,
        &slow.addr(),
        &["--profile", "lab", "--fail-on-regression"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let j = json_of(&out.stdout);
    let p50 = figure(&j["baseline"]["test"], "p50");
    assert_eq!(p50["method"], "run_to_run", "{p50}");
    assert_eq!(p50["regression"], true, "{p50}");
    assert!(p50["ci_low"].as_f64().unwrap() > 0.0, "{p50}");
    assert!(
        p50["difference"].as_f64().unwrap() > DELAY.as_nanos() as f64 * 0.9,
        "{p50}"
    );

    // --set-baseline and --add-to-baseline together are refused.
    let out = run(
        &config,
        &fast.addr(),
        &["--profile", "lab", "--set-baseline", "--add-to-baseline"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// "1 run", "2 runs": how the client counts the baseline's runs.
fn common_count(n: usize) -> String {
    if n == 1 {
        "1 run".into()
    } else {
        format!("{n} runs")
    }
}

#[test]
fn the_old_percentage_form_is_refused_with_the_new_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let out = synapse()
        .env("XDG_CONFIG_HOME", dir.path())
        .args(["client", "--fail-on-regression", "10", "--no-ui"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("--fail-on-regression --min-effect 10"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
