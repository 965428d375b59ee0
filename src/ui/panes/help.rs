//! The help overlay: the keys that act in the view shown, from the same
//! table the key handler uses.

use crate::ui::action::KEYS;
use crate::ui::app::{App, Role};
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

/// Draws the overlay centred in `area`.
pub fn render(f: &mut Frame, area: Rect, app: &App, t: Theme) {
    let keys: Vec<_> = KEYS.iter().filter(|k| k.3.acts_in(app.role)).collect();
    let height = keys.len() as u16 + 4;
    let [v] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(72)])
        .flex(Flex::Center)
        .areas(v);
    let mut lines: Vec<Line> = keys
        .iter()
        .map(|(key, what, _, _)| {
            Line::from(vec![
                Span::styled(format!("  {key:<16}"), t.key()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::from(Span::styled(
        format!(
            "  The display redraws at {} fps; measuring never waits for it.",
            app.fps
        ),
        t.dim(),
    )));
    let view = match app.role {
        Role::Client => " Keys · client view ",
        Role::Server => " Keys · server view ",
    };
    f.render_widget(Clear, popup);
    let block = Block::bordered().title(Span::styled(view, t.title()));
    f.render_widget(Paragraph::new(lines).block(block), popup);
}
