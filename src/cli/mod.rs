//! The command line, as clap sees it, and the one declaration of every
//! option. A run option is declared here once, as a field of [`RunArgs`]
//! (or [`TargetArgs`], [`ThreadArgs`]): its flag, help, default and value
//! parser. The configuration file reads the same options under their ids
//! (`[defaults]`, `[profiles.NAME]`), layers them, saves them and reports
//! them in the JSON `config` without naming any of them (see `config`).
//! Validation that needs more than one flag at a time lives in
//! [`crate::plan`].

pub mod agent;
pub mod calibrate;
pub mod compare;
pub mod load;
pub mod trace;
mod usage_error;

pub use agent::{AgentArgs, AgentOptions, PeerOptions};
pub use calibrate::CalibrateArgs;
pub use compare::{CompareArgs, PlotArgs};
pub use load::{LoadArgs, LoadPhases, LoadServerArgs};
pub use trace::TraceArgs;
pub use usage_error::one_line;

use crate::packet_log::Opening;
use clap::{ArgAction, ArgGroup, Args, CommandFactory, Parser, Subcommand};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;
use synapse_engine::protocol::payload_size;
use synapse_engine::protocol::responder_name::ResponderName;
use synapse_engine::protocol::tlv::StampTlvs;
use synapse_engine::reflector_admission::Cidr;
use synapse_engine::reflector_limits::Limits;
use synapse_engine::socket::address_text;
use synapse_engine::stamp::TimeFormat;
use synapse_engine::{Membership, ReflectorStamping, Schedule, TimestampMode, Transport};
use synapse_stats::Threshold;
use synapse_stats::{Dscp, Ecn, Pattern};
use synapse_units::{DefaultUnit, Every, count, percent_of_all, seconds};

const ABOUT: &str = "Measure application-to-application UDP round-trip time.";
const LONG_ABOUT: &str = "\
Synapse measures the UDP round trip from one application, through both kernels
and the network, to another application and back.

With no subcommand it measures an in-process reflector on 127.0.0.1: a quick
look at this machine's own floor. Run `synapse server` on one host and
`synapse client HOST` on another to measure the path between them.";

const AFTER_HELP: &str = "\
Exit status:
  0    PASS: every criterion held.
  3    FAIL: a --threshold not met, more loss than --max-loss, a longer outage
       than --max-outage, or a regression past --fail-on-regression.
  4    INCONCLUSIVE: a comparison could show neither a regression nor its
       absence (3 with --fail-on-inconclusive).
  2    Bad input, or a peer that cannot be reached.
  1    A failure during the run (such as a --log that could not be written).
  130  INTERRUPTED: stopped by Ctrl-C before its --duration or --packets was
       done: what it measured is reported, not judged (other signals: 128 +
       their number); also calibrate on Ctrl-C, and any command on a second.
Logging: RUST_LOG=synapse=debug (logs go to stderr, never stdout).";

/// Top-level command line.
#[derive(Debug, Parser)]
#[command(
    name = "synapse",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to run; none measures an in-process loopback reflector.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Options for the built-in loopback measurement.
    #[command(flatten)]
    pub run: RunArgs,

    /// How the built-in measurement is shown.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
// Parsed once per process: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Echo every datagram back to its sender (the reflector).
    Server(ServerArgs),
    /// Measure round trips to a reflector or any RFC 862 UDP echo server.
    Client(ClientArgs),
    /// List, show or remove saved profiles.
    Profiles(ProfilesArgs),
    /// Network interfaces and what they can timestamp (like `ethtool -T`).
    Interfaces {
        /// Only this interface.
        name: Option<String>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Measure many peers continuously and serve the results to Prometheus.
    Agent(AgentArgs),
    /// Measure this host's floor (syscall, context switch, loopback RTT…)
    /// and audit its latency settings.
    Calibrate(CalibrateArgs),
    /// Did it get slower? Compare runs (JSON reports, interval logs, saved
    /// baselines): differences with 95 % confidence intervals.
    Compare(CompareArgs),
    /// Draw runs: percentile distribution, latency over time, the split.
    Plot(PlotArgs),
    /// Trace one flow's path hop by hop and name the link where it loses.
    Trace(TraceArgs),
    /// Print the manual page (roff), e.g. `synapse man | man -l -`.
    Man,
}

/// `synapse profiles`.
#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct ProfilesArgs {
    /// What to do with the profiles.
    #[command(subcommand)]
    pub action: Option<ProfilesAction>,

    /// Configuration file [default: $XDG_CONFIG_HOME/synapse/config.toml].
    #[arg(long, value_name = "PATH", global = true)]
    pub config: Option<PathBuf>,
}

/// `synapse profiles …`.
#[derive(Debug, Subcommand)]
pub enum ProfilesAction {
    /// One line per profile: its host pair and baseline.
    List,
    /// Every setting of one profile, and its baseline.
    Show {
        /// The profile.
        name: String,
    },
    /// Delete a profile.
    Rm {
        /// The profile.
        name: String,
    },
}

