//! A NIC's clock (PHC) mapped onto the system clock, so a hardware stamp
//! can be set beside a software one: T1 hw − T1 driver is the send path to
//! the wire, which no subtraction inside one clock gives.
//!
//! A thread of its own reads the PHC against `CLOCK_REALTIME` every
//! [`PERIOD`] (`PTP_SYS_OFFSET`, a system call the measurement loop never
//! makes) and publishes the latest reading and the two clocks' rate
//! difference under a sequence lock. The measurement loop only reads four
//! atomics: no lock, no allocation, no system call.

use crate::sys::phc::{Phc, PhcReading};
use std::io;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often the PHC is read.
pub const PERIOD: Duration = Duration::from_millis(100);
/// PHC reads per reading; the least disturbed one is kept.
const SAMPLES: usize = 9;
/// A rate difference beyond this means a clock was stepped, not that it
/// runs fast: the rate's baseline starts again.
const MAX_RATE_PPB: i128 = 1_000_000;

#[derive(Debug, Default)]
struct Shared {
    /// Even: stable; odd: being written.
    seq: AtomicU64,
    phc_ns: AtomicI64,
    system_ns: AtomicI64,
    /// System-clock ns gained per 10⁹ PHC ns, less 10⁹.
    rate_ppb: AtomicI64,
    /// The reading's uncertainty, ns.
    window_ns: AtomicI64,
}

/// The mapping as last published: cheap to clone, read from any thread.
#[derive(Debug, Clone)]
pub struct PhcMap {
    shared: Arc<Shared>,
}

/// One published state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    phc_ns: i64,
    system_ns: i64,
    rate_ppb: i64,
}

impl State {
    fn to_system(self, phc_ns: u64) -> Option<u64> {
        let since = i128::from(phc_ns) - i128::from(self.phc_ns);
        let system =
            i128::from(self.system_ns) + since + since * i128::from(self.rate_ppb) / 1_000_000_000;
        u64::try_from(system).ok()
    }
}

impl PhcMap {
    /// Starts reading PHC `index` (after one reading, so the map is ready
    /// when this returns); the reader ends once every clone is dropped.
    pub fn start(index: u32) -> io::Result<Self> {
        let phc = Phc::open(index)?;
        let first = phc.read(SAMPLES)?;
        let shared = Arc::new(Shared::default());
        publish(&shared, first, 0);
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("synapse-phc".into())
            .spawn(move || follow(&phc, first, &weak))?;
        Ok(Self { shared })
    }

    /// A PHC time on the system clock (`CLOCK_REALTIME`), extrapolated from
    /// the latest reading at the measured rate.
    #[inline]
    pub fn to_system(&self, phc_ns: u64) -> Option<u64> {
        self.state().to_system(phc_ns)
    }

    /// A NIC clock that reads the system clock's time (for tests).
    #[cfg(test)]
    pub fn identity() -> Self {
        Self {
            shared: Arc::new(Shared::default()),
        }
    }

    /// The latest reading's uncertainty, ns.
    pub fn window_ns(&self) -> i64 {
        self.shared.window_ns.load(Ordering::Relaxed)
    }

    #[inline]
    fn state(&self) -> State {
        let s = &self.shared;
        loop {
            let before = s.seq.load(Ordering::Acquire);
            let state = State {
                phc_ns: s.phc_ns.load(Ordering::Relaxed),
                system_ns: s.system_ns.load(Ordering::Relaxed),
                rate_ppb: s.rate_ppb.load(Ordering::Relaxed),
            };
            std::sync::atomic::fence(Ordering::Acquire);
            if before.is_multiple_of(2) && s.seq.load(Ordering::Relaxed) == before {
                return state;
            }
            std::hint::spin_loop();
        }
    }
}

/// The reader's loop: a reading every [`PERIOD`], the rate measured from
/// the first reading since the last step (the longer the baseline, the
/// less one reading's uncertainty weighs).
fn follow(phc: &Phc, mut base: PhcReading, shared: &Weak<Shared>) {
    loop {
        std::thread::sleep(PERIOD);
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Ok(r) = phc.read(SAMPLES) else {
            continue;
        };
        let rate = rate_ppb(base, r);
        if rate.abs() > MAX_RATE_PPB {
            base = r;
        }
        publish(&shared, r, rate.clamp(-MAX_RATE_PPB, MAX_RATE_PPB) as i64);
    }
}

/// How much faster the system clock ran than the PHC between two readings,
/// parts per 10⁹ (0 until they are apart).
fn rate_ppb(a: PhcReading, b: PhcReading) -> i128 {
    let phc = b.phc_ns - a.phc_ns;
    if phc <= 0 {
        return 0;
    }
    ((b.system_ns - a.system_ns) - phc) * 1_000_000_000 / phc
}

fn publish(s: &Shared, r: PhcReading, rate_ppb: i64) {
    let seq = s.seq.load(Ordering::Relaxed);
    s.seq.store(seq + 1, Ordering::Relaxed);
    std::sync::atomic::fence(Ordering::Release);
    s.phc_ns.store(r.phc_ns as i64, Ordering::Relaxed);
    s.system_ns.store(r.system_ns as i64, Ordering::Relaxed);
    s.rate_ppb.store(rate_ppb, Ordering::Relaxed);
    s.window_ns.store(r.window_ns as i64, Ordering::Relaxed);
    s.seq.store(seq + 2, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(system_ns: i128, phc_ns: i128) -> PhcReading {
        PhcReading {
            system_ns,
            phc_ns,
            window_ns: 100,
        }
    }

    #[test]
    fn a_phc_time_maps_through_the_offset_and_the_rate() {
        let s = State {
            phc_ns: 1_000_000_000,
            system_ns: 1_700_000_000_000_000_000,
            rate_ppb: 100_000, // the system clock gains 100 ppm
        };
        assert_eq!(s.to_system(1_000_000_000), Some(1_700_000_000_000_000_000));
        assert_eq!(
            s.to_system(2_000_000_000),
            Some(1_700_000_001_000_100_000),
            "one PHC second later: one system second and 100 µs"
        );
        assert_eq!(s.to_system(999_999_000), Some(1_699_999_999_999_999_000));
    }

    #[test]
    fn a_time_before_the_epoch_maps_to_nothing() {
        let s = State {
            phc_ns: 5_000_000_000,
            system_ns: 1_000,
            rate_ppb: 0,
        };
        assert_eq!(s.to_system(0), None);
    }

    #[test]
    fn the_rate_is_the_system_clocks_gain_per_phc_second() {
        let a = reading(10_000_000_000, 0);
        assert_eq!(rate_ppb(a, reading(11_000_100_000, 1_000_000_000)), 100_000);
        assert_eq!(rate_ppb(a, reading(10_999_990_000, 1_000_000_000)), -10_000);
        assert_eq!(rate_ppb(a, a), 0, "no time apart, no rate");
    }

    #[test]
    fn what_is_published_is_what_is_read() {
        let map = PhcMap {
            shared: Arc::new(Shared::default()),
        };
        publish(&map.shared, reading(2_000, 1_000), 0);
        assert_eq!(map.to_system(1_500), Some(2_500));
        assert_eq!(map.window_ns(), 100);
        publish(&map.shared, reading(3_000, 1_000), 0);
        assert_eq!(map.to_system(1_500), Some(3_500), "the newer offset");
    }
}
