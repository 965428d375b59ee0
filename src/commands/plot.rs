//! `synapse plot`: the pictures people share, drawn with `plotters` (SVG
//! or PNG by the file's name):
//!
//! - **percentiles**: each run's distribution on HdrHistogram's log
//!   1/(1−q) axis (50 %, 90 %, 99 %, 99.9 % … equally spaced), overlaid;
//! - **time**: per interval, p50 and p99 with the band between them and
//!   the maximum; intervals that lost requests marked, outages shaded;
//! - **split**: the segments of the round trip per interval (their means,
//!   which add up to the sampled packets' mean RTT), stacked.

use crate::cli::PlotArgs;
use crate::error::{AppError, exit};
use crate::report::runs::{self, Input};
use plotters::coord::Shift;
use plotters::prelude::*;
use synapse_stats::Segment;
use synapse_stats::intervals::{Interval, OUTAGE, RTT, UNANSWERED, empty_histogram};

/// The typeface every label is drawn in (bitmap output needs one of its
/// own; DejaVu Sans, in `assets/fonts` with its licence).
const FONT: &str = "sans-serif";
static DEJAVU: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// A run's colour, in input order.
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// The deepest quantile drawn: 1/(1−q) up to 10^5 (p99.999).
const MAX_NINES: f64 = 5.0;

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// Runs `synapse plot`; the exit status.
pub fn run(args: &PlotArgs) -> Result<i32, AppError> {
    let prefix = runs::prefix(args.peer.as_deref());
    let mut inputs = Vec::new();
    for s in &args.inputs {
        inputs.extend(runs::load(s, args.config.as_ref(), &prefix)?);
    }
    let ext = args
        .output
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase());
    let path = &args.output;
    if !matches!(ext.as_deref(), Some("svg" | "png")) {
        return Err(AppError::Usage(format!(
            "plot -o {}: the picture is FILE.svg or FILE.png",
            path.display()
        )));
    }
    let (kinds, left_out) = kinds(&args.kind, &inputs, &prefix)?;
    let (w, h) = (args.width, args.width * 9 / 16 * kinds.len() as u32);
    // Text is measured with the font for either back end.
    plotters::style::register_font(FONT, FontStyle::Normal, DEJAVU)
        .map_err(|_| AppError::Runtime(anyhow::anyhow!("the embedded font is broken")))?;
    let cannot_draw = |e: Box<dyn std::error::Error>| {
        AppError::Runtime(anyhow::anyhow!("plot: cannot draw: {e}"))
    };
    // Drawn in memory, then written whole: a file that cannot be written
    // says why in one line and leaves nothing behind.
    let bytes = if ext.as_deref() == Some("svg") {
        let mut svg = String::new();
        draw(
            SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area(),
            &inputs,
            &kinds,
            &prefix,
        )
        .map_err(cannot_draw)?;
        svg.into_bytes()
    } else {
        let mut rgb = vec![0u8; w as usize * h as usize * 3];
        draw(
            BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area(),
            &inputs,
            &kinds,
            &prefix,
        )
        .map_err(cannot_draw)?;
        png_of(&rgb, w, h).map_err(cannot_draw)?
    };
    crate::files::write_whole("plot -o", path, &bytes)?;
    if let Some(note) = left_out {
        crate::console::note(&note);
    }
    Ok(exit::PASS)
}

