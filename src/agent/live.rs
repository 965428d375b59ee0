//! The agent on a terminal: the live table, redrawn four times a second,
//! until `q`, Esc, Ctrl-C or a signal. The terminal is restored on every
//! way out. Here SIGHUP means what it means to any terminal program, the
//! terminal hung up, so it ends the agent (left running, it would probe
//! on unseen); `r` reloads the configuration instead.

use super::table::{PeerRow, Scroll, TableView, render, scrolled};
use super::{Agent, POLL, Signals};
use crate::error::AppError;
use crate::ui::theme::Theme;
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use std::io::IsTerminal;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Redraws per second: the figures move no faster.
const FRAME: Duration = Duration::from_millis(250);
/// How long a reload's outcome stays in the footer.
const NEWS: Duration = Duration::from_secs(10);

/// The trace pane of the peer on row `offset` (key `t`): its last trace's
/// report, or why there is none.
pub fn trace_pane(agent: &Agent, offset: usize) -> (String, Vec<String>) {
    let Some(peer) = agent.cfg.peers.get(offset) else {
        return ("Trace".into(), vec!["no peer".into()]);
    };
    let Some(t) = agent.tracing.last.get(&peer.name) else {
        let why = match agent.cfg.trace.on_loss {
            Some(pct) => format!(
                "no trace of {} yet: none of its paths lost over {pct} % in a window",
                peer.name
            ),
            None => "traces are off (--trace-on-loss PCT)".into(),
        };
        return (format!("Trace of {}", peer.name), vec![why]);
    };
    let mut out = Vec::new();
    let _ = crate::report::trace::text::write_trace_text(&mut out, &t.report);
    let title = format!(
        "Trace of {} from port {} (window loss {:.1} %)",
        t.peer, t.port, t.loss_percent
    );
    (
        title,
        String::from_utf8_lossy(&out)
            .lines()
            .map(String::from)
            .collect(),
    )
}

/// What the table shows now, from row `offset`.
pub fn view(agent: &Agent, offset: usize) -> TableView {
    let c = &agent.cfg;
    TableView {
        source: c.name.clone(),
        metrics: agent.metrics_addr.to_string(),
        reflect: agent.answers.clone(),
        timestamps: agent.timestamps.clone(),
        window_s: c.report_every.as_secs(),
        rows: c
            .peers
            .iter()
            .zip(&agent.windows)
            .zip(&agent.paths)
            .map(|((p, w), paths)| PeerRow {
                name: p.name.clone(),
                address: p.address.clone(),
                protocol: p.protocol(),
                figures: w.live(),
                history: w.history.iter().copied().collect(),
                worst_path: (paths.last.len() > 1)
                    .then(|| super::paths::spread(&paths.last))
                    .and_then(|s| Some((s.worst_port?, s.worst_loss_percent))),
            })
            .collect(),
        overflow: agent.overflow,
        reload_errors: agent.reload_errors,
        offset,
        news: agent.reloaded.clone(),
        help: false,
        traces: agent.tracing.on(),
        trace: None,
    }
}

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Quit,
    Reload,
    Help,
    Trace,
    Scroll(Scroll),
    Other,
}

fn key_of(ev: &Event) -> Key {
    let Event::Key(k) = ev else { return Key::Other };
    if k.kind != KeyEventKind::Press {
        return Key::Other;
    }
    match k.code {
        KeyCode::Char('q') | KeyCode::Esc => Key::Quit,
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Key::Quit,
        KeyCode::Char('r') => Key::Reload,
        KeyCode::Char('?') => Key::Help,
        KeyCode::Char('t') => Key::Trace,
        KeyCode::Up => Key::Scroll(Scroll::Up),
        KeyCode::Down => Key::Scroll(Scroll::Down),
        KeyCode::PageUp => Key::Scroll(Scroll::PageUp),
        KeyCode::PageDown => Key::Scroll(Scroll::PageDown),
        KeyCode::Home => Key::Scroll(Scroll::Home),
        KeyCode::End => Key::Scroll(Scroll::End),
        _ => Key::Other,
    }
}

