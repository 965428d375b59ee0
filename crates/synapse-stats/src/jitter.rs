//! Jitter of a delay series, by both conventions that pair packets:
//!
//! - **IPDV, RFC 5481 §4.1** (the RFC 3393 metric): the delay of packet
//!   `n + 1` less that of packet `n`, for consecutive *sequence numbers*
//!   both received. A lost packet makes no pair; a reordered one is still
//!   paired with its neighbours (within [`PAIRING`] of each other).
//! - **RFC 3550 §6.4.1** (RTP's interarrival jitter): the difference `D`
//!   between consecutive *arrivals*, whatever their numbers, and the
//!   estimator `J += (|D| − J) / 16`.
//!
//! Percentiles are of the magnitudes. There is no mean IPDV: its sum
//! telescopes to (last delay − first delay) / (pairs − 1), the noise of two
//! packets rather than a trend (a trend is the clocks' drift, measured
//! elsewhere with its interval). The series may be round-trip times or
//! one-way delays; a constant clock offset cancels in every difference, so
//! one-way jitter is meaningful even between unsynchronised clocks.

use crate::HdrCounts;
use serde::Serialize;

use super::MAX_TRACKABLE_NS;

/// How far apart (in arrival) two consecutive sequence numbers may come
/// and still be paired for IPDV.
pub const PAIRING: usize = 16;

/// Where sequence number `s` is kept among the recent arrivals.
fn slot(s: u64) -> usize {
    (s % PAIRING as u64) as usize
}

/// The jitter figures of one series, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct JitterFigures {
    /// IPDV pairs (RFC 5481 §4.1: consecutive sequence numbers, both
    /// received).
    pub ipdv_pairs: u64,
    /// Median |IPDV| over those pairs (`None` without a pair).
    pub ipdv_p50: Option<u64>,
    /// 99th percentile of |IPDV|.
    pub ipdv_p99: Option<u64>,
    /// Pairs of consecutive arrivals (RFC 3550).
    pub arrival_pairs: u64,
    /// Median |D| between consecutive arrivals.
    pub arrival_p50: u64,
    /// 99th percentile of |D| between consecutive arrivals.
    pub arrival_p99: u64,
    /// The RFC 3550 interarrival jitter estimator at the end of the series.
    pub rfc3550: f64,
}

/// Accumulates the jitter of one series. Allocates once, in `new`.
#[derive(Debug, Clone)]
pub struct Jitter {
    /// The last arrival's delay.
    previous: Option<i64>,
    /// Recent arrivals by sequence number, to pair neighbours.
    recent: [Option<(u64, i64)>; PAIRING],
    ipdv: HdrCounts,
    arrival: HdrCounts,
    rfc3550: f64,
}

impl Default for Jitter {
    fn default() -> Self {
        Self::new()
    }
}

fn histogram() -> HdrCounts {
    #[allow(clippy::expect_used)]
    HdrCounts::new(MAX_TRACKABLE_NS, 2).expect("constant histogram bounds are valid")
}

impl Jitter {
    /// An empty series. Magnitudes are kept to 2 significant digits (1 %).
    pub fn new() -> Self {
        Self {
            previous: None,
            recent: [None; PAIRING],
            ipdv: histogram(),
            arrival: histogram(),
            rfc3550: 0.0,
        }
    }

    /// The next packet to arrive: its sequence number and delay. Always
    /// inlined, as `Stats::record` is (once a packet).
    #[inline(always)]
    pub fn add(&mut self, seq: u64, delay_ns: i64) {
        if let Some(previous) = self.previous.replace(delay_ns) {
            // |a − b| of two i64 always fits a u64.
            let d = delay_ns.abs_diff(previous);
            self.arrival.record(d);
            self.rfc3550 += (d as f64 - self.rfc3550) / 16.0;
        }
        // The two neighbours in turn, not a loop over them: this runs for
        // every sample.
        if let Some(n) = seq.checked_sub(1) {
            self.pair(n, delay_ns);
        }
        if let Some(n) = seq.checked_add(1) {
            self.pair(n, delay_ns);
        }
        self.recent[slot(seq)] = Some((seq, delay_ns));
    }

    /// Pairs the arrival of `delay_ns` with sequence number `n`'s, if it
    /// came recently.
    #[inline(always)]
    fn pair(&mut self, n: u64, delay_ns: i64) {
        if let Some((s, d)) = self.recent[slot(n)]
            && s == n
        {
            self.ipdv.record(delay_ns.abs_diff(d));
        }
    }

