//! The engine side of the live display: which sessions run in which role,
//! feeding their output into the [`App`] each frame, and keeping the
//! authoritative totals for the summary printed on quit.
//!
//! The reflector (a [`ServerSession`]) runs in the server role, and also in
//! the client role when the client measures this process's own reflector
//! (the loopback default, or a server that switched to client). It keeps
//! its address across restarts, so switching back and forth never moves
//! the port.

use super::app::{App, Confirm, Role};
use crate::cli::settings_schema;
use crate::config::{Baseline, baseline_runs, store};
use crate::error::exit;
use crate::plan::{ClientPlan, ServerPlan, Target};
use crate::report::{LogSummary, Report};
use crate::session::far_side::FarSide;
use crate::session::{
    ClientFeed, ClientStarter, IntervalTap, LogOutcome, Opening, ServerSession, Side,
};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use synapse_engine::socket::reachable_at;
use synapse_engine::{
    ClientOutcome, Placement, Protocol, ReflectorEvent, ReflectorTotals, StampingInfo, StopFlag,
    Transport,
};
use synapse_stats::{RecordKind, Stats, Summary, WINDOW};
use synapse_units::{Every, count_of};

/// What the live display measured, for the summary printed after it closes.
#[derive(Debug)]
pub struct Finale {
    /// The client report, if anything was measured.
    pub report: Option<Report>,
    /// Reflector totals, if the reflector ever ran in the server role.
    pub server: Option<ReflectorTotals>,
    /// The server's answer log, if it wrote one.
    pub server_log: Option<LogOutcome>,
    /// The last reason a run could not start or had to stop, with the exit
    /// status it calls for: what to say when nothing was measured.
    pub failure: Option<(String, i32)>,
    /// What the engine threads could not do as asked (pinning, SCHED_FIFO),
    /// each said once.
    pub warnings: Vec<String>,
}

/// The client runs of one display, added up.
#[derive(Debug)]
struct ClientTotals {
    stats: Stats,
    measured: Duration,
    placement: Option<Placement>,
    local: Option<SocketAddr>,
    target: Option<SocketAddr>,
    /// How the latest client run stamps its packets.
    stamping: Option<StampingInfo>,
    /// `--log`: whether the file was started (later runs append).
    log_started: bool,
    /// Rows the log holds and packets it missed, over all runs kept.
    log_rows: u64,
    log_dropped: u64,
    /// Why the log stopped being written, if it did.
    log_error: Option<String>,
    /// TX stamps that came after their packet, over all runs kept.
    stale_stamps: u64,
    /// Authenticated STAMP: answers whose HMAC failed.
    unauthenticated: u64,
    /// TCP: the latest run's connections and the kernel's view.
    tcp: Option<synapse_stats::TcpFigures>,
    /// STAMP extensions, as the last run's replies said.
    extensions: Option<synapse_engine::extensions::TlvSummary>,
    /// The last run gave up on a silent peer after this long.
    gave_up: Option<Duration>,
    /// A load run's outcome, the latest.
    load: Option<crate::session::LoadOutcome>,
}

/// The reflector's totals as the server view counts them.
#[derive(Debug, Default)]
struct ServerTotals {
    used: bool,
    /// Totals at the last clear.
    base: ReflectorTotals,
    last: ReflectorTotals,
    last_ns: u64,
}

