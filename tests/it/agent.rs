//! `synapse agent` end to end: two agents on loopback probing each other,
//! a real Prometheus scraping them (text, then native histograms), the
//! live reload, the metrics endpoint's negotiation, and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use crate::common::http::{self, encode};
use crate::common::prometheus_ns::launch;
use crate::common::{Guard, free_udp_port, synapse, tool, unsafe_free_kill, wait_for_udp_bound};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// A running agent, its metrics address and what it wrote on stderr.
struct Agent {
    guard: Guard,
    metrics: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Agent {
    fn start(args: &[&str]) -> Agent {
        let no_stamp = if args.contains(&"--stamp-port") {
            &[][..]
        } else {
            &["--stamp-port", "0"][..]
        };
        let child = synapse()
            .args(["agent", "--no-ui", "--metrics-listen", "127.0.0.1:0"])
            .args(no_stamp)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Self::watch(child)
    }

    /// Reads stderr on a thread: the metrics address first, then keeps it.
    fn watch(mut child: Child) -> Agent {
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(rest) = line.split("metrics on http://").nth(1) {
                    let _ = tx.send(rest.trim_end_matches("/metrics").to_string());
                }
                kept.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let guard = Guard(child);
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no metrics address; stderr: {}", log.lock().unwrap()));
        Agent {
            guard,
            metrics: addr.parse().unwrap(),
            stderr: log,
        }
    }

    fn scrape(&self, accept: Option<&str>) -> http::Response {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        http::get(self.metrics, "/metrics", &headers).unwrap()
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// Polls `check` every 200 ms until it gives a value or `limit` passes.
fn eventually<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A real Prometheus server scraping `targets` every second.
struct Prometheus {
    _guard: Guard,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(bin: &Path, targets: &[SocketAddr], native: bool) -> Prometheus {
        let list: Vec<String> = targets.iter().map(ToString::to_string).collect();
        let extra: &[&str] = if native {
            &["--enable-feature=native-histograms"]
        } else {
            &[]
        };
        let (guard, addr, dir) = launch(bin, None, ("synapse", &list), None, extra);
        Prometheus {
            _guard: guard,
            addr: addr.parse().unwrap(),
            _dir: dir,
        }
    }

    /// An instant query's result vector (empty when nothing matches).
    fn query(&self, q: &str) -> Vec<serde_json::Value> {
        let path = format!("/api/v1/query?query={}", encode(q));
        let Ok(r) = http::get(self.addr, &path, &[]) else {
            return Vec::new();
        };
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
        assert_ne!(v["status"], "error", "{q}: {v}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The one value of an instant query, when there is one.
    fn value(&self, q: &str) -> Option<f64> {
        let r = self.query(q);
        let text = r.first()?["value"][1].as_str()?.to_string();
        text.parse().ok().filter(|v: &f64| v.is_finite())
    }
}

/// Two agents measuring each other: `a` speaks STAMP to `b`'s STAMP
/// reflector, `b` plain echo to `a`'s echo reflector, 20 probes/s each.
fn pair() -> (Agent, Agent) {
    let (a_echo, b_echo, b_stamp) = (free_udp_port(), free_udp_port(), free_udp_port());
    let a = Agent::start(&[
        "--name",
        "a",
        "--reflect",
        &format!("127.0.0.1:{a_echo}"),
        "--peer",
        &format!("b=127.0.0.1:{b_stamp}"),
        "--stamp",
        "--interval",
        "50ms",
    ]);
    let b = Agent::start(&[
        "--name",
        "b",
        "--reflect",
        &format!("127.0.0.1:{b_echo}"),
        "--stamp-port",
        &b_stamp.to_string(),
        "--peer",
        &format!("a=127.0.0.1:{a_echo}"),
        "--interval",
        "50ms",
    ]);
    (a, b)
}

/// What both Prometheus runs check: a plausible median, the segments, the
/// reflectors, and losses counted once a peer is gone.
fn check_the_mesh(prom: &Prometheus, a: &Agent, mut b: Agent, median_query: &str) {
    let p50 = eventually(
        Duration::from_secs(40),
        "a median RTT in Prometheus",
        || prom.value(median_query),
    );
    assert!(
        (1e-6..0.05).contains(&p50),
        "median RTT {p50} s is not a loopback RTT"
    );
    let segments = eventually(Duration::from_secs(20), "segment series", || {
        let r = prom.query(
            // The classic form's `_count`, or the native series itself.
            r#"count by (segment) ({__name__=~"synapse_rtt_segment_seconds(_count)?",source="a",peer="b"})"#,
        );
        (r.len() >= 3).then_some(r)
    });
    let names: Vec<&str> = segments
        .iter()
        .filter_map(|s| s["metric"]["segment"].as_str())
        .collect();
    for s in ["send_path", "network", "server_dwell", "receive_path"] {
        assert!(names.contains(&s), "{s} missing from {names:?}");
    }
    // Fails the test (eventually's own assertion) unless b's reflector
    // counts what it answered.
    eventually(Duration::from_secs(20), "b's STAMP reflector count", || {
        prom.value(r#"synapse_reflected_total{source="b",protocol="stamp"}"#)
            .filter(|v| *v > 0.0)
    });
    let info = prom.query(r#"synapse_peer_info{source="a",peer="b",protocol="stamp"}"#);
    assert_eq!(info.len(), 1, "{info:?}");
    let lost_q = r#"synapse_probes_lost_total{source="a",peer="b"}"#;
    let before = prom.value(lost_q).unwrap_or(0.0);
    b.guard.0.kill().unwrap();
    b.guard.0.wait().unwrap();
    // 20 probes/s, each lost 100 ms after it leaves: well over 20 within
    // a few scrapes.
    eventually(Duration::from_secs(30), "losses after b was killed", || {
        prom.value(lost_q).filter(|v| *v >= before + 20.0)
    });
    assert!(
        a.stderr().lines().all(|l| !l.contains("error")),
        "{}",
        a.stderr()
    );
}

#[test]
fn prometheus_scrapes_two_agents_as_text() {
    let Some(bin) = tool("prometheus", "prometheus_scrapes_two_agents_as_text") else {
        return;
    };
    let (a, b) = pair();
    let prom = Prometheus::start(&bin, &[a.metrics, b.metrics], false);
    let q = r#"histogram_quantile(0.5, sum by (le) (rate(synapse_rtt_seconds_bucket{source="a",peer="b"}[5s])))"#;
    check_the_mesh(&prom, &a, b, q);
}

#[test]
fn prometheus_with_native_histograms_gets_the_native_form() {
    let Some(bin) = tool(
        "prometheus",
        "prometheus_with_native_histograms_gets_the_native_form",
    ) else {
        return;
    };
    let (a, b) = pair();
    let prom = Prometheus::start(&bin, &[a.metrics, b.metrics], true);
    // A native histogram is one series with a "histogram" value; its
    // quantile needs no `le`.
    let native = eventually(Duration::from_secs(40), "a native histogram sample", || {
        let r = prom.query(r#"synapse_rtt_seconds{source="a",peer="b"}"#);
        r.into_iter().find(|s| s.get("histogram").is_some())
    });
    assert!(
        native["histogram"][1]["count"].as_str().is_some(),
        "{native}"
    );
    let q = r#"histogram_quantile(0.5, sum(rate(synapse_rtt_seconds{source="a",peer="b"}[5s])))"#;
    check_the_mesh(&prom, &a, b, q);
}

#[test]
fn metrics_are_negotiated_by_accept_header() {
    let port = free_udp_port();
    let a = Agent::start(&[
        "--name",
        "solo",
        "--reflect",
        &format!("127.0.0.1:{port}"),
        "--peer",
        &format!("self=127.0.0.1:{port}"),
        "--interval",
        "10ms",
    ]);
    let text = eventually(Duration::from_secs(10), "a sample in /metrics", || {
        let r = a.scrape(None);
        r.text()
            .contains(r#"synapse_rtt_seconds_count{source="solo",peer="self",transport="udp"} "#)
            .then_some(r)
    });
    assert_eq!(text.status, 200);
    assert!(
        text.header("content-type")
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    assert!(text.text().ends_with("# EOF\n"), "{}", text.text());
    let proto = a.scrape(Some(
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;q=0.3",
    ));
    assert!(
        proto
            .header("content-type")
            .unwrap()
            .starts_with("application/vnd.google.protobuf")
    );
    // Length-delimited messages: the first varint is the first family's size.
    assert!(proto.body.len() > 100 && usize::from(proto.body[0] & 0x7f) < proto.body.len());
    assert!(!String::from_utf8_lossy(&proto.body).contains("# HELP"));
    assert_eq!(http::get(a.metrics, "/other", &[]).unwrap().status, 404);
    // (`promtool check metrics` reads the older 0.0.4 text format, in
    // which OpenMetrics' counter families, named without `_total`, look
    // undocumented; the real Prometheus in the tests above reads it all.)
}

/// The value of the series that starts with `series` in a text scrape.
fn value_of(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn tcp_peers_are_measured_labelled_and_their_failures_counted() {
    let port = free_udp_port();
    // `synapse server` answers TCP echo on its UDP port's number.
    let mut server = common::start_server_on(port);
    let refused = free_udp_port();
    let a = Agent::start(&[
        "--name",
        "t",
        "--reflect",
        "none",
        "--peer",
        &format!("db=tcp://127.0.0.1:{port}"),
        "--peer",
        &format!("gone=tcp://127.0.0.1:{refused}"),
        "--peer",
        &format!("u=127.0.0.1:{port}"),
        "--interval",
        "20ms",
    ]);
    let db = |m: &str| format!(r#"{m}{{source="t",peer="db",transport="tcp"}} "#);
    let gone = |m: &str| format!(r#"{m}{{source="t",peer="gone",transport="tcp"}} "#);
    let text = eventually(Duration::from_secs(15), "TCP round trips", || {
        let t = a.scrape(None).text();
        (value_of(&t, &db("synapse_rtt_seconds_count"))? >= 20.0).then_some(t)
    });
    // Kernel stamps split the TCP round trip as they split UDP's.
    let seg = r#"synapse_rtt_segment_seconds_count{source="t",peer="db",transport="tcp",segment="send_path"} "#;
    assert!(value_of(&text, seg).is_some_and(|v| v > 0.0), "{text}");
    assert!(
        text.contains(r#"synapse_rtt_seconds_count{source="t",peer="u",transport="udp"} "#),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            r#"synapse_peer_info{{source="t",peer="db",transport="tcp",address="tcp://127.0.0.1:{port}",protocol="echo""#
        )),
        "{text}"
    );
    assert_eq!(value_of(&text, &db("synapse_probes_lost_total")), Some(0.0));
    // A refused peer: every probe lost, none missed, no RTT.
    let sent = value_of(&text, &gone("synapse_probes_sent_total")).unwrap();
    assert!(sent >= 10.0, "{text}");
    assert_eq!(
        value_of(&text, &gone("synapse_probes_lost_total")),
        Some(sent)
    );
    assert_eq!(
        value_of(&text, &gone("synapse_rtt_seconds_count")),
        Some(0.0)
    );
    assert_eq!(
        value_of(&text, &gone("synapse_schedule_misses_total")),
        Some(0.0)
    );
    // The server goes: the connection is reset or refused from then on,
    // and db's probes count lost; the agent runs on.
    let lost = |t: &str| value_of(t, &db("synapse_probes_lost_total")).unwrap_or(0.0);
    server.guard.0.kill().unwrap();
    server.guard.0.wait().unwrap();
    eventually(Duration::from_secs(10), "db's probes lost", || {
        (lost(&a.scrape(None).text()) >= 20.0).then_some(())
    });
    assert!(!a.stderr().contains("error"), "{}", a.stderr());
    let mut guard = a.guard;
    unsafe_free_kill(guard.0.id(), "TERM");
    assert_eq!(guard.0.wait().unwrap().code(), Some(0));
}

/// Agents probe each other over TCP too: an agent's reflector answers TCP
/// echo on its UDP echo port's number.
#[test]
fn an_agents_reflector_answers_tcp_peers_too() {
    // A port whose UDP and TCP numbers are both free.
    let port = loop {
        let p = free_udp_port();
        if std::net::TcpListener::bind(("127.0.0.1", p)).is_ok() {
            break p;
        }
    };
    let a = Agent::start(&[
        "--name",
        "a",
        "--reflect",
        &format!("127.0.0.1:{port}"),
        "--peer",
        &format!("self=127.0.0.1:{port}"),
        "--interval",
        "50ms",
    ]);
    let b = Agent::start(&[
        "--name",
        "b",
        "--reflect",
        "none",
        "--peer",
        &format!("a=tcp://127.0.0.1:{port}"),
        "--interval",
        "20ms",
    ]);
    let series = |m: &str| format!(r#"{m}{{source="b",peer="a",transport="tcp"}} "#);
    let text = eventually(Duration::from_secs(15), "TCP round trips to a", || {
        let t = b.scrape(None).text();
        (value_of(&t, &series("synapse_rtt_seconds_count"))? >= 20.0).then_some(t)
    });
    assert_eq!(
        value_of(&text, &series("synapse_probes_lost_total")),
        Some(0.0),
        "{text}"
    );
    assert!(
        !a.stderr().contains("TCP echo not served"),
        "{}",
        a.stderr()
    );
}

/// Writes the agent's config: peer `b` always, `extra` after it.
fn write_config(path: &Path, b_port: u16, extra: &str) {
    let text = format!(
        "[agent]\nname = \"r\"\nreflect = \"none\"\ninterval = \"20ms\"\n\n[agent.peers.b]\naddress = \"127.0.0.1:{b_port}\"\n{extra}"
    );
    std::fs::write(path, text).unwrap();
}

#[test]
fn sighup_reloads_a_good_config_and_keeps_the_last_good_one_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("agent.toml");
    let (b_port, c_port) = (free_udp_port(), free_udp_port());
    let _b = common::start_server_on(b_port);
    let _c = common::start_server_on(c_port);
    write_config(&cfg, b_port, "");
    let a = Agent::start(&["--config", cfg.to_str().unwrap()]);
    let has = |needle: &str| a.scrape(None).text().contains(needle);
    eventually(Duration::from_secs(10), "peer b measured", || {
        has(r#"synapse_rtt_seconds_count{source="r",peer="b",transport="udp"}"#).then_some(())
    });
    // A typo: refused with its place, and b is still measured.
    write_config(&cfg, b_port, "[agent.peers.c]\nadress = \"x\"\n");
    unsafe_free_kill(a.guard.0.id(), "HUP");
    let said = eventually(Duration::from_secs(10), "the refusal", || {
        let e = a.stderr();
        e.contains("reload refused").then_some(e)
    });
    assert!(
        said.contains("agent.toml:9:1: agent.peers.c.adress: unknown key 'adress'"),
        "{said}"
    );
    let count = |t: &str| -> f64 {
        t.lines()
            .find(|l| {
                l.starts_with(r#"synapse_rtt_seconds_count{source="r",peer="b",transport="udp"}"#)
            })
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0.0)
    };
    let before = count(&a.scrape(None).text());
    eventually(
        Duration::from_secs(10),
        "b measured on after the refusal",
        || (count(&a.scrape(None).text()) > before + 5.0).then_some(()),
    );
    // Fixed: c joins, b keeps its counts.
    write_config(
        &cfg,
        b_port,
        &format!("[agent.peers.c]\naddress = \"127.0.0.1:{c_port}\"\n"),
    );
    unsafe_free_kill(a.guard.0.id(), "HUP");
    eventually(Duration::from_secs(10), "peer c measured", || {
        has(r#"synapse_rtt_seconds_count{source="r",peer="c",transport="udp"}"#).then_some(())
    });
    assert!(
        count(&a.scrape(None).text()) > before,
        "b's series kept its count"
    );
    assert!(a.stderr().contains("reloaded: 2 peers"), "{}", a.stderr());
    // Still running after all that, and stops cleanly on SIGTERM.
    let mut guard = a.guard;
    unsafe_free_kill(guard.0.id(), "TERM");
    let status = guard.0.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn json_lines_come_per_peer_per_window() {
    let port = free_udp_port();
    let dead = free_udp_port();
    let mut child = synapse()
        .args([
            "agent",
            "--json",
            "--report-every",
            "1s",
            "--metrics-listen",
            "127.0.0.1:0",
            "--stamp-port",
            "0",
            "--name",
            "j",
            "--reflect",
            &format!("127.0.0.1:{port}"),
            "--peer",
            &format!("self=127.0.0.1:{port}"),
            "--peer",
            &format!("gone=127.0.0.1:{dead}"),
            "--interval",
            "10ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let guard = Guard(child);
    let mut lines = Vec::new();
    while lines.len() < 4 {
        let mut l = String::new();
        assert!(out.read_line(&mut l).unwrap() > 0, "stdout ended");
        lines.push(serde_json::from_str::<serde_json::Value>(&l).unwrap());
    }
    guard.interrupt();
    // The second window: both peers, each with about 100 probes.
    let second = &lines[2..];
    let peers: Vec<&str> = second.iter().map(|l| l["peer"].as_str().unwrap()).collect();
    assert_eq!(peers, ["self", "gone"]);
    let (me, gone) = (&second[0], &second[1]);
    assert!((80..=120).contains(&me["sent"].as_u64().unwrap()), "{me}");
    assert!(me["rtt_p50_ns"].as_u64().unwrap() > 0, "{me}");
    assert_eq!(
        gone["rtt_p50_ns"],
        serde_json::Value::Null,
        "no reply, no RTT: {gone}"
    );
    assert_eq!(gone["loss_percent"], 100.0, "{gone}");
    assert_eq!(me["window_s"], 1.0);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        "[agent]\nmax_pps = 10\n[agent.peers.b]\naddress = \"127.0.0.1\"\ninterval = \"10ms\"\n",
    )
    .unwrap();
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["--config".into(), cfg.display().to_string()],
            "synapse: error: 1 peer would send 100 probes/s, over max_pps 10 (lengthen the intervals, or raise --max-pps)\n".into(),
        ),
        (
            vec!["--peer".into(), "nameless".into()],
            "synapse: error: invalid value 'nameless' for '--peer <NAME=[tcp://]HOST[:PORT]>': 'nameless' is not NAME=HOST[:PORT] or NAME=tcp://HOST:PORT (see synapse agent --help)\n".into(),
        ),
        (
            vec!["--peer".into(), "db=tcp://127.0.0.1".into()],
            "synapse: error: invalid value 'db=tcp://127.0.0.1' for '--peer <NAME=[tcp://]HOST[:PORT]>': 'tcp://127.0.0.1': a TCP peer needs its port (tcp://HOST:PORT) (see synapse agent --help)\n".into(),
        ),
        (
            vec!["--peer".into(), "x=ftp://x".into()],
            "synapse: error: invalid value 'x=ftp://x' for '--peer <NAME=[tcp://]HOST[:PORT]>': 'ftp://x': unknown scheme 'ftp://' (a peer is HOST[:PORT], udp://HOST[:PORT] or tcp://HOST:PORT) (see synapse agent --help)\n".into(),
        ),
        (
            vec!["--peer".into(), "db=tcp://127.0.0.1:9".into(), "--stamp".into()],
            "synapse: error: --peer db: a tcp:// peer speaks plain echo: stamp is for UDP peers\n".into(),
        ),
        (
            vec!["--peer".into(), "b=127.0.0.1".into(), "--peer".into(), "c=[::1]:9".into()],
            "synapse: error: --peer c: [::1]:9: all peers must be of one IP family, as 'b' (127.0.0.1:8080)\n".into(),
        ),
    ];
    for (args, expected) in cases {
        let out = synapse()
            .args([
                "agent",
                "--no-ui",
                "--reflect",
                "none",
                "--metrics-listen",
                "127.0.0.1:0",
            ])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected, "{args:?}");
    }
    // The reflector's stamping names its own option.
    let out = synapse()
        .args(["agent", "--no-ui", "--metrics-listen", "127.0.0.1:0"])
        .args(["--reflect", "127.0.0.1:0", "--stamp-port", "0"])
        .args(["--reflect-timestamps", "hardware"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "synapse: error: --reflect-timestamps hardware: lo: no hardware clock (try --reflect-timestamps software, or auto)\n"
    );
    // A metrics port that is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = synapse()
        .args([
            "agent",
            "--no-ui",
            "--reflect",
            "none",
            "--peer",
            "b=127.0.0.1:9",
            "--metrics-listen",
            &addr,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!("synapse: error: --metrics-listen {addr}: ")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The agent says why a peer fails (issue 50): a closed port (its host's
/// port unreachable) and a plain echo server probed with STAMP (it echoes
/// the request itself, no reply) each get their reason in the JSON lines,
/// `synapse_peer_up` and `synapse_probe_errors_total`; a peer that answers
/// is up.
#[test]
fn a_failing_peers_reason_is_in_its_lines_and_metrics() {
    let reflect = free_udp_port();
    let (closed, echo) = (free_udp_port(), free_udp_port());
    let stamp = free_udp_port();
    // A plain echo server (socat's) where a STAMP reflector was expected.
    let Some(socat) = tool(
        "socat",
        "a_failing_peers_reason_is_in_its_lines_and_metrics",
    ) else {
        return;
    };
    let echoer = Guard(
        std::process::Command::new(socat)
            .args([&format!("UDP4-LISTEN:{echo},bind=127.0.0.1"), "PIPE"])
            .spawn()
            .unwrap(),
    );
    wait_for_udp_bound(echo);
    let mut child = synapse()
        .args(["agent", "--json", "--stamp", "--report-every", "1s"])
        .args(["--metrics-listen", "127.0.0.1:0", "--name", "w"])
        .args(["--reflect", &format!("127.0.0.1:{reflect}")])
        .args(["--stamp-port", &stamp.to_string()])
        .args(["--peer", &format!("good=127.0.0.1:{stamp}")])
        .args(["--peer", &format!("closed=127.0.0.1:{closed}")])
        .args(["--peer", &format!("echo=127.0.0.1:{echo}")])
        .args(["--interval", "20ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let agent = Agent::watch(child);
    let mut lines = Vec::new();
    while lines.len() < 6 {
        let mut l = String::new();
        assert!(out.read_line(&mut l).unwrap() > 0, "stdout ended");
        lines.push(serde_json::from_str::<serde_json::Value>(&l).unwrap());
    }
    let by = |peer: &str| {
        lines[3..]
            .iter()
            .find(|l| l["peer"] == peer)
            .unwrap()
            .clone()
    };
    let (good, closed_line, echo_line) = (by("good"), by("closed"), by("echo"));
    assert_eq!(
        (good["up"].clone(), good["reason"].clone()),
        (true.into(), Value::Null),
        "{good}"
    );
    assert_eq!(closed_line["up"], false, "{closed_line}");
    assert_eq!(
        closed_line["reason"], "unreachable: port unreachable from 127.0.0.1",
        "{closed_line}"
    );
    assert!(
        closed_line["path_errors"].as_u64().unwrap() > 0,
        "{closed_line}"
    );
    assert_eq!(echo_line["up"], false, "{echo_line}");
    let why = echo_line["reason"].as_str().unwrap();
    assert!(
        why.starts_with("answers that are no replies"),
        "{echo_line}"
    );
    let text = agent.scrape(None).text();
    let up = |peer: &str| {
        value_of(
            &text,
            &format!("synapse_peer_up{{source=\"w\",peer=\"{peer}\",transport=\"udp\"}}"),
        )
    };
    assert_eq!(
        (up("good"), up("closed"), up("echo")),
        (Some(1.0), Some(0.0), Some(0.0)),
        "{text}"
    );
    let refused = value_of(
        &text,
        "synapse_probe_errors_total{source=\"w\",peer=\"closed\",transport=\"udp\",reason=\"port_unreachable\"}",
    );
    assert!(refused.is_some_and(|n| n > 0.0), "{text}");
    drop(echoer);
}

/// An agent with nothing to do (no peers, and --reflect none) is refused
/// in one line; one that only answers is told so and runs.
#[test]
fn an_agent_with_nothing_to_do_is_refused() {
    let out = synapse()
        .args([
            "agent",
            "--no-ui",
            "--reflect",
            "none",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        "synapse: error: nothing to do: no peers to probe (--peer, [agent.peers] or discovery) and --reflect none answers nobody\n"
    );
    let only = Agent::start(&["--reflect", "127.0.0.1:0"]);
    assert!(
        only.stderr()
            .contains("no peers to probe: this agent only answers others"),
        "{}",
        only.stderr()
    );
}

/// Issue 51: `--check` prints its peers in columns, however long a name
/// or an address.
#[test]
fn check_prints_its_peers_in_columns() {
    let out = synapse()
        .args(["agent", "--check", "--reflect", "none"])
        .args([
            "--peer",
            "a=127.0.0.1",
            "--peer",
            "a-longer-name=127.0.0.2:9000",
        ])
        .args(["--peer", "db=tcp://127.0.0.1:8080"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let peers: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(peers.len(), 3, "{text}");
    // Where each column starts: after the name, after the address.
    let starts = |l: &str| {
        let cells: Vec<usize> = l
            .char_indices()
            .filter(|&(i, c)| c != ' ' && i > 2 && l[..i].ends_with("  "))
            .map(|(i, _)| l[..i].chars().count())
            .collect();
        cells[..3].to_vec()
    };
    let first = starts(peers[0]);
    for p in &peers[1..] {
        assert_eq!(starts(p), first, "columns differ:\n{text}");
    }
}
