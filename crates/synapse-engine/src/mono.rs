//! A reading of the monotonic clock as integer nanoseconds: the clock
//! `Instant` reads (`CLOCK_MONOTONIC`, through the vDSO), without its
//! `timespec` arithmetic. The per-packet loops take an RTT, a record's time
//! and a deadline's check from each reading; as `Instant`s each was a
//! seconds-and-nanoseconds subtraction with its carries and checks (about
//! 25 instructions, four or five a round trip); as `u64`s each is one
//! subtraction. The API follows `Instant`'s, so a loop reads the same.

use crate::sys::clock::monotonic_ns;
use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// One reading of `CLOCK_MONOTONIC`, ns since the clock's start (boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Mono(u64);

/// A duration's nanoseconds, saturating (no timeout or deadline here is
/// anywhere near 584 years).
#[inline]
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Mono {
    /// The clock now.
    #[inline]
    pub(crate) fn now() -> Self {
        Self(monotonic_ns())
    }

    /// Nanoseconds from `earlier` to this reading (0 if it is later, as
    /// `Instant::duration_since` saturates).
    #[inline]
    pub(crate) fn ns_since(self, earlier: Mono) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// The same as a `Duration`.
    #[inline]
    pub(crate) fn duration_since(self, earlier: Mono) -> Duration {
        Duration::from_nanos(self.ns_since(earlier))
    }

    /// The same, saturating (as `duration_since`; `Instant`'s name kept).
    #[inline]
    pub(crate) fn saturating_duration_since(self, earlier: Mono) -> Duration {
        self.duration_since(earlier)
    }

    /// Nanoseconds since this reading.
    #[inline]
    pub(crate) fn elapsed_ns(self) -> u64 {
        Mono::now().ns_since(self)
    }

    /// `ns` nanoseconds later.
    #[inline]
    pub(crate) fn plus_ns(self, ns: u64) -> Self {
        Self(self.0.saturating_add(ns))
    }
}

impl Add<Duration> for Mono {
    type Output = Mono;
    #[inline]
    fn add(self, d: Duration) -> Mono {
        self.plus_ns(nanos(d))
    }
}

impl AddAssign<Duration> for Mono {
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Mono {
    type Output = Mono;
    #[inline]
    fn sub(self, d: Duration) -> Mono {
        Self(self.0.saturating_sub(nanos(d)))
    }
}

impl Sub<Mono> for Mono {
    type Output = Duration;
    #[inline]
    fn sub(self, earlier: Mono) -> Duration {
        self.duration_since(earlier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// An `Instant`'s reading in ns, from its `Debug` form (`Instant {
    /// tv_sec: S, tv_nsec: N }` on Linux): its inner value is opaque.
    fn instant_ns(i: Instant) -> u64 {
        let text = format!("{i:?}");
        let field = |name: &str| -> u64 {
            let rest = text.split(name).nth(1).expect("a tv_ field");
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().expect("a number")
        };
        field("tv_sec: ") * 1_000_000_000 + field("tv_nsec: ")
    }

    #[test]
    fn a_reading_is_the_clock_instant_reads() {
        // Read between two Instants, a Mono lies between them: the same
        // clock, exactly, however long the thread was preempted in between
        // (a bracket, not a window).
        let a = Instant::now();
        let m = Mono::now();
        let b = Instant::now();
        let (a, b) = (instant_ns(a), instant_ns(b));
        assert!(a <= m.0 && m.0 <= b, "{a} <= {} <= {b}", m.0);
    }

    #[test]
    fn arithmetic_is_exact_to_the_nanosecond_and_saturates() {
        let t = Mono(5_000_000_123);
        let later = t + Duration::from_nanos(1_000_000_007);
        assert_eq!(later.ns_since(t), 1_000_000_007);
        assert_eq!(later - t, Duration::from_nanos(1_000_000_007));
        assert_eq!(t.ns_since(later), 0, "saturates as Instant does");
        assert_eq!(later - Duration::from_nanos(1_000_000_007), t);
        assert_eq!(Mono(3) - Duration::from_nanos(4), Mono(0), "saturates");
        assert_eq!(Mono(u64::MAX - 1) + Duration::from_secs(1), Mono(u64::MAX));
        assert!(later > t);
    }
}
