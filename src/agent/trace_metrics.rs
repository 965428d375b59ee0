//! The traces' families, bounded: per peer at most one suspect series
//! (the last trace's suspect hop, while its path keeps losing), and
//! counters of traces by verdict, of their probes, and of the traces the
//! limit refused. A shipped rule (assets/prometheus/synapse.trace.rules.yml)
//! counts the sources that blame one hop address.

use super::register::register;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

type FloatGauge = Gauge<f64, AtomicU64>;

/// A suspect: whose trace, which hop (the address after which the loss
/// persists) at which TTL.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Suspect {
    source: String,
    peer: String,
    hop: String,
    ttl: u8,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByVerdict {
    source: String,
    /// `no_suspect`, `suspect`, `inconclusive`, `unreachable`.
    verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Source {
    source: String,
}

/// The families, and each peer's suspect series now.
#[derive(Debug, Clone)]
pub struct TraceMetrics {
    source: String,
    suspect: Family<Suspect, FloatGauge>,
    /// Each peer's series in `suspect`, to remove it.
    shown: HashMap<String, Suspect>,
    traces: Family<ByVerdict, Counter>,
    probes: Counter,
    limited: Counter,
}

impl TraceMetrics {
    /// Registers the families for agent `source`.
    pub fn new(registry: &mut Registry, source: &str) -> Self {
        let probes = Family::<Source, Counter>::default();
        let limited = Family::<Source, Counter>::default();
        let of = |f: &Family<Source, Counter>| {
            f.get_or_create(&Source {
                source: source.into(),
            })
            .clone()
        };
        let m = Self {
            source: source.into(),
            suspect: Family::default(),
            shown: HashMap::new(),
            traces: Family::default(),
            probes: of(&probes),
            limited: of(&limited),
        };
        register!(registry,
            "synapse_trace_suspect_loss_ratio", "The last trace of a lossy path: the loss that persists past hop (its address and TTL), while the path keeps losing" => m.suspect;
            "synapse_traces", "Traces of lossy paths (--trace-on-loss), by verdict" => m.traces;
            "synapse_trace_probes", "Probes the traces sent" => probes;
            "synapse_traces_limited", "Traces a lossy path wanted that --trace-every or --trace-limit refused" => limited;
        );
        m
    }

    /// A trace of `peer` ended with `verdict` after `probes` probes; its
    /// suspect, if any: the hop and TTL after which `loss` persists.
    pub fn traced(
        &mut self,
        peer: &str,
        verdict: &'static str,
        probes: u64,
        suspect: Option<(String, u8, f64)>,
    ) {
        self.traces
            .get_or_create(&ByVerdict {
                source: self.source.clone(),
                verdict,
            })
            .inc();
        self.probes.inc_by(probes);
        self.clear(peer);
        if let Some((hop, ttl, loss)) = suspect {
            let l = Suspect {
                source: self.source.clone(),
                peer: peer.into(),
                hop,
                ttl,
            };
            self.suspect.get_or_create(&l).set(loss);
            self.shown.insert(peer.into(), l);
        }
    }

    /// `peer`'s path no longer loses (or the peer is gone): its suspect
    /// series goes.
    pub fn clear(&mut self, peer: &str) {
        if let Some(l) = self.shown.remove(peer) {
            self.suspect.remove(&l);
        }
    }

    /// A trace refused by the limits.
    pub fn limited(&self) {
        self.limited.inc();
    }
}
