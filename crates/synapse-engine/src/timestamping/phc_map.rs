//! A NIC's clock (PHC) mapped onto the system clock, so a hardware stamp
//! can be set beside a software one: T1 hw − T1 driver is the send path to
//! the wire, which no subtraction inside one clock gives.
//!
//! A servo thread reads the PHC against `CLOCK_REALTIME` every [`PERIOD`]
//! as `phc2sys` does (`sys::phc`: `PTP_SYS_OFFSET_PRECISE` where the
//! driver has it, else `_EXTENDED`, else the basic request; the narrowest
//! of [`SAMPLES`] brackets). The two clocks' rate is the slope of a line
//! through the readings of the last [`HISTORY`] periods, so it follows a
//! clock being slewed and forgets what came before. A reading further
//! from where the mapping put it than the readings' own windows allow is
//! a step (of either clock): the history starts again from it and the
//! rate measured before is kept until the new readings give one, so a
//! step never shows as a rate. The latest state is published under a
//! sequence lock; the measurement loops read four atomics: no lock, no
//! allocation, no system call.
//!
//! A NIC stamp is placed only near the latest reading ([`REACH_NS`]) and,
//! when the driver's stamp of the same packet is known, only if it falls
//! where the send path to the wire can: no earlier than the driver's by
//! more than the reading's window (plus [`SLACK_NS`]), no later than
//! [`MAX_TO_WIRE_NS`]. A stamp outside (the NIC's clock stepped since its
//! last reading) is not placed, and counted. Within those bounds a reading
//! below zero is kept: it is the mapping's error, and dropping it would
//! bias the segment up.

use crate::sys::phc::{Phc, PhcMethod, PhcReading};
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often the PHC is read.
pub const PERIOD: Duration = Duration::from_millis(100);
/// PHC reads per reading; the narrowest bracket is kept.
const SAMPLES: usize = 9;
/// Readings the rate is measured over (2 s).
const HISTORY: usize = 20;
/// A stamp further than this from the latest reading is not placed.
pub const REACH_NS: i128 = 1_000_000_000;
/// The most a packet is taken to spend from the driver to the wire.
pub const MAX_TO_WIRE_NS: i64 = 10_000_000;
/// Slack for rounding and the rate's error over one period, ns.
pub const SLACK_NS: i64 = 10_000;
/// A reading this far (plus both windows) from the prediction is a step.
const STEP_NS: i128 = 20_000;

#[derive(Debug, Default)]
struct Shared {
    /// Even: stable; odd: being written.
    seq: AtomicU64,
    phc_ns: AtomicI64,
    system_ns: AtomicI64,
    /// System-clock ns gained per 10⁹ PHC ns, less 10⁹.
    rate_ppb: AtomicI64,
    /// The latest reading's window, ns.
    window_ns: AtomicI64,
    window_max_ns: AtomicI64,
    readings: AtomicU64,
    steps: AtomicU64,
    /// NIC stamps not placed (see the module's comment).
    unplaced: AtomicU64,
    method: AtomicU8,
}

/// The mapping as last published: cheap to clone, read from any thread.
#[derive(Debug, Clone)]
pub struct PhcMap {
    shared: Arc<Shared>,
}

/// One published state: a point of the mapping and its slope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    phc_ns: i64,
    system_ns: i64,
    rate_ppb: i64,
}

impl State {
    fn system_at(self, phc_ns: i128) -> i128 {
        let since = phc_ns - i128::from(self.phc_ns);
        i128::from(self.system_ns) + since + since * i128::from(self.rate_ppb) / 1_000_000_000
    }

    fn to_system(self, phc_ns: u64) -> Option<u64> {
        let phc = i128::from(phc_ns);
        if (phc - i128::from(self.phc_ns)).abs() > REACH_NS {
            return None;
        }
        u64::try_from(self.system_at(phc)).ok()
    }
}

/// What the mapping did over a run, for the reports.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct NicClockFigures {
    /// The request the PHC is read with.
    pub method: &'static str,
    /// Readings taken.
    pub readings: u64,
    /// The latest reading's window, ns: it is right within half of it.
    pub window_ns: i64,
    /// The widest window a reading had.
    pub window_max_ns: i64,
    /// The system clock's rate against the NIC's, ppm.
    pub rate_ppm: f64,
    /// Steps of either clock the servo found and absorbed.
    pub steps: u64,
    /// NIC stamps not placed on the system clock.
    pub unplaced: u64,
}

