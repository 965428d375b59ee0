//! The live latency histogram: the last ten seconds on a log RTT axis
//! (bins about 2 % wide, grouped evenly into the columns, ticks at 1, 10,
//! 100 … of a unit), a range that follows the data (so it comes back down
//! after a spike), zoom by quantile into finer bins, and the requests
//! without a timely reply as a red bar of their own, counted lost and late
//! as the totals count them.

use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use synapse_stats::{LiveStats, LogBins};
use synapse_units::{format_ns_plain, group_thousands};

/// Quantile range shown at each zoom level.
pub const ZOOM_RANGES: [(f64, f64, &str); 5] = [
    (0.0, 1.0, "min–max"),
    (0.001, 0.999, "p0.1–p99.9"),
    (0.01, 0.99, "p1–p99"),
    (0.05, 0.95, "p5–p95"),
    (0.1, 0.9, "p10–p90"),
];

const EIGHTHS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];
/// The red bar's place at the right: a gap, the bar, its label.
const TIMEOUT_WIDTH: u16 = 8;
const TIMEOUT_LABEL: &str = "timeout";

/// The plot's columns: for each, its first bin and its count. The zoomed
/// range's bins are grouped evenly (every column the same number of bins,
/// so the same share of the log axis) into at most `max_columns`.
pub fn columns(bins: &LogBins, zoom: u8, max_columns: usize) -> Vec<(usize, u64)> {
    let Some((lo, hi)) = range(bins, zoom) else {
        return Vec::new();
    };
    let group = (hi - lo + 1).div_ceil(max_columns.max(1));
    (lo..=hi)
        .step_by(group)
        .map(|start| {
            let end = (start + group).min(hi + 1);
            (start, bins.counts[start..end].iter().sum())
        })
        .collect()
}

/// The first and last bin the zoom level shows.
fn range(bins: &LogBins, zoom: u8) -> Option<(usize, usize)> {
    let (qlo, qhi, _) = ZOOM_RANGES[usize::from(zoom).min(ZOOM_RANGES.len() - 1)];
    Some((bins.quantile_bin(qlo)?, bins.quantile_bin(qhi)?))
}

/// Values to mark on a log axis from `lo` to `hi` ns: the powers of ten
/// in the range; with fewer than two, 1, 2 and 5 times them; in a range
/// narrower still (zoomed in), the multiples of the largest power of ten
/// that puts two or more in it.
pub fn ticks(lo: u64, hi: u64) -> Vec<u64> {
    let powers = || (1..=12).map(|k| 10u64.pow(k));
    let in_range = |v: &u64| (lo..=hi).contains(v);
    let decades: Vec<u64> = powers().filter(in_range).collect();
    if decades.len() >= 2 {
        return decades;
    }
    let nice: Vec<u64> = powers()
        .flat_map(|p| [p, 2 * p, 5 * p])
        .filter(in_range)
        .collect();
    if nice.len() >= 2 {
        return nice;
    }
    powers()
        .rev()
        .map(|step| {
            (lo.div_ceil(step)..=hi / step)
                .map(|m| m * step)
                .collect::<Vec<_>>()
        })
        .find(|v| v.len() >= 2)
        .unwrap_or_default()
}

/// Where a bar stands: its first column, its width, its bottom row and
/// the most rows it may take.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub x: u16,
    pub width: u16,
    pub bottom: u16,
    pub height: u16,
}

/// Draws a bar `eighths` eighths of a cell tall in `slot`.
pub fn draw_bar(buf: &mut Buffer, slot: Slot, eighths: u64, style: Style) {
    let Slot {
        x,
        width,
        bottom,
        height,
    } = slot;
    for row in 0..height.min(bottom + 1) {
        let filled = eighths.saturating_sub(u64::from(row) * 8).min(8) as usize;
        if filled == 0 {
            break;
        }
        for dx in 0..width {
            buf[(x + dx, bottom - row)]
                .set_symbol(EIGHTHS[filled])
                .set_style(style);
        }
    }
}

/// The title, as long as the width allows.
fn title(width: u16, zoom: u8) -> String {
    let label = ZOOM_RANGES[usize::from(zoom).min(ZOOM_RANGES.len() - 1)].2;
    let long = format!(" RTT histogram · last 10 s · {label} · log axis · zoom {zoom} (+/-) ");
    let short = format!(" RTT histogram · 10 s · {label} · log ");
    if long.chars().count() + 2 <= usize::from(width) {
        long
    } else if short.chars().count() + 2 <= usize::from(width) {
        short
    } else {
        format!(" RTT histogram · 10 s · {label} ")
    }
}

