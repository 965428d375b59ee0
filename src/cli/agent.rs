//! `synapse agent`: its options, declared once. The flags here are also the
//! keys of the configuration file's `[agent]` table, and [`PeerOptions`]
//! the keys of each `[agent.peers.NAME]` table (and of a `peers_file`'s
//! `[peers.NAME]`): the file is read against these declarations, as the
//! profiles are read against the client's.

use super::{ClockArgs, PaceArgs, PacketArgs, ThreadArgs};
use clap::{ArgAction, Args};
use std::path::PathBuf;
use std::time::Duration;
use synapse_engine::ReflectorStamping;
use synapse_engine::peer_address::peer_address_text;
use synapse_engine::socket::address_text;

/// `synapse agent`.
#[derive(Debug, Args)]
#[command(after_long_help = AGENT_AFTER_HELP)]
pub struct AgentArgs {
    #[command(flatten)]
    pub options: AgentOptions,

    /// Configuration file: an `[agent]` table with these options and
    /// `[agent.peers.NAME]` tables [default: $XDG_CONFIG_HOME/synapse/config.toml].
    /// SIGHUP reads it again.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Headless even on a terminal (the live table is shown otherwise).
    #[arg(long)]
    pub no_ui: bool,

    /// Print one JSON object per peer every --report-every on stdout.
    #[arg(long)]
    pub json: bool,

    /// Read and check the configuration, print the peers it would measure,
    /// and exit (0: good, 2: not), sending nothing.
    #[arg(long)]
    pub check: bool,

    #[command(flatten)]
    pub hdr: super::HdrLogArgs,
}

/// What the agent does: flags, and keys of the `[agent]` table.
#[derive(Debug, Args, Clone)]
pub struct AgentOptions {
    /// This host's name in the metrics' `source` label [default: the host
    /// name]. With discovery, the name the others discover it by.
    #[arg(long, value_name = "NAME", value_parser = label_value)]
    pub name: Option<String>,

    /// A label of this host (rack, zone…), KEY=VALUE; in a peer's table, of
    /// that peer. Repeat for several.
    #[arg(long, value_name = "KEY=VALUE", action = ArgAction::Append, value_parser = label_text)]
    pub label: Vec<String>,

    /// Also answer the peers' probes: plain echo on ADDR (UDP, and TCP on
    /// --tcp-port), STAMP on --stamp-port of the same address; `none`
    /// answers nothing.
    #[arg(long, value_name = "ADDR|none", default_value = "0.0.0.0:8080", value_parser = reflect_text)]
    pub reflect: String,

    /// The reflector's STAMP port (0: no STAMP) [default: 862, or plain
    /// echo alone when it cannot be bound].
    #[arg(long, value_name = "PORT")]
    pub stamp_port: Option<u16>,

    /// The reflector's TCP echo port (0: no TCP echo) [default: the echo
    /// port's number, or UDP alone when that TCP port cannot be bound].
    #[arg(long, value_name = "PORT")]
    pub tcp_port: Option<u16>,

    /// How the reflector stamps, as `synapse server --timestamps`:
    /// software, auto[=IFACE] or hardware[=IFACE] (the NIC's clock; its
    /// STAMP Follow-Up then carries the NIC's send times).
    #[arg(long, value_name = "SOURCE", default_value = "software")]
    pub reflect_timestamps: ReflectorStamping,

    #[command(flatten)]
    pub admission: super::AdmissionArgs,

    /// A peer to measure, NAME=HOST[:PORT] (UDP: port 8080, or 862 with
    /// --stamp), or NAME=tcp://HOST:PORT (request and response over a TCP
    /// connection kept open). Repeat for several.
    #[arg(long, value_name = "NAME=[tcp://]HOST[:PORT]", action = ArgAction::Append, value_parser = peer_text)]
    pub peer: Vec<String>,

    /// A second TOML file of `[peers.NAME]` tables (each may have `label =
    /// ["rack=r1"]`), for tooling to render (Kubernetes, Consul templates);
    /// read again when it changes, and on SIGHUP.
    #[arg(long, value_name = "PATH")]
    pub peers_file: Option<PathBuf>,

