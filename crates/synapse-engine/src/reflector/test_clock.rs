//! A test build's reflector clock, made to drift and to step, for the
//! tests of what a client makes of two clocks (a namespace cannot have a
//! clock of its own). Only a debug build reads
//! `SYNAPSE_TEST_REFLECTOR_CLOCK` (e.g. `drift_ppm=300,step_ms=40,step_at_s=9`):
//! every timestamp the STAMP reflector writes (T2, T3, a Follow-Up's T3)
//! is then moved by `drift_ppm` of the time since its first one, plus
//! `step_ms` from `step_at_s` after it. A release build writes its clock
//! as it is: this compiles to nothing there.

/// The clock's error, as the variable sets it.
#[cfg(debug_assertions)]
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shift {
    drift_ppm: f64,
    step_ns: i64,
    step_at_ns: u64,
}

#[cfg(debug_assertions)]
impl Shift {
    fn parse(text: &str) -> Option<Self> {
        let mut s = Self {
            drift_ppm: 0.0,
            step_ns: 0,
            step_at_ns: u64::MAX,
        };
        for kv in text.split(',') {
            let (k, v) = kv.split_once('=')?;
            let v: f64 = v.trim().parse().ok()?;
            match k.trim() {
                "drift_ppm" => s.drift_ppm = v,
                "step_ms" => s.step_ns = (v * 1e6) as i64,
                "step_at_s" => s.step_at_ns = (v * 1e9) as u64,
                _ => return None,
            }
        }
        Some(s)
    }

    fn apply(&self, ns: u64, first: u64) -> u64 {
        let since = ns.saturating_sub(first);
        let mut moved = ns as i64 + (since as f64 * self.drift_ppm * 1e-6) as i64;
        if since >= self.step_at_ns {
            moved += self.step_ns;
        }
        moved.max(0) as u64
    }
}

/// `ns` as this build's reflector clock reads it.
#[inline]
pub(crate) fn shifted(ns: u64) -> u64 {
    #[cfg(debug_assertions)]
    {
        use std::sync::OnceLock;
        use std::sync::atomic::{AtomicU64, Ordering};
        static SHIFT: OnceLock<Option<Shift>> = OnceLock::new();
        static FIRST: AtomicU64 = AtomicU64::new(0);
        let shift = SHIFT.get_or_init(|| {
            std::env::var("SYNAPSE_TEST_REFLECTOR_CLOCK")
                .ok()
                .and_then(|t| Shift::parse(&t))
        });
        if let Some(s) = shift {
            let _ = FIRST.compare_exchange(0, ns, Ordering::Relaxed, Ordering::Relaxed);
            return s.apply(ns, FIRST.load(Ordering::Relaxed));
        }
    }
    ns
}

/// [`shifted`], of a stamp that may be missing.
#[inline]
pub(crate) fn shifted_opt(ns: Option<u64>) -> Option<u64> {
    ns.map(shifted)
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;

    #[test]
    fn a_shift_drifts_and_steps_from_its_first_stamp() {
        let s = Shift::parse("drift_ppm=200,step_ms=40,step_at_s=5").unwrap();
        assert_eq!(s.apply(1_000, 1_000), 1_000);
        // 2 s later: 400 µs of drift.
        assert_eq!(s.apply(2_000_001_000, 1_000), 2_000_401_000);
        // 5 s later: 1 ms of drift and the step.
        assert_eq!(
            s.apply(5_000_001_000, 1_000),
            5_000_001_000 + 1_000_000 + 40_000_000
        );
        assert!(Shift::parse("drift=1").is_none() && Shift::parse("step_ms=x").is_none());
    }
}
