//! What an agent runs: its peers and its reflector, resolved from the
//! command line and the configuration file by [`crate::agent`]'s loader.
//! The agent session starts from it; the agent front end reports on it.

use std::net::SocketAddr;
use std::time::Duration;
use synapse_engine::reflector_admission::Admission;
use synapse_engine::stamp_key::StampKey;
use synapse_engine::{ReflectorStamping, Schedule, TimestampMode};

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
    /// UDP datagrams (the prober), or request and response over TCP (a
    /// connection and a thread of its own).
    pub transport: synapse_engine::Transport,
}

impl PeerConfig {
    /// The protocol spoken, for labels and the table.
    pub fn protocol(&self) -> &'static str {
        if self.stamp { "stamp" } else { "echo" }
    }
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
}
