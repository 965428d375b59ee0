//! The round-trip split, live: p50 and p99 of each measured segment since
//! the last clear, under the packet path; and the per-segment times the
//! OSI stacks show in place of decoration.

use crate::engine::StampingInfo;
use crate::stats::Segment;
use crate::stats::{LiveStats, SegmentFigures};
use crate::ui::theme::Theme;
use crate::units::format_ns;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// The live figures, per segment, when the run splits round trips.
pub fn figures(live: &LiveStats) -> Vec<SegmentFigures> {
    live.total()
        .breakdown()
        .map(|b| b.figures())
        .unwrap_or_default()
}

/// A segment's median, formatted, or `None` when not measured yet.
pub fn median(figures: &[SegmentFigures], seg: Segment) -> Option<String> {
    figures
        .iter()
        .find(|f| f.segment == seg.key())
        .and_then(|f| f.p50_ns)
        .map(|ns| format_ns(ns as f64))
}

fn heading(segment: &str) -> &'static str {
    match segment {
        "send_path" => "send",
        "network" => "network",
        "server_dwell" => "dwell",
        "receive_path" => "receive",
        _ => "NIC↔NIC",
    }
}

/// Width of one segment's column, separator included.
const CELL: usize = 10;
/// Width of the row label (` p50`).
const LABEL: usize = 4;

/// Three lines: segment names, then p50 and p99 under each, in columns;
/// or why there is no split. Columns that do not fit are left out whole.
pub fn render(
    f: &mut Frame,
    area: Rect,
    figures: &[SegmentFigures],
    stamping: Option<&StampingInfo>,
    t: Theme,
) {
    let Some(info) = stamping else {
        return;
    };
    if figures.is_empty() {
        let why = " no split: user-space timestamps only (--timestamps auto or software)";
        f.render_widget(Paragraph::new(Line::styled(why, t.dim())), area);
        return;
    }
    let width = area.width as usize;
    let shown = figures.len().min(width.saturating_sub(LABEL) / CELL);
    let figures = &figures[..shown];
    let value = |ns: Option<u64>| ns.map_or_else(|| "—".into(), |ns| format_ns(ns as f64));
    let mut head = vec![Span::styled(format!("{:<LABEL$}", ""), t.dim())];
    head.extend(
        figures
            .iter()
            .map(|f| Span::styled(format!("{:>CELL$}", heading(f.segment)), t.dim())),
    );
    let row = |label: &str, pick: fn(&SegmentFigures) -> Option<u64>| {
        let mut spans = vec![Span::styled(format!("{label:<LABEL$}"), t.dim())];
        spans.extend(
            figures
                .iter()
                .map(|f| Span::raw(format!("{:>CELL$}", value(pick(f))))),
        );
        spans
    };
    let mut p50 = row(" p50", |f| f.p50_ns);
    let mut p99 = row(" p99", |f| f.p99_ns);
    // Where the stamps came from, and any gaps, where there is room.
    let used = LABEL + shown * CELL;
    let missing = figures.iter().map(|f| f.missing).max().unwrap_or(0);
    let notes = [
        (&mut head, format!("   {} stamps", info.source.name())),
        (
            &mut p50,
            if info.tx_every > 1 {
                format!("   1 packet in {}, since clear", info.tx_every)
            } else {
                "   since start or clear".to_string()
            },
        ),
        (
            &mut p99,
            if missing > 0 {
                format!("   {missing} lacked a stamp")
            } else {
                String::new()
            },
        ),
    ];
    for (line, note) in notes {
        if used + note.chars().count() <= width {
            line.push(Span::styled(note, t.dim()));
        }
    }
    let lines = vec![Line::from(head), Line::from(p50), Line::from(p99)];
    f.render_widget(Paragraph::new(lines), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Points;
    use crate::engine::capabilities::Source;
    use crate::stats::{Record, SegmentSet, Shape};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn info(source: Source) -> StampingInfo {
        StampingInfo {
            source,
            segments: SegmentSet::for_run(source != Source::User, false, false),
            ..StampingInfo::default()
        }
    }

    fn text(
        figures: &[SegmentFigures],
        stamping: Option<&StampingInfo>,
        width: u16,
    ) -> Vec<String> {
        let mut term = Terminal::new(TestBackend::new(width, 3)).unwrap();
        term.draw(|f| render(f, f.area(), figures, stamping, Theme::new(false)))
            .unwrap();
        let buf = term.backend().buffer();
        (0..3)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn measured_segments_show_p50_and_p99_and_gaps_are_counted() {
        let info = info(Source::Software);
        let mut live = LiveStats::new();
        live.use_shape(Shape {
            segments: info.segments,
            ..Shape::default()
        });
        let split = |recv: Option<u64>| {
            Points {
                t1_user: Some(0),
                t1_driver: Some(4_000),
                t4_driver: recv.map(|_| 60_000),
                t4_user: recv.map(|r| 60_000 + r),
                ..Points::default()
            }
            .split()
        };
        live.ingest(&Record::sample(1, 0, 70_000, false).with_split(split(Some(10_000))));
        live.ingest(&Record::sample(2, 0, 70_000, false).with_split(split(None)));
        let figs = figures(&live);
        assert_eq!(
            text(&figs, Some(&info), 90),
            [
                "          send   network   receive   software stamps",
                " p50    4.0 µs   56.0 µs   10.0 µs   since start or clear",
                " p99    4.0 µs   56.0 µs   10.0 µs   1 lacked a stamp",
            ]
        );
        // Sampled TX stamps say how the split was sampled.
        let sampled = StampingInfo {
            tx_every: 256,
            follow_up: false,
            ..info.clone()
        };
        assert_eq!(
            text(&figs, Some(&sampled), 90)[1],
            " p50    4.0 µs   56.0 µs   10.0 µs   1 packet in 256, since clear"
        );
        // Narrow: whole columns and notes go, nothing is cut in half.
        assert_eq!(
            text(&figs, Some(&info), 30),
            [
                "          send   network",
                " p50    4.0 µs   56.0 µs",
                " p99    4.0 µs   56.0 µs"
            ]
        );
        assert_eq!(median(&figs, Segment::Send).as_deref(), Some("4.0 µs"));
        assert_eq!(median(&figs, Segment::Dwell), None);
    }

    #[test]
    fn without_kernel_stamps_it_says_why_and_before_a_run_nothing() {
        let live = LiveStats::new();
        assert_eq!(
            text(&figures(&live), Some(&info(Source::User)), 90)[0],
            " no split: user-space timestamps only (--timestamps auto or software)"
        );
        assert_eq!(text(&[], None, 90), ["", "", ""]);
    }
}
