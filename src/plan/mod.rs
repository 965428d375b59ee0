//! Turns the parsed command line into a validated plan: every layer of
//! settings applied, every address resolved, every CPU checked. Nothing
//! starts until this succeeds, so bad input fails fast with one clear line.

pub mod agent;

use crate::cli::{
    Cli, ClientArgs, Command, HdrLogArgs, KeyArgs, LogArgs, OutputArgs, RunArgs, ServerArgs,
    TargetArgs, settings_schema,
};
use crate::config::key_file;
use crate::config::layering::{Named, layer};
use crate::config::{self, Baseline, ConfigFile, Settings};
use crate::error::AppError;
use crate::packet_log::{Opening, STDOUT};
use clap::ArgMatches;
use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;
use synapse_engine::reflector_admission::{Admission, AllowList};
use synapse_engine::stamp::TimeFormat;
use synapse_engine::stamp_key::StampKey;
use synapse_engine::{
    ClientConfig, EngineError, MAX_IN_FLIGHT, Protocol, ReflectorConfig, ReflectorStamping, Role,
    TcpEchoConfig, ThreadPlacement, Transport, choose_cpu, in_flight_bound, resolve, stamp,
};

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

/// A validated client run.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// Who to measure.
    pub target: Target,
    /// Local address, if given.
    pub bind: Option<SocketAddr>,
    /// Every run option, resolved through the layers.
    pub run: RunArgs,
    /// The packet budget in effect: the option, or the seed's 10 000 for a
    /// headless run without a budget (`None`: by time, or until stopped).
    pub packets: Option<u64>,
    /// Client thread placement, validated.
    pub thread: ThreadPlacement,
    /// Placement of the in-process reflector (loopback only).
    pub reflector_thread: ThreadPlacement,
    /// How to show results.
    pub output: Output,
    /// Per-packet CSV log (`-`: standard output).
    pub log: Option<PathBuf>,
    /// How the log file is opened.
    pub log_opening: Opening,
    /// `--hdr-log`, `--hdr-interval`.
    pub hdr: HdrLogArgs,
    /// The configuration file's part in this run.
    pub profile: ProfileUse,
    /// What the user should be warned of before the run.
    pub warnings: Vec<String>,
    /// STAMP authenticated mode's key, read from `--hmac-key-file`.
    pub stamp_key: Option<StampKey>,
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
    /// `--set-baseline` or `--add-to-baseline`.
    pub set_baseline: bool,
    /// `--add-to-baseline`: keep the baseline's runs and add this one.
    pub add_to_baseline: bool,
    /// `--fail-on-regression`.
    pub fail_on_regression: bool,
    /// `--min-effect PERCENT`.
    pub min_effect: Option<f64>,
    /// Things the user should be told before the run (which profile was
    /// matched, which options the command line overrode).
    pub notes: Vec<String>,
    /// Every option the run used, as a profile would store it.
    pub settings: Settings,
    /// `[defaults]` from the file, for runs planned later (role switches).
    pub defaults: Settings,
}

impl ProfileUse {
    /// The run's intervals are wanted: to keep as a baseline's run, or for
    /// the regression test.
    pub fn needs_intervals(&self) -> bool {
        self.set_baseline || (self.fail_on_regression && self.baseline.is_some())
    }
}

impl ClientPlan {
    /// The engine's settings for a run against `server`.
    pub fn client_config(&self, server: SocketAddr, ring_capacity: usize) -> ClientConfig {
        let r = &self.run;
        ClientConfig {
            server,
            bind: self.bind,
            packets: self.packets,
            duration: r.duration,
            warmup: r.warmup_packets(),
            timeout: r.clock.timeout_ms,
            size: r.packet.size,
            thread: self.thread,
            ring_capacity,
            timestamps: r.clock.timestamps,
            stamp: r.packet.stamp,
            ssid: r.packet.ssid.unwrap_or(0),
            stamp_key: self.stamp_key.clone(),
            stamp_format: r.packet.stamp_format.stamp_format,
            marks: r.packet.marks(),
            tlvs: r.packet.tlvs(),
            tx_stamp_every: r.tx_stamp_every.unwrap_or(if self.log.is_some() {
                1
            } else {
                DEFAULT_TX_STAMP_EVERY
            }),
            log_capacity: if self.log.is_some() { LOG_RING } else { 0 },
            schedule: r.schedule(),
            transport: r.transport,
            connect_each: r.connect_each,
            phase: Duration::ZERO,
            keep_trying: false,
        }
    }

