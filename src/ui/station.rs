//! The engine side of the live display: which threads run in which role,
//! feeding their output into the [`App`] each frame, and keeping the
//! authoritative totals for the summary printed on quit.
//!
//! The reflector runs in the server role, and also in the client role when
//! the client measures this process's own reflector (the loopback default,
//! or a server that switched to client). It keeps its address across
//! restarts, so switching back and forth never moves the port.

use super::app::{App, Role};
use crate::config::{Baseline, store};
use crate::engine::{
    ClientOutcome, ClientRun, Placement, ReflectorEvent, ReflectorRun, ReflectorTotals,
    StampingInfo, StopFlag, start_client, start_reflector,
};
use crate::error::AppError;
use crate::launch::RING_CAPACITY;
use crate::plan::{ClientPlan, ServerPlan, Target};
use crate::report::packet_log::{PacketLog, RunningLog};
use crate::report::{LogSummary, Report};
use crate::stats::{RecordKind, Stats, Summary, WINDOW};
use crate::units::count_of;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Folds a STAMP reflector's events into the server view: its clients join
/// the same table, its totals are shown apart. Returns packets reflected
/// since the last call.
fn drain_sessions(r: &mut ReflectorRun, app: &mut App) -> u64 {
    let before = app.server.stamp_totals.packets;
    while let Ok(ev) = r.events.pop() {
        match ev {
            ReflectorEvent::Active(s) => app.server.session_active(s),
            ReflectorEvent::Ended(s) => app.server.session_ended(s),
            ReflectorEvent::Totals(t, _) => app.server.stamp_totals = t,
        }
    }
    // A restarted reflector counts from zero: never a negative delta.
    app.server.stamp_totals.packets.saturating_sub(before)
}

/// What the live display measured, for the summary printed after it closes.
#[derive(Debug)]
pub struct Finale {
    /// The client report, if anything was measured.
    pub report: Option<Report>,
    /// Reflector totals, if the reflector ever ran in the server role.
    pub server: Option<ReflectorTotals>,
}

/// Engine threads and the totals they produced.
#[derive(Debug)]
pub struct Station {
    client_plan: ClientPlan,
    server_plan: ServerPlan,
    /// The client measures our own reflector.
    self_target: bool,
    reflector: Option<ReflectorRun>,
    /// The STAMP reflector, in the server role, when its port could be bound.
    stamp: Option<ReflectorRun>,
    /// Where the reflector listens, once it has bound (keeps the port).
    reflector_addr: Option<SocketAddr>,
    client: Option<ClientRun>,
    run_started: Instant,
    window_started: Instant,
    totals: Stats,
    measured: Duration,
    placement: Option<Placement>,
    client_local: Option<SocketAddr>,
    client_target: Option<SocketAddr>,
    /// How the latest client run stamps its packets.
    stamping: Option<StampingInfo>,
    /// `--log`: the current run's writer, and whether the file was started.
    log: Option<RunningLog>,
    log_started: bool,
    /// Rows the log holds and packets it missed, over all runs kept.
    log_rows: u64,
    log_dropped: u64,
    /// TX stamps that came after their packet, over all runs kept.
    stale_stamps: u64,
    server_used: bool,
    server_base: ReflectorTotals,
    server_last: ReflectorTotals,
    server_last_ns: u64,
}

impl Station {
    /// A station for these plans; nothing runs until [`Station::start`].
    pub fn new(client_plan: ClientPlan, server_plan: ServerPlan, started_as_server: bool) -> Self {
        let self_target = started_as_server || client_plan.target == Target::Loopback;
        let now = Instant::now();
        Self {
            client_plan,
            server_plan,
            self_target,
            reflector: None,
            stamp: None,
            reflector_addr: None,
            client: None,
            run_started: now,
            window_started: now,
            totals: Stats::new(),
            measured: Duration::ZERO,
            placement: None,
            client_local: None,
            client_target: None,
            stamping: None,
            log: None,
            log_started: false,
            log_rows: 0,
            log_dropped: 0,
            stale_stamps: 0,
            server_used: false,
            server_base: ReflectorTotals::default(),
            server_last: ReflectorTotals::default(),
            server_last_ns: 0,
        }
    }

