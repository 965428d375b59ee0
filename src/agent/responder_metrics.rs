//! A multicast peer's responders in Prometheus: each member of the group
//! that answers gets its own round trip and counts, labelled `responder`
//! (its name, else its address), beside the group's own series (each
//! request's slowest answer, under the peer's name). Bounded: a group's
//! first [`MAX_SERIES`] responders get series; answers from any beyond
//! are counted in `synapse_responders_unlisted`, so a group that grows
//! cannot grow the scrape without end.

use super::buckets::histogram;
use super::register::register;
use crate::plan::agent::PeerConfig;
use crate::session::ResponderRecord;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use synapse_stats::RecordKind;

/// Responders a group's series are kept for.
pub const MAX_SERIES: usize = 16;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResponderLabels {
    source: String,
    peer: String,
    responder: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    source: String,
    peer: String,
}

#[derive(Debug, Clone)]
struct Families {
    rtt: Family<ResponderLabels, Histogram, fn() -> Histogram>,
    sent: Family<ResponderLabels, Counter>,
    lost: Family<ResponderLabels, Counter>,
    late: Family<ResponderLabels, Counter>,
    duplicate: Family<ResponderLabels, Counter>,
    unlisted: Family<GroupLabels, Counter>,
}

/// One responder's series, looked up once.
#[derive(Debug)]
struct Series {
    labels: ResponderLabels,
    rtt: Histogram,
    sent: Counter,
    lost: Counter,
    late: Counter,
    duplicate: Counter,
}

/// One group peer's responders.
#[derive(Debug)]
struct Group {
    peer: String,
    responders: Vec<Series>,
    unlisted: Counter,
}

/// The responders' metrics of every group peer.
#[derive(Debug)]
pub struct ResponderMetrics {
    source: String,
    families: Families,
    /// By the peer's index in the configuration (`None`: not a group).
    groups: Vec<Option<Group>>,
}

impl ResponderMetrics {
    pub fn new(registry: &mut Registry, source: &str) -> Self {
        let families = Families {
            rtt: Family::new_with_constructor(histogram),
            sent: Family::default(),
            lost: Family::default(),
            late: Family::default(),
            duplicate: Family::default(),
            unlisted: Family::default(),
        };
        let f = &families;
        register!(registry, seconds:
            "synapse_responder_rtt", "A multicast group's member: round-trip time of its answers" => f.rtt;
        );
        register!(registry,
            "synapse_responder_probes_sent", "A multicast group's member: requests it was asked (from the one it was first heard on)" => f.sent;
            "synapse_responder_probes_lost", "A multicast group's member: requests it gave no timely answer" => f.lost;
            "synapse_responder_probes_late", "A multicast group's member: answers after the timeout (counted lost too)" => f.late;
            "synapse_responder_replies_duplicate", "A multicast group's member: answers received more than once" => f.duplicate;
            "synapse_responders_unlisted", "A multicast group: answers from members beyond the first 16, which have no series of their own" => f.unlisted;
        );
        Self {
            source: source.into(),
            families,
            groups: Vec::new(),
        }
    }

    /// Replaces the peers (at start and on reload): a group that stays
    /// keeps its responders' counts; one that is gone loses its series.
    pub fn set_groups(&mut self, peers: &[PeerConfig]) {
        let mut old: Vec<Group> = self.groups.drain(..).flatten().collect();
        for p in peers {
            let kept = old
                .iter()
                .position(|g| g.peer == p.name)
                .filter(|_| p.is_group())
                .map(|i| old.swap_remove(i));
            let group = kept.or_else(|| p.is_group().then(|| self.group_of(&p.name)));
            self.groups.push(group);
        }
        for g in old {
            self.forget(&g);
        }
    }

    fn group_of(&self, peer: &str) -> Group {
        let labels = GroupLabels {
            source: self.source.clone(),
            peer: peer.into(),
        };
        Group {
            peer: peer.into(),
            responders: Vec::new(),
            unlisted: self.families.unlisted.get_or_create(&labels).clone(),
        }
    }

