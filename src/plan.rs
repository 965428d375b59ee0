//! Turns the parsed command line into a validated plan: every default
//! resolved, every address resolved, every CPU checked. Nothing starts until
//! this succeeds, so bad input fails fast with one clear line.

use crate::cli::{Cli, ClientArgs, Command, RunArgs, ServerArgs};
use crate::config::layering::{Explicit, layer};
use crate::config::{self, Baseline, ConfigFile, Settings};
use crate::engine::{
    ClientConfig, Protocol, ReflectorConfig, Role, TimestampMode, choose_cpu, resolve, stamp,
};
use crate::error::AppError;
use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// The seed's default packet count for a bounded run.
pub const DEFAULT_PACKETS: u64 = 10_000;
/// The port `synapse server` listens on by default.
pub const DEFAULT_PORT: u16 = 8080;
/// Silence that ends a reflector session, unless `--session-idle` says otherwise.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(1);

/// How results are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The full-screen live display.
    Ui,
    /// The text report on stdout.
    Text,
    /// One JSON object on stdout.
    Json,
}

/// Who the client measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An in-process reflector on 127.0.0.1, started for the run.
    Loopback,
    /// A reflector elsewhere.
    Remote(SocketAddr),
}

/// A measurement thread's placement request, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPlan {
    /// CPU to pin to.
    pub cpu: usize,
    /// Picked by Synapse.
    pub cpu_auto: bool,
    /// Spin instead of blocking.
    pub busy_poll: bool,
    /// Ask for SCHED_FIFO.
    pub rt: bool,
}

/// A validated client run.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// Who to measure.
    pub target: Target,
    /// Local address, if given.
    pub bind: Option<SocketAddr>,
    /// Packet count (`None` with a duration, or unbounded in the live display).
    pub packets: Option<u64>,
    /// Measuring time.
    pub duration: Option<Duration>,
    /// Warm-up packets.
    pub warmup: u64,
    /// Per-reply timeout.
    pub timeout: Duration,
    /// Payload size.
    pub size: usize,
    /// Timestamp source asked for.
    pub timestamps: TimestampMode,
    /// STAMP instead of plain echo.
    pub stamp: bool,
    /// Per-packet CSV log.
    pub log: Option<PathBuf>,
    /// Animation sampling, in packets.
    pub update: u64,
    /// Verdict threshold on the mean.
    pub threshold: Duration,
    /// Client thread placement.
    pub thread: ThreadPlan,
    /// Placement of the in-process reflector (loopback only).
    pub reflector_thread: ThreadPlan,
    /// How to show results.
    pub output: Output,
    /// Live display frame rate.
    pub fps: u32,
    /// Configuration and profiles.
    pub profile: ProfileUse,
}

/// How the run relates to the configuration file.
#[derive(Debug, Clone, Default)]
pub struct ProfileUse {
    /// The file (whether or not it exists).
    pub config_path: PathBuf,
    /// The profile in use, chosen or matched.
    pub name: Option<String>,
    /// Its baseline, if it has one.
    pub baseline: Option<Baseline>,
    /// `--save-profile NAME`.
    pub save_as: Option<String>,
    /// `--set-baseline`.
    pub set_baseline: bool,
    /// `--fail-on-regression PERCENT`.
    pub fail_on_regression: Option<f64>,
    /// Things the user should be told before the run (which profile was
    /// matched, which options the command line overrode).
    pub notes: Vec<String>,
    /// `[defaults]` from the file, for runs planned later (role switches).
    pub defaults: Settings,
}

impl ClientPlan {
    /// The run's effective settings, as a profile would store them.
    pub fn settings(&self) -> Settings {
        Settings {
            bind: self.bind.map(|b| b.to_string()),
            server: match self.target {
                Target::Remote(a) => Some(a.to_string()),
                Target::Loopback => None,
            },
            packets: self.packets,
            duration: self.duration,
            warmup: Some(self.warmup),
            timeout_ms: Some(self.timeout.as_millis() as u64),
            update: Some(self.update),
            size: Some(self.size),
            cpu: (!self.thread.cpu_auto).then_some(self.thread.cpu),
            busy_poll: Some(self.thread.busy_poll),
            rt: Some(self.thread.rt),
            threshold: Some(self.threshold),
            fps: Some(self.fps),
            timestamps: Some(self.timestamps),
            stamp: Some(self.stamp),
            locations: Default::default(),
        }
    }