/// Engine sessions and the totals they produced.
#[derive(Debug)]
pub struct Station {
    client_plan: ClientPlan,
    server_plan: ServerPlan,
    /// The client measures our own reflector.
    self_target: bool,
    server: Option<ServerSession>,
    /// Where the reflector listens, once it has bound (keeps the port).
    reflector_addr: Option<SocketAddr>,
    client: Option<Box<dyn ClientFeed>>,
    /// How a client run is started: the engine's, or a test's recording.
    start_feed: ClientStarter,
    run_started: Instant,
    /// Whether the far side answers, in the current run.
    far: FarSide,
    /// The last client run was ended by the user (stopped, cleared,
    /// switched or quit) before its engine ended it: with a length asked
    /// (`--packets`, `--duration`), such a run was not completed.
    cut_short: bool,
    window_started: Instant,
    totals: ClientTotals,
    served: ServerTotals,
    server_log: Option<LogOutcome>,
    failure: Option<(String, i32)>,
    warnings: Vec<String>,
    /// `--hdr-log`: every run's intervals, once the first run started.
    hdr: Option<IntervalTap>,
    /// `m`: the reference, and the intervals since it.
    versus: super::versus::Versus,
    /// The session's intervals since the last clear, bounded: what `b`
    /// keeps as the baseline's run, and what `--fail-on-regression` tests.
    session: IntervalTap,
}

/// Intervals the session keeps at most (neighbours merge past this).
const SESSION_INTERVALS: usize = 256;

impl Station {
    /// A station for these plans; nothing runs until [`Station::start`].
    pub fn new(client_plan: ClientPlan, server_plan: ServerPlan, started_as_server: bool) -> Self {
        let self_target = started_as_server || client_plan.target == Target::Loopback;
        let length = client_plan.hdr.hdr_interval;
        let min_effect = client_plan.profile.min_effect;
        let now = Instant::now();
        Self {
            client_plan,
            server_plan,
            self_target,
            server: None,
            reflector_addr: None,
            client: None,
            start_feed: ClientStarter::engine(),
            run_started: now,
            far: FarSide::new(),
            cut_short: false,
            window_started: now,
            totals: ClientTotals {
                stats: Stats::new(),
                measured: Duration::ZERO,
                placement: None,
                local: None,
                target: None,
                stamping: None,
                log_started: false,
                log_rows: 0,
                log_dropped: 0,
                log_error: None,
                stale_stamps: 0,
                unauthenticated: 0,
                tcp: None,
                extensions: None,
                gave_up: None,
                load: None,
            },
            served: ServerTotals::default(),
            server_log: None,
            failure: None,
            warnings: Vec::new(),
            hdr: None,
            versus: super::versus::Versus::new().with_min_effect(min_effect),
            session: IntervalTap::in_memory(length)
                .bounded(SESSION_INTERVALS)
                .with_slices(),
        }
    }

    /// The same station, its client runs started by `start` instead of the
    /// engine: tests feed it recorded samples.
    pub fn with_client_starter(mut self, start: ClientStarter) -> Self {
        self.start_feed = start;
        self
    }

    /// `m`: what was measured since the last clear (or mark) becomes the
    /// reference the figures pane compares with.
    pub fn mark_reference(&mut self, app: &mut App) {
        app.status = Some(self.versus.mark());
        app.client.versus = self.versus.view();
    }

    /// The address the client side measures, as known before it starts.
    pub fn target_label(&self) -> String {
        match (self.client_plan.target, self.reflector_addr) {
            (Target::Remote(a), _) => a.to_string(),
            (Target::Loopback, Some(a)) => a.to_string(),
            (Target::Loopback, None) => "127.0.0.1 (in-process reflector)".to_string(),
        }
    }

    fn ensure_reflector(&mut self, app: &mut App) -> Result<SocketAddr, (String, i32)> {
        if let Some(s) = &self.server {
            return Ok(s.echo_addr());
        }
        let p = &self.server_plan;
        // The in-process reflector speaks what a loopback client speaks.
        let protocol =
            if self.client_plan.settings.stamp && self.client_plan.target == Target::Loopback {
                Protocol::Stamp
            } else {
                Protocol::Echo
            };
        let bind = self.reflector_addr.unwrap_or(p.bind);
        let session = ServerSession::start(p, bind, protocol, &StopFlag::new())
            .map_err(|e| (e.to_string(), e.exit_code()))?;
        let addr = session.echo_addr();
        self.reflector_addr = Some(addr);
        app.server.bind = addr.to_string();
        app.server.reach = reachable_at(addr).iter().map(ToString::to_string).collect();
        app.server.stamp = match (session.stamp_addr(), &session.stamp_refused) {
            (Some(a), _) => Some(Ok(a.to_string())),
            (None, Some(why)) => {
                app.status = Some(why.clone());
                Some(Err(why.clone()))
            }
            (None, None) => None,
        };
        app.server.stamp_totals = ReflectorTotals::default();
        app.server.log = session.log_path().map(|p| p.display().to_string());
        // A fresh reflector counts from zero again.
        self.served.base = ReflectorTotals::default();
        self.served.last = ReflectorTotals::default();
        self.served.last_ns = 0;
        app.server.restart_answer_clock();
        self.server = Some(session);
        Ok(addr)
    }

