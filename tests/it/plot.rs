//! `synapse plot`'s pictures checked as a reader sees them (issue 51):
//! each kind rendered by the real binary at several widths, from inputs
//! made with known gaps, an outage and splits, and its SVG read back. No
//! two labels overlap, measured with the embedded font's metrics; every
//! label is inside the picture; no data is drawn under a label or legend;
//! an interval without replies is never drawn at zero; the outage is
//! shaded from where it began; each run's split is drawn or a note says
//! why not; one symbol per meaning; files refused when they exist.

use crate::common::synapse;
use ab_glyph::{Font, FontRef, ScaleFont};
use std::path::Path;
use synapse_stats::intervals::{Interval, OUTAGE, RTT, UNANSWERED, empty_histogram};

const MS: u64 = 1_000_000;
/// The run's intervals: 500 ms each, twelve of them.
const STEP: u64 = 500 * MS;
/// Intervals 4 to 7 get no reply; the outage runs from 2.05 s to 3.9 s.
const SILENT: std::ops::Range<u64> = 4..8;
const OUTAGE_START: u64 = 2_050 * MS;
const OUTAGE_END: u64 = 3_900 * MS;

fn histogram(values: impl IntoIterator<Item = u64>) -> hdrhistogram::Histogram<u64> {
    let mut h = empty_histogram();
    for v in values {
        h.record(v).unwrap();
    }
    h
}

/// A run's interval log: RTTs of 40-90 µs, their split (when `split`),
/// silence and an outage in the middle.
fn interval_log(split: bool, shift: u64) -> Vec<u8> {
    let mut intervals = Vec::new();
    for k in 0..12u64 {
        let mut series = Vec::new();
        if SILENT.contains(&k) {
            series.push((UNANSWERED.to_string(), histogram([100 * MS; 5])));
        } else {
            let rtt = (0..200).map(|i| 40_000 + shift + (i * 251) % 50_000);
            series.push((RTT.to_string(), histogram(rtt)));
            if split {
                for (tag, v) in [
                    ("send_path", 4_000),
                    ("network", 30_000),
                    ("receive_path", 20_000),
                ] {
                    series.push((tag.to_string(), histogram([v, v + 1_000])));
                }
            }
        }
        intervals.push(Interval {
            start_ns: k * STEP,
            length_ns: STEP,
            series,
        });
    }
    intervals.push(Interval {
        start_ns: OUTAGE_START,
        length_ns: OUTAGE_END - OUTAGE_START,
        series: vec![(OUTAGE.to_string(), histogram([OUTAGE_END - OUTAGE_START]))],
    });
    let mut text = b"#[BaseTime: 1795000000.000 (seconds since epoch)]\n".to_vec();
    synapse::hdr_log::encode(&intervals, &mut text).unwrap();
    text
}

/// A JSON report with slices, one of them without replies.
fn json_report() -> String {
    let items: Vec<serde_json::Value> = (0..20u64)
        .map(|k| {
            let rtt = (k != 9).then(|| synapse::hdr_log::encode_histogram(&histogram((0..50).map(|i| 60_000 + i * 300))));
            serde_json::json!({"start_ns": k * 300 * MS, "end_ns": (k + 1) * 300 * MS - MS, "rtt": rtt, "unanswered": u64::from(k == 9) * 50})
        })
        .collect();
    serde_json::json!({
        "packets": {"sent": 1000, "lost": 50, "late": 0},
        "rtt_ns": {"p50": 67_000, "p90": 73_000, "p99": 74_500, "p999": 74_700, "mean": 67_000},
        "slices": {"requests_each": 50, "items": items},
    })
    .to_string()
}

/// A report's slices whose round trips sit from `base_ns` up, 50 a slice,
/// twenty slices.
fn slices_from(base_ns: u64) -> serde_json::Value {
    let items: Vec<serde_json::Value> = (0..20u64)
        .map(|k| {
            let rtt = synapse::hdr_log::encode_histogram(&histogram((0..50).map(|i| base_ns + i * 300)));
            serde_json::json!({"start_ns": k * 300 * MS, "end_ns": (k + 1) * 300 * MS - MS, "rtt": rtt, "unanswered": 0})
        })
        .collect();
    serde_json::json!({"requests_each": 50, "items": items})
}

