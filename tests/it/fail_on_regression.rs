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
        .args(["--threshold", "1s", "--config"])
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

    let out = steady::undisturbed("the baseline", || {
        run(
            &config,
            &fast.addr(),
            &["--save-profile", "lab", "--set-baseline"],
        )
    });
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stored = dir.path().join("baselines/lab/run-1.hlog");
    assert!(stored.is_file(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(1 run kept in "),
        "{}",
        text(&out.stderr)
    );
    // `compare` reads the stored run as `baseline:lab`: its slices.
    let out = synapse()
        .args(["compare", "--json", "--config"])
        .arg(&config)
        .args(["baseline:lab", "baseline:lab"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "inconclusive: {}",
        text(&out.stderr)
    );
    let j = json_of(&out.stdout);
    assert_eq!(j["comparisons"][0]["runs_a"], 1);
    assert_eq!(
        figure(&j["comparisons"][0], "p50")["within"],
        "block_bootstrap",
        "the stored run has its slices"
    );

    // One stored run, no --min-effect: a peer 2 ms slower is far beyond
    // what runs differ by, so the test calls it a regression.
    let out = steady::undisturbed("the slower peer's run", || {
        run(
            &config,
            &slow.addr(),
            &["--profile", "lab", "--fail-on-regression"],
        )
    });
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let j = json_of(&out.stdout);
    let b = &j["baseline"];
    assert_eq!(
        (b["rule"].as_str(), b["verdict"].as_str()),
        (Some("significance"), Some("regression"))
    );
    let p50 = figure(&b["test"], "p50");
    assert_eq!(
        (p50["verdict"].as_str(), p50["between"].as_str()),
        (Some("regression"), Some("prior")),
        "{p50}"
    );
    assert!(
        p50["difference"].as_f64().unwrap() > DELAY.as_nanos() as f64 * 0.9,
        "{p50}"
    );
    assert_eq!(
        (j["verdict"]["regressed"].as_bool(), j["outcome"].as_str()),
        (Some(true), Some("fail"))
    );

    // A run like the baseline's: one run a side cannot show that nothing
    // changed (the spread between runs is only assumed here), so it is
    // inconclusive, exit 4, or 3 when inconclusive counts as failure.
    let like = [
        "--profile",
        "lab",
        "--fail-on-regression",
        "--min-effect",
        "10",
    ];
    let out = run(&config, &fast.addr(), &like);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stdout));
    let j = json_of(&out.stdout);
    assert_eq!(j["baseline"]["verdict"], "inconclusive");
    assert_eq!(
        (
            j["outcome"].as_str(),
            j["verdict"]["inconclusive"].as_bool()
        ),
        (Some("inconclusive"), Some(true))
    );
    let strict = [&like[..], &["--fail-on-inconclusive"]].concat();
    assert_eq!(run(&config, &fast.addr(), &strict).status.code(), Some(3));

    // The text says the same words, the failures as failures.
    let out = synapse()
        .args(["client", &slow.addr(), "--no-ui", "--duration", "1s"])
        .args(["--threshold", "1s", "--config"])
        .arg(&config)
        .args(["--profile", "lab", "--fail-on-regression"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let t = text(&out.stdout);
    assert!(
        t.contains("--fail-on-regression, the test of synapse compare against the baseline's 1 stored run: regression"),
        "{t}"
    );
    assert!(t.contains("  ✗ p50 +"), "{t}");
    let last = t.lines().last().unwrap();
    assert!(
        last.starts_with("✗ FAIL: p50 +") && last.contains(": regression against the baseline"),
        "{last}"
    );
    assert!(!t.contains("significant"), "{t}");
}

#[test]
fn runs_added_to_a_baseline_show_run_to_run_variation() {
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
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert_eq!(json_of(&out.stdout)["comparisons"][0]["runs_a"], 3);

    // Three runs of A: the spread between runs comes from them (pooled
    // with the assumed one), and a peer 2 ms slower is a regression.
    let out = run(
        &config,
        &slow.addr(),
        &["--profile", "lab", "--fail-on-regression"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let j = json_of(&out.stdout);
    let p50 = figure(&j["baseline"]["test"], "p50");
    assert_eq!(p50["between"], "runs", "{p50}");
    assert_eq!(p50["verdict"], "regression", "{p50}");
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
