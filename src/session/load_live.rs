//! What a running load run shows as it goes: the phase, the load each way,
//! the round trip over time tagged by phase, and the current phase's
//! stage split. The conductor writes it; the live display and the
//! progress line read a copy.

use std::collections::VecDeque;
use synapse_stats::load::{Goodput, PhaseKind, Stage};

/// Probes the live view keeps (a minute at 10 ms).
pub const KEPT: usize = 6_000;

/// One probe as the live view draws it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LivePoint {
    /// Seconds since the run's start.
    pub t_s: f64,
    /// Its round trip, ns (`None`: lost).
    pub rtt_ns: Option<u64>,
    /// The phase it left in.
    pub phase: PhaseKind,
}

/// One interval of the load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveLoad {
    /// Seconds since the run's start, at its end.
    pub t_s: f64,
    /// Goodput over it.
    pub goodput: Goodput,
    /// The phase.
    pub phase: PhaseKind,
}

/// The run as it stands.
#[derive(Debug, Clone, Default)]
pub struct LoadLive {
    /// The phase running: its place in the run (from 1), how many there
    /// are, what it is, and when it began (seconds since the start).
    pub phase: Option<(usize, usize, PhaseKind, f64)>,
    /// Streams open, each way.
    pub streams: (u32, u32),
    /// Goodput over the last interval.
    pub goodput: Goodput,
    /// Recent probes, oldest first.
    pub probes: VecDeque<LivePoint>,
    /// The load's intervals so far.
    pub load: Vec<LiveLoad>,
    /// The running phase's stage inflation so far, over the last idle
    /// phase's means, ns.
    pub stages: Vec<(Stage, f64)>,
    /// The phase's goodput is stable by the IETF rule.
    pub stable: bool,
    /// Every phase has run (or the run stopped).
    pub done: bool,
    /// What broke the load off, if something did.
    pub failure: Option<String>,
}

impl LoadLive {
    /// Keeps a probe, dropping the oldest beyond [`KEPT`].
    pub fn push(&mut self, p: LivePoint) {
        if self.probes.len() == KEPT {
            self.probes.pop_front();
        }
        self.probes.push_back(p);
    }

    /// The running phase's name, for a title.
    pub fn phase_name(&self) -> &'static str {
        self.phase.map_or("starting", |(_, _, k, _)| k.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_view_keeps_the_latest_probes() {
        let mut l = LoadLive::default();
        assert_eq!(l.phase_name(), "starting");
        for i in 0..KEPT + 5 {
            l.push(LivePoint {
                t_s: i as f64,
                rtt_ns: Some(1),
                phase: PhaseKind::Idle,
            });
        }
        assert_eq!(l.probes.len(), KEPT);
        assert_eq!(l.probes.front().map(|p| p.t_s), Some(5.0));
    }
}
