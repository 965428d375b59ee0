//! This host's clock as the kernel keeps it, and the STAMP error estimate
//! that says so (RFC 8762 §4.2.1).
//!
//! The state changes while a run goes on (a time daemon synchronises the
//! clock, or loses its sources), so the loops that stamp re-read it about
//! once a second: [`ClockWatch::tick`] is a comparison against a clock the
//! loop has already read, and one `adjtimex` when the second is up, never
//! a call per packet.

use crate::protocol::stamp::{ErrorEstimate, TimeFormat};

/// How often the state is read again.
pub const REREAD_NS: u64 = 1_000_000_000;

/// The system clock's synchronisation, as `adjtimex` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct ClockState {
    /// A time daemon keeps the clock synchronised (`STA_UNSYNC` clear).
    pub synchronized: bool,
    /// The kernel's maximum error, ns: the bound a daemon sets and the
    /// kernel widens by 500 ppm of the time since.
    pub max_error_ns: u64,
    /// The kernel's estimated error, ns.
    pub est_error_ns: u64,
}

impl ClockState {
    /// This host's state now (unsynchronised if the kernel cannot be
    /// asked).
    pub fn of_this_host() -> Self {
        match crate::sys::clock::clock_sync() {
            Some((synchronized, max_us, est_us)) => Self {
                synchronized,
                max_error_ns: max_us.saturating_mul(1_000),
                est_error_ns: est_us.saturating_mul(1_000),
            },
            None => Self::default(),
        }
    }

    /// The STAMP error estimate that says so, its Z bit naming `format`:
    /// S set and the maximum error when synchronised, else S clear and
    /// the field's largest error.
    pub fn estimate(self, format: TimeFormat) -> ErrorEstimate {
        let e = if self.synchronized {
            ErrorEstimate::synchronized_within_ns(self.max_error_ns)
        } else {
            ErrorEstimate::UNSYNCHRONIZED
        };
        e.with_format(format)
    }
}

/// The host's error estimate, kept fresh by the loop that sends it.
#[derive(Debug, Clone, Copy)]
pub struct ClockWatch {
    format: TimeFormat,
    state: ClockState,
    estimate: ErrorEstimate,
    /// When to read again, on the loop's clock (0: at the first tick's
    /// time plus [`REREAD_NS`]).
    next_ns: u64,
}

impl ClockWatch {
    /// Reads the state now.
    pub fn new(format: TimeFormat) -> Self {
        Self::with_state(format, ClockState::of_this_host())
    }

    /// A watch that starts from `state` (tests, and callers that read it).
    pub fn with_state(format: TimeFormat, state: ClockState) -> Self {
        Self {
            format,
            state,
            estimate: state.estimate(format),
            next_ns: 0,
        }
    }

    /// Reads the state again if a second has passed since it was last
    /// read; `now_ns` is the loop's own clock. Returns whether it was read.
    #[inline]
    pub fn tick(&mut self, now_ns: u64) -> bool {
        if now_ns < self.next_ns {
            return false;
        }
        let first = self.next_ns == 0;
        self.next_ns = now_ns.saturating_add(REREAD_NS);
        if first {
            return false;
        }
        self.set(ClockState::of_this_host());
        true
    }

    /// Takes a state read elsewhere.
    pub fn set(&mut self, state: ClockState) {
        self.state = state;
        self.estimate = state.estimate(self.format);
    }

    /// The estimate to send now.
    #[inline]
    pub fn estimate(&self) -> ErrorEstimate {
        self.estimate
    }

    /// The state last read.
    pub fn state(&self) -> ClockState {
        self.state
    }

    /// The format its estimates name.
    pub fn format(&self) -> TimeFormat {
        self.format
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synchronised_clock_sends_its_maximum_error_and_an_unsynchronised_one_the_fields() {
        let synced = ClockState {
            synchronized: true,
            max_error_ns: 1_500_000,
            est_error_ns: 20_000,
        };
        let e = synced.estimate(TimeFormat::Ntp);
        assert!(e.synchronized && !e.ptp);
        assert!(e.nanos() >= 1.5e6 && e.nanos() < 1.52e6, "{}", e.nanos());
        let lost = ClockState {
            synchronized: false,
            ..synced
        };
        let e = lost.estimate(TimeFormat::Ptp);
        assert_eq!(e.to_bits(), 0x7fff, "S=0, Z=1, the largest error");
        assert_eq!(e.bound_ns(), None);
    }

    #[test]
    fn the_state_is_read_again_once_a_second_and_no_oftener() {
        let mut w = ClockWatch::with_state(TimeFormat::Ntp, ClockState::default());
        assert!(!w.tick(5_000), "the first tick only starts the second");
        assert!(!w.tick(5_000 + REREAD_NS - 1));
        assert!(w.tick(5_000 + REREAD_NS), "a second later: read");
        assert!(!w.tick(5_000 + REREAD_NS + 10));
        w.set(ClockState {
            synchronized: true,
            max_error_ns: 1_000,
            est_error_ns: 0,
        });
        assert!(w.estimate().synchronized, "what is set is what is sent");
    }

    #[test]
    fn this_host_can_be_asked() {
        let s = ClockState::of_this_host();
        assert_eq!(s.estimate(TimeFormat::Ntp).synchronized, s.synchronized);
    }
}
