//! A paced run to a group: each request leaves at its slot, whatever its
//! answers did, so the responders are sampled on the schedule and not at
//! the pace of the slowest. A request's answers are gathered until its
//! timeout or the next slot, whichever comes first; an answer after that
//! is late. A slot the loop reaches more than half an interval after it
//! was due is skipped, never made up for, and counted missed, as in a
//! unicast paced run (`paced`): a stall shows as the slots it swallowed.

use crate::StopFlag;
use crate::client::paced::schedule::{Schedule, Slots};
use crate::client::stop::pause_until;
use crate::mono::Mono;

/// How long before a slot a sleeping wait stops sleeping and spins, so
/// that a timer's lateness does not become the request's.
const SPIN_NS: u64 = 200_000;

/// The slots of a paced group run.
#[derive(Debug)]
pub(super) struct GroupPacing {
    slots: Slots,
    tolerance_ns: u64,
    /// Measured slots skipped so far (the budget counts them).
    pub missed: u64,
}

/// The slot a request leaves in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    /// When it was due, ns since the run's epoch.
    pub due_ns: u64,
    /// When the next one is due: the request's answers are gathered until
    /// then at most.
    pub next_ns: u64,
}

impl GroupPacing {
    /// Slots on `schedule` from `start_ns` (ns since the epoch), Poisson
    /// gaps drawn from `seed`.
    pub fn new(schedule: Schedule, start_ns: u64, seed: u64) -> Self {
        Self {
            slots: Slots::new(schedule, start_ns, seed),
            tolerance_ns: schedule.tolerance_ns(),
            missed: 0,
        }
    }

    /// How late the slot due is at `now_ns`, when that is past the
    /// tolerance: it is skipped (counted when `measured`), and the next one
    /// becomes due.
    pub fn skip_if_late(&mut self, now_ns: u64, measured: bool) -> Option<u64> {
        let lag = now_ns.checked_sub(self.slots.due_ns())?;
        if lag <= self.tolerance_ns {
            return None;
        }
        self.slots.advance();
        self.missed += u64::from(measured);
        Some(lag)
    }

    /// Waits for the slot due (sleeping, then spinning its last
    /// [`SPIN_NS`]; spinning only with `busy_poll`). `None` when `stop`
    /// was raised first.
    pub fn wait(&self, epoch: Mono, busy_poll: bool, stop: &StopFlag) -> Option<()> {
        let due = epoch.plus_ns(self.slots.due_ns());
        if !busy_poll {
            let wake = epoch.plus_ns(self.slots.due_ns().saturating_sub(SPIN_NS));
            if pause_until(wake, stop) {
                return None;
            }
        }
        while Mono::now() < due {
            if stop.is_raised() {
                return None;
            }
            std::hint::spin_loop();
        }
        Some(())
    }

    /// The slot due is taken by a request: it and the next one's time.
    pub fn take(&mut self) -> Slot {
        let due_ns = self.slots.due_ns();
        self.slots.advance();
        Slot {
            due_ns,
            next_ns: self.slots.due_ns(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use synapse_stats::Pattern;

    fn every_ms() -> GroupPacing {
        let schedule = Schedule {
            pattern: Pattern::Periodic,
            interval: Duration::from_millis(1),
        };
        GroupPacing::new(schedule, 1_000_000, 7)
    }

    #[test]
    fn slots_are_taken_in_turn_each_knowing_the_next() {
        let mut p = every_ms();
        assert_eq!(
            p.take(),
            Slot {
                due_ns: 1_000_000,
                next_ns: 2_000_000
            }
        );
        assert_eq!(p.take().due_ns, 2_000_000);
    }

    #[test]
    fn a_slot_more_than_half_an_interval_late_is_skipped_and_counted_when_measured() {
        let mut p = every_ms();
        assert_eq!(p.skip_if_late(900_000, true), None, "not due yet");
        assert_eq!(
            p.skip_if_late(1_500_000, true),
            None,
            "half-way: still sent"
        );
        assert_eq!(p.skip_if_late(1_500_001, true), Some(500_001));
        assert_eq!(p.skip_if_late(3_400_000, false), Some(1_400_000), "warm-up");
        assert_eq!(p.missed, 1, "only the measured one counts");
        assert_eq!(
            p.skip_if_late(3_400_000, true),
            None,
            "slot 3: 400 µs late, sent"
        );
        assert_eq!(p.take().due_ns, 3_000_000);
    }

    #[test]
    fn a_wait_ends_at_its_slot_or_at_once_when_stopped() {
        let mut p = every_ms();
        let epoch = Mono::now();
        let stop = StopFlag::new();
        assert_eq!(p.wait(epoch, false, &stop), Some(()));
        assert!(
            Mono::now().ns_since(epoch) >= 1_000_000,
            "not before the slot"
        );
        p.take();
        stop.raise();
        assert_eq!(p.wait(Mono::now(), true, &stop), None);
    }
}
