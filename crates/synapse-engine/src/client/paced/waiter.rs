//! How a paced run waits for its next slot: asleep in `ppoll` (woken early
//! by a reply) until just before the slot, then awake for the rest.
//!
//! Why this timer: a sleep ends late by the kernel's wake-up latency, here
//! 25–55 µs typically and 100 µs or more at its 99th percentile even with
//! the timer slack lowered to 1 ns, while a clock read costs ~20 ns. So the
//! run sleeps until `slot − margin` and spends the margin awake, polling
//! the socket (a reply that comes meanwhile is read at once, so its
//! timestamp is not delayed by the spin). The margin is the 99th
//! percentile of the last [`WINDOW`] wake-ups' lateness, plus a guard: it
//! follows the machine, so a noisy spell costs CPU, not missed slots, and
//! one rare stall does not keep it high. Below the margin (intervals of
//! ~100 µs) the run never sleeps before a slot. `--busy-poll` never
//! sleeps at all.

use std::time::Duration;

/// Wake-ups the margin is computed over.
pub const WINDOW: usize = 512;
/// Lateness is kept in buckets of this many ns…
const BUCKET_NS: u64 = 4_000;
/// … up to this many buckets (1 ms); later wake-ups land in the last.
const BUCKETS: usize = 250;
/// The margin never goes below this.
const MIN_MARGIN_NS: u64 = 20_000;
/// Added to the lateness quantile.
const GUARD_NS: u64 = 10_000;
/// The quantile of lateness the margin covers.
const QUANTILE: f64 = 0.99;
/// While the run stays awake, one wake-up is forgotten this often: a
/// window's worth in about 10 s, whatever the interval.
const AGE_NS: u64 = 20_000_000;

/// The adaptive margin. Allocation-free after `new`.
#[derive(Debug, Clone)]
pub struct Waiter {
    /// The last `WINDOW` wake-ups' buckets, as a ring.
    recent: Box<[u8; WINDOW]>,
    next: usize,
    seen: usize,
    counts: [u16; BUCKETS],
    margin_ns: u64,
    /// When a wake-up was last forgotten (or last seen), ns.
    aged_at_ns: u64,
    /// Sleeps that ended by themselves, and their total lateness (for the
    /// debug log).
    pub sleeps: u64,
    pub overshoot_total_ns: u64,
}

impl Default for Waiter {
    fn default() -> Self {
        Self {
            recent: Box::new([0; WINDOW]),
            next: 0,
            seen: 0,
            counts: [0; BUCKETS],
            // Until the machine has been seen: a typical wake-up's lateness.
            margin_ns: 80_000,
            aged_at_ns: 0,
            sleeps: 0,
            overshoot_total_ns: 0,
        }
    }
}

impl Waiter {
    /// How long to stay awake before a slot.
    #[inline]
    pub fn margin_ns(&self) -> u64 {
        self.margin_ns
    }

    /// How long to sleep when the next slot is `to_slot_ns` away (and the
    /// next deadline `to_deadline_ns`): `None` to stay awake.
    #[inline]
    pub fn sleep_for(&self, to_slot_ns: u64, to_deadline_ns: u64) -> Option<Duration> {
        let for_slot = to_slot_ns.checked_sub(self.margin_ns)?;
        let ns = for_slot.min(to_deadline_ns);
        (ns > 0).then(|| Duration::from_nanos(ns))
    }

    /// A sleep meant to end at some time ended `late_ns` after it, at
    /// `now_ns`.
    #[inline]
    pub fn woke(&mut self, late_ns: u64, now_ns: u64) {
        self.aged_at_ns = now_ns;
        self.sleeps += 1;
        self.overshoot_total_ns += late_ns;
        let bucket = ((late_ns / BUCKET_NS) as usize).min(BUCKETS - 1);
        if self.seen == WINDOW {
            let old = self.recent[self.next] as usize;
            self.counts[old] -= 1;
        } else {
            self.seen += 1;
        }
        self.recent[self.next] = bucket as u8;
        self.counts[bucket] += 1;
        self.next = (self.next + 1) % WINDOW;
        self.margin_ns = self.quantile_ns() + GUARD_NS;
        self.margin_ns = self.margin_ns.max(MIN_MARGIN_NS);
    }

