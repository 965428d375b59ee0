//! The top line: who is measuring whom, where the thread runs, and state.

use crate::ui::app::{App, Role};
use crate::ui::panes::figures;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use synapse_engine::Transport;

/// Draws the header line.
pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme;
    let (what, cpu, busy, pace) = match app.role {
        Role::Client => {
            let c = &app.client.info;
            (
                format!("client → {}  from {}  ({})", c.target, c.local, c.mode),
                c.cpu,
                c.busy_poll,
                Some(match c.transport {
                    Transport::Tcp => format!("  TCP {}", figures::pace_label(c.pace)),
                    Transport::Udp => format!("  {}", figures::pace_label(c.pace)),
                }),
            )
        }
        Role::Server => {
            let s = &app.server;
            (format!("server on {}", s.bind), s.cpu, s.busy_poll, None)
        }
    };
    let (state, style) = match (app.frozen.is_some(), app.running, app.role) {
        (true, _, _) => ("❄ FROZEN", t.warn()),
        (false, true, Role::Client) => ("● MEASURING", t.good()),
        (false, true, Role::Server) => ("● REFLECTING", t.good()),
        (false, false, _) => ("■ STOPPED", t.warn()),
    };
    // What fits, most important first: the pair, then how it runs, then
    // the profile and the file it came from.
    let room = usize::from(area.width).saturating_sub(state.chars().count() + 2 + 9);
    let mut used = what.chars().count();
    let mut spans = vec![Span::styled(" SYNAPSE ", t.title()), Span::raw(what)];
    let extras = [
        pace,
        Some(format!(
            "  CPU {cpu} · {}",
            if busy { "busy-poll" } else { "blocking" }
        )),
        app.profile.as_ref().map(|p| format!("  profile {p}")),
        app.config_file.as_ref().map(|c| format!("  {c}")),
    ];
    for extra in extras.into_iter().flatten() {
        let n = extra.chars().count();
        if used + n <= room {
            used += n;
            spans.push(Span::styled(extra, t.dim()));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
    let right = Line::from(Span::styled(format!("{state} "), style)).right_aligned();
    f.render_widget(Paragraph::new(right), area);
}
