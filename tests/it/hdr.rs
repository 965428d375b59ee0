//! `--hdr-log`: the interval log a real run writes decodes elsewhere (the
//! `hdrhistogram` crate's own reader, Python's `hdrh`) to the counts and
//! percentiles of the run's JSON; an existing file is kept; Ctrl-C leaves
//! whole lines.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The intervals of the log's `rtt` series, as (start, length), in order.
fn rtt_intervals(path: &Path) -> Vec<(Duration, Duration)> {
    let bytes = std::fs::read(path).unwrap();
    let mut all: Vec<(Duration, Duration)> = IntervalLogIterator::new(&bytes)
        .filter_map(|e| match e.unwrap() {
            LogEntry::Interval(h) if h.tag().is_some_and(|t| t.as_str() == "rtt") => {
                Some((h.start_timestamp(), h.duration()))
            }
            _ => None,
        })
        .collect();
    all.sort();
    all
}

/// Every series of the log, merged over its intervals, read with the
/// crate's reader (not Synapse's), and the number of the run's intervals
/// (outage lines left out).
fn decode(path: &Path) -> (BTreeMap<String, Histogram<u64>>, usize) {
    let bytes = std::fs::read(path).unwrap();
    let mut out: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let mut starts = std::collections::BTreeSet::new();
    let mut d = Deserializer::new();
    for e in IntervalLogIterator::new(&bytes) {
        if let LogEntry::Interval(h) = e.unwrap() {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .unwrap();
            let hist: Histogram<u64> = d.deserialize(&mut raw.as_slice()).unwrap();
            let tag = h.tag().unwrap().as_str().to_string();
            // An outage is a line spanning it, not one of the run's
            // intervals (it may start in the millisecond one does).
            if tag != "outage" {
                starts.insert(h.start_timestamp());
            }
            out.entry(tag)
                .or_insert_with(|| {
                    let mut h = Histogram::new(3).unwrap();
                    h.auto(true);
                    h
                })
                .add(&hist)
                .unwrap();
        }
    }
    (out, starts.len())
}

