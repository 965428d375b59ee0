//! When a paced run's requests are due: `start + k·interval` (periodic),
//! or gaps drawn from an exponential distribution of the same mean
//! (Poisson, RFC 2330 §11.1 / RFC 3432), so the probes cannot lock onto a
//! periodic effect on the path.
//!
//! Slots are counted in nanoseconds since the run's epoch. A periodic slot
//! is computed from its index, never by adding intervals up, so the
//! schedule does not drift however long the run.

use std::time::Duration;
use synapse_stats::{Pattern, SplitMix};

/// A paced run's send schedule, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// `Periodic` or `Poisson` (`PingPong` is not a schedule).
    pub pattern: Pattern,
    /// The interval, or the mean gap.
    pub interval: Duration,
}

impl Schedule {
    /// The interval in nanoseconds (at least 1).
    pub fn interval_ns(&self) -> u64 {
        (self.interval.as_nanos() as u64).max(1)
    }

    /// How late a slot may be sent: irtt's rule, half-way to the next one.
    /// Later than this, it is skipped (counted as missed).
    pub fn tolerance_ns(&self) -> u64 {
        self.interval_ns() / 2
    }
}

/// The slots of one schedule, in order.
#[derive(Debug, Clone, Copy)]
pub struct Slots {
    schedule: Schedule,
    start_ns: u64,
    /// Index of the next slot.
    index: u64,
    /// When the next slot is due.
    due_ns: u64,
    rng: SplitMix,
}

impl Slots {
    /// A schedule whose first slot is at `start_ns`; `seed` draws the
    /// Poisson gaps.
    pub fn new(schedule: Schedule, start_ns: u64, seed: u64) -> Self {
        Self {
            schedule,
            start_ns,
            index: 0,
            due_ns: start_ns,
            rng: SplitMix::new(seed),
        }
    }

    /// When the next slot is due (ns since the epoch).
    #[inline]
    pub fn due_ns(&self) -> u64 {
        self.due_ns
    }

    /// Moves on to the following slot.
    #[inline]
    pub fn advance(&mut self) {
        self.index += 1;
        let interval = self.schedule.interval_ns();
        self.due_ns = match self.schedule.pattern {
            Pattern::Poisson => {
                let gap = -self.rng.unit().ln() * interval as f64;
                self.due_ns.saturating_add(gap.round() as u64)
            }
            _ => self
                .start_ns
                .saturating_add(self.index.saturating_mul(interval)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(pattern: Pattern, ns: u64) -> Schedule {
        Schedule {
            pattern,
            interval: Duration::from_nanos(ns),
        }
    }

    #[test]
    fn periodic_slots_are_exact_multiples_however_many() {
        let mut s = Slots::new(schedule(Pattern::Periodic, 333), 1_000, 0);
        for _ in 0..1_000_000 {
            s.advance();
        }
        assert_eq!(s.due_ns(), 1_000 + 333 * 1_000_000);
    }

    #[test]
    fn poisson_gaps_have_the_mean_and_spread_of_an_exponential() {
        let mean = 1_000_000u64;
        let mut s = Slots::new(schedule(Pattern::Poisson, mean), 0, 42);
        let n = 100_000u64;
        let mut gaps = Vec::with_capacity(n as usize);
        let mut last = s.due_ns();
        for _ in 0..n {
            s.advance();
            gaps.push((s.due_ns() - last) as f64);
            last = s.due_ns();
        }
        let avg = gaps.iter().sum::<f64>() / n as f64;
        assert!((avg / mean as f64 - 1.0).abs() < 0.02, "mean gap {avg}");
        // An exponential's standard deviation equals its mean, and
        // P(gap > mean) = 1/e.
        let var = gaps.iter().map(|g| (g - avg).powi(2)).sum::<f64>() / n as f64;
        assert!((var.sqrt() / avg - 1.0).abs() < 0.03, "sd {}", var.sqrt());
        let above = gaps.iter().filter(|&&g| g > mean as f64).count() as f64 / n as f64;
        assert!(
            (above - (-1f64).exp()).abs() < 0.01,
            "P(gap > mean) = {above}"
        );
    }

    #[test]
    fn different_seeds_draw_different_schedules() {
        let mut a = Slots::new(schedule(Pattern::Poisson, 1_000), 0, 1);
        let mut b = Slots::new(schedule(Pattern::Poisson, 1_000), 0, 2);
        a.advance();
        b.advance();
        assert_ne!(a.due_ns(), b.due_ns());
    }

    #[test]
    fn a_slot_may_be_half_an_interval_late() {
        assert_eq!(
            schedule(Pattern::Periodic, 1_000_000).tolerance_ns(),
            500_000
        );
    }
}