/// `synapse server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address to listen on (IPv4 or IPv6). On a wildcard (0.0.0.0, ::)
    /// each answer leaves from the address its request was sent to.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080", value_parser = address_text)]
    pub bind: String,

    /// Also answer STAMP (RFC 8762) session-senders on this UDP port, on the
    /// same address (0: don't) [default: 862]. When the default port cannot
    /// be bound (it needs privilege), the server says so once and serves
    /// plain echo; a port given here that cannot be bound is an error.
    #[arg(long, value_name = "PORT")]
    pub stamp_port: Option<u16>,

    /// Also answer TCP echo (every byte of every connection back, RFC 862)
    /// on this TCP port, same address (0: don't) [default: the UDP echo
    /// port's number]. When the default cannot be bound the server says so
    /// once and serves UDP; a port given here that cannot be bound is an
    /// error.
    #[arg(long, value_name = "PORT")]
    pub tcp_port: Option<u16>,

    /// TCP: connections one source address may hold open at once; more are
    /// closed at once and counted (--max-sessions caps all together).
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections_per_source: u32,

    #[command(flatten)]
    pub admission: AdmissionArgs,

    #[command(flatten)]
    pub limits: LimitArgs,

    #[command(flatten)]
    pub key: KeyArgs,

    #[command(flatten)]
    pub groups: JoinArgs,

    #[command(flatten)]
    pub stamp_format: StampFormatArgs,

    #[command(flatten)]
    pub load: LoadServerArgs,

    /// Once the ports are bound, run as this user (and its group) for good:
    /// binding port 862 needs privilege, serving it does not. Needs root
    /// (or CAP_SETUID and CAP_SETGID).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,

    #[command(flatten)]
    pub log: LogArgs,

    #[command(flatten)]
    pub hdr: HdrLogArgs,

    /// How the UDP reflectors stamp: `software` (the kernel's clock), or
    /// `hardware[=IFACE]`, the NIC's clock as well (switched on for the
    /// run and put back after; on a wildcard --bind, name the NIC), or
    /// `auto[=IFACE]`: hardware if the NIC has it, else software. The
    /// stamps go to --log, and a STAMP Follow-Up carries the NIC's send
    /// time placed on this host's clock.
    #[arg(long, value_name = "SOURCE", default_value = "software")]
    pub timestamps: ReflectorStamping,

    /// A client silent for this long has ended its session (e.g. 1s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = seconds)]
    pub session_idle: Duration,

    #[command(flatten)]
    pub thread: ThreadArgs,

    /// Plain text output instead of the live display.
    #[arg(long)]
    pub no_ui: bool,

    /// Live display frames per second.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=120))]
    pub fps: u32,
}

/// Who a reflector answers (`synapse server`, and the agent's reflector).
#[derive(Debug, Args, Clone, Default)]
pub struct AdmissionArgs {
    /// Answer only sources in this network (repeatable; IPv4 or IPv6, e.g.
    /// 192.0.2.0/24, 2001:db8::/32, or one address). Others are counted as
    /// "not allowed" and dropped [default: every source].
    #[arg(long = "allow", value_name = "CIDR", value_parser = clap::value_parser!(Cidr))]
    pub allow: Vec<Cidr>,
}

/// The multicast groups `synapse server` joins, and the name its answers
/// carry.
#[derive(Debug, Args, Clone, Default)]
pub struct JoinArgs {
    /// Join this multicast group and answer every request sent to it, to
    /// its sender's own address, exactly as a unicast one (repeatable).
    /// GROUP@SOURCE joins source-specific (IGMPv3 / MLDv2 SSM): only
    /// SOURCE's requests arrive. Joined on the interface of --bind (or
    /// --join-if); the socket binds the wildcard address on --bind's port,
    /// since one bound to a unicast address receives no group traffic, and
    /// receives only the groups it joined. One forged request to a group
    /// draws an answer from every member, so group requests are answered
    /// only from --allow sources, or with --hmac-key-file (STAMP alone
    /// then joins). The groups are left on exit.
    #[arg(long = "join", value_name = "GROUP[@SOURCE]",
          value_parser = clap::value_parser!(Membership))]
    pub join: Vec<Membership>,

    /// Join the --join groups on this interface instead of the one that
    /// holds the --bind address (or, on a wildcard --bind, the one the
    /// route to the group names).
    #[arg(long, value_name = "IFACE", requires = "join")]
    pub join_if: Option<String>,

    /// Answer each request sent to a --join group to that group, on the
    /// sender's port, instead of to the sender's own address: the way
    /// sockperf's server answers. Every member of the group listening on
    /// that port hears every answer, so it suits one client and one
    /// responder; the client must join the group to hear it (synapse
    /// client --mc-join). The answers leave with TTL 1, by the interface
    /// the groups were joined on. Requests to a unicast address are
    /// answered to their sender as ever.
    #[arg(long, requires = "join")]
    pub answer_to_group: bool,

    /// The name this reflector puts in its answers when a request asks
    /// (plain echo: in the payload; STAMP: in a responder-name TLV; up to
    /// 16 bytes): a multicast client tells its responders apart by it, not
    /// only by the address they answer from.
    #[arg(long, value_name = "NAME", value_parser = clap::value_parser!(ResponderName))]
    pub name: Option<ResponderName>,
}