/// The pictures `--kind` asks for that the inputs can give, and one line
/// saying what was left out: a JSON report holds percentiles only, so it
/// is drawn by percentile and left out of the pictures over time.
fn kinds(
    kind: &str,
    inputs: &[Input],
    prefix: &str,
) -> Result<(Vec<&'static str>, Option<String>), AppError> {
    let loads = inputs.iter().filter(|i| i.load.is_some()).count();
    match kind {
        // A load run's report draws its load and phases; its whole-run
        // percentiles mix idle and loaded probes.
        "all" if loads > 0 && loads == inputs.len() => return Ok((vec!["load"], None)),
        "load" if loads == 0 => {
            return Err(AppError::Usage(
                "plot --kind load: none of the inputs is a load run's JSON report (synapse client --load --json)".into(),
            ));
        }
        "load" => return Ok((vec!["load"], None)),
        _ => {}
    }
    let reports: Vec<String> = inputs
        .iter()
        .filter(|i| i.log.is_none())
        .map(|i| short(&i.label))
        .collect();
    let any_log = reports.len() < inputs.len();
    let kinds = match kind {
        "all" if !any_log => vec!["percentiles"],
        "all" if inputs.iter().any(|i| has_split(i, prefix)) => {
            vec!["percentiles", "time", "split"]
        }
        "all" => vec!["percentiles", "time"],
        "time" => vec!["time"],
        "split" => vec!["split"],
        _ => vec!["percentiles"],
    };
    let over_time = kinds.iter().any(|k| *k != "percentiles");
    if over_time && !any_log {
        return Err(AppError::Usage(format!(
            "plot --kind {kind}: latency over time and the split need interval logs (--hdr-log); {} hold percentiles only (--kind percentiles draws them)",
            reports.join(", ")
        )));
    }
    let what = if reports.len() == 1 {
        "is a JSON report"
    } else {
        "are JSON reports"
    };
    let note = (!reports.is_empty() && (kind == "all" || over_time)).then(|| {
        let drawn = if kinds.contains(&"percentiles") {
            "drawn by percentile only"
        } else {
            "not drawn"
        };
        format!(
            "{} {what}: {drawn} (latency over time and the split need an interval log, --hdr-log)",
            reports.join(", ")
        )
    });
    Ok((kinds, note))
}

/// An RGB picture as PNG.
fn png_of(rgb: &[u8], w: u32, h: u32) -> Fallible<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header()?.write_image_data(rgb)?;
    Ok(bytes)
}

fn has_split(i: &Input, prefix: &str) -> bool {
    i.log.as_ref().is_some_and(|l| {
        l.tags()
            .iter()
            .any(|t| t.strip_prefix(prefix) == Some(Segment::Send.key()))
    })
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    inputs: &[Input],
    kinds: &[&str],
    prefix: &str,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let areas = root.split_evenly((kinds.len(), 1));
    for (area, kind) in areas.iter().zip(kinds) {
        let pane = Pane {
            area,
            inputs,
            prefix,
        };
        match *kind {
            "percentiles" => pane.percentiles()?,
            "time" => pane.over_time()?,
            "load" => pane.load()?,
            _ => pane.split()?,
        }
    }
    root.present()?;
    Ok(())
}

/// A run's RTT series merged over its intervals.
fn merged(log: &[Interval], tag: &str) -> hdrhistogram::Histogram<u64> {
    let mut h = empty_histogram();
    for i in log {
        if let Some(x) = i.get(tag) {
            let _ = h.add(x);
        }
    }
    h
}

fn nines_label(x: &f64) -> String {
    let q = 1.0 - 10f64.powf(-x);
    let pct = q * 100.0;
    if *x < 0.01 {
        "0 %".into()
    } else {
        let digits = (x.round() as usize).saturating_sub(2);
        format!("{pct:.digits$} %")
    }
}

fn us(v: &f64) -> String {
    if *v >= 1000.0 {
        format!("{:.1} ms", v / 1000.0)
    } else {
        format!("{v:.0} µs")
    }
}

/// A short name for a run in a legend.
fn short(label: &str) -> String {
    std::path::Path::new(label)
        .file_name()
        .map_or_else(|| label.to_string(), |f| f.to_string_lossy().into_owned())
}

fn legend<'a, DB: DrawingBackend + 'a, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    at: SeriesLabelPosition,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(at)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Per interval: (mid-time s, p50 µs, p99 µs, max µs, unanswered, outage).
type Row = (f64, f64, f64, f64, u64, bool);

fn rows(log: &[Interval], prefix: &str) -> Vec<Row> {
    let (rtt, lost, outage) = (
        format!("{prefix}{RTT}"),
        format!("{prefix}{UNANSWERED}"),
        format!("{prefix}{OUTAGE}"),
    );
    log.iter()
        .map(|i| {
            let mid = (i.start_ns + i.length_ns / 2) as f64 / 1e9;
            let q = |q: f64| {
                i.get(&rtt)
                    .map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1e3)
            };
            let lost = i.get(&lost).map_or(0, |h| h.len());
            (mid, q(0.5), q(0.99), q(1.0), lost, i.get(&outage).is_some())
        })
        .collect()
}

