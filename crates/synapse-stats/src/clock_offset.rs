//! The offset between the client's clock and the reflector's, read from
//! the same four stamps as the one-way delays, with the bound RFC 5905 §8
//! puts on it, and how it moved over the run: its drift (a line, with its
//! interval) and its steps.
//!
//! One exchange gives `θ = ((T2 − T1) + (T3 − T4)) / 2` and the round trip
//! less the reflector's dwell, `δ = (T4 − T1) − (T3 − T2)`. Whatever the
//! path's asymmetry, the true offset lies in `θ ± δ/2` (each leg takes at
//! least nothing between its cut points), so a reading's *half-width* is
//! δ/2: the fastest exchange is the tightest.
//!
//! Over a run the offset is tracked against a reference: the tightest
//! reading so far, its half-width widened by 500 ppm of the time since
//! (the most a clock is slewed, the kernel's `MAXFREQ`). A reading whose
//! interval misses the reference's is a step candidate; the next reading
//! that tells the two apart confirms it (a new segment starts: offset and
//! drift are measured again from there) or dismisses it as an outlier.
//! The drift is a least-squares line through the tightest reading of each
//! stretch of the current segment, with a 95 % interval from its
//! residuals (Student's t); it is *resolved* only when that interval
//! excludes zero.

use super::significance::t_quantile;
use serde::Serialize;

/// The largest slew a clock is given: 500 ppm (`MAXFREQ`), ns per ns.
const MAX_SLEW: f64 = 500e-6;
/// Slack for the stamps' own rounding, ns.
const SLACK_NS: f64 = 1_000.0;
/// Stretches a segment is cut into for the drift line.
const STRETCHES: usize = 32;
/// Steps remembered (later ones are counted only).
pub const MAX_STEPS: usize = 8;

/// One exchange's reading of the offset.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    at_ns: u64,
    theta: i64,
    half: u64,
}

impl Reading {
    /// From the forward and backward delays between one set of cut
    /// points: none when they are out of order (δ < 0: a clock stepped
    /// mid-exchange).
    fn of(at_ns: u64, forward: i64, backward: i64) -> Option<Self> {
        let (f, b) = (i128::from(forward), i128::from(backward));
        let delta = u64::try_from(f + b).ok()?;
        Some(Self {
            at_ns,
            theta: ((f - b) / 2) as i64,
            half: delta.div_ceil(2),
        })
    }

    /// Its half-width at `at_ns`, widened by the largest slew since.
    fn half_at(&self, at_ns: u64) -> f64 {
        self.half as f64 + MAX_SLEW * at_ns.abs_diff(self.at_ns) as f64
    }

    /// Whether the two intervals can hold one clock offset.
    fn agrees(&self, other: &Reading) -> bool {
        let apart = (self.theta as f64 - other.theta as f64).abs();
        apart <= self.half_at(other.at_ns) + other.half as f64 + SLACK_NS
    }

    /// The tighter of the two, as of `at_ns`.
    fn tighter(self, other: Reading, at_ns: u64) -> Reading {
        if other.half_at(at_ns) < self.half_at(at_ns) {
            other
        } else {
            self
        }
    }
}

/// The tightest reading of each of up to [`STRETCHES`] equal stretches of
/// a segment: when they run out, neighbours merge and stretches double in
/// length, so any run fits in a fixed array.
#[derive(Debug, Clone, Copy)]
struct Stretches {
    t0: u64,
    width_ns: u64,
    best: [Option<Reading>; STRETCHES],
}

impl Stretches {
    fn new(t0: u64) -> Self {
        Self {
            t0,
            width_ns: 100_000_000,
            best: [None; STRETCHES],
        }
    }

