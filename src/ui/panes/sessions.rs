//! The reflector's clients: active sessions first, then recently ended ones.

use crate::engine::Refusals;
use crate::ui::app::ServerView;
use crate::ui::theme::Theme;
use crate::units::group_thousands;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Block, Row, Table};

fn ago(now_ns: u64, then_ns: u64) -> String {
    format!("{:.1} s ago", now_ns.saturating_sub(then_ns) as f64 / 1e9)
}

/// A session's refusals: `1,234 rate`, the reasons joined; dim `0`.
fn refused(r: &Refusals, t: Theme) -> Span<'static> {
    if r.total() == 0 {
        return Span::styled("0", t.dim());
    }
    Span::styled(r.to_string(), t.warn())
}

/// Draws the client table.
pub fn render(f: &mut Frame, area: Rect, v: &ServerView, t: Theme) {
    let header = Row::new([
        "client",
        "packets",
        "bytes",
        "refused",
        "last seen",
        "state",
    ])
    .style(t.title());
    let active = v
        .active
        .iter()
        .map(|s| (s, Span::styled("active", t.good())));
    let ended = v.ended.iter().map(|s| (s, Span::styled("ended", t.dim())));
    let total = v.active.len() + v.ended.len();
    // Rows that fit under the header; the table scrolls through the rest.
    let visible = usize::from(area.height.saturating_sub(3)).max(1);
    let first = v.scroll.min(total.saturating_sub(visible));
    let rows: Vec<Row> = active
        .chain(ended)
        .skip(first)
        .take(visible)
        .map(|(s, state)| {
            Row::new(vec![
                Span::raw(s.peer.to_string()),
                Span::raw(group_thousands(s.packets)),
                Span::raw(group_thousands(s.bytes)),
                refused(&s.refused, t),
                Span::raw(ago(v.now_ns, s.last_seen_ns)),
                state,
            ])
        })
        .collect();
    let empty = rows.is_empty();
    let widths = [
        Constraint::Min(24),
        Constraint::Length(14),
        Constraint::Length(16),
        Constraint::Length(22),
        Constraint::Length(12),
        Constraint::Length(8),
    ];
    let title = if empty {
        let reach = v.reach.first().cloned().unwrap_or_else(|| v.bind.clone());
        format!(" Clients · none yet: synapse client {reach} ")
    } else if total > visible {
        format!(
            " Clients · {}–{} of {total} (↑ ↓ PgUp PgDn) ",
            first + 1,
            (first + visible).min(total)
        )
    } else {
        " Clients ".to_string()
    };
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::bordered().title(Span::styled(title, t.title())));
    f.render_widget(table, area);
}
