//! `synapse agent`: many peers, measured all the time, kept in Prometheus.
//!
//! - The `[agent]` table, the peers and their profiles, layered and
//!   resolved (read again on SIGHUP), each host pair's phase and the
//!   `max_pps` budget, topology labels: planning, in
//!   [`crate::plan::agent`].
//! - [`discovery`]: peers from a peers file, DNS and SRV, asked again while
//!   running; [`subset`]: which of them this host probes (tier, fanout).
//! - [`paths`]: each peer's paths (`--paths`); [`inbound`]: who probes
//!   this host.
//! - [`metrics`]: the Prometheus families and what each record adds;
//!   [`fleet_metrics`]: discovery's, the paths' and the reflector's
//!   sources, set once a window.
//! - `register`: a family in the registry, one line each.
//! - [`http`]: `/metrics`, with content negotiation.
//! - [`window`]: each peer's recent figures for the table and `--json`.
//! - [`report`], [`table`], [`live`]: the headless lines, the live table,
//!   and its terminal loop.
//!
//! The measurement side is [`crate::session::AgentSession`]: this module
//! is a front end over it, as the live display and the headless reports
//! are over the client and server sessions.

pub mod buckets;
pub mod clock_metrics;
pub mod discovery;
pub mod fleet_metrics;
pub mod health;
pub mod health_metrics;
pub mod http;
pub mod inbound;
pub mod live;
pub mod metrics;
pub mod pair;
pub mod paths;
mod register;
pub mod report;
pub mod responder_metrics;
pub mod subset;
pub mod table;
pub mod trace;
pub mod trace_metrics;
pub mod window;