/// How much `synapse server` answers. Refusals are counted by reason.
#[derive(Debug, Args, Clone)]
pub struct LimitArgs {
    /// Answer one source address at most this many datagrams per second,
    /// all its ports together (0: no limit). The default is above what one
    /// client can ask of a kernel's UDP path.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.per_source_pps)]
    pub max_pps: u32,

    /// Datagrams a source may send back to back before --max-pps applies
    /// (and all sources together, before --max-total-pps).
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.burst,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub burst: u32,

    /// Answer at most this many datagrams per second in all (0: no limit).
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.total_pps)]
    pub max_total_pps: u32,

    /// Serve at most this many sessions (source address and port) at once;
    /// a new one beyond them is refused until one ends (--session-idle).
    /// TCP echo holds at most this many connections at once too.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.max_sessions as u32,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_sessions: u32,
}

impl LimitArgs {
    /// The engine's limits.
    pub fn limits(&self) -> Limits {
        Limits {
            per_source_pps: self.max_pps,
            burst: self.burst,
            total_pps: self.max_total_pps,
            max_sessions: self.max_sessions as usize,
        }
    }
}

/// `synapse client`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct ClientArgs {
    /// Reflector address: HOST[:PORT], IPv4 or IPv6 (default 127.0.0.1:8080).
    #[arg(value_name = "ADDR", conflicts_with = "server", value_parser = address_text)]
    pub addr: Option<String>,

    #[command(flatten)]
    pub target: TargetArgs,

    /// Use a saved profile's host pair and options (the command line still
    /// wins). Without it, a profile whose host pair matches ADDR is used.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// After the run, save its settings as this profile.
    #[arg(long, value_name = "NAME")]
    pub save_profile: Option<String>,

    /// After the run, keep its summary as the profile's baseline (its
    /// figures, and its interval log as the baseline's only run).
    #[arg(long)]
    pub set_baseline: bool,

    /// After the run, add it to the profile's baseline runs (at most 20,
    /// the oldest dropped) and show its figures as the baseline's. With two
    /// runs or more, --fail-on-regression measures the variation between
    /// runs instead of only assuming it.
    #[arg(long, conflicts_with = "set_baseline")]
    pub add_to_baseline: bool,

    /// Judge this run against the profile's baseline by the test of
    /// `synapse compare` (its stored runs against this run): FAIL (exit 3)
    /// on a regression, INCONCLUSIVE (exit 4, or 3 with
    /// --fail-on-inconclusive) when neither a regression nor its absence
    /// can be shown. A baseline without stored runs is judged by the old
    /// rule instead (p50 or p99 worse by more than --min-effect), and the
    /// report says so.
    #[arg(long)]
    pub fail_on_regression: bool,

    #[command(flatten)]
    pub effect: compare::EffectArgs,

    #[command(flatten)]
    pub run: RunArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// The host pair: kept in profiles, so a saved profile knows whom it measures.
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct TargetArgs {
    /// Local address to send from (default: any, ephemeral port).
    #[arg(long, value_name = "ADDR", value_parser = address_text)]
    pub bind: Option<String>,

    /// Reflector address (same as the positional ADDR).
    #[arg(long, value_name = "ADDR", value_parser = address_text)]
    pub server: Option<String>,
}

/// Options of a measurement: the command line, `[defaults]` and profiles all
/// set these, and the JSON report's `config` shows each. One field each; the
/// groups a fleet agent shares (pacing, the packet, the clock) are declared
/// once, in their own structs.
#[derive(Debug, Args, Clone, Serialize)]
#[command(group(ArgGroup::new("budget").args(["packets", "duration"])))]
pub struct RunArgs {
    /// Packets to measure after warm-up [default: 10000; the live display
    /// runs until stopped].
    #[arg(long, value_name = "N", value_parser = count)]
    pub packets: Option<u64>,

    /// Measure for this long instead of a packet count (with its unit:
    /// 30s, 2min, 1h).
    #[arg(long, value_name = "DURATION", value_parser = seconds)]
    #[serde(rename = "duration_s", serialize_with = "synapse_units::serde_secs")]
    pub duration: Option<Duration>,

    /// Packets sent first and left out of the statistics [default: 200;
    /// paced, one second's worth, at most 200, none at intervals over a
    /// second].
    #[arg(long, value_name = "N", value_parser = count)]
    pub warmup: Option<u64>,

    #[command(flatten)]
    #[serde(flatten)]
    pub pace: PaceArgs,