    /// Where the own reflector answers TCP (`--tcp` on loopback), or why
    /// it does not.
    fn own_tcp_echo(&self) -> Result<SocketAddr, (String, i32)> {
        let server = self.server.as_ref();
        server.and_then(ServerSession::tcp_addr).ok_or_else(|| {
            let why = server.and_then(|s| s.tcp_refused.clone());
            let why = why.unwrap_or_else(|| "TCP echo not served".into());
            (format!("the in-process reflector: {why}"), exit::RUNTIME)
        })
    }

    fn stop_reflector(&mut self, app: &mut App) {
        let Some(session) = self.server.take() else {
            return;
        };
        let finish = session.finish(|side, ev| {
            self.served.apply(side, ev, app);
        });
        if let Ok(o) = &finish.echo {
            // The thread's own totals are exact; events are best effort.
            self.served.last = o.totals;
            o.open_at_stop
                .iter()
                .for_each(|s| app.server.session_ended(*s));
        }
        if let Some(Ok(o)) = &finish.stamp {
            app.server.stamp_totals = o.totals;
            o.open_at_stop
                .iter()
                .for_each(|s| app.server.session_ended(*s));
        }
        if let Some(log) = finish.log {
            if let Some(e) = &log.error {
                app.status = Some(e.to_string());
            }
            self.server_log = Some(log);
        }
        app.server.totals = self.served.since_clear();
    }

    fn start_client(&mut self, app: &mut App) -> Result<(), (String, i32)> {
        let against = if self.self_target {
            let own = self.ensure_reflector(app)?;
            Some(match self.client_plan.target {
                Target::Remote(a) => a,
                Target::Loopback if self.client_plan.settings.transport == Transport::Tcp => {
                    self.own_tcp_echo()?
                }
                Target::Loopback => own,
            })
        } else {
            None
        };
        let log = if self.totals.log_started {
            Opening::Append
        } else {
            self.client_plan.log_opening
        };
        if let (None, Some(path)) = (&self.hdr, self.client_plan.hdr.hdr_log.as_deref()) {
            let tap = IntervalTap::open(
                Some(path),
                self.client_plan.hdr.hdr_interval,
                false,
                "synapse client (live display: every run it started)",
            )
            .map_err(|e| {
                let e = crate::error::AppError::from(e);
                (e.to_string(), e.exit_code())
            })?;
            self.hdr = Some(tap);
        }
        let session = self
            .start_feed
            .start(&self.client_plan, against, log)
            .map_err(|e| (e.to_string(), e.exit_code()))?;
        self.totals.log_started |= self.client_plan.log.is_some();
        let timeout = self.client_plan.settings.timeout;
        if let Some(t) = self.hdr.as_mut() {
            t.start_run(timeout);
        }
        self.versus.start_run(timeout);
        self.session.start_run(timeout);
        let stamping = session.stamping().clone();
        self.totals.local = Some(session.local());
        self.totals.target = Some(session.server());
        app.client.live.use_shape(session.shape());
        // Another split (a role switch to another peer) starts the split
        // afresh; the RTT figures are kept.
        self.totals.stats.use_shape(session.shape());
        app.client.info.local =
            crate::report::local_text(session.local(), self.client_plan.settings.connect_each);
        app.client.info.target = session.server().to_string();
        app.client.stamping = Some(stamping.clone());
        self.totals.stamping = Some(stamping);
        // The run before, kept in the totals, stays in the display's too.
        let (n, t) = app.client.earlier;
        app.client.earlier = (n + app.client.run_done, t + app.client.run_elapsed);
        app.client.run_done = 0;
        app.client.run_elapsed = Duration::ZERO;
        app.client.silence = None;
        self.far = FarSide::new();
        app.client.live.start_run();
        self.run_started = Instant::now();
        self.client = Some(session);
        Ok(())
    }

