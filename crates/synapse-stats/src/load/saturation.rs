//! The IETF draft's rule for working conditions
//! (draft-ietf-ippm-responsiveness, "Final Algorithm"), interval by
//! interval: one load connection a way to start, one more a way each
//! interval until that way's goodput is stable, then latency until it is
//! stable too.
//!
//! Goodput of a way is *stable* at interval i when the standard deviation
//! of its last MAD moving averages (each the mean over the MAD intervals
//! up to it) is within SDT of the latest one. Once every way is stable,
//! the intervals after are the *stable intervals*: their probes give the
//! responsiveness of each interval (over the last MAD of them), stable by
//! the same tolerance. Confidence, as the draft defines it: *low* when a
//! stage ran fewer than MAD intervals, *medium* when it ran more but never
//! became stable, *high* when it did.

use super::phase::{Confidence, PhaseKind, Way};
use super::rpm::Rpm;
use std::collections::VecDeque;

/// Intervals in a moving average, and moving averages in a stability
/// check (the draft's MAD).
pub const MAD: usize = 4;
/// The standard deviation tolerance (SDT).
pub const SDT: f64 = 0.05;
/// The interval (ID), ns.
pub const INTERVAL_NS: u64 = 1_000_000_000;
/// The most load connections a way (MNP).
pub const MAX_STREAMS: u32 = 16;

/// One way's goodput so far.
#[derive(Debug, Clone)]
struct WayState {
    way: Way,
    bytes: Vec<u64>,
    moving: Vec<f64>,
    streams: u32,
    stable: bool,
}

/// What to do after an interval.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Step {
    /// Open one more stream each of these ways.
    pub add: Vec<Way>,
    /// Every way's goodput is stable (from this interval on).
    pub goodput_stable: bool,
    /// Latency is stable too: the phase has what it needs.
    pub done: bool,
}

/// The rule's state over one loaded phase.
#[derive(Debug, Clone)]
pub struct Saturation {
    ways: Vec<WayState>,
    /// Streams fixed by `--load-streams`: none are added.
    fixed: Option<u32>,
    intervals: usize,
    /// The interval after which goodput was stable everywhere.
    saturated_after: Option<usize>,
    /// The stable intervals' probes: foreign and loaded round trips, ns.
    window: VecDeque<(Vec<u64>, Vec<u64>)>,
    responsiveness: Vec<f64>,
    latency_stable: bool,
}

/// Whether the last MAD values are within SDT of the latest.
fn stable(values: &[f64]) -> bool {
    if values.len() < MAD {
        return false;
    }
    let last = &values[values.len() - MAD..];
    let mean = last.iter().sum::<f64>() / MAD as f64;
    let sd = (last.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / MAD as f64).sqrt();
    let current = last[MAD - 1];
    current > 0.0 && sd < SDT * current
}

impl Saturation {
    /// The rule for a phase of `kind`; `fixed`: `--load-streams N`.
    pub fn new(kind: PhaseKind, fixed: Option<u32>) -> Self {
        let start = fixed.unwrap_or(1).clamp(1, MAX_STREAMS);
        Self {
            ways: kind
                .ways()
                .iter()
                .map(|&way| WayState {
                    way,
                    bytes: Vec::new(),
                    moving: Vec::new(),
                    streams: start,
                    stable: false,
                })
                .collect(),
            fixed,
            intervals: 0,
            saturated_after: None,
            window: VecDeque::new(),
            responsiveness: Vec::new(),
            latency_stable: false,
        }
    }

    /// The streams to open as the phase starts: one a way (INP), or the
    /// fixed number.
    pub fn opening(&self) -> Vec<Way> {
        self.ways
            .iter()
            .flat_map(|w| std::iter::repeat_n(w.way, w.streams as usize))
            .collect()
    }

    /// One interval's goodput (bytes each way moved in it), the probes'
    /// round trips sent in it and the load connections' own: what to do.
    pub fn interval(&mut self, bytes: &[(Way, u64)], foreign: Vec<u64>, loaded: Vec<u64>) -> Step {
        let i = self.intervals;
        self.intervals += 1;
        let mut step = Step::default();
        for w in &mut self.ways {
            let b = bytes
                .iter()
                .find(|(way, _)| *way == w.way)
                .map_or(0, |x| x.1);
            w.bytes.push(b);
            let from = w.bytes.len().saturating_sub(MAD);
            let span = &w.bytes[from..];
            let per_s = 1e9 / INTERVAL_NS as f64;
            w.moving
                .push(span.iter().sum::<u64>() as f64 / span.len() as f64 * per_s);
            w.stable = w.stable || stable(&w.moving);
            if !w.stable && self.fixed.is_none() && w.streams < MAX_STREAMS {
                w.streams += 1;
                step.add.push(w.way);
            }
        }
        if let Some(after) = self.saturated_after {
            if i > after {
                self.measure_latency(foreign, loaded);
            }
        } else if self.ways.iter().all(|w| w.stable) {
            self.saturated_after = Some(i);
        }
        step.goodput_stable = self.saturated_after.is_some();
        step.done = self.latency_stable;
        step
    }

