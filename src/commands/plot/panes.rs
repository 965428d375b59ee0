//! The three kinds of pane: the distribution by percentile, latency over
//! time, and one run's split over time.

use super::axes::{self, Measure};
use super::chart::{self, Axes, Ticked, plot_height, room};
use super::data::{Curve, MAX_NINES, Row, Run, Split, contiguous};
use super::frame::{
    COLOURS, Entry, LABEL, MARGIN, Swatch, figure_mark, gap_fill, lay_out, loss_mark, max_mark,
    outage_fill,
};
use plotters::coord::Shift;
use plotters::coord::combinators::LogCoord;
use plotters::coord::types::RangedCoordf64;
use plotters::element::{EmptyElement, PathElement, Polygon, Rectangle};
use plotters::prelude::*;

/// What drawing can fail with.
pub type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

fn colour(k: usize) -> RGBColor {
    COLOURS[k % COLOURS.len()]
}

/// Each run's distribution on HdrHistogram's nines axis, overlaid.
pub fn percentiles<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[Run],
    m: Measure,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    let entries: Vec<Entry> = runs
        .iter()
        .enumerate()
        .map(|(k, r)| Entry {
            swatch: match r.curve {
                Curve::Line(_) => Swatch::Line(colour(k), 2),
                Curve::Points(_) => Swatch::Figure(colour(k)),
            },
            label: r.name.clone(),
        })
        .collect();
    let area = lay_out(area, "RTT by percentile", &entries, m)?;
    let points = |c: &Curve| match c {
        Curve::Line(p) | Curve::Points(p) => p.clone(),
    };
    let values: Vec<f64> = runs
        .iter()
        .flat_map(|r| points(&r.curve))
        .map(|p| p.1)
        .filter(|v| *v > 0.0)
        .collect();
    let top = values.iter().copied().fold(1.0f64, f64::max) * 1.25;
    let bottom = values.iter().copied().fold(top, f64::min) * 0.8;
    let (w, h) = area.dim_in_pixel();
    let y_ticks = axes::log_ticks(bottom, top, plot_height(h), |_| f64::from(2 * LABEL));
    let y_labels: Vec<String> = y_ticks.iter().map(|v| axes::log_label(*v)).collect();
    let r = room(w, &y_labels, &axes::nines_label(MAX_NINES), m);
    let x_ticks = axes::nines_ticks(MAX_NINES, r.plot_w, |x| {
        f64::from(m(&axes::nines_label(x), LABEL).0)
    });
    let (nx, ny) = (x_ticks.len(), y_ticks.len());
    let mut chart = ChartBuilder::on(&area)
        .margin(MARGIN)
        .margin_right(r.right)
        .x_label_area_size(chart::X_AREA)
        .y_label_area_size(r.y_area)
        .build_cartesian_2d(
            Ticked::<RangedCoordf64>::new(0.0..MAX_NINES, x_ticks),
            Ticked::<LogCoord<f64>>::new((bottom..top).log_scale(), y_ticks),
        )?;
    chart::draw_mesh(
        &mut chart,
        &Axes {
            x_desc: "percentile (log scale of 1/(1−q))",
            y_desc: "round-trip time (log scale)",
            x_label: &|x| axes::nines_label(*x),
            y_label: &|v| axes::log_label(*v),
            ticks: (nx, ny),
        },
    )?;
    for (k, run) in runs.iter().enumerate() {
        let c = colour(k);
        match &run.curve {
            Curve::Line(pts) => {
                chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
            }
            Curve::Points(pts) => {
                chart.draw_series(pts.iter().map(|&p| EmptyElement::at(p) + figure_mark(&c)))?;
            }
        }
    }
    Ok(())
}