    /// Measure over TCP: request and response over one connection
    /// (TCP_NODELAY on, the reply read whole however the stream splits
    /// it), reconnecting with backoff when it is lost. With kernel stamps
    /// the round trip is split at the far kernel's ACK as well. Without a
    /// server address, `synapse --tcp` measures its own TCP echo on
    /// 127.0.0.1. In a configuration file: transport = "tcp".
    #[arg(id = "transport", long = "tcp", value_name = "TRANSPORT", num_args = 0..=1,
          require_equals = true, default_missing_value = "tcp", default_value = "udp",
          hide_default_value = true, value_parser = transport)]
    #[serde(serialize_with = "synapse_units::serde_display")]
    pub transport: Transport,

    /// TCP: a new connection for every transaction (connect, request,
    /// response, close: netperf's TCP_CRR); the handshake's share (connect,
    /// first byte) is reported apart.
    #[arg(long)]
    pub connect_each: bool,

    #[command(flatten)]
    #[serde(flatten)]
    pub clock: ClockArgs,

    #[command(flatten)]
    #[serde(flatten)]
    pub group: GroupArgs,

    /// Kernel stamps in ping-pong: ask for TX stamps on one packet in N on
    /// average, each packet drawn at random (geometric gaps, RFC 3432 §3,
    /// so no period in the traffic can line up with them; RX stamps stay
    /// on every packet). The split and the kernel one-way delays come from
    /// those packets, every segment from the same ones; the others skip
    /// the stamping's cost. [default: 256; 1 with --log, which logs every
    /// packet's points; paced runs stamp every packet]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub tx_stamp_every: Option<u32>,

    /// How often the live display's packet animation advances and
    /// --json-stream writes: every N packets (the original tool's
    /// --update), or every DURATION, with its unit (250ms, 1s) [default:
    /// 100 packets on the live display; 1s for --json-stream].
    #[arg(long, value_name = "N|DURATION", value_parser = Every::parse)]
    pub update: Option<Every>,

    #[command(flatten)]
    #[serde(flatten)]
    pub packet: PacketArgs,

    #[command(flatten)]
    #[serde(flatten)]
    pub thread: ThreadArgs,

    /// PASS only when this RTT figure is below the limit: `1ms` (the mean,
    /// as in the original tool), or a named figure, `p99=500us`, `p99.9=5ms`,
    /// `max=10ms`, `mean=1ms`. Repeat for several.
    #[arg(long, value_name = "[FIGURE=]LIMIT", default_value = "1ms", action = ArgAction::Append)]
    #[serde(serialize_with = "synapse_units::serde_display_all")]
    pub threshold: Vec<Threshold>,

    /// FAIL when more than this percentage of the requests sent got no
    /// timely reply (lost, or late).
    #[arg(long, value_name = "PERCENT", default_value = "1", value_parser = percent_of_all)]
    #[serde(rename = "max_loss_percent")]
    pub max_loss: f64,

    #[command(flatten)]
    #[serde(flatten)]
    pub load: LoadArgs,

    /// FAIL when replies stopped for longer than this: the longest outage
    /// (two or more requests in a row without a timely reply), from the
    /// first of them leaving to the next timely reply.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = synapse_units::millis)]
    #[serde(rename = "max_outage_ms", serialize_with = "synapse_units::serde_ms")]
    pub max_outage: Duration,

    /// Give up once no request has had a timely reply for this long (after
    /// the first reply: a peer silent from the start is an error at once),
    /// ending with the report of what was measured, the reason, and a FAIL;
    /// 0s: never. Long enough to ride through a routing failover, short
    /// enough that a dead reflector does not hold a run for minutes. The
    /// user is told that replies stopped after a second, whatever this is.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = synapse_units::seconds)]
    #[serde(
        rename = "give_up_after_ms",
        serialize_with = "synapse_units::serde_ms"
    )]
    pub give_up_after: Duration,

    /// Live display frames per second.
    #[arg(long, value_name = "N", default_value = "30",
          value_parser = clap::value_parser!(u32).range(1..=120))]
    pub fps: u32,
}

/// How requests are paced: ping-pong when none is given.
#[derive(Debug, Args, Clone, Default, Serialize)]
#[command(group(ArgGroup::new("pace").args(["interval", "rate"])))]
pub struct PaceArgs {
    /// Paced mode: send a request every DURATION (10us to 1h, with its
    /// unit: 100us, 10ms, 1s, 2min), whatever the replies do, many in
    /// flight, instead of ping-pong's one at a time. Reports the schedule kept, jitter and, with --stamp,
    /// one-way delay and which way losses went.
    #[arg(long, value_name = "DURATION", value_parser = synapse_units::interval)]
    #[serde(rename = "interval_ns", serialize_with = "synapse_units::serde_opt_ns")]
    pub interval: Option<Duration>,

    /// Paced mode: this many requests per second, or per minute or hour
    /// (100, 100/s, 30/min, 1/h; 1/h to 100000/s): --interval 1/RATE.
    #[arg(long, value_name = "RATE", value_parser = synapse_units::rate)]
    #[serde(rename = "rate_pps")]
    pub rate: Option<f64>,

    /// Paced mode: exponential gaps with the --interval (or --rate) as
    /// their mean (RFC 2330, RFC 3432), so the probes cannot fall into
    /// step with a periodic effect on the path.
    #[arg(long)]
    pub poisson: bool,
}