    fn add(&mut self, r: Reading) {
        let mut i = (r.at_ns.saturating_sub(self.t0) / self.width_ns) as usize;
        while i >= STRETCHES {
            for k in 0..STRETCHES / 2 {
                let (a, b) = (self.best[2 * k], self.best[2 * k + 1]);
                self.best[k] = match (a, b) {
                    (Some(a), Some(b)) if b.half < a.half => Some(b),
                    (None, b) => b,
                    (a, _) => a,
                };
            }
            self.best[STRETCHES / 2..].fill(None);
            self.width_ns *= 2;
            i = (r.at_ns.saturating_sub(self.t0) / self.width_ns) as usize;
        }
        if self.best[i].is_none_or(|b| r.half < b.half) {
            self.best[i] = Some(r);
        }
    }

    /// The least-squares slope (ns per s) and its half-interval, with the
    /// points and the span they cover (s); `None` below three points.
    fn drift(&self) -> Option<DriftFigures> {
        let pts: Vec<(f64, f64, f64)> = self
            .best
            .iter()
            .flatten()
            .map(|r| {
                let t = r.at_ns.saturating_sub(self.t0) as f64 / 1e9;
                (t, r.theta as f64, r.half as f64)
            })
            .collect();
        let n = pts.len() as f64;
        if pts.len() < 3 {
            return None;
        }
        let (mt, mo) = (
            pts.iter().map(|p| p.0).sum::<f64>() / n,
            pts.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let sxx: f64 = pts.iter().map(|p| (p.0 - mt).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let sxy: f64 = pts.iter().map(|p| (p.0 - mt) * (p.1 - mo)).sum();
        let slope = sxy / sxx;
        let ssr: f64 = pts
            .iter()
            .map(|p| (p.1 - mo - slope * (p.0 - mt)).powi(2))
            .sum();
        let se = (ssr / (n - 2.0) / sxx).sqrt();
        // Each point is off the truth by at most its half-width: that
        // tilts the line by at most Σ|t − t̄|·h / Sxx, however the errors
        // fall. The interval is never narrower than that.
        let tilt: f64 = pts.iter().map(|p| (p.0 - mt).abs() * p.2).sum::<f64>() / sxx;
        let half = (t_quantile(0.975, n - 2.0) * se).max(tilt);
        let span = pts.iter().map(|p| p.0).fold(f64::MIN, f64::max)
            - pts.iter().map(|p| p.0).fold(f64::MAX, f64::min);
        Some(DriftFigures {
            ppm: slope / 1_000.0,
            interval_ppm: half / 1_000.0,
            points: pts.len() as u32,
            span_s: span,
            resolved: slope.abs() > half,
        })
    }
}

/// The drift of the offset over the current segment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DriftFigures {
    /// The reflector's clock gains this much on the client's, ppm.
    pub ppm: f64,
    /// Half its interval, ppm: the fit's 95 % interval (Student's t on
    /// its residuals), or the most the points' own bounds can tilt the
    /// line, whichever is wider.
    pub interval_ppm: f64,
    /// Points the line runs through (the tightest of each stretch).
    pub points: u32,
    /// Seconds between the first and the last.
    pub span_s: f64,
    /// The interval excludes zero: a drift is claimed.
    pub resolved: bool,
}

/// A step of the offset: the tightest readings before and after.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepFigures {
    /// The first reading after it, seconds since the first reading.
    pub at_s: f64,
    /// The offset before, ns.
    pub from_ns: i64,
    /// Its bound, ns.
    pub from_bound_ns: u64,
    /// The offset after, ns.
    pub to_ns: i64,
    /// Its bound, ns.
    pub to_bound_ns: u64,
}

/// The offset as the run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffsetFigures {
    /// The reflector's clock minus the client's, ns: the tightest reading
    /// since the last step.
    pub offset_ns: i64,
    /// It is right within ± this (half the round trip less the dwell of
    /// that exchange, RFC 5905 §8), ns.
    pub bound_ns: u64,
    /// When that reading was taken, seconds since the first reading.
    pub at_s: f64,
    /// Readings since the last step.
    pub readings: u64,
    /// How it moved since the last step (`None`: too few readings).
    pub drift: Option<DriftFigures>,
    /// The steps, in order (at most [`MAX_STEPS`]).
    pub steps: Vec<StepFigures>,
    /// Steps beyond those.
    pub more_steps: u64,
    /// Readings that agreed with neither side of a candidate step.
    pub outliers: u64,
    /// Exchanges whose stamps were out of order (δ < 0), not readings.
    pub out_of_order: u64,
}