#[test]
fn a_run_logs_what_its_json_reports() {
    let peer = ScriptedPeer::start(|seq| {
        if seq % 97 == 5 {
            Answer::Drop
        } else {
            Answer::Echo
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.hlog");
    let out = synapse()
        .args(["client", &peer.addr(), "--json", "--duration", "2500ms"])
        .args(["--timeout", "5ms", "--threshold", "1s", "--max-loss", "100"])
        .args(["--hdr-interval", "500ms", "--hdr-log"])
        .arg(&log)
        .output()
        .unwrap();
    let j = success_json(&out);
    assert_eq!(j["hdr_log"]["path"], log.to_str().unwrap());
    let (series, intervals) = decode(&log);
    assert_eq!(j["hdr_log"]["intervals"], intervals as u64);
    // The intervals tile the run: each at most 500 ms, each starting where
    // the one before ended (the log's millisecond resolution apart), from
    // its start to past its 2.5 s. How many there are is the machine's
    // business (a stall can cut one short), not the test's.
    let tiles = rtt_intervals(&log);
    let ms = Duration::from_millis(1);
    assert!(tiles[0].0 <= ms, "from the start: {tiles:?}");
    for w in tiles.windows(2) {
        let end = w[0].0 + w[0].1;
        assert!(end.abs_diff(w[1].0) <= ms, "no gap, no overlap: {tiles:?}");
    }
    assert!(
        tiles.iter().all(|t| t.1 <= Duration::from_millis(500) + ms),
        "{tiles:?}"
    );
    let (last_start, last_len) = *tiles.last().unwrap();
    let span = Duration::from_secs_f64(j["duration_s"].as_f64().unwrap());
    assert!(
        span >= Duration::from_millis(2500) && last_start + last_len + ms >= span,
        "to the end of its {span:?}: {tiles:?}"
    );
    let rtt = &series["rtt"];
    assert_eq!(rtt.len(), j["packets"]["received"].as_u64().unwrap());
    for (q, key) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (1.0, "max")] {
        assert_eq!(
            rtt.value_at_quantile(q),
            j["rtt_ns"][key].as_u64().unwrap(),
            "{key}"
        );
    }
    let unanswered =
        j["packets"]["lost"].as_u64().unwrap() + j["packets"]["late"].as_u64().unwrap();
    assert!(unanswered > 0, "the peer drops every 97th");
    assert_eq!(series["unanswered"].len(), unanswered);
    // Kernel stamps are on by default here: the segments are logged from
    // the sampled packets, as the breakdown reports them.
    for seg in j["breakdown"]["segments"].as_array().unwrap() {
        let key = seg["segment"].as_str().unwrap();
        assert_eq!(series[key].len(), seg["samples"].as_u64().unwrap(), "{key}");
        assert_eq!(
            series[key].value_at_quantile(0.5),
            seg["p50_ns"].as_u64().unwrap()
        );
    }
}

/// Python's `hdrh` (HdrHistogram_py) reads the same file to the same
/// counts; its percentiles rank by rounding rather than by ceiling, so
/// they may fall one bucket apart (0.1 %).
#[test]
fn pythons_hdrh_reads_the_log() {
    let Some(python) = tool("python3", "pythons_hdrh_reads_the_log") else {
        return;
    };
    let has_hdrh = std::process::Command::new(&python)
        .args(["-c", "import hdrh"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_hdrh {
        announce::skip(
            "pythons_hdrh_reads_the_log",
            "the Python package hdrhistogram is not installed (.ci/run installs it)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("py.hlog");
    let out = synapse()
        .args([
            "--no-ui",
            "--json",
            "--packets",
            "20000",
            "--threshold",
            "1s",
        ])
        .args(["--hdr-interval", "100ms", "--hdr-log"])
        .arg(&log)
        .output()
        .unwrap();
    let j = success_json(&out);
    let script = r#"
import sys
from hdrh.log import HistogramLogReader
from hdrh.histogram import HdrHistogram
r = HistogramLogReader(sys.argv[1], HdrHistogram(1, 120_000_000_000, 3))
acc = {}
n = 0
while True:
    h = r.get_next_interval_histogram()
    if h is None:
        break
    n += 1
    acc.setdefault(h.get_tag(), HdrHistogram(1, 120_000_000_000, 3)).add(h)
rtt = acc["rtt"]
print(n, rtt.get_total_count(), rtt.get_value_at_percentile(50), rtt.get_value_at_percentile(99), rtt.get_max_value(), r.get_start_time_sec())
"#;
    let py = std::process::Command::new(&python)
        .args(["-c", script])
        .arg(&log)
        .output()
        .unwrap();
    assert!(py.status.success(), "{}", text(&py.stderr));
    let got: Vec<f64> = text(&py.stdout)
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    // Every histogram line (a series with nothing in an interval, such as
    // the split's, sampled one packet in 256, has no line for it).
    let lines = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
        .count();
    assert!(lines > 0);
    assert_eq!(got[0] as usize, lines, "one histogram per line");
    assert_eq!(got[1] as u64, j["packets"]["received"].as_u64().unwrap());
    for (v, key) in [(got[2], "p50"), (got[3], "p99"), (got[4], "max")] {
        let want = j["rtt_ns"][key].as_f64().unwrap();
        assert!(
            (v - want).abs() <= want * 0.001 + 1.0,
            "{key}: {v} against {want}"
        );
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - got[5]).abs() < 120.0, "StartTime {} is now", got[5]);
}

#[test]
fn an_existing_log_is_kept_and_the_run_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("old.hlog");
    std::fs::write(&log, "an earlier run\n").unwrap();
    let out = synapse()
        .args(["--no-ui", "--packets", "10", "--hdr-log"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "synapse: error: --hdr-log {}: the file exists (remove it, or choose another name)\n",
            log.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "an earlier run\n");
}

/// Ctrl-C ends the run; the log holds whole lines up to the stop, and as
/// many replies as the report.
#[test]
fn ctrl_c_leaves_whole_lines_with_everything_measured() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stopped.hlog");
    let child = synapse()
        .args(["client", &peer.addr(), "--json", "--duration", "60s"])
        .args(["--threshold", "1s", "--hdr-interval", "200ms", "--hdr-log"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    unsafe_free_kill(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    let j = json_of(&out.stdout);
    assert_eq!(j["interrupted"], true, "{}", text(&out.stderr));
    let body = std::fs::read_to_string(&log).unwrap();
    assert!(body.ends_with('\n'));
    let (series, intervals) = decode(&log);
    assert!(intervals >= 3, "{intervals}");
    assert_eq!(
        series["rtt"].len(),
        j["packets"]["received"].as_u64().unwrap()
    );
}

/// The server logs each answer's response (T3 driver − T2 driver) and
/// dwell; the agent each peer's series under the peer's name.
#[test]
fn the_server_and_the_agent_log_their_own_series() {
    let dir = tempfile::tempdir().unwrap();
    let srv_log = dir.path().join("server.hlog");
    let (server, port) = start_server(&[
        "--hdr-interval",
        "200ms",
        "--hdr-log",
        srv_log.to_str().unwrap(),
    ]);
    let out = synapse()
        .args(["client", &format!("127.0.0.1:{port}"), "--json"])
        .args(["--packets", "2000", "--threshold", "1s"])
        .output()
        .unwrap();
    let j = success_json(&out);
    let warmup = j["config"]["warmup"].as_u64().unwrap();
    let agent_log = dir.path().join("agent.hlog");
    let agent = synapse()
        .args([
            "agent",
            "--no-ui",
            "--reflect",
            "none",
            "--interval",
            "10ms",
        ])
        .args(["--metrics-listen", "127.0.0.1:0", "--hdr-interval", "200ms"])
        .arg("--peer")
        .arg(format!("far end=127.0.0.1:{port}"))
        .arg("--hdr-log")
        .arg(&agent_log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    unsafe_free_kill(agent.id(), "INT");
    let a = agent.wait_with_output().unwrap();
    assert_eq!(a.status.code(), Some(0), "{}", text(&a.stderr));
    assert!(text(&a.stderr).contains("synapse: note: interval log: "));
    let (rest, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(0));
    assert!(rest.contains("interval log: "), "{rest}");

    let (series, _) = decode(&srv_log);
    let answered = series["response"].len();
    // Every answer the client's run asked for (warm-up included), and the
    // agent's probes on top.
    assert!(answered >= 2000 + warmup, "{answered}");
    assert_eq!(series["dwell"].len(), answered);
    assert!(series["response"].value_at_quantile(0.5) > 0);
    let (series, intervals) = decode(&agent_log);
    assert!(intervals >= 5, "{intervals}");
    let probes = series["far_end/rtt"].len();
    assert!((50..=160).contains(&probes), "1.5 s at 10 ms: {probes}");
    assert!(
        series.keys().all(|k| k.starts_with("far_end/")),
        "{series:?}"
    );
}
