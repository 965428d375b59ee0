//! `synapse compare` and `synapse plot` through the real binary: a run
//! against itself is inconclusive without a margin; scripted peers with
//! known shifts (none, +1 %, +1 ms) get the three verdicts; the issue's
//! 1 ms peer is a regression from one JSON report a side; pictures are
//! pictures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A 1 s run against `peer` into `dir/NAME.hlog`; its JSON.
fn logged_run(peer: &str, dir: &Path, name: &str) -> (PathBuf, serde_json::Value) {
    timed_run(peer, dir, name, &["--duration", "1s"])
}

/// A logged run whose every packet asks for its TX stamp, so its intervals
/// hold the split: by default one in 256 does, at random, and a short run
/// on a loaded machine may draw none.
fn split_run(peer: &str, dir: &Path, name: &str) -> (PathBuf, serde_json::Value) {
    timed_run(
        peer,
        dir,
        name,
        &["--duration", "1s", "--tx-stamp-every", "1"],
    )
}

/// A run against `peer` for `budget` (and warm-up) into `dir/NAME.hlog`,
/// sliced every 50 ms; its JSON.
fn timed_run(peer: &str, dir: &Path, name: &str, budget: &[&str]) -> (PathBuf, serde_json::Value) {
    let log = dir.join(format!("{name}.hlog"));
    let out = synapse()
        .args(["client", peer, "--json"])
        .args(budget)
        .args(["--threshold", "1s", "--hdr-interval", "50ms", "--hdr-log"])
        .arg(&log)
        .output()
        .unwrap();
    let j = success_json(&out);
    (log, j)
}

/// A PNG's width, height and pixels as RGB.
fn rgb_pixels(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.line_size / info.width as usize;
    let pixels = buf[..info.buffer_size()]
        .chunks(px)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels)
}

fn compare(args: &[&Path], extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = synapse()
        .args(["compare", "--json"])
        .args(extra)
        .args(args)
        .output()
        .unwrap();
    let j = json_of(&out.stdout);
    (out.status.code(), j, text(&out.stderr))
}

fn figure<'a>(c: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    c["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == name)
        .unwrap()
}

#[test]
fn a_run_against_itself_is_inconclusive_without_a_margin() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = logged_run(&peer.addr(), dir.path(), "a");
    let (code, j, err) = compare(&[&log, &log], &[]);
    assert_eq!(code, Some(4), "inconclusive: {err}");
    let c = &j["comparisons"][0];
    assert_eq!(j["verdict"], "inconclusive");
    for f in c["figures"].as_array().unwrap() {
        assert_eq!(f["difference"], 0.0, "{f}");
        assert_eq!(f["verdict"], "inconclusive", "{f}");
        if f["figure"] != "loss" {
            assert!(f["ci_low"].as_f64().unwrap() <= 0.0, "{f}");
            assert!(f["ci_high"].as_f64().unwrap() >= 0.0, "{f}");
        }
    }
    let p50 = figure(c, "p50");
    assert_eq!(
        (p50["between"].as_str(), p50["within"].as_str()),
        (Some("prior"), Some("block_bootstrap"))
    );
    assert!(
        c["method"].as_str().unwrap().starts_with("one run a side"),
        "{c}"
    );
    // Counted as a failure when asked; the text says the same words.
    assert_eq!(
        compare(&[&log, &log], &["--fail-on-inconclusive"]).0,
        Some(3)
    );
    let out = synapse()
        .arg("compare")
        .arg(&log)
        .arg(&log)
        .output()
        .unwrap();
    let t = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        t.contains("Verdict: ? inconclusive: neither a regression nor its absence shown"),
        "{t}"
    );
    assert!(
        t.contains("Method: one run a side, so the variation between runs is not in the data"),
        "{t}"
    );
}