/// A multicast run's report: the group's figures (each request's slowest
/// answer) and two responders', r1 about 60 µs and r2 `r2_ns` up.
pub fn multicast_report(r2_ns: u64) -> String {
    let figures = |base: u64| {
        serde_json::json!({
            "packets": {"sent": 1000, "lost": 0, "late": 0},
            "rtt_ns": {"p50": base + 7_000, "p90": base + 13_000, "p99": base + 14_500, "p999": base + 14_700, "mean": base + 7_000},
            "slices": slices_from(base),
        })
    };
    let mut j = figures(r2_ns);
    let mut r1 = figures(60_000);
    r1["name"] = "r1".into();
    r1["address"] = "10.9.0.2:7000".into();
    let mut r2 = figures(r2_ns);
    r2["name"] = "r2".into();
    r2["address"] = "10.9.0.3:7000".into();
    j["responders"] = serde_json::json!([r1, r2]);
    j.to_string()
}

#[test]
fn a_multicast_report_draws_the_group_and_each_responder() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.json");
    std::fs::write(&m, multicast_report(120_000)).unwrap();
    let font_bytes =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/fonts/DejaVuSans.ttf"))
            .unwrap();
    let font = FontRef::try_from_slice(&font_bytes).unwrap();
    for kind in ["percentiles", "time"] {
        let (svg, _) = render(dir.path(), &[&m], kind, 900);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let texts: Vec<String> = labels(&doc, &font).into_iter().map(|l| l.text).collect();
        for name in ["m.json", "m.json r1", "m.json r2"] {
            // The time pane names each run's lines: its p50 first.
            let p50 = format!("{name} p50");
            assert!(
                texts.iter().any(|t| *t == name || *t == p50),
                "{kind}: no '{name}' in {texts:?}"
            );
        }
        let drawn = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .filter_map(|n| n.attribute("stroke").map(str::to_uppercase))
            .filter(|c| ["#1F77B4", "#D62728", "#2CA02C"].contains(&c.as_str()))
            .collect::<std::collections::BTreeSet<_>>();
        assert_eq!(drawn.len(), 3, "{kind}: a line per run drawn: {drawn:?}");
    }
}

/// A label as the SVG places it, and the box the font gives it.
#[derive(Debug, Clone)]
struct Label {
    text: String,
    /// x0, y0, x1, y1.
    b: [f64; 4],
}

/// Every `<text>`'s box, measured with the embedded font at its size.
fn labels(doc: &roxmltree::Document, font: &FontRef) -> Vec<Label> {
    let em_of = |size: f64| {
        size * f64::from(font.height_unscaled()) / f64::from(font.units_per_em().unwrap())
    };
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            let f = |k: &str| n.attribute(k).unwrap_or("0").parse::<f64>().unwrap();
            let (x, y, size) = (f("x"), f("y"), f("font-size"));
            let text = n.text().unwrap_or("").trim().to_string();
            let scaled = font.as_scaled(em_of(size) as f32);
            let width: f64 = text
                .chars()
                .map(|c| f64::from(scaled.h_advance(font.glyph_id(c))))
                .sum();
            let height = f64::from(scaled.ascent() - scaled.descent());
            let x0 = match n.attribute("text-anchor") {
                Some("middle") => x - width / 2.0,
                Some("end") => x - width,
                _ => x,
            };
            let y0 = match n.attribute("dy") {
                Some("0.76em") => y,
                Some("-0.5ex") => y - height,
                _ => y - height / 2.0,
            };
            let mut b = [x0, y0, x0 + width, y0 + height];
            if n.attribute("transform")
                .is_some_and(|t| t.starts_with("rotate(270"))
            {
                // Turned a quarter about (x, y): its width runs up the page.
                let (dx0, dx1) = (b[0] - x, b[2] - x);
                let (dy0, dy1) = (b[1] - y, b[3] - y);
                b = [x + dy0, y - dx1, x + dy1, y - dx0];
            }
            Label { text, b }
        })
        .collect()
}

fn overlap(a: &[f64; 4], b: &[f64; 4]) -> bool {
    a[0] < b[2] - 1.0 && b[0] < a[2] - 1.0 && a[1] < b[3] - 1.0 && b[1] < a[3] - 1.0
}