/// A multicast run (the server address a group): how the requests go out
/// and whom each waits for.
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct GroupArgs {
    /// Multicast (the server address a group, 224.0.0.0/4 or ff00::/8):
    /// the requests' TTL (IPv6 hop limit) [default: 1, the link alone].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..))]
    pub mc_ttl: Option<u8>,

    /// Multicast: send the requests by this interface instead of the one
    /// the route to the group names.
    #[arg(long, value_name = "IFACE")]
    pub mc_if: Option<String>,

    /// Multicast: deliver the requests to this host's own members too (a
    /// reflector on this host then answers). Off unless asked.
    #[arg(long)]
    pub mc_loop: bool,

    /// Multicast: join the group too, to hear answers sent to it: from a
    /// reflector that answers to the group on the client's port
    /// (`synapse server --answer-to-group`, or sockperf's server) rather
    /// than to the client's own address. Off unless asked.
    #[arg(long)]
    pub mc_join: bool,

    /// Multicast: each request waits for this many responders' answers
    /// (or its timeout) before the next is sent; paced, until its next
    /// slot at most [default: as many as have answered so far; the first 3
    /// requests wait out their timeout, to hear from every one].
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=synapse_engine::MAX_RESPONDERS as i64))]
    pub responders: Option<u32>,
}

impl GroupArgs {
    /// The multicast options given, by name (for a run that is not one).
    pub fn given(&self) -> Option<&'static str> {
        [
            self.mc_ttl.map(|_| "--mc-ttl"),
            self.mc_if.as_ref().map(|_| "--mc-if"),
            self.mc_loop.then_some("--mc-loop"),
            self.mc_join.then_some("--mc-join"),
            self.responders.map(|_| "--responders"),
        ]
        .into_iter()
        .flatten()
        .next()
    }
}

/// What each request is.
#[derive(Debug, Args, Clone, Serialize)]
pub struct PacketArgs {
    /// UDP payload size in bytes (8..=65507; STAMP packets are at least 44).
    #[arg(long, value_name = "BYTES", default_value = "8", value_parser = payload_size)]
    pub size: usize,

    /// Speak STAMP (RFC 8762; unauthenticated unless --hmac-key-file) to a
    /// session-reflector (default port 862) instead of plain echo: the
    /// reflector's own receive and send times give the server dwell.
    #[arg(long)]
    pub stamp: bool,

    /// STAMP: this Session-Sender Identifier (RFC 8972, 1..=65535) in each
    /// request, which the reflector copies back; a reply carrying another
    /// is not ours. Without it the octets stay zero (RFC 8762).
    #[arg(long, value_name = "N", requires = "stamp", value_parser = clap::value_parser!(u16).range(1..))]
    pub ssid: Option<u16>,

    /// Class of service: send the requests with this DSCP (a number 0..=63
    /// or a name: EF, AF11..AF43, CS0..CS7, VA, LE, DF), set once on the
    /// socket. Each reply's DSCP and ECN are read on arrival; with --stamp a
    /// Class of Service TLV (RFC 8972 §4.4) asks the reflector to report
    /// what the request arrived with and to mark its reply the same, so the
    /// report says per leg what was sent, what arrived (re-marked or not)
    /// and how many were marked CE. With --tcp every segment of the
    /// connection carries it (a stream's segments have no TOS to read back).
    #[arg(long, value_name = "NAME|N", value_parser = clap::value_parser!(Dscp))]
    #[serde(serialize_with = "synapse_units::serde_opt_display")]
    pub dscp: Option<Dscp>,

    /// Class of service: send the requests ECN-capable (ect0, ect1), marked
    /// CE (ce: a test of the far end, not of the path), or not (off, the
    /// default). Only an ECN-capable packet can be marked CE on its way.
    /// Not with --tcp: a connection's ECN bits are its kernel's.
    #[arg(long, value_name = "ect0|ect1|ce|off", value_parser = clap::value_parser!(Ecn))]
    #[serde(serialize_with = "synapse_units::serde_opt_display")]
    pub ecn: Option<Ecn>,

    /// STAMP: ask the reflector for these RFC 8972 TLVs, comma-separated:
    /// cos (Class of Service; implied by --dscp and --ecn), follow-up (each
    /// answer's real send time, in the next answer: the dwell ends there),
    /// timestamp-info (how the reflector's clock is synchronised and
    /// stamps), location (the addresses and ports it saw: a NAT shows),
    /// direct-measurement (its counters: loss split by direction), padding
    /// (--size reached with an Extra Padding TLV), or all. Authenticated,
    /// an HMAC TLV closes the list.
    #[arg(long = "tlv", value_name = "LIST", requires = "stamp", value_parser = clap::value_parser!(StampTlvs))]
    #[serde(rename = "tlv", serialize_with = "synapse_units::serde_opt_display")]
    pub tlv: Option<StampTlvs>,

    #[command(flatten)]
    #[serde(flatten)]
    pub key: KeyArgs,

    #[command(flatten)]
    #[serde(flatten)]
    pub stamp_format: StampFormatArgs,
}

impl PacketArgs {
    /// Class of service: the requests' TOS byte, when the run marks its
    /// requests or asks for the CoS TLV (else the system's, nothing read).
    pub fn marks(&self) -> Option<u8> {
        let cos_tlv = self.stamp && self.tlv.is_some_and(|t| t.cos);
        (self.dscp.is_some() || self.ecn.is_some() || cos_tlv).then(|| {
            synapse_stats::cos::tos(self.dscp.unwrap_or_default(), self.ecn.unwrap_or_default())
        })
    }

