//! The agent's Prometheus metrics: names, labels, buckets, and what each
//! record from the prober adds to them.
//!
//! Each histogram is classic and native at once (`prometheus-client`
//! 0.25): a text scrape gets the fixed buckets, a protobuf scrape gets the
//! sparse ones as well. Base unit seconds. A peer's handles are looked up
//! once, when the peer is added, so recording a result hashes no labels.

use crate::plan::agent::PeerConfig;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use synapse_engine::{ReflectorTotals, Refusals};
use synapse_stats::{Record, RecordKind, ReplyOrder, Segment};

#[cfg(test)]
use super::buckets::CLASSIC_BUCKETS;
use super::buckets::histogram;
use super::register::register;

pub use super::pair::Pair;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PairSegment {
    source: String,
    peer: String,
    transport: &'static str,
    segment: &'static str,
    #[prometheus(flatten)]
    topo: Vec<(String, String)>,
}

/// A leg's marks: `leg` (`forward`, `backward`), `dscp` (0..=63) and
/// `ecn` (`not-ect`, `ect1`, `ect0`, `ce`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LegMarks {
    source: String,
    peer: String,
    transport: &'static str,
    leg: &'static str,
    dscp: u8,
    ecn: &'static str,
    #[prometheus(flatten)]
    topo: Vec<(String, String)>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Leg {
    source: String,
    peer: String,
    transport: &'static str,
    leg: &'static str,
    #[prometheus(flatten)]
    topo: Vec<(String, String)>,
}

