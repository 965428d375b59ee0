//! A load run's report part: its phases' figures (the JSON `load`
//! object), where the added delay sits in a sentence, and the verdict's
//! `--max-inflation` and `--min-rpm` criteria.

use super::verdict::{Criterion, Held};
use crate::plan::LoadSettings;
use crate::session::LoadOutcome;
use serde::Serialize;
use synapse_stats::load::clock::ClockFigures;
use synapse_stats::load::timeline::{self, Bin};
use synapse_stats::load::{PhaseFigures, Stage};
use synapse_units::{format_bps, format_ns, signed_ns};

/// A load run, as its report reads it.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// What the session came to.
    pub outcome: LoadOutcome,
    /// The run in quarter-second bins.
    pub timeline: Vec<Bin>,
}

/// The JSON `load` object.
#[derive(Debug, Serialize)]
pub struct LoadJson<'a> {
    /// Every phase, idle ones included, in order.
    phases: &'a [PhaseFigures],
    /// The loaded phase with the largest p50 inflation.
    worst: Option<&'static str>,
    /// Where the worst phase's added delay sits, in a sentence.
    #[serde(rename = "where")]
    where_: Option<String>,
    /// The two clocks: drift from the idle phases, steps.
    clock: &'a ClockFigures,
    /// What the reflector's load server granted.
    reflector: Reflector<'a>,
    /// What broke the load off, if something did.
    failure: Option<&'a str>,
    /// The run in quarter-second bins: phase, median and slowest round
    /// trip, probes sent and lost.
    timeline: &'a [Bin],
    /// The load over time: each loaded phase's intervals (a second each),
    /// their goodput each way and streams.
    throughput: Vec<Throughput>,
}

/// One interval of the load, as the JSON's `throughput` lists it.
#[derive(Debug, Serialize)]
struct Throughput {
    /// Its end, seconds since the run's start.
    t_s: f64,
    phase: &'static str,
    #[serde(flatten)]
    goodput_bps: synapse_stats::load::Goodput,
    streams_down: u32,
    streams_up: u32,
}

#[derive(Debug, Serialize)]
struct Reflector<'a> {
    load_port: String,
    cc: &'a str,
    rate_bps: u64,
    seconds: u32,
    stamp_port: Option<u16>,
}

impl LoadReport {
    /// The report part of a load session's outcome.
    pub fn of(outcome: LoadOutcome) -> Self {
        let timeline = timeline::bins(&outcome.probes, &outcome.records, outcome.origin_ns);
        Self { outcome, timeline }
    }

    /// The figures.
    pub fn phases(&self) -> &[PhaseFigures] {
        &self.outcome.figures.phases
    }

    /// The JSON `load` object.
    pub fn json(&self) -> LoadJson<'_> {
        let f = &self.outcome.figures;
        let g = &self.outcome.grant;
        LoadJson {
            phases: &f.phases,
            worst: f.worst_phase().map(|p| p.name),
            where_: f.worst_phase().and_then(sentence),
            clock: &f.clock,
            reflector: Reflector {
                load_port: self.outcome.load_port.to_string(),
                cc: &g.cc,
                rate_bps: g.rate_bps,
                seconds: g.seconds,
                stamp_port: g.stamp,
            },
            failure: self.outcome.failure.as_deref(),
            timeline: &self.timeline,
            throughput: self.throughput(),
        }
    }

    fn throughput(&self) -> Vec<Throughput> {
        let origin = self.outcome.origin_ns;
        self.outcome
            .records
            .iter()
            .flat_map(|r| {
                r.intervals.iter().map(move |i| Throughput {
                    t_s: i.end_ns.saturating_sub(origin) as f64 / 1e9,
                    phase: r.kind.name(),
                    goodput_bps: i.goodput_bps,
                    streams_down: i.streams_down,
                    streams_up: i.streams_up,
                })
            })
            .collect()
    }

    /// The verdict's criteria: each loaded phase's p50 inflation against
    /// `--max-inflation`, its RPM against `--min-rpm`.
    pub fn criteria(&self, s: &LoadSettings) -> Vec<Criterion> {
        let loaded = || self.phases().iter().filter(|p| p.name != "idle");
        let mut out: Vec<Criterion> = Vec::new();
        if let Some(limit) = s.max_inflation {
            out.extend(loaded().map(|p| inflation_criterion(p, limit.as_nanos() as f64)));
        }
        if let Some(min) = s.min_rpm {
            out.extend(loaded().map(|p| rpm_criterion(p, min)));
        }
        out
    }
}