    /// STAMP: the TLVs each request carries: `--tlv`, and the CoS TLV
    /// whenever the requests are marked.
    pub fn tlvs(&self) -> StampTlvs {
        if !self.stamp {
            return StampTlvs::default();
        }
        let mut set = self.tlv.unwrap_or_default();
        set.cos |= self.marks().is_some();
        set
    }
}

/// The STAMP key: `synapse client --stamp` and `synapse server` alike.
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct KeyArgs {
    /// Authenticated STAMP (RFC 8762 §4.2.2) with the shared key in FILE:
    /// hexadecimal, at least 16 bytes, readable by its owner only (never
    /// on the command line). A client signs its requests and measures only
    /// replies whose HMAC-SHA-256 verifies; a server's STAMP reflector
    /// answers authenticated requests only. Failures are counted.
    #[arg(long, value_name = "FILE")]
    pub hmac_key_file: Option<PathBuf>,
}

/// STAMP's timestamp format: `synapse client --stamp` and `synapse
/// server` alike.
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct StampFormatArgs {
    /// STAMP: write timestamps (T1 as a client; T2, T3 and Follow-Up as a
    /// reflector) in NTP format, or PTPv2 truncated (32-bit seconds since
    /// 1970, 32-bit nanoseconds; the clock's UTC, not TAI). The Z bit says
    /// which; replies and requests are read by their own Z bit whatever
    /// this says.
    #[arg(long, value_name = "ntp|ptp", default_value = "ntp", value_parser = stamp_format)]
    #[serde(serialize_with = "synapse_units::serde_display")]
    pub stamp_format: TimeFormat,
}

/// How replies are timed: their deadline and the clock that stamps them.
#[derive(Debug, Args, Clone, Serialize)]
pub struct ClockArgs {
    /// How long to wait for each reply before counting it lost (1ms to
    /// 1min, with its unit: 100ms, 1s).
    #[arg(long = "timeout", value_name = "DURATION", default_value = "100ms", value_parser = synapse_units::timeout)]
    #[serde(serialize_with = "synapse_units::serde_ms")]
    pub timeout_ms: Duration,

    /// Timestamp source: auto (NIC clock if the interface has one and it
    /// can be enabled, else kernel software, else user space), user,
    /// software or hardware. Kernel stamps split each round trip into send
    /// path, network, server dwell (with --stamp) and receive path.
    #[arg(long, value_name = "SOURCE", default_value = "auto", value_parser = timestamp_mode)]
    #[serde(serialize_with = "synapse_units::serde_display")]
    pub timestamps: TimestampMode,
}

/// Where and how a measurement thread runs.
#[derive(Debug, Args, Clone, Copy, Serialize)]
pub struct ThreadArgs {
    /// Pin the measurement thread to this CPU [default: picked and reported].
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,

    /// Spin on non-blocking receive instead of sleeping in the kernel:
    /// lower, steadier RTT at the cost of one busy core.
    #[arg(long)]
    pub busy_poll: bool,

    /// Run the measurement thread SCHED_FIFO (needs CAP_SYS_NICE; warns and
    /// carries on without it).
    #[arg(long)]
    pub rt: bool,

    /// Keep the CPUs out of idle states while measuring (/dev/cpu_dma_latency
    /// 0, as cyclictest does): a wake-up then takes microseconds, not the
    /// tens to hundreds a halted CPU needs to resume (virtual ones most).
    /// Costs power; needs root (warns and carries on without); released
    /// when Synapse exits, however it exits.
    #[arg(long)]
    pub keep_awake: bool,
}

impl ThreadArgs {
    /// Where a measurement thread of `role` runs: on the CPU asked for, or
    /// one picked (and reported as picked).
    pub fn placement(
        &self,
        role: synapse_engine::Role,
    ) -> Result<synapse_engine::ThreadPlacement, synapse_engine::EngineError> {
        let (cpu, cpu_auto) = synapse_engine::choose_cpu(self.cpu, role)?;
        Ok(self.on(cpu, cpu_auto))
    }

    /// The same on `cpu` (`cpu_auto`: picked, not asked for).
    pub fn on(&self, cpu: usize, cpu_auto: bool) -> synapse_engine::ThreadPlacement {
        synapse_engine::ThreadPlacement {
            cpu,
            cpu_auto,
            busy_poll: self.busy_poll,
            rt: self.rt,
            keep_awake: self.keep_awake,
        }
    }
}

/// The per-packet CSV log, client and server alike.
#[derive(Debug, Args, Clone, Default)]
pub struct LogArgs {
    /// Write one CSV row per packet to FILE (`-`: standard output): the
    /// client's measured packets (SEQ, STATUS, every timestamp, RTT), or
    /// the server's answers (PROTO, PEER, SEQ, receive and send times,
    /// RESPONSE). Timestamps are seconds.nanoseconds, empty where absent.
    /// An existing FILE is refused, unless --log-append or --force.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,

    /// Add to an existing --log file (its header is kept).
    #[arg(long, requires = "log", conflicts_with = "force")]
    pub log_append: bool,

    /// Replace an existing --log file.
    #[arg(long, requires = "log")]
    pub force: bool,
}