    /// The engine's settings for a run against `server`.
    pub fn client_config(&self, server: SocketAddr, ring_capacity: usize) -> ClientConfig {
        ClientConfig {
            server,
            bind: self.bind,
            packets: self.packets,
            duration: self.duration,
            warmup: self.warmup,
            timeout: self.timeout,
            size: self.size,
            cpu: self.thread.cpu,
            cpu_auto: self.thread.cpu_auto,
            busy_poll: self.thread.busy_poll,
            rt: self.thread.rt,
            ring_capacity,
            timestamps: self.timestamps,
            stamp: self.stamp,
            log_capacity: if self.log.is_some() { LOG_RING } else { 0 },
        }
    }

    /// The profile that `--set-baseline` (or the display's `b`) writes to.
    pub fn baseline_profile(&self) -> Option<&str> {
        self.profile
            .save_as
            .as_deref()
            .or(self.profile.name.as_deref())
    }
}

/// Packets the per-packet log can fall behind by: over half a second of a
/// 100 k packets/s run, in 10.5 MiB (168-byte points), allocated only with
/// `--log`.
const LOG_RING: usize = 1 << 16;

/// A validated reflector run.
#[derive(Debug, Clone)]
pub struct ServerPlan {
    /// Listen address.
    pub bind: SocketAddr,
    /// Idle time that ends a session.
    pub session_idle: Duration,
    /// Thread placement.
    pub thread: ThreadPlan,
    /// How to show results.
    pub output: Output,
    /// Live display frame rate.
    pub fps: u32,
    /// Port for the STAMP reflector (`None`: not served).
    pub stamp_port: Option<u16>,
    /// Per-answer CSV log.
    pub log: Option<PathBuf>,
}

/// What to do.
#[derive(Debug, Clone)]
// Built once per process: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Plan {
    /// Measure.
    Client(ClientPlan),
    /// Reflect.
    Server(ServerPlan),
}

/// Whether the live display can be used at all.
pub fn ui_possible() -> bool {
    std::io::stdout().is_terminal()
}

/// Validates the command line into a plan. `explicit` says which options
/// the user typed (the rest hold clap's defaults).
pub fn plan(cli: Cli, explicit: &dyn Explicit) -> Result<Plan, AppError> {
    match cli.command {
        None => {
            let cfg = config::load(cli.run.config.as_ref(), false)?;
            let l = layer(&cli.run, None, None, explicit, None, &cfg.defaults);
            let mut p = client_plan(Target::Loopback, None, &l.run)?;
            if let Plan::Client(c) = &mut p {
                c.profile.config_path = cfg.path;
                c.profile.defaults = cfg.defaults;
            }
            Ok(p)
        }
        Some(Command::Client(args)) => remote_client_plan(args, explicit),
        Some(Command::Server(s)) => server_plan(&s),
        Some(Command::Profiles(_) | Command::Interfaces { .. }) => Err(AppError::Usage(
            "this command does not measure anything".into(),
        )),
    }
}

/// Picks the profile: the one named, or the only one whose host pair
/// matches the address given.
fn choose_profile<'c>(
    cfg: &'c ConfigFile,
    named: Option<&str>,
    addr: Option<&str>,
    bind: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Option<(&'c str, &'c config::Profile)>, AppError> {
    if let Some(name) = named {
        cfg.profile(name)?; // the error that lists the known profiles
        return Ok(cfg
            .profiles
            .get_key_value(name)
            .map(|(k, p)| (k.as_str(), p)));
    }
    let Some(addr) = addr else { return Ok(None) };
    let Ok(wanted) = resolve(addr, DEFAULT_PORT) else {
        return Ok(None);
    };
    let same = |text: &Option<String>, port| text.as_deref().and_then(|t| resolve(t, port).ok());
    let matching: Vec<_> = cfg
        .profiles
        .iter()
        .filter(|(_, p)| same(&p.settings.server, DEFAULT_PORT) == Some(wanted))
        .filter(|(_, p)| match (bind, &p.settings.bind) {
            (Some(b), Some(_)) => resolve(b, 0).ok() == same(&p.settings.bind, 0),
            _ => true,
        })
        .collect();
    match matching.as_slice() {
        [(name, p)] => {
            notes.push(format!("using profile '{name}': its host pair matches {wanted} (--profile to choose another)"));
            Ok(Some((name.as_str(), p)))
        }
        [] => Ok(None),
        several => {
            let names: Vec<&str> = several.iter().map(|(n, _)| n.as_str()).collect();
            notes.push(format!(
                "profiles {} all match {wanted}; none used (choose one with --profile)",
                names.join(", ")
            ));
            Ok(None)
        }
    }
}