/// A run of readings between steps.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// The tightest reading, as of the latest.
    reference: Reading,
    /// The tightest reading outright (what is reported).
    fastest: Reading,
    readings: u64,
    stretches: Stretches,
}

impl Segment {
    fn new(r: Reading) -> Self {
        let mut stretches = Stretches::new(r.at_ns);
        stretches.add(r);
        Self {
            reference: r,
            fastest: r,
            readings: 1,
            stretches,
        }
    }

    fn add(&mut self, r: Reading) {
        self.reference = self.reference.tighter(r, r.at_ns);
        if r.half < self.fastest.half {
            self.fastest = r;
        }
        self.readings += 1;
        self.stretches.add(r);
    }
}

/// Tracks the offset over a run. Allocates nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct OffsetTrack {
    first_ns: Option<u64>,
    segment: Option<Segment>,
    candidate: Option<Reading>,
    steps: [Option<StepFigures>; MAX_STEPS],
    step_count: u64,
    outliers: u64,
    out_of_order: u64,
}

impl OffsetTrack {
    /// One exchange at `at_ns` (the run's clock) with its forward and
    /// backward delays between one set of cut points.
    pub fn add(&mut self, at_ns: u64, forward: i64, backward: i64) {
        let Some(r) = Reading::of(at_ns, forward, backward) else {
            self.out_of_order += 1;
            return;
        };
        self.first_ns.get_or_insert(at_ns);
        let Some(seg) = self.segment.as_mut() else {
            self.segment = Some(Segment::new(r));
            return;
        };
        let with_reference = seg.reference.agrees(&r);
        match self.candidate {
            None if with_reference => seg.add(r),
            None => self.candidate = Some(r),
            Some(c) => {
                let with_candidate = c.agrees(&r);
                match (with_reference, with_candidate) {
                    (true, false) => {
                        self.outliers += 1;
                        self.candidate = None;
                        seg.add(r);
                    }
                    (false, true) => self.step(c, r),
                    // Too wide to tell: wait for a tighter one.
                    (true, true) => {}
                    (false, false) => {
                        self.outliers += 1;
                        self.candidate = Some(r);
                    }
                }
            }
        }
    }

    /// The candidate `c` is confirmed by `r`: a new segment.
    fn step(&mut self, c: Reading, r: Reading) {
        let first = self.first_ns.unwrap_or(c.at_ns);
        if let Some(old) = self.segment {
            let at = c.at_ns;
            let step = StepFigures {
                at_s: at.saturating_sub(first) as f64 / 1e9,
                from_ns: old.reference.theta,
                from_bound_ns: old.reference.half_at(at).ceil() as u64,
                to_ns: c.theta,
                to_bound_ns: c.half,
            };
            if let Some(slot) = self.steps.get_mut(self.step_count as usize) {
                *slot = Some(step);
            }
            self.step_count += 1;
        }
        let mut seg = Segment::new(c);
        seg.add(r);
        self.segment = Some(seg);
        self.candidate = None;
    }

    /// Adds a later run's readings: they continue this track.
    pub fn merge(&mut self, other: &OffsetTrack) {
        if other.segment.is_some() && self.segment.is_none() {
            *self = *other;
        }
        self.out_of_order += other.out_of_order;
    }