/// The case: JSON reports of 3,000 round trips, one against a peer
/// that echoes at once, one against a peer that waits 1 ms: each report
/// carries its slices, so one run a side finds the shift (beyond any
/// spread between runs), exit 3.
#[test]
fn one_json_report_a_side_finds_a_1_ms_peer() {
    let _one = one_at_a_time();
    let fast = ScriptedPeer::start(|_| Answer::Echo);
    let slow = ScriptedPeer::start(|_| Answer::Later(Duration::from_millis(1)));
    let dir = tempfile::tempdir().unwrap();
    let mut reports = Vec::new();
    for (name, peer) in [("a", &fast), ("b", &slow)] {
        let out = steady::undisturbed(name, || {
            synapse()
                .args(["client", &peer.addr(), "--json", "--packets", "3000"])
                .args(["--threshold", "1s"])
                .output()
                .unwrap()
        });
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, &out.stdout).unwrap();
        let j = success_json(&out);
        assert!(
            j["slices"]["items"].as_array().unwrap().len() >= 64,
            "{}",
            j["slices"]["requests_each"]
        );
        reports.push(path);
    }
    let (code, j, err) = compare(&[&reports[0], &reports[1]], &[]);
    assert_eq!(code, Some(3), "{err}");
    let p50 = figure(&j["comparisons"][0], "p50");
    assert_eq!(p50["verdict"], "regression", "{p50}");
    assert_eq!(p50["within"], "block_bootstrap", "{p50}");
    // The interval is a ratio's (log space), so its low end in ns follows
    // the fast run's p50: what it must say is more than no change, and
    // the shift is the peer's 1 ms.
    assert!(p50["ci_low_ratio"].as_f64().unwrap() > 1.0, "{p50}");
    assert!(p50["difference"].as_f64().unwrap() > 900_000.0, "{p50}");
    assert_eq!(j["verdict"], "regression");
}