    /// Discover peers from DNS: every A and AAAA address of NAME, probed
    /// on PORT (default 8080), asked again every --discover-every; the
    /// labels after it go to every host it names. Repeat for several.
    #[arg(long, value_name = "NAME[:PORT][,KEY=VALUE]", action = ArgAction::Append, value_parser = dns_name_port)]
    pub peers_dns: Vec<String>,

    /// Discover peers from DNS SRV records (a Kubernetes headless Service's
    /// _PORT._udp.SERVICE…): each target and port a peer, named by its
    /// target; the labels after it go to every host it names. Repeat for
    /// several.
    #[arg(long, value_name = "NAME[,KEY=VALUE]", action = ArgAction::Append, value_parser = dns_name)]
    pub peers_srv: Vec<String>,

    /// How often --peers-dns and --peers-srv are asked again (the peers file
    /// is looked at every second). A failed answer keeps the last good one.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = discover_every)]
    pub discover_every: Duration,

    /// Probe N discovered peers beyond this host's tier, chosen by
    /// rendezvous hashing on (this host, peer): stable, every host probed
    /// by about N others [default: every discovered peer].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub fanout: Option<u32>,

    /// A label (rack, zone…) whose value, shared with this host, makes a
    /// discovered peer always probed, whatever --fanout says.
    #[arg(long, value_name = "KEY", value_parser = label_key)]
    pub tier_label: Option<String>,

    /// Read a label off every discovered host's name, this host's too:
    /// rack=2 makes h7.r3.fleet.test's rack r3. Repeat for several.
    #[arg(long, value_name = "KEY=FIELD", action = ArgAction::Append, value_parser = name_rule_text)]
    pub label_from_name: Vec<String>,

    /// Put these labels on every peer's series, as source_KEY and peer_KEY
    /// (the allowed set; others are not exported). Comma-separated or
    /// repeated.
    #[arg(long, value_name = "KEY", action = ArgAction::Append, value_delimiter = ',', value_parser = label_key)]
    pub series_label: Vec<String>,

    /// Probe every UDP peer from K source ports in turn (K flows, so K
    /// ECMP paths); per-path loss and RTT are kept, the worst path and the
    /// spread exported.
    #[arg(long, value_name = "K", default_value = "1", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub paths: u16,

    #[command(flatten)]
    pub trace: super::trace::TraceOnLossArgs,

    /// Local address the probes leave from [default: any].
    #[arg(long, value_name = "ADDR", value_parser = address_text)]
    pub bind: Option<String>,

    /// Serve Prometheus metrics at http://ADDR/metrics (port 0: any free
    /// one, printed on stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9862")]
    pub metrics_listen: String,

    /// How often the live table's window and the --json lines turn over.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = report_every)]
    pub report_every: Duration,

    /// Refuse a configuration whose peers together would send more probes
    /// per second than this.
    #[arg(long, value_name = "PPS", default_value = "10000", value_parser = max_pps)]
    pub max_pps: f64,

    #[command(flatten)]
    pub pace: PaceArgs,

    #[command(flatten)]
    pub packet: PacketArgs,

    #[command(flatten)]
    pub clock: ClockArgs,

    #[command(flatten)]
    pub thread: ThreadArgs,
}

/// One peer's table: `[agent.peers.NAME]`, or `[peers.NAME]` in a
/// `peers_file`. What it leaves out comes from its profile, then from the
/// agent's own options.
#[derive(Debug, Args, Clone)]
pub struct PeerOptions {
    /// The peer's reflector, HOST[:PORT] (UDP), or tcp://HOST:PORT.
    #[arg(long, value_name = "[tcp://]HOST[:PORT]", value_parser = peer_address_text)]
    pub address: Option<String>,

    /// A saved profile whose server (as the address), pacing and packet
    /// this peer reuses.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// The peer's labels, KEY=VALUE (`label = ["rack=r1", "zone=z1"]`).
    #[arg(long, value_name = "KEY=VALUE", action = ArgAction::Append, value_parser = label_text)]
    pub label: Vec<String>,