/// A phase's p50 inflation against a limit: FAIL beyond it, INCONCLUSIVE
/// when its interval spans it, PASS below (by the figure alone when no
/// interval could be had, and the criterion says so).
fn inflation_criterion(p: &PhaseFigures, limit: f64) -> Criterion {
    let f = p.inflation_ns.map(|i| i.p50());
    let value = f.map(|f| f.ns);
    let outcome = match f {
        None => Held::No,
        Some(f) => match (f.ci_low, f.ci_high) {
            (Some(lo), _) if lo > limit => Held::No,
            (_, Some(hi)) if hi <= limit => Held::Yes,
            (Some(_), Some(_)) => Held::Inconclusive,
            _ if f.ns <= limit => Held::Yes,
            _ => Held::No,
        },
    };
    let shown = match f {
        None => "no figure (no answered probe on one side)".to_string(),
        Some(f) => match (f.ci_low, f.ci_high) {
            (Some(lo), Some(hi)) => format!(
                "{} [{} to {}]",
                signed_ns(f.ns),
                signed_ns(lo),
                signed_ns(hi)
            ),
            _ => format!("{} (no interval: too few probes)", signed_ns(f.ns)),
        },
    };
    let relation = match outcome {
        Held::Yes => "within",
        Held::No => "beyond",
        Held::Inconclusive => "its 95 % interval spans",
    };
    let mut c = Criterion::plain(
        &format!("{} p50 inflation", p.name),
        limit,
        value,
        "ns",
        outcome == Held::Yes,
    );
    c.outcome = outcome;
    c.detail = Some(format!(
        "{} p50 inflation {shown}, {relation} {} (--max-inflation)",
        p.name,
        format_ns(limit)
    ));
    c
}

/// A phase's RPM against a floor.
fn rpm_criterion(p: &PhaseFigures, min: f64) -> Criterion {
    let held = p.rpm.is_some_and(|r| r >= min);
    let mut c = Criterion::plain(&format!("{} RPM", p.name), min, p.rpm, "rpm", held);
    c.detail = Some(match p.rpm {
        Some(r) => format!(
            "{} {r:.0} round trips per minute (probe-based), {} {min:.0} (--min-rpm)",
            p.name,
            if held { "at least" } else { "fewer than" }
        ),
        None => format!(
            "{} RPM: no answered probe, so not at least {min:.0}",
            p.name
        ),
    });
    c
}

/// Where a phase's added delay sits, in a sentence: the stage holding
/// most of it (or the two that do), what a queue there means, and what
/// that stage does not cover. `None` when nothing was added.
pub fn sentence(p: &PhaseFigures) -> Option<String> {
    let infl = p.inflation_ns?.p50();
    // An inflation within its interval of zero is no added delay.
    if infl.ci_low.is_some_and(|lo| lo <= 0.0) || infl.ns <= 0.0 {
        return None;
    }
    let (top, share) = p.dominant()?;
    let pct = |x: f64| (x * 100.0).round();
    let mut s = if share >= 0.5 {
        format!(
            "{:.0} % of the added delay is {}: {}",
            pct(share),
            top.place(),
            top.meaning()
        )
    } else {
        let mut by: Vec<(Stage, f64)> = p.stage_share.clone();
        by.sort_by(|a, b| b.1.total_cmp(&a.1));
        let parts: Vec<String> = by
            .iter()
            .take(2)
            .map(|(st, sh)| format!("{:.0} % {}", pct(*sh), st.place()))
            .collect();
        format!("the added delay is spread: {}", parts.join(", "))
    };
    if !top.blind_spot().is_empty() {
        s.push_str(&format!(
            " ({} does not cover everything: {})",
            top.key(),
            top.blind_spot()
        ));
    }
    Some(s)
}