    /// The payload size on the wire: STAMP packets are never shorter than
    /// 44 octets (112 authenticated), plus the RFC 8972 TLVs asked for.
    pub fn wire_size(&self) -> usize {
        let p = &self.run.packet;
        if p.stamp {
            let sender =
                synapse_engine::protocol::StampSender::new(p.size, 0, self.stamp_key.clone());
            sender.with_tlvs(p.tlvs(), p.marks().unwrap_or(0)).size()
        } else {
            p.size
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
    pub thread: ThreadPlacement,
    /// How to show results.
    pub output: Output,
    /// Live display frame rate.
    pub fps: u32,
    /// Port for the STAMP reflector (`None`: not served).
    pub stamp_port: Option<u16>,
    /// The STAMP port was asked for: failing to bind it is an error, not
    /// a note.
    pub stamp_required: bool,
    /// Per-answer CSV log (`-`: standard output).
    pub log: Option<PathBuf>,
    /// How the log file is opened.
    pub log_opening: Opening,
    /// `--hdr-log`, `--hdr-interval`.
    pub hdr: HdrLogArgs,
    /// Who the reflectors answer, and how much.
    pub admission: Admission,
    /// The STAMP reflector's key: it answers authenticated requests only.
    pub stamp_key: Option<StampKey>,
    /// The format of the STAMP reflector's timestamps.
    pub stamp_format: TimeFormat,
    /// Who to become once the ports are bound.
    pub user: Option<String>,
    /// TCP echo: its port (`Some(0)`: the UDP echo port's number), or none.
    pub tcp_port: Option<u16>,
    /// The TCP port was asked for: failing to bind it is an error.
    pub tcp_required: bool,
    /// TCP: connections one source may hold at once.
    pub tcp_per_source: u32,
    /// How the UDP reflectors stamp (kernel, or the NIC as well).
    pub timestamps: ReflectorStamping,
    /// The option that set it, as errors name it.
    pub timestamps_option: &'static str,
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

/// The matches of the subcommand given (or the top level's).
fn sub_matches(matches: &ArgMatches) -> &ArgMatches {
    matches.subcommand().map_or(matches, |(_, sub)| sub)
}

/// Validates the command line into a plan; `matches` tells which options
/// the user typed (the rest hold clap's defaults).
pub fn plan(cli: Cli, matches: &ArgMatches) -> Result<Plan, AppError> {
    let typed = Settings::from_matches(sub_matches(matches), &settings_schema());
    match cli.command {
        None => loopback_plan(&cli.output, &typed),
        Some(Command::Client(args)) => remote_client_plan(args, typed),
        Some(Command::Server(s)) => server_plan(&s),
        Some(_) => Err(AppError::Usage(
            "this command does not measure anything".into(),
        )),
    }
}

/// `--stamp` with a `--size` below STAMP's 44 octets sends 44: said, when
/// someone chose the size (the default is the echo payload's).
fn stamp_size_note(run: &RunArgs, chosen: &Settings) -> Option<String> {
    (run.packet.stamp && run.packet.size < stamp::PACKET_LEN && chosen.get("size").is_some()).then(
        || {
            format!(
                "--size {}: STAMP test packets are {} octets at least, so that is what is sent",
                run.packet.size,
                stamp::PACKET_LEN
            )
        },
    )
}

fn loopback_plan(output: &OutputArgs, typed: &Settings) -> Result<Plan, AppError> {
    let schema = settings_schema();
    let cfg = config::load(output.config.as_ref(), false, &schema)?;
    let l = layer(&schema, typed, None, &cfg.defaults);
    let run: RunArgs = l.parse(&schema).map_err(AppError::Usage)?;
    let note = stamp_size_note(&run, &l.chosen);
    let mut p = client_plan(Target::Loopback, None, run, output)?;
    p.profile.notes.extend(note);
    p.profile.config_path = cfg.path;
    p.profile.settings = l.chosen.with_defaults(&schema);
    p.profile.defaults = cfg.defaults;
    Ok(Plan::Client(p))
}

/// Picks the profile: the one named, or the only one whose host pair
/// matches the address given.
fn choose_profile<'c>(
    cfg: &'c ConfigFile,
    named: Option<&str>,
    addr: Option<&str>,
    bind: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Option<Named<'c>>, AppError> {
    if let Some(name) = named {
        cfg.profile(name)?; // the error that lists the known profiles
        return Ok(cfg
            .profiles
            .get_key_value(name)
            .map(|(k, p)| (k.as_str(), &p.settings)));
    }
    let Some(addr) = addr else { return Ok(None) };
    let Ok(wanted) = resolve(addr, DEFAULT_PORT) else {
        return Ok(None);
    };
    let same = |text: Option<&str>, port| text.and_then(|t| resolve(t, port).ok());
    let matching: Vec<(&str, &Settings)> = cfg
        .profiles
        .iter()
        .map(|(n, p)| (n.as_str(), &p.settings))
        .filter(|(_, s)| same(s.text("server"), DEFAULT_PORT) == Some(wanted))
        .filter(|(_, s)| match (bind, s.text("bind")) {
            (Some(b), Some(theirs)) => resolve(b, 0).ok() == same(Some(theirs), 0),
            _ => true,
        })
        .collect();
    match matching.as_slice() {
        [(name, s)] => {
            notes.push(format!(
                "using profile '{name}': its host pair matches {wanted} (--profile to choose another)"
            ));
            Ok(Some((name, s)))
        }
        [] => Ok(None),
        several => {
            let names: Vec<&str> = several.iter().map(|(n, _)| *n).collect();
            notes.push(format!(
                "profiles {} all match {wanted}; none used (choose one with --profile)",
                names.join(", ")
            ));
            Ok(None)
        }
    }
}

fn remote_client_plan(args: ClientArgs, mut typed: Settings) -> Result<Plan, AppError> {
    let schema = settings_schema();
    let cfg = config::load(
        args.output.config.as_ref(),
        args.save_profile.is_some(),
        &schema,
    )?;
    let mut notes = Vec::new();
    if let Some(addr) = &args.addr {
        old_fail_on_regression(args.fail_on_regression, addr)?;
        typed.set("server", vec![addr.clone()]);
    }
    let chosen = choose_profile(
        &cfg,
        args.profile.as_deref(),
        typed.text("server"),
        typed.text("bind"),
        &mut notes,
    )?;
    let l = layer(&schema, &typed, chosen, &cfg.defaults);
    notes.extend(l.notes.iter().cloned());
    let run: RunArgs = l.parse(&schema).map_err(AppError::Usage)?;
    let hosts: TargetArgs = l.parse(&schema).map_err(AppError::Usage)?;
    // An address that came from the file is reported with its place there.
    let located = |key: &str, e: EngineError| -> AppError {
        match chosen.and_then(|(n, s)| s.get(key).map(|set| (n, set.loc))) {
            Some((name, loc)) if typed.get(key).is_none() => config::ConfigError::at(
                &cfg.path,
                loc,
                &format!("profiles.{name}.{key}"),
                e.to_string(),
            )
            .into(),
            _ => e.into(),
        }
    };
    // A STAMP session-reflector listens on STAMP's port unless told.
    let port = if run.packet.stamp {
        stamp::DEFAULT_PORT
    } else {
        DEFAULT_PORT
    };
    let text = hosts.server.unwrap_or_else(|| format!("127.0.0.1:{port}"));
    let server = resolve(&text, port).map_err(|e| located("server", e))?;
    let bind = hosts
        .bind
        .map(|b| resolve(&b, 0).map_err(|e| located("bind", e)))
        .transpose()?;
    let set_baseline = args.set_baseline || args.add_to_baseline;
    if set_baseline && args.profile.is_none() && args.save_profile.is_none() && chosen.is_none() {
        let option = if args.add_to_baseline {
            "--add-to-baseline"
        } else {
            "--set-baseline"
        };
        return Err(AppError::Usage(format!(
            "{option} needs a profile to keep it in (--profile NAME or --save-profile NAME)"
        )));
    }
    let name = chosen.map(|(n, _)| n.to_string());
    let baseline = name
        .as_deref()
        .and_then(|n| cfg.profiles.get(n))
        .and_then(|p| p.baseline.clone());
    if args.fail_on_regression
        && let (Some(n), Some(_)) = (&name, &baseline)
    {
        regression_needs(&cfg.path, n, args.effect.min_effect)?;
    }
    if args.fail_on_regression && baseline.is_none() && !set_baseline {
        notes.push(match &name {
            Some(n) => format!(
                "--fail-on-regression: profile '{n}' has no baseline yet, so there is nothing to compare"
            ),
            None => "--fail-on-regression: no profile is in use, so there is no baseline to compare (--profile NAME)".into(),
        });
    }
    notes.extend(stamp_size_note(&run, &l.chosen));
    let mut p = client_plan(Target::Remote(server), bind, run, &args.output)?;
    let mut settings = l.chosen.with_defaults(&schema);
    if settings.get("server").is_none() {
        settings.set("server", vec![server.to_string()]);
    }
    p.profile = ProfileUse {
        config_path: cfg.path.clone(),
        name,
        baseline,
        save_as: args.save_profile,
        set_baseline,
        add_to_baseline: args.add_to_baseline,
        fail_on_regression: args.fail_on_regression,
        min_effect: args.effect.min_effect,
        notes,
        settings,
        defaults: cfg.defaults.clone(),
    };
    Ok(Plan::Client(p))
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

/// Poisson gaps need a mean; a paced run keeps up to a timeout's worth of
/// requests in flight, and the sequence tracker remembers 65 536.
fn check_pacing(run: &RunArgs) -> Result<(), AppError> {
    let Some(schedule) = run.schedule() else {
        if run.pace.poisson {
            return Err(AppError::Usage(
                "--poisson draws gaps around a mean: give it with --interval or --rate".into(),
            ));
        }
        return Ok(());
    };
    let bound = in_flight_bound(&schedule, run.clock.timeout_ms);
    if bound > MAX_IN_FLIGHT {
        return Err(AppError::Usage(format!(
            "--timeout {} at {} every {} keeps up to {bound} requests in flight, more than the {MAX_IN_FLIGHT} Synapse tracks: shorten --timeout or lengthen the interval",
            synapse_units::duration_text(run.clock.timeout_ms),
            if run.pace.poisson {
                "a mean of one"
            } else {
                "one"
            },
            synapse_units::duration_text(schedule.interval),
        )));
    }
    Ok(())
}

/// TCP is request/response, one in flight, plain echo (to a server, or to
/// the in-process TCP echo on loopback); `--connect-each` is one of its
/// modes.
fn check_transport(run: &RunArgs) -> Result<(), AppError> {
    let tcp = run.transport == Transport::Tcp;
    let refuse = |why: &str| Err(AppError::Usage(why.into()));
    if run.connect_each && !tcp {
        return refuse("--connect-each is a TCP mode: add --tcp");
    }
    if !tcp {
        return Ok(());
    }
    if run.schedule().is_some() {
        return refuse(
            "--tcp measures request and response, one in flight: --interval and --rate are UDP only",
        );
    }
    if run.packet.stamp {
        return refuse("--stamp is STAMP over UDP: --tcp speaks plain echo");
    }
    if run.packet.ecn.is_some() {
        return refuse(
            "--ecn with --tcp: a TCP connection's ECN bits are its kernel's to set (net.ipv4.tcp_ecn); --dscp alone marks it",
        );
    }
    Ok(())
}

fn client_plan(
    target: Target,
    bind: Option<SocketAddr>,
    run: RunArgs,
    output: &OutputArgs,
) -> Result<ClientPlan, AppError> {
    if let (Some(b), Target::Remote(peer)) = (bind, target)
        && b.is_ipv4() != peer.is_ipv4()
    {
        return Err(AppError::Usage(format!(
            "--bind {b} and server {peer} are of different IP versions"
        )));
    }
    let shown = output_for(output.no_ui, output.json);
    check_stdout_log(output.log.log.as_deref(), shown)?;
    let (cpu, cpu_auto) = choose_cpu(run.thread.cpu, Role::Client)?;
    let (mut rcpu, rauto) = choose_cpu(None, Role::Reflector)?;
    if rcpu == cpu {
        // A user-chosen client CPU may collide with the reflector's default.
        if let Ok((other, _)) = choose_cpu(None, Role::Client) {
            rcpu = other;
        }
    }
    let mut warnings = Vec::new();
    if target == Target::Loopback && run.thread.busy_poll && rcpu == cpu {
        warnings.push(format!(
            "--busy-poll with the client and the in-process reflector both on CPU {cpu}: \
             each spins while the other waits for the CPU, so they starve each other \
             (allow a second CPU, or drop --busy-poll)"
        ));
    }
    // The live display runs until stopped unless a count or time was given;
    // headless runs keep the seed's default of 10000 packets.
    let packets = match (run.packets, run.duration, shown) {
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
    check_pacing(&run)?;
    check_transport(&run)?;
    let stamp_key = stamp_key_of(&run.packet.key, run.packet.stamp, "synapse client")?;
    if run.packet.stamp_format.stamp_format != TimeFormat::Ntp && !run.packet.stamp {
        return Err(AppError::Usage(format!(
            "--stamp-format {} is STAMP's: add --stamp",
            run.packet.stamp_format.stamp_format
        )));
    }
    let placement = |cpu, cpu_auto| run.thread.on(cpu, cpu_auto);
    Ok(ClientPlan {
        target,
        bind,
        packets,
        thread: placement(cpu, cpu_auto),
        reflector_thread: placement(rcpu, rauto),
        output: shown,
        log: output.log.log.clone(),
        log_opening: output.log.opening(),
        hdr: output.hdr.clone(),
        run,
        profile: ProfileUse::default(),
        warnings,
        stamp_key,
    })
}

/// The key `--hmac-key-file` names, for a `who` that speaks STAMP.
pub fn stamp_key_of(k: &KeyArgs, stamp: bool, who: &str) -> Result<Option<StampKey>, AppError> {
    let Some(path) = &k.hmac_key_file else {
        return Ok(None);
    };
    if !stamp {
        return Err(AppError::Usage(format!(
            "--hmac-key-file is for STAMP: {who} needs --stamp too"
        )));
    }
    key_file::read(path).map(Some).map_err(AppError::Usage)
}

/// `--log -` puts the rows on stdout, which the JSON report and the live
/// display need for themselves.
fn check_stdout_log(log: Option<&std::path::Path>, shown: Output) -> Result<(), AppError> {
    if log.is_some_and(|p| p.as_os_str() == STDOUT) {
        match shown {
            Output::Json => {
                return Err(AppError::Usage(
                    "--log - and --json both want stdout: write the log to a file".into(),
                ));
            }
            Output::Ui => {
                return Err(AppError::Usage(
                    "--log - writes to stdout, which the live display uses: add --no-ui".into(),
                ));
            }
            Output::Text => {}
        }
    }
    Ok(())
}

fn server_plan(s: &ServerArgs) -> Result<Plan, AppError> {
    let bind = resolve(&s.bind, DEFAULT_PORT)?;
    let thread = s.thread.placement(Role::Reflector)?;
    if s.session_idle.is_zero() {
        return Err(AppError::Usage(
            "--session-idle must be longer than zero".into(),
        ));
    }
    let output = output_for(s.no_ui, false);
    check_stdout_log(s.log.log.as_deref(), output)?;
    let stamp_key = stamp_key_of(
        &s.key,
        s.stamp_port != Some(0),
        "synapse server --stamp-port 0",
    )?;
    if let Some(user) = &s.user
        && s.timestamps != ReflectorStamping::default()
    {
        // Putting the NIC's setting back at exit needs the privilege
        // `--user` gives up.
        return Err(AppError::Usage(format!(
            "--timestamps {} with --user {user}: once running as {user} the server could not put the NIC's timestamping setting back; leave one out",
            s.timestamps
        )));
    }
    Ok(Plan::Server(ServerPlan {
        bind,
        session_idle: s.session_idle,
        thread,
        output,
        fps: s.fps,
        stamp_port: match s.stamp_port {
            Some(0) => None,
            Some(p) => Some(p),
            None => Some(stamp::DEFAULT_PORT),
        },
        stamp_required: s.stamp_port.is_some_and(|p| p != 0),
        log: s.log.log.clone(),
        log_opening: s.log.opening(),
        hdr: s.hdr.clone(),
        admission: Admission {
            allow: AllowList::new(s.admission.allow.clone()),
            limits: s.limits.limits(),
        },
        stamp_key,
        stamp_format: s.stamp_format.stamp_format,
        user: s.user.clone(),
        tcp_port: match s.tcp_port {
            Some(0) => None,
            Some(p) => Some(p),
            None => Some(0),
        },
        tcp_required: s.tcp_port.is_some_and(|p| p != 0),
        tcp_per_source: s.max_connections_per_source,
        timestamps: s.timestamps.clone(),
        timestamps_option: "--timestamps",
    }))
}

/// Ping-pong with kernel stamps: TX stamps on one packet in this many, so
/// that under 0.4 % of round trips carry the stamping's cost: no
/// percentile up to p99 can be moved by it by more than that rank.
pub const DEFAULT_TX_STAMP_EVERY: u32 = 256;

/// Events the reflector can queue for its front end between two reads.
const REFLECTOR_RING: usize = 8192;

/// Answers the server's log can fall behind by, per reflector: the writer
/// wakes every 20 ms, so this keeps up with 800 k answers/s.
const RESPONSE_RING: usize = 1 << 14;

impl ServerPlan {
    /// The engine's settings for a `protocol` reflector listening on `bind`.
    pub fn reflector_config(&self, bind: SocketAddr, protocol: Protocol) -> ReflectorConfig {
        ReflectorConfig {
            thread: self.thread,
            session_idle: self.session_idle,
            ring_capacity: REFLECTOR_RING,
            log_capacity: if self.log.is_some() || self.hdr.hdr_log.is_some() {
                RESPONSE_RING
            } else {
                0
            },
            admission: self.admission.clone(),
            stamp_key: match protocol {
                Protocol::Stamp => self.stamp_key.clone(),
                Protocol::Echo => None,
            },
            stamp_format: self.stamp_format,
            ..ReflectorConfig::new(bind, protocol)
        }
    }

    /// The TCP echo reflector's settings, if it is to run: same address,
    /// the TCP port (the UDP echo reflector's, `echo_port`, unless told),
    /// blocking in `epoll_wait` on the echo reflector's CPU (another one
    /// when that one spins: beside it, it would starve).
    pub fn tcp_config(&self, echo_port: u16) -> Option<TcpEchoConfig> {
        let port = match self.tcp_port? {
            0 => echo_port,
            p => p,
        };
        let cpu = match choose_cpu(None, Role::Client) {
            Ok((other, _)) if self.thread.busy_poll => other,
            _ => self.thread.cpu,
        };
        Some(TcpEchoConfig {
            bind: SocketAddr::new(self.bind.ip(), port),
            thread: ThreadPlacement {
                cpu,
                busy_poll: false,
                rt: false,
                ..self.thread
            },
            allow: self.admission.allow.clone(),
            per_source: self.tcp_per_source,
            max_connections: self.admission.limits.max_sessions,
        })
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
            thread: ThreadPlacement {
                cpu,
                cpu_auto: true,
                busy_poll: false,
                rt: false,
                keep_awake: self.thread.keep_awake,
            },
            ..self.reflector_config(SocketAddr::new(self.bind.ip(), port), Protocol::Stamp)
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
        fps: c.run.fps,
        // A client switching roles reflects plain echo only.
        stamp_port: None,
        stamp_required: false,
        log: None,
        log_opening: Opening::New,
        hdr: HdrLogArgs::default(),
        admission: Admission::default(),
        // The in-process reflector of `synapse --stamp --hmac-key-file`
        // authenticates with the client's key.
        stamp_key: c.stamp_key.clone(),
        stamp_format: c.run.packet.stamp_format.stamp_format,
        user: None,
        // A TCP client's own reflector answers TCP echo on its UDP port's
        // number (the kernel's choice on loopback).
        tcp_port: (c.run.transport == Transport::Tcp).then_some(0),
        tcp_required: false,
        tcp_per_source: 1024,
        timestamps: ReflectorStamping::default(),
        timestamps_option: "--timestamps",
    }
}

/// The client the live display runs when a server switches role: it
/// measures this very reflector, with the default run options.
pub fn counterpart_client(s: &ServerPlan) -> Result<ClientPlan, AppError> {
    let mut run = RunArgs::defaults();
    run.fps = s.fps;
    run.thread.busy_poll = s.thread.busy_poll;
    run.thread.rt = s.thread.rt;
    let output = OutputArgs {
        log: LogArgs::default(),
        hdr: HdrLogArgs::default(),
        no_ui: s.output != Output::Ui,
        json: false,
        config: None,
    };
    let mut c = client_plan(Target::Remote(connectable(s.bind)), None, run, &output)?;
    c.output = s.output;
    c.packets = None;
    c.reflector_thread = s.thread;
    Ok(c)
}

/// `--fail-on-regression 10` (a percentage, as the option once took) would
/// read the number as the reflector's address: say what it is now.
fn old_fail_on_regression(fail_on_regression: bool, addr: &str) -> Result<(), AppError> {
    if fail_on_regression && addr.trim_end_matches('%').parse::<f64>().is_ok() {
        return Err(AppError::Usage(format!(
            "--fail-on-regression takes no percentage now (it runs the significance test of `synapse compare`): write --fail-on-regression --min-effect {addr}"
        )));
    }
    Ok(())
}

/// `--fail-on-regression` against a baseline of at most one stored run
/// cannot call a regression without `--min-effect`: refused, rather than a
/// verdict that passes on what it did not check.
fn regression_needs(
    config: &std::path::Path,
    name: &str,
    min_effect: Option<f64>,
) -> Result<(), AppError> {
    if min_effect.is_some() {
        return Ok(());
    }
    let why = match crate::config::baseline_runs::count(config, name) {
        0 => {
            "has no interval logs (it was set before Synapse kept them), so only the old rule on its stored p50 and p99 can judge it, and that rule needs --min-effect PERCENT (or set the baseline again)"
        }
        1 => {
            "holds one run: one run a side cannot separate a difference from run-to-run variation, so a regression needs --min-effect PERCENT (or more runs in the baseline: --add-to-baseline)"
        }
        _ => return Ok(()),
    };
    Err(AppError::Usage(format!(
        "--fail-on-regression: the baseline of profile '{name}' {why}"
    )))
}
