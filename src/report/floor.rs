//! A run's p50 against this host's floor (`synapse calibrate`), held
//! against the floor of the same kind: UDP or TCP, blocking or busy-poll,
//! the two threads on one CPU or on two (as the run had them, or the lower
//! floor when the peer's CPU is not known). A paced run, or a TCP run that
//! connects for each transaction, has no floor of its kind and gets no
//! ratio. A p50 below what the floor allows (its lower bound: the floor
//! less the variation between runs) is said to be so, with why, never
//! shown as a plain ratio below 1.

use serde::Serialize;
use synapse_engine::floor::Calibration;
use synapse_units::format_ns;

/// Which floor a run is held against: UDP or TCP, blocking or spinning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunMode {
    /// UDP, sleeping in the kernel.
    #[default]
    Blocking,
    /// UDP, spinning.
    BusyPoll,
    /// TCP over one connection, sleeping.
    TcpBlocking,
    /// No floor measured for it (TCP spinning, a connection per
    /// transaction).
    Other,
}

impl RunMode {
    /// The mode of a run with these options.
    pub fn of(tcp: bool, busy_poll: bool, connect_each: bool) -> Self {
        match (tcp, busy_poll) {
            (false, false) => Self::Blocking,
            (false, true) => Self::BusyPoll,
            (true, false) if !connect_each => Self::TcpBlocking,
            _ => Self::Other,
        }
    }
}

/// Where the run's two threads were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Placement {
    /// Client and reflector on one CPU.
    SameCpu,
    /// On two CPUs.
    CrossCpu,
    /// The reflector is another process or host: its CPU is not known.
    #[default]
    Unknown,
}

/// What kind of run, as far as the floor is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloorKind {
    /// UDP or TCP, blocking or spinning.
    pub mode: RunMode,
    /// Requests on a schedule (the floor is a ping-pong's).
    pub paced: bool,
    /// The two threads' CPUs.
    pub placement: Placement,
    /// The peer is not this host (or is in another network namespace): its
    /// floor is not known here, and its path is not loopback.
    pub remote_peer: bool,
}

impl FloorKind {
    /// In-process reflector on `reflector_cpu` (`None`: a peer elsewhere).
    pub fn of(
        mode: RunMode,
        paced: bool,
        client_cpu: usize,
        reflector_cpu: Option<usize>,
        remote_peer: bool,
    ) -> Self {
        Self {
            mode,
            paced,
            placement: match reflector_cpu {
                Some(r) if r == client_cpu => Placement::SameCpu,
                Some(_) => Placement::CrossCpu,
                None => Placement::Unknown,
            },
            remote_peer,
        }
    }
}

/// The comparison, as the reports show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FloorComparison {
    /// `busy_poll`, `blocking`, `blocking_same_cpu` or `tcp_blocking`:
    /// which floor.
    pub mode: &'static str,
    /// The run's p50, ns.
    pub p50_ns: u64,
    /// The floor's p50 (loopback, the same kind), ns.
    pub floor_p50_ns: f64,
    /// The least a run's p50 may be against that floor before the floor
    /// is in doubt: the floor less the variation between runs (95 %).
    pub floor_low_ns: f64,
    /// p50 ÷ floor.
    pub ratio: f64,
    /// The p50 is below `floor_low_ns`.
    pub below_floor: bool,
    /// Two cross-core wake-ups (one per side), ns: a blocking run on two
    /// CPUs pays them.
    pub two_wakeups_ns: Option<f64>,
    /// When the floor was measured (RFC 3339).
    pub calibrated_at: String,
    /// The peer is another host (or namespace), whose own floor is not
    /// known here.
    pub remote_peer: bool,
    /// The peer's CPU is not known, so the one-CPU floor (the lower one)
    /// is used.
    pub placement_unknown: bool,
}

/// The 95 % factor two runs' p50 may differ by: exp(1.96 · √2 · σ), σ the
/// spread of ln p50 between runs (this host's, else the assumed one).
fn allowance(c: &Calibration) -> f64 {
    let sd = c.run_to_run.as_ref().map_or(
        synapse_stats::significance::Spread::assumed().log_sd[0],
        |r| r.spread.log_sd[0],
    );
    (1.96 * std::f64::consts::SQRT_2 * sd).exp()
}