/// Points of the data: the runs' lines, bands and marks (their colours).
fn data_points(doc: &roxmltree::Document) -> Vec<(String, f64, f64)> {
    const RUNS: [&str; 3] = ["#1F77B4", "#D62728", "#2CA02C"];
    let mut out = Vec::new();
    for n in doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline") || n.has_tag_name("polygon"))
    {
        let colour = n
            .attribute("stroke")
            .or(n.attribute("fill"))
            .unwrap_or("")
            .to_uppercase();
        if !RUNS.contains(&colour.as_str()) {
            continue;
        }
        for p in n.attribute("points").unwrap_or("").split_whitespace() {
            let (x, y) = p.split_once(',').unwrap();
            out.push((
                n.tag_name().name().to_string(),
                x.parse().unwrap(),
                y.parse().unwrap(),
            ));
        }
    }
    out
}

/// Renders `kind` at `width` into `dir`, returns the SVG and stderr.
fn render(dir: &Path, inputs: &[&Path], kind: &str, width: u32) -> (String, String) {
    let svg = dir.join(format!("{kind}-{width}.svg"));
    let out = synapse()
        .args(["plot", "--kind", kind, "--width", &width.to_string(), "-o"])
        .arg(&svg)
        .args(inputs)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{kind} at {width}: {err}");
    (std::fs::read_to_string(&svg).unwrap(), err)
}

#[test]
fn every_kind_of_picture_reads_right_at_every_width() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, r) = (
        dir.path().join("a.hlog"),
        dir.path().join("b.hlog"),
        dir.path().join("r.json"),
    );
    std::fs::write(&a, interval_log(true, 0)).unwrap();
    std::fs::write(&b, interval_log(true, 20_000)).unwrap();
    std::fs::write(&r, json_report()).unwrap();
    let font_bytes =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/fonts/DejaVuSans.ttf"))
            .unwrap();
    let font = FontRef::try_from_slice(&font_bytes).unwrap();
    for kind in ["percentiles", "time", "split", "all"] {
        for width in [600, 900, 1600] {
            let (svg, err) = render(dir.path(), &[&a, &b, &r], kind, width);
            let doc = roxmltree::Document::parse(&svg).unwrap();
            let root = doc.root_element();
            let (w, h): (f64, f64) = (
                root.attribute("width").unwrap().parse().unwrap(),
                root.attribute("height").unwrap().parse().unwrap(),
            );
            let labels = labels(&doc, &font);
            let at = format!("{kind} at {width}");
            for l in &labels {
                assert!(
                    l.b[0] >= -0.5 && l.b[2] <= w + 0.5 && l.b[1] >= -0.5 && l.b[3] <= h + 0.5,
                    "{at}: '{}' leaves the picture: {:?}",
                    l.text,
                    l.b
                );
            }
            for (i, x) in labels.iter().enumerate() {
                for y in &labels[i + 1..] {
                    assert!(
                        !overlap(&x.b, &y.b),
                        "{at}: '{}' {:?} overlaps '{}' {:?}",
                        x.text,
                        x.b,
                        y.text,
                        y.b
                    );
                }
            }
            for (_, px, py) in data_points(&doc) {
                if let Some(l) = labels
                    .iter()
                    .find(|l| l.b[0] < px && px < l.b[2] && l.b[1] < py && py < l.b[3])
                {
                    panic!("{at}: data at ({px}, {py}) under '{}'", l.text);
                }
            }
            let titles = |t: &str| labels.iter().filter(|l| l.text.starts_with(t)).count();
            let splits = if matches!(kind, "split" | "all") {
                2
            } else {
                0
            };
            assert_eq!(
                titles("Where the time goes"),
                splits,
                "{at}: one split per run that has one"
            );
            if splits > 0 {
                assert!(err.contains("r.json: its split not drawn (a report's slices hold round trips only, no split)"), "{at}: {err}");
            }
            if matches!(kind, "time" | "all") {
                time_pane_reads_right(
                    &doc,
                    &labels,
                    h / (labels.iter().filter(|l| is_title(&l.text)).count() as f64),
                    &at,
                );
            }
        }
    }
}

fn is_title(t: &str) -> bool {
    t.starts_with("RTT by percentile")
        || t.starts_with("RTT over time")
        || t.starts_with("Where the time goes")
}

