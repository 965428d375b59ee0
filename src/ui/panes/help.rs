//! The help overlay: every key, from the same table the key handler uses.

use crate::ui::action::KEYS;
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

/// Draws the overlay centred in `area`.
pub fn render(f: &mut Frame, area: Rect, fps: u32, t: Theme) {
    let height = KEYS.len() as u16 + 4;
    let [v] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(72)])
        .flex(Flex::Center)
        .areas(v);
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(key, what, _)| {
            Line::from(vec![
                Span::styled(format!("  {key:<16}"), t.key()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::from(Span::styled(
        format!("  The display redraws at {fps} fps; measuring never waits for it."),
        t.dim(),
    )));
    f.render_widget(Clear, popup);
    let block = Block::bordered().title(Span::styled(" Keys ", t.title()));
    f.render_widget(Paragraph::new(lines).block(block), popup);
}
