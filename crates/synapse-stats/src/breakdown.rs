//! Per-segment statistics of the round-trip split: one histogram per
//! measured segment, and how many replies lacked the stamps for it.

use super::MAX_TRACKABLE_NS;
use super::segment::SEGMENTS;
use super::{Segment, SegmentSet, Split};
use hdrhistogram::Histogram;

/// Segment histograms for the segments a run can measure.
#[derive(Debug, Clone)]
pub struct Breakdown {
    segments: SegmentSet,
    hists: [Option<Histogram<u64>>; SEGMENTS],
    missing: [u64; SEGMENTS],
    /// TCP: replies whose far kernel's ACK rode on them, so the kernel RTT
    /// and the far side's share do not exist (neither missing nor zero).
    piggybacked: u64,
    /// The RTTs of the packets the split comes from: their sum and count,
    /// so the split can be checked against its own packets' mean.
    rtt_sum: u128,
    rtt_count: u64,
    /// The send path to the wire, signed (its histogram holds readings
    /// below zero as 0): their sum, and those below zero.
    wire_sum: i128,
    wire_below: BelowZero,
}

/// Readings of the send path to the wire below zero: the NIC's stamp,
/// placed on the system clock, before the driver's by up to the error of
/// that placement. Kept and counted, not dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BelowZero {
    /// How many.
    pub readings: u64,
    /// The lowest, ns.
    pub lowest_ns: i64,
}

impl Breakdown {
    /// Empty, for `segments`. Allocates here; recording never does.
    pub fn new(segments: SegmentSet) -> Self {
        let hists = Segment::ALL.map(|seg| {
            segments.contains(seg).then(|| {
                #[allow(clippy::expect_used)]
                Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 3)
                    .expect("constant histogram bounds are valid")
            })
        });
        Self {
            segments,
            hists,
            missing: [0; SEGMENTS],
            piggybacked: 0,
            rtt_sum: 0,
            rtt_count: 0,
            wire_sum: 0,
            wire_below: BelowZero::default(),
        }
    }

    /// The segments measured.
    pub fn segments(&self) -> SegmentSet {
        self.segments
    }

    /// Accounts for one reply's split and its round trip.
    #[inline]
    pub fn record(&mut self, split: &Split, rtt_ns: u64) {
        if split.is_unsampled() {
            return;
        }
        self.rtt_sum += u128::from(rtt_ns);
        self.rtt_count += 1;
        if self.segments.contains(Segment::KernelRtt) && split.is_piggybacked(Segment::KernelRtt) {
            self.piggybacked += 1;
        }
        if let Some(w) = split
            .wire_ns()
            .filter(|_| self.segments.contains(Segment::ToWire))
        {
            self.wire_sum += i128::from(w);
            if w < 0 {
                let b = &mut self.wire_below;
                b.lowest_ns = if b.readings == 0 {
                    w
                } else {
                    b.lowest_ns.min(w)
                };
                b.readings += 1;
            }
        }
        for seg in Segment::ALL {
            let i = seg.index();
            if let Some(h) = &mut self.hists[i] {
                match split.get(seg) {
                    Some(ns) => h.saturating_record(ns.max(1)),
                    None if split.is_piggybacked(seg) => {}
                    None => self.missing[i] += 1,
                }
            }
        }
    }

    /// Adds another run's figures for the segments both measure.
    pub fn merge(&mut self, other: &Breakdown) {
        for i in 0..SEGMENTS {
            if let (Some(a), Some(b)) = (&mut self.hists[i], &other.hists[i]) {
                let _ = a.add(b);
                self.missing[i] += other.missing[i];
            }
        }
        self.piggybacked += other.piggybacked;
        self.rtt_sum += other.rtt_sum;
        self.rtt_count += other.rtt_count;
        self.wire_sum += other.wire_sum;
        let (a, b) = (&mut self.wire_below, other.wire_below);
        if b.readings > 0 {
            a.lowest_ns = if a.readings == 0 {
                b.lowest_ns
            } else {
                a.lowest_ns.min(b.lowest_ns)
            };
            a.readings += b.readings;
        }
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.hists.iter_mut().flatten().for_each(Histogram::reset);
        self.missing = [0; SEGMENTS];
        self.piggybacked = 0;
        self.wire_sum = 0;
        self.wire_below = BelowZero::default();
    }

    /// One segment's histogram, when measured.
    pub fn histogram(&self, seg: Segment) -> Option<&Histogram<u64>> {
        self.hists[seg.index()].as_ref()
    }

    /// TCP: replies whose far kernel's ACK rode on them (no kernel RTT,
    /// no far side's share for those).
    pub fn piggybacked(&self) -> u64 {
        self.piggybacked
    }

    /// Replies that lacked a stamp for `seg`.
    pub fn missing(&self, seg: Segment) -> u64 {
        self.missing[seg.index()]
    }
}

