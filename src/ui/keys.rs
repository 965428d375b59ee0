//! What a key does: typed into the profile-name prompt, an answer to a
//! y/n question, or an action from the key table.

use super::action::{Action, action_for, view_of};
use super::app::{App, Prompt};
use super::station::Station;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// What the display does after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Leave.
    Quit,
    /// Draw the change now.
    Redraw,
    /// The key meant nothing here.
    Nothing,
}

/// Applies one key press.
pub fn on_key(key: KeyEvent, app: &mut App, station: &mut Station) -> After {
    if key.kind == KeyEventKind::Release {
        return After::Nothing;
    }
    let ctrl_c = key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
    if app.prompt.is_some() {
        return if ctrl_c {
            After::Quit
        } else {
            edit_prompt(key, app, station);
            After::Redraw
        };
    }
    if let Some(question) = app.confirm.take() {
        if ctrl_c {
            return After::Quit;
        }
        if matches!(key.code, KeyCode::Char('y' | 'Y')) {
            station.answer(app, question);
        } else {
            app.status = Some("kept as it was".into());
        }
        return After::Redraw;
    }
    match action_for(key) {
        // A key of the other view does nothing here (the footer and the
        // help list only this view's).
        Some(action) if !view_of(action).acts_in(app.role) => After::Nothing,
        Some(action) if handle(action, app, station) => After::Quit,
        Some(_) => After::Redraw,
        None => After::Nothing,
    }
}

/// Typing a profile name after `s`.
fn edit_prompt(key: KeyEvent, app: &mut App, station: &mut Station) {
    if key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    {
        return;
    }
    let Some(prompt) = app.prompt.as_mut() else {
        return;
    };
    match key.code {
        KeyCode::Char(c) if c.is_ascii_alphanumeric() || "-_.".contains(c) => prompt.push(c),
        KeyCode::Backspace => prompt.pop(),
        KeyCode::Enter if !prompt.text.is_empty() => {
            let name = prompt.text.clone();
            app.prompt = None;
            station.save_profile(app, &name);
        }
        KeyCode::Esc => app.prompt = None,
        _ => {}
    }
}

/// Applies one action. Returns true when it is time to quit.
fn handle(action: Action, app: &mut App, station: &mut Station) -> bool {
    match action {
        Action::Quit => return true,
        Action::Close if app.help => app.help = false,
        Action::Close => return true,
        Action::Help => app.help = !app.help,
        Action::ToggleRun if app.running => station.stop(app),
        Action::ToggleRun => station.start(app),
        Action::SwitchRole => station.switch_role(app),
        Action::Clear => station.clear(app),
        Action::Freeze => app.toggle_freeze(),
        Action::SaveProfile => match station.profiles_refused() {
            Some(why) => app.status = Some(why),
            None => {
                app.prompt = Some(Prompt::suggesting(app.profile.clone().unwrap_or_default()));
            }
        },
        Action::SetBaseline => station.set_baseline(app),
        Action::MarkReference => station.mark_reference(app),
        Action::ZoomIn => app.zoom_by(true),
        Action::ZoomOut => app.zoom_by(false),
        Action::ScrollUp | Action::ScrollDown | Action::PageUp | Action::PageDown => {
            let rows = match action {
                Action::ScrollUp => -1,
                Action::ScrollDown => 1,
                Action::PageUp => -10,
                _ => 10,
            };
            app.server.scroll_by(rows);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_key_typed_replaces_the_suggested_name() {
        let mut p = Prompt::suggesting("lab".into());
        p.push('x');
        assert_eq!(p.text, "x");
        p.push('y');
        assert_eq!(p.text, "xy");
        let mut kept = Prompt::suggesting("lab".into());
        kept.pop();
        kept.push('s');
        assert_eq!(kept.text, "las", "backspace edits the suggestion");
    }
}