/// A phase's goodput, each way it was loaded.
pub fn goodput_text(p: &PhaseFigures) -> String {
    let g = &p.goodput_bps;
    let parts: Vec<String> = [(g.down, "↓"), (g.up, "↑")]
        .into_iter()
        .filter_map(|(v, arrow)| v.map(|v| format!("{arrow} {}", format_bps(v))))
        .collect();
    if parts.is_empty() {
        "—".into()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::load::figures::Percentiles;
    use synapse_stats::load::figures::{PhaseLoss, PhaseRetransmits};
    use synapse_stats::load::inflation::Figure;
    use synapse_stats::load::phase::{Goodput, PhaseEnd};

    fn fig(ns: f64, lo: f64, hi: f64) -> Figure {
        Figure {
            ns,
            ci_low: Some(lo),
            ci_high: Some(hi),
            resolved: true,
        }
    }

    fn phase(p50: Figure, shares: Vec<(Stage, f64)>) -> PhaseFigures {
        PhaseFigures {
            name: "download",
            start_s: 3.0,
            duration_s: 10.0,
            measured_s: 5.0,
            rtt_ns: None,
            rtt_intervals_ns: None,
            inflation_ns: Some(Percentiles([p50, p50, p50])),
            goodput_bps: Goodput {
                down: Some(9.5e6),
                up: None,
            },
            stage_inflation_ns: shares.iter().map(|&(s, x)| (s, x * 1e8)).collect(),
            stage_share: shares,
            rpm: Some(600.0),
            responsiveness: None,
            loss: PhaseLoss::default(),
            streams: Some((4, 0)),
            retransmits: PhaseRetransmits::default(),
            confidence: None,
            cc: None,
            clock_step: false,
            end: PhaseEnd::Stable,
        }
    }

    #[test]
    fn the_sentence_names_the_stage_and_what_it_means() {
        let p = phase(
            fig(98e6, 95e6, 101e6),
            vec![(Stage::Backward, 0.92), (Stage::Forward, 0.08)],
        );
        let s = sentence(&p).unwrap();
        assert!(
            s.starts_with("92 % of the added delay is on the way back from the reflector: a queue in the download direction"),
            "{s}"
        );
        let q = phase(fig(98e6, 95e6, 101e6), vec![(Stage::SendQueue, 0.97)]);
        assert!(
            sentence(&q)
                .unwrap()
                .contains("in this host's own queue discipline")
        );
        let spread = phase(
            fig(98e6, 95e6, 101e6),
            vec![
                (Stage::Backward, 0.45),
                (Stage::Forward, 0.4),
                (Stage::FarSide, 0.15),
            ],
        );
        assert!(
            sentence(&spread)
                .unwrap()
                .starts_with("the added delay is spread: 45 % on the way back")
        );
        let none = phase(fig(1e5, -2e5, 4e5), vec![(Stage::Backward, 1.0)]);
        assert_eq!(sentence(&none), None, "an interval of zero adds nothing");
    }

    #[test]
    fn max_inflation_fails_beyond_passes_within_and_is_inconclusive_across() {
        let judge = |f| inflation_criterion(&phase(f, vec![]), 30e6).outcome;
        assert_eq!(judge(fig(98e6, 95e6, 101e6)), Held::No);
        assert_eq!(judge(fig(10e6, 8e6, 12e6)), Held::Yes);
        assert_eq!(judge(fig(29e6, 20e6, 40e6)), Held::Inconclusive);
        let bare = Figure {
            ns: 40e6,
            ci_low: None,
            ci_high: None,
            resolved: false,
        };
        assert_eq!(judge(bare), Held::No, "no interval: the figure judges");
        let c = inflation_criterion(&phase(fig(98e6, 95e6, 101e6), vec![]), 30e6);
        assert!(c.describe().contains("beyond 30.00 ms"), "{}", c.describe());
        let r = rpm_criterion(&phase(fig(1.0, 0.0, 2.0), vec![]), 1000.0);
        assert!(!r.held && r.describe().contains("fewer than 1000"));
    }
}