    /// What the track says, once it has a reading.
    pub fn figures(&self) -> Option<OffsetFigures> {
        let seg = self.segment?;
        let first = self.first_ns.unwrap_or(0);
        Some(OffsetFigures {
            offset_ns: seg.fastest.theta,
            bound_ns: seg.fastest.half,
            at_s: seg.fastest.at_ns.saturating_sub(first) as f64 / 1e9,
            readings: seg.readings,
            drift: seg.stretches.drift(),
            steps: self.steps.iter().flatten().copied().collect(),
            more_steps: self.step_count.saturating_sub(MAX_STEPS as u64),
            outliers: self.outliers,
            out_of_order: self.out_of_order,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// An exchange at `at` with the reflector `offset` ahead, 50 µs each
    /// way plus `queued` on the way out.
    fn exchange(t: &mut OffsetTrack, at: u64, offset: i64, queued: i64) {
        t.add(at, 50_000 + offset + queued, 50_000 - offset);
    }

    #[test]
    fn the_offset_is_the_tightest_readings_and_its_bound_half_its_round_trip() {
        let mut t = OffsetTrack::default();
        for i in 0..100u64 {
            let queued = if i == 40 {
                0
            } else {
                10_000 + (i as i64 * 37) % 50_000
            };
            exchange(&mut t, i * 10 * MS, 2_000_000, queued);
        }
        let f = t.figures().unwrap();
        assert_eq!((f.offset_ns, f.bound_ns), (2_000_000, 50_000));
        assert!((f.at_s - 0.4).abs() < 1e-9, "{}", f.at_s);
        assert!(f.steps.is_empty() && f.outliers == 0);
        // Every reading's interval holds the truth, however lopsided.
        assert!(f.offset_ns.abs_diff(2_000_000) <= f.bound_ns);
    }

    #[test]
    fn a_drift_is_claimed_only_when_its_interval_excludes_zero() {
        let mut t = OffsetTrack::default();
        // The reflector gains 50 µs a second (50 ppm) over 20 s; 5 µs
        // each way, so each reading is within 5 µs.
        for i in 0..2_000u64 {
            let (queued, offset) = ((i as i64 * 7_919) % 3_000, 1_000 + i as i64 * 500);
            t.add(i * 10 * MS, 5_000 + offset + queued, 5_000 - offset);
        }
        let d = t.figures().unwrap().drift.unwrap();
        assert!((d.ppm - 50.0).abs() <= d.interval_ppm + 0.01, "{d:?}");
        assert!(d.resolved && d.interval_ppm < 1.0, "{d:?}");
        let mut flat = OffsetTrack::default();
        for i in 0..2_000u64 {
            let queued = (i as i64 * 7_919) % 3_000;
            flat.add(i * 10 * MS, 5_000 + queued, 5_000);
        }
        let d = flat.figures().unwrap().drift.unwrap();
        assert!(d.ppm.abs() <= d.interval_ppm, "{d:?}");
        assert!(!d.resolved, "one clock: no drift claimed ({d:?})");
        // The readings' bounds widen the interval however well they line
        // up: ± 5 µs over 20 s can tilt a line by ~0.75 ppm.
        assert!(d.interval_ppm > 0.5, "{d:?}");
    }

    #[test]
    fn a_step_starts_a_new_segment_and_an_outlier_does_not() {
        let mut t = OffsetTrack::default();
        for i in 0..1_000u64 {
            let offset = if i < 500 { 0 } else { -40_000_000 };
            // One reading of a wrong offset at 200: dismissed.
            let offset = if i == 200 { 7_000_000 } else { offset };
            exchange(&mut t, i * 10 * MS, offset, (i as i64 * 31) % 2_000);
        }
        let f = t.figures().unwrap();
        assert_eq!(f.outliers, 1, "{f:?}");
        assert_eq!(f.steps.len(), 1, "{f:?}");
        let s = f.steps[0];
        assert!((s.at_s - 5.0).abs() < 1e-9, "{s:?}");
        assert!(s.from_ns.abs_diff(0) <= s.from_bound_ns, "{s:?}");
        assert!(s.to_ns.abs_diff(-40_000_000) <= s.to_bound_ns, "{s:?}");
        assert!(f.offset_ns.abs_diff(-40_000_000) <= f.bound_ns);
        assert_eq!(f.readings, 500, "the new segment's");
        assert!(!f.drift.unwrap().resolved);
    }

    #[test]
    fn stamps_out_of_order_are_counted_not_read() {
        let mut t = OffsetTrack::default();
        t.add(0, -60_000, 50_000);
        assert_eq!(t.figures(), None);
        t.add(1, 60_000, 50_000);
        assert_eq!(t.figures().unwrap().out_of_order, 1);
    }
}