use crate::cli::AgentArgs;
use crate::console;
use crate::error::{AppError, exit};
use crate::plan::agent::load::{self, Loaded, Sources};
use crate::plan::agent::phase;
use crate::plan::agent::{AgentConfig, PeerConfig};
use crate::session::{AgentSession, Side};
use discovery::{Discoverer, Discovery, Round, SourceStatus};
use metrics::Metrics;
use paths::PeerPaths;
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
    /// The configuration in force (the last good one); its peers are the
    /// named ones and the discovered ones chosen.
    pub cfg: AgentConfig,
    /// The peers named by `--peer` and `[agent.peers]`.
    named: Vec<PeerConfig>,
    /// The discovered peers chosen in the last round.
    discovered: Vec<PeerConfig>,
    discoverer: Option<Discoverer>,
    /// Each discovery source's state after the last round.
    pub discovery: Vec<SourceStatus>,
    /// Hosts discovered in the last round (this one excepted).
    pub discovered_hosts: usize,
    session: AgentSession,
    metrics: Metrics,
    /// Each peer's recent figures, in `cfg.peers` order.
    pub windows: Vec<PeerWindow>,
    /// Each peer's paths, in `cfg.peers` order.
    pub paths: Vec<PeerPaths>,
    /// Each path's source port.
    pub path_ports: Vec<u16>,
    inbound: inbound::Inbound,
    /// Sources that probed this host over the last window.
    pub probed_by: usize,
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
    /// What the last reload came to, for the live table (whose redraw
    /// hides what reached stderr).
    pub reloaded: Option<String>,
    /// `--hdr-log`: every peer's series, `PEER/rtt` and the rest.
    hdr: Option<crate::session::IntervalTap>,
    /// Each peer's series prefix in that log (`NAME/`), in `cfg.peers`
    /// order: made when the peers change, not for every record.
    hdr_prefixes: Vec<String>,
    /// `--trace-on-loss`: the traces of paths that lose.
    pub tracing: trace::Tracing,
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
    let loaded = load::load(&sources)?;
    let only_answers = nothing_to_do(&loaded.cfg)?;
    if args.check {
        let (cfg, first) = with_first_round(loaded)?;
        print!("{}", report::check_text(&cfg));
        if let Some((_, round)) = first {
            print!("{}", report::discovery_text(&round));
        }
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
    let mut agent = Agent::start(sources, loaded, &signals.stop)?;
    // Said once the reflector is up: a refused option is the only line.
    if only_answers {
        console::note(
            "no peers to probe: this agent only answers others (--peer, [agent.peers] or discovery add some)",
        );
    }
    if let Some(tap) = tap {
        agent.log_intervals(tap);
    }
    console::note(&format!("metrics on http://{}/metrics", agent.metrics_addr));
    let live = !args.no_ui && !args.json && crate::plan::ui_possible();
    let outcome = if live {
        let shown = live::run(&mut agent, &signals);
        // The table is gone with the terminal restored: what it showed,
        // peer by peer, stays on the screen.
        print!("{}", report::final_summary(&agent));
        shown
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

/// An agent that would probe nobody and answer nobody is refused; whether it
/// only answers (to be told so) is the answer.
fn nothing_to_do(c: &AgentConfig) -> Result<bool, AppError> {
    if !c.peers.is_empty() || c.discovery.any() {
        return Ok(false);
    }
    if c.reflect.is_none() {
        return Err(AppError::Usage(
            "nothing to do: no peers to probe (--peer, [agent.peers] or discovery) and --reflect none answers nobody".into(),
        ));
    }
    Ok(true)
}

impl Agent {
    /// Starts discovery's first round, the session and the metrics server.
    pub fn start(sources: Sources, loaded: Loaded, stop: &StopFlag) -> Result<Self, AppError> {
        let named = loaded.cfg.peers.clone();
        let (cfg, first) = with_first_round(loaded)?;
        let mut registry = Registry::default();
        let mut metrics = Metrics::new(&mut registry, &cfg.name);
        metrics.set_topology(&cfg.labels, &cfg.series_labels);
        let trace_metrics = trace_metrics::TraceMetrics::new(&mut registry, &cfg.name);
        let tracing = trace::Tracing::new(
            cfg.trace,
            trace_metrics,
            synapse_engine::trace::identity::random_token(),
        );
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
        metrics.fleet.chosen(&chosen_counts(&cfg.peers));
        let (discoverer, discovery, discovered, hosts) = match first {
            Some((d, round)) => {
                metrics.fleet.discovery(&round.sources);
                (
                    Some(Discoverer::start(d)?),
                    round.sources,
                    round.peers,
                    round.hosts,
                )
            }
            None => (None, Vec::new(), Vec::new(), 0),
        };
        Ok(Self {
            windows: vec![PeerWindow::default(); cfg.peers.len()],
            paths: vec![PeerPaths::default(); cfg.peers.len()],
            path_ports: session.path_ports(),
            inbound: inbound::Inbound::default(),
            probed_by: 0,
            next_turn: Instant::now() + cfg.report_every,
            metrics_addr: server.addr,
            _server: server,
            sources,
            named,
            discovered,
            discoverer,
            discovery,
            discovered_hosts: hosts,
            cfg,
            answers: session.answers(),
            session,
            metrics,
            timestamps,
            overflow: 0,
            reload_errors: 0,
            reloaded: None,
            hdr: None,
            hdr_prefixes: Vec::new(),
            tracing,
        })
    }

    /// Writes every peer's intervals to an interval log from now on.
    pub fn log_intervals(&mut self, tap: crate::session::IntervalTap) {
        self.hdr = Some(tap);
        self.hdr_prefixes = hdr_prefixes(&self.cfg.peers);
    }

    /// Reads what the measurement threads produced since the last call,
    /// and discovery's last round if one ended.
    pub fn poll(&mut self) {
        let (metrics, windows, paths) = (&mut self.metrics, &mut self.windows, &mut self.paths);
        let (hdr, prefixes, timeout) = (&mut self.hdr, &self.hdr_prefixes, self.cfg.timeout);
        let now = hdr.as_ref().map(|t| t.base().elapsed());
        self.session
            .drain_responders(|r| metrics.responders.record(&r));
        self.session.drain(|peer, path, r| {
            let i = peer.unwrap_or(usize::MAX);
            metrics.record(i, r);
            if let Some(w) = windows.get_mut(i) {
                w.record(r);
            }
            if let Some(p) = paths.get_mut(i) {
                p.record(path, r);
            }
            if let (Some(tap), Some(now), Some(prefix)) = (hdr.as_mut(), now, prefixes.get(i)) {
                tap.add_record_at(now, r, timeout, prefix);
            }
        });
        let inbound = &mut self.inbound;
        self.session.drain_reflector(|side, ev| match ev {
            ReflectorEvent::Totals(t, now_ns) => {
                metrics.reflected(side == Side::Stamp, &t);
                inbound.at(now_ns);
            }
            ReflectorEvent::Active(s) | ReflectorEvent::Ended(s) => inbound.saw(&s),
        });
        self.overflow = self.session.ring_overflow();
        if let Some(round) = self.discoverer.as_ref().and_then(Discoverer::latest) {
            self.apply_round(round);
        }
        self.tracing
            .poll(&mut self.session, &self.cfg.peers, Instant::now());
    }

    /// A discovery round's outcome: its failures reported, and the peers
    /// replaced if the chosen ones changed.
    fn apply_round(&mut self, round: Round) {
        self.metrics.fleet.discovery(&round.sources);
        for e in &round.errors {
            console::warning(&format!("discovery: {e}"));
        }
        self.discovery = round.sources;
        self.discovered_hosts = round.hosts;
        if same_peers(&self.discovered, &round.peers) {
            return;
        }
        let (before, after) = (names(&self.discovered), names(&round.peers));
        let gone = before.iter().filter(|n| !after.contains(n)).count();
        let new = after.iter().filter(|n| !before.contains(n)).count();
        self.discovered = round.peers;
        let mut cfg = self.cfg.clone();
        cfg.peers = merge(&self.named, &self.discovered, &cfg);
        if self.adopt(cfg).is_ok() {
            console::note(&format!(
                "discovery: {} found, {} probed ({new} new, {gone} gone)",
                synapse_units::count_of(round.hosts as u64, "host"),
                synapse_units::count_of(self.cfg.peers.len() as u64, "peer"),
            ));
        }
    }

    /// When a window has ended: each peer's figures over it.
    pub fn turn_if_due(&mut self, now: Instant) -> Option<Vec<Figures>> {
        if now < self.next_turn {
            return None;
        }
        self.next_turn = now + self.cfg.report_every;
        let ports = &self.path_ports;
        for (p, (paths, peer)) in self.paths.iter_mut().zip(&self.cfg.peers).enumerate() {
            let figures = paths.turn(ports);
            if self.cfg.paths > 1 && peer.transport == synapse_engine::Transport::Udp {
                self.metrics.path_spread(p, &paths::spread(figures));
            }
        }
        let window = self.cfg.report_every;
        self.tracing
            .window_ended(&self.cfg.peers, &self.paths, now, window);
        self.probed_by = self
            .inbound
            .sources(self.cfg.report_every.as_nanos() as u64);
        self.metrics.fleet.probed_by(self.probed_by);
        let figures: Vec<Figures> = self.windows.iter_mut().map(PeerWindow::turn).collect();
        for (p, f) in figures.iter().enumerate() {
            self.metrics.peer_up(p, health::up(f));
        }
        Some(figures)
    }

    /// Reads the configuration again: a good one replaces the running
    /// one (the peers' prober is restarted, discovery asks every source
    /// again), a bad one is reported and the last good one keeps running.
    pub fn reload(&mut self) {
        let loaded = match load::load(&self.sources).and_then(|l| {
            // A peers file that does not parse refuses the reload, as the
            // main file does; DNS is asked on discovery's own thread.
            if let Some(p) = &l.cfg.discovery.peers_file {
                load::read_peers_file(p)?;
            }
            Ok(l)
        }) {
            Ok(l) => l,
            Err(e) => {
                self.reload_errors += 1;
                let said = format!("reload refused, the last good configuration runs on: {e}");
                console::error(&said);
                self.reloaded = Some(said);
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
                c.labels.clone(),
                c.series_labels.clone(),
            )
        };
        if fixed(&loaded.cfg) != fixed(&self.cfg) {
            console::warning(
                "reload: name, label, series_label, reflect, stamp_port, allow and metrics_listen take effect on restart",
            );
        }
        self.named = loaded.cfg.peers.clone();
        self.restart_discovery(&loaded);
        let mut cfg = loaded.cfg;
        cfg.peers = merge(&self.named, &self.discovered, &cfg);
        self.reloaded = Some(if self.adopt(cfg).is_ok() {
            let said = format!(
                "reloaded: {}",
                synapse_units::count_of(self.cfg.peers.len() as u64, "peer")
            );
            console::note(&said);
            said
        } else {
            "reload refused: the prober could not start; the last good peers run on".into()
        });
    }

    /// Hands a reloaded configuration's discovery to its thread (which
    /// keeps each unchanged source's last good answer and asks again at
    /// once), or starts or stops the thread.
    fn restart_discovery(&mut self, loaded: &Loaded) {
        let c = &loaded.cfg;
        if !c.discovery.any() {
            self.discoverer = None;
            self.discovered.clear();
            return;
        }
        let me = discovery::me_of(&c.name, &c.labels, &c.discovery, c.reflect);
        let d = Discovery::new(c.discovery.clone(), me, loaded.maker.clone(), &c.peers);
        match &self.discoverer {
            Some(running) => running.replace(d),
            None => match Discoverer::start(d) {
                Ok(started) => {
                    started.now();
                    self.discoverer = Some(started);
                }
                Err(e) => console::error(&format!("reload: {e}")),
            },
        }
    }

    /// Runs `cfg`'s peers from now on: the probers restarted, a peer that
    /// stays keeps its window, paths and series, a new one starts empty.
    fn adopt(&mut self, cfg: AgentConfig) -> Result<(), ()> {
        self.poll_records();
        if let Err(e) = self.session.restart_prober(&cfg) {
            self.reload_errors += 1;
            console::error(&format!(
                "cannot start the prober ({e}); the last good peers run on"
            ));
            if let Err(e) = self.session.restart_prober(&self.cfg) {
                console::error(&format!("and the last good ones cannot start again: {e}"));
            }
            return Err(());
        }
        self.tracing.probers_restarted(cfg.trace);
        let s = &self.session;
        self.timestamps = stamping_label(s.stamping().or_else(|| s.stamping_of(0)));
        self.path_ports = s.path_ports();
        let session = &self.session;
        self.metrics
            .set_peers_stamped(&cfg.peers, |i| stamping_label(session.stamping_of(i)));
        self.metrics.fleet.chosen(&chosen_counts(&cfg.peers));
        let order = |c: &AgentConfig| c.peers.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        let (old, new) = (order(&self.cfg), order(&cfg));
        self.windows = carry(&old, std::mem::take(&mut self.windows), &new);
        self.paths = carry(&old, std::mem::take(&mut self.paths), &new);
        if self.hdr.is_some() {
            self.hdr_prefixes = hdr_prefixes(&cfg.peers);
        }
        self.cfg = cfg;
        Ok(())
    }

    /// Reads the measurement threads' records (before a restart drops
    /// them), without looking at discovery.
    fn poll_records(&mut self) {
        let discoverer = self.discoverer.take();
        self.poll();
        self.discoverer = discoverer;
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
        let outcome = session.finish(|peer, _, r| metrics.record(peer.unwrap_or(usize::MAX), r));
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

/// Loads discovery's first round into `loaded`'s configuration: its
/// peers are then the named ones and the discovered ones chosen. A peers
/// file that does not parse is an error here; a DNS failure is reported
/// and the agent starts with what it has.
pub(crate) fn with_first_round(
    loaded: Loaded,
) -> Result<(AgentConfig, Option<(Discovery, Round)>), AppError> {
    let Loaded { mut cfg, maker } = loaded;
    if !cfg.discovery.any() {
        return Ok((cfg, None));
    }
    let me = discovery::me_of(&cfg.name, &cfg.labels, &cfg.discovery, cfg.reflect);
    let mut d = Discovery::new(cfg.discovery.clone(), me, maker, &cfg.peers);
    let resolver = discovery::dns::Resolver::system().ok();
    let Some(round) = d.round(resolver.as_ref(), false, true)? else {
        return Ok((cfg, None));
    };
    for e in &round.errors {
        console::warning(&format!("discovery: {e}"));
    }
    cfg.peers = merge(&cfg.peers, &round.peers, &cfg);
    Ok((cfg, Some((d, round))))
}

/// The named peers, then the discovered ones that fit: of the named
/// peers' IP family (one socket per path), within `max_pps`.
fn merge(named: &[PeerConfig], discovered: &[PeerConfig], cfg: &AgentConfig) -> Vec<PeerConfig> {
    let family = named
        .first()
        .map(|p| p.addr.is_ipv4())
        .or(cfg.bind.map(|b| b.is_ipv4()))
        .or(discovered.first().map(|p| p.addr.is_ipv4()));
    let mut out = named.to_vec();
    let mut pps = phase::total_pps(named);
    let (mut other_family, mut over) = (0, 0);
    for p in discovered {
        let rate = 1.0 / p.schedule.interval.as_secs_f64();
        if family.is_some_and(|v4| v4 != p.addr.is_ipv4()) {
            other_family += 1;
        } else if pps + rate > cfg.max_pps * (1.0 + 1e-9) {
            over += 1;
        } else {
            pps += rate;
            out.push(p.clone());
        }
    }
    if other_family > 0 {
        console::warning(&format!(
            "discovery: {} of the other IP family left out (all probes leave from one socket)",
            synapse_units::count_of(other_family, "peer")
        ));
    }
    if over > 0 {
        console::warning(&format!(
            "discovery: {} left out, over max_pps {:.0}",
            synapse_units::count_of(over, "peer"),
            cfg.max_pps
        ));
    }
    out
}

/// Whether two sets of discovered peers would be probed alike.
fn same_peers(a: &[PeerConfig], b: &[PeerConfig]) -> bool {
    let key = |p: &PeerConfig| {
        (
            p.name.clone(),
            p.addr,
            p.transport,
            p.schedule.interval,
            p.size,
            p.stamp,
            p.labels.clone(),
            p.chosen,
        )
    };
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| key(x) == key(y))
}

fn names(peers: &[PeerConfig]) -> Vec<&str> {
    peers.iter().map(|p| p.name.as_str()).collect()
}

/// Each peer's series prefix in the interval log.
fn hdr_prefixes(peers: &[PeerConfig]) -> Vec<String> {
    peers
        .iter()
        .map(|p| crate::hdr_log::peer_prefix(&p.name))
        .collect()
}

/// How many peers were chosen each way.
fn chosen_counts(peers: &[PeerConfig]) -> Vec<(crate::plan::agent::Chosen, usize)> {
    use crate::plan::agent::Chosen;
    [Chosen::Named, Chosen::Tier, Chosen::Fanout]
        .into_iter()
        .map(|c| (c, peers.iter().filter(|p| p.chosen == c).count()))
        .collect()
}

/// Per-peer state in `new`'s order: a name in `old` keeps its own, a new
/// one starts from the default.
fn carry<T: Default>(old: &[String], state: Vec<T>, new: &[String]) -> Vec<T> {
    let mut old: Vec<(&String, T)> = old.iter().zip(state).collect();
    new.iter()
        .map(|n| match old.iter().position(|(o, _)| *o == n) {
            Some(i) => old.swap_remove(i).1,
            None => T::default(),
        })
        .collect()
}