    /// Waits for the client and folds its outcome into the totals (or
    /// drops it, when clearing).
    fn end_client(&mut self, app: &mut App, keep: bool) {
        let Some(session) = self.client.take() else {
            return;
        };
        app.client.silence = None;
        self.cut_short = !session.is_finished();
        session.stop();
        // Whatever is still in the ring belongs to the live view too.
        let (hdr, versus, kept) = (&mut self.hdr, &mut self.versus, &mut self.session);
        let finish = session.finish(&mut |r| {
            app.client.live.ingest(r);
            if let Some(t) = hdr.as_mut() {
                t.record(r);
            }
            versus.record(r);
            kept.record(r);
        });
        if let Some(t) = self.hdr.as_mut() {
            t.end_run();
        }
        self.session.end_run();
        if finish.load.is_some() {
            self.totals.load = finish.load;
        }
        if let Some(log) = finish.log {
            self.totals.log_rows += log.rows;
            self.totals.log_dropped += log.dropped;
            if let Some(e) = log.error {
                app.status = Some(e.to_string());
                self.totals.log_error = Some(e.to_string());
            }
        }
        match finish.outcome {
            Ok(o) if keep => {
                // What the report will count for this run: its measured time.
                app.client.run_elapsed = o.measured;
                self.absorb(&o);
            }
            Ok(_) => {}
            Err(e) => {
                app.status = Some(format!("measurement stopped: {e}"));
                let code = if e.is_usage() {
                    exit::USAGE
                } else {
                    exit::RUNTIME
                };
                self.failure = Some((e.to_string(), code));
            }
        }
    }

    fn absorb(&mut self, o: &ClientOutcome) {
        if let Some(why) = &o.placement.refused
            && !self.warnings.contains(why)
        {
            self.warnings.push(why.clone());
        }
        let t = &mut self.totals;
        t.stats.merge(&o.stats);
        t.measured += o.measured;
        t.placement = Some(o.placement.clone());
        t.stale_stamps += o.stale_stamps;
        t.unauthenticated += o.unauthenticated;
        t.tcp = o.tcp.clone().or(t.tcp.take());
        if o.extensions.is_some() {
            t.extensions.clone_from(&o.extensions);
        }
        t.gave_up = o.gave_up;
    }

    /// Starts the current role's threads.
    pub fn start(&mut self, app: &mut App) {
        // Cleared first, so news from starting (STAMP not served) stays.
        app.status = None;
        let started = match app.role {
            Role::Client => self.start_client(app),
            Role::Server => {
                self.served.used = true;
                self.ensure_reflector(app).map(|_| ())
            }
        };
        match started {
            Ok(()) => app.running = true,
            Err((why, code)) => {
                app.running = false;
                app.status = Some(format!("cannot start: {why}"));
                self.failure = Some((why, code));
            }
        }
    }

    /// Stops the current role's threads.
    pub fn stop(&mut self, app: &mut App) {
        match app.role {
            Role::Client => self.end_client(app, true),
            Role::Server => self.stop_reflector(app),
        }
        app.running = false;
    }

    /// Switches role: stops this one, starts the other. A reflector the
    /// client measures stays up, so its port and sessions survive the switch.
    pub fn switch_role(&mut self, app: &mut App) {
        match app.role {
            Role::Client => self.end_client(app, true),
            Role::Server if !self.self_target => self.stop_reflector(app),
            Role::Server => {}
        }
        app.running = false;
        app.role = match app.role {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        };
        app.anim = Default::default();
        app.frozen = None;
        self.start(app);
    }

