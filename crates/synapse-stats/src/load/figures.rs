//! A load run's figures, phase by phase: what a report prints and the
//! JSON `load` object holds.

use super::clock::{self, ClockFigures};
use super::inflation::{self, Figure};
use super::phase::{Confidence, Goodput, PhaseEnd, PhaseKind, PhaseRecord, Retransmits};
use super::probe::{Probe, Stage};
use super::rpm::Rpm;
use super::stages;
use crate::RttFigures;
use crate::intervals::empty_histogram;
use serde::{Serialize, Serializer};

/// p50, p90 and p99 with their 95 % intervals, as the JSON names them:
/// `p50`, `p50_ci_low`, `p50_ci_high`, … (an interval is `null` when the
/// probes cannot give one), and which are resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles(pub inflation::Figures);

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(12))?;
        for ((name, _), f) in inflation::QUANTILES.iter().zip(&self.0) {
            m.serialize_entry(name, &f.ns.round())?;
            m.serialize_entry(&format!("{name}_ci_low"), &f.ci_low.map(f64::round))?;
            m.serialize_entry(&format!("{name}_ci_high"), &f.ci_high.map(f64::round))?;
            m.serialize_entry(&format!("{name}_resolved"), &f.resolved)?;
        }
        m.end()
    }
}

impl Percentiles {
    /// The p50's figure.
    pub fn p50(&self) -> Figure {
        self.0[0]
    }
}

/// Probes of a phase and where the lost ones were lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PhaseLoss {
    /// Probes sent in the measured part.
    pub sent: u64,
    /// Of those, without a timely reply.
    pub lost: u64,
    /// Lost on the way to the reflector (STAMP: its numbering shows it
    /// never saw them).
    pub forward: u64,
    /// Lost on the way back (it saw them and answered).
    pub backward: u64,
    /// Lost where the numbering cannot tell (plain echo, the ends).
    pub unknown: u64,
}

/// The draft's confidence in a phase's goodput and latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PhaseConfidence {
    /// In the goodput.
    pub goodput: Confidence,
    /// In the latency.
    pub latency: Confidence,
}

/// Resends, each way, from the sending side's TCP_INFO.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PhaseRetransmits {
    /// The reflector's senders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down: Option<Retransmits>,
    /// The client's senders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up: Option<Retransmits>,
}

/// One phase's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseFigures {
    /// `idle`, `download`, `upload` or `bidirectional`.
    pub name: &'static str,
    /// When it started, seconds into the run.
    pub start_s: f64,
    /// How long it ran.
    pub duration_s: f64,
    /// How long of it its figures rest on.
    pub measured_s: f64,
    /// The probes' round trip over the measured part, shaped as the run's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ns: Option<RttFigures>,
    /// Its p50, p90 and p99 with their 95 % intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_intervals_ns: Option<Percentiles>,
    /// Loaded less idle: p50, p90, p99 with 95 % intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflation_ns: Option<Percentiles>,
    /// Goodput each way.
    pub goodput_bps: Goodput,
    /// Each stage's mean inflation, ns; a stage not measured is absent.
    #[serde(serialize_with = "by_key")]
    pub stage_inflation_ns: Vec<(Stage, f64)>,
    /// Each stage's share of their summed inflation (0 to 1).
    #[serde(serialize_with = "by_key")]
    pub stage_share: Vec<(Stage, f64)>,
    /// Round trips per minute, probe-based (`responsiveness.rpm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// What the RPM is made of: the probes' and the load connections'
    /// trimmed means and rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub responsiveness: Option<Rpm>,
    /// The probes lost, and which way.
    pub loss: PhaseLoss,
    /// Load streams open at the end, each way.
    #[serde(
        serialize_with = "streams_object",
        skip_serializing_if = "Option::is_none"
    )]
    pub streams: Option<(u32, u32)>,
    /// Resends of the load, each way.
    pub retransmits: PhaseRetransmits,
    /// The draft's confidence (loaded phases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<PhaseConfidence>,
    /// The load's congestion control.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// A step of the reflector's clock falls in its span: forward and
    /// backward are not split.
    pub clock_step: bool,
    /// How it ended.
    pub end: PhaseEnd,
}

fn streams_object<S: Serializer>(v: &Option<(u32, u32)>, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let (down, up) = v.unwrap_or_default();
    let mut m = s.serialize_map(Some(2))?;
    m.serialize_entry("down", &down)?;
    m.serialize_entry("up", &up)?;
    m.end()
}

