//! When the far side fails mid-run (issue 50), through the real binary
//! against a real reflector that is killed, stopped, rate-limited or
//! restarted: the user is told on stderr as it happens (at the path's
//! first error, or after a second of silence), the run gives up at its
//! stated silence with a FAIL that says why, and every packet measured
//! before is in the report, the per-packet log and the interval log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::csv_log::CsvLog;
use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A client run whose stderr is read as it comes: each line with when the
/// test saw it.
struct Watched {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
    seen: Vec<(Instant, String)>,
}

impl Watched {
    fn start(args: &[&str]) -> Self {
        Self::spawn(synapse(), args)
    }

    /// `synapse client ARGS` as `cmd` runs it (in a namespace, say).
    fn spawn(mut cmd: std::process::Command, args: &[&str]) -> Self {
        let mut child = cmd
            .arg("client")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), line));
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (at most `limit`) for a stderr line holding `needle`; when the
    /// test saw it, and whether the run was still going then.
    fn wait_for(&mut self, needle: &str, limit: Duration) -> (Instant, bool) {
        let deadline = Instant::now() + limit;
        loop {
            if let Some((at, _)) = self.seen.iter().find(|(_, l)| l.contains(needle)) {
                let at = *at;
                let running = self.child.try_wait().unwrap().is_none();
                return (at, running);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.max(Duration::from_millis(1))) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no {needle:?} on stderr within {limit:?}: {:?}", self.seen),
            }
        }
    }

    /// The run's end: its exit code, its JSON report, when it ended, and
    /// every stderr line.
    fn finish(mut self) -> (Option<i32>, Value, Instant, Vec<String>) {
        let mut stdout = String::new();
        std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        let code = self.child.wait().unwrap().code();
        let ended = Instant::now();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(l);
        }
        let lines = self.seen.into_iter().map(|(_, l)| l).collect();
        (code, json_of(stdout.as_bytes()), ended, lines)
    }
}

/// The criterion of `j`'s verdict named `metric`.
fn criterion<'a>(j: &'a Value, metric: &str) -> &'a Value {
    j["verdict"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} criterion: {}", j["verdict"]))
}

/// The run's replies are all in its per-packet log and its interval log.
fn kept_everywhere(j: &Value, csv: &std::path::Path, hlog: &std::path::Path) {
    let received = j["packets"]["received"].as_u64().unwrap();
    assert!(received > 0, "replies before the failure: {j}");
    let log = CsvLog::read(csv);
    let ok = log
        .rows
        .iter()
        .filter(|r| log.text(r, "STATUS") == "ok")
        .count() as u64;
    assert_eq!(ok, received, "every reply in the CSV: {j}");
    let run = synapse::hdr_log::read(hlog).unwrap();
    let logged: u64 = run
        .intervals
        .iter()
        .filter_map(|i| i.get("rtt"))
        .map(hdrhistogram::Histogram::len)
        .sum();
    assert_eq!(logged, received, "every reply in the interval log: {j}");
}