impl LogArgs {
    /// How the file is to be opened.
    pub fn opening(&self) -> Opening {
        match (self.log_append, self.force) {
            (true, _) => Opening::Append,
            (_, true) => Opening::Replace,
            _ => Opening::New,
        }
    }
}

/// `--hdr-log`: an HdrHistogram interval log, client, server and agent alike.
#[derive(Debug, Args, Clone)]
pub struct HdrLogArgs {
    /// Write an HdrHistogram interval log to FILE: one line per interval
    /// and series (Tag=rtt, each measured segment, forward/backward with
    /// STAMP, unanswered, outage; the server: response, dwell; the agent:
    /// PEER/rtt …), compressed V2 histograms in ns, readable by
    /// HdrHistogram's own tools. Written off the measurement thread. An
    /// existing FILE is refused.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,

    /// The interval log's interval (1ms to 1h, with its unit: 1s, 100ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = hdr_interval)]
    pub hdr_interval: Duration,
}

impl Default for HdrLogArgs {
    fn default() -> Self {
        Self {
            hdr_log: None,
            hdr_interval: Duration::from_secs(1),
        }
    }
}

fn hdr_interval(s: &str) -> Result<Duration, String> {
    let (lo, hi) = (Duration::from_millis(1), Duration::from_secs(3600));
    synapse_units::duration_within(s, synapse_units::DefaultUnit::Seconds, lo, Some(hi))
}

/// How a measurement is shown and kept: not part of a profile.
#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    #[command(flatten)]
    pub log: LogArgs,

    #[command(flatten)]
    pub hdr: HdrLogArgs,

    /// Print the text report instead of the live display.
    #[arg(long)]
    pub no_ui: bool,

    /// Print one JSON object on stdout instead of the text report.
    #[arg(long)]
    pub json: bool,

    /// Write the run as it goes to stdout, one JSON object a line, each
    /// flushed as written: an `interval` event per --update interval (its
    /// figures by the report's names, its loss marked provisional until
    /// its timeout has passed, its RTT histogram in HdrHistogram's
    /// encoding), then the report itself as the last line, also when
    /// stopped early. No live display.
    #[arg(long, conflicts_with = "json")]
    pub json_stream: bool,

    /// Configuration file [default: $XDG_CONFIG_HOME/synapse/config.toml].
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// What a bare number meant to each duration option a file may set,
/// before every duration needed its unit (issue 51): how `[defaults]`,
/// profiles and `[agent]` tables saved under the old rule are read (and
/// rewritten with their units). Options not listed never took one.
pub const BARE_NUMBERS_WERE: &[(&str, DefaultUnit)] = &[
    ("duration", DefaultUnit::Seconds),
    ("timeout_ms", DefaultUnit::Millis),
    ("threshold", DefaultUnit::Millis),
    ("max_outage", DefaultUnit::Millis),
    ("hdr_interval", DefaultUnit::Seconds),
    ("session_idle", DefaultUnit::Seconds),
    ("discover_every", DefaultUnit::Seconds),
    ("report_every", DefaultUnit::Seconds),
];

/// Warm-up packets in ping-pong, and at most in paced mode.
pub const DEFAULT_WARMUP: u64 = 200;

impl PaceArgs {
    /// The send schedule, when one is given (`--interval` or `--rate`).
    pub fn schedule(&self) -> Option<Schedule> {
        let interval = self
            .interval
            .or_else(|| self.rate.map(|r| Duration::from_secs_f64(1.0 / r)))?;
        let pattern = if self.poisson {
            Pattern::Poisson
        } else {
            Pattern::Periodic
        };
        Some(Schedule { pattern, interval })
    }
}

impl RunArgs {
    /// The send schedule, when the run is paced (`--interval` or `--rate`).
    pub fn schedule(&self) -> Option<Schedule> {
        self.pace.schedule()
    }

    /// How requests are sent: ping-pong, periodic or Poisson.
    pub fn pattern(&self) -> Pattern {
        self.schedule().map_or(Pattern::PingPong, |s| s.pattern)
    }

    /// The warm-up in effect: `--warmup`, else 200 packets in ping-pong and
    /// at most one second's worth when paced (none at intervals over a
    /// second), so a slow schedule never waits minutes, or an hour, in
    /// silence before its first measured request.
    pub fn warmup_packets(&self) -> u64 {
        self.warmup.unwrap_or_else(|| match self.schedule() {
            None => DEFAULT_WARMUP,
            Some(s) => (1_000_000_000 / s.interval_ns()).min(DEFAULT_WARMUP),
        })
    }

    /// The defaults, exactly as the command line defines them.
    pub fn defaults() -> Self {
        match Cli::try_parse_from(["synapse"]) {
            Ok(cli) => cli.run,
            Err(e) => unreachable!("an empty command line always parses: {e}"),
        }
    }
}

/// The options a `[defaults]` or `[profiles.NAME]` table may set: the host
/// pair and every run option, as one command the file's values are checked
/// and layered against.
pub fn settings_schema() -> clap::Command {
    RunArgs::augment_args(TargetArgs::augment_args(table_schema("settings")))
}

