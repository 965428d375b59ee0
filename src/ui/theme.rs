//! Colours, with `NO_COLOR` respected: without colour, emphasis falls back
//! to bold and reverse video so nothing depends on hue alone.

use ratatui::style::{Color, Modifier, Style};

/// The palette in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    color: bool,
}

/// One colour pair per OSI layer, top (L7) to bottom (L1).
const LAYERS: [(Color, Color); 5] = [
    (Color::Blue, Color::LightBlue),
    (Color::Green, Color::LightGreen),
    (Color::Yellow, Color::LightYellow),
    (Color::Indexed(166), Color::Indexed(214)),
    (Color::Red, Color::LightRed),
];

impl Theme {
    /// Colour unless `NO_COLOR` is set (to anything).
    pub fn from_env() -> Self {
        Self {
            color: std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// An explicit choice, for tests.
    pub fn new(color: bool) -> Self {
        Self { color }
    }

    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// Titles and labels.
    pub fn title(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// Secondary text.
    pub fn dim(self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }

    /// Key names in hints.
    pub fn key(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// Good news.
    pub fn good(self) -> Style {
        self.fg(Color::Green)
    }

    /// Something to look at.
    pub fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }

    /// Bad news: loss, failures.
    pub fn bad(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    /// The RTT colour code: green < 0.5 ms, yellow to 1 ms (the default
    /// threshold), red above.
    pub fn rtt(self, ns: u64) -> Style {
        match ns {
            0..500_000 => self.good(),
            500_000..=1_000_000 => self.warn(),
            _ => self.bad(),
        }
        .add_modifier(Modifier::BOLD)
    }

    /// OSI layer row `i` (0 = L7 … 4 = L1), highlighted or not.
    pub fn layer(self, i: usize, active: bool) -> Style {
        let (normal, bright) = LAYERS[i.min(4)];
        match (self.color, active) {
            (true, true) => Style::new()
                .bg(bright)
                .fg(Color::Black)
                .add_modifier(Modifier::BOLD),
            (true, false) => Style::new().fg(normal),
            (false, true) => Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            (false, false) => Style::new(),
        }
    }

    /// Histogram bars.
    pub fn bar(self) -> Style {
        self.fg(Color::Cyan)
    }

    /// Sparkline `i` (p50, p99, p99.9).
    pub fn spark(self, i: usize) -> Style {
        self.fg([Color::Green, Color::Yellow, Color::Magenta][i.min(2)])
    }
}
