//! The round-trip split as reports show it: where each point came from,
//! and p50/p99 per segment with the replies that lacked a stamp.

use serde::Serialize;
use synapse_engine::timestamping::phc_map::NicClockFigures;
use synapse_engine::{ClientOutcome, StampingInfo, capabilities::Source};
use synapse_stats::{Segment, SegmentFigures};

/// One point in time and the clock that stamped it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PointSource {
    /// `T1 user`, `T1 sched`, …
    pub point: &'static str,
    /// Who stamped it, or `not measured`.
    pub source: &'static str,
}

/// The `breakdown` section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakdownReport {
    /// The client's timestamp source.
    pub timestamps: &'static str,
    /// The interface packets left by.
    pub interface: Option<String>,
    /// Why the source differs from the one asked for.
    pub note: Option<String>,
    /// `stamp` or `echo`.
    pub protocol: &'static str,
    /// Each point and its source.
    pub points: Vec<PointSource>,
    /// Per-segment figures.
    pub segments: Vec<SegmentFigures>,
    /// TX stamps that arrived after their packet was settled.
    pub stale_tx_stamps: u64,
    /// TX stamps were asked for on one packet in this many, and the split
    /// comes from those packets (1: every packet).
    pub tx_stamp_every: u32,
    /// The mean RTT of the packets the split comes from: the segments'
    /// means add up to it (with sampling, next to every packet's mean it
    /// shows what being stamped cost).
    pub split_packets_rtt_mean_ns: Option<f64>,
    /// Hardware stamps: how the NIC's clock was read against the system
    /// clock (the reading's window, steps, stamps not placed).
    pub nic_clock: Option<NicClockFigures>,
}

const USER: &str = "user space (CLOCK_REALTIME)";
const KERNEL: &str = "kernel software (CLOCK_REALTIME)";
const NIC: &str = "NIC hardware clock (PHC)";
const REFLECTOR: &str = "reflector (STAMP, its own clock)";
const FOLLOW_UP: &str = "reflector kernel, sent (Follow-Up Telemetry, its own clock)";
const FOLLOW_UP_NIC: &str =
    "reflector NIC, sent (Follow-Up Telemetry, hardware: its NIC's stamp on its own clock)";
const WIRE: &str = "NIC hardware clock (PHC), read against the system clock";
const ABSENT: &str = "not measured";

/// Which clock stamps each point, given how the run stamped.
pub fn point_sources(info: &StampingInfo) -> Vec<PointSource> {
    let kernel = info.source != Source::User;
    let hardware = info.source == Source::Hardware;
    let pick = |on: bool, what: &'static str| if on { what } else { ABSENT };
    let realtime = kernel || info.stamp;
    [
        ("T1 user", pick(realtime, USER)),
        ("T1 sched", pick(kernel, KERNEL)),
        ("T1 driver", pick(kernel, KERNEL)),
        (
            "T1 hw",
            pick(
                hardware,
                if info.segments.contains(Segment::ToWire) {
                    WIRE
                } else {
                    NIC
                },
            ),
        ),
        ("T2", pick(info.stamp, REFLECTOR)),
        (
            "T3",
            pick(
                info.stamp,
                match (info.follow_up, info.follow_up_hardware) {
                    (true, true) => FOLLOW_UP_NIC,
                    (true, false) => FOLLOW_UP,
                    _ => REFLECTOR,
                },
            ),
        ),
        ("T4 hw", pick(hardware, NIC)),
        ("T4 driver", pick(kernel, KERNEL)),
        ("T4 user", pick(realtime, USER)),
    ]
    .into_iter()
    .map(|(point, source)| PointSource { point, source })
    .collect()
}

impl BreakdownReport {
    /// The section for a finished run; `None` when nothing was split.
    pub fn from_outcome(outcome: &ClientOutcome) -> Option<Self> {
        let b = outcome.stats.breakdown()?;
        // Follow-Ups that came from the reflector's NIC end the dwell at
        // the wire, on the reflector's NIC.
        let nic_follow_ups = outcome
            .extensions
            .as_ref()
            .and_then(|e| e.follow_up.as_ref())
            .is_some_and(|f| f.hardware > 0);
        let info = &StampingInfo {
            follow_up_hardware: nic_follow_ups,
            ..outcome.stamping.clone()
        };
        let mut segments = b.figures();
        for s in segments
            .iter_mut()
            .filter(|s| s.segment == Segment::Dwell.key())
        {
            s.hardware = nic_follow_ups;
        }
        Some(Self {
            timestamps: info.source.name(),
            interface: info.interface.clone(),
            note: info.note.clone(),
            protocol: if info.stamp { "stamp" } else { "echo" },
            points: point_sources(info),
            segments,
            stale_tx_stamps: outcome.stale_stamps,
            tx_stamp_every: info.tx_every,
            split_packets_rtt_mean_ns: b.rtt_mean_ns(),
            nic_clock: outcome.nic_clock,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::SegmentSet;

    fn info(source: Source, stamp: bool) -> StampingInfo {
        StampingInfo {
            source,
            interface: Some("lo".into()),
            note: None,
            hardware_enabled_here: false,
            stamp,
            segments: SegmentSet::for_run(source != Source::User, stamp, false),
            tx_every: 1,
            follow_up: false,
            follow_up_hardware: false,
        }
    }

    fn source_of(points: &[PointSource], point: &str) -> &'static str {
        points.iter().find(|p| p.point == point).unwrap().source
    }

    #[test]
    fn software_echo_has_kernel_points_and_no_reflector_or_nic() {
        let p = point_sources(&info(Source::Software, false));
        assert_eq!(source_of(&p, "T1 driver"), KERNEL);
        assert_eq!(source_of(&p, "T4 user"), USER);
        assert_eq!(source_of(&p, "T2"), ABSENT);
        assert_eq!(source_of(&p, "T1 hw"), ABSENT);
    }

    #[test]
    fn user_space_stamp_has_only_the_reflector_and_user_points() {
        let p = point_sources(&info(Source::User, true));
        assert_eq!(source_of(&p, "T3"), REFLECTOR);
        assert_eq!(source_of(&p, "T1 user"), USER);
        assert_eq!(source_of(&p, "T4 driver"), ABSENT);
    }

    #[test]
    fn hardware_adds_nic_points() {
        let p = point_sources(&info(Source::Hardware, false));
        assert_eq!(source_of(&p, "T4 hw"), NIC);
        assert_eq!(source_of(&p, "T4 driver"), KERNEL, "software points stay");
    }
}
