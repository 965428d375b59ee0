//! The agent's live table: one row per peer (p50, p99, loss, |IPDV| p99,
//! the segment split and a sparkline of past windows' medians), under a
//! header that says who measures, how, and where the metrics are.

use super::window::Figures;
use crate::ui::columns::{Column, Fitted, fit, sparkline};
use crate::ui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};
use synapse_stats::Segment;
use synapse_units::{count_of, format_ns, group_thousands};

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
    /// With `--paths`: the last window's worst path, its port and loss.
    pub worst_path: Option<(u16, Option<f64>)>,
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
    /// The first row shown (the table scrolls when the peers outnumber
    /// its rows).
    pub offset: usize,
    /// What the last reload came to (`r`), while it is news.
    pub news: Option<String>,
    /// The keys and what the table shows, over it (`?`).
    pub help: bool,
    /// `--trace-on-loss` is on: the key `t` shows the first row's last trace.
    pub traces: bool,
    /// The trace shown (key `t`): a title and its report's lines.
    pub trace: Option<(String, Vec<String>)>,
}

/// How the table is scrolled: a key's move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scroll {
    /// One row up (↑).
    Up,
    /// One row down (↓).
    Down,
    /// A page up (PgUp).
    PageUp,
    /// A page down (PgDn).
    PageDown,
    /// To the first row (Home).
    Home,
    /// To the last page (End).
    End,
}

/// The first row shown after `how`, with `shown` rows on screen out of
/// `total`: never past the last page.
pub fn scrolled(offset: usize, how: Scroll, shown: usize, total: usize) -> usize {
    let last = total.saturating_sub(shown.max(1));
    let page = shown.max(1);
    let to = match how {
        Scroll::Up => offset.saturating_sub(1),
        Scroll::Down => offset + 1,
        Scroll::PageUp => offset.saturating_sub(page),
        Scroll::PageDown => offset + page,
        Scroll::Home => 0,
        Scroll::End => last,
    };
    to.min(last)
}

/// A segment's name in a narrow column.
#[cfg(test)]
fn short_name(s: Segment) -> &'static str {
    match s {
        Segment::Send => "send",
        Segment::Network => "net",
        Segment::ToWire => "wire",
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

/// The history column shows at most this many windows, and is left out
/// below this many.
const HISTORY_SHOWN: u16 = 24;
const HISTORY_MIN: u16 = 8;
const HISTORY: &str = "p50 history";

fn loss_cell(f: &Figures, theme: Theme) -> Span<'static> {
    if let Some(why) = super::health::short_reason(f) {
        // A peer that answered nothing (all lost): why, in the loss's place.
        return Span::styled(format!("✗ {why}"), theme.bad());
    }
    match f.loss_percent {
        None => Span::raw("—"),
        Some(l) => {
            let style = if l >= 1.0 {
                theme.bad()
            } else if l > 0.0 {
                theme.warn()
            } else {
                theme.good()
            };
            Span::styled(format!("{l:.2} %"), style)
        }
    }
}

/// Every column the table can show, in order; when the terminal is
/// narrow the history goes first, then |IPDV|, the split, the address.
/// The history's cells are drawn once its width is known.
fn columns(view: &TableView, theme: Theme) -> Vec<Column> {
    let cells = |cell: &dyn Fn(&PeerRow) -> Span<'static>| view.rows.iter().map(cell).collect();
    let rtt = |v: Option<u64>| Span::styled(ns(v), v.map_or(theme.dim(), |v| theme.rtt(v)));
    vec![
        Column::new("Peer", cells(&|r| Span::raw(r.name.clone()))),
        Column::new(
            "Address",
            cells(&|r| Span::styled(format!("{} {}", r.address, r.protocol), theme.dim())),
        )
        .drop_rank(1),
        Column::new("p50", cells(&|r| Span::raw(ns(r.figures.rtt_p50_ns)))).min_width(8),
        Column::new("p99", cells(&|r| rtt(r.figures.rtt_p99_ns))).min_width(8),
        Column::new("Loss", cells(&|r| loss_cell(&r.figures, theme))).min_width(8),
        Column::new(
            "|IPDV| p99",
            cells(&|r| Span::raw(ns(r.figures.ipdv_p99_ns))),
        )
        .drop_rank(3),
        Column::new(SPLIT_HEADER, cells(&|r| Span::raw(split(&r.figures)))).drop_rank(2),
        Column::new(WORST_PATH, cells(&|r| worst_path_cell(r, theme))).drop_rank(3),
        Column::new(HISTORY, Vec::new())
            .drop_rank(4)
            .min_width(HISTORY_MIN)
            .grow(HISTORY_SHOWN - HISTORY_MIN),
    ]
}

