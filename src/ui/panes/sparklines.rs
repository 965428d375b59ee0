//! Percentile history: p50, p99 and p99.9 per 250 ms window over the last
//! minute. Each series is scaled from zero to what most of its windows
//! reach, so one spike does not flatten every other window to nothing: a
//! window above the scale stands full height under a `↑`. Windows with a
//! request that timed out are drawn in red; a window with no reply at all
//! is a red `×`.

use super::histogram::{Slot, draw_bar};
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use synapse_stats::{LiveStats, WindowPoint};
use synapse_units::format_ns;

type Pick = fn(&WindowPoint) -> u64;

const SERIES: [(&str, Pick); 3] = [
    ("p50", |w| w.p50),
    ("p99", |w| w.p99),
    ("p99.9", |w| w.p999),
];

/// Where a series' scale ends: a quarter above what nine windows in ten
/// reach (never above its highest), so a spike in one window or a few is
/// drawn cut at the top rather than squashing the rest.
pub fn scale_top(values: &[Option<u64>]) -> Option<u64> {
    let mut v: Vec<u64> = values.iter().flatten().copied().collect();
    v.sort_unstable();
    let high = *v.get((v.len() * 9).div_ceil(10).saturating_sub(1))?;
    Some((high + high / 4).min(*v.last()?).max(1))
}

/// Bar heights in eighths of a cell, `rows` cells at most, from zero to
/// `top`, and whether the value was above it (cut). `None`: no sample.
pub fn heights(values: &[Option<u64>], rows: u16) -> Vec<Option<(u64, bool)>> {
    let full = u64::from(rows) * 8;
    let Some(top) = scale_top(values) else {
        return vec![None; values.len()];
    };
    values
        .iter()
        .map(|v| {
            v.map(|v| {
                let e = (u128::from(v.min(top)) * u128::from(full) / u128::from(top)) as u64;
                (e.max(1), v > top)
            })
        })
        .collect()
}

/// Draws the three series: each under its label when there is room for
/// two rows apiece, else beside it on one row.
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
        let values: Vec<Option<u64>> = shown
            .iter()
            .map(|w| (w.samples > 0).then(|| pick(w)))
            .collect();
        let latest = values.iter().rev().flatten().next();
        let peak = values.iter().flatten().max();
        let top = scale_top(&values);
        let text = match (latest, peak, stacked) {
            (Some(l), Some(p), true) => {
                let head = format!(
                    "{:<6}{:>10}   peak {}",
                    name,
                    format_ns(*l as f64),
                    format_ns(*p as f64)
                );
                // The scale, when the width has room and a spike was cut.
                let scale = top
                    .filter(|t| t < p)
                    .map(|t| format!("   scale 0–{}", format_ns(t as f64)))
                    .unwrap_or_default();
                if (head.chars().count() + scale.chars().count()) <= usize::from(label.width) {
                    head + &scale
                } else {
                    head
                }
            }
            (Some(l), _, false) => format!("{:<6}{:>10} ", name, format_ns(*l as f64)),
            _ => format!("{name:<6}{:>10}", "—"),
        };
        f.render_widget(
            Paragraph::new(Line::from(Span::styled(text, t.spark(i)))),
            label,
        );
        let heights = heights(&values, chart.height);
        let buf = f.buffer_mut();
        for (x, (w, h)) in (chart.x..chart.right()).zip(shown.iter().zip(heights)) {
            let slot = Slot {
                x,
                width: 1,
                bottom: chart.bottom() - 1,
                height: chart.height,
            };
            let style = if w.timed_out > 0 { t.bad() } else { t.spark(i) };
            match h {
                Some((h, cut)) => {
                    draw_bar(buf, slot, h, style);
                    if cut {
                        buf[(x, chart.y)].set_symbol("↑").set_style(style);
                    }
                }
                None if w.timed_out > 0 => {
                    buf[(x, slot.bottom)].set_symbol("×").set_style(t.bad());
                }
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use synapse_stats::{Record, RecordKind};

    #[test]
    fn a_spike_is_cut_at_the_scale_and_the_rest_keep_theirs() {
        let mut values: Vec<Option<u64>> = (0..19).map(|i| Some(80 + i)).collect();
        values.push(Some(88_000));
        values.push(None);
        // Nine in ten reach 97: the scale ends a quarter above, at 121.
        assert_eq!(scale_top(&values), Some(121));
        let h = heights(&values, 2);
        assert_eq!(h[0], Some((80 * 16 / 121, false)));
        assert_eq!(h[19], Some((16, true)), "the spike: full and cut");
        assert_eq!(h[20], None);
        assert_eq!(heights(&[Some(5), Some(5)], 3), [Some((24, false)); 2]);
        assert_eq!(heights(&[None, None], 3), [None, None]);
    }

    /// Issue 36: after one 88 ms spike, the p99 chart flattened to one bar
    /// and stray `▁`: on a log scale the windows around 80 µs still differ,
    /// and none is lost in the floor.
    #[test]
    fn one_spike_does_not_flatten_the_rest() {
        let mut live = LiveStats::new();
        let mut seq = 0;
        for w in 0..40u64 {
            for i in 0..200u64 {
                let rtt = match w {
                    20 if i < 3 => 88_000_000,
                    _ => 60_000 + (w % 5) * 10_000 + i * 10,
                };
                live.ingest(&Record::sample(seq, 0, rtt, false));
                seq += 1;
            }
            if w == 30 {
                live.ingest(&Record::event(RecordKind::Lost, seq, 0, false));
                seq += 1;
            }
            live.close_window();
        }
        // An outage: a window with nothing but timeouts.
        live.ingest(&Record::event(RecordKind::Lost, seq, 0, false));
        live.close_window();
        let mut term = Terminal::new(TestBackend::new(60, 20)).unwrap();
        term.draw(|f| render(f, f.area(), &live, Theme::new(false)))
            .unwrap();
        let lines = crate::ui::layout_check::lines(term.backend().buffer());
        // p99: rows 8..=12 of the frame hold its chart.
        let chart: Vec<&String> = lines[8..13].iter().collect();
        let heights: Vec<usize> = (1..42)
            .map(|x| {
                chart
                    .iter()
                    .filter(|l| l.chars().nth(x).is_some_and(|c| c != ' '))
                    .count()
            })
            .collect();
        let tall = heights.iter().filter(|h| **h >= 2).count();
        assert!(
            tall >= 30,
            "most windows stand up beside the spike: {heights:?}\n{}",
            lines.join("\n")
        );
        assert!(
            lines[12].chars().nth(41) == Some('×'),
            "the outage: {}",
            lines[12]
        );
        assert!(
            lines[8].chars().nth(21) == Some('↑'),
            "the spike, cut: {}",
            lines[8]
        );
        assert!(lines[7].contains("   scale 0–127.5 µs"), "{}", lines[7]);
    }
}