/// One segment, reduced for reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SegmentFigures {
    /// Stable key (`send_path`, `network`, …).
    pub segment: &'static str,
    /// Human name.
    #[serde(skip)]
    pub label: &'static str,
    /// The points it runs between.
    pub span: &'static str,
    /// A NIC's clock stamped one of its ends.
    pub hardware: bool,
    /// Replies with both points stamped.
    pub samples: u64,
    /// Replies without.
    pub missing: u64,
    /// Median, ns (`None` without samples).
    pub p50_ns: Option<u64>,
    /// 99th percentile, ns.
    pub p99_ns: Option<u64>,
    /// Mean, ns (the send path to the wire's with its readings below zero
    /// as they were).
    pub mean_ns: Option<f64>,
    /// The send path to the wire: its readings below zero (their
    /// percentiles read 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub below_zero: Option<BelowZero>,
}

impl Breakdown {
    /// The mean RTT of the packets the split comes from (with sampled TX
    /// stamps, not every packet's).
    pub fn rtt_mean_ns(&self) -> Option<f64> {
        (self.rtt_count > 0).then(|| self.rtt_sum as f64 / self.rtt_count as f64)
    }

    /// Per-segment figures, in display order.
    pub fn figures(&self) -> Vec<SegmentFigures> {
        self.segments
            .iter()
            .map(|seg| {
                let h = self.histogram(seg);
                let have = h.filter(|h| !h.is_empty());
                let wire = seg == Segment::ToWire;
                let mean = if wire {
                    have.map(|h| self.wire_sum as f64 / h.len() as f64)
                } else {
                    have.map(Histogram::mean)
                };
                SegmentFigures {
                    segment: seg.key(),
                    label: seg.label(),
                    span: seg.span(),
                    hardware: seg.hardware(),
                    samples: h.map_or(0, Histogram::len),
                    missing: self.missing(seg),
                    p50_ns: have.map(|h| h.value_at_quantile(0.5)),
                    p99_ns: have.map(|h| h.value_at_quantile(0.99)),
                    mean_ns: mean,
                    below_zero: wire.then_some(self.wire_below),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sent at 100, handed to the driver `send` later, received by the
    /// kernel at 50 000 and by the program `recv` after that (when it was).
    fn split(send: u64, recv: Option<u64>) -> Split {
        Split::from_parts([
            Some(send),
            recv.map(|_| 50_000 - 100 - send),
            None,
            recv,
            None,
        ])
    }

    #[test]
    fn only_measurable_segments_are_kept_and_gaps_are_counted() {
        let mut b = Breakdown::new(SegmentSet::for_run(true, false, false));
        b.record(&split(1_000, Some(3_000)), 0);
        b.record(&split(2_000, None), 0);
        let f = b.figures();
        let keys: Vec<_> = f.iter().map(|f| f.segment).collect();
        assert_eq!(keys, ["send_path", "network", "receive_path"]);
        assert_eq!((f[0].samples, f[0].missing), (2, 0));
        assert_eq!((f[2].samples, f[2].missing), (1, 1));
        assert_eq!(
            (f[1].samples, f[1].missing),
            (1, 1),
            "no T4 driver, no network"
        );
        assert!(f[1].p50_ns.unwrap().abs_diff(50_000 - 1_100) <= 50);
        assert!(f[2].p50_ns.unwrap().abs_diff(3_000) <= 3);
        assert!(b.histogram(Segment::Dwell).is_none());
    }

    #[test]
    fn merge_and_clear() {
        let set = SegmentSet::for_run(true, false, false);
        let mut a = Breakdown::new(set);
        let mut b = Breakdown::new(set);
        a.record(&split(1_000, None), 0);
        b.record(&split(1_000, Some(5)), 0);
        a.merge(&b);
        assert_eq!(a.histogram(Segment::Send).unwrap().len(), 2);
        assert_eq!(a.missing(Segment::Receive), 1);
        // A run that measured other segments adds only to the shared ones.
        let mut stamp = Breakdown::new(SegmentSet::for_run(true, true, false));
        stamp.record(&split(1_000, None), 0);
        a.merge(&stamp);
        assert_eq!(a.histogram(Segment::Send).unwrap().len(), 3);
        assert_eq!(a.missing(Segment::Dwell), 0, "not a segment of `a`");
        assert!(a.histogram(Segment::Dwell).is_none());
        a.clear();
        assert_eq!(a.histogram(Segment::Send).unwrap().len(), 0);
        assert_eq!(a.missing(Segment::Receive), 0);
    }
}
