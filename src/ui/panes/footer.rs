//! The bottom line: key hints, or the latest status message.

use crate::ui::app::{App, Role};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// Draws the footer.
pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme;
    if let Some(p) = &app.prompt {
        let typed = if p.fresh {
            Span::styled(p.text.clone(), t.dim())
        } else {
            Span::raw(p.text.clone())
        };
        let line = Line::from(vec![
            Span::styled(" save profile as: ", t.key()),
            typed,
            Span::raw("█"),
            Span::styled("   Enter saves · Esc cancels", t.dim()),
        ]);
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    if let Some(q) = &app.confirm {
        let line = Line::styled(format!(" {}", q.question()), t.warn());
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    if let Some(status) = &app.status {
        f.render_widget(
            Paragraph::new(Span::styled(format!(" {status}"), t.warn())),
            area,
        );
        return;
    }
    let run = if app.running { "stop" } else { "start" };
    let other = match app.role {
        Role::Client => "server",
        Role::Server => "client",
    };
    let freeze = if app.frozen.is_some() {
        "unfreeze"
    } else {
        "freeze"
    };
    let hints = [
        ("space", run),
        ("r", other),
        ("c", "clear"),
        ("f", freeze),
        ("+/-", "zoom"),
        ("?", "help"),
        ("q", "quit"),
    ];
    let spans: Vec<Span> = hints
        .iter()
        .flat_map(|(k, what)| {
            [
                Span::styled(format!(" {k} "), t.key()),
                Span::raw(format!("{what} ")),
            ]
        })
        .collect();
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}