    /// Clears statistics. A running client restarts, so its own totals
    /// start from zero too.
    pub fn clear(&mut self, app: &mut App) {
        let restart = self.client.is_some();
        self.end_client(app, false);
        self.totals.stats.clear();
        self.totals.measured = Duration::ZERO;
        self.versus =
            super::versus::Versus::new().with_min_effect(self.client_plan.profile.min_effect);
        self.session.cut();
        self.session.clear_slices();
        self.served.base = self.served.last;
        app.clear();
        if restart && let Err((why, code)) = self.start_client(app) {
            app.running = false;
            app.status = Some(format!("cannot restart: {why}"));
            self.failure = Some((why, code));
        }
    }

    /// Once per frame: moves what the threads produced into the display.
    pub fn poll(&mut self, app: &mut App, now: Instant) {
        let mut new_packets = 0u64;
        if let Some(session) = self.client.as_mut() {
            let (hdr, versus, kept) = (&mut self.hdr, &mut self.versus, &mut self.session);
            let (window_started, run_started) = (&mut self.window_started, self.run_started);
            let far = &mut self.far;
            session.drain(&mut |r| {
                far.record(r);
                // A record joins the window of its own time, not the
                // frame's: at a low --fps one frame drains several windows.
                let at = run_started + Duration::from_nanos(r.at_ns);
                close_windows(app, window_started, at.min(now));
                if let Some(t) = hdr.as_mut() {
                    t.record(r);
                }
                versus.record(r);
                kept.record(r);
                app.client.live.ingest(r);
                if matches!(r.kind, RecordKind::Sample | RecordKind::Lost) {
                    new_packets += 1;
                    app.client.run_done += u64::from(!r.warmup);
                }
            });
            let board = &mut app.client.responders;
            session.responder_entries(&mut |e| board.name(&e));
            session.drain_responders(&mut |i, r| board.ingest(i, r));
            app.client.ring_overflow = session.ring_overflow();
            app.client.run_elapsed = now.duration_since(self.run_started);
            let now_ns = app.client.run_elapsed.as_nanos() as u64;
            self.far.tick(now_ns);
            app.client.silence = self.far.silence(now_ns);
            app.client.load = session.load();
            if session.log_failure().is_some() {
                // A log that cannot be written ends the run, as headless.
                session.stop();
            }
            if session.is_finished() {
                self.end_client(app, true);
                app.running = false;
                if app.status.is_none() {
                    app.status =
                        Some("run complete · space measures again · q prints the summary".into());
                }
            }
        }
        let mut reflected = 0;
        if let Some(session) = self.server.as_mut() {
            let served = &mut self.served;
            session.drain(|side, ev| reflected += served.apply(side, ev, app));
        }
        let newest = app
            .client
            .live
            .last_rtt_ns
            .map(|rtt| (app.client.live.last_seq, rtt));
        // `--update N` counts packets; `--update DURATION` counts time.
        let (done, every, newest) = match (app.update_every, app.role) {
            (Every::Packets(n), Role::Client) => (new_packets, n, newest),
            (Every::Packets(n), Role::Server) => (reflected, n, None),
            (Every::Time(d), role) => (
                1_000_000 / u64::from(app.fps.max(1)),
                d.as_micros() as u64,
                newest.filter(|_| role == Role::Client),
            ),
        };
        app.anim.on_frame(done, every, newest);
        if let Some(view) = self.versus.update(now) {
            app.client.versus = Some(view);
        }
        close_windows(app, &mut self.window_started, now);
    }

    /// Why `s` and `b` cannot be used here, if they cannot: a profile
    /// keeps a host pair, and the loopback measurement has none.
    pub fn profiles_refused(&self) -> Option<String> {
        (self.client_plan.target == Target::Loopback).then(|| {
            "profiles keep a host pair, and loopback has none: save one from synapse client ADDR"
                .into()
        })
    }

