//! What one probe of a load run tells: when it left, its round trip (or
//! that it got none), and how long it spent in each stage its stamps
//! cover. The stages are cut where the stamps are, so they add up to the
//! round trip; a stage whose two stamps a probe lacks is `None`, never 0.

use serde::Serialize;

/// Stages a probe's round trip is cut into.
pub const STAGES: usize = 7;

/// Where a probe spent its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// T1 user → T1 sched: the client's system call and UDP/IP, to its
    /// queue discipline (to the driver when the kernel gives no SCHED
    /// stamp).
    SendPath,
    /// T1 sched → T1 driver: waiting in the client's own queue
    /// discipline.
    SendQueue,
    /// T1 driver → T2: the way to the reflector (both clocks: its offset
    /// is in it, and cancels in an inflation).
    Forward,
    /// T2 → T3: the reflector's dwell, to its measured send time (its
    /// driver's, with Follow-Up: then its own egress queue is in it).
    FarSide,
    /// T3 → T4 driver: the way back.
    Backward,
    /// T4 driver → T4 user: the client's receive path and wake-up.
    ReceivePath,
    /// T1 driver → T4 driver: the way there and back and the far side in
    /// one, for a plain echo, which stamps nothing at the reflector.
    Network,
}

impl Stage {
    /// Every stage, in the order of the round trip.
    pub const ALL: [Stage; STAGES] = [
        Stage::SendPath,
        Stage::SendQueue,
        Stage::Forward,
        Stage::FarSide,
        Stage::Backward,
        Stage::ReceivePath,
        Stage::Network,
    ];

    /// Position in [`Stage::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Stage::SendPath => "send_path",
            Stage::SendQueue => "send_queue",
            Stage::Forward => "forward",
            Stage::FarSide => "far_side",
            Stage::Backward => "backward",
            Stage::ReceivePath => "receive_path",
            Stage::Network => "network",
        }
    }

    /// In a sentence: "… of the added delay is {place}".
    pub fn place(self) -> &'static str {
        match self {
            Stage::SendPath => "in this host's send path (its system call and IP stack)",
            Stage::SendQueue => "in this host's own queue discipline",
            Stage::Forward => "on the way to the reflector",
            Stage::FarSide => "at the reflector (its dwell and its own egress queue)",
            Stage::Backward => "on the way back from the reflector",
            Stage::ReceivePath => "in this host's receive path",
            Stage::Network => {
                "in the network and the reflector (a plain echo cannot tell which way)"
            }
        }
    }

    /// What a queue there means, after the colon.
    pub fn meaning(self) -> &'static str {
        match self {
            Stage::SendPath => "the sending system call waits (a busy CPU or socket)",
            Stage::SendQueue => "a queue in the upload direction, on this host",
            Stage::Forward => "a queue in the upload direction",
            Stage::FarSide => "the reflector is slow to answer, or its own queue is full",
            Stage::Backward => "a queue in the download direction",
            Stage::ReceivePath => "this host is slow to read (a busy CPU)",
            Stage::Network => "a queue on the path, either way",
        }
    }

    /// What the stage does not cover, for the reader of a share.
    pub fn blind_spot(self) -> &'static str {
        match self {
            Stage::SendPath => "",
            Stage::SendQueue => {
                "a NIC's ring or Wi-Fi firmware queue lies after the driver stamp, on the way out; TCP Small Queues keep an upload's backlog in its socket buffer, where a probe never waits"
            }
            Stage::Forward | Stage::Backward => {
                "it spans every hop, and a queue in this host's NIC ring or the reflector's is in it too"
            }
            Stage::FarSide => {
                "without Follow-Up (or a driver stamp) the reflector's send time is its application's, and its own egress queue falls on the way back"
            }
            Stage::ReceivePath => "",
            Stage::Network => "",
        }
    }
}

/// One probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// When it left (the client's clock, ns): it belongs to the phase
    /// running then.
    pub at_ns: u64,
    /// Its round trip; `None`: no timely reply (lost, or late).
    pub rtt_ns: Option<u64>,
    /// Each stage's length, ns (signed: the one-way stages mix two
    /// clocks), indexed by [`Stage::index`].
    pub stages: [Option<i64>; STAGES],
    /// The reflector's own number for its reply (STAMP), for loss
    /// direction.
    pub reflector_seq: Option<u32>,
}

impl Probe {
    /// A probe that got no timely reply.
    pub fn lost(at_ns: u64) -> Self {
        Self {
            at_ns,
            rtt_ns: None,
            stages: [None; STAGES],
            reflector_seq: None,
        }
    }

    /// An answered probe, its stages not known yet.
    pub fn answered(at_ns: u64, rtt_ns: u64) -> Self {
        Self {
            rtt_ns: Some(rtt_ns),
            ..Self::lost(at_ns)
        }
    }

    /// The same, with `stage` `ns` long.
    #[must_use]
    pub fn with(mut self, stage: Stage, ns: Option<i64>) -> Self {
        self.stages[stage.index()] = ns;
        self
    }

    /// A stage's length.
    pub fn stage(&self, s: Stage) -> Option<i64> {
        self.stages[s.index()]
    }

    /// The kernel's one-way pair, forward and backward, when both are.
    pub fn one_way(&self) -> Option<(i64, i64)> {
        Some((self.stage(Stage::Forward)?, self.stage(Stage::Backward)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_keep_their_order_keys_and_absence() {
        assert_eq!(Stage::ALL.map(Stage::index), [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(Stage::Backward.key(), "backward");
        let p = Probe::answered(5, 100).with(Stage::Forward, Some(-3));
        assert_eq!(p.stage(Stage::Forward), Some(-3));
        assert_eq!(p.stage(Stage::Backward), None);
        assert_eq!(p.one_way(), None, "one leg is not a pair");
        let p = p.with(Stage::Backward, Some(9));
        assert_eq!(p.one_way(), Some((-3, 9)));
        assert_eq!(Probe::lost(7).rtt_ns, None);
    }
}