fn remote_client_plan(args: ClientArgs, explicit: &dyn Explicit) -> Result<Plan, AppError> {
    let cfg = config::load(args.run.config.as_ref(), args.save_profile.is_some())?;
    let mut notes = Vec::new();
    let cli_addr = args.addr.clone().or(args.server.clone());
    let chosen = choose_profile(
        &cfg,
        args.profile.as_deref(),
        cli_addr.as_deref(),
        args.bind.as_deref(),
        &mut notes,
    )?;
    let l = layer(
        &args.run,
        args.bind.clone(),
        cli_addr,
        explicit,
        chosen.map(|(n, p)| (n, &p.settings)),
        &cfg.defaults,
    );
    notes.extend(l.notes);
    // An address that came from the file is reported with its place there.
    let located = |key: &'static str, e: crate::engine::EngineError| -> AppError {
        match chosen.and_then(|(n, p)| p.settings.locations.get(key).map(|loc| (n, *loc))) {
            Some((name, loc))
                if !(explicit.given(key) || key == "server" && explicit.given("addr")) =>
            {
                config::ConfigError::at(
                    &cfg.path,
                    loc,
                    &format!("profiles.{name}.{key}"),
                    e.to_string(),
                )
                .into()
            }
            _ => e.into(),
        }
    };
    // A STAMP session-reflector listens on STAMP's port unless told.
    let port = if l.run.stamp {
        stamp::DEFAULT_PORT
    } else {
        DEFAULT_PORT
    };
    let text = l.server.unwrap_or_else(|| format!("127.0.0.1:{port}"));
    let target = Target::Remote(resolve(&text, port).map_err(|e| located("server", e))?);
    let bind = l
        .bind
        .map(|b| resolve(&b, 0).map_err(|e| located("bind", e)))
        .transpose()?;
    if args.set_baseline
        && args.profile.is_none()
        && args.save_profile.is_none()
        && chosen.is_none()
    {
        return Err(AppError::Usage(
            "--set-baseline needs a profile to keep it in (--profile NAME or --save-profile NAME)"
                .into(),
        ));
    }
    let baseline = chosen.and_then(|(_, p)| p.baseline.clone());
    if args.fail_on_regression.is_some() && baseline.is_none() && !args.set_baseline {
        notes.push(
            "--fail-on-regression: the profile has no baseline yet, so there is nothing to compare"
                .into(),
        );
    }
    let mut p = client_plan(target, bind, &l.run)?;
    if let Plan::Client(c) = &mut p {
        c.profile = ProfileUse {
            config_path: cfg.path.clone(),
            name: chosen.map(|(n, _)| n.to_string()),
            baseline,
            save_as: args.save_profile,
            set_baseline: args.set_baseline,
            fail_on_regression: args.fail_on_regression,
            notes,
            defaults: cfg.defaults.clone(),
        };
    }
    Ok(p)
}

fn output_for(no_ui: bool, json: bool) -> Output {
    if json {
        Output::Json
    } else if no_ui || !ui_possible() {
        Output::Text
    } else {
        Output::Ui
    }
}

fn client_plan(target: Target, bind: Option<SocketAddr>, run: &RunArgs) -> Result<Plan, AppError> {
    if let (Some(b), Target::Remote(peer)) = (bind, target)
        && b.is_ipv4() != peer.is_ipv4()
    {
        return Err(AppError::Usage(format!(
            "--bind {b} and server {peer} are of different IP versions"
        )));
    }
    let output = output_for(run.no_ui, run.json);
    let (cpu, cpu_auto) = choose_cpu(run.thread.cpu, Role::Client)?;
    let (mut rcpu, rauto) = choose_cpu(None, Role::Reflector)?;
    if rcpu == cpu {
        // A user-chosen client CPU may collide with the reflector's default.
        if let Ok((other, _)) = choose_cpu(None, Role::Client) {
            rcpu = other;
        }
    }
    // The live display runs until stopped unless a count or time was given;
    // headless runs keep the seed's default of 10000 packets.
    let packets = match (run.packets, run.duration, output) {
        (Some(n), _, _) => Some(n),
        (None, Some(_), _) | (None, None, Output::Ui) => None,
        (None, None, _) => Some(DEFAULT_PACKETS),
    };
    if packets == Some(0) {
        return Err(AppError::Usage("--packets must be at least 1".into()));
    }
    if run.duration == Some(Duration::ZERO) {
        return Err(AppError::Usage(
            "--duration must be longer than zero".into(),
        ));
    }
    Ok(Plan::Client(ClientPlan {
        target,
        bind,
        packets,
        duration: run.duration,
        warmup: run.warmup,
        timeout: Duration::from_millis(run.timeout),
        size: run.size,
        timestamps: run.timestamps,
        stamp: run.stamp,
        log: run.log.clone(),
        update: run.update,
        threshold: run.threshold,
        thread: ThreadPlan {
            cpu,
            cpu_auto,
            busy_poll: run.thread.busy_poll,
            rt: run.thread.rt,
        },
        reflector_thread: ThreadPlan {
            cpu: rcpu,
            cpu_auto: rauto,
            busy_poll: run.thread.busy_poll,
            rt: run.thread.rt,
        },
        output,
        fps: run.fps,
        profile: ProfileUse::default(),
    }))
}

