//! The two clocks under a load run. The one-way stages (forward, back)
//! each hold the reflector's clock offset; in an inflation, loaded less
//! idle, a constant offset cancels. What does not cancel:
//!
//! - **Drift**: the offset moves between the idle phase and the loaded
//!   one. Each idle phase gives the offset at its middle (half of forward
//!   less back: the path's asymmetry is the same in every idle phase), so
//!   the drift is the slope through them, and each loaded phase's idle
//!   baseline is read off the line between the idle phases before and
//!   after it, at its own middle.
//! - **A step** (the reflector's clock set mid-run): found by the clock
//!   offset's own tracker ([`crate::clock_offset`]), from the same
//!   stamps. A loaded phase whose span (with its idle phases either side)
//!   holds a step gets no forward or backward figure: their sum, which no
//!   offset enters, stands for both (`network`).

use super::phase::{PhaseKind, PhaseRecord};
use super::probe::{Probe, Stage};
use crate::clock_offset::OffsetTrack;
use serde::Serialize;

/// A step of the reflector's clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClockStep {
    /// The first probe that showed it, ns on the probes' clock.
    pub at_ns: u64,
    /// How far the offset moved, ns (the reflector's clock less the
    /// client's, after less before).
    pub size_ns: i64,
    /// It is right within ± this, ns: the bounds of the readings either
    /// side (half their round trips less the dwell; a reading under load
    /// is wide).
    pub bound_ns: u64,
}

/// What the run knows of the two clocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockFigures {
    /// The reflector's clock gains this much on the client's, ppm, from
    /// the idle phases (`None`: fewer than two of them in one stretch
    /// without a step, or no one-way stamps).
    pub drift_ppm: Option<f64>,
    /// Steps of the reflector's clock, in order.
    pub steps: Vec<ClockStep>,
}

/// The mean of `stage` over the probes `phase` measures, and its
/// middle: `None` when no probe there has the stage.
pub fn mean_at(probes: &[Probe], phase: &PhaseRecord, stage: Stage) -> Option<(u64, f64)> {
    let (mut sum, mut n) = (0f64, 0u64);
    for p in probes.iter().filter(|p| phase.measures(p.at_ns)) {
        if let Some(v) = p.stage(stage) {
            sum += v as f64;
            n += 1;
        }
    }
    (n > 0).then(|| (phase.mid_ns(), sum / n as f64))
}

/// Steps in the probes' one-way pairs, in order.
pub fn steps(probes: &[Probe]) -> Vec<ClockStep> {
    let mut track = OffsetTrack::default();
    let mut first = None;
    for p in probes {
        if let Some((f, b)) = p.one_way() {
            first.get_or_insert(p.at_ns);
            track.add(p.at_ns, f, b);
        }
    }
    let (Some(first), Some(fig)) = (first, track.figures()) else {
        return Vec::new();
    };
    fig.steps
        .iter()
        .map(|s| ClockStep {
            at_ns: first + (s.at_s * 1e9) as u64,
            size_ns: s.to_ns - s.from_ns,
            bound_ns: s.from_bound_ns + s.to_bound_ns,
        })
        .collect()
}

/// Whether a step falls between `from_ns` and `to_ns`.
pub fn stepped(steps: &[ClockStep], from_ns: u64, to_ns: u64) -> bool {
    steps.iter().any(|s| s.at_ns >= from_ns && s.at_ns <= to_ns)
}

