//! The agent on a terminal: the live table, redrawn four times a second,
//! until `q`, Esc, Ctrl-C or a signal. The terminal is restored on every
//! way out.

use super::table::{PeerRow, TableView, render};
use super::{Agent, POLL, Signals};
use crate::error::AppError;
use crate::ui::theme::Theme;
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use std::time::{Duration, Instant};

/// Redraws per second: the figures move no faster.
const FRAME: Duration = Duration::from_millis(250);

/// What the table shows now.
pub fn view(agent: &Agent) -> TableView {
    let c = &agent.cfg;
    TableView {
        source: c.name.clone(),
        metrics: agent.metrics_addr.to_string(),
        reflect: c
            .reflect
            .map_or_else(|| "answers nothing".into(), |a| format!("answers on {a}")),
        timestamps: agent.timestamps.clone(),
        window_s: c.report_every.as_secs(),
        rows: c
            .peers
            .iter()
            .zip(&agent.windows)
            .map(|(p, w)| PeerRow {
                name: p.name.clone(),
                address: p.address.clone(),
                protocol: p.protocol(),
                figures: w.live(),
                history: w.history.iter().copied().collect(),
            })
            .collect(),
        overflow: agent.overflow,
        reload_errors: agent.reload_errors,
    }
}

fn quit_key(ev: &Event) -> bool {
    let Event::Key(k) = ev else { return false };
    k.kind == KeyEventKind::Press
        && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
            || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)))
}

/// Runs the live table until the user quits or a signal stops the agent.
pub fn run(agent: &mut Agent, signals: &Signals) -> Result<(), AppError> {
    let mut terminal = ratatui::try_init()?;
    let theme = Theme::from_env();
    let outcome = (|| -> Result<(), AppError> {
        let mut next_frame = Instant::now();
        while !signals.stop.is_raised() {
            if let Some(why) = agent.step(signals) {
                return Err(AppError::Runtime(anyhow::anyhow!(why)));
            }
            let _ = agent.turn_if_due(Instant::now());
            if Instant::now() >= next_frame {
                let v = view(agent);
                terminal
                    .draw(|f| render(&v, f.area(), f.buffer_mut(), theme))
                    .map_err(|e| AppError::Runtime(anyhow::Error::new(e)))?;
                next_frame = Instant::now() + FRAME;
            }
            if event::poll(POLL)? && quit_key(&event::read()?) {
                break;
            }
        }
        Ok(())
    })();
    ratatui::restore();
    outcome
}
