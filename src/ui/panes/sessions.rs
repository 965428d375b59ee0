//! The reflector's clients: active sessions first, then recently ended ones.

use crate::ui::app::ServerView;
use crate::ui::columns::{Column, fit};
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::Block;
use synapse_engine::{Refusals, SessionInfo};
use synapse_units::group_thousands;

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

/// Draws the client table. Columns are as wide as their widest cell;
/// a narrow terminal leaves out bytes, then the last-seen time, and says so
/// in the title. `running`: the reflector listens (else its title says
/// so, rather than telling clients where to send).
pub fn render(f: &mut Frame, area: Rect, v: &ServerView, running: bool, t: Theme) {
    let active = v
        .active
        .iter()
        .map(|s| (s, Span::styled("active", t.good())));
    let ended = v.ended.iter().map(|s| (s, Span::styled("ended", t.dim())));
    let total = v.active.len() + v.ended.len();
    // Rows that fit under the header; the table scrolls through the rest.
    let visible = usize::from(area.height.saturating_sub(3)).max(1);
    let first = v.scroll.min(total.saturating_sub(visible));
    let shown: Vec<_> = active.chain(ended).skip(first).take(visible).collect();
    let column = |header, cell: &dyn Fn(&SessionInfo) -> Span<'static>| {
        Column::new(header, shown.iter().map(|(s, _)| cell(s)).collect())
    };
    let columns = vec![
        column("client", &|s| Span::raw(s.peer.to_string())).min_width(21),
        column("packets", &|s| Span::raw(group_thousands(s.packets))).min_width(7),
        column("bytes", &|s| Span::raw(group_thousands(s.bytes)))
            .min_width(9)
            .drop_rank(2),
        column("refused", &|s| refused(&s.refused, t)),
        column("last seen", &|s| Span::raw(ago(v.now_ns, s.last_seen_ns))).drop_rank(1),
        Column::new("state", shown.iter().map(|(_, st)| st.clone()).collect()),
    ];
    // Inside the block's borders.
    let fitted = fit(columns, area.width.saturating_sub(2));
    let title = if shown.is_empty() && !running {
        " Clients · not listening (space starts the reflector) ".to_string()
    } else if shown.is_empty() {
        match v.reach.first() {
            Some(reach) => format!(" Clients · none yet: synapse client {reach} "),
            None => format!(" Clients · none yet: listening on {} ", v.bind),
        }
    } else if total > visible {
        format!(
            " Clients · {}–{} of {} (↑ ↓ PgUp PgDn) ",
            first + 1,
            (first + visible).min(total),
            group_thousands(total as u64)
        )
    } else {
        " Clients ".to_string()
    };
    let mut title = vec![Span::styled(title, t.title())];
    if !fitted.hidden.is_empty() {
        title.push(Span::styled(
            format!("wider shows: {} ", fitted.hidden.join(", ")),
            t.dim(),
        ));
    }
    let table = fitted
        .table(t.title())
        .block(Block::bordered().title(ratatui::text::Line::from(title)));
    f.render_widget(table, area);
}
