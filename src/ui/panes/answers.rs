//! The reflector's answers per 250 ms over the last minute: what it did,
//! window by window, beside the clients it did it for.

use super::histogram::{Slot, draw_bar};
use super::sparklines::{heights, scale_top};
use crate::ui::app::ServerView;
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use synapse_stats::WINDOW;
use synapse_units::format_rate;

/// Answers a second in a window of `n` answers.
fn per_second(n: u64) -> f64 {
    n as f64 / WINDOW.as_secs_f64()
}

/// Draws the pane: a label (the latest window, the peak, the scale when a
/// spike was cut) and a bar per window, newest at the right.
pub fn render(f: &mut Frame, area: Rect, v: &ServerView, t: Theme) {
    let block = Block::bordered().title(Span::styled(
        " Answers per 250 ms · last minute ",
        t.title(),
    ));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height < 2 || inner.width < 10 {
        return;
    }
    let shown: Vec<Option<u64>> = v
        .answers
        .iter()
        .skip(v.answers.len().saturating_sub(usize::from(inner.width)))
        .map(|n| Some(*n))
        .collect();
    let label = match (
        shown.last().copied().flatten(),
        shown.iter().flatten().max(),
    ) {
        (Some(now), Some(peak)) => {
            let mut text = format!(
                "{}/s now   peak {}/s",
                format_rate(per_second(now)),
                format_rate(per_second(*peak))
            );
            if let Some(top) = scale_top(&shown).filter(|top| top < peak) {
                text.push_str(&format!("   scale 0–{}/s", format_rate(per_second(top))));
            }
            text
        }
        _ => "no window closed yet".into(),
    };
    let label_area = Rect { height: 1, ..inner };
    f.render_widget(Paragraph::new(Line::styled(label, t.spark(0))), label_area);
    let chart = Rect {
        y: inner.y + 1,
        height: inner.height - 1,
        ..inner
    };
    let buf = f.buffer_mut();
    let hs = heights(&shown, chart.height);
    for ((x, h), n) in (chart.x..chart.right()).zip(hs).zip(&shown) {
        let slot = Slot {
            x,
            width: 1,
            bottom: chart.bottom() - 1,
            height: chart.height,
        };
        if let Some((h, cut)) = h {
            // An idle window is a gap, not a stub.
            if *n != Some(0) {
                draw_bar(buf, slot, h, t.spark(0));
            }
            if cut {
                buf[(x, chart.y)].set_symbol("↑").set_style(t.spark(0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    #[test]
    fn each_window_is_a_bar_and_the_label_says_the_rate() {
        let mut v = ServerView::default();
        let w = WINDOW.as_nanos() as u64;
        for (k, n) in [250, 500, 0, 1_000].into_iter().enumerate() {
            let k = k as u64;
            v.answered_between(k * w, (k + 1) * w, n);
        }
        let mut term = Terminal::new(TestBackend::new(40, 6)).unwrap();
        term.draw(|f| render(f, f.area(), &v, Theme::new(false)))
            .unwrap();
        let lines = crate::ui::layout_check::lines(term.backend().buffer());
        assert!(
            lines[1].contains("4.0k/s now   peak 4.0k/s"),
            "{}",
            lines[1]
        );
        // The third window answered nothing: no bar there.
        let bottom = &lines[4];
        let cells: Vec<char> = bottom.chars().collect();
        assert_ne!(cells[1], ' ', "{bottom}");
        assert_eq!(cells[3], ' ', "{bottom}");
        assert_ne!(cells[4], ' ', "{bottom}");
    }

    /// Issue 51: the reflector's totals come every 100 ms; a steady
    /// 1,000/s is 250 in every 250 ms window, never 200 or 300 by how many
    /// ticks fell in it.
    #[test]
    fn a_steady_rate_makes_steady_windows() {
        let mut v = ServerView::default();
        let tick = 100_000_000u64;
        for k in 0..40u64 {
            v.answered_between(k * tick, (k + 1) * tick, 100);
        }
        assert_eq!(v.answers.len(), 16, "4 s of 250 ms windows");
        assert!(v.answers.iter().all(|&n| n == 250), "{:?}", v.answers);
    }
}