fn server_plan(s: &ServerArgs) -> Result<Plan, AppError> {
    let bind = resolve(&s.bind, DEFAULT_PORT)?;
    let (cpu, cpu_auto) = choose_cpu(s.thread.cpu, Role::Reflector)?;
    if s.session_idle.is_zero() {
        return Err(AppError::Usage(
            "--session-idle must be longer than zero".into(),
        ));
    }
    let output = output_for(s.no_ui, false);
    if s.log.is_some() && output == Output::Ui {
        return Err(AppError::Usage(
            "the server writes --log only without the live display: add --no-ui".into(),
        ));
    }
    Ok(Plan::Server(ServerPlan {
        bind,
        session_idle: s.session_idle,
        thread: ThreadPlan {
            cpu,
            cpu_auto,
            busy_poll: s.thread.busy_poll,
            rt: s.thread.rt,
        },
        output,
        fps: s.fps,
        stamp_port: (s.stamp_port != 0).then_some(s.stamp_port),
        log: s.log.clone(),
    }))
}

/// Events the reflector can queue for its front end between two reads.
const REFLECTOR_RING: usize = 8192;

/// Answers the server's log can fall behind by, per reflector: the writer
/// wakes every 20 ms, so this keeps up with 800 k answers/s.
const RESPONSE_RING: usize = 1 << 14;

impl ServerPlan {
    /// The engine's settings for a reflector listening on `bind`.
    pub fn reflector_config(&self, bind: SocketAddr) -> ReflectorConfig {
        ReflectorConfig {
            bind,
            cpu: self.thread.cpu,
            cpu_auto: self.thread.cpu_auto,
            busy_poll: self.thread.busy_poll,
            rt: self.thread.rt,
            session_idle: self.session_idle,
            ring_capacity: REFLECTOR_RING,
            protocol: Protocol::Echo,
            log_capacity: if self.log.is_some() { RESPONSE_RING } else { 0 },
        }
    }

    /// The STAMP reflector's settings, if it is to run: same address, the
    /// STAMP port. It always blocks and never asks for SCHED_FIFO, and it
    /// prefers a CPU of its own: beside a busy-polling or real-time echo
    /// reflector on one core it would starve, or starve it.
    pub fn stamp_config(&self) -> Option<ReflectorConfig> {
        let port = self.stamp_port?;
        let cpu = match choose_cpu(None, Role::Client) {
            Ok((other, _)) if other != self.thread.cpu => other,
            _ => self.thread.cpu,
        };
        Some(ReflectorConfig {
            protocol: Protocol::Stamp,
            cpu,
            cpu_auto: true,
            busy_poll: false,
            rt: false,
            ..self.reflector_config(SocketAddr::new(self.bind.ip(), port))
        })
    }
}

/// An address a client can send to: the wildcard becomes loopback.
fn connectable(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

/// The reflector the live display runs when a client switches role: it
/// listens on the client's `--bind` address (or the wildcard) at the port
/// the client was measuring, so two hosts can swap roles. For loopback it
/// is the in-process reflector itself (port 0: keep whatever it has).
pub fn counterpart_server(c: &ClientPlan) -> ServerPlan {
    let bind = match c.target {
        Target::Loopback => SocketAddr::from(([127, 0, 0, 1], 0)),
        Target::Remote(peer) => {
            let ip = c.bind.map(|b| b.ip()).unwrap_or(if peer.is_ipv4() {
                IpAddr::V4(Ipv4Addr::UNSPECIFIED)
            } else {
                IpAddr::V6(Ipv6Addr::UNSPECIFIED)
            });
            SocketAddr::new(ip, peer.port())
        }
    };
    ServerPlan {
        bind,
        session_idle: DEFAULT_SESSION_IDLE,
        thread: c.reflector_thread,
        output: c.output,
        fps: c.fps,
        // A client switching roles reflects plain echo only.
        stamp_port: None,
        log: None,
    }
}

/// The client the live display runs when a server switches role: it
/// measures this very reflector, with the default run options.
pub fn counterpart_client(s: &ServerPlan) -> Result<ClientPlan, AppError> {
    let mut run = RunArgs::defaults();
    run.fps = s.fps;
    run.thread.busy_poll = s.thread.busy_poll;
    run.thread.rt = s.thread.rt;
    match client_plan(Target::Remote(connectable(s.bind)), None, &run)? {
        Plan::Client(mut c) => {
            c.output = s.output;
            c.packets = None;
            c.reflector_thread = s.thread;
            Ok(c)
        }
        Plan::Server(_) => unreachable!("client_plan builds client plans"),
    }
}