/// An empty command that options are added to, to read a table's keys.
fn table_schema(name: &'static str) -> clap::Command {
    clap::Command::new(name)
        .no_binary_name(true)
        .disable_help_flag(true)
        .disable_version_flag(true)
}

/// The whole command line, for completions and the manual page.
pub fn command() -> clap::Command {
    Cli::command()
}

fn stamp_format(s: &str) -> Result<TimeFormat, String> {
    s.parse()
}

fn timestamp_mode(s: &str) -> Result<TimestampMode, String> {
    s.parse()
}

fn transport(s: &str) -> Result<Transport, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
        settings_schema().debug_assert();
    }

    #[test]
    fn seed_flags_keep_their_defaults() {
        let cli = Cli::try_parse_from(["synapse", "client"]).unwrap();
        let Some(Command::Client(c)) = cli.command else {
            panic!("expected client")
        };
        assert_eq!(c.run.packets, None);
        assert_eq!(c.run.warmup_packets(), 200);
        assert_eq!(c.run.schedule(), None, "ping-pong is the default");
        assert_eq!(c.run.clock.timeout_ms, Duration::from_millis(100));
        assert_eq!(c.run.update, None, "each consumer's own default");
        assert_eq!(c.run.packet.size, 8);
        assert_eq!(c.run.threshold, ["1ms".parse::<Threshold>().unwrap()]);
        assert_eq!(c.run.max_loss, 1.0);
    }

    #[test]
    fn server_flag_and_positional_address_are_alternatives() {
        assert!(Cli::try_parse_from(["synapse", "client", "--server", "127.0.0.1:1"]).is_ok());
        assert!(Cli::try_parse_from(["synapse", "client", "a:1", "--server", "b:1"]).is_err());
    }

    #[test]
    fn size_out_of_range_is_refused() {
        let e = Cli::try_parse_from(["synapse", "client", "--size", "7"]).unwrap_err();
        assert!(e.to_string().contains("7 is outside 8..=65507"));
        assert!(Cli::try_parse_from(["synapse", "client", "--size", "65508"]).is_err());
        assert!(Cli::try_parse_from(["synapse", "client", "--size", "65507"]).is_ok());
    }

    #[test]
    fn packets_and_duration_conflict() {
        assert!(Cli::try_parse_from(["synapse", "--packets", "5", "--duration", "1s"]).is_err());
    }

    /// `--help` of the command and of every subcommand, as a user sees it
    /// on a 100-column terminal.
    #[test]
    fn help_of_every_command() {
        let mut cmd = command().term_width(100);
        cmd.build();
        insta::assert_snapshot!("help", cmd.render_long_help().to_string());
        for sub in cmd.get_subcommands() {
            let text = sub.clone().term_width(100).render_long_help().to_string();
            insta::assert_snapshot!(format!("help_{}", sub.get_name()), text);
        }
    }

    #[test]
    fn paced_options_make_a_schedule() {
        let run = |args: &[&str]| {
            let mut all = vec!["synapse"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all)
                .map(|c| c.run)
                .map_err(|e| e.to_string())
        };
        let r = run(&["--interval", "100us"]).unwrap();
        let s = r.schedule().unwrap();
        assert_eq!(
            (s.pattern, s.interval),
            (Pattern::Periodic, Duration::from_micros(100))
        );
        assert_eq!(r.warmup_packets(), 200);
        let r = run(&["--rate", "4", "--poisson"]).unwrap();
        let s = r.schedule().unwrap();
        assert_eq!(
            (s.pattern, s.interval),
            (Pattern::Poisson, Duration::from_millis(250))
        );
        assert_eq!(r.warmup_packets(), 4, "one second's worth");
        assert_eq!(run(&["--interval", "1s"]).unwrap().warmup_packets(), 1);
        assert_eq!(
            run(&["--interval", "1s", "--warmup", "0"])
                .unwrap()
                .warmup_packets(),
            0
        );
        assert!(
            run(&["--interval", "1ms", "--rate", "5"])
                .unwrap_err()
                .contains("cannot be used with")
        );
        assert!(
            run(&["--interval", "5"])
                .unwrap_err()
                .contains("needs a unit")
        );
        assert!(
            run(&["--interval", "5us"])
                .unwrap_err()
                .contains("out of range: 10us to 1h")
        );
        assert!(
            run(&["--rate", "0"])
                .unwrap_err()
                .contains("out of range: 1/h to 100000/s")
        );
        assert!(run(&["--rate", "fast"]).unwrap_err().contains("not a rate"));
    }

    #[test]
    fn timeouts_take_units_and_suggest_one_for_a_bare_number() {
        let t = |s: &str| {
            Cli::try_parse_from(["synapse", "--timeout", s])
                .map(|c| c.run.clock.timeout_ms)
                .map_err(|e| e.to_string())
        };
        assert_eq!(t("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(t("1s"), Ok(Duration::from_secs(1)));
        let bare = t("250").unwrap_err();
        assert!(bare.contains("'250' needs a unit: 250ms"), "{bare}");
        assert!(t("0ms").unwrap_err().contains("out of range: 1ms to 1min"));
        assert!(t("61s").is_err());
    }
}
