//! What an agent runs: its peers and its reflector, resolved from the
//! command line and the configuration file ([`load`]), each host pair's
//! phase and the packet budget ([`phase`]), topology labels ([`labels`]).
//! The agent session starts from it; the agent front end reports on it.

pub mod labels;
pub mod load;
pub mod phase;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use synapse_engine::reflector_admission::Admission;
use synapse_engine::stamp_key::StampKey;
use synapse_engine::{ReflectorStamping, Schedule, TimestampMode};

/// A host's topology labels (rack, zone, role…), by key.
pub type Labels = BTreeMap<String, String>;

/// How a peer came to be probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Chosen {
    /// Named by `--peer` or an `[agent.peers.NAME]` table: always probed.
    #[default]
    Named,
    /// Discovered, and in this host's tier (its rack): always probed.
    Tier,
    /// Discovered, and in this host's fanout.
    Fanout,
}

impl Chosen {
    /// As the table and `--check` say it.
    pub fn name(self) -> &'static str {
        match self {
            Chosen::Named => "named",
            Chosen::Tier => "tier",
            Chosen::Fanout => "fanout",
        }
    }
}

/// Where peers are discovered while the agent runs, and which of them it
/// probes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveryPlan {
    /// `--peers-file`: `[peers.NAME]` tables, re-read when changed.
    pub peers_file: Option<PathBuf>,
    /// `--peers-dns NAME[:PORT][,KEY=VALUE…]`: every A/AAAA address of
    /// NAME, with the labels given.
    pub dns: Vec<(String, u16, Labels)>,
    /// `--peers-srv NAME[,KEY=VALUE…]`: every SRV record of NAME, with the
    /// labels given.
    pub srv: Vec<(String, Labels)>,
    /// `--discover-every`.
    pub every: Duration,
    /// `--fanout`: discovered peers beyond the tier (`None`: all).
    pub fanout: Option<usize>,
    /// `--tier-label`: the label whose value, shared with this host, makes
    /// a discovered peer always probed.
    pub tier_label: Option<String>,
    /// `--label-from-name KEY=FIELD`: labels read off host names.
    pub name_rules: Vec<(String, usize)>,
}

impl AgentConfig {
    /// The discovery sources, as the banner says them.
    pub fn discovery_sources(&self) -> String {
        let d = &self.discovery;
        let mut parts: Vec<String> = Vec::new();
        parts.extend(d.peers_file.iter().map(|p| format!("file {}", p.display())));
        parts.extend(d.dns.iter().map(|(n, p, _)| format!("dns {n}:{p}")));
        parts.extend(d.srv.iter().map(|(n, _)| format!("srv {n}")));
        parts.join(", ")
    }
}

impl DiscoveryPlan {
    /// Whether any source is set.
    pub fn any(&self) -> bool {
        self.peers_file.is_some() || !self.dns.is_empty() || !self.srv.is_empty()
    }
}

/// One peer, resolved.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// Its name (the `peer` label).
    pub name: String,
    /// Its address as written (the `address` label of `synapse_peer_info`).
    pub address: String,
    /// Where its reflector is.
    pub addr: SocketAddr,
    /// How often it is probed.
    pub schedule: Schedule,
    /// Its first probe's offset into the schedule (spread per host pair).
    pub phase: Duration,
    /// Payload bytes.
    pub size: usize,
    /// STAMP instead of plain echo.
    pub stamp: bool,
    /// STAMP: the Session-Sender Identifier sent (0: none).
    pub ssid: u16,
    /// STAMP authenticated mode's key.
    pub key: Option<StampKey>,
    /// Class of service: its requests' TOS byte (`None`: not marked, the
    /// replies' marks not read).
    pub marks: Option<u8>,
    /// STAMP: the RFC 8972 TLVs asked for.
    pub tlvs: synapse_engine::protocol::tlv::StampTlvs,
    /// STAMP: the format of the T1 its requests carry.
    pub stamp_format: synapse_engine::stamp::TimeFormat,
    /// UDP datagrams (the prober), or request and response over TCP (a
    /// connection and a thread of its own).
    pub transport: synapse_engine::Transport,
    /// Its topology labels (from discovery, or its table's `label`).
    pub labels: Labels,
    /// How it came to be probed.
    pub chosen: Chosen,
}

impl PeerConfig {
    /// A multicast group: probed by a client of its own, each of its
    /// members a responder.
    pub fn is_group(&self) -> bool {
        self.addr.ip().is_multicast()
    }

    /// The protocol spoken, for labels and the table.
    pub fn protocol(&self) -> &'static str {
        if self.stamp { "stamp" } else { "echo" }
    }

    /// For tests: a plain echo peer `name` at `addr` (written as its IP),
    /// probed every 100 ms from phase 0, 8-byte payloads, no labels.
    #[cfg(test)]
    pub fn for_test(name: &str, addr: SocketAddr) -> Self {
        Self {
            name: name.into(),
            address: addr.ip().to_string(),
            addr,
            schedule: Schedule {
                pattern: synapse_stats::Pattern::Periodic,
                interval: Duration::from_millis(100),
            },
            phase: Duration::ZERO,
            size: 8,
            stamp: false,
            ssid: 0,
            key: None,
            marks: None,
            tlvs: Default::default(),
            stamp_format: Default::default(),
            transport: synapse_engine::Transport::Udp,
            labels: Default::default(),
            chosen: Default::default(),
        }
    }
}

/// When the agent traces a path that loses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TracePolicy {
    /// Trace a path whose window's loss is over this, percent (`None`:
    /// never).
    pub on_loss: Option<f64>,
    /// At most one trace of a peer this often.
    pub every: Duration,
    /// At most this many traces per `every`, all peers together.
    pub limit: u32,
}

/// The whole agent, resolved.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The `source` label.
    pub name: String,
    /// Where the reflector answers (`None`: it does not).
    pub reflect: Option<SocketAddr>,
    /// The reflector's STAMP port (`None`: none).
    pub stamp_port: Option<u16>,
    /// The STAMP port was asked for, so failing to bind it is an error.
    pub stamp_required: bool,
    /// How the reflector stamps.
    pub reflect_timestamps: ReflectorStamping,
    /// The reflector's TCP echo port (`Some(0)`: the echo port's number),
    /// or none.
    pub tcp_port: Option<u16>,
    /// The TCP port was asked for: failing to bind it is an error.
    pub tcp_required: bool,
    /// The sources the reflector answers (empty: all).
    pub admission: Admission,
    /// Where `/metrics` is served.
    pub metrics_listen: SocketAddr,
    /// How often the window turns over.
    pub report_every: Duration,
    /// The most probes per second all peers may send together.
    pub max_pps: f64,
    /// Where probes leave from.
    pub bind: Option<SocketAddr>,
    /// How long a probe waits for its reply.
    pub timeout: Duration,
    /// Which clock stamps the probes.
    pub timestamps: TimestampMode,
    /// The measurement thread's placement, as asked.
    pub thread: crate::cli::ThreadArgs,
    /// The peers, in the order they were given.
    pub peers: Vec<PeerConfig>,
    /// This host's labels (`--label`, and those its name gives).
    pub labels: Labels,
    /// `--series-label`: the label keys put on every peer's series.
    pub series_labels: Vec<String>,
    /// `--paths`: source ports each UDP peer is probed from, in turn.
    pub paths: usize,
    /// `--trace-on-loss`, `--trace-every`, `--trace-limit`.
    pub trace: TracePolicy,
    /// Where more peers are discovered.
    pub discovery: DiscoveryPlan,
}