impl FloorComparison {
    /// The comparison for a run of `p50_ns` of this kind, if the
    /// calibration has a floor of that kind.
    pub fn of(c: &Calibration, p50_ns: u64, kind: FloorKind) -> Option<Self> {
        if kind.paced {
            return None;
        }
        let same = kind.placement != Placement::CrossCpu;
        let (mode, floor) = match kind.mode {
            RunMode::BusyPoll => ("busy_poll", c.p50.udp_busy_poll_rtt_ns?),
            // Blocking on one CPU (or not known to be two): the lower floor.
            RunMode::Blocking if same => {
                ("blocking_same_cpu", c.p50.udp_blocking_rtt_same_core_ns?)
            }
            RunMode::Blocking => ("blocking", c.p50.udp_blocking_rtt_ns?),
            RunMode::TcpBlocking if kind.placement == Placement::CrossCpu => {
                ("tcp_blocking", c.p50.tcp_blocking_rtt_ns?)
            }
            RunMode::TcpBlocking | RunMode::Other => return None,
        };
        if floor <= 0.0 {
            return None;
        }
        let low = floor / allowance(c);
        let cross_blocking =
            kind.placement == Placement::CrossCpu && kind.mode != RunMode::BusyPoll;
        Some(Self {
            mode,
            p50_ns,
            floor_p50_ns: floor,
            floor_low_ns: low,
            ratio: p50_ns as f64 / floor,
            below_floor: (p50_ns as f64) < low,
            two_wakeups_ns: cross_blocking
                .then_some(c.p50.wakeup_cross_core_ns)
                .flatten()
                .map(|w| 2.0 * w),
            calibrated_at: c.calibrated_at.clone(),
            remote_peer: kind.remote_peer,
            placement_unknown: kind.placement == Placement::Unknown,
        })
    }

