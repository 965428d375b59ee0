//! A multicast run's responders: one row each (its answers, loss, P50
//! and P99 since the last clear, a sparkline of its medians per 250 ms
//! window, and whether it answers or has gone silent, since when).

use crate::ui::columns::{Column, Fitted, fit, sparkline};
use crate::ui::responders::{ResponderBoard, ResponderRow};
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;
use std::time::Duration;
use synapse_units::{format_ns, group_thousands};

/// The sparkline's header.
const HISTORY: &str = "median per 250 ms";

/// Rows the pane needs for `board`: its border, header and one a
/// responder (at least one, for "none yet").
pub fn height(board: &ResponderBoard) -> u16 {
    3 + board.rows.len().max(1) as u16
}

/// `answering`, or `silent 3.2 s` (since its last answer) in red.
fn state(r: &ResponderRow, elapsed: Duration, t: Theme) -> Span<'static> {
    if !r.silent() {
        return Span::styled("answering", t.good());
    }
    match r.last_answer_ns {
        Some(at) => {
            let quiet = elapsed.as_nanos().saturating_sub(u128::from(at)) as f64 / 1e9;
            Span::styled(format!("silent {quiet:.1} s"), t.bad())
        }
        None => Span::styled("never answered", t.bad()),
    }
}

fn ns(v: Option<u64>) -> String {
    v.map_or_else(|| "—".into(), |v| format_ns(v as f64))
}

fn columns(rows: &[(usize, &ResponderRow)], elapsed: Duration, t: Theme) -> Vec<Column> {
    let cells = |cell: &dyn Fn(usize, &ResponderRow) -> Span<'static>| {
        rows.iter().map(|&(i, r)| cell(i, r)).collect()
    };
    vec![
        Column::new("responder", cells(&|i, r| Span::raw(r.label(i)))),
        Column::new(
            "answered",
            cells(&|_, r| Span::raw(group_thousands(r.answered))),
        )
        .min_width(9),
        Column::new(
            "loss",
            cells(&|_, r| match r.loss_percent() {
                Some(l) if l > 0.0 => Span::styled(format!("{l:.1} %"), t.warn()),
                Some(l) => Span::raw(format!("{l:.1} %")),
                None => Span::raw("—"),
            }),
        )
        .min_width(7),
        Column::new(
            "p50",
            cells(&|_, r| Span::raw(ns(r.percentiles().map(|p| p.0)))),
        )
        .min_width(9),
        Column::new(
            "p99",
            cells(&|_, r| Span::raw(ns(r.percentiles().map(|p| p.1)))),
        )
        .min_width(9)
        .drop_rank(2),
        Column::new("state", cells(&|_, r| state(r, elapsed, t))).min_width(14),
        Column::new(HISTORY, Vec::new())
            .drop_rank(1)
            .min_width(12)
            .grow(48),
    ]
}

/// The columns that fit `width`, the sparklines drawn to theirs.
fn fitted(rows: &[(usize, &ResponderRow)], elapsed: Duration, width: u16, t: Theme) -> Fitted {
    let mut f = fit(columns(rows, elapsed, t), width);
    if let Some(w) = f.width_of(HISTORY)
        && let Some(c) = f.columns.iter_mut().find(|c| c.header == HISTORY)
    {
        let history = |r: &ResponderRow| r.history.iter().copied().collect::<Vec<_>>();
        c.cells = rows
            .iter()
            .map(|&(_, r)| Span::styled(sparkline(&history(r), usize::from(w)), t.spark(0)))
            .collect();
    }
    f
}

/// Draws the responders of `group` (`elapsed`: the run's time, for how
/// long a silent one has been).
pub fn render(
    f: &mut Frame,
    area: Rect,
    board: &ResponderBoard,
    group: &str,
    elapsed: Duration,
    t: Theme,
) {
    let visible = usize::from(area.height.saturating_sub(3)).max(1);
    // By name (then address), as the report lists them: the order they
    // were first heard in is the network's race.
    let mut rows: Vec<(usize, &ResponderRow)> = board.rows.iter().enumerate().collect();
    rows.sort_by_cached_key(|&(i, r)| (r.name.clone(), r.address, i));
    rows.truncate(visible);
    let fitted = fitted(&rows, elapsed, area.width.saturating_sub(2), t);
    let silent = board.rows.iter().filter(|r| r.silent()).count();
    let mut title = vec![Span::styled(
        match (board.rows.len(), rows.len()) {
            (0, _) => format!(" Responders of {group} · none yet "),
            (n, shown) if shown < n => format!(" Responders of {group} · {shown} of {n} "),
            (n, _) => format!(" Responders of {group} · {n} "),
        },
        t.title(),
    )];
    if silent > 0 {
        title.push(Span::styled(format!("· {silent} silent "), t.bad()));
    }
    if !fitted.hidden.is_empty() {
        title.push(Span::styled(
            format!("wider shows: {} ", fitted.hidden.join(", ")),
            t.dim(),
        ));
    }
    let table = fitted
        .table(t.title())
        .block(Block::bordered().title(Line::from(title)));
    f.render_widget(table, area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use synapse_engine::ResponderEntry;
    use synapse_stats::{Record, RecordKind};

    fn board() -> ResponderBoard {
        let mut b = ResponderBoard::default();
        for (i, name) in ["r1", "r2"].iter().enumerate() {
            b.name(&ResponderEntry {
                index: i as u32,
                name: Some(name.parse().unwrap()),
                address: format!("10.78.0.{}:8080", i + 2).parse().unwrap(),
            });
        }
        for seq in 0..40u64 {
            b.ingest(
                0,
                &Record::sample(seq, seq * 1_000_000, 50_000 + seq * 100, false),
            );
            if seq < 20 {
                b.ingest(1, &Record::sample(seq, seq * 1_000_000_000, 60_000, false));
            } else {
                b.ingest(
                    1,
                    &Record::event(RecordKind::Lost, seq, seq * 1_000_000, false),
                );
            }
            if seq % 10 == 9 {
                b.close_window();
            }
        }
        b
    }

    fn drawn(b: &ResponderBoard, width: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(width, 6)).unwrap();
        term.draw(|f| {
            render(
                f,
                f.area(),
                b,
                "239.1.2.3:8080",
                Duration::from_millis(40_000),
                Theme::new(false),
            )
        })
        .unwrap();
        let buf = term.backend().buffer();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn each_responder_has_its_row_and_a_silent_one_says_since_when() {
        let text = drawn(&board(), 100);
        assert!(
            text.contains("Responders of 239.1.2.3:8080 · 2 · 1 silent"),
            "{text}"
        );
        let r1 = text
            .lines()
            .find(|l| l.contains("r1 10.78.0.2:8080"))
            .unwrap();
        assert!(
            r1.contains("40") && r1.contains("answering") && r1.contains("0.0 %"),
            "{r1}"
        );
        let r2 = text
            .lines()
            .find(|l| l.contains("r2 10.78.0.3:8080"))
            .unwrap();
        // Its last answer at 19 s, the run at 40 s.
        assert!(
            r2.contains("silent 21.0 s") && r2.contains("50.0 %"),
            "{r2}"
        );
        assert!(r1.contains('█') || r1.contains('▁'), "a sparkline: {r1}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_narrow_pane_leaves_out_the_sparkline_first_and_says_so() {
        let text = drawn(&board(), 70);
        assert!(text.contains("wider shows: p99, media"), "{text}");
        assert!(
            !text.contains('▄') && !text.contains('█'),
            "no sparkline: {text}"
        );
        assert!(text.contains("silent 21.0 s"), "{text}");
    }
}
