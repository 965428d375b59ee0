//! A histogram of values of either sign: one-way delays read across two
//! clocks, whose offset can make them negative.

use super::MAX_TRACKABLE_NS;
use hdrhistogram::Histogram;

/// Magnitudes below zero and at or above it, each to 3 significant digits.
#[derive(Debug, Clone)]
pub struct SignedHistogram {
    negative: Histogram<u64>,
    positive: Histogram<u64>,
}

impl Default for SignedHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl SignedHistogram {
    /// Empty. Allocates here; recording never does.
    pub fn new() -> Self {
        #[allow(clippy::expect_used)]
        let h = || {
            Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 3)
                .expect("constant histogram bounds are valid")
        };
        Self {
            negative: h(),
            positive: h(),
        }
    }

    /// Counts one value.
    #[inline]
    pub fn record(&mut self, v: i64) {
        let magnitude = v.unsigned_abs();
        if v < 0 {
            self.negative.saturating_record(magnitude);
        } else {
            self.positive.saturating_record(magnitude);
        }
    }

    /// Values counted.
    pub fn len(&self) -> u64 {
        self.negative.len() + self.positive.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values below zero.
    pub fn negatives(&self) -> u64 {
        self.negative.len()
    }

    /// Adds another histogram's values.
    pub fn merge(&mut self, other: &SignedHistogram) {
        let _ = self.negative.add(&other.negative);
        let _ = self.positive.add(&other.positive);
    }

    /// Forgets everything.
    pub fn reset(&mut self) {
        self.negative.reset();
        self.positive.reset();
    }

    /// The value at quantile `q` of the whole signed distribution.
    pub fn quantile(&self, q: f64) -> i64 {
        let (neg, total) = (self.negative.len(), self.len());
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total.max(1));
        if rank <= neg {
            // The rank-th smallest is the (neg − rank + 1)-th largest magnitude.
            let q_neg = (neg - rank + 1) as f64 / neg as f64;
            -(self.negative.value_at_quantile(q_neg) as i64)
        } else {
            let q_pos = (rank - neg) as f64 / self.positive.len() as f64;
            self.positive.value_at_quantile(q_pos) as i64
        }
    }

    /// The mean.
    pub fn mean(&self) -> f64 {
        let (n, p) = (self.negative.len() as f64, self.positive.len() as f64);
        if n + p == 0.0 {
            return 0.0;
        }
        let neg = if n > 0.0 {
            self.negative.mean() * n
        } else {
            0.0
        };
        let pos = if p > 0.0 {
            self.positive.mean() * p
        } else {
            0.0
        };
        (pos - neg) / (n + p)
    }

    /// The smallest value.
    pub fn min(&self) -> i64 {
        if self.negative.is_empty() {
            self.positive.min() as i64
        } else {
            -(self.negative.max() as i64)
        }
    }

    /// The largest value.
    pub fn max(&self) -> i64 {
        if self.positive.is_empty() {
            -(self.negative.min() as i64)
        } else {
            self.positive.max() as i64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_quantiles_span_zero() {
        let mut h = SignedHistogram::new();
        for v in [-300i64, -200, -100, 100, 200] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.2), -300);
        assert_eq!(h.quantile(0.5), -100);
        assert_eq!(h.quantile(0.8), 100);
        assert_eq!(h.quantile(1.0), 200);
        assert_eq!((h.min(), h.max()), (-300, 200));
        assert_eq!((h.negatives(), h.len()), (3, 5));
        assert!((h.mean() - -60.0).abs() < 0.5, "{}", h.mean());
    }
}
