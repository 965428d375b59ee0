//! The command line, as clap sees it. Validation that needs more than one
//! flag at a time lives in [`crate::plan`].

use crate::engine::TimestampMode;
use crate::engine::protocol::{MAX_SIZE, MIN_SIZE};
use crate::units::{DefaultUnit, parse_duration};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

const ABOUT: &str = "Measure application-to-application UDP round-trip time.";
const LONG_ABOUT: &str = "\
Synapse measures the UDP round trip from one application, through both kernels
and the network, to another application and back.

With no subcommand it measures an in-process reflector on 127.0.0.1: a quick
look at this machine's own floor. Run `synapse server` on one host and
`synapse client HOST` on another to measure the path between them.";

const AFTER_HELP: &str = "\
Exit status: 0 PASS, 3 FAIL (mean above --threshold), 2 bad input or
unreachable peer, 1 failure during the run.
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
}

/// `synapse profiles`.
#[derive(Debug, Args)]
pub struct ProfilesArgs {
    /// What to do with the profiles.
    #[command(subcommand)]
    pub action: ProfilesAction,

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
    /// Address to listen on (IPv4 or IPv6).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080")]
    pub bind: String,

    /// Also answer STAMP (RFC 8762) session-senders on this UDP port, on the
    /// same address (0: don't). Without privilege for a port below 1024,
    /// the server says so once and serves plain echo.
    #[arg(long, value_name = "PORT", default_value_t = crate::engine::stamp::DEFAULT_PORT)]
    pub stamp_port: u16,

    /// Write one CSV row per answered datagram to FILE (with --no-ui):
    /// PROTO, PEER, SEQ, the kernel's and user space's receive and send
    /// times (T2_HW T2_DRV T2_SW T3_SW T3_SCHED T3_DRV T3_HW, as
    /// seconds.nanoseconds, empty where absent) and RESPONSE = T3_DRV −
    /// T2_DRV in ns. Switches on the reflector's kernel timestamps.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,

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

/// `synapse client`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// Reflector address: HOST[:PORT], IPv4 or IPv6 (default 127.0.0.1:8080).
    #[arg(value_name = "ADDR")]
    pub addr: Option<String>,

    /// Reflector address (same as the positional ADDR).
    #[arg(long, value_name = "ADDR", conflicts_with = "addr")]
    pub server: Option<String>,

    /// Local address to send from (default: any, ephemeral port).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,

    /// Use a saved profile's host pair and options (the command line still
    /// wins). Without it, a profile whose host pair matches ADDR is used.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// After the run, save its settings as this profile.
    #[arg(long, value_name = "NAME")]
    pub save_profile: Option<String>,

    /// After the run, keep its summary as the profile's baseline.
    #[arg(long)]
    pub set_baseline: bool,

    /// FAIL (exit 3) when p50 or p99 is worse than the profile's baseline
    /// by more than this many percent.
    #[arg(long, value_name = "PERCENT", value_parser = percent)]
    pub fail_on_regression: Option<f64>,

    #[command(flatten)]
    pub run: RunArgs,
}

