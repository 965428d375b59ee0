//! Where the added delay sits: each stage's mean inflation (a loaded
//! phase's mean less its idle baseline), and each one's share of their
//! sum. Means, because means add up (the stages' means sum to the round
//! trip's); percentiles do not, so a stage's p99 says nothing of its
//! share of the round trip's.

use super::clock::{baseline, mean_at};
use super::phase::PhaseRecord;
use super::probe::{Probe, Stage};

/// The stages a phase's split shows: forward and backward when the
/// probes carry both and no clock step falls in the phase's span, else
/// their sum (`network`), which no clock offset enters; the rest when
/// measured.
pub fn shown(probes: &[Probe], phase: &PhaseRecord, stepped: bool) -> Vec<Stage> {
    let has = |s: Stage| {
        probes
            .iter()
            .any(|p| phase.measures(p.at_ns) && p.stage(s).is_some())
    };
    let legs = !stepped && has(Stage::Forward) && has(Stage::Backward);
    Stage::ALL
        .into_iter()
        .filter(|&s| match s {
            Stage::Forward | Stage::Backward => legs,
            Stage::Network => !legs && has(Stage::Network),
            _ => has(s),
        })
        .collect()
}

/// Each shown stage's mean inflation over `loaded`, against the idle
/// phases `before` and `after` (the line between them, at the loaded
/// phase's middle: a drifting clock is followed). A stage the idle phases
/// never measured is left out.
pub fn inflation(
    probes: &[Probe],
    loaded: &PhaseRecord,
    before: Option<&PhaseRecord>,
    after: Option<&PhaseRecord>,
    stages: &[Stage],
) -> Vec<(Stage, f64)> {
    stages
        .iter()
        .filter_map(|&s| {
            let (mid, mean) = mean_at(probes, loaded, s)?;
            let b = before.and_then(|p| mean_at(probes, p, s));
            let a = after.and_then(|p| mean_at(probes, p, s));
            Some((s, mean - baseline(b, a, mid)?))
        })
        .collect()
}

/// Each stage's share of the stages' summed inflation; none when the sum
/// is not above zero (nothing was added to share).
pub fn shares(inflation: &[(Stage, f64)]) -> Vec<(Stage, f64)> {
    let total: f64 = inflation.iter().map(|(_, v)| v).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    inflation.iter().map(|&(s, v)| (s, v / total)).collect()
}

/// The stage holding most of the added delay, and its share.
pub fn dominant(shares: &[(Stage, f64)]) -> Option<(Stage, f64)> {
    shares.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::phase::PhaseKind;

    /// A probe at `t` with these stages, µs.
    fn probe(t: u64, send: i64, queue: i64, fwd: i64, far: i64, back: i64, recv: i64) -> Probe {
        let us = |v: i64| Some(v * 1_000);
        Probe::answered(t, ((send + queue + fwd + far + back + recv) * 1_000) as u64)
            .with(Stage::SendPath, us(send))
            .with(Stage::SendQueue, us(queue))
            .with(Stage::Forward, us(fwd))
            .with(Stage::FarSide, us(far))
            .with(Stage::Backward, us(back))
            .with(Stage::ReceivePath, us(recv))
    }

    #[test]
    fn a_download_queue_is_on_the_way_back() {
        let mut all: Vec<Probe> = (0..100).map(|t| probe(t, 5, 1, 300, 20, 300, 10)).collect();
        all.extend((100..200).map(|t| probe(t, 6, 1, 301, 22, 90_300, 12)));
        all.extend((200..300).map(|t| probe(t, 5, 1, 300, 20, 300, 10)));
        let idle0 = PhaseRecord::new(PhaseKind::Idle, 0, 100);
        let load = PhaseRecord::new(PhaseKind::Download, 100, 200);
        let idle1 = PhaseRecord::new(PhaseKind::Idle, 200, 300);
        let shown = shown(&all, &load, false);
        assert!(!shown.contains(&Stage::Network), "{shown:?}");
        let infl = inflation(&all, &load, Some(&idle0), Some(&idle1), &shown);
        let get = |s| infl.iter().find(|x| x.0 == s).unwrap().1;
        assert_eq!(get(Stage::Backward), 90_000_000.0);
        assert_eq!(get(Stage::SendQueue), 0.0);
        let sum: f64 = infl.iter().map(|x| x.1).sum();
        assert_eq!(sum, 90_006_000.0, "the means add up to the round trip's");
        let sh = shares(&infl);
        let (stage, share) = dominant(&sh).unwrap();
        assert_eq!(stage, Stage::Backward);
        assert!(share > 0.999, "{share}");
    }

    #[test]
    fn a_step_shows_the_sum_of_the_legs_and_echo_shows_the_network() {
        let all: Vec<Probe> = (0..10)
            .map(|t| probe(t, 1, 1, 1, 1, 1, 1).with(Stage::Network, Some(3_000)))
            .collect();
        let phase = PhaseRecord::new(PhaseKind::Upload, 0, 10);
        let s = shown(&all, &phase, true);
        assert!(
            s.contains(&Stage::Network) && !s.contains(&Stage::Forward),
            "{s:?}"
        );
        let echo: Vec<Probe> = (0..10)
            .map(|t| Probe::answered(t, 9).with(Stage::Network, Some(9)))
            .collect();
        assert_eq!(shown(&echo, &phase, false), vec![Stage::Network]);
        assert!(
            shares(&[(Stage::Network, -1.0)]).is_empty(),
            "nothing added"
        );
    }
}
