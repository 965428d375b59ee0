//! `synapse compare` and `synapse plot` through the real binary: a run
//! against itself shows no difference; a peer that answers a known time
//! later is found slower by an interval that holds that time; pictures
//! are pictures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A 1 s run against `peer` into `dir/NAME.hlog`; its JSON.
fn logged_run(peer: &str, dir: &Path, name: &str) -> (PathBuf, serde_json::Value) {
    let log = dir.join(format!("{name}.hlog"));
    let out = synapse()
        .args(["client", peer, "--json", "--duration", "1s"])
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
fn a_run_against_itself_shows_no_difference() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = logged_run(&peer.addr(), dir.path(), "a");
    let (code, j, err) = compare(&[&log, &log], &[]);
    assert_eq!(code, Some(0), "{err}");
    let c = &j["comparisons"][0];
    assert_eq!(j["regression"], false);
    for f in c["figures"].as_array().unwrap() {
        assert_eq!(f["difference"], 0.0, "{f}");
        assert_eq!(f["significant"], false, "{f}");
        assert!(
            f["sentence"]
                .as_str()
                .unwrap()
                .contains("no significant difference"),
            "{f}"
        );
    }
    assert_eq!(figure(c, "p50")["method"], "within_run");
    // The text says the same, one sentence a figure.
    let out = synapse()
        .args(["compare"])
        .arg(&log)
        .arg(&log)
        .output()
        .unwrap();
    let t = text(&out.stdout);
    assert_eq!(t.matches(": no significant difference (").count(), 6, "{t}");
    assert!(t.contains("Verdict: no regression"), "{t}");
}

/// Three runs against a peer that answers 1 ms late, three against one
/// that answers 500 µs later still: every run's p50 moves by about that,
/// and the interval of the difference holds it. (Both peers hold their
/// replies, so the client sleeps about as long for either: against a peer
/// that echoes at once, its wake-up from a 24 µs wait is cheaper than from
/// a 500 µs one, and the difference would be more than the delay added.)
#[test]
fn a_known_delay_is_found_and_its_interval_holds_it() {
    let _one = one_at_a_time();
    const BASE: Duration = Duration::from_millis(1);
    const DELAY: Duration = Duration::from_micros(500);
    let fast = ScriptedPeer::start(|_| Answer::Later(BASE));
    let slow = ScriptedPeer::start(|_| Answer::Later(BASE + DELAY));
    let dir = tempfile::tempdir().unwrap();
    let mut a = Vec::new();
    let mut b = Vec::new();
    // Alternating, so that a drift of the machine falls on both sides.
    for k in 0..3 {
        a.push(logged_run(&fast.addr(), dir.path(), &format!("fast{k}")).0);
        b.push(logged_run(&slow.addr(), dir.path(), &format!("slow{k}")).0);
    }
    let mut args: Vec<&Path> = a.iter().map(PathBuf::as_path).collect();
    args.push(Path::new("--"));
    args.extend(b.iter().map(PathBuf::as_path));
    let (code, j, err) = compare(&args, &[]);
    assert_eq!(
        code,
        Some(3),
        "a significant worsening is a regression: {err}"
    );
    let p50 = figure(&j["comparisons"][0], "p50");
    assert_eq!(p50["method"], "run_to_run");
    assert_eq!(p50["significant"], true);
    let (lo, hi) = (
        p50["ci_low"].as_f64().unwrap(),
        p50["ci_high"].as_f64().unwrap(),
    );
    // What the slow peer really added over the fast one: about DELAY, more
    // when the machine preempted a sending thread.
    let (held_fast, held_slow) = (fast.held_median().unwrap(), slow.held_median().unwrap());
    assert!(
        held_fast >= BASE && held_slow >= BASE + DELAY,
        "{held_fast:?} {held_slow:?}"
    );
    let d = held_slow.as_nanos() as f64 - held_fast.as_nanos() as f64;
    assert!(lo <= d && d <= hi, "{lo}..{hi} should hold {d}: {p50}");
    assert!(
        p50["sentence"].as_str().unwrap().starts_with("p50 is ")
            && p50["sentence"]
                .as_str()
                .unwrap()
                .contains(" slower, 95 % CI "),
        "{p50}"
    );
    // One run a side: beyond the runs' own noise, but not called
    // significant (run-to-run variation is unseen) unless --min-effect
    // says how large a change matters; a regression only then, and not
    // when the effect is smaller than asked.
    let (code, j, _) = compare(&[&a[0], &b[0]], &[]);
    assert_eq!(
        code,
        Some(0),
        "one run a side calls no regression by itself"
    );
    let p50 = figure(&j["comparisons"][0], "p50");
    assert_eq!(p50["excludes_zero"], true, "{p50}");
    assert_eq!(p50["significant"], false, "{p50}");
    assert!(
        p50["sentence"]
            .as_str()
            .unwrap()
            .contains("cannot separate this from run-to-run variation"),
        "{p50}"
    );
    let (code, j, _) = compare(&[&a[0], &b[0]], &["--min-effect", "20"]);
    assert_eq!(code, Some(3), "50 % worse is beyond 20 %");
    assert_eq!(figure(&j["comparisons"][0], "p50")["significant"], true);
    let (code, _, _) = compare(&[&a[0], &b[0]], &["--min-effect", "100000"]);
    assert_eq!(code, Some(0));
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
    let (log, report) = logged_run(&peer.addr(), dir.path(), "s");
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
    assert_eq!(
        text(&out.stderr),
        "synapse: note: r.json, r.json are JSON reports: drawn by percentile only \
         (latency over time and the split need an interval log, --hdr-log)\n"
    );
    assert!(
        std::fs::read_to_string(&both)
            .unwrap()
            .contains("RTT by percentile")
    );
    let out = synapse()
        .arg("plot")
        .arg(&log)
        .arg(&json)
        .arg("-o")
        .arg(&both)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .starts_with("synapse: note: r.json is a JSON report: drawn by percentile only")
    );
    let out = synapse()
        .args(["plot", "--kind", "time"])
        .arg(&json)
        .arg("-o")
        .arg(&both)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("r.json hold percentiles only (--kind percentiles draws them)")
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
    let (log, _) = logged_run(&peer.addr(), dir.path(), "p");
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
    // Three charts (kernel stamps give a split) of 1200 × 675.
    assert_eq!((w, h), (1200, 3 * 675));
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
