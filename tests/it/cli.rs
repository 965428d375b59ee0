//! The real binary, driven as a user would: reports, JSON, exit codes, and
//! every kind of bad input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use assert_cmd::Command as AssertCommand;
use predicates::prelude::*;
use std::time::Duration;

fn cmd() -> AssertCommand {
    AssertCommand::new(assert_cmd::cargo::cargo_bin!("synapse"))
}

/// Runs with bad arguments and checks: exit 2, one line on stderr naming the
/// problem, nothing on stdout.
fn rejects(args: &[&str], needle: &str) {
    let out = cmd()
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(err.starts_with("synapse: error: "), "{err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected '{needle}' in: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn help_explains_the_modes_and_exit_codes() {
    cmd()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("synapse server"))
        .stdout(predicate::str::contains("0    PASS"))
        .stdout(predicate::str::contains("3    FAIL"));
    // Issue 51: every status the program gives is listed, INCONCLUSIVE
    // too, and 130 is any stop before the budget, not only one before
    // the first request; `client --help` says the same.
    for args in [&["--help"][..], &["client", "--help"]] {
        let out = cmd().args(args).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        for status in [
            "0    PASS",
            "3    FAIL",
            "4    INCONCLUSIVE",
            "2    Bad input",
            "130  INTERRUPTED",
        ] {
            assert!(help.contains(status), "{args:?}: no '{status}' in:\n{help}");
        }
        assert!(
            !help.contains("before its first measured request"),
            "{help}"
        );
        assert!(
            help.contains("before its --duration or --packets was"),
            "{help}"
        );
    }
    cmd()
        .args(["client", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--busy-poll"))
        .stdout(predicate::str::contains("--threshold"));
}

/// Issue 36: a typo gets clap's suggestion, and a mistake in a subcommand
/// points at that subcommand's help.
#[test]
fn typos_get_a_suggestion_and_the_help_that_applies() {
    rejects(
        &["clinet"],
        "unrecognized subcommand 'clinet' (did you mean 'calibrate' or 'client'? see synapse --help)",
    );
    rejects(
        &["client", "--stmp"],
        "unexpected argument '--stmp' found (did you mean '--stamp'? see synapse client --help)",
    );
    rejects(
        &["--interval", "61min"],
        "'61min' is out of range: 10us to 1h (see synapse --help)",
    );
    rejects(
        &["compare", "--min-effect", "x", "a"],
        "(see synapse compare --help)",
    );
}

#[test]
fn bad_flags_and_values_are_one_line_exit_2() {
    rejects(&["client", "--bogus"], "unexpected argument '--bogus'");
    rejects(&["client", "--size", "7"], "7 is outside 8..=65507");
    rejects(&["client", "--size", "65508"], "65508 is outside 8..=65507");
    rejects(
        &["client", "--threshold", "soon"],
        "'soon' is not a duration",
    );
    rejects(&["client", "--timeout", "0ms"], "--timeout");
    rejects(
        &["client", "--packets", "0", "--no-ui"],
        "--packets must be at least 1",
    );
    rejects(
        &["client", "--cpu", "4096", "--no-ui"],
        "CPU 4096 is not available",
    );
    rejects(
        &["--packets", "1", "--duration", "1s"],
        "cannot be used with",
    );
    // A flag that needs another names the one missing.
    rejects(
        &["client", "--ssid", "5", "127.0.0.1:9"],
        "not provided: --stamp",
    );
    rejects(
        &["client", "--stamp", "--ssid", "0", "127.0.0.1:9"],
        "0 is not in 1..=65535",
    );
}

/// Issue 51: one rule for a bare number in every duration option (a unit
/// is required; the suggestion keeps what the number meant there before),
/// a share of requests past 100 % refused, `--update 0` worded for what
/// it takes rather than a range of integers.
#[test]
fn durations_need_their_unit_and_shares_stay_within_all() {
    for (args, said) in [
        (&["client", "--duration", "1"][..], "'1' needs a unit: 1s"),
        (&["client", "--timeout", "100"], "'100' needs a unit: 100ms"),
        (&["client", "--threshold", "1"], "'1' needs a unit: 1ms"),
        (&["client", "--threshold", "p99=5"], "'5' needs a unit: 5ms"),
        (
            &["client", "--max-outage", "500"],
            "'500' needs a unit: 500ms",
        ),
        (
            &["client", "--interval", "5"],
            "'5' needs a unit: 5ms, 5us, 5s",
        ),
        (&["client", "--hdr-interval", "2"], "'2' needs a unit: 2s"),
        (&["server", "--session-idle", "3"], "'3' needs a unit: 3s"),
        (&["agent", "--report-every", "10"], "'10' needs a unit: 10s"),
        (
            &["client", "--max-loss", "150"],
            "'150' is more than all: a share is 0 to 100 %",
        ),
        (
            &["client", "--update", "0"],
            "every 0 packets never happens",
        ),
        (
            &["client", "127.0.0.1:0", "--no-ui"],
            "127.0.0.1:0: port 0 is no reflector's port",
        ),
    ] {
        rejects(args, said);
    }
    let update = cmd().args(["client", "--update", "0"]).output().unwrap();
    let err = String::from_utf8_lossy(&update.stderr);
    assert!(!err.contains("9223372036854775807"), "{err}");
    assert!(
        err.contains("a duration with its unit (250ms, 1s)"),
        "{err}"
    );
}

#[test]
fn unparsable_and_unresolvable_addresses_exit_2() {
    rejects(
        &["client", "no-such-host.invalid:80", "--no-ui"],
        "cannot resolve 'no-such-host.invalid:80'",
    );
    rejects(
        &["client", "127.0.0.1:notaport", "--no-ui"],
        "'127.0.0.1:notaport' is not an address (HOST, HOST:PORT or [IPv6]:PORT)",
    );
    // Out of range is said as such, and never looked up in DNS.
    rejects(
        &["client", "127.0.0.1:99999", "--no-ui"],
        "'127.0.0.1:99999' is not an address (port 99999 out of range 0-65535)",
    );
    rejects(
        &["client", "[::1", "--no-ui"],
        "'[::1' is not an address ('[' without ']')",
    );
    rejects(
        &["server", "--bind", "1.2.3.4.5", "--no-ui"],
        "cannot resolve '1.2.3.4.5'",
    );
}

#[test]
fn nobody_listening_is_reported_quickly_as_unreachable() {
    let port = free_udp_port();
    let started = std::time::Instant::now();
    rejects(
        &["client", &format!("127.0.0.1:{port}"), "--no-ui"],
        &format!("127.0.0.1:{port} refused the datagrams (ICMP port unreachable)"),
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_port_in_use_is_exit_2() {
    let (_server, port) = start_server(&[]);
    rejects(
        &["server", "--no-ui", "--bind", &format!("127.0.0.1:{port}")],
        &format!("cannot bind UDP 127.0.0.1:{port}: address already in use"),
    );
}

#[test]
fn text_report_has_the_seed_sections_and_passes() {
    let out = cmd()
        .args([
            "--no-ui",
            "--packets",
            "2000",
            "--warmup",
            "50",
            "--threshold",
            "1s",
        ])
        // Exactly 0 lost is asserted: allow for a loaded CI box's stalls.
        .args(["--timeout", "2000ms"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "Synapse Results",
        "Packets:  2,000 sent, 0 lost (0.00%)",
        "0 late, 0 duplicate, 0 reordered, 0 stray",
        "Duration:",
        "Latency Statistics (round-trip time, over 2,000 replies):",
        "P99.99:",
        "Latency Distribution (packet count by range, edges at the percentiles):",
        "✓ PASS: Mean latency",
        "Target:   the in-process reflector on 127.0.0.1:",
        "(auto; --cpu to choose)",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
    assert!(
        !text.contains("\x1b["),
        "no colour when stdout is not a terminal"
    );
}

#[test]
fn json_report_has_the_documented_schema() {
    let out = cmd()
        .args([
            "--json",
            "--packets",
            "1500",
            "--warmup",
            "20",
            "--threshold",
            "1s",
        ])
        .args(["--timeout", "2000ms"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j = json_of(&out.stdout);
    for key in [
        "min", "mean", "stddev", "p50", "p90", "p99", "p999", "p9999", "max",
    ] {
        assert!(j["rtt_ns"][key].is_number(), "rtt_ns.{key}");
    }
    let rtt = |key: &str| j["rtt_ns"][key].as_u64().unwrap();
    assert!(rtt("min") <= rtt("p50"), "{j}");
    assert!(rtt("p50") <= rtt("p99"), "{j}");
    assert!(rtt("p99") <= rtt("max"), "{j}");
    let p = &j["packets"];
    assert_eq!(p["sent"], 1500);
    assert_eq!(p["received"], 1500);
    for key in ["lost", "late", "duplicate", "reordered", "stray"] {
        assert_eq!(p[key], 0, "packets.{key}");
    }
    assert!(j["duration_s"].as_f64().unwrap() > 0.0);
    assert!(j["rate_pps"].as_f64().unwrap() > 0.0);
    let mean = &j["verdict"]["criteria"][0];
    assert_eq!(mean["metric"], "mean");
    assert_eq!(mean["limit"], 1e9);
    assert_eq!(mean["unit"], "ns");
    assert!(mean["value"].as_f64().unwrap() < 1e9);
    assert_eq!(mean["held"], true);
    let loss = &j["verdict"]["criteria"][1];
    assert_eq!(
        (loss["metric"].as_str(), loss["limit"].as_f64()),
        (Some("loss"), Some(1.0))
    );
    assert_eq!(loss["value"], 0.0);
    assert_eq!(j["verdict"]["pass"], true);
    let c = &j["config"];
    assert!(c["cpu"].is_u64());
    assert_eq!(c["busy_poll"], false);
    assert_eq!(c["warmup"], 20);
    assert_eq!(c["timeout_ms"], 2000);
    assert_eq!(c["size"], 8);
    assert_eq!(c["mode"], "loopback");
}

#[test]
fn failing_verdict_exits_3_and_says_fail() {
    let out = cmd()
        .args([
            "--no-ui",
            "--packets",
            "200",
            "--warmup",
            "0",
            "--threshold",
            "1ns",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("✗ FAIL: mean ") && last.ends_with(", above 1 ns"),
        "{text}"
    );
}

#[test]
fn busy_poll_duration_and_size_are_honoured() {
    // Two spinning threads fill both CPUs: nothing else measures beside it.
    let _one = one_at_a_time();
    let started = std::time::Instant::now();
    let out = cmd()
        .args([
            "--json",
            "--busy-poll",
            "--duration",
            "300ms",
            "--size",
            "1400",
            "--threshold",
            "1s",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j = json_of(&out.stdout);
    assert_eq!(j["config"]["busy_poll"], true);
    assert_eq!(j["config"]["size"], 1400);
    assert_eq!(j["config"]["packets"], serde_json::Value::Null);
    // The run ended by itself (exit 0 above), no sooner than asked, and
    // claims no more time than the process had.
    let d = j["duration_s"].as_f64().unwrap();
    let lived = started.elapsed().as_secs_f64();
    assert!(d >= 0.3 && d <= lived, "duration {d} s, process {lived} s");
    assert!(j["packets"]["received"].as_u64().unwrap() > 0);
}

#[test]
fn logs_never_reach_stdout() {
    let out = cmd()
        .args([
            "--json",
            "--packets",
            "100",
            "--warmup",
            "0",
            "--rt",
            "--interval",
            "1ms",
            "--threshold",
            "1s",
        ])
        .env("RUST_LOG", "trace")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // stdout holds the one JSON object and nothing else; the logs asked for
    // went to stderr.
    let j = json_of(&out.stdout);
    assert_eq!(j["packets"]["sent"], 100);
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(
        logs.lines()
            .any(|l| l.starts_with("synapse: debug: paced timer")),
        "RUST_LOG=trace wrote no log line to stderr: {logs}"
    );
}

#[test]
fn ctrl_c_keeps_what_was_measured() {
    // A flat-out round trip on both CPUs: nothing else measures beside it.
    let _one = one_at_a_time();
    let child = synapse()
        .args(["--json", "--packets", "100000000", "--threshold", "1s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = Guard(child);
    std::thread::sleep(Duration::from_millis(1500));
    guard.interrupt();
    let mut stdout = String::new();
    std::io::Read::read_to_string(guard.0.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    let status = guard.0.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted is never a pass");
    let j = json_of(stdout.as_bytes());
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["outcome"], "interrupted");
    let sent = j["packets"]["sent"].as_u64().unwrap();
    assert!(sent > 0 && sent < 100_000_000);
    assert_eq!(
        j["packets"]["received"].as_u64().unwrap() + j["packets"]["lost"].as_u64().unwrap(),
        sent
    );
}

#[test]
fn interfaces_lists_loopback_with_software_stamping_and_no_hardware_clock() {
    let out = cmd()
        .arg("interfaces")
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lo = text
        .split("\n\n")
        .find(|block| block.starts_with("lo\n"))
        .expect("lo is listed");
    assert_eq!(
        lo.trim_end(),
        "lo\n  capabilities:       software-transmit software-receive software-system-clock\n  \
         PTP hardware clock: none\n  hardware transmit:  none\n  hardware receive:   none\n  \
         best source:        software (hardware: no hardware clock)"
    );
}

#[test]
fn an_unknown_interface_is_one_line_exit_2() {
    rejects(&["interfaces", "nosuch0"], "no interface named 'nosuch0'");
}

#[test]
fn completions_and_the_manual_come_from_the_command_line_declaration() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef synapse"),
        ("fish", "complete -c synapse"),
    ] {
        let out = cmd().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(marker), "{shell}: {text}");
        assert!(text.contains("busy-poll"), "{shell} completes the flags");
    }
    let out = cmd().arg("man").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let man = String::from_utf8(out.stdout).unwrap();
    assert!(
        man.starts_with(".ie \\n(.g .ds Aq") || man.contains(".TH synapse"),
        "{man}"
    );
    assert!(
        man.contains("synapse\\-server"),
        "subcommands are listed: {man}"
    );
    rejects(&["completions", "tcsh"], "invalid value 'tcsh'");
}

/// Every option a profile can set is in the JSON `config`, under its id or
/// its id with the unit its number is in.
#[test]
fn the_json_config_holds_every_option() {
    let out = cmd()
        .args([
            "--json",
            "--packets",
            "20",
            "--warmup",
            "5",
            "--threshold",
            "1s",
            "--update",
            "250ms",
        ])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let j = success_json(&out);
    let config = j["config"].as_object().unwrap();
    for arg in synapse::config::settings::options(&synapse::cli::settings_schema()) {
        let id = arg.get_id().as_str();
        let found = [
            id.to_string(),
            format!("{id}_ms"),
            format!("{id}_s"),
            format!("{id}_ns"),
            format!("{id}_percent"),
            format!("{id}_pps"),
        ]
        .iter()
        .any(|k| config.contains_key(k));
        assert!(
            found,
            "option '{id}' is missing from the JSON config: {config:?}"
        );
    }
    assert_eq!(j["config"]["timeout_ms"], 100);
    assert_eq!(j["config"]["threshold"], serde_json::json!(["mean=1s"]));
    assert_eq!(j["config"]["max_loss_percent"], 1.0);
    assert_eq!(
        j["config"]["update"], "250ms",
        "as the command line takes it"
    );
}