    /// The address the client side measures, as known before it starts.
    pub fn target_label(&self) -> String {
        match (self.client_plan.target, self.reflector_addr) {
            (Target::Remote(a), _) => a.to_string(),
            (Target::Loopback, Some(a)) => a.to_string(),
            (Target::Loopback, None) => "127.0.0.1 (in-process reflector)".to_string(),
        }
    }

    fn ensure_reflector(&mut self, app: &mut App) -> Result<(), AppError> {
        if self.reflector.is_some() {
            return Ok(());
        }
        let p = &self.server_plan;
        let mut cfg = p.reflector_config(self.reflector_addr.unwrap_or(p.bind));
        if self.client_plan.stamp && self.client_plan.target == Target::Loopback {
            // The in-process reflector speaks what the client speaks.
            cfg.protocol = crate::engine::Protocol::Stamp;
        }
        let run = start_reflector(cfg, StopFlag::new())?;
        self.reflector_addr = Some(run.local);
        app.server.bind = run.local.to_string();
        // A fresh reflector counts from zero again.
        self.server_base = ReflectorTotals::default();
        self.server_last = ReflectorTotals::default();
        self.server_last_ns = 0;
        self.reflector = Some(run);
        Ok(())
    }

    /// Starts the STAMP reflector if the plan wants one; a port that cannot
    /// be bound is shown, and plain echo goes on.
    fn start_stamp(&mut self, app: &mut App) {
        let Some(cfg) = self
            .server_plan
            .stamp_config()
            .filter(|_| self.stamp.is_none())
        else {
            return;
        };
        match start_reflector(cfg, StopFlag::new()) {
            Ok(run) => {
                app.server.stamp = Some(Ok(run.local.to_string()));
                app.server.stamp_totals = ReflectorTotals::default();
                self.stamp = Some(run);
            }
            Err(e) => {
                app.status = Some(format!("STAMP not served ({e}); plain echo goes on"));
                app.server.stamp = Some(Err(e.to_string()));
            }
        }
    }

    fn stop_stamp(&mut self, app: &mut App) {
        if let Some(mut r) = self.stamp.take() {
            r.stop();
            let outcome = r.join();
            drain_sessions(&mut r, app);
            if let Ok(o) = outcome {
                app.server.stamp_totals = o.totals;
                for s in o.open_at_stop {
                    app.server.session_ended(s);
                }
            }
        }
    }

    fn stop_reflector(&mut self, app: &mut App) {
        self.stop_stamp(app);
        if let Some(mut r) = self.reflector.take() {
            r.stop();
            let outcome = r.join();
            self.drain_reflector_events(&mut r, app);
            if let Ok(o) = outcome {
                // The thread's own totals are exact; events are best effort.
                self.server_last = o.totals;
                for s in o.open_at_stop {
                    app.server.session_ended(s);
                }
            }
        }
    }

    fn start_client(&mut self, app: &mut App) -> Result<(), AppError> {
        let server = if self.self_target {
            self.ensure_reflector(app)?;
            match (self.client_plan.target, self.reflector_addr) {
                (Target::Remote(a), _) => a,
                (Target::Loopback, Some(a)) => a,
                (Target::Loopback, None) => unreachable!("the reflector has just bound"),
            }
        } else {
            match self.client_plan.target {
                Target::Remote(a) => a,
                Target::Loopback => unreachable!("loopback targets are self targets"),
            }
        };
        // The file is opened first, so a bad path stops the start.
        let log = match &self.client_plan.log {
            Some(path) if self.log_started => Some(PacketLog::append(path)),
            Some(path) => Some(PacketLog::create(path)),
            None => None,
        }
        .transpose()
        .map_err(AppError::Usage)?;
        let mut run = start_client(
            self.client_plan.client_config(server, RING_CAPACITY),
            StopFlag::new(),
        )?;
        if let (Some(log), Some(points)) = (log, run.points.take()) {
            self.log = Some(log.start(vec![points])?);
            self.log_started = true;
        }
        self.client_local = Some(run.local);
        self.client_target = Some(server);
        app.client.stamping = Some(run.stamping.clone());
        app.client.live.use_segments(run.stamping.segments);
        // Another split (a role switch to another peer) starts the split
        // afresh; the RTT figures are kept.
        self.totals.use_segments(run.stamping.segments);
        self.stamping = Some(run.stamping.clone());
        app.client.info.local = run.local.to_string();
        app.client.info.target = server.to_string();
        app.client.run_done = 0;
        app.client.run_elapsed = Duration::ZERO;
        self.run_started = Instant::now();
        self.client = Some(run);
        Ok(())
    }

