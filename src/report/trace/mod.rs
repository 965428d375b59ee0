//! What `synapse trace` (and the agent's triggered trace) reports: each
//! distinct path's hops and verdict, and over several ports the ECMP tree;
//! written as text ([`text`]) or JSON ([`json`]). Built from the engine's
//! tallies by the statistics' rule; names, when asked for, from the
//! resolver.

pub mod json;
pub mod text;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use synapse_engine::trace::TraceCounts;
use synapse_stats::trace::{EcmpTree, HopRef, Inconclusive, PathTally, TreePath, Verdict};

/// A trace's report.
#[derive(Debug, Clone)]
pub struct TraceReport {
    /// Where to.
    pub destination: SocketAddr,
    /// Where from (the first port's).
    pub local: SocketAddr,
    /// The ports, in the order traced.
    pub ports: Vec<u16>,
    /// Probes per hop asked for.
    pub probes: u32,
    /// The farthest TTL asked for.
    pub max_ttl: u8,
    /// The rate, probes a second at most.
    pub rate: f64,
    /// The distinct paths, their hops and verdicts, and what they share.
    pub tree: EcmpTree,
    /// What the trace did.
    pub counts: TraceCounts,
    /// Stopped before it was complete.
    pub interrupted: bool,
    /// Names of the addresses seen (`--resolve`).
    pub names: BTreeMap<IpAddr, String>,
}

/// The verdict over every path, as the exit status says it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Overall {
    /// No path loses past a hop.
    NoSuspect,
    /// A path loses from a link on.
    Suspect,
    /// A path cannot be judged.
    Inconclusive,
    /// The destination cannot be reached.
    Unreachable,
}

impl TraceReport {
    /// The report of `paths` (one tally per port).
    pub fn new(
        destination: SocketAddr,
        local: SocketAddr,
        paths: &[PathTally],
        counts: TraceCounts,
        interrupted: bool,
    ) -> Self {
        Self {
            destination,
            local,
            ports: paths.iter().map(|p| p.port).collect(),
            probes: 0,
            max_ttl: 0,
            rate: 0.0,
            tree: synapse_stats::trace::tree(paths),
            counts,
            interrupted,
            names: BTreeMap::new(),
        }
    }

    /// The same, saying what was asked.
    pub fn asked(mut self, probes: u32, max_ttl: u8, rate: f64) -> Self {
        (self.probes, self.max_ttl, self.rate) = (probes, max_ttl, rate);
        self
    }

    /// Every address that answered, once each.
    pub fn addresses(&self) -> Vec<IpAddr> {
        let mut seen: Vec<IpAddr> = self
            .tree
            .paths
            .iter()
            .flat_map(|p| p.hops.iter().flat_map(|h| h.addresses.iter().copied()))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen
    }

    /// Names every address seen with `name_of` (those it has a name for).
    pub fn resolve(&mut self, name_of: impl Fn(IpAddr) -> Option<String>) {
        self.names = self
            .addresses()
            .into_iter()
            .filter_map(|a| name_of(a).map(|n| (a, n)))
            .collect();
    }

    /// The path the report leads with: the first with a suspect, else the
    /// first inconclusive one, else the first.
    pub fn main_path(&self) -> Option<&TreePath> {
        let paths = &self.tree.paths;
        paths
            .iter()
            .find(|p| matches!(p.verdict, Verdict::Suspect(_)))
            .or_else(|| {
                paths
                    .iter()
                    .find(|p| matches!(p.verdict, Verdict::Unreachable(..)))
            })
            .or_else(|| {
                paths
                    .iter()
                    .find(|p| matches!(p.verdict, Verdict::Inconclusive(_)))
            })
            .or_else(|| paths.first())
    }

    /// Every path's verdict taken together: any suspect, then any
    /// unreachable, then any inconclusive, else none.
    pub fn overall(&self) -> Overall {
        let any = |f: fn(&Verdict) -> bool| self.tree.paths.iter().any(|p| f(&p.verdict));
        if any(|v| matches!(v, Verdict::Suspect(_))) {
            Overall::Suspect
        } else if any(|v| matches!(v, Verdict::Unreachable(..))) {
            Overall::Unreachable
        } else if self.tree.paths.is_empty() || any(|v| matches!(v, Verdict::Inconclusive(_))) {
            Overall::Inconclusive
        } else {
            Overall::NoSuspect
        }
    }

    /// The exit status: 0 no suspect, 3 a suspect, 4 inconclusive, 2 an
    /// unreachable destination; 130 when stopped before the end.
    pub fn exit_status(&self) -> i32 {
        use crate::error::exit;
        if self.interrupted {
            return exit::INTERRUPTED;
        }
        match self.overall() {
            Overall::NoSuspect => exit::PASS,
            Overall::Suspect => exit::FAIL,
            Overall::Inconclusive => exit::INCONCLUSIVE,
            Overall::Unreachable => exit::USAGE,
        }
    }

    /// From the first probe sent to the last.
    pub fn sending_time(&self) -> Duration {
        match (self.counts.first_send_ns, self.counts.last_send_ns) {
            (Some(a), Some(b)) => Duration::from_nanos(b.saturating_sub(a)),
            _ => Duration::ZERO,
        }
    }

    /// `ADDR` or `NAME (ADDR)`.
    pub fn addr_text(&self, addr: IpAddr) -> String {
        match self.names.get(&addr) {
            Some(n) => format!("{n} ({addr})"),
            None => addr.to_string(),
        }
    }

    /// A hop as a verdict names it: `ADDR (hop N)`, or `this host`.
    pub fn hop_text(&self, h: HopRef) -> String {
        match h.addr {
            Some(a) => format!("{} (hop {})", self.addr_text(a), h.ttl),
            None => "this host".into(),
        }
    }
}

/// Why a verdict is inconclusive, in words.
pub fn inconclusive_text(why: &Inconclusive) -> String {
    match why {
        Inconclusive::Unconfirmed(_) => "the loss is shown only by one answer that may be \
            ICMP rate limiting alone (not an echo): a second later hop, or the destination's \
            echo, would confirm it"
            .into(),
        Inconclusive::NeverAnswered => "the destination never answered: loss to it cannot be \
            told from silence"
            .into(),
        Inconclusive::TooFewProbes(high) => format!(
            "too few answers to rule loss out: it may be as high as {:.1} % (raise --probes)",
            high * 100.0
        ),
    }
}
