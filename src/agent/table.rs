//! The agent's live table: one row per peer (p50, p99, loss, |IPDV| p99,
//! the segment split and a sparkline of past windows' medians), under a
//! header that says who measures, how, and where the metrics are.

use super::window::{Figures, HISTORY};
use crate::stats::Segment;
use crate::ui::theme::Theme;
use crate::units::{count_of, format_ns};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Widget};

/// What one row shows.
#[derive(Debug, Clone)]
pub struct PeerRow {
    /// The peer's name.
    pub name: String,
    /// Its address as configured.
    pub address: String,
    /// `echo` or `stamp`.
    pub protocol: &'static str,
    /// Its recent figures.
    pub figures: Figures,
    /// Past windows' medians, oldest first.
    pub history: Vec<Option<u64>>,
}

/// Everything the table shows.
#[derive(Debug, Clone)]
pub struct TableView {
    /// This agent's name.
    pub source: String,
    /// Where `/metrics` is.
    pub metrics: String,
    /// What answers the peers (or "answers nothing").
    pub reflect: String,
    /// The probes' clock.
    pub timestamps: String,
    /// The window, seconds.
    pub window_s: u64,
    /// One per peer.
    pub rows: Vec<PeerRow>,
    /// Records the table missed (a slow reader), and reloads refused.
    pub overflow: u64,
    /// Reloads refused since start.
    pub reload_errors: u64,
}

const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Past medians as block characters scaled to their own range; a window
/// without replies is a gap.
pub fn sparkline(history: &[Option<u64>], width: usize) -> String {
    let shown = &history[history.len().saturating_sub(width)..];
    let (lo, hi) = shown
        .iter()
        .flatten()
        .fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    shown
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(v) if hi == lo => BLOCKS[3],
            Some(v) => BLOCKS[((v - lo) * 7 / (hi - lo)) as usize],
        })
        .collect()
}

/// A segment's name in a narrow column.
fn short_name(s: Segment) -> &'static str {
    match s {
        Segment::Send => "send",
        Segment::Network => "net",
        Segment::KernelRtt => "kern",
        Segment::FarShare => "far",
        Segment::Dwell => "dwell",
        Segment::Receive => "recv",
        Segment::NicRoundTrip => "nic",
    }
}

fn ns(v: Option<u64>) -> String {
    v.map_or_else(|| "—".into(), |v| format_ns(v as f64))
}

/// The segments the split column shows, in its header's order.
const SPLIT: [Segment; 4] = [
    Segment::Send,
    Segment::Network,
    Segment::Dwell,
    Segment::Receive,
];

/// The split column's header.
fn split_header() -> String {
    let names: Vec<&str> = SPLIT.iter().map(|s| short_name(*s)).collect();
    names.join(" / ")
}

/// The segment split: each segment's mean in one unit (the largest's),
/// "—" for a segment not measured, and "—" alone when none was.
fn split(f: &Figures) -> String {
    let values: Vec<Option<u64>> = SPLIT
        .iter()
        .map(|s| f.segments_mean_ns[s.index()])
        .collect();
    let Some(top) = values.iter().flatten().max() else {
        return "—".into();
    };
    let (scale, unit) = match top {
        0..1_000 => (1.0, "ns"),
        1_000..1_000_000 => (1e3, "µs"),
        _ => (1e6, "ms"),
    };
    let parts: Vec<String> = values
        .iter()
        .map(|v| v.map_or_else(|| "—".into(), |v| format!("{:.1}", v as f64 / scale)))
        .collect();
    format!("{} {unit}", parts.join(" / "))
}

fn row<'a>(r: &'a PeerRow, theme: Theme) -> Row<'a> {
    let f = &r.figures;
    let loss = match f.loss_percent {
        None => Cell::from("—"),
        Some(l) => {
            let style = if l >= 1.0 {
                theme.bad()
            } else if l > 0.0 {
                theme.warn()
            } else {
                theme.good()
            };
            Cell::from(Span::styled(format!("{l:.2} %"), style))
        }
    };
    let p99 = Cell::from(Span::styled(
        ns(f.rtt_p99_ns),
        f.rtt_p99_ns.map_or(theme.dim(), |v| theme.rtt(v)),
    ));
    Row::new(vec![
        Cell::from(r.name.as_str()),
        Cell::from(Span::styled(
            format!("{} {}", r.address, r.protocol),
            theme.dim(),
        )),
        Cell::from(ns(f.rtt_p50_ns)),
        p99,
        loss,
        Cell::from(ns(f.ipdv_p99_ns)),
        Cell::from(split(f)),
        Cell::from(Span::styled(sparkline(&r.history, 24), theme.spark(0))),
    ])
}

