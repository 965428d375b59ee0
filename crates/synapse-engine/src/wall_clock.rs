//! The wall clock (`CLOCK_REALTIME`, the clock kernel software stamps and
//! STAMP's timestamps are in) read through the monotonic one.
//!
//! Linux keeps `CLOCK_REALTIME` as `CLOCK_MONOTONIC` plus an offset that
//! only a step of the clock changes (NTP's slewing moves both alike). So a
//! loop that already reads the monotonic clock gets the wall time of the
//! same instant by adding the offset: no second clock read per point, and
//! no chance of being preempted between two reads that should be one
//! instant (which made a split disagree with its RTT by the preemption).
//! The offset is read again every so often, outside the timed part, so a
//! step is followed within that many packets.

use crate::mono::Mono;
use crate::sys::clock::realtime_ns;

/// Tries at reading the two clocks together; the closest pair is kept.
const TRIES: usize = 3;

/// A monotonic instant and the wall time at it.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    at: Mono,
    real_ns: u64,
}

impl WallClock {
    /// Reads both clocks, each pair between two monotonic reads, and keeps
    /// the pair read closest together (a preempted pair is far apart).
    pub fn sync() -> Self {
        Self::sync_within().0
    }

    /// [`WallClock::sync`], and how far its wall time may be from the wall
    /// time at its instant: half the span of the monotonic reads around it.
    fn sync_within() -> (Self, u64) {
        let mut best = None;
        for _ in 0..TRIES {
            let before = Mono::now();
            let real_ns = realtime_ns();
            let after = Mono::now();
            let span = after - before;
            if best.is_none_or(|(s, _)| span < s) {
                best = Some((
                    span,
                    Self {
                        at: before + span / 2,
                        real_ns,
                    },
                ));
            }
        }
        best.map_or_else(
            || {
                let w = Self {
                    at: Mono::now(),
                    real_ns: realtime_ns(),
                };
                (w, u64::MAX / 4)
            },
            |(span, w)| (w, span.as_nanos().div_ceil(2) as u64),
        )
    }

    /// The wall time at `t`, ns since the Unix epoch.
    #[inline]
    pub fn at(&self, t: Mono) -> u64 {
        if t >= self.at {
            self.real_ns + t.ns_since(self.at)
        } else {
            self.real_ns - self.at.ns_since(t)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_wall_time_of_an_instant_is_the_wall_clock_read_then() {
        let (w, error_ns) = WallClock::sync_within();
        // A monotonic read between two wall-clock reads: its wall time lies
        // between them, give or take the sync's own error. A bracket, so a
        // preemption anywhere in between widens it and breaks nothing.
        let before = realtime_ns();
        let mono = Mono::now();
        let after = realtime_ns();
        let wall = w.at(mono);
        assert!(
            before - error_ns <= wall && wall <= after + error_ns,
            "{before} <= {wall} <= {after} (± {error_ns} ns)"
        );
        let later = mono + Duration::from_millis(3);
        assert_eq!(w.at(later) - w.at(mono), 3_000_000);
        assert_eq!(w.at(mono) - w.at(mono - Duration::from_micros(7)), 7_000);
    }
}