fn by_key<S: Serializer>(v: &[(Stage, f64)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (stage, x) in v {
        m.serialize_entry(stage.key(), x)?;
    }
    m.end()
}

/// The whole run's load figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadFigures {
    /// Every phase, in order, idle ones included.
    pub phases: Vec<PhaseFigures>,
    /// The two clocks: drift from the idle phases, steps.
    pub clock: ClockFigures,
    /// The loaded phase with the largest p50 inflation (an index into
    /// `phases`).
    pub worst: Option<usize>,
}

impl PhaseFigures {
    /// Its stage holding most of the added delay, and its share.
    pub fn dominant(&self) -> Option<(Stage, f64)> {
        stages::dominant(&self.stage_share)
    }
}

/// The probes' losses in `phase`, forward and back told apart by the
/// reflector's numbers on the replies either side of them.
fn loss(probes: &[Probe], phase: &PhaseRecord) -> PhaseLoss {
    let mine: Vec<&Probe> = probes.iter().filter(|p| phase.measures(p.at_ns)).collect();
    let mut out = PhaseLoss {
        sent: mine.len() as u64,
        lost: mine.iter().filter(|p| p.rtt_ns.is_none()).count() as u64,
        ..PhaseLoss::default()
    };
    let mut last: Option<u32> = None;
    let mut gap = 0u64;
    for p in &mine {
        match (p.rtt_ns, p.reflector_seq) {
            (None, _) => gap += 1,
            (Some(_), Some(r)) => {
                if let Some(prev) = last {
                    let seen = u64::from(r.saturating_sub(prev).saturating_sub(1)).min(gap);
                    out.backward += seen;
                    out.forward += gap - seen;
                } else {
                    out.unknown += gap;
                }
                last = Some(r);
                gap = 0;
            }
            (Some(_), None) => {
                out.unknown += gap;
                gap = 0;
            }
        }
    }
    out.unknown += gap;
    out
}

/// The round trips a phase measured, in order (`None`: lost).
fn rtts(probes: &[Probe], phase: &PhaseRecord) -> Vec<Option<u64>> {
    probes
        .iter()
        .filter(|p| phase.measures(p.at_ns))
        .map(|p| p.rtt_ns)
        .collect()
}

fn rtt_figures(rtts: &[Option<u64>]) -> Option<RttFigures> {
    let mut h = empty_histogram();
    for r in rtts.iter().flatten() {
        let _ = h.record((*r).clamp(1, crate::MAX_TRACKABLE_NS));
    }
    RttFigures::of(&h)
}

impl LoadFigures {
    /// The figures of a run: its probes, in the order they left, and its
    /// phases as they ran. `origin_ns` is the run's start on the probes'
    /// clock.
    pub fn of(probes: &[Probe], phases: &[PhaseRecord], origin_ns: u64) -> Self {
        let steps = clock::steps(probes);
        let drift_ppm = clock::drift_ppm(probes, phases, &steps);
        let figures: Vec<PhaseFigures> = (0..phases.len())
            .map(|i| phase_figures(probes, phases, i, &steps, origin_ns))
            .collect();
        let worst = figures
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((i, f.inflation_ns?.p50().ns)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i);
        Self {
            phases: figures,
            clock: ClockFigures { drift_ppm, steps },
            worst,
        }
    }

    /// The worst loaded phase.
    pub fn worst_phase(&self) -> Option<&PhaseFigures> {
        self.worst.and_then(|i| self.phases.get(i))
    }
}

/// The idle phases nearest phase `i`, before and after it.
fn neighbours(phases: &[PhaseRecord], i: usize) -> (Option<&PhaseRecord>, Option<&PhaseRecord>) {
    let idle = |p: &&PhaseRecord| p.kind == PhaseKind::Idle;
    (
        phases[..i].iter().rev().find(idle),
        phases[i + 1..].iter().find(idle),
    )
}