/// The pane over time: no line at zero where replies are missing, the gap
/// shaded and in the legend, the outage from where it began, and each loss
/// mark the legend's shape.
fn time_pane_reads_right(doc: &roxmltree::Document, labels: &[Label], pane_h: f64, at: &str) {
    let title = labels
        .iter()
        .find(|l| l.text.starts_with("RTT over time"))
        .unwrap();
    let pane = (title.b[1] / pane_h).floor();
    let (top, bottom) = (pane * pane_h, (pane + 1.0) * pane_h);
    let in_pane = |l: &&Label| l.b[1] >= top && l.b[3] <= bottom;
    let zero = labels
        .iter()
        .filter(in_pane)
        .find(|l| l.text == "0 µs" || l.text == "0 ms")
        .expect("a 0 on the y axis");
    let zero_y = (zero.b[1] + zero.b[3]) / 2.0;
    let lines: Vec<(f64, f64)> = data_points(doc)
        .into_iter()
        .filter(|(tag, _, y)| tag == "polyline" && (top..bottom).contains(y))
        .map(|(_, x, y)| (x, y))
        .collect();
    assert!(lines.len() >= 8, "{at}: the runs' lines are drawn");
    for (x, y) in lines {
        assert!(
            (y - zero_y).abs() > 2.0,
            "{at}: a line drawn at zero, ({x}, {y})"
        );
    }
    for want in ["no reply in the interval", "outage"] {
        assert!(
            labels.iter().filter(in_pane).any(|l| l.text == want),
            "{at}: no '{want}' in the legend"
        );
    }
    // The x axis's labels give its scale: the outage's shading starts at 2.05 s.
    let tick = |s: &str| {
        labels
            .iter()
            .filter(in_pane)
            .find(|l| l.text == s)
            .map(|l| (l.b[0] + l.b[2]) / 2.0)
    };
    let (Some(x1), Some(x2)) = (tick("1"), tick("2")) else {
        panic!("{at}: the time axis labels whole seconds");
    };
    let want = x2 + (OUTAGE_START as f64 / 1e9 - 2.0) * (x2 - x1);
    let shaded: Vec<f64> = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("rect")
                && n.attribute("fill")
                    .is_some_and(|f| f.eq_ignore_ascii_case("#D62728"))
        })
        .map(|n| n.attribute("x").unwrap().parse::<f64>().unwrap())
        .collect();
    assert!(
        shaded.iter().any(|x| (x - want).abs() <= 2.0),
        "{at}: no outage shaded from {want:.0} px: {shaded:?}"
    );
    // One symbol per meaning: every loss mark, legend's included, one shape.
    let shapes: std::collections::BTreeSet<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polygon"))
        .filter_map(|n| {
            let pts: Vec<(i64, i64)> = n
                .attribute("points")?
                .split_whitespace()
                .map(|p| {
                    p.split_once(',').map(|(x, y)| {
                        (
                            x.parse::<f64>().unwrap() as i64,
                            y.parse::<f64>().unwrap() as i64,
                        )
                    })
                })
                .collect::<Option<_>>()?;
            (pts.len() == 3).then(|| {
                format!(
                    "{:?}",
                    pts.iter()
                        .map(|p| (p.0 - pts[0].0, p.1 - pts[0].1))
                        .collect::<Vec<_>>()
                )
            })
        })
        .collect();
    assert_eq!(
        shapes.len(),
        1,
        "{at}: loss drawn in more than one shape: {shapes:?}"
    );
}

#[test]
fn a_picture_is_made_under_the_umask_and_never_replaced_unasked() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.hlog");
    std::fs::write(&log, interval_log(false, 0)).unwrap();
    let png = dir.path().join("a.png");
    let plot = |extra: &[&str]| {
        synapse()
            .arg("plot")
            .arg(&log)
            .arg("-o")
            .arg(&png)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = plot(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = std::fs::metadata(&png).unwrap().permissions().mode() & 0o777;
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .unwrap()
        .trim();
    let umask = u32::from_str_radix(umask, 8).unwrap();
    assert_eq!(
        mode,
        0o666 & !umask,
        "as any file under umask {umask:o}, not 0600"
    );
    let before = std::fs::read(&png).unwrap();
    let out = plot(&["--kind", "time"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the file exists (--force replaces it)"),
        "{err}"
    );
    assert_eq!(std::fs::read(&png).unwrap(), before, "kept");
    let out = plot(&["--kind", "time", "--force"]);
    assert_eq!(out.status.code(), Some(0));
    assert_ne!(std::fs::read(&png).unwrap(), before, "replaced when asked");
    // Its split: none in this log, and the note says why.
    let out = plot(&["--kind", "split", "--force"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("plot --kind split: no split to draw: a.hlog: its split not drawn (its log has no segments"), "{err}");
}