    fn forget(&self, g: &Group) {
        let f = &self.families;
        for s in &g.responders {
            f.rtt.remove(&s.labels);
            f.sent.remove(&s.labels);
            f.lost.remove(&s.labels);
            f.late.remove(&s.labels);
            f.duplicate.remove(&s.labels);
        }
        f.unlisted.remove(&GroupLabels {
            source: self.source.clone(),
            peer: g.peer.clone(),
        });
    }

    /// What a group's responder's record adds.
    pub fn record(&mut self, r: &ResponderRecord) {
        if r.record.warmup {
            return;
        }
        let Some(Some(g)) = self.groups.get_mut(r.peer) else {
            return;
        };
        let at = match g
            .responders
            .iter()
            .position(|s| s.labels.responder == r.responder)
        {
            Some(at) => at,
            None if g.responders.len() < MAX_SERIES => {
                let labels = ResponderLabels {
                    source: self.source.clone(),
                    peer: g.peer.clone(),
                    responder: r.responder.to_string(),
                };
                let f = &self.families;
                g.responders.push(Series {
                    rtt: f.rtt.get_or_create(&labels).clone(),
                    sent: f.sent.get_or_create(&labels).clone(),
                    lost: f.lost.get_or_create(&labels).clone(),
                    late: f.late.get_or_create(&labels).clone(),
                    duplicate: f.duplicate.get_or_create(&labels).clone(),
                    labels,
                });
                g.responders.len() - 1
            }
            None => {
                g.unlisted.inc();
                return;
            }
        };
        let s = &g.responders[at];
        match r.record.kind {
            RecordKind::Sample => {
                s.sent.inc();
                s.rtt.observe(r.record.rtt_ns as f64 / 1e9);
            }
            RecordKind::Lost => {
                s.sent.inc();
                s.lost.inc();
            }
            RecordKind::Late { .. } => {
                s.late.inc();
            }
            RecordKind::Duplicate => {
                s.duplicate.inc();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::Record;

    fn group_peer(name: &str) -> PeerConfig {
        PeerConfig::for_test(name, "239.1.2.3:7000".parse().unwrap())
    }

    fn text(r: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, r).unwrap();
        out
    }

    #[test]
    fn each_responder_has_its_series_up_to_the_bound_and_the_rest_are_counted() {
        let mut registry = Registry::default();
        let mut m = ResponderMetrics::new(&mut registry, "a");
        m.set_groups(&[group_peer("g")]);
        let sample = Record::sample(1, 0, 50_000, false);
        let lost = Record::event(RecordKind::Lost, 2, 0, false);
        let names: Vec<String> = (0..MAX_SERIES + 2).map(|i| format!("r{i}")).collect();
        for name in &names {
            for record in [&sample, &lost] {
                m.record(&ResponderRecord {
                    peer: 0,
                    responder: name,
                    record,
                });
            }
        }
        let t = text(&registry);
        let line = |name: &str| {
            t.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no {name} in:\n{t}"))
                .to_string()
        };
        assert!(
            line(r#"synapse_responder_probes_sent_total{source="a",peer="g",responder="r0"}"#)
                .ends_with(" 2"),
            "{t}"
        );
        assert!(
            line(r#"synapse_responder_probes_lost_total{source="a",peer="g",responder="r15"}"#)
                .ends_with(" 1"),
            "{t}"
        );
        assert!(!t.contains(r#"responder="r16""#), "bounded: {t}");
        assert!(
            line(r#"synapse_responders_unlisted_total{source="a",peer="g"}"#).ends_with(" 4"),
            "two records each of the two beyond the bound: {t}"
        );
        // A reload without the group drops its series.
        m.set_groups(&[]);
        assert!(!text(&registry).contains(r#"peer="g""#));
    }
}