    /// The floor's name in a sentence.
    fn floor_name(&self) -> &'static str {
        match self.mode {
            "busy_poll" => "loopback busy-poll floor",
            "tcp_blocking" => "loopback TCP blocking floor (two CPUs)",
            "blocking_same_cpu" => "loopback blocking floor on one CPU",
            _ => "loopback blocking floor (two CPUs)",
        }
    }

    /// `p50 9.8 µs = 1.3 × this host's loopback busy-poll floor (7.5 µs,
    /// calibrated 2026-11-22)`, what the wake-ups explain, and what the
    /// floor does not know; or, below the floor's lower bound, why.
    pub fn sentence(&self) -> String {
        let date = self.calibrated_at.get(..10).unwrap_or(&self.calibrated_at);
        let p50 = format_ns(self.p50_ns as f64);
        let floor = format_ns(self.floor_p50_ns);
        let mut s = if self.below_floor {
            format!(
                "p50 {p50} is below this host's {} ({floor}, calibrated {date}) by more than runs differ (at least {}): the floor is stale (synapse calibrate again) or this run's path is not loopback's",
                self.floor_name(),
                format_ns(self.floor_low_ns)
            )
        } else {
            format!(
                "p50 {p50} = {:.1} × this host's {} ({floor}, calibrated {date})",
                self.ratio,
                self.floor_name()
            )
        };
        if let Some(w) = self.two_wakeups_ns.filter(|_| !self.below_floor) {
            if w <= self.p50_ns as f64 {
                let share = 100.0 * w / self.p50_ns.max(1) as f64;
                s.push_str(&format!(
                    "; two cross-core wake-ups ({}) are {share:.0} % of it",
                    format_ns(w)
                ));
            } else {
                s.push_str(&format!(
                    "; two cross-core wake-ups as calibrated ({}) are more than this p50: the calibration is stale",
                    format_ns(w)
                ));
            }
        }
        if self.placement_unknown {
            s.push_str(
                "; the peer's CPU is not known here, so the one-CPU floor (the lower) is used",
            );
        }
        if self.remote_peer {
            s.push_str("; the peer is not this host's loopback: its own floor and the path between are not known here");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_engine::floor::Figures;

    fn calibration() -> Calibration {
        Calibration::fixture(Figures {
            udp_busy_poll_rtt_ns: Some(7_500.0),
            udp_blocking_rtt_ns: Some(60_000.0),
            udp_blocking_rtt_same_core_ns: Some(11_000.0),
            wakeup_cross_core_ns: Some(25_000.0),
            ..Figures::default()
        })
    }

    fn kind(mode: RunMode, placement: Placement, remote: bool) -> FloorKind {
        FloorKind {
            mode,
            paced: false,
            placement,
            remote_peer: remote,
        }
    }

    #[test]
    fn busy_poll_is_compared_with_the_busy_poll_floor() {
        let k = kind(RunMode::BusyPoll, Placement::CrossCpu, false);
        let f = FloorComparison::of(&calibration(), 9_800, k).unwrap();
        assert_eq!(
            f.sentence(),
            "p50 9.8 µs = 1.3 × this host's loopback busy-poll floor (7.5 µs, calibrated 2026-11-22)"
        );
    }

    #[test]
    fn a_blocking_run_on_two_cpus_says_what_two_wake_ups_are_of_it() {
        let k = kind(RunMode::Blocking, Placement::CrossCpu, false);
        let f = FloorComparison::of(&calibration(), 100_000, k).unwrap();
        assert_eq!(f.two_wakeups_ns, Some(50_000.0));
        assert_eq!(
            f.sentence(),
            "p50 100.0 µs = 1.7 × this host's loopback blocking floor (two CPUs) (60.0 µs, \
             calibrated 2026-11-22); two cross-core wake-ups (50.0 µs) are 50 % of it"
        );
    }

    #[test]
    fn a_peer_elsewhere_is_held_against_the_one_cpu_floor_and_says_so() {
        // The run between two namespaces: 12.1 µs against the
        // two-CPU floor was "0.4 ×"; its peer's CPU is not known.
        let k = kind(RunMode::Blocking, Placement::Unknown, true);
        let f = FloorComparison::of(&calibration(), 12_100, k).unwrap();
        assert_eq!((f.mode, f.below_floor), ("blocking_same_cpu", false));
        assert!((f.ratio - 1.1).abs() < 0.01);
        assert_eq!(f.two_wakeups_ns, None, "no wake-ups across CPUs known");
        let s = f.sentence();
        assert!(
            s.starts_with("p50 12.1 µs = 1.1 × this host's loopback blocking floor on one CPU"),
            "{s}"
        );
        assert!(
            s.contains("the peer's CPU is not known here")
                && s.contains("not this host's loopback"),
            "{s}"
        );
    }

    #[test]
    fn a_p50_below_the_floors_lower_bound_is_never_a_plain_ratio() {
        let k = kind(RunMode::Blocking, Placement::CrossCpu, false);
        let f = FloorComparison::of(&calibration(), 12_100, k).unwrap();
        assert!(f.below_floor, "{f:?}");
        assert!(f.floor_low_ns < 60_000.0 && f.floor_low_ns > 12_100.0);
        let s = f.sentence();
        assert!(
            s.starts_with(
                "p50 12.1 µs is below this host's loopback blocking floor (two CPUs) (60.0 µs"
            ),
            "{s}"
        );
        assert!(
            s.contains("the floor is stale") && !s.contains(" × "),
            "{s}"
        );
    }

    #[test]
    fn a_run_of_no_kind_calibrated_gets_no_floor() {
        let c = calibration();
        let paced = FloorKind {
            paced: true,
            ..kind(RunMode::Blocking, Placement::CrossCpu, false)
        };
        assert_eq!(
            FloorComparison::of(&c, 9_800, paced),
            None,
            "the floor is a ping-pong's"
        );
        let tcp = kind(RunMode::TcpBlocking, Placement::CrossCpu, false);
        assert_eq!(
            FloorComparison::of(&c, 9_800, tcp),
            None,
            "no TCP floor calibrated"
        );
        let mut t = c.clone();
        t.p50.tcp_blocking_rtt_ns = Some(20_000.0);
        let f = FloorComparison::of(&t, 40_000, tcp).unwrap();
        assert_eq!((f.mode, f.ratio), ("tcp_blocking", 2.0));
        let tcp_unknown = kind(RunMode::TcpBlocking, Placement::Unknown, false);
        assert_eq!(
            FloorComparison::of(&t, 40_000, tcp_unknown),
            None,
            "TCP has no one-CPU floor"
        );
        let other = kind(RunMode::Other, Placement::CrossCpu, false);
        assert_eq!(FloorComparison::of(&t, 40_000, other), None);
    }
}
