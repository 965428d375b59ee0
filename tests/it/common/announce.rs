//! What a test run must show even when every test passes: a test skipped
//! (its tool or kernel feature missing), a measurement taken again because
//! the machine disturbed it, and a known gap (a case left out, and why).
//! libtest hides what a passing test prints through `println!`/`eprintln!`,
//! so each is written straight to the process's standard error (not
//! captured) and recorded as a file in `target/tmp/skipped/`,
//! `target/tmp/retried/` or `target/tmp/gaps/`, which `.ci/run` lists at
//! the end. Where every requirement must be met (`.ci/run` sets
//! `SYNAPSE_TESTS_REQUIRED`; other CI systems set `CI`), a skip fails the
//! test instead.

use std::io::Write;
use std::path::PathBuf;

/// Where the announcements of `kind` (`skipped`, `retried`) are recorded.
pub fn record_dir(kind: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(kind)
}

/// Whether a missing requirement fails the test rather than skipping it.
pub fn required() -> bool {
    ["SYNAPSE_TESTS_REQUIRED", "CI"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Skips `test` for `why`: says so where it is seen and records it; in CI
/// (see [`required`]) panics instead, so a green run never passes a test
/// that did not run.
pub fn skip(test: &str, why: &str) {
    assert!(
        !required(),
        "{test}: required here (CI), but {why}: install or enable it (.ci/run does)"
    );
    announce("skipped", test, &format!("SKIPPED {test}: {why}"));
}

/// Says that `test` measures again (its attempt `attempt`) because the
/// machine disturbed the last one, and why.
pub fn retry(test: &str, attempt: usize, why: &str) {
    announce(
        "retried",
        &format!("{test} {attempt}"),
        &format!("RETRIED {test} (attempt {attempt} was disturbed: {why})"),
    );
}

/// Says that `test` could not judge `what`: every run it measured was
/// disturbed (`why`, the last), each retry said; its other checks held.
pub fn unjudged(test: &str, what: &str, why: &str) {
    announce(
        "retried",
        &format!("{test} unjudged"),
        &format!("UNJUDGED {test}: {what} not checked, every run disturbed (the last: {why})"),
    );
}

/// Says that `what` is left out of the tests, and why: a gap the project
/// knows of, shown in every run until it is closed.
pub fn known_gap(what: &str, why: &str) {
    announce("gaps", what, &format!("KNOWN GAP {what}: {why}"));
}

fn announce(kind: &str, name: &str, line: &str) {
    // Not `eprintln!`: libtest captures that for a passing test.
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
    let dir = record_dir(kind);
    let file: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(file), format!("{line}\n"));
    }
}
