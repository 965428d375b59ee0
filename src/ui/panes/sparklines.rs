//! Percentile history: p50, p99 and p99.9 per 250 ms window over the last
//! minute. Windows that lost packets are drawn in red.

use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Sparkline, SparklineBar};
use synapse_stats::{LiveStats, WindowPoint};
use synapse_units::format_ns;

type Pick = fn(&WindowPoint) -> u64;

const SERIES: [(&str, Pick); 3] = [
    ("p50", |w| w.p50),
    ("p99", |w| w.p99),
    ("p99.9", |w| w.p999),
];

/// Draws the three sparklines: each under its label when there is room
/// for two rows apiece, else beside it on one row.
pub fn render(f: &mut Frame, area: Rect, live: &LiveStats, t: Theme) {
    let title = if area.width >= 52 {
        " Percentiles per 250 ms · last minute "
    } else {
        " Percentiles per 250 ms "
    };
    let block = Block::bordered().title(Span::styled(title, t.title()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let stacked = inner.height >= 6;
    let rows = Layout::vertical([Constraint::Fill(1); 3]).split(inner);
    let label_width = if stacked {
        inner.width
    } else {
        17.min(inner.width)
    };
    let chart_width = if stacked {
        inner.width
    } else {
        inner.width - label_width
    } as usize;
    let history = live.history();
    let shown: Vec<&WindowPoint> = history
        .iter()
        .skip(history.len().saturating_sub(chart_width))
        .collect();
    for (i, (name, pick)) in SERIES.iter().enumerate() {
        let [label, chart] = if stacked {
            Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(rows[i])
        } else {
            Layout::horizontal([Constraint::Length(label_width), Constraint::Fill(1)])
                .areas(rows[i])
        };
        let latest = shown.iter().rev().find(|w| w.samples > 0).map(|w| pick(w));
        let peak = shown
            .iter()
            .filter(|w| w.samples > 0)
            .map(|w| pick(w))
            .max();
        let text = match (latest, peak, stacked) {
            (Some(l), Some(p), true) => format!(
                "{:<6}{:>10}   peak {}",
                name,
                format_ns(l as f64),
                format_ns(p as f64)
            ),
            (Some(l), _, false) => format!("{:<6}{:>10} ", name, format_ns(l as f64)),
            _ => format!("{name:<6}{:>10}", "—"),
        };
        f.render_widget(
            Paragraph::new(Line::from(Span::styled(text, t.spark(i)))),
            label,
        );
        let bars: Vec<SparklineBar> = shown
            .iter()
            .map(|w| {
                let bar = SparklineBar::from((w.samples > 0).then(|| pick(w)));
                if w.lost > 0 { bar.style(t.bad()) } else { bar }
            })
            .collect();
        f.render_widget(Sparkline::default().data(bars).style(t.spark(i)), chart);
    }
}