/// The paths column's header (shown with `--paths`).
const WORST_PATH: &str = "worst path";

/// `:40002 25.0 %`: the last window's lossiest (else slowest) path.
fn worst_path_cell(r: &PeerRow, theme: Theme) -> Span<'static> {
    match r.worst_path {
        None => Span::raw("—"),
        Some((port, loss)) => {
            let style = if loss.unwrap_or(0.0) > 0.0 {
                theme.warn()
            } else {
                theme.dim()
            };
            let loss = loss.map_or_else(|| "—".into(), |l| format!("{l:.1} %"));
            Span::styled(format!(":{port} {loss}"), style)
        }
    }
}

/// The split column's header: [`SPLIT`]'s short names.
const SPLIT_HEADER: &str = "send / net / dwell / recv";

/// The columns that fit `width`, the history drawn to its width.
fn fitted(view: &TableView, width: u16, theme: Theme) -> Fitted {
    let mut all = columns(view, theme);
    if view.rows.iter().all(|r| r.worst_path.is_none()) {
        all.retain(|c| c.header != WORST_PATH);
    }
    let mut f = fit(all, width);
    if let Some(w) = f.width_of(HISTORY)
        && let Some(c) = f.columns.iter_mut().find(|c| c.header == HISTORY)
    {
        c.cells = view
            .rows
            .iter()
            .map(|r| Span::styled(sparkline(&r.history, usize::from(w)), theme.spark(0)))
            .collect();
    }
    f
}

/// `parts` joined by `sep` into as few lines of at most `width` as they
/// fit in whole.
fn wrap_parts(parts: &[Line<'static>], sep: &'static str, width: u16) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = Vec::new();
    let mut line = Line::default();
    for part in parts {
        let joined = line.width() + sep.len() + part.width();
        if !line.spans.is_empty() && joined > usize::from(width) {
            lines.push(std::mem::take(&mut line));
        }
        let lead = if line.spans.is_empty() { " " } else { sep };
        line.spans.push(Span::raw(lead));
        line.spans.extend(part.spans.iter().cloned());
    }
    lines.push(line);
    lines
}

/// The lines above the table: who measures, how, where the metrics are,
/// and what the figures cover; wrapped, never cut.
fn header_lines(view: &TableView, width: u16, theme: Theme) -> Vec<Line<'static>> {
    let parts = [
        Span::styled(format!("Synapse agent '{}'", view.source), theme.title()),
        Span::raw(count_of(view.rows.len() as u64, "peer")),
        Span::raw(view.reflect.clone()),
        Span::raw(format!("timestamps {}", view.timestamps)),
        Span::raw(format!("metrics on http://{}/metrics", view.metrics)),
    ];
    let mut lines = wrap_parts(&parts.map(Line::from), " · ", width);
    let note = [
        format!(
            "figures over the last whole {} s window (the first as it fills)",
            view.window_s
        ),
        format!(
            "history: median per window, last {}",
            super::window::HISTORY.min(HISTORY_SHOWN as usize)
        ),
    ];
    let note = note.map(|n| Line::from(Span::styled(n, theme.dim())));
    lines.extend(wrap_parts(&note, "; ", width));
    lines
}

/// Draws the whole view into `area` of `buf`: the rows from
/// `view.offset` that fit (the offset kept within the last page). Returns
/// how many rows were shown, for the next scroll.
pub fn render(view: &TableView, area: Rect, buf: &mut Buffer, theme: Theme) -> usize {
    let area = match &view.trace {
        Some(trace) => render_trace(trace, area, buf, theme),
        None => area,
    };
    let mut fitted = fitted(view, area.width, theme);
    let head_lines = header_lines(view, area.width, theme);
    // The footer's line count does not depend on which rows are shown.
    let probe = footer(view, &fitted.hidden, (0, 0), theme);
    let foot_height = wrap_parts(&probe, "   ", area.width).len() as u16;
    let head_height = head_lines.len() as u16;
    // The body: a top border and the column headers, then the rows.
    let room = area
        .height
        .saturating_sub(head_height + foot_height + 2)
        .max(1);
    let total = view.rows.len();
    let shown = usize::from(room).min(total);
    let offset = view.offset.min(total.saturating_sub(shown));
    for c in &mut fitted.columns {
        c.cells = c.cells.drain(..).skip(offset).take(shown).collect();
    }
    let foot = footer(view, &fitted.hidden, (offset, shown), theme);
    let foot_lines = wrap_parts(&foot, "   ", area.width);
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(head_height),
        Constraint::Min(3),
        Constraint::Length(foot_lines.len() as u16),
    ])
    .areas(area);
    Paragraph::new(head_lines).render(head, buf);
    fitted
        .table(theme.title())
        .block(Block::default().borders(Borders::TOP))
        .render(body, buf);
    Paragraph::new(foot_lines).render(foot, buf);
    if view.help {
        help(area, buf, theme);
    }
    shown
}

