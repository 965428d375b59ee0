//! Whether each peer answers, for Prometheus: `synapse_peer_up` (1 when a
//! probe had a timely reply in the last window, 0 when none did) and
//! `synapse_probe_errors_total` by `reason` (the path's errors by kind:
//! port, host or network unreachable, prohibited, too big, time exceeded,
//! a TCP peer's FIN or RST). The reasons are a fixed set, so the series
//! stay bounded.

use super::pair::Pair;
use super::register::register;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use synapse_stats::PathErrorKind;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PairReason {
    source: String,
    peer: String,
    transport: &'static str,
    reason: &'static str,
    #[prometheus(flatten)]
    topo: Vec<(String, String)>,
}

impl PairReason {
    fn of(p: &Pair, kind: PathErrorKind) -> Self {
        Self {
            source: p.source.clone(),
            peer: p.peer.clone(),
            transport: p.transport,
            reason: kind.name(),
            topo: p.topo.clone(),
        }
    }
}

/// The two families.
#[derive(Debug, Clone)]
pub struct HealthMetrics {
    up: Family<Pair, Gauge>,
    errors: Family<PairReason, Counter>,
}

impl HealthMetrics {
    /// Registers both in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self {
            up: Family::default(),
            errors: Family::default(),
        };
        register!(registry,
            "synapse_peer_up", "1 when a probe to the peer had a timely reply in the last window, 0 when none did" => m.up;
            "synapse_probe_errors", "Errors the path gave the peer's probes (ICMP; a TCP peer's FIN or RST), by reason" => m.errors;
        );
        m
    }

    /// One error of `kind` about a probe of the peer `p`.
    pub fn error(&self, p: &Pair, kind: PathErrorKind) {
        self.errors.get_or_create(&PairReason::of(p, kind)).inc();
    }

    /// Whether the peer `p` answered over the window just ended (`None`:
    /// nothing was sent, the gauge keeps its value).
    pub fn set_up(&self, p: &Pair, up: Option<bool>) {
        if let Some(up) = up {
            self.up.get_or_create(p).set(i64::from(up));
        }
    }

    /// A peer gone: its series go too.
    pub fn forget(&self, p: &Pair) {
        self.up.remove(p);
        for kind in PathErrorKind::ALL {
            self.errors.remove(&PairReason::of(p, kind));
        }
    }
}
