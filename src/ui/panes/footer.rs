//! The bottom line: key hints for the view shown, or the latest status
//! message, wrapped onto as many lines as it needs (up to three) rather
//! than cut.

use crate::ui::app::{App, Role};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// The most lines a status message takes.
const MAX_LINES: u16 = 3;

/// The status message as shown, when one is.
fn status(app: &App) -> Option<String> {
    if app.prompt.is_some() {
        return None;
    }
    match (&app.confirm, &app.status) {
        (Some(q), _) => Some(format!(" {}", q.question())),
        (None, Some(s)) => Some(format!(" {s}")),
        (None, None) => None,
    }
}

/// `text` in lines of at most `width` characters, broken between words
/// (a word longer than a line is broken where the line ends).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let mut word = word.to_string();
        loop {
            let line = lines.last_mut().map_or(0, |l| l.chars().count());
            let need = word.chars().count() + usize::from(line > 0);
            if line + need <= width {
                if let Some(l) = lines.last_mut() {
                    if line > 0 {
                        l.push(' ');
                    }
                    l.push_str(&word);
                }
                break;
            }
            if line == 0 {
                // Longer than a whole line: break it where the line ends.
                let head: String = word.chars().take(width).collect();
                word = word.chars().skip(width).collect();
                lines.push(String::new());
                if let Some(l) = lines.iter_mut().rev().nth(1) {
                    *l = head;
                }
                continue;
            }
            lines.push(String::new());
        }
    }
    lines
}

/// Lines the footer needs at `width`: one, or what the status message
/// takes when it is longer.
pub fn height(app: &App, width: u16) -> u16 {
    status(app).map_or(1, |text| {
        (wrap(&text, usize::from(width)).len() as u16).clamp(1, MAX_LINES)
    })
}

/// The keys that act in this view, as `(key, what)`.
fn hints(app: &App) -> Vec<(&'static str, &'static str)> {
    let run = if app.running { "stop" } else { "start" };
    let freeze = if app.frozen.is_some() {
        "unfreeze"
    } else {
        "freeze"
    };
    let mut hints = vec![("space", run)];
    match app.role {
        Role::Client => hints.extend([
            ("r", "server"),
            ("c", "clear"),
            ("f", freeze),
            ("+/-", "zoom"),
        ]),
        // The client table's title names its scroll keys when it has more
        // rows than it shows.
        Role::Server => hints.extend([("r", "client"), ("c", "clear"), ("f", freeze)]),
    }
    hints.extend([("?", "help"), ("q", "quit")]);
    hints
}

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
    if let Some(text) = status(app) {
        let lines: Vec<Line> = wrap(&text, usize::from(area.width))
            .into_iter()
            .map(|l| Line::styled(l, t.warn()))
            .collect();
        f.render_widget(Paragraph::new(lines), area);
        return;
    }
    let spans: Vec<Span> = hints(app)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_break_between_words_and_keep_every_one() {
        let text = " cannot start: no reply from 192.0.2.1:8080: host unreachable or not answering";
        let lines = wrap(text, 40);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert_eq!(
            lines.join(" ").split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
    }
}