    #[command(flatten)]
    pub pace: PaceArgs,

    #[command(flatten)]
    pub packet: PacketArgs,
}

const AGENT_AFTER_HELP: &str = "\
Every peer is probed on its own schedule, every --interval (default 100ms), the
first probe offset by a hash of (name, peer) so a mesh never fires in step.
UDP peers share one prober thread; a tcp:// peer has a thread and a connection
of its own, kept open and opened again with backoff when refused or reset (its
requests meanwhile count lost). Every series has a transport label (udp, tcp).
SIGHUP reloads the configuration (a bad one is reported and the last good one
runs on); SIGINT and SIGTERM stop the agent. Metrics: synapse_rtt_seconds,
synapse_rtt_segment_seconds, synapse_ipdv_seconds (classic and native
histograms), synapse_probes_{sent,lost,late}_total and more; see docs/agent.md.";

/// The peer interval when none is given: ten probes a second.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// The schema of an `[agent]` table.
pub fn agent_schema() -> clap::Command {
    AgentOptions::augment_args(super::table_schema("agent"))
}

/// The schema of a peer's table.
pub fn peer_schema() -> clap::Command {
    PeerOptions::augment_args(super::table_schema("peer"))
}

/// `--reflect`: an address, or `none`.
fn reflect_text(s: &str) -> Result<String, String> {
    if s == "none" {
        Ok(s.into())
    } else {
        address_text(s)
    }
}

/// A Prometheus label value a person can read: no control characters.
pub fn label_value(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > 128 {
        return Err(format!("'{s}': a name is 1 to 128 characters"));
    }
    if s.chars().any(char::is_control) {
        return Err("a name cannot hold control characters".into());
    }
    Ok(s.into())
}

/// `--peer NAME=HOST[:PORT]`.
fn peer_text(s: &str) -> Result<String, String> {
    let (name, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=HOST[:PORT] or NAME=tcp://HOST:PORT"))?;
    label_value(name)?;
    peer_address_text(addr)?;
    Ok(s.into())
}

/// Splits a checked `--peer` value into its name and address.
pub fn split_peer(s: &str) -> (&str, &str) {
    s.split_once('=').unwrap_or((s, ""))
}

/// A label key Prometheus accepts, short, and not one the agent's series
/// use already once prefixed.
pub fn label_key(k: &str) -> Result<String, String> {
    let ok_start = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    let ok_rest = k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !(ok_start && ok_rest) || k.is_empty() || k.len() > 64 {
        return Err(format!(
            "'{k}' is not a label name (a letter or _, then letters, digits, _; at most 64)"
        ));
    }
    if k.starts_with("__") {
        return Err(format!("'{k}': names starting with __ are Prometheus' own"));
    }
    Ok(k.to_string())
}

/// `KEY=VALUE`.
pub fn label_pair(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not KEY=VALUE"))?;
    // Empty: no label (a downward-API or environment variable left empty).
    let v = if v.is_empty() {
        String::new()
    } else {
        label_value(v)?
    };
    Ok((label_key(k)?, v))
}

/// `KEY=FIELD`: the label's value is the name's FIELDth dot-separated part
/// (from 1).
pub fn name_rule(s: &str) -> Result<(String, usize), String> {
    let (k, f) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not KEY=FIELD (rack=2: the name's second part)"))?;
    let field = f
        .parse::<usize>()
        .ok()
        .filter(|&n| (1..=32).contains(&n))
        .ok_or_else(|| format!("'{f}' is not a field number from 1 to 32"))?;
    Ok((label_key(k)?, field))
}

/// `KEY=VALUE`, checked.
fn label_text(s: &str) -> Result<String, String> {
    label_pair(s).map(|_| s.to_string())
}

/// `KEY=FIELD`, checked.
fn name_rule_text(s: &str) -> Result<String, String> {
    name_rule(s).map(|_| s.to_string())
}

/// `NAME[,KEY=VALUE…]`.
fn dns_name(s: &str) -> Result<String, String> {
    let (name, labels) = split_source_labels(s);
    for l in labels {
        label_pair(l)?;
    }
    dns_name_only(name)
}

/// A discovery source and the labels it gives every host it names:
/// `_synapse._udp.z1.fleet.test,zone=z1`.
pub fn split_source_labels(s: &str) -> (&str, Vec<&str>) {
    let mut parts = s.split(',');
    let first = parts.next().unwrap_or("");
    (first, parts.collect())
}

/// A DNS name: dot-separated labels of 1 to 63 letters, digits, `-`, `_`.
fn dns_name_only(s: &str) -> Result<String, String> {
    let name = s.trim_end_matches('.');
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            (1..=63).contains(&l.len())
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("'{s}' is not a DNS name"))
    }
}