    /// Saves the client's settings as profile `name` (the `s` key).
    pub fn save_profile(&mut self, app: &mut App, name: &str) {
        if let Some(why) = self.profiles_refused() {
            app.status = Some(why);
            return;
        }
        let path = self.client_plan.profile.config_path.clone();
        let settings = &self.client_plan.profile.settings;
        app.status = Some(
            match store::save_profile(&path, name, settings, &settings_schema()) {
                Ok(()) => {
                    self.client_plan.profile.name = Some(name.to_string());
                    app.profile = Some(name.to_string());
                    format!("saved profile '{name}' in {}", path.display())
                }
                Err(e) => format!("cannot save the profile: {e}"),
            },
        );
    }

    /// Keeps the figures so far as the profile's baseline (the `b` key);
    /// a baseline already stored is replaced only once the user says yes.
    pub fn set_baseline(&mut self, app: &mut App) {
        if let Some(why) = self.profiles_refused() {
            app.status = Some(why);
            return;
        }
        let Some(name) = self.client_plan.profile.name.clone() else {
            app.status = Some("no profile yet: press s to save one, then b".into());
            return;
        };
        if let Some(old) = &self.client_plan.profile.baseline {
            app.confirm = Some(Confirm::ReplaceBaseline {
                profile: name,
                date: old.date.clone(),
            });
            return;
        }
        self.store_baseline(app, &name);
    }

    /// The user answered yes.
    pub fn answer(&mut self, app: &mut App, question: Confirm) {
        match question {
            Confirm::ReplaceBaseline { profile, .. } => self.store_baseline(app, &profile),
        }
    }

    fn store_baseline(&mut self, app: &mut App, name: &str) {
        let summary = Summary::from_stats(app.client.live.total(), Duration::ZERO);
        let source = self
            .totals
            .stamping
            .as_ref()
            .map_or("user", |s| s.source.name());
        let Some(b) = Baseline::from_summary(&summary, source, std::time::SystemTime::now()) else {
            app.status = Some("nothing measured yet to keep as a baseline".into());
            return;
        };
        let b = b.of_kind(self.client_plan.run_kind());
        let path = self.client_plan.profile.config_path.clone();
        let now = std::time::SystemTime::now();
        let saved = store::save_baseline(&path, name, &b)
            .and_then(|()| baseline_runs::save(&path, name, &self.session_intervals(), now, true));
        app.status = Some(match saved {
            Ok(_) => {
                self.client_plan.profile.baseline = Some(b.clone());
                app.baseline = Some(b);
                format!(
                    "baseline of profile '{name}' set from {}",
                    count_of(summary.packets.received, "sample")
                )
            }
            Err(e) => format!("cannot save the baseline: {e}"),
        });
    }

    /// The session's slices as intervals, for a baseline's interval log.
    fn session_intervals(&self) -> Vec<synapse_stats::intervals::Interval> {
        let timeout = self.client_plan.settings.timeout.as_nanos() as u64;
        self.session
            .slices()
            .iter()
            .map(|s| s.to_interval(timeout))
            .collect()
    }

