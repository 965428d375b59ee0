//! The round-trip split, live: p50 and p99 of each measured segment since
//! the last clear, under the packet path; and the per-segment times the
//! OSI stacks show in place of decoration.

use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use synapse_engine::StampingInfo;
use synapse_stats::Segment;
use synapse_stats::{LiveStats, SegmentFigures};
use synapse_units::format_ns;

/// The live figures, per segment, when the run splits round trips.
pub fn figures(live: &LiveStats) -> Vec<SegmentFigures> {
    live.total()
        .breakdown()
        .map(|b| b.figures())
        .unwrap_or_default()
}

/// TCP: how the far kernel's ACKs of the stamped requests came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acks {
    /// On their own, before the reply: the kernel RTT is measured.
    pub separate: u64,
    /// On the reply (the far side answered within its delayed-ACK time):
    /// no kernel RTT, and no far side's share.
    pub piggybacked: u64,
}

/// The ACKs so far, when the run is TCP with kernel stamps.
pub fn acks(live: &LiveStats) -> Option<Acks> {
    let b = live.total().breakdown()?;
    b.segments().contains(Segment::KernelRtt).then(|| Acks {
        separate: b.histogram(Segment::KernelRtt).map_or(0, |h| h.len()),
        piggybacked: b.piggybacked(),
    })
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
        "kernel_rtt" => "ACK RTT",
        "far_share" => "far side",
        "to_wire" => "⌁→wire",
        _ => "⌁NIC↔NIC",
    }
}

/// Width of one segment's column, separator included.
const CELL: usize = 10;
/// Width of the row label (` p50`).
const LABEL: usize = 4;

/// The widest the notes beside the columns get (`   1 packet in 256,
/// since clear`).
const NOTES: usize = 34;

/// The width the table needs to show every column and note whole.
pub fn natural_width(figures: &[SegmentFigures]) -> u16 {
    (LABEL + figures.len() * CELL + NOTES) as u16
}

