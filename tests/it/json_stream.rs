//! `--json-stream` (issue 51), followed live as a dashboard would: lines
//! read while the run goes (the run is stopped only after they came, so
//! each came before its end), each with its event and schema; the slices'
//! counts, settled where they were provisional, add up to the report on
//! the last line, which comes also when the run is interrupted.

use crate::common::{Answer, Guard, ScriptedPeer, synapse};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

type Json = serde_json::Value;

/// Starts a streaming client against `peer`, reads lines until `enough`
/// says so, then stops it with Ctrl-C and reads the rest. Returns every
/// line, and how many had come before the stop.
fn follow(
    peer: &ScriptedPeer,
    extra: &[&str],
    enough: impl Fn(&[Json]) -> bool,
) -> (Vec<Json>, usize, Option<i32>) {
    let child = synapse()
        .args(["client", &peer.addr(), "--json-stream", "--duration", "1h"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut guard = Guard(child);
    let mut lines = BufReader::new(guard.0.stdout.take().unwrap()).lines();
    let mut got = Vec::new();
    while !enough(&got) {
        let line = lines.next().expect("the stream ended early").unwrap();
        got.push(serde_json::from_str::<Json>(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
    let live = got.len();
    guard.interrupt();
    for line in lines {
        got.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    let code = guard.0.wait().unwrap().code();
    (got, live, code)
}

fn events<'a>(lines: &'a [Json], event: &str) -> Vec<&'a Json> {
    lines.iter().filter(|l| l["event"] == event).collect()
}

/// Each slice's last word: its `settled` line where it had one.
fn final_slices(lines: &[Json]) -> BTreeMap<u64, &Json> {
    let mut last = BTreeMap::new();
    for l in lines
        .iter()
        .filter(|l| l["event"] == "interval" || l["event"] == "settled")
    {
        last.insert(l["index"].as_u64().unwrap(), l);
    }
    last
}

fn sum(slices: &BTreeMap<u64, &Json>, key: &str) -> u64 {
    slices
        .values()
        .map(|s| s["packets"][key].as_u64().unwrap())
        .sum()
}

#[test]
fn a_stream_is_written_live_and_adds_up_to_its_report() {
    // Every 40th request dropped, every 40th (offset 20) answered after
    // its timeout: lost and late both occur.
    let peer = ScriptedPeer::start(|seq| match seq % 40 {
        7 => Answer::Drop,
        27 => Answer::Later(std::time::Duration::from_millis(60)),
        _ => Answer::Echo,
    });
    let (lines, live, code) = follow(&peer, &["--update", "200ms", "--timeout", "30ms"], |got| {
        events(got, "interval").len() >= 4
    });
    assert!(live >= 5, "start and four intervals came before the stop");
    assert_eq!(code, Some(130), "stopped by Ctrl-C before its --duration");
    assert!(
        lines.iter().all(|l| l["schema"] == 1),
        "every line names its schema"
    );
    assert_eq!(lines[0]["event"], "start");
    assert_eq!(lines[0]["cut"]["every_s"], 0.2);
    let report = lines.last().unwrap();
    assert_eq!(report["event"], "report", "the report is the last line");
    assert_eq!(report["interrupted"], true);
    let intervals = events(&lines, "interval");
    let indexes: Vec<u64> = intervals
        .iter()
        .map(|l| l["index"].as_u64().unwrap())
        .collect();
    assert_eq!(
        indexes,
        (0..indexes.len() as u64).collect::<Vec<_>>(),
        "in order, none missing"
    );
    for l in events(&lines[..live], "interval") {
        // A timeout shorter than a slice: written once final.
        assert_eq!(l["loss_provisional"], false, "{l}");
        let sent = l["packets"]["sent"].as_u64().unwrap();
        assert!(sent > 0, "a ping-pong run sends in every slice: {l}");
        let replies = l["packets"]["received"].as_u64().unwrap();
        let hist = l["rtt_histogram"]
            .as_str()
            .expect("replies came, so a histogram");
        let h = synapse::hdr_log::decode_histogram(hist).unwrap();
        assert_eq!(h.len(), replies, "the histogram holds the slice's replies");
        assert_eq!(l["rtt_ns"]["max"].as_u64(), Some(h.max()), "{l}");
        let lost = l["packets"]["lost"].as_u64().unwrap() + l["packets"]["late"].as_u64().unwrap();
        let pct = l["loss_percent"].as_f64().unwrap();
        assert!(
            (pct - 100.0 * lost as f64 / sent as f64).abs() < 1e-9,
            "{l}"
        );
    }
    let slices = final_slices(&lines);
    let packets = &report["packets"];
    let n = |k: &str| packets[k].as_u64().unwrap();
    assert_eq!(
        sum(&slices, "sent"),
        n("sent"),
        "every request in one slice"
    );
    assert_eq!(sum(&slices, "received"), n("received"));
    assert_eq!(
        sum(&slices, "lost") + sum(&slices, "late"),
        n("lost") + n("late")
    );
    assert!(
        n("lost") > 0 && n("late") > 0,
        "the peer dropped and delayed: {packets}"
    );
}

#[test]
fn a_timeout_longer_than_a_slice_makes_it_provisional_until_settled() {
    let peer = ScriptedPeer::start(|seq| {
        if seq % 50 == 9 {
            Answer::Drop
        } else {
            Answer::Echo
        }
    });
    let (lines, _, _) = follow(&peer, &["--update", "100ms", "--timeout", "300ms"], |got| {
        events(got, "settled").len() >= 2
    });
    let provisional: Vec<u64> = events(&lines, "interval")
        .iter()
        .filter(|l| l["loss_provisional"] == true)
        .map(|l| l["index"].as_u64().unwrap())
        .collect();
    let settled: Vec<u64> = events(&lines, "settled")
        .iter()
        .map(|l| l["index"].as_u64().unwrap())
        .collect();
    assert!(!provisional.is_empty());
    assert_eq!(
        provisional, settled,
        "each provisional slice is settled once, in order"
    );
    let report_at = lines.iter().position(|l| l["event"] == "report").unwrap();
    assert_eq!(report_at, lines.len() - 1, "settled before the report");
    let slices = final_slices(&lines);
    assert!(slices.values().all(|s| s["loss_provisional"] == false));
    assert_eq!(
        sum(&slices, "sent"),
        lines[report_at]["packets"]["sent"].as_u64().unwrap()
    );
}