/// Multicast reports are compared responder by responder as well as for
/// the group: r2 twice as slow in B is a regression in its own rows; r1,
/// the same in both, is not. Three runs a side, as one a side cannot show
/// even a doubling on an uncalibrated host.
#[test]
fn multicast_runs_are_compared_responder_by_responder() {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<PathBuf> = Vec::new();
    for (side, base) in [("a", 100_000), ("b", 200_000)] {
        if side == "b" {
            args.push("--".into());
        }
        for (k, wobble) in [0, 2_000, 4_000].into_iter().enumerate() {
            let path = dir.path().join(format!("{side}{k}.json"));
            std::fs::write(&path, crate::plot::multicast_report(base + wobble)).unwrap();
            args.push(path);
        }
    }
    let run = |json: bool| {
        let mut cmd = synapse();
        cmd.arg("compare");
        if json {
            cmd.arg("--json");
        }
        cmd.args(&args).output().unwrap()
    };
    let out = run(true);
    let j = json_of(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{j}");
    let responders = j["comparisons"][0]["responders"].as_array().unwrap();
    let names: Vec<&str> = responders
        .iter()
        .map(|r| r["responder"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["r1", "r2"], "{j}");
    assert_eq!(
        figure(&responders[1], "p50")["verdict"],
        "regression",
        "{j}"
    );
    assert_ne!(
        figure(&responders[0], "p50")["verdict"],
        "regression",
        "{j}"
    );
    let words = text(&run(false).stdout);
    assert!(
        words.contains("\nResponder r1:\n") && words.contains("\nResponder r2:\n"),
        "{words}"
    );
}

/// A calibration of this host whose runs differ by `sd` (ln) on 20 runs:
/// what `synapse calibrate` would keep, written where the binary looks.
fn calibrated_state(sd: f64) -> tempfile::TempDir {
    let state = tempfile::tempdir().unwrap();
    let read = |p: &str| std::fs::read_to_string(p).unwrap().trim().to_string();
    let c = serde_json::json!({
        "synapse_version": "0", "host": read("/proc/sys/kernel/hostname"),
        "kernel": read("/proc/sys/kernel/osrelease"), "calibrated_at": "2026-11-27T00:00:00Z",
        "quick": false, "cpus": [0, 1], "p99": {},
        "run_to_run": {"spread": {"source": {"kind": "host", "calibrated_at": "2026-11-27T00:00:00Z", "runs": 20},
            "log_sd": [sd, sd, sd, sd, sd], "df": 19.0}, "p50_ns": []}
    });
    let dir = state.path().join("synapse");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("calibration.json"), c.to_string()).unwrap();
    state
}

/// The standard deviation of the logarithms of `values`.
fn log_sd(values: &[f64]) -> f64 {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (logs.len() - 1) as f64;
    var.sqrt()
}

/// Scripted peers with known shifts, on a host whose calibration says runs
/// differ by 3 % (less than the assumed allowance, so the allowance
/// stands). Fifteen 0.4 s runs a side (about 400 replies each: p50 and p90
/// are resolved, p99 and p99.9 are not) show no shift and +1 % as no
/// regression in p50 within --min-effect 10 (an equivalence), and the whole
/// comparison is inconclusive, since the tails are not resolved; three a
/// side cannot show it; +1 % one run a side is inconclusive; +1 ms three
/// runs a side is a regression whose interval holds what the slow peer
/// really added. The two verdicts within 10 % are judged only on runs the
/// machine let keep their level (see the premises below).
#[test]
fn known_shifts_get_their_three_verdicts() {
    let _one = one_at_a_time();
    const BASE: Duration = Duration::from_millis(1);
    let base = ScriptedPeer::start(|_| Answer::Later(BASE));
    let one_percent = ScriptedPeer::start(|_| Answer::Later(BASE + BASE / 100));
    let one_ms = ScriptedPeer::start(|_| Answer::Later(BASE + Duration::from_millis(1)));
    let dir = tempfile::tempdir().unwrap();
    let state = calibrated_state(0.03);
    let budget = ["--duration", "0.4s", "--warmup", "20"];
    let test = "known_shifts_get_their_three_verdicts";
    // A peer holds every answer alike, so a run whose slices' medians
    // stray from its p50 by more than DRIFT was moved by the machine (a
    // test beside it holding both CPUs for part of the run): its own noise
    // widens the interval past what the verdicts within 10 % need, though
    // the runs' p50s agree. Such a run is measured again, each retry said.
    const DRIFT: f64 = 1.25;
    let steady_run = |peer: &ScriptedPeer, name: &str| -> (PathBuf, serde_json::Value, bool) {
        let mut attempt = 1;
        loop {
            let (log, j) = timed_run(
                &peer.addr(),
                dir.path(),
                &format!("{name}t{attempt}"),
                &budget,
            );
            let drift = steady::level_drift(&j).unwrap_or(1.0);
            if drift <= DRIFT || attempt == 3 {
                return (log, j, drift <= DRIFT);
            }
            let why =
                format!("its slices' medians strayed {drift:.2} x from its p50, over {DRIFT}");
            announce::retry(&format!("{test} {name}"), attempt, &why);
            attempt += 1;
        }
    };
    let measure = |attempt: usize| {
        let mut runs: [Vec<PathBuf>; 4] = Default::default();
        let mut base_p50s = Vec::new();
        let mut steady = true;
        // Alternating, so that a drift of the machine falls on every side.
        for k in 0..15 {
            for (i, peer) in [&base, &base, &one_percent, &one_ms].iter().enumerate() {
                if i < 3 || k < 3 {
                    let (log, j, held) = steady_run(peer, &format!("a{attempt}p{i}r{k}"));
                    steady &= held;
                    if i < 2 {
                        base_p50s.push(j["rtt_ns"]["p50"].as_f64().unwrap());
                    }
                    runs[i].push(log);
                }
            }
        }
        (runs, log_sd(&base_p50s), steady)
    };
    // The verdicts within 10 % rest on the premise the calibration states:
    // runs against one peer differ by about 3 %. A machine that spreads
    // them over twice that (measured on the base peer's own 30 runs, never
    // on a verdict) is measured again, each retry said; if it never holds,
    // or a run stayed moved through its retries, those two verdicts are
    // reported unjudged, never loosened.
    const SPREAD: f64 = 0.06;
    let mut attempt = 1;
    let (runs, spread, steady) = loop {
        let (runs, spread, steady) = measure(attempt);
        if spread <= SPREAD || attempt == 3 {
            break (runs, spread, steady);
        }
        let why = format!("the base peer's runs spread {spread:.3} in log p50, over {SPREAD}");
        announce::retry(test, attempt, &why);
        attempt += 1;
    };
    let premise = spread <= SPREAD && steady;
    if !premise {
        let why = if steady {
            format!("the base peer's runs spread {spread:.3} in log p50, over {SPREAD}")
        } else {
            format!("a run's slices strayed over {DRIFT} x from its p50 in each of 3 tries")
        };
        announce::unjudged(test, "the p50 verdicts within --min-effect 10", &why);
    }
    let side = |a: &[PathBuf], b: &[PathBuf]| -> Vec<PathBuf> {
        a.iter()
            .cloned()
            .chain([PathBuf::from("--")])
            .chain(b.iter().cloned())
            .collect()
    };
    let run_compare = |args: &[PathBuf], extra: &[&str]| {
        let out = synapse()
            .env("XDG_STATE_HOME", state.path())
            .args(["compare", "--json"])
            .args(extra)
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), json_of(&out.stdout))
    };
    let margin = ["--min-effect", "10"];
    for (what, b) in [("no shift", &runs[1]), ("+1 %", &runs[2])] {
        let (code, j) = run_compare(&side(&runs[0], b), &margin);
        let c = &j["comparisons"][0];
        assert!(
            c["method"]
                .as_str()
                .unwrap()
                .contains("the assumed allowance, or this host's where wider"),
            "{j}"
        );
        let p50 = figure(c, "p50");
        if premise {
            assert_eq!(p50["verdict"], "no regression", "{what}: {p50}");
        }
        let p99 = figure(c, "p99");
        assert_eq!(
            (p99["resolved"].as_bool(), p99["verdict"].as_str()),
            (Some(false), Some("inconclusive")),
            "{what}: {p99}"
        );
        assert_eq!(
            (code, j["verdict"].as_str()),
            (Some(4), Some("inconclusive")),
            "{what}"
        );
    }
    let (code, j) = run_compare(&side(&runs[0][..3], &runs[1][..3]), &margin);
    assert_eq!(
        figure(&j["comparisons"][0], "p50")["verdict"],
        "inconclusive",
        "three a side: {j}"
    );
    assert_eq!(code, Some(4));
    let (code, j) = run_compare(&[runs[0][0].clone(), runs[2][0].clone()], &margin);
    assert_eq!(
        figure(&j["comparisons"][0], "p50")["verdict"],
        "inconclusive",
        "+1 %, one a side: {j}"
    );
    assert_eq!(code, Some(4));
    let (code, j) = run_compare(&side(&runs[0][..3], &runs[3]), &[]);
    assert_eq!(code, Some(3), "+1 ms: {j}");
    let p50 = figure(&j["comparisons"][0], "p50");
    assert_eq!(
        (p50["verdict"].as_str(), p50["between"].as_str()),
        (Some("regression"), Some("runs"))
    );
    let (lo, hi) = (
        p50["ci_low"].as_f64().unwrap(),
        p50["ci_high"].as_f64().unwrap(),
    );
    let d = one_ms.held_median().unwrap().as_nanos() as f64
        - base.held_median().unwrap().as_nanos() as f64;
    assert!(lo <= d && d <= hi, "{lo}..{hi} should hold {d}: {p50}");
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\n").unwrap();
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let (log, _) = logged_run(&peer.addr(), dir.path(), "one");
    for (args, want) in [
        (
            vec!["compare", "/nonexistent.hlog", "/nonexistent.hlog"],
            "synapse: error: /nonexistent.hlog: No such file or directory\n",
        ),
        (
            vec!["compare", junk.to_str().unwrap(), junk.to_str().unwrap()],
            "junk.txt: line 1: not an HdrHistogram interval log line",
        ),
        (
            vec!["compare", log.to_str().unwrap()],
            "compare needs two runs at least",
        ),
        (
            vec![
                "compare",
                "--peer",
                "b",
                log.to_str().unwrap(),
                log.to_str().unwrap(),
            ],
            "no 'b/rtt' series in this interval log (it has: rtt, send_path",
        ),
    ] {
        let out = synapse().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("synapse: error: ") && err.contains(want),
            "{err}"
        );
    }
}