/// Draws the histogram pane.
pub fn render(f: &mut Frame, area: Rect, live: &LiveStats, zoom: u8, t: Theme) {
    let recent = live.recent_histogram();
    let timed_out = recent.lost + recent.late;
    let counts = format!(
        " lost {} · late {} ",
        group_thousands(recent.lost),
        group_thousands(recent.late)
    );
    let counts_style = if timed_out > 0 { t.bad() } else { t.dim() };
    let mut block = Block::bordered()
        .title(Span::styled(title(area.width, zoom), t.title()))
        .title_bottom(Line::from(Span::styled(counts, counts_style)).right_aligned());
    let inner = block.inner(area);
    if inner.height < 3 || inner.width < TIMEOUT_WIDTH + 10 {
        f.render_widget(block, area);
        return;
    }
    let plot_width = inner.width - TIMEOUT_WIDTH - 1;
    let cols = columns(&recent.bins, zoom, usize::from(plot_width));
    if cols.is_empty() && timed_out == 0 {
        f.render_widget(block, area);
        f.render_widget(
            Paragraph::new(Span::styled(" no samples yet", t.dim())),
            inner,
        );
        return;
    }
    let peak = cols
        .iter()
        .map(|c| c.1)
        .max()
        .unwrap_or(0)
        .max(timed_out)
        .max(1);
    block = block.title_bottom(Span::styled(
        format!(" peak {} a column ", group_thousands(peak)),
        t.dim(),
    ));
    f.render_widget(block, area);
    // Columns spread over the whole plot, however few (a zoomed range has
    // few bins): column i covers cells [i·width/n, (i+1)·width/n). Narrow
    // columns touch, so the odd one-cell difference in width disappears in
    // a continuous area; wide ones keep a gap.
    let n = cols.len().max(1) as u32;
    let span = |i: usize| (u32::from(plot_width) * i as u32 / n) as u16;
    let gap = u32::from(plot_width) >= 3 * n;
    let plot_height = inner.height - 1;
    let bottom = inner.y + plot_height - 1;
    let scale = |count: u64| {
        let e = count * u64::from(plot_height) * 8 / peak;
        if count > 0 { e.max(1) } else { 0 }
    };
    let buf = f.buffer_mut();
    for (i, &(_, count)) in cols.iter().enumerate() {
        let (x0, x1) = (span(i), span(i + 1));
        let w = if gap { x1 - x0 - 1 } else { (x1 - x0).max(1) };
        let slot = Slot {
            x: inner.x + x0,
            width: w,
            bottom,
            height: plot_height,
        };
        draw_bar(buf, slot, scale(count), t.bar());
    }
    // The requests without a timely reply stand apart at the right, on
    // the same scale.
    let timeout_x = inner.x + inner.width - TIMEOUT_WIDTH + 1;
    let slot = Slot {
        x: timeout_x,
        width: TIMEOUT_WIDTH - 2,
        bottom,
        height: plot_height,
    };
    draw_bar(buf, slot, scale(timed_out), t.bad());
    let axis_y = bottom + 1;
    buf.set_string(timeout_x, axis_y, TIMEOUT_LABEL, counts_style);
    axis(buf, inner.x, axis_y, plot_width, &cols, span, t.dim());
}