/// What `?` shows over the table: the keys, and how to read a row.
const HELP: [(&str, &str); 9] = [
    ("q, Esc", "quit, printing a summary of every peer"),
    ("r", "reload the configuration (as SIGHUP does headless)"),
    ("↑↓ PgUp PgDn", "scroll the peers"),
    ("Home End", "the first, the last page"),
    ("t", "the first row's last trace (--trace-on-loss)"),
    ("?", "this help (any key closes it)"),
    ("p50, p99", "round trip over the last window"),
    (
        "Loss",
        "no timely reply; when none came, why: the path's error, wrong protocol, no reply",
    ),
    ("split", "the round trip's segments (kernel stamps, STAMP)"),
];

/// Draws [`HELP`] in a box in the middle of `area`.
fn help(area: Rect, buf: &mut Buffer, theme: Theme) {
    let key_width = HELP
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let lines: Vec<Line<'static>> = HELP
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!(" {k:<key_width$}  "), theme.key()),
                Span::raw((*what).to_string()),
            ])
        })
        .collect();
    let width = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 3;
    let (w, h) = (
        width.min(area.width),
        (lines.len() as u16 + 2).min(area.height),
    );
    let at = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    ratatui::widgets::Clear.render(at, buf);
    Paragraph::new(lines)
        .block(Block::bordered().title(Span::styled(" keys ", theme.title())))
        .render(at, buf);
}

/// The trace pane at the bottom of `area` (at most half of it): its
/// title, then the report's lines. Returns what is left above it.
fn render_trace(trace: &(String, Vec<String>), area: Rect, buf: &mut Buffer, theme: Theme) -> Rect {
    let (title, lines) = trace;
    let height = (lines.len() as u16 + 1).min(area.height / 2);
    let [rest, pane] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(height)]).areas(area);
    let text: Vec<Line> = lines.iter().map(|l| Line::raw(l.clone())).collect();
    Paragraph::new(text)
        .block(
            Block::default()
                .borders(Borders::TOP)
                .title(Span::styled(title.clone(), theme.title())),
        )
        .render(pane, buf);
    rest
}

