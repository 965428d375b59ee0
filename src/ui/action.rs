//! Keys map to actions through one table, not a chain of ifs.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Everything a key can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Start or stop measuring (or reflecting).
    ToggleRun,
    /// Switch between client and server role.
    SwitchRole,
    /// Clear the statistics.
    Clear,
    /// Freeze or unfreeze the display (measurement continues).
    Freeze,
    /// Narrow the histogram's range.
    ZoomIn,
    /// Widen the histogram's range.
    ZoomOut,
    /// Save the current settings as a profile (asks for a name).
    SaveProfile,
    /// Keep the current figures as the profile's baseline.
    SetBaseline,
    /// Mark what was measured so far as the reference, and compare with it.
    MarkReference,
    /// Scroll the client table one row up (server view).
    ScrollUp,
    /// Scroll it one row down.
    ScrollDown,
    /// Scroll it a page up.
    PageUp,
    /// Scroll it a page down.
    PageDown,
    /// Show or hide the key list.
    Help,
    /// Close the help overlay, or leave when it is not open.
    Close,
    /// Leave.
    Quit,
}

/// Which view a key acts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Both.
    Both,
    /// The client's (measuring).
    Client,
    /// The server's (reflecting).
    Server,
}

impl View {
    /// Whether a key of this view acts in `role`.
    pub fn acts_in(self, role: super::app::Role) -> bool {
        use super::app::Role;
        matches!(
            (self, role),
            (View::Both, _) | (View::Client, Role::Client) | (View::Server, Role::Server)
        )
    }
}

/// The key table: key, its label in the help overlay, the action, and
/// the view it acts in.
pub const KEYS: &[(&str, &str, Action, View)] = &[
    ("space", "start or stop", Action::ToggleRun, View::Both),
    (
        "r",
        "switch role: client ↔ server",
        Action::SwitchRole,
        View::Both,
    ),
    ("c", "clear statistics", Action::Clear, View::Both),
    (
        "f",
        "freeze the display (measuring continues)",
        Action::Freeze,
        View::Both,
    ),
    (
        "+ / -",
        "zoom the histogram in / out",
        Action::ZoomIn,
        View::Client,
    ),
    (
        "s",
        "save these settings as a profile (asks for a name)",
        Action::SaveProfile,
        View::Client,
    ),
    (
        "b",
        "keep the figures so far as the profile's baseline",
        Action::SetBaseline,
        View::Client,
    ),
    (
        "m",
        "mark a reference and compare the figures with it",
        Action::MarkReference,
        View::Client,
    ),
    (
        "↑ ↓ PgUp PgDn",
        "scroll the client table",
        Action::ScrollDown,
        View::Server,
    ),
    ("?", "this help", Action::Help, View::Both),
    (
        "q  Esc  Ctrl-C",
        "quit and print the summary",
        Action::Quit,
        View::Both,
    ),
    (
        "Esc (in help)",
        "close this help",
        Action::Close,
        View::Both,
    ),
];

/// The view an action acts in, from the key table (an action not listed
/// acts in both: the scroll keys' other directions are the server's).
pub fn view_of(action: Action) -> View {
    match action {
        Action::ScrollUp | Action::PageUp | Action::PageDown => View::Server,
        Action::ZoomOut => View::Client,
        _ => KEYS
            .iter()
            .find(|k| k.2 == action)
            .map_or(View::Both, |k| k.3),
    }
}

/// The action bound to a key press, if any.
pub fn action_for(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    Some(match key.code {
        KeyCode::Char('c') if ctrl => Action::Quit,
        KeyCode::Char(' ') => Action::ToggleRun,
        KeyCode::Char('r') => Action::SwitchRole,
        KeyCode::Char('c') => Action::Clear,
        KeyCode::Char('f') => Action::Freeze,
        KeyCode::Char('s') => Action::SaveProfile,
        KeyCode::Char('b') => Action::SetBaseline,
        KeyCode::Char('m') => Action::MarkReference,
        KeyCode::Char('+' | '=') => Action::ZoomIn,
        KeyCode::Char('-' | '_') => Action::ZoomOut,
        KeyCode::Char('?' | 'h') => Action::Help,
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Esc => Action::Close,
        KeyCode::Up => Action::ScrollUp,
        KeyCode::Down => Action::ScrollDown,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> Option<Action> {
        action_for(KeyEvent::new(code, modifiers))
    }

    #[test]
    fn every_documented_key_maps_to_its_action() {
        let none = KeyModifiers::NONE;
        assert_eq!(press(KeyCode::Char(' '), none), Some(Action::ToggleRun));
        assert_eq!(press(KeyCode::Char('r'), none), Some(Action::SwitchRole));
        assert_eq!(press(KeyCode::Char('c'), none), Some(Action::Clear));
        assert_eq!(press(KeyCode::Char('f'), none), Some(Action::Freeze));
        assert_eq!(press(KeyCode::Char('s'), none), Some(Action::SaveProfile));
        assert_eq!(press(KeyCode::Char('b'), none), Some(Action::SetBaseline));
        assert_eq!(press(KeyCode::Char('m'), none), Some(Action::MarkReference));
        assert_eq!(press(KeyCode::Char('+'), none), Some(Action::ZoomIn));
        assert_eq!(press(KeyCode::Char('-'), none), Some(Action::ZoomOut));
        assert_eq!(press(KeyCode::Char('?'), none), Some(Action::Help));
        assert_eq!(press(KeyCode::Char('q'), none), Some(Action::Quit));
        assert_eq!(press(KeyCode::Esc, none), Some(Action::Close));
        assert_eq!(
            press(KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(Action::Quit)
        );
        assert_eq!(press(KeyCode::Char('x'), none), None);
    }

    #[test]
    fn key_releases_are_ignored() {
        let mut k = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        k.kind = KeyEventKind::Release;
        assert_eq!(action_for(k), None);
    }
}