/// The axis under the columns: each tick's value where its bin is drawn,
/// those that would touch the one before left out.
fn axis(
    buf: &mut Buffer,
    x: u16,
    y: u16,
    width: u16,
    cols: &[(usize, u64)],
    span: impl Fn(usize) -> u16,
    style: Style,
) {
    let (Some(first), Some(last)) = (cols.first(), cols.last()) else {
        return;
    };
    let group = cols.get(1).map_or(1, |c| c.0 - first.0);
    let lo = LogBins::lower_bound(first.0);
    let hi = LogBins::lower_bound(last.0 + group);
    let mut free_from = 0u16;
    for v in ticks(lo, hi) {
        let column = (LogBins::index(v) - first.0) / group.max(1);
        let at = span(column);
        let text = format!("╵{}", format_ns_plain(v));
        let end = at + text.chars().count() as u16;
        if at >= free_from && end <= width {
            buf.set_string(x + at, y, &text, style);
            free_from = end + 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use synapse_stats::{Record, RecordKind};

    fn bins_of(values: &[u64]) -> LogBins {
        let mut b = LogBins::default();
        for &v in values {
            b.counts[LogBins::index(v)] += 1;
        }
        b
    }

    #[test]
    fn columns_cover_min_to_max_at_zoom_zero() {
        let b = bins_of(&[10_000, 20_000, 40_000]);
        let cols = columns(&b, 0, 100);
        assert_eq!(cols.first().unwrap().0, LogBins::index(10_000));
        assert!(cols.last().unwrap().0 <= LogBins::index(40_000));
        assert_eq!(cols.iter().map(|c| c.1).sum::<u64>(), 3);
    }

    #[test]
    fn zooming_trims_outliers() {
        let mut v: Vec<u64> = (0..1000).map(|i| 10_000 + i * 10).collect();
        v.push(5_000_000);
        let b = bins_of(&v);
        let wide = columns(&b, 0, 1000);
        let narrow = columns(&b, 2, 1000);
        assert!(LogBins::lower_bound(wide.last().unwrap().0) >= 4_000_000);
        assert!(LogBins::lower_bound(narrow.last().unwrap().0) < 30_000);
    }

    /// Issue 36: zooming to p5–p95 of a narrow body showed a few coarse
    /// bins made wide; the finer bins give it tens of columns.
    #[test]
    fn a_zoomed_narrow_body_has_many_columns() {
        let v: Vec<u64> = (0..10_000).map(|i| 40_000 + (i * 7919 % 10_000)).collect();
        let b = bins_of(&v);
        let cols = columns(&b, 3, 60);
        assert!(cols.len() >= 10, "{} columns", cols.len());
    }

    #[test]
    fn many_bins_are_grouped_evenly_into_the_width() {
        let v: Vec<u64> = (6..36).map(|e| 1u64 << e).collect();
        let b = bins_of(&v);
        let cols = columns(&b, 0, 20);
        assert!(cols.len() <= 20);
        assert_eq!(cols.iter().map(|c| c.1).sum::<u64>(), v.len() as u64);
        let steps: Vec<usize> = cols.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(steps.iter().all(|s| *s == steps[0]), "{steps:?}");
    }

    #[test]
    fn ticks_are_decades_or_one_two_five_or_finer() {
        assert_eq!(ticks(11_000, 31_000_000), [100_000, 1_000_000, 10_000_000]);
        assert_eq!(ticks(15_000, 90_000), [20_000, 50_000]);
        assert_eq!(ticks(30_000, 40_000), [30_000, 40_000]);
        assert_eq!(ticks(61_000, 99_000), [70_000, 80_000, 90_000]);
    }

    fn rendered(live: &LiveStats, w: u16, h: u16, zoom: u8) -> Vec<String> {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| render(f, f.area(), live, zoom, Theme::new(false)))
            .unwrap();
        crate::ui::layout_check::lines(t.backend().buffer())
    }

    /// A loopback-like run from 11 µs to 31 ms: the axis is logarithmic
    /// (its ticks in order, equally apart per decade), the red bar counts
    /// lost and late as the totals do, and nothing is cut.
    #[test]
    fn the_axis_is_logarithmic_and_the_timeouts_are_split() {
        let mut live = LiveStats::new();
        for i in 0..5_000u64 {
            let rtt = if i % 500 == 0 {
                31_000_000
            } else {
                11_000 + (i * 7919 % 30_000)
            };
            live.ingest(&Record::sample(i, 0, rtt, false));
        }
        for seq in 0..30 {
            live.ingest(&Record::event(RecordKind::Lost, 6_000 + seq, 0, false));
        }
        for seq in 0..12 {
            live.ingest(&Record::event(
                RecordKind::Late { reordered: false },
                6_000 + seq,
                0,
                false,
            ));
        }
        let lines = rendered(&live, 64, 12, 0);
        let text = lines.join("\n");
        let axis = &lines[10];
        let at = |s: &str| axis.find(s).unwrap_or_else(|| panic!("{s} in {axis:?}"));
        let (a, b, c) = (at("╵100 µs"), at("╵1 ms"), at("╵10 ms"));
        assert!(a < b && b < c, "{axis}");
        let (d1, d2) = (b - a, c - b);
        assert!(
            d1.abs_diff(d2) <= 2,
            "a decade is as wide as the next: {axis}"
        );
        assert!(axis.ends_with("timeout│"), "{axis}");
        assert!(lines[11].contains(" lost 18 · late 12 "), "{text}");
        let c = live.total().counters();
        assert_eq!((c.lost, c.late), (18, 12), "the totals say the same");
    }

    #[test]
    fn a_small_pane_keeps_its_title_whole() {
        let live = LiveStats::new();
        let lines = rendered(&live, 44, 8, 0);
        assert!(
            lines[0].starts_with("┌ RTT histogram · 10 s · min–max · log ─"),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains("no samples yet"));
    }
}