/// Each way of sending (ping-pong, paced, STAMP) against a reflector
/// killed a second in: the port unreachable its host sends is said at
/// once, named in the JSON by kind and sender and on the lost requests'
/// rows, and after 3 s of silence the run gives up: FAIL (exit 3), the
/// reason a criterion, everything measured kept.
#[test]
fn a_killed_reflector_is_said_at_once_and_the_run_gives_up_in_time() {
    let _one = one_at_a_time();
    for extra in [&[][..], &["--interval", "5ms"][..], &["--stamp"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let (csv, hlog) = (dir.path().join("run.csv"), dir.path().join("run.hlog"));
        let (stamp, echo) = (free_udp_port(), free_udp_port());
        let server = synapse()
            .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
            .args(["--stamp-port", &stamp.to_string(), "--tcp-port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (guard, _out, _) = wait_until_ready(server);
        let port = if extra.contains(&"--stamp") {
            stamp
        } else {
            echo
        };
        let target = format!("127.0.0.1:{port}");
        let mut args = vec![&target[..], "--json", "--duration", "60s"];
        args.extend(["--give-up-after", "3s", "--warmup", "10"]);
        args.extend([
            "--log",
            csv.to_str().unwrap(),
            "--hdr-log",
            hlog.to_str().unwrap(),
        ]);
        args.extend(extra);
        let mut run = Watched::start(&args);
        std::thread::sleep(Duration::from_secs(1));
        unsafe_free_kill(guard.0.id(), "KILL");
        let said =
            format!("reflector {target} unreachable (port unreachable from 127.0.0.1) since");
        let (told, running) = run.wait_for(&said, Duration::from_secs(20));
        assert!(running, "{extra:?}: said while the run went on");
        let (code, j, ended, lines) = run.finish();
        assert_eq!(code, Some(3), "{extra:?}: {lines:?}");
        assert_eq!(j["outcome"], "fail", "{extra:?}");
        // Told with the run's 3 s of patience still ahead: the giving up
        // came seconds after the telling, not the telling after a wait.
        let ahead = ended.duration_since(told);
        assert!(
            ahead >= Duration::from_secs(2),
            "{extra:?}: told {ahead:?} before the end"
        );
        let silent = j["gave_up_after_s"].as_f64().unwrap();
        assert!(silent >= 3.0, "{extra:?}: {silent}");
        let replies = criterion(&j, "replies");
        assert_eq!(replies["held"], false, "{extra:?}: {replies}");
        let detail = replies["detail"].as_str().unwrap();
        assert!(
            detail.contains("so the run gave up (--give-up-after 3 s)"),
            "{detail}"
        );
        let errors = &j["path_errors"];
        assert!(
            errors["total"].as_u64().unwrap() >= 1,
            "{extra:?}: {errors}"
        );
        assert_eq!(errors["by_kind"][0]["kind"], "port_unreachable", "{errors}");
        assert_eq!(errors["by_sender"][0]["address"], "127.0.0.1", "{errors}");
        kept_everywhere(&j, &csv, &hlog);
        let log = CsvLog::read(&csv);
        let named = log
            .rows
            .iter()
            .filter(|r| log.text(r, "PATH_ERROR") == "port_unreachable")
            .filter(|r| log.text(r, "PATH_ERROR_FROM") == "127.0.0.1")
            .count();
        assert!(
            named >= 1,
            "{extra:?}: a lost request's row names the error"
        );
    }
}

/// TCP: the reflector killed mid-run resets the connection; the reset is
/// said, counted as the peer's, and the run gives up in time.
#[test]
fn a_killed_tcp_reflector_resets_and_the_run_gives_up() {
    let _one = one_at_a_time();
    let port = free_udp_port();
    let server = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{port}")])
        .args(["--stamp-port", "0", "--tcp-port", &port.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, _out, _) = wait_until_ready(server);
    let target = format!("127.0.0.1:{port}");
    let mut run = Watched::start(&[
        &target,
        "--tcp",
        "--json",
        "--duration",
        "60s",
        "--give-up-after",
        "3s",
    ]);
    std::thread::sleep(Duration::from_secs(1));
    unsafe_free_kill(guard.0.id(), "KILL");
    let said = format!("reflector {target} unreachable (connection reset by 127.0.0.1) since");
    let (_, running) = run.wait_for(&said, Duration::from_secs(20));
    assert!(running);
    let (code, j, _, lines) = run.finish();
    assert_eq!(code, Some(3), "{lines:?}");
    assert_eq!(
        j["path_errors"]["by_kind"][0]["kind"], "peer_reset",
        "{}",
        j["path_errors"]
    );
    assert!(j["gave_up_after_s"].as_f64().unwrap() >= 3.0);
    assert!(j["packets"]["received"].as_u64().unwrap() > 0);
}

/// A reflector stopped (no ICMP at all: it is there, it just does not
/// answer) is told after a second of silence; restarted, the replies
/// coming back are told too, and the run completes to its length.
#[test]
fn a_stopped_reflector_is_told_by_silence_and_its_return_too() {
    let _one = one_at_a_time();
    let (server, port) = start_server(&[]);
    let pid = server.guard.0.id();
    let target = format!("127.0.0.1:{port}");
    let mut run = Watched::start(&[
        &target,
        "--json",
        "--duration",
        "5s",
        "--give-up-after",
        "30s",
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    unsafe_free_kill(pid, "STOP");
    let (_, running) = run.wait_for(
        &format!("no reply from reflector {target} since"),
        Duration::from_secs(20),
    );
    assert!(running);
    unsafe_free_kill(pid, "CONT");
    let (_, running) = run.wait_for(
        &format!("replies from reflector {target} again, after"),
        Duration::from_secs(20),
    );
    assert!(running, "the run goes on");
    let (code, j, _, lines) = run.finish();
    // Completed, judged: the outage fails it; nothing gave up.
    assert_eq!(j["outcome"], "fail", "{lines:?}");
    assert_eq!(code, Some(3));
    assert_eq!(j["gave_up_after_s"], Value::Null);
    assert_eq!(criterion(&j, "outage")["held"], false);
    assert_eq!(
        j["path_errors"]["total"], 0,
        "no ICMP from a stopped process"
    );
    drop(server);
}

/// The issue's own case: a rate-limited reflector killed under a 2,000
/// packet run used to hold the run for minutes in silence; now the user
/// is told, and the default 30 s of silence (here 2 s) ends it.
#[test]
fn a_rate_limited_reflector_killed_mid_run_ends_the_run_in_time() {
    let _one = one_at_a_time();
    let (server, port) = start_server(&["--max-pps", "100"]);
    let target = format!("127.0.0.1:{port}");
    let mut run = Watched::start(&[
        &target,
        "--json",
        "--packets",
        "2000",
        "--give-up-after",
        "2s",
    ]);
    std::thread::sleep(Duration::from_secs(2));
    unsafe_free_kill(server.guard.0.id(), "KILL");
    run.wait_for(
        &format!("reflector {target} unreachable"),
        Duration::from_secs(20),
    );
    let (code, j, _, _) = run.finish();
    assert_eq!(code, Some(3));
    assert!(j["gave_up_after_s"].as_f64().unwrap() >= 2.0);
    assert!(
        j["packets"]["sent"].as_u64().unwrap() < 2000,
        "gave up before its count"
    );
}

/// Beyond loopback (which is exempt from ICMP rate limits): a router that
/// stops forwarding to the reflector and answers "host unreachable" at
/// Linux's default rate (about one a second after a burst) is named as a
/// router on the way, its errors far fewer than the requests lost; the
/// silence, not the errors, ends the run.
#[test]
fn a_router_saying_host_unreachable_is_named_as_a_router_at_its_rate_limit() {
    use crate::common::routed::{B_ADDR, Routed};
    if !netns::usable("a_router_saying_host_unreachable_is_named_as_a_router_at_its_rate_limit") {
        return;
    }
    let _one = one_at_a_time();
    let t = Routed::new();
    let _server = t.server();
    let target = format!("{B_ADDR}:7007");
    let args = [
        &target[..],
        "--json",
        "--interval",
        "10ms",
        "--duration",
        "60s",
    ];
    let mut run = Watched::spawn(
        t.synapse_in(&t.a),
        &[&args[..], &["--give-up-after", "3s"]].concat(),
    );
    std::thread::sleep(Duration::from_millis(1500));
    t.run(
        &t.r.clone(),
        "iptables",
        &[
            "-I",
            "FORWARD",
            "-d",
            B_ADDR,
            "-j",
            "REJECT",
            "--reject-with",
            "icmp-host-unreachable",
        ],
    );
    let said = format!("reflector {target} unreachable (host unreachable from 10.232.1.1) since");
    let (_, running) = run.wait_for(&said, Duration::from_secs(20));
    assert!(running);
    let (code, j, _, lines) = run.finish();
    assert_eq!(code, Some(3), "{lines:?}");
    let errors = &j["path_errors"];
    assert_eq!(errors["by_kind"][0]["kind"], "host_unreachable", "{errors}");
    assert_eq!(
        errors["by_sender"][0]["address"], "10.232.1.1",
        "the router, not the reflector: {errors}"
    );
    let (n, lost) = (
        errors["total"].as_u64().unwrap(),
        j["packets"]["lost"].as_u64().unwrap(),
    );
    assert!(
        n >= 1 && n * 4 < lost,
        "{n} errors for {lost} lost: the router's rate limit"
    );
    assert!(j["gave_up_after_s"].as_f64().unwrap() >= 3.0);
}

/// A path that drops the reflector's traffic without a word (no ICMP at
/// all) is told by silence after a second, and the run gives up in time.
#[test]
fn a_path_dropping_silently_is_told_by_silence_and_given_up_on() {
    use crate::common::routed::{B_ADDR, Routed};
    if !netns::usable("a_path_dropping_silently_is_told_by_silence_and_given_up_on") {
        return;
    }
    let _one = one_at_a_time();
    let t = Routed::new();
    let _server = t.server();
    let target = format!("{B_ADDR}:7007");
    let args = [
        &target[..],
        "--json",
        "--duration",
        "60s",
        "--give-up-after",
        "3s",
    ];
    let mut run = Watched::spawn(t.synapse_in(&t.a), &args);
    std::thread::sleep(Duration::from_millis(1500));
    t.run(
        &t.r.clone(),
        "iptables",
        &["-I", "FORWARD", "-d", B_ADDR, "-j", "DROP"],
    );
    let (_, running) = run.wait_for(
        &format!("no reply from reflector {target} since"),
        Duration::from_secs(20),
    );
    assert!(running);
    let (code, j, _, lines) = run.finish();
    assert_eq!(code, Some(3), "{lines:?}");
    assert_eq!(
        j["path_errors"]["total"], 0,
        "nothing said: {}",
        j["path_errors"]
    );
    assert!(j["gave_up_after_s"].as_f64().unwrap() >= 3.0);
    assert!(j["packets"]["received"].as_u64().unwrap() > 0);
}
