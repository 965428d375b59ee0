//! A pane's frame: its title inside it (made smaller, then wrapped, to
//! fit any width), its legend below the chart (off the data, wrapped into
//! rows), and the marks both the chart and the legend draw, so each
//! meaning has one symbol.

use super::axes::{Measure, fit_title};
use plotters::coord::Shift;
use plotters::element::{EmptyElement, PathElement, Polygon, Rectangle};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The typeface every label is drawn in (DejaVu Sans, embedded).
pub const FONT: &str = "sans-serif";

/// Font sizes: axis labels, axis descriptions, legend, title (largest
/// and smallest it may take).
pub const LABEL: u32 = 14;
pub const DESC: u32 = 16;
pub const LEGEND: u32 = 14;
const TITLE_MAX: u32 = 22;
const TITLE_MIN: u32 = 12;
/// Room around the frame's parts, pixels.
pub const MARGIN: u32 = 15;

/// A run's colour, in input order.
pub const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// Outages: red, see through.
pub fn outage_fill() -> RGBAColor {
    RGBColor(214, 39, 40).mix(0.18)
}

/// An interval with nothing to draw (no reply, no stamped packet): grey.
pub fn gap_fill() -> RGBAColor {
    RGBColor(120, 120, 120).mix(0.16)
}

/// Loss: a filled triangle pointing down, in pixels around its point
/// (moved down by `dy`).
pub fn loss_mark<C: Color>(colour: &C, dy: i32) -> Polygon<(i32, i32)> {
    Polygon::new(
        vec![(-6, dy - 5), (6, dy - 5), (0, dy + 5)],
        colour.filled(),
    )
}

/// A maximum: a cross.
pub fn max_mark<C: Color>(colour: &C) -> Cross<(i32, i32), i32> {
    Cross::new((0, 0), 4, colour.stroke_width(1))
}

/// A report's figure: a filled circle.
pub fn figure_mark<C: Color>(colour: &C) -> Circle<(i32, i32), i32> {
    Circle::new((0, 0), 5, colour.filled())
}

/// What a legend entry shows before its words.
#[derive(Debug, Clone)]
pub enum Swatch {
    /// A line of this colour and width.
    Line(RGBColor, u32),
    /// A filled block.
    Block(RGBAColor),
    /// [`loss_mark`].
    Loss(RGBColor),
    /// [`max_mark`].
    Max(RGBColor),
    /// [`figure_mark`].
    Figure(RGBColor),
}

/// A legend entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its mark.
    pub swatch: Swatch,
    /// Its words.
    pub label: String,
}

/// Swatch and gaps, pixels.
const SWATCH: i32 = 24;

/// The rows a legend takes in `width`: indexes of the entries per row.
fn legend_rows(entries: &[Entry], width: u32, m: Measure) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut used = 0;
    for (k, e) in entries.iter().enumerate() {
        let w = entry_width(e, m);
        match rows.last_mut() {
            Some(row) if used + w <= width => {
                row.push(k);
                used += w;
            }
            _ => {
                rows.push(vec![k]);
                used = w;
            }
        }
    }
    rows
}

fn entry_width(e: &Entry, m: Measure) -> u32 {
    SWATCH as u32 + 8 + m(&e.label, LEGEND).0 + 22
}

fn line_height(size: u32) -> u32 {
    size + size / 2
}

/// Cuts `area` into its title, chart and legend, draws the title and the
/// legend, and returns the chart's area.
pub fn lay_out<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    entries: &[Entry],
    m: Measure,
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = area.dim_in_pixel();
    let inner = w.saturating_sub(2 * MARGIN);
    let (size, lines) = fit_title(title, inner, TITLE_MAX, TITLE_MIN, m);
    let title_h = MARGIN / 2 + lines.len() as u32 * line_height(size);
    let rows = legend_rows(entries, inner, m);
    let legend_h = rows.len() as u32 * line_height(LEGEND) + MARGIN / 2;
    let (top, rest) = area.split_vertically(title_h);
    let (h_rest, _) = (rest.dim_in_pixel().1, ());
    let (chart, bottom) = rest.split_vertically(h_rest.saturating_sub(legend_h));
    let style = TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (k, line) in lines.iter().enumerate() {
        let y = (MARGIN / 2 + k as u32 * line_height(size)) as i32;
        top.draw_text(line, &style, ((w / 2) as i32, y))?;
    }
    draw_legend(&bottom, entries, &rows, m)?;
    Ok(chart)
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    rows: &[Vec<usize>],
    m: Measure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let text = TextStyle::from((FONT, LEGEND).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (r, row) in rows.iter().enumerate() {
        let y = (r as u32 * line_height(LEGEND) + line_height(LEGEND) / 2) as i32;
        let mut x = MARGIN as i32;
        for &k in row {
            let e = &entries[k];
            draw_swatch(area, &e.swatch, x, y)?;
            area.draw_text(&e.label, &text, (x + SWATCH + 8, y))?;
            x += entry_width(e, m) as i32;
        }
    }
    Ok(())
}

fn draw_swatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    swatch: &Swatch,
    x: i32,
    y: i32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mid = (x + SWATCH / 2, y);
    match swatch {
        Swatch::Line(c, width) => area.draw(&PathElement::new(
            vec![(x, y), (x + SWATCH, y)],
            c.stroke_width(*width),
        )),
        Swatch::Block(c) => area.draw(&Rectangle::new(
            [(x, y - 6), (x + SWATCH, y + 6)],
            c.filled(),
        )),
        Swatch::Loss(c) => area.draw(&(EmptyElement::at(mid) + loss_mark(c, 0))),
        Swatch::Max(c) => area.draw(&(EmptyElement::at(mid) + max_mark(c))),
        Swatch::Figure(c) => area.draw(&(EmptyElement::at(mid) + figure_mark(c))),
    }
}
