//! The live latency histogram: log-scaled bins over the last ten seconds,
//! an automatic range that follows the data (and so comes back down after a
//! spike), zoom by quantile, and lost packets as a red bar of their own.

use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Paragraph};
use synapse_stats::{LiveStats, LogBins};
use synapse_units::{format_ns, group_thousands};

/// Quantile range shown at each zoom level.
pub const ZOOM_RANGES: [(f64, f64, &str); 5] = [
    (0.0, 1.0, "min–max"),
    (0.001, 0.999, "p0.1–p99.9"),
    (0.01, 0.99, "p1–p99"),
    (0.05, 0.95, "p5–p95"),
    (0.1, 0.9, "p10–p90"),
];

const EIGHTHS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];
const LOST_WIDTH: u16 = 8;

/// Columns of the plot: (lowest ns, count) per column, lowest first.
pub fn columns(bins: &LogBins, zoom: u8, max_columns: usize) -> Vec<(u64, u64)> {
    let (qlo, qhi, _) = ZOOM_RANGES[usize::from(zoom).min(ZOOM_RANGES.len() - 1)];
    let (Some(lo), Some(hi)) = (bins.quantile_bin(qlo), bins.quantile_bin(qhi)) else {
        return Vec::new();
    };
    let n = hi - lo + 1;
    let group = n.div_ceil(max_columns.max(1));
    (lo..=hi)
        .step_by(group)
        .map(|start| {
            let end = (start + group).min(hi + 1);
            (
                LogBins::lower_bound(start),
                bins.counts[start..end].iter().sum(),
            )
        })
        .collect()
}

fn draw_bar(
    buf: &mut Buffer,
    x: u16,
    width: u16,
    bottom: u16,
    height: u16,
    eighths: u64,
    style: ratatui::style::Style,
) {
    for row in 0..height {
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

/// Draws the histogram pane.
pub fn render(f: &mut Frame, area: Rect, live: &LiveStats, zoom: u8, t: Theme) {
    let (bins, lost) = live.recent_histogram();
    let label = ZOOM_RANGES[usize::from(zoom).min(ZOOM_RANGES.len() - 1)].2;
    let title = if area.width >= 62 {
        format!(" RTT histogram · last 10 s · {label} · zoom {zoom} (+/-) ")
    } else {
        format!(" RTT histogram · 10 s · {label} ")
    };
    let block = Block::bordered().title(Span::styled(title, t.title()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height < 3 || inner.width < LOST_WIDTH + 10 {
        return;
    }
    let plot_width = inner.width - LOST_WIDTH - 1;
    let cols = columns(&bins, zoom, plot_width as usize);
    if cols.is_empty() && lost == 0 {
        f.render_widget(
            Paragraph::new(Span::styled(" no samples yet", t.dim())),
            inner,
        );
        return;
    }
    // Columns spread over the whole plot, however few (a zoomed range has
    // few bins): column i covers cells [i·used/n, (i+1)·used/n). Narrow
    // columns touch, so the odd one-cell difference in width disappears in
    // a continuous area; wide ones keep a gap.
    let n = cols.len().max(1) as u32;
    let used = plot_width;
    let span = |i: usize| (u32::from(used) * i as u32 / n) as u16;
    let gap = u32::from(used) >= 3 * n;
    let plot_height = inner.height - 2;
    let bottom = inner.y + plot_height - 1;
    let peak = cols.iter().map(|c| c.1).max().unwrap_or(0).max(lost).max(1);
    let scale = |count: u64| {
        let e = count * u64::from(plot_height) * 8 / peak;
        if count > 0 { e.max(1) } else { 0 }
    };
    let buf = f.buffer_mut();
    for (i, &(_, count)) in cols.iter().enumerate() {
        let (x0, x1) = (span(i), span(i + 1));
        let w = if gap { x1 - x0 - 1 } else { (x1 - x0).max(1) };
        draw_bar(
            buf,
            inner.x + x0,
            w,
            bottom,
            plot_height,
            scale(count),
            t.bar(),
        );
    }
    // The lost bar stands apart at the right, on the same scale.
    let lost_x = inner.x + inner.width - LOST_WIDTH + 1;
    draw_bar(
        buf,
        lost_x,
        LOST_WIDTH - 2,
        bottom,
        plot_height,
        scale(lost),
        t.bad(),
    );
    // Axis: lowest value, middle, top of the range; the lost count.
    let axis_y = bottom + 1;
    if let (Some(first), Some(last)) = (cols.first(), cols.last()) {
        let lo = format_ns(first.0 as f64);
        let mid = format_ns(cols[cols.len() / 2].0 as f64);
        let hi = format!("{}+", format_ns(last.0 as f64));
        buf.set_string(inner.x, axis_y, &lo, t.dim());
        let mid_x = inner.x + used / 2 - (mid.chars().count() as u16 / 2).min(used / 2);
        if mid_x > inner.x + lo.chars().count() as u16 + 1 {
            buf.set_string(mid_x, axis_y, &mid, t.dim());
        }
        let hi_x = (inner.x + used)
            .saturating_sub(hi.chars().count() as u16)
            .max(inner.x);
        if hi_x > mid_x + mid.chars().count() as u16 {
            buf.set_string(hi_x, axis_y, &hi, t.dim());
        }
    }
    let lost_style = if lost > 0 { t.bad() } else { t.dim() };
    buf.set_string(lost_x, axis_y, "lost", lost_style);
    buf.set_string(lost_x, axis_y + 1, group_thousands(lost), lost_style);
    buf.set_string(
        inner.x,
        axis_y + 1,
        format!("peak {} / column", group_thousands(peak)),
        t.dim(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            cols.first().unwrap().0,
            LogBins::lower_bound(LogBins::index(10_000))
        );
        assert_eq!(
            cols.last().unwrap().0,
            LogBins::lower_bound(LogBins::index(40_000))
        );
        assert_eq!(cols.iter().map(|c| c.1).sum::<u64>(), 3);
    }

    #[test]
    fn zooming_trims_outliers() {
        let mut v: Vec<u64> = (0..1000).map(|i| 10_000 + i * 10).collect();
        v.push(5_000_000);
        let b = bins_of(&v);
        let wide = columns(&b, 0, 1000);
        let narrow = columns(&b, 2, 1000);
        assert!(wide.last().unwrap().0 >= 4_000_000);
        assert!(narrow.last().unwrap().0 < 30_000);
    }

    #[test]
    fn many_bins_are_grouped_into_the_width() {
        let v: Vec<u64> = (6..36).map(|e| 1u64 << e).collect();
        let b = bins_of(&v);
        let cols = columns(&b, 0, 20);
        assert!(cols.len() <= 20);
        assert_eq!(cols.iter().map(|c| c.1).sum::<u64>(), v.len() as u64);
    }
}
