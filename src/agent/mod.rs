//! `synapse agent`: many peers, measured all the time, kept in Prometheus.
//!
//! - [`config`]: the `[agent]` table, the peers and their profiles, layered
//!   and resolved; read again on SIGHUP.
//! - [`spread`]: each host pair's phase, and the `max_pps` budget.
//! - [`metrics`]: the Prometheus families and what each record adds.
//! - [`http`]: `/metrics`, with content negotiation.
//! - [`window`]: each peer's recent figures for the table and `--json`.
//! - [`report`], [`table`], [`live`]: the headless lines, the live table,
//!   and its terminal loop.
//!
//! The measurement side is [`crate::session::AgentSession`]: this module
//! is a front end over it, as the live display and the headless reports
//! are over the client and server sessions.

pub mod config;
pub mod http;
pub mod live;
pub mod metrics;
pub mod report;
pub mod spread;
pub mod table;
pub mod window;

use crate::cli::AgentArgs;
use crate::console;
use crate::error::{AppError, exit};
use crate::plan::agent::AgentConfig;
use crate::session::{AgentSession, Side};
use config::Sources;
use metrics::Metrics;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use synapse_engine::{ReflectorEvent, StopFlag};
use window::{Figures, PeerWindow};

/// How often the exporter reads the prober's ring.
pub const POLL: Duration = Duration::from_millis(50);

/// A running agent: its session, metrics and windows.
#[derive(Debug)]
pub struct Agent {
    sources: Sources,
    /// The configuration in force (the last good one).
    pub cfg: AgentConfig,
    session: AgentSession,
    metrics: Metrics,
    /// Each peer's recent figures, in `cfg.peers` order.
    pub windows: Vec<PeerWindow>,
    /// Where `/metrics` is served.
    pub metrics_addr: std::net::SocketAddr,
    _server: http::MetricsServer,
    next_turn: Instant,
    /// How the probes are stamped, as the `timestamps` label says it.
    pub timestamps: String,
    /// What the agent's reflector answers ("answers on ADDR (UDP and TCP)").
    pub answers: String,
    /// Records the exporter missed, all told.
    pub overflow: u64,
    /// Reloads refused (the last good configuration kept running).
    pub reload_errors: u64,
    /// `--hdr-log`: every peer's series, `PEER/rtt` and the rest.
    hdr: Option<crate::session::IntervalTap>,
}

/// Signals the agent answers: SIGINT and SIGTERM stop it, SIGHUP reloads.
#[derive(Debug, Clone)]
pub struct Signals {
    /// Raised by SIGINT or SIGTERM.
    pub stop: StopFlag,
    /// Raised by SIGHUP, lowered when the reload is done.
    pub reload: Arc<AtomicBool>,
}

impl Signals {
    /// Installs the handlers.
    pub fn install() -> Result<Self, AppError> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let s = Self {
            stop: StopFlag::new(),
            reload: Arc::new(AtomicBool::new(false)),
        };
        for sig in [SIGINT, SIGTERM] {
            // A second one ends the process at once, should stopping hang.
            signal_hook::flag::register_conditional_shutdown(sig, 130, s.stop.as_atomic().clone())?;
            signal_hook::flag::register(sig, s.stop.as_atomic().clone())?;
        }
        signal_hook::flag::register(SIGHUP, Arc::clone(&s.reload))?;
        Ok(s)
    }
}

/// Runs `synapse agent` until stopped.
pub fn run(args: AgentArgs, matches: &clap::ArgMatches) -> Result<i32, AppError> {
    let schema = crate::cli::agent::agent_schema();
    let sub = matches.subcommand_matches("agent").unwrap_or(matches);
    let sources = Sources {
        typed: crate::config::Settings::from_matches(sub, &schema),
        config: args.config.clone(),
    };
    let cfg = config::load(&sources)?;
    if args.check {
        print!("{}", report::check_text(&cfg));
        return Ok(exit::PASS);
    }
    let signals = Signals::install()?;
    // Created first: a bad path fails before anything is sent.
    let tap = args
        .hdr
        .hdr_log
        .as_deref()
        .map(|p| {
            crate::session::IntervalTap::open(
                Some(p),
                args.hdr.hdr_interval,
                false,
                "synapse agent: series per peer, PEER/rtt and so on",
            )
        })
        .transpose()?;
    let mut agent = Agent::start(sources, cfg, &signals.stop)?;
    if let Some(tap) = tap {
        agent.log_intervals(tap);
    }
    console::note(&format!("metrics on http://{}/metrics", agent.metrics_addr));
    let live = !args.no_ui && !args.json && crate::plan::ui_possible();
    let outcome = if live {
        live::run(&mut agent, &signals)
    } else {
        report::run_headless(&mut agent, &signals, args.json)
    };
    let failure = agent.finish();
    outcome?;
    match failure {
        Some(why) => Err(AppError::Runtime(anyhow::anyhow!(why))),
        None => Ok(exit::PASS),
    }
}

