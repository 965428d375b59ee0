//! The fleet's own families, beside the per-probe ones in [`super::metrics`]:
//! what discovery found and how it fares, how the subset was chosen, who
//! probes this host, and each peer's paths, bounded (worst and spread, no
//! series per port). Set once a window or once a discovery round, never
//! per probe.

use super::discovery::SourceStatus;
use super::pair::Pair;
use super::paths::PathSpread;
use super::register::register;
use crate::plan::agent::Chosen;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Source {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Discovered {
    source: String,
    /// `srv NAME`, `dns NAME:PORT`, `file PATH`.
    discovery: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChosenAs {
    source: String,
    /// `named`, `tier`, `fanout`.
    chosen: &'static str,
}

/// Discovery, the subset and the reflector's sources.
#[derive(Debug, Clone)]
pub struct FleetMetrics {
    source: String,
    hosts: Family<Discovered, Gauge>,
    failures: Family<Discovered, Counter>,
    failures_seen: std::collections::HashMap<String, u64>,
    last_ok: Family<Discovered, FloatGauge>,
    peers: Family<ChosenAs, Gauge>,
    probed_by: Gauge,
    paths: PathFamilies,
}

/// Per peer, its paths: the worst one's loss and median, the spread.
#[derive(Debug, Clone, Default)]
struct PathFamilies {
    loss_worst: Family<Pair, FloatGauge>,
    loss_spread: Family<Pair, FloatGauge>,
    rtt_worst: Family<Pair, FloatGauge>,
    rtt_spread: Family<Pair, FloatGauge>,
    lossy: Family<Pair, Gauge>,
}

impl FleetMetrics {
    /// Registers the families for agent `source`.
    pub fn new(registry: &mut Registry, source: &str) -> Self {
        let by_source = Family::<Source, Gauge>::default();
        let m = Self {
            source: source.into(),
            hosts: Family::default(),
            failures: Family::default(),
            failures_seen: Default::default(),
            last_ok: Family::default(),
            peers: Family::default(),
            probed_by: by_source
                .get_or_create(&Source {
                    source: source.into(),
                })
                .clone(),
            paths: PathFamilies::default(),
        };
        register!(registry,
            "synapse_discovery_hosts", "Hosts each discovery source named in its last good answer" => m.hosts;
            "synapse_discovery_failures", "Discovery rounds whose source failed (its last good answer was kept)" => m.failures;
            "synapse_discovery_last_success_timestamp_seconds", "When each discovery source last answered, Unix time" => m.last_ok;
            "synapse_peers", "Peers probed, by how they were chosen (named, tier, fanout)" => m.peers;
            "synapse_probed_by_sources", "Source addresses this agent's reflector answered over the last window: how many hosts measure this one" => by_source;
        );
        m.paths.register(registry);
        m
    }

    /// Each discovery source's state after a round.
    pub fn discovery(&mut self, sources: &[SourceStatus]) {
        for s in sources {
            let l = Discovered {
                source: self.source.clone(),
                discovery: s.key.clone(),
            };
            self.hosts.get_or_create(&l).set(s.hosts as i64);
            let seen = self.failures_seen.entry(s.key.clone()).or_insert(0);
            self.failures
                .get_or_create(&l)
                .inc_by(s.failures.saturating_sub(*seen));
            *seen = (*seen).max(s.failures);
            if let Some(t) = s.last_ok_s {
                self.last_ok.get_or_create(&l).set(t);
            }
        }
    }

    /// How many peers were chosen each way.
    pub fn chosen(&self, counts: &[(Chosen, usize)]) {
        for (how, n) in counts {
            let l = ChosenAs {
                source: self.source.clone(),
                chosen: how.name(),
            };
            self.peers.get_or_create(&l).set(*n as i64);
        }
    }

    /// Sources that probed this host over the last window.
    pub fn probed_by(&self, n: usize) {
        self.probed_by.set(n as i64);
    }

    /// A peer's paths over the last window.
    pub fn paths(&self, peer: &Pair, s: &PathSpread) {
        self.paths.set(peer, s);
    }

    /// Removes a gone peer's path series.
    pub fn forget(&self, peer: &Pair) {
        self.paths.forget(peer);
    }
}

impl PathFamilies {
    fn register(&self, r: &mut Registry) {
        register!(r,
            "synapse_path_loss_worst_ratio", "The loss of the peer's worst path over the last window (--paths)" => self.loss_worst;
            "synapse_path_loss_spread_ratio", "The worst path's loss less the best path's, over the last window" => self.loss_spread;
            "synapse_path_rtt_median_worst_seconds", "The highest of the paths' median RTTs over the last window" => self.rtt_worst;
            "synapse_path_rtt_median_spread_seconds", "The highest of the paths' median RTTs less the lowest, over the last window" => self.rtt_spread;
            "synapse_paths_lossy", "The peer's paths that lost a probe over the last window" => self.lossy;
        );
    }

    fn set(&self, peer: &Pair, s: &PathSpread) {
        let ratio = |p: Option<f64>| p.map(|v| v / 100.0);
        let secs = |ns: Option<u64>| ns.map(|v| v as f64 / 1e9);
        for (fam, v) in [
            (&self.loss_worst, ratio(s.worst_loss_percent)),
            (&self.loss_spread, ratio(s.loss_spread_percent)),
            (&self.rtt_worst, secs(s.worst_rtt_p50_ns)),
            (&self.rtt_spread, secs(s.rtt_p50_spread_ns)),
        ] {
            match v {
                Some(v) => {
                    fam.get_or_create(peer).set(v);
                }
                // Nothing measured: no figure, rather than a 0 that says
                // "no loss".
                None => {
                    fam.remove(peer);
                }
            }
        }
        self.lossy.get_or_create(peer).set(s.lossy as i64);
    }

    fn forget(&self, peer: &Pair) {
        for fam in [
            &self.loss_worst,
            &self.loss_spread,
            &self.rtt_worst,
            &self.rtt_spread,
        ] {
            fam.remove(peer);
        }
        self.lossy.remove(peer);
    }
}
