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
    let silent = app.client.silence.is_some();
    let (state, style) = match (app.frozen.is_some(), app.running, app.role) {
        (true, _, _) => ("❄ FROZEN", t.warn()),
        (false, true, Role::Client) if silent => ("▲ NO REPLY", t.bad()),
        (false, true, Role::Client) => ("● MEASURING", t.good()),
        (false, true, Role::Server) => ("● REFLECTING", t.good()),
        (false, false, _) => ("■ STOPPED", t.warn()),
    };
    // What fits, most important first: the pair, then how it runs, then
    // the profile and the file it came from.
    // Records the display's ring could not hold: its figures lack them
    // (the summary's, from the engine's own statistics, do not). Said
    // beside the state, where it is not crowded out.
    let missed = (app.role == Role::Client && app.client.ring_overflow > 0)
        .then(|| format!("⚠ {} not shown  ", app.client.ring_overflow));
    let right_width = state.chars().count() + missed.as_ref().map_or(0, |m| m.chars().count());
    let room = usize::from(area.width).saturating_sub(right_width + 2 + 9);
    // The pair is cut (…) rather than written under the state.
    let what = if what.chars().count() > room {
        let mut cut: String = what.chars().take(room.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        what
    };
    let mut used = what.chars().count();
    let mut spans = vec![Span::styled(" SYNAPSE ", t.title()), Span::raw(what)];
    let extras = [
        pace.map(|p| (p, t.dim())),
        Some((
            format!(
                "  CPU {cpu} · {}",
                if busy { "busy-poll" } else { "blocking" }
            ),
            t.dim(),
        )),
        app.profile
            .as_ref()
            .map(|p| (format!("  profile {p}"), t.dim())),
        app.config_file
            .as_ref()
            .map(|c| (format!("  {c}"), t.dim())),
    ];
    for (extra, style) in extras.into_iter().flatten() {
        let n = extra.chars().count();
        if used + n <= room {
            used += n;
            spans.push(Span::styled(extra, style));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
    let mut right = vec![Span::styled(format!("{state} "), style)];
    if let Some(m) = missed {
        right.insert(0, Span::styled(m, t.warn()));
    }
    let right = Line::from(right).right_aligned();
    f.render_widget(Paragraph::new(right), area);
}
