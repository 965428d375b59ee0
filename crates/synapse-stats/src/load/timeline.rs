//! A load run over time, in short bins: each bin's phase, its probes'
//! median and slowest round trip, and how many were lost, for the JSON
//! report and `synapse plot` (latency over time, coloured by phase).

use super::phase::{PhaseKind, PhaseRecord};
use super::probe::Probe;
use serde::Serialize;

/// A bin's length: a quarter of a second.
pub const BIN_NS: u64 = 250_000_000;

/// One bin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bin {
    /// Its start, seconds since the run's start.
    pub t_s: f64,
    /// The phase it lies in (the one its first probe left in).
    pub phase: PhaseKind,
    /// Its answered probes' median round trip, ns.
    pub p50_ns: Option<u64>,
    /// Their slowest, ns.
    pub max_ns: Option<u64>,
    /// Probes sent in it.
    pub sent: u32,
    /// Of those, without a timely reply.
    pub lost: u32,
}

/// The run's probes (in the order they left) in bins from `origin_ns`.
pub fn bins(probes: &[Probe], phases: &[PhaseRecord], origin_ns: u64) -> Vec<Bin> {
    let phase_of = |t: u64| {
        phases
            .iter()
            .find(|p| p.holds(t))
            .map_or(PhaseKind::Idle, |p| p.kind)
    };
    let mut out: Vec<Bin> = Vec::new();
    let mut rtts: Vec<u64> = Vec::new();
    let close = |bin: &mut Bin, rtts: &mut Vec<u64>| {
        rtts.sort_unstable();
        bin.p50_ns = (!rtts.is_empty()).then(|| rtts[(rtts.len() - 1) / 2]);
        bin.max_ns = rtts.last().copied();
        rtts.clear();
    };
    for p in probes.iter().filter(|p| p.at_ns >= origin_ns) {
        let k = (p.at_ns - origin_ns) / BIN_NS;
        let t_s = (k * BIN_NS) as f64 / 1e9;
        if out.last().is_none_or(|b| b.t_s != t_s) {
            if let Some(last) = out.last_mut() {
                close(last, &mut rtts);
            }
            out.push(Bin {
                t_s,
                phase: phase_of(p.at_ns),
                p50_ns: None,
                max_ns: None,
                sent: 0,
                lost: 0,
            });
        }
        if let Some(b) = out.last_mut() {
            b.sent += 1;
            match p.rtt_ns {
                Some(r) => rtts.push(r),
                None => b.lost += 1,
            }
        }
    }
    if let Some(last) = out.last_mut() {
        close(last, &mut rtts);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_fall_in_their_bins_with_their_phase() {
        let ms = 1_000_000;
        let probes: Vec<Probe> = (0..100u64)
            .map(|i| {
                let t = 1_000 * ms + i * 10 * ms;
                if i % 10 == 9 {
                    Probe::lost(t)
                } else {
                    Probe::answered(t, (i + 1) * ms)
                }
            })
            .collect();
        let phases = [
            PhaseRecord::new(PhaseKind::Idle, 1_000 * ms, 1_500 * ms),
            PhaseRecord::new(PhaseKind::Upload, 1_500 * ms, 2_000 * ms),
        ];
        let b = bins(&probes, &phases, 1_000 * ms);
        assert_eq!(b.len(), 4);
        assert_eq!(b.iter().map(|x| x.sent).sum::<u32>(), 100);
        assert_eq!(b.iter().map(|x| x.lost).sum::<u32>(), 10);
        assert_eq!((b[0].t_s, b[0].phase), (0.0, PhaseKind::Idle));
        assert_eq!(b[2].phase, PhaseKind::Upload);
        assert_eq!(b[0].max_ns, Some(25 * ms), "the 25th answered in bin 0");
    }
}