/// `NAME[:PORT][,KEY=VALUE…]`.
fn dns_name_port(s: &str) -> Result<String, String> {
    let (target, labels) = split_source_labels(s);
    for l in labels {
        label_pair(l)?;
    }
    let (name, port) = split_name_port(target);
    dns_name_only(name)?;
    if let Some(p) = port {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("'{p}' is not a port (1 to 65535)"))?;
    }
    Ok(s.to_string())
}

/// A checked `NAME[:PORT]`'s parts.
pub fn split_name_port(s: &str) -> (&str, Option<&str>) {
    match s.rsplit_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (s, None),
    }
}

fn discover_every(s: &str) -> Result<Duration, String> {
    let (lo, hi) = (Duration::from_secs(1), Duration::from_secs(86_400));
    synapse_units::duration_within(s, synapse_units::DefaultUnit::Seconds, lo, Some(hi))
}

fn report_every(s: &str) -> Result<Duration, String> {
    let at_least = Duration::from_secs(1);
    synapse_units::duration_within(s, synapse_units::DefaultUnit::Seconds, at_least, None)
}

fn max_pps(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a positive number of packets per second"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_name_equals_address() {
        assert_eq!(peer_text("b=10.0.0.2:9000").unwrap(), "b=10.0.0.2:9000");
        assert_eq!(split_peer("b=10.0.0.2:9000"), ("b", "10.0.0.2:9000"));
        assert!(peer_text("10.0.0.2").unwrap_err().contains("NAME=HOST"));
        assert_eq!(
            split_peer("db=tcp://10.0.0.3:5432"),
            ("db", "tcp://10.0.0.3:5432")
        );
        assert!(
            peer_text("db=tcp://10.0.0.3")
                .unwrap_err()
                .contains("needs its port")
        );
        assert!(
            peer_text("db=ftp://x")
                .unwrap_err()
                .contains("unknown scheme")
        );
        assert!(peer_text("=10.0.0.2").is_err());
        assert!(peer_text("b=not an address").is_err());
    }

    #[test]
    fn report_every_and_max_pps_refuse_nonsense() {
        assert!(report_every("100ms").is_err());
        assert_eq!(report_every("10s").unwrap(), Duration::from_secs(10));
        assert!(
            report_every("10")
                .unwrap_err()
                .contains("needs a unit: 10s")
        );
        assert!(max_pps("0").is_err());
        assert!(max_pps("NaN").is_err());
        assert_eq!(max_pps("500").unwrap(), 500.0);
    }

    #[test]
    fn the_tables_take_the_flags_ids() {
        let ids = |c: clap::Command| -> Vec<String> {
            crate::config::settings::options(&c)
                .map(|a| a.get_id().to_string())
                .collect()
        };
        let agent = ids(agent_schema());
        for k in [
            "name",
            "reflect",
            "peer",
            "peers_file",
            "metrics_listen",
            "interval",
            "size",
            "timeout_ms",
            "cpu",
        ] {
            assert!(agent.iter().any(|a| a == k), "{k} in {agent:?}");
        }
        assert_eq!(
            ids(peer_schema()),
            [
                "address",
                "profile",
                "label",
                "interval",
                "rate",
                "poisson",
                "size",
                "stamp",
                "ssid",
                "dscp",
                "ecn",
                "tlv",
                "hmac_key_file",
                "stamp_format"
            ]
        );
    }
}