/// Per interval: the p50 and p99 (a band between) and the maximum, loss
/// and outages marked; no line through an interval without replies.
pub fn over_time<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[(usize, &Run)],
    m: Measure,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    let rows = || runs.iter().flat_map(|(_, r)| r.rows.iter());
    let p99 = rows().filter_map(|r| r.p99).fold(0.0f64, f64::max);
    let top = if p99 > 0.0 { p99 * 1.3 } else { 1_000.0 };
    let clipped = rows().any(|r| r.max.is_some_and(|v| v > top));
    let end = rows()
        .map(|r| r.end)
        .chain(runs.iter().flat_map(|(_, r)| r.outages.iter().map(|o| o.1)))
        .fold(0.001f64, f64::max)
        * 1.02;
    let entries = time_entries(runs, clipped);
    let area = lay_out(
        area,
        "RTT over time: each interval's p50, p99 (the band between) and maximum",
        &entries,
        m,
    )?;
    let mut chart = time_chart(&area, end, top, "round-trip time", m)?;
    for (_, run) in runs {
        let silent = run.rows.iter().filter(|r| r.replies == 0);
        chart.draw_series(
            silent.map(|r| Rectangle::new([(r.start, 0.0), (r.end, top)], gap_fill().filled())),
        )?;
        let outages = run.outages.iter();
        chart.draw_series(
            outages.map(|o| Rectangle::new([(o.0, 0.0), (o.1, top)], outage_fill().filled())),
        )?;
    }
    for (n, (k, run)) in runs.iter().enumerate() {
        draw_run(&mut chart, &run.rows, colour(*k), top, n as i32)?;
    }
    Ok(())
}

/// The legend of the pane over time: each run's lines and marks, then
/// what the shading means, for what the picture shows.
fn time_entries(runs: &[(usize, &Run)], clipped: bool) -> Vec<Entry> {
    let mut entries = Vec::new();
    for (k, run) in runs {
        let (c, name) = (colour(*k), &run.name);
        entries.push(Entry {
            swatch: Swatch::Line(c, 2),
            label: format!("{name} p50"),
        });
        entries.push(Entry {
            swatch: Swatch::Line(c, 1),
            label: format!("{name} p99"),
        });
        let edge = if clipped {
            " (at the top edge: above the scale)"
        } else {
            ""
        };
        entries.push(Entry {
            swatch: Swatch::Max(c),
            label: format!("{name} max{edge}"),
        });
        if run.rows.iter().any(|r| r.unanswered > 0) {
            entries.push(Entry {
                swatch: Swatch::Loss(c),
                label: format!("{name}: interval with loss"),
            });
        }
    }
    if runs
        .iter()
        .any(|(_, r)| r.rows.iter().any(|r| r.replies == 0))
    {
        entries.push(Entry {
            swatch: Swatch::Block(gap_fill()),
            label: "no reply in the interval".into(),
        });
    }
    if runs.iter().any(|(_, r)| !r.outages.is_empty()) {
        entries.push(Entry {
            swatch: Swatch::Block(outage_fill()),
            label: "outage".into(),
        });
    }
    entries
}

type TimeChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<Ticked<RangedCoordf64>, Ticked<RangedCoordf64>>>;

/// One run's band and lines (broken where an interval has no replies),
/// its maxima, and its loss marks along the axis (the `n`th run's a row
/// higher), away from maxima cut at the top.
fn draw_run<DB: DrawingBackend>(
    chart: &mut TimeChart<'_, DB>,
    rows: &[Row],
    c: RGBColor,
    top: f64,
    n: i32,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    for run in contiguous(rows, |r| (r.start, r.end), |r| r.p50.is_some()) {
        let part = &rows[run];
        let at = |r: &Row, v: Option<f64>| (r.mid(), v.unwrap_or_default());
        if let [one] = part {
            // A lone interval: its figures across its middle half.
            let q = (one.end - one.start) / 4.0;
            for (v, wd) in [(one.p50, 2), (one.p99, 1)] {
                let y = v.unwrap_or_default();
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(one.mid() - q, y), (one.mid() + q, y)],
                    c.stroke_width(wd),
                )))?;
            }
            continue;
        }
        let band: Vec<(f64, f64)> = part
            .iter()
            .map(|r| at(r, r.p99))
            .chain(part.iter().rev().map(|r| at(r, r.p50)))
            .collect();
        chart.draw_series(std::iter::once(Polygon::new(band, c.mix(0.2).filled())))?;
        chart.draw_series(LineSeries::new(
            part.iter().map(|r| at(r, r.p50)),
            c.stroke_width(2),
        ))?;
        chart.draw_series(LineSeries::new(
            part.iter().map(|r| at(r, r.p99)),
            c.stroke_width(1),
        ))?;
    }
    let maxima = rows.iter().filter_map(|r| Some((r.mid(), r.max?.min(top))));
    chart.draw_series(maxima.map(|p| EmptyElement::at(p) + max_mark(&c)))?;
    let lossy = rows.iter().filter(|r| r.unanswered > 0);
    chart.draw_series(
        lossy.map(|r| EmptyElement::at((r.mid(), 0.0)) + loss_mark(&c, -8 - 12 * n)),
    )?;
    Ok(())
}