impl PhcMap {
    /// Starts reading PHC `index` (after one reading, so the map is ready
    /// when this returns); the servo ends once every clone is dropped.
    pub fn start(index: u32) -> io::Result<Self> {
        let phc = Phc::open(index)?;
        let first = phc.read(SAMPLES)?;
        let shared = Arc::new(Shared::default());
        shared.method.store(phc.method() as u8, Ordering::Relaxed);
        let mut servo = Servo::new();
        publish(&shared, &servo.take(first));
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("synapse-phc".into())
            .spawn(move || follow(&phc, servo, &weak))?;
        Ok(Self { shared })
    }

    /// A PHC time on the system clock (`CLOCK_REALTIME`), from the latest
    /// reading at the measured rate; `None` too far from that reading.
    #[inline]
    pub fn to_system(&self, phc_ns: u64) -> Option<u64> {
        self.state().to_system(phc_ns)
    }

    /// A packet's NIC stamp on the system clock, checked against the
    /// driver's stamp of it (`CLOCK_REALTIME`): `None`, and counted, where
    /// the send path to the wire cannot be.
    #[inline]
    pub fn place(&self, phc_ns: u64, driver_ns: Option<u64>) -> Option<u64> {
        let wire = self.to_system(phc_ns);
        let (Some(w), Some(d)) = (wire, driver_ns) else {
            return wire;
        };
        let to_wire = w as i64 - d as i64;
        let below = self.shared.window_ns.load(Ordering::Relaxed) + SLACK_NS;
        if (-below..=MAX_TO_WIRE_NS).contains(&to_wire) {
            Some(w)
        } else {
            self.shared.unplaced.fetch_add(1, Ordering::Relaxed);
            None
        }
    }

    /// A NIC clock that reads the system clock's time (for tests).
    #[cfg(test)]
    pub fn identity() -> Self {
        Self {
            shared: Arc::new(Shared::default()),
        }
    }

    /// What the mapping did so far.
    pub fn figures(&self) -> NicClockFigures {
        let s = &self.shared;
        let method = match s.method.load(Ordering::Relaxed) {
            m if m == PhcMethod::Precise as u8 => PhcMethod::Precise,
            m if m == PhcMethod::Extended as u8 => PhcMethod::Extended,
            _ => PhcMethod::Basic,
        };
        NicClockFigures {
            method: method.name(),
            readings: s.readings.load(Ordering::Relaxed),
            window_ns: s.window_ns.load(Ordering::Relaxed),
            window_max_ns: s.window_max_ns.load(Ordering::Relaxed),
            rate_ppm: self.state().rate_ppb as f64 / 1_000.0,
            steps: s.steps.load(Ordering::Relaxed),
            unplaced: s.unplaced.load(Ordering::Relaxed),
        }
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

/// What the servo makes of each reading.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Update {
    state: State,
    window_ns: i64,
    step: bool,
}

/// The servo: the recent readings and the rate measured from them.
#[derive(Debug)]
struct Servo {
    history: VecDeque<PhcReading>,
    rate_ppb: i64,
    last: Option<Update>,
}

impl Servo {
    fn new() -> Self {
        Self {
            history: VecDeque::with_capacity(HISTORY + 1),
            rate_ppb: 0,
            last: None,
        }
    }

