//! The small things a new user trips over: each says what it does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::process::Output;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A run with its own, empty configuration directory.
fn in_clean_home(args: &[&str]) -> (Output, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::from_std(synapse())
        .args(args)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    (out, home)
}

#[test]
fn profiles_alone_shows_its_help() {
    let (out, _home) = in_clean_home(&["profiles"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("Usage: synapse profiles"), "{err}");
    assert!(err.contains("list  One line per profile"), "{err}");
}

#[test]
fn fail_on_regression_without_a_profile_says_there_is_none() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let (out, _home) = in_clean_home(&[
        "client",
        &peer.addr(),
        "--json",
        "--packets",
        "20",
        "--fail-on-regression",
        "--min-effect",
        "10",
        "--threshold",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "synapse: note: --fail-on-regression: no profile is in use, so there is no baseline to compare (--profile NAME)\n"
    );
}

#[test]
fn stamp_with_a_small_size_says_what_it_sends() {
    let (out, _home) = in_clean_home(&[
        "--stamp",
        "--size",
        "20",
        "--no-ui",
        "--packets",
        "20",
        "--threshold",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "synapse: note: --size 20: STAMP test packets are 44 octets at least, so that is what is sent"
        ),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("44-byte payload"));
}

#[test]
fn an_explicit_stamp_port_in_use_is_an_error() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let stamp = taken.local_addr().unwrap().port();
    let port = free_udp_port();
    let (out, _home) = in_clean_home(&[
        "server",
        "--no-ui",
        "--bind",
        &format!("127.0.0.1:{port}"),
        "--stamp-port",
        &stamp.to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "synapse: error: --stamp-port: cannot bind UDP 127.0.0.1:{stamp}: address already in use\n"
        )
    );
}

#[test]
fn the_json_config_file_is_null_when_there_is_none() {
    let (out, _home) = in_clean_home(&["--json", "--packets", "20", "--threshold", "1s"]);
    let j = json_of(&out.stdout);
    assert!(j["config"]["config_file"].is_null(), "{}", j["config"]);
    let (out, _home) = in_clean_home(&["--no-ui", "--packets", "20", "--threshold", "1s"]);
    let report = text(&out.stdout);
    assert!(
        report.contains("Config:   none (built-in defaults and the command line)"),
        "{report}"
    );
    assert!(
        !report.contains("Packet loss should be 0%"),
        "no tip at 0 %: {report}"
    );
}

/// Item 16: both spinning on one CPU starve each other: warned.
#[test]
fn busy_poll_on_one_cpu_is_warned_of() {
    // Two spinners on one CPU: nothing else measures beside them.
    let _one = crate::common::one_at_a_time();
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(assert_cmd::cargo::cargo_bin!("synapse"))
        .args([
            "--busy-poll",
            "--no-ui",
            "--packets",
            "200",
            "--threshold",
            "1s",
        ])
        .env("HOME", home.path())
        .output()
        .expect("taskset (util-linux)");
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "synapse: warning: --busy-poll with the client and the in-process reflector both on CPU 0"
        ),
        "{err}"
    );
}

/// Item 14: SCHED_FIFO refused is said once, plainly, with no colour codes.
#[test]
fn rt_refused_is_one_plain_warning() {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if !root {
        crate::common::announce::skip(
            "rt_refused_is_one_plain_warning",
            "dropping to an unprivileged user needs root (CI runs as root)",
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let bin = std::env::var_os("SYNAPSE_TEST_BIN").map_or_else(
        || assert_cmd::cargo::cargo_bin!("synapse").into(),
        std::path::PathBuf::from,
    );
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin)
        .args(["--rt", "--no-ui", "--packets", "50", "--threshold", "1s"])
        .env("HOME", home.path())
        .current_dir(home.path())
        .output()
        .expect("setpriv (util-linux)");
    let err = text(&out.stderr);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("SCHED_FIFO")).collect();
    assert_eq!(
        warnings,
        [
            "synapse: warning: --rt: SCHED_FIFO not permitted (Operation not permitted (os error 1)); running at normal priority"
        ],
        "{err}"
    );
    assert!(!err.contains('\x1b'), "colour codes in: {err:?}");
}