/// Three lines: segment names, then p50 and p99 under each, in columns;
/// or why there is no split. Columns that do not fit are left out whole.
pub fn render(
    f: &mut Frame,
    area: Rect,
    figures: &[SegmentFigures],
    acks: Option<Acks>,
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
    // TCP whose every ACK rode on the reply: the kernel RTT's column says
    // so, in place of two empty ones (the far side's share goes).
    let rode_only = acks.is_some_and(|a| a.separate == 0 && a.piggybacked > 0);
    let figures: Vec<&SegmentFigures> = figures
        .iter()
        .filter(|f| !(rode_only && f.segment == Segment::FarShare.key()))
        .collect();
    let width = area.width as usize;
    let shown = figures.len().min(width.saturating_sub(LABEL) / CELL);
    let figures = &figures[..shown];
    let value = |f: &SegmentFigures, ns: Option<u64>| match ns {
        Some(ns) => format_ns(ns as f64),
        None if rode_only && f.segment == Segment::KernelRtt.key() => "on reply".into(),
        None => "—".into(),
    };
    let mut head = vec![Span::styled(format!("{:<LABEL$}", ""), t.dim())];
    // A NIC's clock stamped the segments marked ⌁ (and their headings
    // stand out).
    head.extend(figures.iter().map(|f| {
        let style = if f.hardware { t.key() } else { t.dim() };
        Span::styled(format!("{:>CELL$}", heading(f.segment)), style)
    }));
    let nic = figures.iter().any(|f| f.hardware);
    let row = |label: &str, pick: fn(&SegmentFigures) -> Option<u64>| {
        let mut spans = vec![Span::styled(format!("{label:<LABEL$}"), t.dim())];
        spans.extend(
            figures
                .iter()
                .map(|f| Span::raw(format!("{:>CELL$}", value(f, pick(f))))),
        );
        spans
    };
    let mut p50 = row(" p50", |f| f.p50_ns);
    let mut p99 = row(" p99", |f| f.p99_ns);
    // Where the stamps came from, and any gaps, where there is room.
    let used = LABEL + shown * CELL;
    let missing = figures.iter().map(|f| f.missing).max().unwrap_or(0);
    let notes = [
        (
            &mut head,
            format!(
                "   {} stamps{}",
                info.source.name(),
                if nic { ", ⌁ by the NIC" } else { "" }
            ),
        ),
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
            match acks {
                _ if missing > 0 => format!("   {missing} lacked a stamp"),
                Some(a) if a.piggybacked > 0 => {
                    let all = a.piggybacked + a.separate;
                    format!("   ACK on reply: {} of {all}", a.piggybacked)
                }
                _ => String::new(),
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
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use synapse_engine::Points;
    use synapse_engine::capabilities::Source;
    use synapse_stats::{Record, SegmentSet, Shape};

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
        term.draw(|f| render(f, f.area(), figures, None, stamping, Theme::new(false)))
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

    /// A TCP live split: `separate` requests whose far kernel's ACK came
    /// on its own, then `rode` whose ACK rode on the reply.
    fn tcp_live(separate: u64, rode: u64) -> LiveStats {
        let mut live = LiveStats::new();
        live.use_shape(Shape {
            segments: SegmentSet::for_run(true, false, false).with_tcp(),
            ..Shape::default()
        });
        for seq in 0..separate + rode {
            let split = Points {
                t1_user: Some(0),
                t1_driver: Some(4_000),
                t1_ack: Some(14_000),
                ack_with_reply: Some(seq >= separate),
                t4_driver: Some(60_000),
                t4_user: Some(70_000),
                ..Points::default()
            }
            .split();
            live.ingest(&Record::sample(seq, 0, 70_000, false).with_split(split));
        }
        live
    }

    #[test]
    fn tcp_shows_the_kernel_rtt_and_says_when_acks_rode_on_the_reply() {
        let info = StampingInfo {
            segments: SegmentSet::for_run(true, false, false).with_tcp(),
            ..info(Source::Software)
        };
        let live = tcp_live(1, 3);
        let (figs, acks) = (figures(&live), super::acks(&live));
        assert_eq!(
            acks,
            Some(Acks {
                separate: 1,
                piggybacked: 3
            })
        );
        let shown = |figs: &[SegmentFigures], acks, width| {
            let mut term = Terminal::new(TestBackend::new(width, 3)).unwrap();
            term.draw(|f| render(f, f.area(), figs, acks, Some(&info), Theme::new(false)))
                .unwrap();
            let buf = term.backend().buffer().clone();
            (0..3)
                .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect::<String>())
                .map(|l| l.trim_end().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            shown(&figs, acks, 100),
            [
                "          send   network   ACK RTT  far side   receive   software stamps",
                " p50    4.0 µs   56.0 µs   10.0 µs   46.0 µs   10.0 µs   since start or clear",
                " p99    4.0 µs   56.0 µs   10.0 µs   46.0 µs   10.0 µs   ACK on reply: 3 of 4",
            ]
        );
        // Every ACK on the reply: one column says so, none is left blank,
        // and at 80 columns the receive path still fits.
        let live = tcp_live(0, 4);
        let (figs, acks) = (figures(&live), super::acks(&live));
        assert_eq!(
            shown(&figs, acks, 46),
            [
                "          send   network   ACK RTT   receive",
                " p50    4.0 µs   56.0 µs  on reply   10.0 µs",
                " p99    4.0 µs   56.0 µs  on reply   10.0 µs",
            ]
        );
        // UDP has no ACKs to speak of.
        assert_eq!(super::acks(&LiveStats::new()), None);
    }

    #[test]
    fn segments_a_nic_stamped_are_marked() {
        let info = StampingInfo {
            segments: SegmentSet::for_run(true, false, true).with_wire(true),
            ..info(Source::Hardware)
        };
        let mut live = LiveStats::new();
        live.use_shape(Shape {
            segments: info.segments,
            ..Shape::default()
        });
        let split = Points {
            t1_user: Some(0),
            t1_driver: Some(4_000),
            t1_wire: Some(19_000),
            t1_hw: Some(500_000),
            t4_hw: Some(540_000),
            t4_driver: Some(60_000),
            t4_user: Some(70_000),
            ..Points::default()
        }
        .split();
        live.ingest(&Record::sample(1, 0, 70_000, false).with_split(split));
        assert_eq!(
            text(&figures(&live), Some(&info), 100)[..2],
            [
                "          send   network    ⌁→wire   receive  ⌁NIC↔NIC   hardware stamps, ⌁ by the NIC",
                " p50    4.0 µs   56.0 µs   15.0 µs   10.0 µs   40.0 µs   since start or clear",
            ]
        );
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