    /// Takes one reading: a step restarts the history (the rate is kept),
    /// else the rate is the slope through the history.
    fn take(&mut self, r: PhcReading) -> Update {
        let step = self.last.is_some_and(|l| {
            let off = r.system_ns - l.state.system_at(r.phc_ns);
            off.abs() > STEP_NS + r.window_ns + i128::from(l.window_ns)
        });
        if step {
            self.history.clear();
        }
        self.history.push_back(r);
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
        if let Some(rate) = slope_ppb(&self.history) {
            self.rate_ppb = rate;
        }
        let u = Update {
            state: State {
                phc_ns: r.phc_ns as i64,
                system_ns: r.system_ns as i64,
                rate_ppb: self.rate_ppb,
            },
            window_ns: r.window_ns as i64,
            step,
        };
        self.last = Some(u);
        u
    }
}

/// The least-squares slope of (system − PHC) over PHC time, ppb; `None`
/// with fewer than three readings.
fn slope_ppb(h: &VecDeque<PhcReading>) -> Option<i64> {
    if h.len() < 3 {
        return None;
    }
    let n = h.len() as f64;
    let t0 = h[0].phc_ns;
    let pts = h.iter().map(|r| {
        (
            (r.phc_ns - t0) as f64,
            (r.system_ns - r.phc_ns - (h[0].system_ns - t0)) as f64,
        )
    });
    let (mut st, mut so, mut stt, mut sto) = (0.0, 0.0, 0.0, 0.0);
    for (t, o) in pts {
        st += t;
        so += o;
        stt += t * t;
        sto += t * o;
    }
    let d = n * stt - st * st;
    (d > 0.0).then(|| ((n * sto - st * so) / d * 1e9).round() as i64)
}

/// The servo's loop: a reading every [`PERIOD`] until the map is dropped.
fn follow(phc: &Phc, mut servo: Servo, shared: &Weak<Shared>) {
    loop {
        std::thread::sleep(PERIOD);
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Ok(r) = phc.read(SAMPLES) else {
            continue;
        };
        publish(&shared, &servo.take(r));
    }
}

fn publish(s: &Shared, u: &Update) {
    let seq = s.seq.load(Ordering::Relaxed);
    s.seq.store(seq + 1, Ordering::Relaxed);
    std::sync::atomic::fence(Ordering::Release);
    s.phc_ns.store(u.state.phc_ns, Ordering::Relaxed);
    s.system_ns.store(u.state.system_ns, Ordering::Relaxed);
    s.rate_ppb.store(u.state.rate_ppb, Ordering::Relaxed);
    s.window_ns.store(u.window_ns, Ordering::Relaxed);
    s.seq.store(seq + 2, Ordering::Release);
    s.window_max_ns.fetch_max(u.window_ns, Ordering::Relaxed);
    s.readings.fetch_add(1, Ordering::Relaxed);
    s.steps.fetch_add(u64::from(u.step), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

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
            s.to_system(1_900_000_000),
            Some(1_700_000_000_900_090_000),
            "0.9 PHC seconds later: 0.9 system seconds and 90 µs"
        );
        assert_eq!(s.to_system(999_999_000), Some(1_699_999_999_999_999_000));
        assert_eq!(
            s.to_system(3_000_000_000),
            None,
            "beyond the reach of a reading"
        );
        let early = State {
            phc_ns: 5_000_000_000,
            system_ns: 1_000,
            rate_ppb: 0,
        };
        assert_eq!(early.to_system(4_500_000_000), None, "before the epoch");
    }

    /// The system clock gains 50 ppm on the NIC's; readings every 100 ms.
    #[test]
    fn the_rate_is_the_slope_of_recent_readings() {
        let mut servo = Servo::new();
        let mut u = None;
        for k in 0..30i128 {
            let phc = 1_000 * S + k * S / 10;
            let sys = 1_700_000_000 * S + k * S / 10 + k * 5_000 + (k % 3) * 40;
            u = Some(servo.take(reading(sys, phc)));
        }
        let u = u.unwrap();
        assert!((u.state.rate_ppb - 50_000).abs() <= 500, "{u:?}");
        assert!(!u.step);
    }

    /// The NIC's clock stepped by +1 ms: the step is found, the rate is
    /// the one measured before it (never the step over 100 ms, 10,000 ppm),
    /// and the mapping follows the new offset at once.
    #[test]
    fn a_step_is_absorbed_without_a_wrong_rate() {
        let mut servo = Servo::new();
        let mut rates = Vec::new();
        let mut steps = 0;
        for k in 0..40i128 {
            let jump = if k >= 20 { 1_000_000 } else { 0 };
            let phc = 1_000 * S + k * S / 10 + jump;
            let sys = 1_700_000_000 * S + k * S / 10 + k * 1_000; // 10 ppm
            let u = servo.take(reading(sys, phc));
            steps += u32::from(u.step);
            rates.push(u.state.rate_ppb);
            assert_eq!(u.state.to_system(phc as u64), Some(sys as u64));
        }
        assert_eq!(steps, 1);
        assert!(
            rates[3..].iter().all(|r| (r - 10_000).abs() <= 200),
            "{rates:?}"
        );
    }

    #[test]
    fn stamps_are_placed_only_where_the_send_path_can_be() {
        let map = PhcMap::identity();
        let u = Update {
            state: State {
                phc_ns: 1_000_000_000,
                system_ns: 1_000_000_000,
                rate_ppb: 0,
            },
            window_ns: 2_000,
            step: false,
        };
        publish(&map.shared, &u);
        let d = Some(1_000_050_000);
        assert_eq!(
            map.place(1_000_062_000, d),
            Some(1_000_062_000),
            "12 µs to the wire"
        );
        assert_eq!(
            map.place(1_000_045_000, d),
            Some(1_000_045_000),
            "5 µs below the driver's: within the window and the slack, kept"
        );
        assert_eq!(map.place(1_000_030_000, d), None, "20 µs below: a step");
        assert_eq!(map.place(1_050_000_000, d), None, "50 ms after: a step");
        assert_eq!(
            map.place(1_000_030_000, None),
            Some(1_000_030_000),
            "nothing to check"
        );
        let f = map.figures();
        assert_eq!((f.unplaced, f.readings, f.window_ns), (2, 1, 2_000));
    }
}