impl Agent {
    /// Starts the session and the metrics server for `cfg`.
    pub fn start(sources: Sources, cfg: AgentConfig, stop: &StopFlag) -> Result<Self, AppError> {
        let mut registry = Registry::default();
        let mut metrics = Metrics::new(&mut registry, &cfg.name);
        let registry = Arc::new(registry);
        // Listening first: a taken port fails before anything is sent.
        let server = http::serve(Arc::clone(&registry), cfg.metrics_listen).map_err(|e| {
            AppError::Usage(format!("--metrics-listen {}: {e}", cfg.metrics_listen))
        })?;
        let session = AgentSession::start(&cfg, stop)?;
        if let Some(why) = session.stamp_refused() {
            console::note(why);
        }
        if let Some(why) = session.tcp_refused() {
            console::note(why);
        }
        if let Some(at) = cfg
            .reflect
            .filter(|a| cfg.admission.allow.is_open() && !a.ip().is_loopback())
        {
            console::note(&format!(
                "the reflector answers every source on {at}: --allow CIDR limits who"
            ));
        }
        let timestamps = stamping_label(session.stamping().or_else(|| session.stamping_of(0)));
        metrics.set_peers_stamped(&cfg.peers, |i| stamping_label(session.stamping_of(i)));
        Ok(Self {
            windows: vec![PeerWindow::default(); cfg.peers.len()],
            next_turn: Instant::now() + cfg.report_every,
            metrics_addr: server.addr,
            _server: server,
            sources,
            cfg,
            answers: session.answers(),
            session,
            metrics,
            timestamps,
            overflow: 0,
            reload_errors: 0,
            hdr: None,
        })
    }

    /// Writes every peer's intervals to an interval log from now on.
    pub fn log_intervals(&mut self, tap: crate::session::IntervalTap) {
        self.hdr = Some(tap);
    }

    /// Reads what the measurement threads produced since the last call.
    pub fn poll(&mut self) {
        let (metrics, windows) = (&mut self.metrics, &mut self.windows);
        let (hdr, cfg) = (&mut self.hdr, &self.cfg);
        let now = hdr.as_ref().map(|t| t.base().elapsed());
        self.session.drain(|peer, r| {
            let i = peer.unwrap_or(usize::MAX);
            metrics.record(i, r);
            if let Some(w) = windows.get_mut(i) {
                w.record(r);
            }
            if let (Some(tap), Some(now), Some(p)) = (hdr.as_mut(), now, cfg.peers.get(i)) {
                let prefix = format!("{}/", crate::hdr_log::tag_safe(&p.name));
                tap.add_record_at(now, r, cfg.timeout, &prefix);
            }
        });
        self.session.drain_reflector(|side, ev| {
            if let ReflectorEvent::Totals(t, _) = ev {
                metrics.reflected(side == Side::Stamp, &t);
            }
        });
        self.overflow = self.session.ring_overflow();
    }

    /// When a window has ended: each peer's figures over it.
    pub fn turn_if_due(&mut self, now: Instant) -> Option<Vec<Figures>> {
        if now < self.next_turn {
            return None;
        }
        self.next_turn = now + self.cfg.report_every;
        Some(self.windows.iter_mut().map(PeerWindow::turn).collect())
    }

    /// Reads the configuration again: a good one replaces the running
    /// one (the peers' prober is restarted), a bad one is reported and the
    /// last good one keeps running.
    pub fn reload(&mut self) {
        let cfg = match config::load(&self.sources) {
            Ok(cfg) => cfg,
            Err(e) => {
                self.reload_errors += 1;
                console::error(&format!(
                    "reload refused, the last good configuration runs on: {e}"
                ));
                return;
            }
        };
        let fixed = |c: &AgentConfig| {
            (
                c.reflect,
                c.stamp_port,
                c.metrics_listen,
                c.name.clone(),
                c.admission.clone(),
            )
        };
        if fixed(&cfg) != fixed(&self.cfg) {
            console::warning(
                "reload: name, reflect, stamp_port, allow and metrics_listen take effect on restart",
            );
        }
        self.poll();
        if let Err(e) = self.session.restart_prober(&cfg) {
            self.reload_errors += 1;
            console::error(&format!(
                "reload: cannot start the prober ({e}); the last good configuration runs on"
            ));
            if let Err(e) = self.session.restart_prober(&self.cfg) {
                console::error(&format!("and the last good one cannot start again: {e}"));
            }
            return;
        }
        let s = &self.session;
        self.timestamps = stamping_label(s.stamping().or_else(|| s.stamping_of(0)));
        let session = &self.session;
        self.metrics
            .set_peers_stamped(&cfg.peers, |i| stamping_label(session.stamping_of(i)));
        // A peer that stays keeps its window; a new one starts empty.
        let mut old: Vec<(String, PeerWindow)> = self
            .cfg
            .peers
            .iter()
            .map(|p| p.name.clone())
            .zip(std::mem::take(&mut self.windows))
            .collect();
        self.windows = cfg
            .peers
            .iter()
            .map(|p| match old.iter().position(|(n, _)| *n == p.name) {
                Some(i) => old.swap_remove(i).1,
                None => PeerWindow::default(),
            })
            .collect();
        console::note(&format!(
            "reloaded: {}",
            synapse_units::count_of(cfg.peers.len() as u64, "peer")
        ));
        self.cfg = cfg;
    }

    /// One turn of any front end's loop: read the threads. Why the agent
    /// must stop, if it must.
    pub fn step(&mut self) -> Option<String> {
        self.poll();
        self.session.failure()
    }

    /// Stops the threads and reads their last records. Why a thread
    /// failed, if one did.
    pub fn finish(self) -> Option<String> {
        let Agent {
            session,
            mut metrics,
            hdr,
            ..
        } = self;
        let outcome = session.finish(|peer, r| metrics.record(peer.unwrap_or(usize::MAX), r));
        let log = hdr.and_then(|t| t.finish().0);
        if let Some(h) = &log {
            console::note(&format!(
                "interval log: {} written to {}",
                synapse_units::count_of(h.intervals, "interval"),
                h.path.display()
            ));
        }
        match (outcome, log.and_then(|h| h.error)) {
            (Some(Err(e)), _) => Some(e.to_string()),
            (_, Some(e)) => Some(e),
            _ => None,
        }
    }
}

/// The `timestamps` label: the clock that stamps the probes.
fn stamping_label(s: Option<&synapse_engine::StampingInfo>) -> String {
    s.map_or_else(|| "none".into(), |st| st.source.name().to_string())
}