/// Options shared by `synapse client` and the loopback default.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Packets to measure after warm-up [default: 10000; the live display
    /// runs until stopped].
    #[arg(long, value_name = "N", conflicts_with = "duration", value_parser = count)]
    pub packets: Option<u64>,

    /// Measure for this long instead of a packet count (e.g. 30, 30s, 2min).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub duration: Option<Duration>,

    /// Packets sent first and left out of the statistics.
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = count)]
    pub warmup: u64,

    /// Milliseconds to wait for each reply before counting it lost.
    #[arg(long, value_name = "MS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub timeout: u64,

    /// Live display: advance the packet animation every N packets.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..=MAX_COUNT))]
    pub update: u64,

    /// UDP payload size in bytes (8..=65507; STAMP packets are at least 44).
    #[arg(long, value_name = "BYTES", default_value_t = 8, value_parser = payload_size)]
    pub size: usize,

    /// Timestamp source: auto (NIC clock if the interface has one and it
    /// can be enabled, else kernel software, else user space), user,
    /// software or hardware. Kernel stamps split each round trip into send
    /// path, network, server dwell (with --stamp) and receive path.
    #[arg(long, value_name = "SOURCE", default_value = "auto", value_parser = timestamp_mode)]
    pub timestamps: TimestampMode,

    /// Speak STAMP (RFC 8762, unauthenticated) to a session-reflector
    /// (default port 862) instead of plain echo: the reflector's own
    /// receive and send times give the server dwell.
    #[arg(long)]
    pub stamp: bool,

    /// Write one CSV row per measured packet to FILE: SEQ, every timestamp
    /// (T1_SW T1_SCHED T1_DRV T1_HW T2_HW T2_SW T3_SW T3_HW T4_HW T4_DRV
    /// T4_SW, as seconds.nanoseconds, empty where absent) and RTT in ns
    /// (empty when lost).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,

    #[command(flatten)]
    pub thread: ThreadArgs,

    /// PASS when the mean RTT is below this (e.g. 1ms, 250us).
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = millis)]
    pub threshold: Duration,

    /// Print the text report instead of the live display.
    #[arg(long)]
    pub no_ui: bool,

    /// Print one JSON object on stdout instead of the text report.
    #[arg(long)]
    pub json: bool,

    /// Live display frames per second.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=120))]
    pub fps: u32,

    /// Configuration file [default: $XDG_CONFIG_HOME/synapse/config.toml].
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

impl RunArgs {
    /// The defaults, exactly as the command line defines them.
    pub fn defaults() -> Self {
        match Cli::try_parse_from(["synapse"]) {
            Ok(cli) => cli.run,
            Err(e) => unreachable!("an empty command line always parses: {e}"),
        }
    }
}

/// Where and how the measurement thread runs.
#[derive(Debug, Args, Clone, Copy)]
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
}

/// Parses a timestamp source; shared with the configuration file.
pub(crate) fn timestamp_mode(s: &str) -> Result<TimestampMode, String> {
    s.parse()
}

fn seconds(s: &str) -> Result<Duration, String> {
    parse_duration(s, DefaultUnit::Seconds)
}

fn millis(s: &str) -> Result<Duration, String> {
    parse_duration(s, DefaultUnit::Millis)
}

/// The largest count accepted anywhere: what a TOML integer can hold, so
/// every value can be saved in a profile.
pub const MAX_COUNT: u64 = i64::MAX as u64;

fn count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n <= MAX_COUNT => Ok(n),
        Ok(n) => Err(format!("{n} is larger than {MAX_COUNT}")),
        Err(_) => Err(format!("'{s}' is not a count")),
    }
}

fn percent(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if p >= 0.0 && p.is_finite() => Ok(p),
        _ => Err(format!("'{s}' is not a percentage (e.g. 10 or 12.5)")),
    }
}

/// Checks a payload size; shared with the configuration file.
pub(crate) fn payload_size(s: &str) -> Result<usize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of bytes"))?;
    if (MIN_SIZE..=MAX_SIZE).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is outside {MIN_SIZE}..={MAX_SIZE}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn seed_flags_keep_their_defaults() {
        let cli = Cli::try_parse_from(["synapse", "client"]).unwrap();
        let Some(Command::Client(c)) = cli.command else {
            panic!("expected client")
        };
        assert_eq!(c.run.packets, None);
        assert_eq!(c.run.warmup, 200);
        assert_eq!(c.run.timeout, 100);
        assert_eq!(c.run.update, 100);
        assert_eq!(c.run.size, 8);
        assert_eq!(c.run.threshold, Duration::from_millis(1));
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
        assert!(Cli::try_parse_from(["synapse", "--packets", "5", "--duration", "1"]).is_err());
    }
}
