//! The live display: a ratatui front end driven by tokio (terminal events,
//! frame ticks, signals). It never touches the hot path: each frame it
//! drains the engine's lock-free rings and redraws. The measurement threads
//! never wait for it.

pub mod action;
pub mod animation;
pub mod app;
pub mod columns;
pub mod draw;
mod keys;
pub mod panes;
pub mod responders;
pub mod station;
pub mod theme;
pub mod versus;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
pub(crate) mod layout_check;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_feed;
#[cfg(test)]
mod tests_fit;

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
        let signal = match outcome {
            Ok(Ended::Signal(n)) => Some(n),
            _ => None,
        };
        let finale = station.finish(&mut app, signal);
        outcome.map(|_| finale)
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
        floor_kind: crate::report::FloorKind::of(
            crate::report::RunMode::of(
                c.settings.transport == synapse_engine::Transport::Tcp,
                c.thread.busy_poll,
                c.settings.connect_each,
            ),
            c.settings.schedule.is_some(),
            c.thread.cpu,
            (c.target == Target::Loopback).then_some(c.reflector_thread.cpu),
            match c.target {
                Target::Loopback => false,
                Target::Remote(a) => !synapse_engine::socket::is_this_host(a.ip()),
            },
        ),
        warmup: c.settings.warmup,
        packets: c.packets,
        duration: c.settings.duration,
        size: c.settings.size,
        pace: c.settings.schedule,
        transport: c.settings.transport,
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
        c.settings
            .update
            .unwrap_or(synapse_units::Every::Packets(app::DEFAULT_UPDATE)),
        c.settings.fps,
    );
    app.profile = c.profile.name.clone();
    // A baseline of another kind of run is not compared with this one.
    let kind = c.run_kind();
    app.baseline = c.profile.baseline.clone().filter(|b| {
        b.kind
            .as_ref()
            .is_none_or(|k| k.differences(&kind).is_empty())
    });
    if app.baseline.is_none()
        && let Some(k) = c.profile.baseline.as_ref().and_then(|b| b.kind.as_ref())
    {
        app.status = Some(format!(
            "the profile's baseline is of another kind of run ({}): not compared",
            k.differences(&kind).join(", ")
        ));
    }
    app.floor = crate::calibrate::kept_for_this_host();
    app
}

/// Resolves to the signal's number when SIGTERM, SIGHUP or SIGINT arrives.
fn quit_signal() -> Result<impl Future<Output = i32>, AppError> {
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = sigterm.recv() => libc::SIGTERM,
            _ = sighup.recv() => libc::SIGHUP,
            _ = sigint.recv() => libc::SIGINT,
        }
    })
}

/// How the display loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The user quit.
    Quit,
    /// A signal (SIGTERM, SIGHUP, SIGINT) ended it: its number.
    Signal(i32),
    /// The event source ran dry.
    NoMoreEvents,
}

/// The display loop: a frame every `1/fps`, keys as they come, until the
/// user quits, `events` ends or `quit` resolves. Generic over the terminal
/// and everything from outside, so a test can drive the real loop with a
/// `TestBackend` and scripted keys.
pub async fn drive<B, E>(
    terminal: &mut Terminal<B>,
    mut events: E,
    quit: impl Future<Output = i32>,
    station: &mut Station,
    app: &mut App,
) -> Result<Ended, AppError>
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
                // Answer keys at once rather than on the next tick.
                Some(Ok(Event::Key(key))) => match keys::on_key(key, app, station) {
                    keys::After::Quit => return Ok(Ended::Quit),
                    keys::After::Redraw => true,
                    keys::After::Nothing => false,
                },
                Some(Ok(Event::Resize(..))) => true,
                Some(Ok(_)) => false,
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(Ended::NoMoreEvents),
            },
            n = &mut quit => return Ok(Ended::Signal(n)),
        };
        if redraw {
            terminal
                .draw(|f| draw::draw(f, app))
                .map_err(|e| AppError::Runtime(anyhow::Error::new(e)))?;
        }
    }
}