    /// Stops everything and returns what was measured; `signal`: the
    /// signal that ended the display.
    pub fn finish(mut self, app: &mut App, signal: Option<i32>) -> Finale {
        self.end_client(app, true);
        // One rule with the headless run: stopped before the length asked
        // (`--packets`, `--duration`) is interrupted, not judged; a run
        // asked for no length ends normally when the user quits.
        let asked =
            self.client_plan.packets.is_some() || self.client_plan.settings.duration.is_some();
        let interrupted = signal.is_some() || (asked && self.cut_short);
        self.stop_reflector(app);
        let hdr_log = self.hdr.take().and_then(|t| t.finish().0);
        let slices = self.session.slices();
        let t = &self.totals;
        let report = (t.stats.counters().sent > 0).then(|| {
            let outcome = ClientOutcome {
                stats: t.stats.clone(),
                measured: t.measured,
                placement: t.placement.clone().unwrap_or(Placement::plain(
                    self.client_plan.thread.cpu,
                    self.client_plan.thread.cpu_auto,
                )),
                interrupted,
                ring_overflow: 0,
                log_overflow: t.log_dropped,
                stale_stamps: t.stale_stamps,
                unauthenticated: t.unauthenticated,
                stamping: t.stamping.clone().unwrap_or_default(),
                tcp: t.tcp.clone(),
                extensions: t.extensions.clone(),
                nic_clock: None,
                gave_up: t.gave_up,
                group: None,
            };
            let fallback = SocketAddr::from(([0, 0, 0, 0], 0));
            // A load run's probes may speak STAMP to another port than asked.
            let described = t.load.as_ref().map_or(&self.client_plan, |l| &l.probe_plan);
            let mut report = Report::new(
                described,
                t.target.unwrap_or(fallback),
                t.local.unwrap_or(fallback),
                &outcome,
                slices,
                crate::calibrate::kept_for_this_host().as_ref(),
            );
            report.log = self.client_plan.log.as_ref().map(|path| LogSummary {
                path: path.display().to_string(),
                rows: t.log_rows,
                dropped: t.log_dropped,
                error: t.log_error.clone(),
                reader_closed: false,
            });
            report.hdr_log = hdr_log;
            report.signal = signal;
            if let Some(l) = t.load.clone() {
                report.attach_load(l);
            }
            report
        });
        Finale {
            report,
            server: self.served.used.then(|| self.served.since_clear()),
            server_log: self.server_log,
            failure: self.failure,
            warnings: self.warnings,
        }
    }
}

impl ServerTotals {
    /// Folds one reflector event into the server view. Returns datagrams
    /// reflected since the previous totals of that reflector.
    fn apply(&mut self, side: Side, ev: ReflectorEvent, app: &mut App) -> u64 {
        match (side, ev) {
            (_, ReflectorEvent::Active(s)) => app.server.session_active(s),
            (_, ReflectorEvent::Ended(s)) => app.server.session_ended(s),
            (Side::Stamp, ReflectorEvent::Totals(t, _)) => {
                // A restarted reflector counts from zero: never negative.
                let new = t.packets.saturating_sub(app.server.stamp_totals.packets);
                app.server.stamp_totals = t;
                // On the echo reflector's clock, at its latest totals.
                app.server.answered_between(self.last_ns, self.last_ns, new);
                return new;
            }
            (Side::Echo, ReflectorEvent::Totals(t, at_ns)) => {
                let dt = at_ns.saturating_sub(self.last_ns);
                if dt > 0 && self.last_ns > 0 {
                    app.server.pps = (t.packets - self.last.packets) as f64 * 1e9 / dt as f64;
                }
                let new = t.packets.saturating_sub(self.last.packets);
                app.server.answered_between(self.last_ns, at_ns, new);
                self.last = t;
                self.last_ns = at_ns;
                app.server.now_ns = at_ns;
                app.server.totals = self.since_clear();
                return new;
            }
        }
        0
    }

    /// Reflector totals since the last clear.
    fn since_clear(&self) -> ReflectorTotals {
        let (b, t) = (self.base, self.last);
        ReflectorTotals {
            packets: t.packets - b.packets,
            bytes: t.bytes - b.bytes,
            sessions: t.sessions - b.sessions,
            send_errors: t.send_errors - b.send_errors,
            oversized: t.oversized - b.oversized,
            t2_from_user: t.t2_from_user - b.t2_from_user,
            refused: t.refused.since(&b.refused),
            tlv: t.tlv.since(&b.tlv),
        }
    }
}

/// Closes every window that ended by `t`, the one open since `started`
/// among them.
fn close_windows(app: &mut App, started: &mut Instant, t: Instant) {
    while t.saturating_duration_since(*started) >= WINDOW {
        app.client.live.close_window();
        app.client.responders.close_window();
        *started += WINDOW;
    }
}