/// The keys, which rows are shown when not all are, what went wrong, and
/// which columns a wider terminal shows, as parts to wrap. `(offset,
/// shown)`: the rows on screen.
fn footer(
    view: &TableView,
    hidden: &[&str],
    (offset, shown): (usize, usize),
    theme: Theme,
) -> Vec<Line<'static>> {
    let key = |k: &'static str, what: &'static str| {
        Line::from(vec![Span::styled(k, theme.key()), Span::raw(what)])
    };
    let mut parts = vec![
        key("q", " quit"),
        key("r", " reload the configuration"),
        key("?", " help"),
    ];
    if let Some(news) = &view.news {
        parts.push(Line::styled(news.clone(), theme.warn()));
    }
    if view.traces {
        parts.push(key("t", " the first row's last trace"));
    }
    let total = view.rows.len();
    if shown < total {
        parts.push(key("↑↓ PgUp PgDn Home End", " scroll"));
        parts.push(Line::raw(format!(
            "rows {}–{} of {}",
            group_thousands(offset as u64 + 1),
            group_thousands((offset + shown) as u64),
            group_thousands(total as u64)
        )));
    }
    if view.overflow > 0 || view.reload_errors > 0 {
        parts.push(Line::styled(
            format!(
                "{} missed, {} refused",
                count_of(view.overflow, "record"),
                count_of(view.reload_errors, "reload")
            ),
            theme.warn(),
        ));
    }
    if !hidden.is_empty() {
        parts.push(Line::styled(
            format!("wider shows: {}", hidden.join(", ")),
            theme.dim(),
        ));
    }
    parts
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
                    worst_path: None,
                },
                PeerRow {
                    name: "gamma".into(),
                    address: "10.0.0.3".into(),
                    protocol: "echo",
                    figures: dead,
                    history: vec![None, None],
                    worst_path: None,
                },
            ],
            overflow: 0,
            reload_errors: 1,
            offset: 0,
            news: None,
            help: false,
            traces: false,
            trace: None,
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

    /// A peer that answers nothing says why in its loss cell; `?` draws the
    /// keys over the table; a reload's outcome is in the footer.
    #[test]
    fn a_down_peer_says_why_help_lists_the_keys_and_a_reload_is_news() {
        let mut v = view();
        v.rows[1].figures.last_error = Some(synapse_stats::PathError {
            kind: synapse_stats::PathErrorKind::HostUnreachable,
            from: "10.0.0.1".parse().ok(),
            mtu: None,
        });
        v.news = Some("reloaded: 2 peers".into());
        let area = Rect::new(0, 0, 140, 14);
        let mut buf = Buffer::empty(area);
        render(&v, area, &mut buf, Theme::new(false));
        let t = text(&buf);
        assert!(t.contains("✗ host unreachable"), "{t}");
        assert!(
            t.contains("? help") && t.contains("reloaded: 2 peers"),
            "{t}"
        );
        v.help = true;
        let mut buf = Buffer::empty(area);
        render(&v, area, &mut buf, Theme::new(false));
        let t = text(&buf);
        assert!(t.contains("┌ keys"), "{t}");
        assert!(t.contains("quit, printing a summary of every peer"), "{t}");
    }

    /// Key `t`: the first row's trace in a pane under the table, the key
    /// said in the footer; the table keeps its rows above.
    #[test]
    fn the_trace_pane_shows_under_the_table() {
        let mut v = view();
        v.traces = true;
        v.trace = Some((
            "Trace of beta from port 40000".into(),
            vec![
                " TTL  Address".into(),
                "   1  10.0.0.1  ICMP rate-limited: not loss".into(),
                "Suspect link: 10.0.0.1 (hop 1) → 10.0.0.2 (hop 2)".into(),
            ],
        ));
        let area = Rect::new(0, 0, 140, 16);
        let mut buf = Buffer::empty(area);
        render(&v, area, &mut buf, Theme::new(false));
        let t = text(&buf);
        let at = |s: &str| {
            t.lines()
                .position(|l| l.contains(s))
                .unwrap_or_else(|| panic!("{s}: {t}"))
        };
        assert!(at("beta") < at("Trace of beta from port 40000"), "{t}");
        assert!(at("Trace of beta") < at("Suspect link: 10.0.0.1"), "{t}");
        assert!(t.contains("t the first row's last trace"), "{t}");
        assert!(t.contains("gamma"), "both rows still shown: {t}");
    }

    /// A fleet as a user names it: longer names and addresses, an IPv6
    /// metrics address.
    fn fleet() -> TableView {
        let mut v = view();
        v.metrics = "[2001:db8::17]:9862".into();
        v.reflect = "answers on [2001:db8::17]:8080".into();
        v.rows[0].name = "db-primary".into();
        v.rows[0].address = "10.20.30.40:862".into();
        v.rows[1].name = "cache-7".into();
        v.rows[1].address = "[2001:db8::42]:8080".into();
        v
    }

    /// At 80, 120 and 200 columns: every header part whole (wrapped if
    /// need be), and in every row each shown column whole and apart.
    #[test]
    fn columns_stand_apart_and_nothing_is_cut_at_any_width() {
        use crate::ui::layout_check::{columns_apart, lines};
        let v = fleet();
        for width in [80u16, 120, 200] {
            let area = Rect::new(0, 0, width, 12);
            let mut buf = Buffer::empty(area);
            render(&v, area, &mut buf, Theme::new(false));
            let screen = lines(&buf);
            let all = screen.join("\n");
            for part in [
                "Synapse agent 'alpha'",
                "2 peers",
                "answers on [2001:db8::17]:8080",
                "timestamps software",
                "metrics on http://[2001:db8::17]:9862/metrics",
                "history: median per window, last 24",
            ] {
                assert!(all.contains(part), "{width}: {part:?} cut:\n{all}");
            }
            let f = fitted(&v, width, Theme::new(false));
            let (shown, hidden) = (&f.columns, &f.hidden);
            let heads: Vec<&str> = shown.iter().map(|c| c.header).collect();
            let at = |text: &str| screen.iter().find(|l| l.contains(text)).unwrap();
            columns_apart(at("Peer"), &heads).unwrap_or_else(|e| panic!("{width}: {e}"));
            for (i, r) in v.rows.iter().enumerate() {
                let cells: Vec<String> = shown
                    .iter()
                    .map(|c| c.cells[i].content.trim_end().to_string())
                    .collect();
                let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
                columns_apart(at(&r.name), &cells).unwrap_or_else(|e| panic!("{width}: {e}"));
            }
            for h in hidden {
                assert!(all.contains(h), "{width}: the footer names {h}:\n{all}");
            }
            match width {
                80 => assert_eq!(heads, ["Peer", "Address", "p50", "p99", "Loss"]),
                _ => assert!(hidden.is_empty(), "{width}: {hidden:?}"),
            }
        }
    }

    /// A thousand peers in 36 rows: the table shows a page, says which,
    /// and scrolls by row, page and to either end.
    #[test]
    fn a_thousand_peers_scroll_and_say_which_rows_are_shown() {
        let mut v = view();
        let row = v.rows[0].clone();
        v.rows = (0..1_000)
            .map(|i| PeerRow {
                name: format!("h{i}"),
                ..row.clone()
            })
            .collect();
        let area = Rect::new(0, 0, 120, 36);
        let screen = |v: &TableView| {
            let mut buf = Buffer::empty(area);
            let shown = render(v, area, &mut buf, Theme::new(false));
            (shown, text(&buf))
        };
        let (shown, first) = screen(&v);
        assert!(shown > 20 && shown < 36, "{shown}");
        let says = format!("rows 1–{shown} of 1,000");
        assert!(first.contains(&says), "{says} in\n{first}");
        assert!(first.contains("↑↓ PgUp PgDn Home End scroll"), "{first}");
        assert!(
            first.contains("h0 ") && !first.contains(&format!("h{shown} ")),
            "{first}"
        );
        let total = v.rows.len();
        assert_eq!(scrolled(0, Scroll::Down, shown, total), 1);
        assert_eq!(scrolled(0, Scroll::Up, shown, total), 0);
        assert_eq!(scrolled(0, Scroll::PageDown, shown, total), shown);
        assert_eq!(scrolled(shown, Scroll::PageUp, shown, total), 0);
        assert_eq!(scrolled(5, Scroll::Home, shown, total), 0);
        let last = scrolled(0, Scroll::End, shown, total);
        assert_eq!(last, 1_000 - shown);
        assert_eq!(
            scrolled(last, Scroll::Down, shown, total),
            last,
            "not past the end"
        );
        assert_eq!(scrolled(last, Scroll::PageDown, shown, total), last);
        v.offset = last;
        let (_, end) = screen(&v);
        let says = format!("rows {}–1,000 of 1,000", group_thousands(last as u64 + 1));
        assert!(end.contains(&says), "{says} in\n{end}");
        assert!(end.contains("h999 ") && !end.contains("h0 "), "{end}");
        // An offset past the end (peers gone since) shows the last page.
        v.offset = 5_000;
        assert!(screen(&v).1.contains("h999 "));
        // Few peers: no scrolling said.
        assert!(!screen(&view()).1.contains("rows "));
    }

    #[test]
    fn the_worst_path_column_shows_with_paths_only() {
        let mut v = view();
        let heads = |v: &TableView| -> Vec<&'static str> {
            fitted(v, 200, Theme::new(false))
                .columns
                .iter()
                .map(|c| c.header)
                .collect()
        };
        assert!(!heads(&v).contains(&WORST_PATH));
        v.rows[0].worst_path = Some((40_002, Some(25.0)));
        assert!(heads(&v).contains(&WORST_PATH));
        let area = Rect::new(0, 0, 200, 8);
        let mut buf = Buffer::empty(area);
        render(&v, area, &mut buf, Theme::new(false));
        assert!(text(&buf).contains(":40002 25.0 %"), "{}", text(&buf));
    }

    #[test]
    fn the_split_header_names_the_split_segments_in_order() {
        let names: Vec<&str> = SPLIT.iter().map(|s| short_name(*s)).collect();
        assert_eq!(SPLIT_HEADER, names.join(" / "));
    }
}