/// Issue 36: a picture that cannot be written is one line in plain words
/// (no `ImageError(IoError(Os {…}))`), exit 2 for a path where no file can
/// be made and 1 for a full device, and leaves no file behind.
#[test]
fn a_picture_that_cannot_be_written_is_one_plain_line() {
    let dir = tempfile::tempdir().unwrap();
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let (log, _) = logged_run(&peer.addr(), dir.path(), "one");
    let nowhere = dir.path().join("no/such/dir/x.png");
    for kind in ["all", "percentiles"] {
        let out = synapse()
            .args(["plot", "--kind", kind])
            .arg(&log)
            .arg("-o")
            .arg(&nowhere)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert_eq!(
            text(&out.stderr),
            format!(
                "synapse: error: plot -o {}: No such file or directory\n",
                nowhere.display()
            )
        );
    }
    // A full device, written through a link named as a picture.
    let link = dir.path().join("full.svg");
    std::os::unix::fs::symlink("/dev/full", &link).unwrap();
    let out = synapse()
        .arg("plot")
        .arg(&log)
        .arg("-o")
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "synapse: error: plot -o {}: No space left on device\n",
            link.display()
        )
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "the log and the link only: {left:?}");
}

/// Issue 36: the split's stacked bands each wear their legend's colour
/// (they were drawn over each other with transparency, so none did), and
/// JSON reports are drawn for what they hold, with one line saying what
/// was left out.
#[test]
fn stacked_bands_wear_their_colours_and_reports_are_drawn_for_what_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let (log, report) = split_run(&peer.addr(), dir.path(), "s");
    let png = dir.path().join("split.png");
    let out = synapse()
        .args(["plot", "--kind", "split"])
        .arg(&log)
        .arg("-o")
        .arg(&png)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (w, h, pixels) = rgb_pixels(&png);
    let share =
        |rgb: [u8; 3]| pixels.iter().filter(|p| **p == rgb).count() as f64 / f64::from(w * h);
    // send path, network + remote, receive path: the plot's first colours.
    for rgb in [[31, 119, 180], [214, 39, 40], [44, 160, 44]] {
        assert!(
            share(rgb) > 0.002,
            "{rgb:?}: {:.3} % of the picture",
            share(rgb) * 100.0
        );
    }

    let json = dir.path().join("r.json");
    std::fs::write(&json, report.to_string()).unwrap();
    let both = dir.path().join("both.svg");
    let out = synapse()
        .arg("plot")
        .arg(&json)
        .arg(&json)
        .arg("-o")
        .arg(&both)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Issue 51: a report's slices are drawn over time; only the split,
    // which a report does not hold, is left out, and said so per run.
    let note = "synapse: note: r.json: its split not drawn (a report's slices hold round trips only, no split)\n";
    assert_eq!(text(&out.stderr), note.repeat(2));
    let svg = std::fs::read_to_string(&both).unwrap();
    assert!(svg.contains("RTT by percentile") && svg.contains("RTT over time"));
    let out = synapse()
        .arg("plot")
        .arg(&log)
        .arg(&json)
        .arg("-o")
        .arg(&both)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), note);
    // A report without slices holds figures only: nothing over time.
    let mut figures = report.clone();
    figures.as_object_mut().unwrap().remove("slices");
    let bare = dir.path().join("bare.json");
    std::fs::write(&bare, figures.to_string()).unwrap();
    let out = synapse()
        .args(["plot", "--kind", "time"])
        .arg(&bare)
        .arg("-o")
        .arg(&both)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "synapse: error: plot --kind time: no run over time to draw: bare.json: not drawn over time (a report without slices holds figures only, no time)\n"
    );
}