const LEGS: [&str; 2] = ["forward", "backward"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PeerInfo {
    source: String,
    peer: String,
    transport: &'static str,
    address: String,
    protocol: &'static str,
    timestamps: String,
    /// How it came to be probed: `named`, `tier`, `fanout`.
    chosen: &'static str,
    #[prometheus(flatten)]
    topo: Vec<(String, String)>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reflected {
    source: String,
    protocol: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refused {
    source: String,
    protocol: &'static str,
    reason: &'static str,
}

/// Why the reflector did not answer, as the `reason` label says it.
const REFUSAL_REASONS: [&str; REASONS] = Refusals::REASONS;
const REASONS: usize = Refusals::REASONS.len();

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Build {
    version: &'static str,
}

type Hist = Family<Pair, Histogram, fn() -> Histogram>;
type SegHist = Family<PairSegment, Histogram, fn() -> Histogram>;

/// Every family, registered once.
#[derive(Debug, Clone)]
struct Families {
    rtt: Hist,
    segment: SegHist,
    ipdv: Hist,
    sent: Family<Pair, Counter>,
    lost: Family<Pair, Counter>,
    late: Family<Pair, Counter>,
    duplicate: Family<Pair, Counter>,
    reordered: Family<Pair, Counter>,
    stray: Family<Pair, Counter>,
    misses: Family<Pair, Counter>,
    reflected: Family<Reflected, Counter>,
    refused: Family<Refused, Counter>,
    info: Family<PeerInfo, Gauge>,
    cos_sent: Family<LegMarks, Counter>,
    cos_received: Family<LegMarks, Counter>,
    cos_remarked: Family<Leg, Counter>,
    cos_ce: Family<Leg, Counter>,
}

/// One peer's class-of-service series: per leg, a counter per TOS byte
/// sent and received (made when first seen, then kept), and the
/// re-marked and CE counts.
#[derive(Debug)]
struct CosSeries {
    /// The TOS byte the peer's requests leave with.
    sent: u8,
    by_tos: Box<[[[Option<Counter>; 256]; 2]; 2]>,
    remarked: [Counter; 2],
    ce: [Counter; 2],
}

/// One peer's series, looked up once.
#[derive(Debug)]
struct PeerSeries {
    labels: Pair,
    info: PeerInfo,
    rtt: Histogram,
    ipdv: Histogram,
    segments: [Option<Histogram>; synapse_stats::SEGMENTS],
    sent: Counter,
    lost: Counter,
    late: Counter,
    duplicate: Counter,
    reordered: Counter,
    stray: Counter,
    misses: Counter,
    /// The last fresh RTT, for |IPDV| (arrival order, losses skipped).
    previous_rtt_ns: Option<u64>,
    /// Class of service, when the peer's requests are marked.
    cos: Option<CosSeries>,
    /// STAMP: the tightest exchange since the clocks' offset was set.
    offset: super::clock_metrics::OffsetWindow,
    order: ReplyOrder,
}

/// The agent's metrics, and the registry `/metrics` encodes.
#[derive(Debug)]
pub struct Metrics {
    source: String,
    /// Discovery's, the subset's, the paths' and the reflector's sources.
    pub fleet: super::fleet_metrics::FleetMetrics,
    /// STAMP peers' one-way delays and the clocks at both ends.
    clock: super::clock_metrics::ClockMetrics,
    /// Whether each peer answers, and the path's errors by reason.
    health: super::health_metrics::HealthMetrics,
    /// Multicast peers: each member's own series.
    pub responders: super::responder_metrics::ResponderMetrics,
    /// This host's labels, and the keys of them (and of the peers') that
    /// series carry.
    own_labels: crate::plan::agent::labels::Labels,
    series_labels: Vec<String>,
    families: Families,
    peers: Vec<PeerSeries>,
    /// Strays from addresses that are no peer's.
    unknown_stray: Counter,
    reflected: [Counter; 2],
    reflected_seen: [u64; 2],
    /// Refusals by protocol and reason, and the totals last added.
    refused: [[Counter; REASONS]; 2],
    refused_seen: [[u64; REASONS]; 2],
}

/// The `peer` label of strays from no peer's address.
pub const UNKNOWN_PEER: &str = "unknown";

impl Metrics {
    /// Registers every family in `registry` for agent `source`.
    pub fn new(registry: &mut Registry, source: &str) -> Self {
        let f = Families {
            rtt: Family::new_with_constructor(histogram),
            segment: Family::new_with_constructor(histogram),
            ipdv: Family::new_with_constructor(histogram),
            sent: Family::default(),
            lost: Family::default(),
            late: Family::default(),
            duplicate: Family::default(),
            reordered: Family::default(),
            stray: Family::default(),
            misses: Family::default(),
            reflected: Family::default(),
            refused: Family::default(),
            info: Family::default(),
            cos_sent: Family::default(),
            cos_received: Family::default(),
            cos_remarked: Family::default(),
            cos_ce: Family::default(),
        };
        register(registry, &f);
        let build = Family::<Build, Gauge>::default();
        build
            .get_or_create(&Build {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        register!(registry,
            "synapse_build_info", "Synapse's version, as a label" => build;
        );
        let unknown_stray = f
            .stray
            .get_or_create(&Pair {
                source: source.into(),
                peer: UNKNOWN_PEER.into(),
                // Strays reach the prober, which speaks UDP.
                transport: "udp",
                topo: Vec::new(),
            })
            .clone();
        let reflected = ["echo", "stamp"].map(|protocol| {
            f.reflected
                .get_or_create(&Reflected {
                    source: source.into(),
                    protocol,
                })
                .clone()
        });
        let refused = ["echo", "stamp"].map(|protocol| {
            REFUSAL_REASONS.map(|reason| {
                f.refused
                    .get_or_create(&Refused {
                        source: source.into(),
                        protocol,
                        reason,
                    })
                    .clone()
            })
        });
        Self {
            source: source.into(),
            fleet: super::fleet_metrics::FleetMetrics::new(registry, source),
            clock: super::clock_metrics::ClockMetrics::new(registry),
            health: super::health_metrics::HealthMetrics::new(registry),
            responders: super::responder_metrics::ResponderMetrics::new(registry, source),
            own_labels: crate::plan::agent::labels::Labels::new(),
            series_labels: Vec::new(),
            families: f,
            peers: Vec::new(),
            unknown_stray,
            reflected,
            reflected_seen: [0; 2],
            refused,
            refused_seen: [[0; REASONS]; 2],
        }
    }

    /// Puts `allowed` of this host's and each peer's labels on the series
    /// of peers set from now on.
    pub fn set_topology(&mut self, own: &crate::plan::agent::labels::Labels, allowed: &[String]) {
        self.own_labels = own.clone();
        self.series_labels = allowed.to_vec();
    }

    /// Replaces the peers (at start and on reload): a peer that is gone
    /// loses its series, one that stays keeps its counts.
    pub fn set_peers(&mut self, peers: &[PeerConfig], timestamps: &str) {
        self.set_peers_stamped(peers, |_| timestamps.to_string());
    }

    /// [`Metrics::set_peers`], each peer's `timestamps` label its own
    /// (a TCP peer's stamps are never a NIC's).
    pub fn set_peers_stamped(
        &mut self,
        peers: &[PeerConfig],
        timestamps: impl Fn(usize) -> String,
    ) {
        self.responders.set_groups(peers);
        let mut old: Vec<PeerSeries> = std::mem::take(&mut self.peers);
        for (i, p) in peers.iter().enumerate() {
            let info = self.info_of(p, &timestamps(i));
            let kept = old.iter().position(|s| {
                s.labels.peer == p.name
                    && s.labels.transport == p.transport.name()
                    && s.labels.topo == info.topo
            });
            let mut series = match kept {
                Some(i) => old.swap_remove(i),
                None => self.series_of(info.clone()),
            };
            if series.cos.as_ref().map(|c| c.sent) != p.marks {
                self.forget_cos(&series.labels);
                series.cos = p.marks.map(|sent| self.cos_of(&series.labels, sent));
            }
            if series.info != info {
                self.families.info.remove(&series.info);
            }
            self.families.info.get_or_create(&info).set(1);
            self.peers.push(PeerSeries { info, ..series });
        }
        for gone in old {
            self.forget(&gone);
        }
    }

    fn info_of(&self, p: &PeerConfig, timestamps: &str) -> PeerInfo {
        PeerInfo {
            source: self.source.clone(),
            peer: p.name.clone(),
            transport: p.transport.name(),
            address: p.address.clone(),
            protocol: p.protocol(),
            timestamps: timestamps.into(),
            chosen: p.chosen.name(),
            topo: crate::plan::agent::labels::series_pairs(
                &self.series_labels,
                &self.own_labels,
                &p.labels,
            ),
        }
    }

    fn series_of(&self, info: PeerInfo) -> PeerSeries {
        let f = &self.families;
        let labels = Pair {
            source: self.source.clone(),
            peer: info.peer.clone(),
            transport: info.transport,
            topo: info.topo.clone(),
        };
        let counter = |fam: &Family<Pair, Counter>| fam.get_or_create(&labels).clone();
        PeerSeries {
            rtt: f.rtt.get_or_create(&labels).clone(),
            ipdv: f.ipdv.get_or_create(&labels).clone(),
            segments: Default::default(),
            sent: counter(&f.sent),
            lost: counter(&f.lost),
            late: counter(&f.late),
            duplicate: counter(&f.duplicate),
            reordered: counter(&f.reordered),
            stray: counter(&f.stray),
            misses: counter(&f.misses),
            previous_rtt_ns: None,
            cos: None,
            offset: Default::default(),
            order: ReplyOrder::default(),
            info,
            labels,
        }
    }

    fn cos_of(&self, l: &Pair, sent: u8) -> CosSeries {
        let leg = |i: usize| Leg {
            source: l.source.clone(),
            peer: l.peer.clone(),
            transport: l.transport,
            leg: LEGS[i],
            topo: l.topo.clone(),
        };
        let f = &self.families;
        CosSeries {
            sent,
            by_tos: Box::new(std::array::from_fn(|_| {
                std::array::from_fn(|_| std::array::from_fn(|_| None))
            })),
            remarked: [0, 1].map(|i| f.cos_remarked.get_or_create(&leg(i)).clone()),
            ce: [0, 1].map(|i| f.cos_ce.get_or_create(&leg(i)).clone()),
        }
    }

    /// Removes every class-of-service series of the peer `l`.
    fn forget_cos(&self, l: &Pair) {
        let f = &self.families;
        for leg in LEGS {
            let at = Leg {
                source: l.source.clone(),
                peer: l.peer.clone(),
                transport: l.transport,
                leg,
                topo: l.topo.clone(),
            };
            f.cos_remarked.remove(&at);
            f.cos_ce.remove(&at);
            for tos in 0..=255u8 {
                let m = LegMarks {
                    source: l.source.clone(),
                    peer: l.peer.clone(),
                    transport: l.transport,
                    leg,
                    dscp: tos >> 2,
                    ecn: synapse_stats::Ecn::from_bits(tos).name(),
                    topo: l.topo.clone(),
                };
                f.cos_sent.remove(&m);
                f.cos_received.remove(&m);
            }
        }
    }

    fn forget(&self, s: &PeerSeries) {
        let f = &self.families;
        let l = &s.labels;
        f.rtt.remove(l);
        f.ipdv.remove(l);
        for fam in [
            &f.sent,
            &f.lost,
            &f.late,
            &f.duplicate,
            &f.reordered,
            &f.stray,
            &f.misses,
        ] {
            fam.remove(l);
        }
        for seg in Segment::ALL {
            f.segment.remove(&PairSegment {
                source: l.source.clone(),
                peer: l.peer.clone(),
                transport: l.transport,
                segment: seg.key(),
                topo: l.topo.clone(),
            });
        }
        f.info.remove(&s.info);
        self.forget_cos(l);
        self.clock.forget(l);
        self.fleet.forget(l);
        self.health.forget(l);
    }

    /// Whether peer `peer` answered over the window just ended.
    pub fn peer_up(&self, peer: usize, up: Option<bool>) {
        if let Some(p) = self.peers.get(peer) {
            self.health.set_up(&p.labels, up);
        }
    }

    /// Peer `peer`'s paths over the last window (worst and spread).
    pub fn path_spread(&self, peer: usize, s: &super::paths::PathSpread) {
        if let Some(p) = self.peers.get(peer) {
            self.fleet.paths(&p.labels, s);
        }
    }

    /// Adds one record about peer `peer` (an index into the peers set
    /// last; anything else is a stray from no peer).
    pub fn record(&mut self, peer: usize, r: &Record) {
        let Some(s) = self.peers.get_mut(peer) else {
            if r.kind == RecordKind::Stray {
                self.unknown_stray.inc();
            }
            return;
        };
        if r.warmup {
            return;
        }
        match r.kind {
            RecordKind::Sample => {
                s.sent.inc();
                if s.order.timely(r.seq) {
                    s.reordered.inc();
                }
                s.rtt.observe(seconds(r.rtt_ns));
                if let Some(prev) = s.previous_rtt_ns.replace(r.rtt_ns) {
                    s.ipdv.observe(seconds(prev.abs_diff(r.rtt_ns)));
                }
                for seg in Segment::ALL {
                    if let Some(v) = r.split.get(seg) {
                        segment_series(&self.families.segment, s, seg).observe(seconds(v));
                    }
                }
                if let Some(c) = &mut s.cos {
                    record_cos(&self.families, &s.labels, c, &r.marks);
                }
                if r.far.application().is_some() {
                    self.clock.record(&s.labels, &mut s.offset, &r.far);
                }
            }
            RecordKind::Lost => {
                s.sent.inc();
                s.lost.inc();
            }
            RecordKind::Late { reordered } => {
                s.late.inc();
                if reordered {
                    s.reordered.inc();
                }
                s.order.answered(r.seq);
            }
            RecordKind::Duplicate => {
                s.duplicate.inc();
            }
            RecordKind::Stray => {
                s.stray.inc();
            }
            RecordKind::Missed => {
                s.misses.inc();
            }
            RecordKind::PathError => {
                if let Some(e) = r.error() {
                    self.health.error(&s.labels, e.kind);
                }
            }
            RecordKind::Outage { .. } => {}
        }
    }

    /// The reflectors' totals since they started (echo, STAMP).
    pub fn reflected(&mut self, stamp: bool, totals: &ReflectorTotals) {
        let i = usize::from(stamp);
        let new = totals.packets.saturating_sub(self.reflected_seen[i]);
        self.reflected[i].inc_by(new);
        self.reflected_seen[i] = self.reflected_seen[i].max(totals.packets);
        for (r, now) in totals.refused.counts().into_iter().enumerate() {
            let seen = &mut self.refused_seen[i][r];
            self.refused[i][r].inc_by(now.saturating_sub(*seen));
            *seen = (*seen).max(now);
        }
    }
}

/// One reply's class of service: per leg, its marks sent and received,
/// whether the DSCP was re-marked, and whether CE was set on the way.
fn record_cos(f: &Families, l: &Pair, c: &mut CosSeries, m: &synapse_stats::Marks) {
    use synapse_stats::Ecn;
    let rev_sent = match (m.rev_sent_dscp(), m.rev_sent_ecn()) {
        (Some(d), e) => Some((d.0 << 2) | e.map_or(0, Ecn::bits)),
        (None, _) => None,
    };
    let legs = [
        (Some(c.sent), m.fwd_received()),
        (rev_sent, m.rev_received()),
    ];
    for (i, (sent, received)) in legs.into_iter().enumerate() {
        let mut count = |dir: usize, tos: u8| {
            let fam = if dir == 0 {
                &f.cos_sent
            } else {
                &f.cos_received
            };
            c.by_tos[i][dir][usize::from(tos)]
                .get_or_insert_with(|| {
                    fam.get_or_create(&LegMarks {
                        source: l.source.clone(),
                        peer: l.peer.clone(),
                        transport: l.transport,
                        leg: LEGS[i],
                        dscp: tos >> 2,
                        ecn: Ecn::from_bits(tos).name(),
                        topo: l.topo.clone(),
                    })
                    .clone()
                })
                .inc();
        };
        if let Some(tos) = sent {
            count(0, tos);
        }
        let Some(got) = received else { continue };
        count(1, got);
        if let Some(sent) = sent {
            if sent >> 2 != got >> 2 {
                c.remarked[i].inc();
            }
            let ect = matches!(Ecn::from_bits(sent), Ecn::Ect0 | Ecn::Ect1);
            if ect && Ecn::from_bits(got) == Ecn::Ce {
                c.ce[i].inc();
            }
        }
    }
}

/// A segment's series for `s`, created when the segment is first measured
/// (so a run without kernel stamps shows no empty segment series).
fn segment_series<'s>(fam: &SegHist, s: &'s mut PeerSeries, seg: Segment) -> &'s Histogram {
    s.segments[seg.index()].get_or_insert_with(|| {
        fam.get_or_create(&PairSegment {
            source: s.labels.source.clone(),
            peer: s.labels.peer.clone(),
            transport: s.labels.transport,
            segment: seg.key(),
            topo: s.labels.topo.clone(),
        })
        .clone()
    })
}

/// Nanoseconds as seconds. Divided, not multiplied by 1e-9: 1,000 ns is
/// then exactly the bound 1e-6 and falls in its bucket (`le` includes it).
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn register(r: &mut Registry, f: &Families) {
    register!(r, seconds:
        "synapse_rtt", "Round-trip time, application to application" => f.rtt;
        "synapse_rtt_segment", "Round-trip time by segment (kernel and NIC timestamps)" => f.segment;
        "synapse_ipdv", "|IPDV|: the RTT's change from one reply to the next (RFC 3393)" => f.ipdv;
    );
    register!(r,
        "synapse_probes_sent", "Probes whose fate is known (answered in time, or not)" => f.sent;
        "synapse_probes_lost", "Probes without a timely reply" => f.lost;
        "synapse_probes_late", "Replies that came after the timeout (counted lost too)" => f.late;
        "synapse_replies_duplicate", "Replies received more than once" => f.duplicate;
        "synapse_replies_reordered", "Replies that came after a later probe's (RFC 4737), timely or late" => f.reordered;
        "synapse_stray_datagrams", "Datagrams that answer no probe of this agent" => f.stray;
        "synapse_schedule_misses", "Probe slots skipped because the sender was late" => f.misses;
        "synapse_reflected", "Datagrams this agent's reflector answered" => f.reflected;
        "synapse_reflector_refused", "Datagrams this agent's reflector did not answer, by reason" => f.refused;
        "synapse_peer_info", "Each peer measured, as labels" => f.info;
        "synapse_cos_sent", "Replies by the DSCP and ECN each leg was sent with (backward: as the reflector's CoS TLV says)" => f.cos_sent;
        "synapse_cos_received", "Replies by the DSCP and ECN each leg arrived with (forward: as the reflector's CoS TLV says)" => f.cos_received;
        "synapse_cos_remarked", "Replies whose leg arrived with another DSCP than it was sent with" => f.cos_remarked;
        "synapse_cos_ce", "Replies whose leg was sent ECN-capable and arrived marked CE" => f.cos_ce;
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::Split;

    fn peer(name: &str, stamp: bool) -> PeerConfig {
        PeerConfig {
            address: format!("{name}.example:8080"),
            stamp,
            ..PeerConfig::for_test(name, "127.0.0.1:8080".parse().unwrap())
        }
    }

    fn sample(rtt_ns: u64, split: Split) -> Record {
        Record {
            split,
            ..Record::sample(1, 0, rtt_ns, false)
        }
    }

    /// The exposition with each family's series in label order (a family
    /// keeps them in a hash map, so their order differs from run to run);
    /// a series' own lines (sum, count, buckets) keep theirs.
    fn in_label_order(text: &str) -> String {
        let key = |line: &str| -> String {
            let labels = line.split_once('{').map_or("", |(_, rest)| rest);
            let mut k = labels.split('}').next().unwrap_or("").to_string();
            if let Some(start) = k.find("le=\"") {
                let end = k[start + 4..]
                    .find('"')
                    .map_or(k.len(), |e| start + 4 + e + 2);
                k.replace_range(start..end.min(k.len()), "");
            }
            k
        };
        let mut out = Vec::new();
        let mut series: Vec<&str> = Vec::new();
        for line in text.lines() {
            if line.starts_with('#') {
                series.sort_by_key(|l| key(l));
                out.append(&mut series);
                out.push(line);
            } else {
                series.push(line);
            }
        }
        series.sort_by_key(|l| key(l));
        out.append(&mut series);
        out.join("\n")
    }

    fn text(r: &Registry) -> String {
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, r).unwrap();
        s
    }

    /// The whole text exposition of one peer with a few results: names,
    /// help, units, labels, every bucket, the counters and the info.
    #[test]
    fn the_text_exposition() {
        let mut reg = Registry::default();
        let mut m = Metrics::new(&mut reg, "alpha");
        m.set_peers(&[peer("beta", true)], "software");
        let split = Split::from_parts([Some(2_000), Some(15_000), Some(3_000), Some(1_000), None]);
        m.record(0, &sample(21_000, split));
        m.record(0, &sample(25_000, Split::NONE));
        m.record(0, &Record::event(RecordKind::Lost, 2, 0, false));
        m.record(
            0,
            &Record::event(RecordKind::Late { reordered: true }, 2, 0, false),
        );
        m.record(0, &Record::event(RecordKind::Missed, 3, 0, false));
        m.record(0, &Record::event(RecordKind::Lost, 0, 0, true)); // warm-up
        m.record(usize::MAX, &Record::event(RecordKind::Stray, 0, 0, false));
        let totals = ReflectorTotals {
            packets: 7,
            refused: Refusals {
                service_port: 1,
                not_allowed: 4,
                rate: 3,
                ..Refusals::default()
            },
            ..ReflectorTotals::default()
        };
        m.reflected(false, &totals);
        m.reflected(false, &totals); // the same totals again add nothing
        let stamp = ReflectorTotals {
            refused: Refusals {
                malformed: 2,
                unauthenticated: 5,
                ..Refusals::default()
            },
            ..ReflectorTotals::default()
        };
        m.reflected(true, &stamp);
        let exposition = text(&reg).replace(env!("CARGO_PKG_VERSION"), "VERSION");
        insta::assert_snapshot!(in_label_order(&exposition));
    }

    /// A bucket holds values up to and including its bound (`le`).
    #[test]
    fn bucket_bounds_are_inclusive_and_cover_a_microsecond_to_a_second() {
        assert_eq!(CLASSIC_BUCKETS.first(), Some(&1e-6));
        assert_eq!(CLASSIC_BUCKETS.last(), Some(&1.0));
        assert!(CLASSIC_BUCKETS.windows(2).all(|w| w[0] < w[1]));
        let per_decade = |lo: f64, hi: f64| {
            CLASSIC_BUCKETS
                .iter()
                .filter(|&&b| b > lo && b <= hi)
                .count()
        };
        assert_eq!(per_decade(1e-5, 1e-4), 6, "the µs range is finer");
        assert!((3..=5).contains(&per_decade(1e-2, 1e-1)));
        let mut reg = Registry::default();
        let mut m = Metrics::new(&mut reg, "a");
        m.set_peers(&[peer("b", false)], "user");
        m.record(0, &sample(100_000, Split::NONE)); // exactly 100 µs
        let t = text(&reg);
        assert!(
            t.contains(
                r#"synapse_rtt_seconds_bucket{le="0.0001",source="a",peer="b",transport="udp"} 1"#
            ),
            "{t}"
        );
        assert!(
            t.contains(
                r#"synapse_rtt_seconds_bucket{le="0.00007",source="a",peer="b",transport="udp"} 0"#
            ),
            "{t}"
        );
        // Without kernel stamps no segment series appears at all.
        assert!(!t.contains("synapse_rtt_segment_seconds_bucket{"), "{t}");
    }

    #[test]
    fn a_reload_keeps_a_staying_peers_counts_and_drops_a_gone_ones_series() {
        let mut reg = Registry::default();
        let mut m = Metrics::new(&mut reg, "a");
        m.set_peers(&[peer("b", false), peer("c", false)], "user");
        m.record(0, &Record::event(RecordKind::Lost, 0, 0, false));
        m.set_peers(&[peer("b", false), peer("d", true)], "software");
        let t = text(&reg);
        assert!(
            t.contains(r#"synapse_probes_lost_total{source="a",peer="b",transport="udp"} 1"#),
            "{t}"
        );
        assert!(!t.contains(r#"peer="c""#), "{t}");
        assert!(t.contains(r#"synapse_peer_info{source="a",peer="d",transport="udp",address="d.example:8080",protocol="stamp",timestamps="software",chosen="named"} 1"#), "{t}");
        assert!(
            !t.contains(r#"timestamps="user""#),
            "the old info series is gone: {t}"
        );
    }

    #[test]
    fn a_tcp_peer_says_so_on_every_series_and_a_change_of_transport_is_a_new_peer() {
        let mut reg = Registry::default();
        let mut m = Metrics::new(&mut reg, "a");
        let tcp = PeerConfig {
            address: "tcp://db.example:5432".into(),
            transport: synapse_engine::Transport::Tcp,
            ..peer("db", false)
        };
        m.set_peers_stamped(&[peer("b", false), tcp], |i| ["user", "software"][i].into());
        let split = Split::from_parts([Some(2_000), Some(15_000), None, None, Some(1_000)]);
        m.record(1, &sample(21_000, split));
        m.record(1, &Record::event(RecordKind::Lost, 1, 0, false));
        let t = text(&reg);
        for want in [
            r#"synapse_rtt_seconds_count{source="a",peer="db",transport="tcp"} 1"#,
            r#"synapse_probes_lost_total{source="a",peer="db",transport="tcp"} 1"#,
            r#"synapse_rtt_segment_seconds_count{source="a",peer="db",transport="tcp",segment="send_path"} 1"#,
            r#"synapse_peer_info{source="a",peer="db",transport="tcp",address="tcp://db.example:5432",protocol="echo",timestamps="software",chosen="named"} 1"#,
            r#"synapse_peer_info{source="a",peer="b",transport="udp",address="b.example:8080",protocol="echo",timestamps="user",chosen="named"} 1"#,
        ] {
            assert!(t.contains(want), "{want} in {t}");
        }
        // The same name over UDP now: its TCP series go, counts start anew.
        m.set_peers(&[peer("b", false), peer("db", false)], "user");
        let t = text(&reg);
        assert!(!t.contains(r#"transport="tcp""#), "{t}");
        assert!(
            t.contains(r#"synapse_probes_lost_total{source="a",peer="db",transport="udp"} 0"#),
            "{t}"
        );
    }

    #[test]
    fn the_protobuf_form_carries_native_buckets() {
        use prometheus_client::encoding::prometheus_protobuf::encode;
        let mut reg = Registry::default();
        let mut m = Metrics::new(&mut reg, "a");
        m.set_peers(&[peer("b", false)], "user");
        for rtt in [20_000, 21_000, 40_000] {
            m.record(0, &sample(rtt, Split::NONE));
        }
        let families = encode(&reg).unwrap();
        let rtt = families
            .iter()
            .find(|f| f.name == "synapse_rtt_seconds")
            .unwrap();
        let h = rtt.metric[0].histogram.as_ref().unwrap();
        assert_eq!((h.schema, h.sample_count), (3, 3));
        // Native buckets are deltas of counts: their running sums add up
        // to every observation.
        let counts = h.positive_delta.iter().scan(0, |c, d| {
            *c += d;
            Some(*c)
        });
        assert_eq!(counts.sum::<i64>(), 3, "{h:?}");
        assert!(!h.positive_span.is_empty(), "{h:?}");
        assert_eq!(
            h.bucket.len(),
            CLASSIC_BUCKETS.len() + 1,
            "classic buckets ride along"
        );
    }
}
