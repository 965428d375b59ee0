//! Jitter of a delay series: RFC 3393 IPDV and the RFC 3550 estimator.
//!
//! Both compare each received packet with the one received before it (in
//! arrival order, losses skipped): IPDV is the difference of their delays,
//! and RFC 3550 §6.4.1 smooths its magnitude, `J += (|D| − J) / 16`. The
//! series may be round-trip times or one-way delays; a constant clock
//! offset cancels in the difference, so one-way jitter is meaningful even
//! between unsynchronised clocks.

use hdrhistogram::Histogram;
use serde::Serialize;

use super::MAX_TRACKABLE_NS;

/// The jitter figures of one series, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct JitterFigures {
    /// Median |IPDV|.
    pub ipdv_p50: u64,
    /// 99th percentile of |IPDV|.
    pub ipdv_p99: u64,
    /// Mean signed IPDV: a trend (delays growing or shrinking), near 0 on a
    /// steady path.
    pub ipdv_mean: f64,
    /// The RFC 3550 interarrival jitter estimator at the end of the series.
    pub rfc3550: f64,
}

/// Accumulates the jitter of one series. Allocates once, in `new`.
#[derive(Debug, Clone)]
pub struct Jitter {
    previous: Option<i64>,
    magnitude: Histogram<u64>,
    sum: i128,
    rfc3550: f64,
}

impl Default for Jitter {
    fn default() -> Self {
        Self::new()
    }
}

impl Jitter {
    /// An empty series. |IPDV| is kept to 2 significant digits (1 %).
    pub fn new() -> Self {
        #[allow(clippy::expect_used)]
        let magnitude = Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 2)
            .expect("constant histogram bounds are valid");
        Self {
            previous: None,
            magnitude,
            sum: 0,
            rfc3550: 0.0,
        }
    }

    /// The next received packet's delay.
    #[inline]
    pub fn add(&mut self, delay_ns: i64) {
        if let Some(previous) = self.previous.replace(delay_ns) {
            let d = i128::from(delay_ns) - i128::from(previous);
            let magnitude = d.unsigned_abs().min(u128::from(u64::MAX)) as u64;
            self.magnitude.saturating_record(magnitude);
            self.sum += d;
            self.rfc3550 += (magnitude as f64 - self.rfc3550) / 16.0;
        }
    }

    /// Forgets the previous packet: the next one starts a new pair (a new
    /// run, or a break in the series such as a clock step).
    pub fn restart(&mut self) {
        self.previous = None;
    }

    /// Adds a later series' differences. The estimator is a running
    /// state, not a sum: the later series' value is the one kept.
    pub fn merge(&mut self, other: &Jitter) {
        let _ = self.magnitude.add(&other.magnitude);
        self.sum += other.sum;
        if !other.magnitude.is_empty() {
            self.rfc3550 = other.rfc3550;
        }
    }

    /// The figures, when at least one pair was seen.
    pub fn figures(&self) -> Option<JitterFigures> {
        let h = &self.magnitude;
        (!h.is_empty()).then(|| JitterFigures {
            ipdv_p50: h.value_at_quantile(0.5),
            ipdv_p99: h.value_at_quantile(0.99),
            ipdv_mean: self.sum as f64 / h.len() as f64,
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
            j.add(if i % 2 == 0 { 100_000 } else { 1_100_000 });
        }
        let f = j.figures().unwrap();
        assert!(f.ipdv_p50.abs_diff(1_000_000) <= 10_000, "{f:?}");
        assert!(f.ipdv_p99.abs_diff(1_000_000) <= 10_000, "{f:?}");
        // 500 steps up, 499 down: one step's worth over 999 differences.
        assert!((f.ipdv_mean - 1e6 / 999.0).abs() < 1e-6, "{f:?}");
        // The estimator converges on |D| = 1 ms.
        assert!((f.rfc3550 - 1e6).abs() < 1e3, "{f:?}");
    }

    #[test]
    fn a_constant_offset_cancels_and_a_trend_shows_in_the_mean() {
        let mut a = Jitter::new();
        let mut b = Jitter::new();
        for i in 0..100i64 {
            a.add(5_000 + i * 10);
            b.add(-9_000_000_000 + 5_000 + i * 10);
        }
        let (fa, fb) = (a.figures().unwrap(), b.figures().unwrap());
        assert_eq!(fa, fb, "an offset between the clocks changes nothing");
        assert_eq!(fa.ipdv_mean, 10.0);
    }

    #[test]
    fn one_packet_has_no_jitter_and_a_restart_breaks_the_pair() {
        let mut j = Jitter::new();
        j.add(5);
        assert_eq!(j.figures(), None);
        j.restart();
        j.add(1_000_000);
        assert_eq!(j.figures(), None, "no pair across a restart");
        j.add(1_000_010);
        assert_eq!(j.figures().unwrap().ipdv_mean, 10.0);
    }

    #[test]
    fn the_estimator_follows_rfc_3550() {
        let mut j = Jitter::new();
        j.add(0);
        j.add(1_600);
        // J = 0 + (1600 − 0) / 16.
        assert_eq!(j.figures().unwrap().rfc3550, 100.0);
        j.add(0);
        assert_eq!(j.figures().unwrap().rfc3550, 100.0 + 1_500.0 / 16.0);
    }
}