    /// Waits for the client thread and folds its outcome into the totals
    /// (or drops it, when clearing).
    fn end_client(&mut self, app: &mut App, keep: bool) {
        let Some(mut run) = self.client.take() else {
            return;
        };
        run.stop();
        let outcome = run.join();
        match self.log.take().map(RunningLog::finish) {
            Some(Ok(rows)) => self.log_rows += rows,
            Some(Err(e)) => app.status = Some(e),
            None => {}
        }
        // Whatever is still in the ring belongs to the live view too.
        while let Ok(r) = run.records.pop() {
            app.client.live.ingest(&r);
        }
        match outcome {
            Ok(o) if keep => self.absorb(&o),
            Ok(_) => {}
            Err(e) => app.status = Some(format!("measurement stopped: {e}")),
        }
    }

    fn absorb(&mut self, o: &ClientOutcome) {
        self.totals.merge(&o.stats);
        self.measured += o.measured;
        self.placement = Some(o.placement);
        self.log_dropped += o.log_overflow;
        self.stale_stamps += o.stale_stamps;
    }

    /// Starts the current role's threads.
    pub fn start(&mut self, app: &mut App) {
        // Cleared first, so news from starting (STAMP not served) stays.
        app.status = None;
        let started = match app.role {
            Role::Client => self.start_client(app),
            Role::Server => {
                self.server_used = true;
                self.ensure_reflector(app)
                    .inspect(|()| self.start_stamp(app))
            }
        };
        match started {
            Ok(()) => app.running = true,
            Err(e) => {
                app.running = false;
                app.status = Some(format!("cannot start: {e}"));
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
            Role::Server => self.stop_stamp(app),
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
        self.totals.clear();
        self.measured = Duration::ZERO;
        self.server_base = self.server_last;
        app.clear();
        if restart && let Err(e) = self.start_client(app) {
            app.running = false;
            app.status = Some(format!("cannot restart: {e}"));
        }
    }

    fn drain_reflector_events(&mut self, r: &mut ReflectorRun, app: &mut App) -> u64 {
        let before = self.server_last.packets;
        while let Ok(ev) = r.events.pop() {
            match ev {
                ReflectorEvent::Active(s) => app.server.session_active(s),
                ReflectorEvent::Ended(s) => app.server.session_ended(s),
                ReflectorEvent::Totals(t, at_ns) => {
                    let dt = at_ns.saturating_sub(self.server_last_ns);
                    if dt > 0 && self.server_last_ns > 0 {
                        app.server.pps =
                            (t.packets - self.server_last.packets) as f64 * 1e9 / dt as f64;
                    }
                    self.server_last = t;
                    self.server_last_ns = at_ns;
                    app.server.now_ns = at_ns;
                }
            }
        }
        app.server.totals = self.server_since_clear();
        self.server_last.packets.saturating_sub(before)
    }

    /// Reflector totals since the last clear.
    fn server_since_clear(&self) -> ReflectorTotals {
        let (b, t) = (self.server_base, self.server_last);
        ReflectorTotals {
            packets: t.packets - b.packets,
            bytes: t.bytes - b.bytes,
            sessions: t.sessions - b.sessions,
            send_errors: t.send_errors - b.send_errors,
            oversized: t.oversized - b.oversized,
            malformed: t.malformed - b.malformed,
            t2_from_user: t.t2_from_user - b.t2_from_user,
            refused: t.refused - b.refused,
        }
    }

    /// Once per frame: moves what the threads produced into the display.
    pub fn poll(&mut self, app: &mut App, now: Instant) {
        let mut new_packets = 0u64;
        if let Some(run) = self.client.as_mut() {
            while let Ok(r) = run.records.pop() {
                app.client.live.ingest(&r);
                if matches!(r.kind, RecordKind::Sample | RecordKind::Lost) {
                    new_packets += 1;
                    app.client.run_done += u64::from(!r.warmup);
                }
            }
            app.client.ring_overflow = run.ring_overflow();
            app.client.run_elapsed = now.duration_since(self.run_started);
            if run.is_finished() {
                self.end_client(app, true);
                app.running = false;
                if app.status.is_none() {
                    app.status =
                        Some("run complete · space measures again · q prints the summary".into());
                }
            }
        }
        let mut reflected = 0;
        if let Some(mut r) = self.reflector.take() {
            reflected = self.drain_reflector_events(&mut r, app);
            self.reflector = Some(r);
        }
        if let Some(r) = self.stamp.as_mut() {
            reflected += drain_sessions(r, app);
        }
        let newest = app
            .client
            .live
            .last_rtt_ns
            .map(|rtt| (app.client.live.last_seq, rtt));
        match app.role {
            Role::Client => app.anim.on_frame(new_packets, app.update_every, newest),
            Role::Server => app.anim.on_frame(reflected, app.update_every, None),
        }
        while now.duration_since(self.window_started) >= WINDOW {
            app.client.live.close_window();
            self.window_started += WINDOW;
        }
    }

    /// Saves the client's settings as profile `name` (the `s` key).
    pub fn save_profile(&mut self, app: &mut App, name: &str) {
        if self.client_plan.target == Target::Loopback {
            app.status =
                Some("profiles keep a host pair: save one from synapse client ADDR".into());
            return;
        }
        let path = self.client_plan.profile.config_path.clone();
        app.status = Some(
            match store::save_profile(&path, name, &self.client_plan.settings()) {
                Ok(()) => {
                    self.client_plan.profile.name = Some(name.to_string());
                    app.profile = Some(name.to_string());
                    format!("saved profile '{name}' in {}", path.display())
                }
                Err(e) => format!("cannot save the profile: {e}"),
            },
        );
    }

    /// Keeps the figures so far as the profile's baseline (the `b` key).
    pub fn set_baseline(&mut self, app: &mut App) {
        let Some(name) = self.client_plan.profile.name.clone() else {
            app.status = Some("no profile yet: press s to save one, then b".into());
            return;
        };
        let summary = Summary::from_stats(app.client.live.total(), Duration::ZERO);
        let source = self.stamping.as_ref().map_or("user", |s| s.source.name());
        let Some(b) = Baseline::from_summary(&summary, source, std::time::SystemTime::now()) else {
            app.status = Some("nothing measured yet to keep as a baseline".into());
            return;
        };
        let path = self.client_plan.profile.config_path.clone();
        app.status = Some(match store::save_baseline(&path, &name, &b) {
            Ok(()) => {
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

    /// Stops everything and returns what was measured.
    pub fn finish(mut self, app: &mut App) -> Finale {
        self.end_client(app, true);
        self.stop_reflector(app);
        let report = (self.totals.counters().sent > 0).then(|| {
            let outcome = ClientOutcome {
                stats: self.totals.clone(),
                measured: self.measured,
                placement: self.placement.unwrap_or(Placement {
                    cpu: self.client_plan.thread.cpu,
                    cpu_auto: self.client_plan.thread.cpu_auto,
                    realtime: false,
                }),
                interrupted: false,
                ring_overflow: 0,
                log_overflow: self.log_dropped,
                stale_stamps: self.stale_stamps,
                stamping: self.stamping.clone().unwrap_or_default(),
            };
            let fallback = SocketAddr::from(([0, 0, 0, 0], 0));
            let mut report = Report::new(
                &self.client_plan,
                self.client_target.unwrap_or(fallback),
                self.client_local.unwrap_or(fallback),
                &outcome,
            );
            report.log = self.client_plan.log.as_ref().map(|path| LogSummary {
                path: path.display().to_string(),
                rows: self.log_rows,
                dropped: self.log_dropped,
            });
            report
        });
        Finale {
            report,
            server: self.server_used.then(|| self.server_since_clear()),
        }
    }
}