/// Band `k` of the stacks: along the tops of segment `k`, back along the
/// tops of the segment below it (or the axis).
fn band(stacks: &[(f64, Vec<f64>)], k: usize) -> Vec<(f64, f64)> {
    let below = |s: &(f64, Vec<f64>)| if k == 0 { 0.0 } else { s.1[k - 1] };
    stacks
        .iter()
        .map(|s| (s.0, s.1[k]))
        .chain(stacks.iter().rev().map(|s| (s.0, below(s))))
        .collect()
}

/// One pane of the picture: where it is drawn, and from what.
struct Pane<'a, DB: DrawingBackend> {
    area: &'a DrawingArea<DB, Shift>,
    inputs: &'a [Input],
    prefix: &'a str,
}

impl<DB: DrawingBackend> Pane<'_, DB>
where
    DB::ErrorType: 'static,
{
    fn percentiles(&self) -> Fallible<()> {
        let &Self {
            area,
            inputs,
            prefix,
        } = self;
        let tag = format!("{prefix}{RTT}");
        // Each run: its label, its points, and whether it has figures only.
        type Curve = (String, Vec<(f64, f64)>, bool);
        let curves: Vec<Curve> = inputs
            .iter()
            .map(|i| match &i.log {
                Some(log) => {
                    let h = merged(&log.intervals, &tag);
                    let deepest = (h.len().max(1) as f64).log10().min(MAX_NINES);
                    let pts = (0..=(deepest * 100.0) as usize)
                        .map(|k| {
                            let x = k as f64 / 100.0;
                            let q = 1.0 - 10f64.powf(-x);
                            (x, h.value_at_quantile(q) as f64 / 1e3)
                        })
                        .collect();
                    (short(&i.label), pts, false)
                }
                None => {
                    let pts = i
                        .percentiles
                        .iter()
                        .map(|&(q, ns)| (-(1.0 - q).log10(), ns / 1e3))
                        .collect();
                    (short(&i.label), pts, true)
                }
            })
            .collect();
        let values = || curves.iter().flat_map(|c| c.1.iter().map(|p| p.1));
        let top = values().fold(1.0f64, f64::max);
        let bottom = values().filter(|v| *v > 0.0).fold(top, f64::min);
        // A log scale: the body and a tail 100 times higher both stay readable.
        let mut chart = ChartBuilder::on(area)
            .caption("RTT by percentile", (FONT, 24))
            .margin(15)
            .margin_right(40)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..MAX_NINES, (bottom * 0.8..top * 1.25).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("percentile (log scale of 1/(1−q))")
            .y_desc("round-trip time (log scale)")
            .x_labels(6)
            .x_label_formatter(&nines_label)
            .y_label_formatter(&us)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()?;
        for (k, (name, pts, points_only)) in curves.into_iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let style = ShapeStyle::from(&colour).stroke_width(2);
            if points_only {
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 5, style.filled())))?
                    .label(name)
                    .legend(move |(x, y)| Circle::new((x + 10, y), 5, style.filled()));
            } else {
                chart
                    .draw_series(LineSeries::new(pts, style))?
                    .label(name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }

    fn over_time(&self) -> Fallible<()> {
        let &Self {
            area,
            inputs,
            prefix,
        } = self;
        let all: Vec<(String, Vec<Row>)> = inputs
            .iter()
            .filter_map(|i| Some((short(&i.label), rows(&i.log.as_ref()?.intervals, prefix))))
            .collect();
        let end = all
            .iter()
            .flat_map(|r| r.1.iter().map(|x| x.0))
            .fold(0.001f64, f64::max);
        // The scale follows the p99s; a maximum far above is cut at the top.
        let p99 = all
            .iter()
            .flat_map(|r| r.1.iter().map(|x| x.2))
            .fold(1.0f64, f64::max);
        let top = p99 * 2.0;
        let mut chart = ChartBuilder::on(area)
            .caption(
                "RTT over time: p50, p99 (band) and max per interval (× at the top: above the scale); loss ▼ and outages in red",
                (FONT, 20),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..end * 1.02, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("time since start (s)")
            .y_desc("round-trip time")
            .y_label_formatter(&us)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()?;
        for (k, (name, rows)) in all.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let band: Vec<(f64, f64)> = rows
                .iter()
                .map(|r| (r.0, r.2))
                .chain(rows.iter().rev().map(|r| (r.0, r.1)))
                .collect();
            chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.2))))?;
            let solid = ShapeStyle::from(&colour).stroke_width(2);
            chart
                .draw_series(LineSeries::new(rows.iter().map(|r| (r.0, r.1)), solid))?
                .label(format!("{name} p50"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], solid));
            let thin = ShapeStyle::from(&colour).stroke_width(1);
            chart
                .draw_series(LineSeries::new(rows.iter().map(|r| (r.0, r.2)), thin))?
                .label(format!("{name} p99"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], thin));
            chart
                .draw_series(
                    rows.iter()
                        .map(|r| Cross::new((r.0, r.3.min(top * 0.99)), 3, thin)),
                )?
                .label(format!("{name} max"))
                .legend(move |(x, y)| Cross::new((x + 10, y), 3, thin));
            let red = ShapeStyle::from(&RED).filled();
            chart.draw_series(
                rows.iter()
                    .filter(|r| r.4 > 0)
                    .map(|r| TriangleMarker::new((r.0, top * 0.97), 5, red)),
            )?;
            chart.draw_series(rows.iter().filter(|r| r.5).map(|r| {
                Rectangle::new(
                    [(r.0 - 0.01 * end, 0.0), (r.0 + 0.01 * end, top)],
                    RED.mix(0.15).filled(),
                )
            }))?;
        }
        if all.iter().any(|r| r.1.iter().any(|x| x.4 > 0)) {
            let red = ShapeStyle::from(&RED).filled();
            chart
                .draw_series(std::iter::empty::<TriangleMarker<(f64, f64), i32>>())?
                .label("interval with loss")
                .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 5, red));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }

    /// Each load run, a row each.
    fn load(&self) -> Fallible<()> {
        let runs: Vec<_> = self
            .inputs
            .iter()
            .filter_map(|i| Some((short(&i.label), i.load.as_ref()?)))
            .collect();
        let rows = self.area.split_evenly((runs.len().max(1), 1));
        for (row, (name, load)) in rows.iter().zip(&runs) {
            super::plot_load::draw(row, name, load, FONT)?;
        }
        Ok(())
    }

    fn split(&self) -> Fallible<()> {
        let &Self {
            area,
            inputs,
            prefix,
        } = self;
        let Some((name, log)) = inputs
            .iter()
            .find(|i| has_split(i, prefix))
            .and_then(|i| Some((short(&i.label), &i.log.as_ref()?.intervals)))
        else {
            return Ok(());
        };
        let segs: Vec<Segment> = [
            Segment::Send,
            Segment::Network,
            Segment::Dwell,
            Segment::Receive,
        ]
        .into_iter()
        .filter(|s| {
            log.iter()
                .any(|i| i.get(&format!("{prefix}{}", s.key())).is_some())
        })
        .collect();
        // Per interval: the mid-time and each segment's mean, stacked.
        let stacks: Vec<(f64, Vec<f64>)> = log
            .iter()
            .map(|i| {
                let mid = (i.start_ns + i.length_ns / 2) as f64 / 1e9;
                let mut acc = 0.0;
                let tops = segs
                    .iter()
                    .map(|s| {
                        acc += i
                            .get(&format!("{prefix}{}", s.key()))
                            .map_or(0.0, |h| h.mean() / 1e3);
                        acc
                    })
                    .collect();
                (mid, tops)
            })
            .collect();
        let end = stacks.iter().map(|s| s.0).fold(0.001, f64::max);
        let top = stacks
            .iter()
            .filter_map(|s| s.1.last().copied())
            .fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("Where the time goes ({name}): segment means per interval, stacked"),
                (FONT, 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..end * 1.02, 0.0..top * 1.15)?;
        chart
            .configure_mesh()
            .x_desc("time since start (s)")
            .y_desc("mean time per round trip")
            .y_label_formatter(&us)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()?;
        // Each band fills from the top of the one below it to its own top, in
        // its legend's colour: bands never overlap, so none changes colour.
        for (k, seg) in segs.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let band = band(&stacks, k);
            chart
                .draw_series(std::iter::once(Polygon::new(band, colour.filled())))?
                .label(seg.label())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 20, y + 5)], colour.filled())
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