    /// A stable interval's probes: the responsiveness over the last MAD
    /// of them, and whether it is stable.
    fn measure_latency(&mut self, foreign: Vec<u64>, loaded: Vec<u64>) {
        self.window.push_back((foreign, loaded));
        while self.window.len() > MAD {
            self.window.pop_front();
        }
        let f: Vec<u64> = self
            .window
            .iter()
            .flat_map(|w| w.0.iter().copied())
            .collect();
        let l: Vec<u64> = self
            .window
            .iter()
            .flat_map(|w| w.1.iter().copied())
            .collect();
        if let Some(r) = Rpm::of(&f, &l) {
            self.responsiveness.push(r.rpm);
            self.latency_stable = self.latency_stable || stable(&self.responsiveness);
        }
    }

    /// Intervals so far.
    pub fn intervals(&self) -> usize {
        self.intervals
    }

    /// The first interval of the measured part: the stable intervals when
    /// goodput became stable, else the last MAD.
    pub fn measured_from(&self) -> usize {
        match self.saturated_after {
            Some(after) if after + 1 < self.intervals => after + 1,
            _ => self.intervals.saturating_sub(MAD),
        }
    }

    /// Whether goodput became stable in every way.
    pub fn goodput_stable(&self) -> bool {
        self.saturated_after.is_some()
    }

    /// The draft's confidence in the goodput.
    pub fn goodput_confidence(&self) -> Confidence {
        if self.goodput_stable() {
            Confidence::High
        } else if self.intervals >= MAD {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }

    /// The draft's confidence in the latency.
    pub fn latency_confidence(&self) -> Confidence {
        if self.latency_stable {
            Confidence::High
        } else if self.responsiveness.len() >= MAD {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }

    /// Streams of `way` opened so far.
    pub fn streams(&self, way: Way) -> u32 {
        self.ways
            .iter()
            .find(|w| w.way == way)
            .map_or(0, |w| w.streams)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    fn probes(ms: u64) -> Vec<u64> {
        vec![ms * 1_000_000; 100]
    }

    #[test]
    fn streams_are_added_until_goodput_levels_then_latency_is_measured() {
        let mut s = Saturation::new(PhaseKind::Download, None);
        assert_eq!(s.opening(), vec![Way::Down]);
        // Slow start: 1, 2, 4 MB, then a flat 10 MB a second.
        let goodput = [MB, 2 * MB, 4 * MB, 10 * MB, 10 * MB, 10 * MB, 10 * MB];
        let mut added = 0;
        let mut stable_at = None;
        for (i, &b) in goodput.iter().enumerate() {
            let step = s.interval(&[(Way::Down, b)], probes(100), Vec::new());
            added += step.add.len();
            if step.goodput_stable && stable_at.is_none() {
                stable_at = Some(i);
            }
            assert!(!step.done);
        }
        // Moving averages 1, 1.5, 2.33, 4.25, 6.5, 8.5, 10: never within 5 %
        // over four of them yet.
        assert_eq!(stable_at, None);
        assert_eq!(added, 7, "one a second while not stable");
        for _ in 0..3 {
            s.interval(&[(Way::Down, 10 * MB)], probes(100), Vec::new());
        }
        assert!(s.goodput_stable(), "10, 10, 10, 10 from interval 9");
        assert_eq!(s.goodput_confidence(), Confidence::High);
        assert_eq!(s.streams(Way::Down), 10, "none after it levelled");
        let mut done = false;
        for _ in 0..4 {
            done = s
                .interval(&[(Way::Down, 10 * MB)], probes(100), probes(90))
                .done;
        }
        assert!(done, "four steady responsiveness values");
        assert_eq!(s.latency_confidence(), Confidence::High);
        assert_eq!(
            s.measured_from(),
            10,
            "the stable intervals, after the 10th"
        );
    }

    #[test]
    fn a_phase_cut_short_has_the_confidence_it_earned() {
        let mut s = Saturation::new(PhaseKind::Bidirectional, Some(2));
        assert_eq!(s.opening(), vec![Way::Down, Way::Down, Way::Up, Way::Up]);
        for b in [MB, 3 * MB] {
            let step = s.interval(&[(Way::Down, b), (Way::Up, b)], probes(50), Vec::new());
            assert!(step.add.is_empty(), "fixed streams");
        }
        assert_eq!(s.goodput_confidence(), Confidence::Low);
        assert_eq!(s.latency_confidence(), Confidence::Low);
        assert_eq!(
            s.measured_from(),
            0,
            "the last MAD intervals: all there are"
        );
        for b in [5 * MB, 9 * MB, 2 * MB] {
            s.interval(&[(Way::Down, b), (Way::Up, b)], probes(50), Vec::new());
        }
        assert_eq!(s.goodput_confidence(), Confidence::Medium);
        assert_eq!(s.measured_from(), 1, "the last four of five");
        // One way levelling is not enough.
        let mut t = Saturation::new(PhaseKind::Bidirectional, Some(1));
        for _ in 0..6 {
            t.interval(&[(Way::Down, 5 * MB), (Way::Up, 0)], probes(50), Vec::new());
        }
        assert!(!t.goodput_stable(), "nothing moved up");
    }

    #[test]
    fn stability_is_within_five_percent_of_the_latest() {
        assert!(stable(&[100.0, 101.0, 99.0, 100.0]));
        assert!(!stable(&[80.0, 100.0, 120.0, 100.0]));
        assert!(!stable(&[100.0, 100.0, 100.0]), "fewer than MAD");
        assert!(!stable(&[0.0; 4]), "nothing moved is not stable");
    }
}