/// The idle phases' offsets (half of forward less back, at each one's
/// middle) and the least-squares slope through those of the last stretch
/// without a step, ppm.
pub fn drift_ppm(probes: &[Probe], phases: &[PhaseRecord], steps: &[ClockStep]) -> Option<f64> {
    let last_step = steps.iter().map(|s| s.at_ns).max();
    let points: Vec<(f64, f64)> = phases
        .iter()
        .filter(|p| p.kind == PhaseKind::Idle && last_step.is_none_or(|s| p.start_ns > s))
        .filter_map(|p| {
            let (t, f) = mean_at(probes, p, Stage::Forward)?;
            let (_, b) = mean_at(probes, p, Stage::Backward)?;
            Some((t as f64, (f - b) / 2.0))
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (mt, mo) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = points.iter().map(|p| (p.0 - mt).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mt) * (p.1 - mo)).sum();
    (sxx > 0.0).then(|| sxy / sxx * 1e6)
}

/// The idle baseline of `stage` at time `t_ns`: on the line between the
/// idle phase before and the one after (either alone when the other is
/// missing).
pub fn baseline(before: Option<(u64, f64)>, after: Option<(u64, f64)>, t_ns: u64) -> Option<f64> {
    match (before, after) {
        (Some((tb, vb)), Some((ta, va))) if ta > tb => {
            let w = (t_ns as f64 - tb as f64) / (ta as f64 - tb as f64);
            Some(vb + w * (va - vb))
        }
        (Some((_, v)), _) | (None, Some((_, v))) => Some(v),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// Probes every 10 ms from `from` to `to` with the reflector's clock
    /// `offset(t)` ahead, 1 ms each way plus `queued` on the way back.
    fn probes(from: u64, to: u64, offset: impl Fn(u64) -> i64, queued: i64) -> Vec<Probe> {
        (from..to)
            .step_by(10_000_000)
            .map(|t| {
                let o = offset(t);
                Probe::answered(t, 2_000_000 + queued as u64)
                    .with(Stage::Forward, Some(1_000_000 + o))
                    .with(Stage::Backward, Some(1_000_000 + queued - o))
            })
            .collect()
    }

    fn idle(from: u64, to: u64) -> PhaseRecord {
        PhaseRecord::new(PhaseKind::Idle, from, to)
    }

    #[test]
    fn drift_is_read_from_the_idle_phases_and_the_baseline_follows_it() {
        // 200 ppm: 200 µs a second.
        let drift = |t: u64| (t as f64 * 200e-6) as i64;
        let mut all = probes(0, 2 * S, drift, 0);
        all.extend(probes(2 * S, 6 * S, drift, 50_000_000));
        all.extend(probes(6 * S, 8 * S, drift, 0));
        let phases = [
            idle(0, 2 * S),
            PhaseRecord::new(PhaseKind::Download, 2 * S, 6 * S),
            idle(6 * S, 8 * S),
        ];
        let steps = steps(&all);
        assert!(steps.is_empty(), "a slew is no step: {steps:?}");
        let ppm = drift_ppm(&all, &phases, &steps).unwrap();
        assert!((ppm - 200.0).abs() < 1.0, "{ppm}");
        let before = mean_at(&all, &phases[0], Stage::Backward);
        let after = mean_at(&all, &phases[2], Stage::Backward);
        let loaded = mean_at(&all, &phases[1], Stage::Backward).unwrap();
        let base = baseline(before, after, loaded.0).unwrap();
        let inflation = loaded.1 - base;
        assert!((inflation - 50e6).abs() < 10_000.0, "{inflation}");
        // Against the idle phase before alone, the drift would read as
        // 0.6 ms less on the way back (3 s between their middles).
        assert!((loaded.1 - before.unwrap().1 - 49.4e6).abs() < 20_000.0);
    }

    #[test]
    fn a_step_is_found_and_placed() {
        let step = |t: u64| if t >= 5 * S { 40_000_000 } else { 0 };
        let all = probes(0, 8 * S, step, 0);
        let found = steps(&all);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].size_ns, 40_000_000);
        assert!(found[0].at_ns >= 5 * S && found[0].at_ns < 5 * S + 50_000_000);
        assert!(stepped(&found, 4 * S, 6 * S) && !stepped(&found, 0, 4 * S));
        let phases = [idle(0, 2 * S), idle(3 * S, 4 * S), idle(6 * S, 8 * S)];
        assert_eq!(drift_ppm(&all, &phases, &found), None, "one idle after it");
    }

    #[test]
    fn a_baseline_needs_one_side_at_least() {
        assert_eq!(baseline(Some((0, 1.0)), Some((10, 3.0)), 5), Some(2.0));
        assert_eq!(baseline(Some((0, 1.0)), None, 5), Some(1.0));
        assert_eq!(baseline(None, Some((10, 3.0)), 5), Some(3.0));
        assert_eq!(baseline(None, None, 5), None);
    }
}