/// What the terminal has for us.
enum Input {
    Ready,
    Nothing,
    Hangup,
}

/// Waits up to [`POLL`] for a key. The terminal is polled here, not in
/// crossterm: on a terminal that hung up, crossterm's reader spins on
/// end-of-file and never returns.
fn wait_for_keys(stdin_tty: bool) -> Result<Input, AppError> {
    if !stdin_tty {
        std::thread::sleep(POLL);
        return Ok(Input::Nothing);
    }
    let ready = synapse_engine::terminal_input(std::io::stdin().as_raw_fd(), POLL)
        .map_err(|e| AppError::Runtime(anyhow::anyhow!("cannot wait for keys: {e}")))?;
    Ok(match ready {
        Some(true) => Input::Ready,
        Some(false) => Input::Nothing,
        None => Input::Hangup,
    })
}

/// Runs the live table until the user quits or a signal stops the agent.
pub fn run(agent: &mut Agent, signals: &Signals) -> Result<(), AppError> {
    let mut terminal = ratatui::try_init()?;
    let theme = Theme::from_env();
    let outcome = (|| -> Result<(), AppError> {
        let mut next_frame = Instant::now();
        let stdin_tty = std::io::stdin().is_terminal();
        // The first row shown, and how many fit at the last frame.
        let (mut offset, mut shown) = (0usize, 0usize);
        // The help over the table, and until when a reload's news shows.
        let (mut help, mut news_until) = (false, Instant::now());
        let mut show_trace = false;
        // SIGHUP is a hangup here, not a reload.
        while !signals.stop.is_raised() && !signals.reload.load(Ordering::Relaxed) {
            if let Some(why) = agent.step() {
                return Err(AppError::Runtime(anyhow::anyhow!(why)));
            }
            let _ = agent.turn_if_due(Instant::now());
            // The table shows each peer's last trace; the lines are for
            // headless runs.
            let _ = agent.tracing.take_finished();
            if Instant::now() >= next_frame {
                let mut v = view(agent, offset);
                v.help = help;
                if Instant::now() > news_until {
                    v.news = None;
                }
                v.trace = show_trace.then(|| trace_pane(agent, offset));
                terminal
                    .draw(|f| shown = render(&v, f.area(), f.buffer_mut(), theme))
                    .map_err(|e| AppError::Runtime(anyhow::Error::new(e)))?;
                offset = offset.min(v.rows.len().saturating_sub(shown));
                next_frame = Instant::now() + FRAME;
            }
            match wait_for_keys(stdin_tty)? {
                Input::Hangup => break,
                Input::Nothing => {}
                Input::Ready => {
                    if event::poll(Duration::ZERO)? {
                        let key = key_of(&event::read()?);
                        if help {
                            // Any key closes the help first.
                            help = false;
                            next_frame = Instant::now();
                            if key != Key::Quit {
                                continue;
                            }
                        }
                        match key {
                            Key::Quit => break,
                            Key::Help => {
                                help = true;
                                next_frame = Instant::now();
                            }
                            Key::Reload => {
                                // Its note goes to stderr, over the table:
                                // the next frame is drawn whole.
                                agent.reload();
                                news_until = Instant::now() + NEWS;
                                terminal.clear()?;
                                next_frame = Instant::now();
                            }
                            Key::Trace => {
                                show_trace = !show_trace;
                                next_frame = Instant::now();
                            }
                            Key::Scroll(how) => {
                                let total = agent.cfg.peers.len();
                                offset = scrolled(offset, how, shown, total);
                                next_frame = Instant::now();
                            }
                            Key::Other => {}
                        }
                    }
                }
            }
        }
        Ok(())
    })();
    ratatui::restore();
    outcome
}