/// One run's split: each segment's mean per interval, stacked; no band
/// through an interval without stamped packets.
pub fn split<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    name: &str,
    s: &Split,
    m: Measure,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    let mut entries: Vec<Entry> = s
        .segments
        .iter()
        .enumerate()
        .map(|(k, seg)| Entry {
            swatch: Swatch::Block(colour(k).to_rgba()),
            label: seg.label().to_string(),
        })
        .collect();
    let gaps = s.rows.iter().any(|r| r.2.is_none());
    if gaps {
        entries.push(Entry {
            swatch: Swatch::Block(gap_fill()),
            label: "no stamped packet in the interval".into(),
        });
    }
    let title = format!("Where the time goes ({name}): each segment's mean per interval, stacked");
    let area = lay_out(area, &title, &entries, m)?;
    let end = s.rows.iter().map(|r| r.1).fold(0.001, f64::max) * 1.02;
    let top = s
        .rows
        .iter()
        .filter_map(|r| r.2.as_ref()?.last().copied())
        .fold(1.0, f64::max)
        * 1.15;
    let mut chart = time_chart(&area, end, top, "mean time per round trip", m)?;
    let empty = s.rows.iter().filter(|r| r.2.is_none());
    chart.draw_series(
        empty.map(|r| Rectangle::new([(r.0, 0.0), (r.1, top)], gap_fill().filled())),
    )?;
    for run in contiguous(&s.rows, |r| (r.0, r.1), |r| r.2.is_some()) {
        let part = &s.rows[run];
        for k in 0..s.segments.len() {
            let band = band(part, k);
            chart.draw_series(std::iter::once(Polygon::new(band, colour(k).filled())))?;
        }
    }
    Ok(())
}

/// A chart of time since the start (s, to `end`) against a time per
/// round trip (µs, from 0 to `top`), its axes drawn.
fn time_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    end: f64,
    top: f64,
    y_desc: &str,
    m: Measure,
) -> Fallible<TimeChart<'a, DB>>
where
    DB::ErrorType: 'static,
{
    let (w, h) = area.dim_in_pixel();
    let y_label = axes::linear_label(top);
    let y_ticks = axes::linear_ticks(0.0, top, plot_height(h), |_| f64::from(3 * LABEL));
    let y_labels: Vec<String> = y_ticks.iter().map(|v| y_label(*v)).collect();
    let r = room(w, &y_labels, &axes::seconds_label(end), m);
    let x_ticks = axes::linear_ticks(0.0, end, r.plot_w, |s| {
        f64::from(m(&axes::seconds_label(s), LABEL).0 + 3 * LABEL)
    });
    let (nx, ny) = (x_ticks.len(), y_ticks.len());
    let mut chart = ChartBuilder::on(area)
        .margin(MARGIN)
        .margin_right(r.right)
        .x_label_area_size(chart::X_AREA)
        .y_label_area_size(r.y_area)
        .build_cartesian_2d(
            Ticked::<RangedCoordf64>::new(0.0..end, x_ticks),
            Ticked::<RangedCoordf64>::new(0.0..top, y_ticks),
        )?;
    chart::draw_mesh(
        &mut chart,
        &Axes {
            x_desc: "time since start (s)",
            y_desc,
            x_label: &|s| axes::seconds_label(*s),
            y_label: &|v| y_label(*v),
            ticks: (nx, ny),
        },
    )?;
    Ok(chart)
}

/// Band `k` of a stretch of stacked rows: along the tops of segment `k`,
/// back along the tops of the one below (or the axis). A lone row spans
/// its interval.
fn band(part: &[(f64, f64, Option<Vec<f64>>)], k: usize) -> Vec<(f64, f64)> {
    let tops = |r: &(f64, f64, Option<Vec<f64>>)| {
        let t = r.2.as_deref().unwrap_or_default();
        (
            t.get(k).copied().unwrap_or_default(),
            if k == 0 { 0.0 } else { t[k - 1] },
        )
    };
    let xs: Vec<(f64, (f64, f64))> = if let [one] = part {
        vec![(one.0, tops(one)), (one.1, tops(one))]
    } else {
        part.iter().map(|r| ((r.0 + r.1) / 2.0, tops(r))).collect()
    };
    xs.iter()
        .map(|(x, t)| (*x, t.0))
        .chain(xs.iter().rev().map(|(x, t)| (*x, t.1)))
        .collect()
}