fn phase_figures(
    probes: &[Probe],
    phases: &[PhaseRecord],
    i: usize,
    steps: &[clock::ClockStep],
    origin_ns: u64,
) -> PhaseFigures {
    let p = &phases[i];
    let measured = rtts(probes, p);
    let answered: Vec<u64> = measured.iter().flatten().copied().collect();
    let (before, after) = neighbours(phases, i);
    let span = (
        before.map_or(p.start_ns, |b| b.start_ns),
        after.map_or(p.end_ns, |a| a.end_ns),
    );
    let stepped = p.kind.loaded() && clock::stepped(steps, span.0, span.1);
    let mut idle = before.map(|b| rtts(probes, b)).unwrap_or_default();
    idle.extend(after.map(|a| rtts(probes, a)).unwrap_or_default());
    let stage_inflation_ns = if p.kind.loaded() {
        let shown = stages::shown(probes, p, stepped);
        stages::inflation(probes, p, before, after, &shown)
    } else {
        Vec::new()
    };
    let secs = |ns: u64| ns as f64 / 1e9;
    let responsiveness = Rpm::of(&answered, &p.loaded_rtt_ns);
    PhaseFigures {
        name: p.kind.name(),
        start_s: secs(p.start_ns.saturating_sub(origin_ns)),
        duration_s: secs(p.end_ns.saturating_sub(p.start_ns)),
        measured_s: secs(p.end_ns.saturating_sub(p.measured_from_ns)),
        rtt_ns: rtt_figures(&measured),
        rtt_intervals_ns: inflation::percentiles(&measured).map(Percentiles),
        inflation_ns: p
            .kind
            .loaded()
            .then(|| inflation::inflation(&idle, &measured))
            .flatten()
            .map(Percentiles),
        goodput_bps: p.goodput_bps,
        stage_share: stages::shares(&stage_inflation_ns),
        stage_inflation_ns,
        rpm: responsiveness.map(|r| r.rpm.round()),
        responsiveness,
        loss: loss(probes, p),
        streams: p.intervals.last().map(|l| (l.streams_down, l.streams_up)),
        retransmits: PhaseRetransmits {
            down: p.retransmits_down,
            up: p.retransmits_up,
        },
        confidence: p
            .confidence
            .map(|(goodput, latency)| PhaseConfidence { goodput, latency }),
        cc: p.cc.clone(),
        clock_step: stepped,
        end: p.end.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn run() -> (Vec<Probe>, Vec<PhaseRecord>) {
        let mut probes = Vec::new();
        let mut t = 0;
        // 3 s idle at 1 ms, 3 s of download at +90 ms on the way back,
        // 3 s idle; a probe every 10 ms, every 50th lost on the way back.
        for (len, back) in [(300, 0), (300, 90 * MS), (300, 0)] {
            for k in 0..len {
                let seq = (t / (10 * MS)) as u32;
                let p = if k % 50 == 49 {
                    Probe::lost(t)
                } else {
                    Probe::answered(t, MS + back)
                        .with(Stage::Forward, Some((MS / 2) as i64))
                        .with(Stage::Backward, Some((MS / 2 + back) as i64))
                };
                probes.push(Probe {
                    reflector_seq: p.rtt_ns.map(|_| seq),
                    ..p
                });
                t += 10 * MS;
            }
        }
        let s = 3_000 * MS;
        let phases = vec![
            PhaseRecord::new(PhaseKind::Idle, 0, s),
            PhaseRecord::new(PhaseKind::Download, s, 2 * s),
            PhaseRecord::new(PhaseKind::Idle, 2 * s, 3 * s),
        ];
        (probes, phases)
    }

    #[test]
    fn a_download_phase_is_inflated_on_the_way_back_and_losses_are_placed() {
        let (probes, phases) = run();
        let f = LoadFigures::of(&probes, &phases, 0);
        assert_eq!(f.worst, Some(1));
        let d = &f.phases[1];
        assert_eq!(d.name, "download");
        let p50 = d.inflation_ns.unwrap().p50();
        assert!((p50.ns - 90e6).abs() < 0.5e6, "{p50:?}");
        assert_eq!(d.dominant().map(|x| x.0), Some(Stage::Backward));
        // The phase's last probe is lost with no reply after it in the
        // phase: which way is unknown.
        assert_eq!(
            d.loss,
            PhaseLoss {
                sent: 300,
                lost: 6,
                forward: 0,
                backward: 5,
                unknown: 1
            }
        );
        assert!(f.phases[0].inflation_ns.is_none(), "idle is the baseline");
        assert!(f.phases[0].stage_inflation_ns.is_empty());
        let rpm = d.responsiveness.unwrap();
        assert!((rpm.rpm - 60e9 / 91e6).abs() < 1.0, "{rpm:?}");
        assert_eq!(d.rpm, Some(rpm.rpm.round()));
        assert_eq!(f.clock.drift_ppm.map(f64::round), Some(0.0));
        assert!(f.clock.steps.is_empty());
    }

    #[test]
    fn the_json_names_each_figure_and_leaves_out_what_was_not_measured() {
        let (probes, phases) = run();
        let f = LoadFigures::of(&probes, &phases, 0);
        let j = serde_json::to_string(&f.phases[1]).unwrap();
        for key in [
            "\"inflation_ns\":{\"p50\":",
            "\"p50_ci_low\":",
            "\"p99_ci_high\":",
            "\"stage_inflation_ns\":{\"forward\":",
            "\"backward\":",
        ] {
            assert!(j.contains(key), "{key} in {j}");
        }
        assert!(!j.contains("send_queue"), "not measured, so absent: {j}");
    }
}
