//! `synapse plot` of a load run's JSON report, as Crusader draws one: the
//! load each way and the round trip over time, the phases marked, and
//! beside them each loaded phase's stage split (where its added delay
//! sat).

use crate::report::load_runs::LoadRead;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::panes::Fallible;

/// A phase's shade, and the colour its round trip is drawn in.
fn phase_colour(name: &str) -> RGBColor {
    match name {
        "download" => RGBColor(31, 119, 180),
        "upload" => RGBColor(214, 39, 40),
        "bidirectional" => RGBColor(148, 103, 189),
        _ => RGBColor(127, 127, 127),
    }
}

/// A stage's colour in the split.
fn stage_colour(key: &str) -> RGBColor {
    match key {
        "send_path" => RGBColor(188, 189, 34),
        "send_queue" => RGBColor(255, 127, 14),
        "forward" => RGBColor(44, 160, 44),
        "far_side" => RGBColor(148, 103, 189),
        "backward" => RGBColor(31, 119, 180),
        "receive_path" => RGBColor(23, 190, 207),
        _ => RGBColor(127, 127, 127),
    }
}

type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The series' legend, in the upper right.
fn legend<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>, font: &str) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((font, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Draws `load` (a run called `name`) into `area`.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    name: &str,
    load: &LoadRead,
    font: &str,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    let (w, _) = area.dim_in_pixel();
    let (left, right) = area.split_horizontally(w * 3 / 4);
    let rows = left.split_evenly((2, 1));
    let end = load
        .phases
        .last()
        .map_or(1.0, |p| p.start_s + p.duration_s)
        .max(1.0);
    throughput(&rows[0], name, load, end, font)?;
    latency(&rows[1], load, end, font)?;
    split(&right, load, font)
}

/// Each loaded phase as a shaded band with its name.
fn bands<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    load: &LoadRead,
    top: f64,
    font: &str,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    for p in load.phases.iter().filter(|p| p.name != "idle") {
        let c = phase_colour(&p.name);
        let (from, to) = (p.start_s, p.start_s + p.duration_s);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(from, 0.0), (to, top)],
            c.mix(0.08).filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            p.name.clone(),
            (from, top * 0.97),
            (font, 14).into_font().color(&c),
        )))?;
    }
    Ok(())
}

fn throughput<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    name: &str,
    load: &LoadRead,
    end: f64,
    font: &str,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    let mbit = |v: Option<f64>| v.map(|b| b / 1e6);
    let top = load
        .throughput
        .iter()
        .flat_map(|t| [mbit(t.down), mbit(t.up)])
        .flatten()
        .fold(1.0f64, f64::max)
        * 1.2;
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{name}: goodput each way, per second"), (font, 20))
        .margin(15)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..end, 0.0..top)?;
    chart
        .configure_mesh()
        .y_desc("Mbit/s")
        .label_style((font, 14))
        .axis_desc_style((font, 16))
        .draw()?;
    bands(&mut chart, load, top, font)?;
    for (label, pick, colour) in [
        ("down (reflector → client)", 0, RGBColor(31, 119, 180)),
        ("up (client → reflector)", 1, RGBColor(214, 39, 40)),
    ] {
        let pts: Vec<(f64, f64)> = load
            .throughput
            .iter()
            .filter_map(|t| Some((t.t_s, mbit(if pick == 0 { t.down } else { t.up })?)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let style = ShapeStyle::from(&colour).stroke_width(2);
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, style.filled())))?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, style.filled()));
    }
    legend(&mut chart, font)
}

fn latency<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    load: &LoadRead,
    end: f64,
    font: &str,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    let ms = |ns: f64| ns / 1e6;
    let top = load
        .timeline
        .iter()
        .filter_map(|b| b.p50_ns.map(ms))
        .fold(0.1f64, f64::max)
        * 1.2;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "round trip (median per quarter second), coloured by phase",
            (font, 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..end, 0.0..top)?;
    chart
        .configure_mesh()
        .x_desc("time since start (s)")
        .y_desc("ms")
        .label_style((font, 14))
        .axis_desc_style((font, 16))
        .draw()?;
    bands(&mut chart, load, top, font)?;
    chart.draw_series(load.timeline.iter().filter_map(|b| {
        let c = phase_colour(&b.phase);
        Some(Circle::new((b.t_s, ms(b.p50_ns?)), 3, c.filled()))
    }))?;
    Ok(())
}

/// Each loaded phase's stage shares as one bar, stacked to 100 %.
fn split<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    load: &LoadRead,
    font: &str,
) -> Fallible<()>
where
    DB::ErrorType: 'static,
{
    let loaded: Vec<_> = load
        .phases
        .iter()
        .filter(|p| !p.shares.is_empty())
        .collect();
    let n = loaded.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption("where the added delay sat", (font, 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(20)
        .build_cartesian_2d(0.0..n, 0.0..100.0)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("% of the mean added delay")
        .label_style((font, 14))
        .axis_desc_style((font, 16))
        .draw()?;
    let mut seen: Vec<String> = Vec::new();
    for (i, p) in loaded.iter().enumerate() {
        let x = i as f64;
        let mut base = 0.0;
        for (key, share) in p.shares.iter().filter(|s| s.1 > 0.0) {
            let h = share * 100.0;
            let c = stage_colour(key);
            let bar = chart.draw_series(std::iter::once(Rectangle::new(
                [(x + 0.15, base), (x + 0.85, base + h)],
                c.filled(),
            )))?;
            if !seen.contains(key) {
                seen.push(key.clone());
                bar.label(key.replace('_', " ")).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled())
                });
            }
            base += h;
        }
        chart.draw_series(std::iter::once(Text::new(
            p.name.clone(),
            (x + 0.2, -6.0),
            (font, 14).into_font(),
        )))?;
    }
    legend(&mut chart, font)
}