    /// A slot came at `now_ns` without a sleep before it (the margin was
    /// longer than the gap). Every `AGE_NS` of that, the oldest wake-up is
    /// forgotten, so a margin that keeps the run awake cannot keep itself
    /// up for want of new wake-ups; with none left it falls back to the
    /// first guess, and the run sleeps and measures again.
    pub fn stayed_awake(&mut self, now_ns: u64) {
        if self.seen == 0 || now_ns.saturating_sub(self.aged_at_ns) < AGE_NS {
            return;
        }
        self.aged_at_ns = now_ns;
        let oldest = (self.next + WINDOW - self.seen) % WINDOW;
        self.counts[self.recent[oldest] as usize] -= 1;
        self.seen -= 1;
        self.margin_ns = if self.seen == 0 {
            Self::default().margin_ns
        } else {
            (self.quantile_ns() + GUARD_NS).max(MIN_MARGIN_NS)
        };
    }

    /// The upper edge of the bucket holding the quantile of the window.
    fn quantile_ns(&self) -> u64 {
        let beyond = ((1.0 - QUANTILE) * self.seen as f64).floor() as usize;
        let mut above = 0;
        for b in (0..BUCKETS).rev() {
            above += usize::from(self.counts[b]);
            if above > beyond {
                return (b as u64 + 1) * BUCKET_NS;
            }
        }
        0
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
    fn the_margin_covers_the_99th_percentile_of_recent_wake_ups() {
        let mut w = Waiter::default();
        // 99 % of wake-ups 30 µs late, 1 % 200 µs.
        for i in 0..WINDOW {
            w.woke(if i % 100 == 0 { 200_000 } else { 30_000 }, 0);
        }
        // 6 of 512 at 200 µs: more than 1 %, so the margin covers them.
        assert_eq!(w.margin_ns(), 200_000 + BUCKET_NS + GUARD_NS);
        // A quiet spell: once the late ones leave the window, it comes down.
        for _ in 0..WINDOW {
            w.woke(30_000, 0);
        }
        assert_eq!(w.margin_ns(), 32_000 + GUARD_NS);
    }

    #[test]
    fn one_stall_does_not_raise_it_and_it_stays_within_bounds() {
        let mut w = Waiter::default();
        for _ in 0..WINDOW - 1 {
            w.woke(1_000, 0);
        }
        w.woke(50_000_000, 0);
        assert_eq!(w.margin_ns(), MIN_MARGIN_NS, "one in 512 is under 1 %");
        for _ in 0..WINDOW {
            w.woke(50_000_000, 0);
        }
        assert_eq!(
            w.margin_ns(),
            BUCKETS as u64 * BUCKET_NS + GUARD_NS,
            "capped"
        );
    }

    #[test]
    fn slots_spent_awake_age_the_window_until_it_sleeps_again() {
        let mut w = Waiter::default();
        for _ in 0..WINDOW {
            w.woke(990_000, 0);
        }
        assert!(w.sleep_for(1_000_000, u64::MAX).is_none(), "awake at 1 ms");
        // Slots every 1 ms: one wake-up forgotten every 20 of them.
        let mut now = 0;
        for _ in 0..(WINDOW as u64 - 1) * 20 {
            now += 1_000_000;
            w.stayed_awake(now);
        }
        assert_eq!(w.margin_ns(), 992_000 + GUARD_NS, "one left after {now} ns");
        now += 19_000_000;
        w.stayed_awake(now);
        assert_eq!(w.margin_ns(), 992_000 + GUARD_NS, "not yet");
        now += 1_000_000;
        w.stayed_awake(now);
        assert_eq!(w.margin_ns(), Waiter::default().margin_ns());
        assert!(
            w.sleep_for(1_000_000, u64::MAX).is_some(),
            "it sleeps and relearns"
        );
        w.stayed_awake(now + AGE_NS);
        assert_eq!(
            w.margin_ns(),
            Waiter::default().margin_ns(),
            "nothing left to forget"
        );
    }
}
