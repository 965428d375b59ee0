//! Which packets carry TX stamps when only some do (`--tx-stamp-every N`):
//! each measured packet on its own with chance 1/N, so the gaps between
//! stamped packets are geometric with mean N (RFC 3432 §3: a sample whose
//! times are random cannot lock onto a period in the traffic or the
//! system, as every N-th packet could). Warm-up packets all are.
//!
//! The draw is a step of the one seeded generator (`synapse_stats::SplitMix`)
//! and a comparison: no allocation, no system call, about a nanosecond.

use synapse_stats::SplitMix;

/// The sampling state of one run. Allocation-free.
#[derive(Debug, Clone, Copy)]
pub struct TxSample {
    /// A packet is taken when the draw is below this (`u64::MAX`: all).
    threshold: u64,
    every: u64,
    rng: SplitMix,
}

impl TxSample {
    /// One packet in `every` on average, the draws started from `seed`.
    pub fn new(every: u32, seed: u64) -> Self {
        let every = u64::from(every.max(1));
        Self {
            threshold: if every == 1 {
                u64::MAX
            } else {
                u64::MAX / every
            },
            every,
            rng: SplitMix::new(seed),
        }
    }

    /// Seeded from the kernel's random bytes (once, at the start), else
    /// from the clock.
    pub fn seeded(every: u32) -> Self {
        let seed = crate::sys::random::random_u64().unwrap_or_else(|_| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x9E37_79B9, |d| d.as_nanos() as u64)
        });
        Self::new(every, seed)
    }

    /// The mean gap, packets.
    pub fn every(&self) -> u64 {
        self.every
    }

    /// Whether measured packet `index` (`None`: a warm-up packet) is
    /// stamped. Called once per packet, in order.
    #[inline]
    pub fn take(&mut self, index: Option<u64>) -> bool {
        if index.is_none() || self.every == 1 {
            return true;
        }
        self.rng.next_u64() < self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_packet_is_taken_when_the_sample_is_all_and_warm_up_always() {
        let mut all = TxSample::new(1, 7);
        assert!((0..1_000).all(|i| all.take(Some(i))));
        let mut some = TxSample::new(256, 7);
        assert!((0..1_000).all(|_| some.take(None)));
    }

    /// Over 2.56 M packets at 1 in 256: about 10,000 taken, gaps with a
    /// mean of 256 and the spread of a geometric law (its standard
    /// deviation ≈ its mean), none locked to a period.
    #[test]
    fn gaps_are_geometric_with_the_mean_asked_for() {
        let mut s = TxSample::new(256, 0xDEAD_BEEF);
        let mut gaps = Vec::new();
        let mut last = None;
        for i in 0..2_560_000u64 {
            if s.take(Some(i)) {
                if let Some(l) = last {
                    gaps.push((i - l) as f64);
                }
                last = Some(i);
            }
        }
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!((9_500.0..10_500.0).contains(&n), "{n} taken");
        assert!((mean - 256.0).abs() < 8.0, "mean gap {mean}");
        assert!(
            (sd / mean - 1.0).abs() < 0.05,
            "sd {sd} against mean {mean}"
        );
        // P(gap = 1) = 1/256 for a geometric law; every 256th never is.
        let ones = gaps.iter().filter(|&&g| g == 1.0).count() as f64;
        assert!((ones / n - 1.0 / 256.0).abs() < 0.002, "{ones} gaps of 1");
        // Another seed, another sample.
        let taken = |seed| {
            let mut s = TxSample::new(256, seed);
            (0..10_000u64)
                .filter(|&i| s.take(Some(i)))
                .collect::<Vec<_>>()
        };
        assert_ne!(taken(1), taken(2));
    }
}
