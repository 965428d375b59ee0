//! The live display: a ratatui front end driven by tokio (terminal events,
//! frame ticks, signals). It never touches the hot path: each frame it
//! drains the engine's lock-free rings and redraws. The measurement threads
//! never wait for it.

pub mod action;
pub mod animation;
pub mod app;
pub mod draw;
pub mod panes;
pub mod station;
pub mod theme;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;

use action::{Action, action_for};
use app::{App, ClientInfo, Role, ServerView};
use crossterm::event::{Event, EventStream};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use station::{Finale, Station};
use std::time::{Duration, Instant};
use theme::Theme;
use tokio::signal::unix::{SignalKind, signal};

use crate::error::AppError;
use crate::plan::{ClientPlan, ServerPlan, Target, counterpart_client, counterpart_server};

/// Which plan the display starts from.
#[derive(Debug)]
// Built once per process: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Start {
    /// `synapse` or `synapse client …`.
    Client(ClientPlan),
    /// `synapse server …`.
    Server(ServerPlan),
}

/// Runs the live display until the user quits, then returns what was
/// measured. The terminal is restored on every way out: quit, error,
/// panic (ratatui's hook) and SIGTERM/SIGHUP/SIGINT.
pub fn run(start: Start) -> Result<Finale, AppError> {
    let (client_plan, server_plan, role) = match start {
        Start::Client(c) => {
            let s = counterpart_server(&c);
            (c, s, Role::Client)
        }
        Start::Server(s) => (counterpart_client(&s)?, s, Role::Server),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::Runtime(anyhow::anyhow!("cannot start the display runtime: {e}")))?;
    runtime.block_on(async {
        let mut station = Station::new(
            client_plan.clone(),
            server_plan.clone(),
            role == Role::Server,
        );
        let mut app = initial_app(&client_plan, &server_plan, &station, role);
        // Signal streams first: if they cannot be set up, the terminal is untouched.
        let quit = quit_signal()?;
        let mut terminal = ratatui::try_init()?;
        station.start(&mut app);
        let outcome = drive(
            &mut terminal,
            EventStream::new(),
            quit,
            &mut station,
            &mut app,
        )
        .await;
        ratatui::restore();
        let finale = station.finish(&mut app);
        outcome.map(|()| finale)
    })
}

pub(crate) fn initial_app(c: &ClientPlan, s: &ServerPlan, station: &Station, role: Role) -> App {
    let info = ClientInfo {
        target: station.target_label(),
        local: c.bind.map_or_else(|| "any".to_string(), |b| b.to_string()),
        mode: match c.target {
            Target::Loopback => "loopback",
            Target::Remote(_) => "client",
        },
        cpu: c.thread.cpu,
        busy_poll: c.thread.busy_poll,
        warmup: c.run.warmup,
        packets: c.packets,
        duration: c.run.duration,
        size: c.run.size,
    };
    let server = ServerView {
        bind: s.bind.to_string(),
        cpu: s.thread.cpu,
        busy_poll: s.thread.busy_poll,
        session_idle: s.session_idle,
        ..ServerView::default()
    };
    let mut app = App::new(
        role,
        info,
        server,
        Theme::from_env(),
        c.run.update,
        c.run.fps,
    );
    app.profile = c.profile.name.clone();
    app.baseline = c.profile.baseline.clone();
    app
}

/// Resolves when SIGTERM, SIGHUP or SIGINT arrives.
fn quit_signal() -> Result<impl Future<Output = ()>, AppError> {
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = sigterm.recv() => {}
            _ = sighup.recv() => {}
            _ = sigint.recv() => {}
        }
    })
}

/// The display loop: a frame every `1/fps`, keys as they come, until the
/// user quits, `events` ends or `quit` resolves. Generic over the terminal
/// and everything from outside, so a test can drive the real loop with a
/// `TestBackend` and scripted keys.
pub async fn drive<B, E>(
    terminal: &mut Terminal<B>,
    mut events: E,
    quit: impl Future<Output = ()>,
    station: &mut Station,
    app: &mut App,
) -> Result<(), AppError>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
    E: Stream<Item = std::io::Result<Event>> + Unpin,
{
    let frame = Duration::from_secs_f64(1.0 / f64::from(app.fps.max(1)));
    let mut ticks = tokio::time::interval(frame);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut quit = std::pin::pin!(quit);
    loop {
        let redraw = tokio::select! {
            _ = ticks.tick() => {
                station.poll(app, Instant::now());
                true
            }
            ev = events.next() => match ev {
                Some(Ok(Event::Key(key))) if app.prompt.is_some() => {
                    if edit_prompt(key, app, station) {
                        return Ok(());
                    }
                    true
                }
                Some(Ok(Event::Key(key))) => match action_for(key) {
                    Some(action) if handle(action, app, station) => return Ok(()),
                    // Answer keys at once rather than on the next tick.
                    Some(_) => true,
                    None => false,
                },
                Some(Ok(Event::Resize(..))) => true,
                Some(Ok(_)) => false,
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
            () = &mut quit => return Ok(()),
        };
        if redraw {
            terminal
                .draw(|f| draw::draw(f, app))
                .map_err(|e| AppError::Runtime(anyhow::Error::new(e)))?;
        }
    }
}

/// Typing a profile name after `s`. Returns true for Ctrl-C, which quits
/// here as everywhere.
fn edit_prompt(key: crossterm::event::KeyEvent, app: &mut App, station: &mut Station) -> bool {
    use crossterm::event::{KeyCode, KeyEventKind, KeyModifiers};
    if key.kind == KeyEventKind::Release {
        return false;
    }
    if key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    {
        return key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
    }
    let Some(name) = app.prompt.as_mut() else {
        return false;
    };
    match key.code {
        KeyCode::Char(c) if c.is_ascii_alphanumeric() || "-_.".contains(c) => name.push(c),
        KeyCode::Backspace => {
            name.pop();
        }
        KeyCode::Enter if !name.is_empty() => {
            let name = name.clone();
            app.prompt = None;
            station.save_profile(app, &name);
        }
        KeyCode::Esc => app.prompt = None,
        _ => {}
    }
    false
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
        Action::SaveProfile => app.prompt = Some(app.profile.clone().unwrap_or_default()),
        Action::SetBaseline => station.set_baseline(app),
        Action::ZoomIn => app.zoom_by(true),
        Action::ZoomOut => app.zoom_by(false),
    }
    false
}
