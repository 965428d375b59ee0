//! What a load run came to, beside its probes' own outcome: what a
//! client session's finish carries to the report.

use crate::plan::ClientPlan;
use std::net::SocketAddr;
use synapse_engine::load::Grant;
use synapse_stats::load::{LoadFigures, PhaseRecord, Probe};

/// What a load run came to, beside its probes' own outcome.
#[derive(Debug, Clone)]
pub struct LoadOutcome {
    /// The figures, phase by phase.
    pub figures: LoadFigures,
    /// The phases as they ran.
    pub records: Vec<PhaseRecord>,
    /// Every probe, in the order they left.
    pub probes: Vec<Probe>,
    /// The run's start on the probes' clock, ns.
    pub origin_ns: u64,
    /// What the reflector granted.
    pub grant: Grant,
    /// Its load port.
    pub load_port: SocketAddr,
    /// What broke the load off, if something did.
    pub failure: Option<String>,
    /// The reflector refused part of it (exit 2, not 1).
    pub refused: bool,
    /// Stopped by Ctrl-C or a signal.
    pub interrupted: bool,
    /// The plan its probes ran by (STAMP to the reflector's port, when its
    /// grant said it has one): what the report describes.
    pub probe_plan: ClientPlan,
}
