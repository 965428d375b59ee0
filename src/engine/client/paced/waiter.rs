//! How a paced run waits for its next slot: asleep in `ppoll` (woken early
//! by a reply) until just before the slot, then awake for the rest.
//!
//! Why this timer: a sleep ends late by the kernel's wake-up latency, here
//! 25–55 µs typically and 100 µs or more at its 99th percentile even with
//! the timer slack lowered to 1 ns, while a clock read costs ~20 ns. So the
//! run sleeps until `slot − margin` and spends the margin awake, polling
//! the socket (a reply that comes meanwhile is read at once, so its
//! timestamp is not delayed by the spin). The margin follows the wake-ups
//! actually seen: it rises to an overshoot at once and comes back down
//! slowly, so a noisy spell costs CPU, not missed slots. Below the margin
//! (intervals of ~100 µs) the run never sleeps before a slot.
//! `--busy-poll` never sleeps at all.

use std::time::Duration;

/// The margin never goes below this (the cost of a wake-up on a quiet
/// machine plus a guard).
const MIN_MARGIN_NS: u64 = 30_000;
/// Nor above this: a rare multi-millisecond stall is not worth a
/// millisecond of spinning before every slot.
const MAX_MARGIN_NS: u64 = 1_000_000;
/// Added to the overshoot seen.
const GUARD_NS: u64 = 15_000;
/// How slowly the margin comes down after an overshoot (1/64 per wake-up).
const DECAY: u64 = 64;

/// The adaptive margin. Allocation-free.
#[derive(Debug, Clone, Copy)]
pub struct Waiter {
    /// Recent wake-up overshoot, ns, rising fast, decaying slowly.
    overshoot_ns: u64,
}

impl Default for Waiter {
    fn default() -> Self {
        Self {
            overshoot_ns: 50_000,
        }
    }
}

impl Waiter {
    /// How long to stay awake before a slot.
    #[inline]
    pub fn margin_ns(&self) -> u64 {
        (self.overshoot_ns + GUARD_NS).clamp(MIN_MARGIN_NS, MAX_MARGIN_NS)
    }

    /// How long to sleep when the next slot is `to_slot_ns` away (and the
    /// next deadline `to_deadline_ns`): `None` to stay awake.
    #[inline]
    pub fn sleep_for(&self, to_slot_ns: u64, to_deadline_ns: u64) -> Option<Duration> {
        let for_slot = to_slot_ns.checked_sub(self.margin_ns())?;
        let ns = for_slot.min(to_deadline_ns);
        (ns > 0).then(|| Duration::from_nanos(ns))
    }

    /// A sleep meant to end at some time ended `late_ns` after it.
    #[inline]
    pub fn woke(&mut self, late_ns: u64) {
        if late_ns > self.overshoot_ns {
            self.overshoot_ns = late_ns.min(MAX_MARGIN_NS);
        } else {
            self.overshoot_ns -= (self.overshoot_ns - late_ns) / DECAY;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_sleeps_until_the_margin_and_no_further() {
        let w = Waiter::default();
        let m = w.margin_ns();
        assert_eq!(
            w.sleep_for(1_000_000, u64::MAX),
            Some(Duration::from_nanos(1_000_000 - m))
        );
        assert_eq!(w.sleep_for(m, u64::MAX), None, "inside the margin: awake");
        assert_eq!(
            w.sleep_for(1_000_000, 10_000),
            Some(Duration::from_nanos(10_000)),
            "a deadline before the slot wakes it"
        );
    }

    #[test]
    fn the_margin_rises_at_once_and_falls_slowly_within_bounds() {
        let mut w = Waiter::default();
        w.woke(400_000);
        assert_eq!(w.margin_ns(), 415_000);
        w.woke(10_000);
        assert!(w.margin_ns() > 400_000, "one quiet wake-up changes little");
        for _ in 0..2_000 {
            w.woke(5_000);
        }
        assert_eq!(w.margin_ns(), MIN_MARGIN_NS);
        w.woke(50_000_000);
        assert_eq!(w.margin_ns(), MAX_MARGIN_NS);
    }
}
