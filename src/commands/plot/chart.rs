//! A chart's room for its axes, measured: the y labels' area as wide as
//! its widest label, the right margin as wide as half the last x label
//! (which is centred on the axis's end), and the mesh drawn at the ticks
//! `axes` chose, bold lines only (no band of faint lines).

use super::axes::Measure;
use super::frame::{DESC, FONT, LABEL, MARGIN};
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::prelude::*;
use std::ops::Range;

/// An axis with exactly the ticks [`super::axes`] chose (bold lines and
/// labels there, no faint lines between).
#[derive(Debug, Clone)]
pub struct Ticked<R> {
    inner: R,
    ticks: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ticked<R> {
    /// `inner` with its ticks at `ticks`.
    pub fn new(inner: impl Into<R>, ticks: Vec<f64>) -> Self {
        Self {
            inner: inner.into(),
            ticks,
        }
    }
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type ValueType = f64;
    type FormatOption = NoDefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

impl<R> ValueFormatter<f64> for Ticked<R> {
    fn format(value: &f64) -> String {
        format!("{value}")
    }
}

/// Pixels taken by the x axis's labels and description.
pub const X_AREA: u32 = LABEL + DESC + 24;

/// Where a chart's parts go in an area `w` × `h`.
#[derive(Debug, Clone, Copy)]
pub struct Room {
    /// The y labels' area.
    pub y_area: u32,
    /// The right margin.
    pub right: u32,
    /// The plotting area, pixels.
    pub plot_w: f64,
}

/// The plotting area's height in a chart area `h` high.
pub fn plot_height(h: u32) -> f64 {
    f64::from(h.saturating_sub(2 * MARGIN + X_AREA).max(20))
}

/// The room for y labels `y_labels` and a last x label `x_last`.
pub fn room(w: u32, y_labels: &[String], x_last: &str, m: Measure) -> Room {
    let widest = y_labels.iter().map(|l| m(l, LABEL).0).max().unwrap_or(0);
    let y_area = widest + DESC + 26;
    let right = (m(x_last, LABEL).0 / 2 + 6).max(MARGIN);
    let plot_w = f64::from(w.saturating_sub(MARGIN + right + y_area).max(20));
    Room {
        y_area,
        right,
        plot_w,
    }
}

/// What the axes say.
pub struct Axes<'a> {
    /// The x axis's description.
    pub x_desc: &'a str,
    /// The y axis's.
    pub y_desc: &'a str,
    /// An x tick's label.
    pub x_label: &'a dyn Fn(&f64) -> String,
    /// A y tick's label.
    pub y_label: &'a dyn Fn(&f64) -> String,
    /// How many ticks each has.
    pub ticks: (usize, usize),
}

/// Draws the mesh, the axes and their labels.
pub fn draw_mesh<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    axes: &Axes,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_labels(axes.ticks.0)
        .y_labels(axes.ticks.1)
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_label_formatter(axes.x_label)
        .y_label_formatter(axes.y_label)
        .label_style((FONT, LABEL))
        .axis_desc_style((FONT, DESC))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(TRANSPARENT)
        .draw()
}
