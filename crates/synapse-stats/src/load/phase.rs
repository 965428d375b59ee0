//! A load run's phases as they ran: what each loaded, when, which of its
//! probes its figures rest on, and how it ended.

use serde::Serialize;

/// What a phase does to the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseKind {
    /// No load: the baseline.
    Idle,
    /// The reflector sends.
    Download,
    /// The client sends.
    Upload,
    /// Both.
    Bidirectional,
}

/// One way of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// Reflector to client.
    Down,
    /// Client to reflector.
    Up,
}

impl PhaseKind {
    /// As in reports and the JSON `name`.
    pub fn name(self) -> &'static str {
        match self {
            PhaseKind::Idle => "idle",
            PhaseKind::Download => "download",
            PhaseKind::Upload => "upload",
            PhaseKind::Bidirectional => "bidirectional",
        }
    }

    /// The ways it loads.
    pub fn ways(self) -> &'static [Way] {
        match self {
            PhaseKind::Idle => &[],
            PhaseKind::Download => &[Way::Down],
            PhaseKind::Upload => &[Way::Up],
            PhaseKind::Bidirectional => &[Way::Down, Way::Up],
        }
    }

    /// Whether it loads the path.
    pub fn loaded(self) -> bool {
        self != PhaseKind::Idle
    }

    /// Whether its streams include `way`.
    pub fn carries(self, way: Way) -> bool {
        self.ways().contains(&way)
    }
}

impl Way {
    /// As on the wire and in reports: `down`, `up`.
    pub fn name(self) -> &'static str {
        match self {
            Way::Down => "down",
            Way::Up => "up",
        }
    }
}

impl std::str::FromStr for PhaseKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "download" => Ok(PhaseKind::Download),
            "upload" => Ok(PhaseKind::Upload),
            "bidirectional" => Ok(PhaseKind::Bidirectional),
            other => Err(format!(
                "'{other}' is not a load phase: download, upload or bidirectional"
            )),
        }
    }
}

/// The IETF draft's confidence in a stage's result (draft-ietf-ippm-
/// responsiveness, "Confidence of Test-Results").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Fewer than MAD intervals ran.
    Low,
    /// MAD intervals or more ran, but it never became stable.
    Medium,
    /// It became stable by the standard deviation tolerance.
    High,
}

impl Confidence {
    /// As in reports.
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// How a phase ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "how", content = "why")]
pub enum PhaseEnd {
    /// Its time was up (idle phases; fixed-length runs).
    Time,
    /// Goodput and latency both became stable (the IETF rule).
    Stable,
    /// `--load-phase` cut it short before both were stable.
    Cap,
    /// Stopped by Ctrl-C or a signal.
    Interrupted,
    /// A load connection failed (reset, closed), or the session did.
    Failed(String),
}

/// The load's figures over a phase (or an interval of it): goodput each
/// way, bits per second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Goodput {
    /// Reflector to client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down: Option<f64>,
    /// Client to reflector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up: Option<f64>,
}

/// Resends of a phase's senders (TCP_INFO of the sending side).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Retransmits {
    /// Segments resent.
    pub segments: u64,
    /// Bytes resent.
    pub bytes: u64,
}

/// One interval of a loaded phase, as the load saw it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadInterval {
    /// Its end, ns on the probes' clock.
    pub end_ns: u64,
    /// Goodput over it.
    pub goodput_bps: Goodput,
    /// Streams open at its end, each way.
    pub streams_down: u32,
    /// Upload streams.
    pub streams_up: u32,
}

/// One phase as it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseRecord {
    /// What it loaded.
    pub kind: PhaseKind,
    /// Its start and end, ns on the probes' clock.
    pub start_ns: u64,
    /// Its end.
    pub end_ns: u64,
    /// Its figures rest on the probes sent from here to its end: an idle
    /// phase's after the queues drained, a loaded phase's over its stable
    /// intervals (or its last MAD when it never became stable).
    pub measured_from_ns: u64,
    /// Its intervals (loaded phases).
    pub intervals: Vec<LoadInterval>,
    /// Goodput over the measured part.
    pub goodput_bps: Goodput,
    /// The load connections' own round trips (`tcpi_rtt` of the senders)
    /// in the measured part, ns: the draft's loaded probes.
    pub loaded_rtt_ns: Vec<u64>,
    /// Resends, down (the reflector's senders) and up (the client's).
    pub retransmits_down: Option<Retransmits>,
    /// The client's senders' resends.
    pub retransmits_up: Option<Retransmits>,
    /// The goodput's and the latency's confidence (loaded phases).
    pub confidence: Option<(Confidence, Confidence)>,
    /// The congestion control of its senders.
    pub cc: Option<String>,
    /// How it ended.
    pub end: PhaseEnd,
}

impl PhaseRecord {
    /// A phase that ran from `start_ns` to `end_ns`, measured throughout.
    pub fn new(kind: PhaseKind, start_ns: u64, end_ns: u64) -> Self {
        Self {
            kind,
            start_ns,
            end_ns,
            measured_from_ns: start_ns,
            intervals: Vec::new(),
            goodput_bps: Goodput::default(),
            loaded_rtt_ns: Vec::new(),
            retransmits_down: None,
            retransmits_up: None,
            confidence: None,
            cc: None,
            end: PhaseEnd::Time,
        }
    }

    /// Whether a probe sent at `at_ns` is one its figures rest on.
    pub fn measures(&self, at_ns: u64) -> bool {
        at_ns >= self.measured_from_ns && at_ns < self.end_ns
    }

    /// Whether a probe sent at `at_ns` was sent during it.
    pub fn holds(&self, at_ns: u64) -> bool {
        at_ns >= self.start_ns && at_ns < self.end_ns
    }

    /// Its middle, ns: where a drifting clock is read for it.
    pub fn mid_ns(&self) -> u64 {
        self.measured_from_ns + (self.end_ns.saturating_sub(self.measured_from_ns)) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_name_their_ways_and_measure_their_window() {
        assert_eq!(PhaseKind::Bidirectional.ways(), &[Way::Down, Way::Up]);
        assert!(PhaseKind::Idle.ways().is_empty() && !PhaseKind::Idle.loaded());
        assert_eq!("upload".parse(), Ok(PhaseKind::Upload));
        assert!(
            "idle".parse::<PhaseKind>().is_err(),
            "idle is never asked for"
        );
        let mut p = PhaseRecord::new(PhaseKind::Download, 100, 200);
        p.measured_from_ns = 150;
        assert!(p.holds(120) && !p.measures(120));
        assert!(p.measures(150) && p.measures(199) && !p.measures(200));
        assert_eq!(p.mid_ns(), 175);
        assert!(Confidence::High > Confidence::Low);
    }
}