#[test]
fn plots_are_pictures() {
    let peer = ScriptedPeer::start(|seq| {
        if seq % 200 == 3 {
            Answer::Drop
        } else {
            Answer::Echo
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = split_run(&peer.addr(), dir.path(), "p");
    let png = dir.path().join("p.png");
    let out = synapse()
        .arg("plot")
        .arg(&log)
        .arg(&log)
        .arg("-o")
        .arg(&png)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (w, h, pixels) = rgb_pixels(&png);
    // Four charts of 1200 × 675: percentiles, time, and each run's split
    // (kernel stamps give one).
    assert_eq!((w, h), (1200, 4 * 675));
    let inked = pixels.iter().filter(|p| **p != [255, 255, 255]).count();
    let share = inked as f64 / f64::from(w * h);
    assert!((0.02..0.8).contains(&share), "{:.1} % inked", share * 100.0);
    let colours: std::collections::BTreeSet<&[u8; 3]> = pixels.iter().collect();
    assert!(colours.len() > 20, "{} colours", colours.len());

    let svg = dir.path().join("p.svg");
    let out = synapse()
        .args(["plot", "--kind", "percentiles"])
        .arg(&log)
        .arg("-o")
        .arg(&svg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let body = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&body).unwrap();
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for want in [
        "RTT by percentile",
        "round-trip time (log scale)",
        "99.9 %",
        "p.hlog",
    ] {
        assert!(
            texts.iter().any(|t| t.contains(want)),
            "{want} in {texts:?}"
        );
    }
    let out = synapse()
        .arg("plot")
        .arg(&log)
        .args(["-o", "picture.gif"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("the picture is FILE.svg or FILE.png"));
}