    /// Forgets the packets before: the next one starts new pairs (a new
    /// run, or a break in the series such as a clock step).
    pub fn restart(&mut self) {
        self.previous = None;
        self.recent = [None; PAIRING];
    }

    /// Adds a later series' pairs. The estimator is a running state, not
    /// a sum: the later series' value is the one kept.
    pub fn merge(&mut self, other: &Jitter) {
        self.ipdv.add(&other.ipdv);
        self.arrival.add(&other.arrival);
        if !other.arrival.is_empty() {
            self.rfc3550 = other.rfc3550;
        }
    }

    /// The figures, when at least two packets arrived.
    pub fn figures(&self) -> Option<JitterFigures> {
        let (i, a) = (self.ipdv.histogram(), self.arrival.histogram());
        let have = (!i.is_empty()).then_some(i);
        (!a.is_empty()).then(|| JitterFigures {
            ipdv_pairs: i.len(),
            ipdv_p50: have.map(|h| h.value_at_quantile(0.5)),
            ipdv_p99: have.map(|h| h.value_at_quantile(0.99)),
            arrival_pairs: a.len(),
            arrival_p50: a.value_at_quantile(0.5),
            arrival_p99: a.value_at_quantile(0.99),
            rfc3550: self.rfc3550,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternating_delays_give_their_difference_every_time() {
        let mut j = Jitter::new();
        for i in 0..1_000 {
            j.add(i, if i % 2 == 0 { 100_000 } else { 1_100_000 });
        }
        let f = j.figures().unwrap();
        assert_eq!((f.ipdv_pairs, f.arrival_pairs), (999, 999));
        assert!(f.ipdv_p50.unwrap().abs_diff(1_000_000) <= 10_000, "{f:?}");
        assert!(f.ipdv_p99.unwrap().abs_diff(1_000_000) <= 10_000, "{f:?}");
        // The estimator converges on |D| = 1 ms.
        assert!((f.rfc3550 - 1e6).abs() < 1e3, "{f:?}");
    }

    #[test]
    fn a_constant_offset_cancels() {
        let mut a = Jitter::new();
        let mut b = Jitter::new();
        for i in 0..100u64 {
            a.add(i, 5_000 + i as i64 * 10);
            b.add(i, -9_000_000_000 + 5_000 + i as i64 * 10);
        }
        assert_eq!(
            a.figures(),
            b.figures(),
            "an offset between the clocks changes nothing"
        );
    }

    /// Packets 0..6 with 3 lost and 5 overtaking 4: IPDV pairs only
    /// neighbours by number (0-1, 1-2, 4-5, 5-6; none across the loss),
    /// RFC 3550 every two arrivals in turn (2→4 and 5→4 among them).
    #[test]
    fn ipdv_pairs_by_number_and_rfc_3550_by_arrival() {
        let mut j = Jitter::new();
        for (seq, d) in [(0, 100), (1, 110), (2, 130), (5, 400), (4, 100), (6, 160)] {
            j.add(seq, d);
        }
        let f = j.figures().unwrap();
        assert_eq!(f.ipdv_pairs, 4, "0-1, 1-2, 4-5, 5-6");
        assert_eq!(f.arrival_pairs, 5);
        // IPDV magnitudes: 10, 20, 300, 240; arrival: 10, 20, 270, 300, 60.
        // (Two significant digits.)
        assert!(f.ipdv_p99.unwrap().abs_diff(300) <= 3, "{f:?}");
        assert!(f.arrival_p50.abs_diff(60) <= 1, "{f:?}");
    }

    #[test]
    fn two_packets_far_apart_in_number_have_no_ipdv() {
        let mut j = Jitter::new();
        j.add(0, 5);
        assert_eq!(j.figures(), None, "one packet has no jitter");
        j.add(2, 500);
        let f = j.figures().unwrap();
        assert_eq!((f.ipdv_pairs, f.ipdv_p50), (0, None));
        assert_eq!(f.arrival_pairs, 1);
        j.restart();
        j.add(3, 1_000_000);
        assert_eq!(
            j.figures().unwrap().ipdv_pairs,
            0,
            "no pair across a restart"
        );
        j.add(4, 1_000_010);
        assert_eq!(j.figures().unwrap().ipdv_p50, Some(10));
    }

    #[test]
    fn the_estimator_follows_rfc_3550() {
        let mut j = Jitter::new();
        j.add(0, 0);
        j.add(1, 1_600);
        // J = 0 + (1600 − 0) / 16.
        assert_eq!(j.figures().unwrap().rfc3550, 100.0);
        j.add(2, 0);
        assert_eq!(j.figures().unwrap().rfc3550, 100.0 + 1_500.0 / 16.0);
    }
}
