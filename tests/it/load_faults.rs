//! Latency under load when things go wrong: a reflector without a load
//! port, one over its limits, one that may not serve load at all; a load
//! connection reset mid-phase; Ctrl-C mid-load. Each ends with one clear
//! line and its exit status, or with the report of what was measured.

use crate::common::bottleneck::{Bottleneck, Egress, LOAD};
use crate::common::netns;
use crate::common::*;
use serde_json::Value;
use std::io::BufRead;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A TCP port on 127.0.0.1 that nothing listens on (a moment ago).
fn closed_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The load port a server's banner names.
fn load_port(banner: &str) -> u16 {
    banner
        .split("Load sessions (bulk TCP) on 127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no load port in the banner: {banner}"))
}

/// A client run's exit status and its stderr, which must be one line.
fn refused(echo: u16, load: u16, phases: &str) -> (i32, String) {
    let out = synapse()
        .args(["client", &format!("127.0.0.1:{echo}"), "--load", phases])
        .args([
            "--load-phase",
            "5s",
            "--load-port",
            &load.to_string(),
            "--json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(
        out.stdout.is_empty(),
        "no report for a run that never began"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    (out.status.code().unwrap_or(-1), err)
}

#[test]
fn a_reflector_without_load_or_over_its_limits_is_one_line_and_exit_2() {
    let (_plain, echo) = start_server(&[]);
    let (code, err) = refused(echo, closed_tcp_port(), "download");
    assert_eq!(code, 2);
    assert!(err.contains("nothing serves load there"), "{err}");

    let (server, echo, banner) = start_server_with_banner(&[
        "--load-port",
        "0",
        "--load-max-seconds",
        "5",
        "--load-max-sessions",
        "1",
    ]);
    let port = load_port(&banner);
    let (code, err) = refused(echo, port, "download,upload");
    assert_eq!(code, 2);
    assert!(
        err.contains("allows 5 s a session (--load-max-seconds)"),
        "{err}"
    );
    // A session held open: the next one is over the limit.
    let held = synapse_engine::load::LoadClient::connect(synapse_engine::load::LoadClientConfig {
        server: format!("127.0.0.1:{port}").parse().unwrap(),
        bind: None,
        key: None,
        seconds: 1,
        streams: 1,
        cc: None,
        avoid_cpu: None,
    })
    .unwrap();
    let (code, err) = refused(echo, port, "download");
    assert_eq!(code, 2);
    assert!(err.contains("--load-max-sessions 1"), "{err}");
    drop(held);
    let (log, _) = server.interrupt_and_collect();
    let refusals: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("load: refused"))
        .collect();
    assert_eq!(refusals.len(), 2, "a line in the server's log each: {log}");

    let out = synapse()
        .args([
            "server",
            "--no-ui",
            "--bind",
            "0.0.0.0:0",
            "--load-port",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bulk TCP for any source is refused") && err.contains("--allow"),
        "{err}"
    );
}

/// Waits until the server's log says a load session started.
fn session_started(server: &mut Server) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut line = String::new();
    while Instant::now() < deadline {
        line.clear();
        if server.stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if line.starts_with("load: session from") && line.contains("started") {
            return;
        }
    }
    panic!("no load session started");
}

fn phase_names(j: &Value) -> Vec<String> {
    j["load"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_reset_mid_phase_and_ctrl_c_mid_load_keep_what_was_measured() {
    let test = "a_reset_mid_phase_and_ctrl_c_mid_load_keep_what_was_measured";
    if !netns::usable(test) {
        return;
    }
    let _one = one_at_a_time();
    let lab = Bottleneck::new();
    lab.bucket(Egress::RouterToClient, "20kb");
    let mut server = lab.server(&[]);
    let load = ["--load", "download,upload", "--load-phase", "6s"];

    // The router resets the load's connections once the download runs.
    let child = lab.client(&load).stdout(Stdio::piped()).spawn().unwrap();
    session_started(&mut server);
    std::thread::sleep(Duration::from_secs(4));
    let rule = [
        "FORWARD",
        "-p",
        "tcp",
        "--dport",
        &LOAD.to_string(),
        "-j",
        "REJECT",
    ];
    let reset = [&rule[..], &["--reject-with", "tcp-reset"]].concat();
    netns::exec_in(&lab.r, "iptables", &[&["-I"][..], &reset].concat());
    let out = child.wait_with_output().unwrap();
    netns::exec_in(&lab.r, "iptables", &[&["-D"][..], &reset].concat());
    assert_eq!(
        out.status.code(),
        Some(1),
        "a load broken off is a failed run"
    );
    let j = json_of(&out.stdout);
    let failure = j["load"]["failure"].as_str().unwrap();
    assert!(failure.starts_with("download phase:"), "{failure}");
    assert_eq!(phase_names(&j), ["idle", "download"], "no phase after it");
    let d = &j["load"]["phases"][1];
    assert_eq!(d["end"]["how"], "failed", "{d}");
    assert!(
        d["loss"]["sent"].as_u64().unwrap() > 50,
        "its probes kept: {d}"
    );
    assert!(j["load"]["phases"][0]["rtt_ns"]["p50"].is_u64());

    // Ctrl-C in the download: the phases so far, interrupted.
    let child = lab.client(&load).stdout(Stdio::piped()).spawn().unwrap();
    session_started(&mut server);
    std::thread::sleep(Duration::from_secs(4));
    unsafe_free_kill(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json_of(&out.stdout);
    assert_eq!(
        (j["interrupted"].as_bool(), j["outcome"].as_str()),
        (Some(true), Some("interrupted"))
    );
    assert_eq!(phase_names(&j), ["idle", "download"]);
    assert_eq!(j["load"]["phases"][1]["end"]["how"], "interrupted");
    assert!(j["load"]["phases"][1]["loss"]["sent"].as_u64().unwrap() > 50);
}