/// Draws the whole view into `area` of `buf`.
pub fn render(view: &TableView, area: Rect, buf: &mut Buffer, theme: Theme) {
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let title = Line::from(vec![
        Span::styled(format!(" Synapse agent '{}' ", view.source), theme.title()),
        Span::raw(format!(
            "{} peers · {} · timestamps {} · metrics on http://{}/metrics",
            view.rows.len(),
            view.reflect,
            view.timestamps,
            view.metrics
        )),
    ]);
    let note = Line::styled(
        format!(
            " figures over the last whole {0} s window (the first as it fills); history: median per window, last {1}",
            view.window_s,
            HISTORY.min(24)
        ),
        theme.dim(),
    );
    Paragraph::new(vec![title, note]).render(head, buf);
    let header = Row::new([
        "Peer".to_string(),
        "Address".into(),
        "p50".into(),
        "p99".into(),
        "Loss".into(),
        "|IPDV| p99".into(),
        split_header(),
        "p50 history".into(),
    ])
    .style(theme.title());
    let widths = [
        Constraint::Length(14),
        Constraint::Length(22),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Min(20),
        Constraint::Length(24),
    ];
    let rows: Vec<Row> = view.rows.iter().map(|r| row(r, theme)).collect();
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .block(Block::default().borders(Borders::TOP))
        .render(body, buf);
    let mut hints = vec![Span::styled(" q", theme.key()), Span::raw(" quit   ")];
    hints.push(Span::styled("r", theme.key()));
    hints.push(Span::raw(" reload the configuration"));
    if view.overflow > 0 || view.reload_errors > 0 {
        hints.push(Span::styled(
            format!(
                "   {} missed, {} refused",
                count_of(view.overflow, "record"),
                count_of(view.reload_errors, "reload")
            ),
            theme.warn(),
        ));
    }
    Paragraph::new(Line::from(hints)).render(foot, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> TableView {
        let good = Figures {
            sent: 100,
            loss_percent: Some(0.0),
            rtt_p50_ns: Some(21_300),
            rtt_p99_ns: Some(48_900),
            ipdv_p99_ns: Some(12_100),
            segments_mean_ns: [
                Some(2_100),
                Some(15_000),
                None,
                None,
                Some(3_200),
                Some(1_000),
                None,
            ],
            ..Figures::default()
        };
        let dead = Figures {
            sent: 100,
            lost: 100,
            loss_percent: Some(100.0),
            ..Figures::default()
        };
        TableView {
            source: "alpha".into(),
            metrics: "127.0.0.1:9862".into(),
            reflect: "answers on 0.0.0.0:8080".into(),
            timestamps: "software".into(),
            window_s: 10,
            rows: vec![
                PeerRow {
                    name: "beta".into(),
                    address: "10.0.0.2".into(),
                    protocol: "stamp",
                    figures: good,
                    history: vec![Some(20_000), Some(22_000), None, Some(30_000)],
                },
                PeerRow {
                    name: "gamma".into(),
                    address: "10.0.0.3".into(),
                    protocol: "echo",
                    figures: dead,
                    history: vec![None, None],
                },
            ],
            overflow: 0,
            reload_errors: 1,
        }
    }

    fn text(buf: &Buffer) -> String {
        let a = buf.area;
        (0..a.height)
            .map(|y| {
                let line: String = (0..a.width).map(|x| buf[(x, y)].symbol()).collect();
                line.trim_end().to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_table_shows_each_peer_and_no_rtt_for_a_silent_one() {
        let area = Rect::new(0, 0, 140, 8);
        let mut buf = Buffer::empty(area);
        render(&view(), area, &mut buf, Theme::new(false));
        insta::assert_snapshot!(text(&buf));
    }

    #[test]
    fn sparklines_scale_to_their_range_and_leave_gaps() {
        assert_eq!(sparkline(&[Some(10), Some(20), None, Some(17)], 24), "▁█ ▅");
        assert_eq!(sparkline(&[Some(5), Some(5)], 24), "▄▄");
        assert_eq!(sparkline(&[Some(1), Some(2), Some(3)], 2), "▁█");
        assert_eq!(sparkline(&[], 24), "");
    }
}
