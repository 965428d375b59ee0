//! A run's p50 against this host's floor (`synapse calibrate`): how many
//! times the loopback round trip of the same mode it is, and in blocking
//! mode how much of it two cross-core wake-ups explain.

use serde::Serialize;
use synapse_engine::floor::Calibration;
use synapse_units::format_ns;

/// Which floor a run is held against.
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

/// The comparison, as the reports show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FloorComparison {
    /// `busy_poll`, `blocking` or `tcp_blocking`: which floor.
    pub mode: &'static str,
    /// The run's p50, ns.
    pub p50_ns: u64,
    /// The floor's p50 (loopback, the same mode, two CPUs), ns.
    pub floor_p50_ns: f64,
    /// p50 ÷ floor.
    pub ratio: f64,
    /// Blocking mode: two cross-core wake-ups (one per side), ns.
    pub two_wakeups_ns: Option<f64>,
    /// When the floor was measured (RFC 3339).
    pub calibrated_at: String,
    /// The peer is another host, whose own floor is not known here.
    pub remote_peer: bool,
}

impl FloorComparison {
    /// The comparison for a run of `p50_ns` in this mode, if the
    /// calibration has that floor (TCP: one connection, blocking; a run
    /// that connects for each transaction has none).
    pub fn of(c: &Calibration, p50_ns: u64, mode: RunMode, remote_peer: bool) -> Option<Self> {
        let busy_poll = mode == RunMode::BusyPoll;
        let (mode, floor) = match mode {
            RunMode::BusyPoll => ("busy_poll", c.p50.udp_busy_poll_rtt_ns?),
            RunMode::Blocking => ("blocking", c.p50.udp_blocking_rtt_ns?),
            RunMode::TcpBlocking => ("tcp_blocking", c.p50.tcp_blocking_rtt_ns?),
            RunMode::Other => return None,
        };
        (floor > 0.0).then(|| Self {
            mode,
            p50_ns,
            floor_p50_ns: floor,
            ratio: p50_ns as f64 / floor,
            two_wakeups_ns: (!busy_poll)
                .then_some(c.p50.wakeup_cross_core_ns)
                .flatten()
                .map(|w| 2.0 * w),
            calibrated_at: c.calibrated_at.clone(),
            remote_peer,
        })
    }

    /// `p50 9.8 µs = 1.3 × this host's loopback busy-poll floor (7.5 µs,
    /// calibrated 2026-11-22)`, and what the wake-ups explain.
    pub fn sentence(&self) -> String {
        let mode = match self.mode {
            "busy_poll" => "busy-poll",
            "tcp_blocking" => "TCP blocking",
            _ => "blocking",
        };
        let date = self.calibrated_at.get(..10).unwrap_or(&self.calibrated_at);
        let mut s = format!(
            "p50 {} = {:.1} × this host's loopback {mode} floor ({}, calibrated {date})",
            format_ns(self.p50_ns as f64),
            self.ratio,
            format_ns(self.floor_p50_ns),
        );
        if let Some(w) = self.two_wakeups_ns {
            let share = (100.0 * w / self.p50_ns.max(1) as f64).min(100.0);
            s.push_str(&format!(
                "; two cross-core wake-ups ({}) explain {share:.0} % of it",
                format_ns(w)
            ));
        }
        if self.remote_peer {
            s.push_str("; the floor is this host's, the peer's own is not known here");
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
            wakeup_cross_core_ns: Some(25_000.0),
            ..Figures::default()
        })
    }

    #[test]
    fn busy_poll_is_compared_with_the_busy_poll_floor() {
        let f = FloorComparison::of(&calibration(), 9_800, RunMode::BusyPoll, false).unwrap();
        assert_eq!(
            f.sentence(),
            "p50 9.8 µs = 1.3 × this host's loopback busy-poll floor (7.5 µs, calibrated 2026-11-22)"
        );
    }

    #[test]
    fn blocking_says_what_two_wake_ups_explain_and_a_remote_peer_is_named() {
        let f = FloorComparison::of(&calibration(), 100_000, RunMode::Blocking, true).unwrap();
        assert_eq!(f.two_wakeups_ns, Some(50_000.0));
        assert_eq!(
            f.sentence(),
            "p50 100.0 µs = 1.7 × this host's loopback blocking floor (60.0 µs, calibrated \
             2026-11-22); two cross-core wake-ups (50.0 µs) explain 50 % of it; the floor is \
             this host's, the peer's own is not known here"
        );
    }

    #[test]
    fn a_floor_that_was_not_measured_is_not_compared() {
        let mut c = calibration();
        c.p50.udp_busy_poll_rtt_ns = None;
        assert_eq!(
            FloorComparison::of(&c, 9_800, RunMode::BusyPoll, false),
            None
        );
        assert!(FloorComparison::of(&c, 9_800, RunMode::Blocking, false).is_some());
        // A TCP run is held against the TCP floor only, when there is one.
        assert_eq!(
            FloorComparison::of(&c, 9_800, RunMode::TcpBlocking, false),
            None
        );
        let mut t = c.clone();
        t.p50.tcp_blocking_rtt_ns = Some(20_000.0);
        let f = FloorComparison::of(&t, 40_000, RunMode::TcpBlocking, false).unwrap();
        assert_eq!((f.mode, f.ratio), ("tcp_blocking", 2.0));
        assert!(
            f.sentence().contains("loopback TCP blocking floor"),
            "{}",
            f.sentence()
        );
        assert_eq!(FloorComparison::of(&t, 40_000, RunMode::Other, false), None);
    }
}
