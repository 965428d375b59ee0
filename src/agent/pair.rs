//! The labels every per-peer series carries: who measures, whom, how, and
//! (when asked) both ends' topology labels. Shared by the per-probe
//! families ([`super::metrics`]) and the fleet's ([`super::fleet_metrics`]).

use prometheus_client::encoding::EncodeLabelSet;

/// `source`, `peer` and `transport` (`udp`, `tcp`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Pair {
    /// This agent.
    pub source: String,
    /// The peer measured.
    pub peer: String,
    /// How: UDP datagrams, or request and response over TCP.
    pub transport: &'static str,
    /// This host's and the peer's topology labels (`source_rack`,
    /// `peer_rack`…): the allowed set, empty unless asked for.
    #[prometheus(flatten)]
    pub topo: Vec<(String, String)>,
}
