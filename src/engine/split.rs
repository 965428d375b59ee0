//! Where one round trip's time went: the points in time Synapse knows
//! about a packet, and the segments between them.
//!
//! Subtraction happens only inside one clock domain. T1/T4 user and the
//! kernel's software stamps share `CLOCK_REALTIME`; T2/T3 are the
//! reflector's clock, used only as T3 − T2; NIC stamps are the NIC's clock
//! (PHC), used only as T4 hw − T1 hw. The RTT itself stays on the monotonic
//! clock; the segments add up to it within the cost of a clock read.

/// Every point in time known about one packet, nanoseconds. `None`: the
/// kernel, the NIC or the reflector did not provide it (never filled in
/// from another kind of stamp).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Points {
    /// Sequence number.
    pub seq: u64,
    /// Client, just before `send` (`CLOCK_REALTIME`).
    pub t1_user: Option<u64>,
    /// Client, entering the packet scheduler (kernel software stamp).
    pub t1_sched: Option<u64>,
    /// Client, handed to the device (kernel software stamp).
    pub t1_driver: Option<u64>,
    /// Client NIC, on the wire (PHC clock).
    pub t1_hw: Option<u64>,
    /// Reflector, received (STAMP; the reflector's clock).
    pub t2: Option<u64>,
    /// Reflector, sending the reply (STAMP; the reflector's clock).
    pub t3: Option<u64>,
    /// Client NIC, off the wire (PHC clock).
    pub t4_hw: Option<u64>,
    /// Client kernel, received (kernel software stamp).
    pub t4_driver: Option<u64>,
    /// Client, just after the receive returned (`CLOCK_REALTIME`).
    pub t4_user: Option<u64>,
    /// Round-trip time on the monotonic clock; `None` for a lost packet.
    pub rtt_ns: Option<u64>,
}

/// The segments of a round trip, in display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// T1 user → T1 driver: the client's system call, UDP/IP and qdisc.
    Send,
    /// T1 driver → T4 driver, less the server dwell: wires, switches and
    /// the far side's stacks.
    Network,
    /// T2 → T3 on the reflector's clock (STAMP only).
    Dwell,
    /// T4 driver → T4 user: the client's receive stack, wake-up and copy.
    Receive,
    /// T1 hw → T4 hw: NIC to NIC (hardware stamps only).
    NicRoundTrip,
}

impl Segment {
    /// All segments, in display order.
    pub const ALL: [Segment; 5] = [
        Segment::Send,
        Segment::Network,
        Segment::Dwell,
        Segment::Receive,
        Segment::NicRoundTrip,
    ];

    /// Position in [`Segment::ALL`] and in [`Split`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Human name, as in reports.
    pub fn label(self) -> &'static str {
        match self {
            Segment::Send => "client send path",
            Segment::Network => "network + remote",
            Segment::Dwell => "server dwell",
            Segment::Receive => "client receive path",
            Segment::NicRoundTrip => "NIC round trip",
        }
    }

    /// Stable key, as in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Segment::Send => "send_path",
            Segment::Network => "network",
            Segment::Dwell => "server_dwell",
            Segment::Receive => "receive_path",
            Segment::NicRoundTrip => "nic_round_trip",
        }
    }

    /// The points it runs between.
    pub fn span(self) -> &'static str {
        match self {
            Segment::Send => "T1 user → T1 driver",
            Segment::Network => "T1 driver → T4 driver − dwell",
            Segment::Dwell => "T2 → T3 (reflector clock)",
            Segment::Receive => "T4 driver → T4 user",
            Segment::NicRoundTrip => "T1 hw → T4 hw (NIC clock)",
        }
    }
}

/// Which segments a run can measure at all: what its stamps allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentSet([bool; 5]);

impl SegmentSet {
    /// Kernel stamps give the send, network and receive segments; STAMP
    /// the dwell; NIC stamps the NIC round trip.
    pub fn for_run(kernel: bool, stamp: bool, hardware: bool) -> Self {
        let mut s = [false; 5];
        for seg in [Segment::Send, Segment::Network, Segment::Receive] {
            s[seg.index()] = kernel;
        }
        s[Segment::Dwell.index()] = stamp;
        s[Segment::NicRoundTrip.index()] = hardware;
        Self(s)
    }

    /// Whether `seg` is measured.
    pub fn contains(&self, seg: Segment) -> bool {
        self.0[seg.index()]
    }

    /// Whether nothing is (user-space stamps, plain echo).
    pub fn is_empty(&self) -> bool {
        !self.0.iter().any(|&b| b)
    }

    /// The measured segments, in display order.
    pub fn iter(self) -> impl Iterator<Item = Segment> {
        Segment::ALL.into_iter().filter(move |s| self.contains(*s))
    }
}

/// One packet's segments, nanoseconds. Small and `Copy`: it rides in every
/// [`Record`](super::Record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split([u64; 5]);

/// Marks a segment whose end points were not both stamped.
const MISSING: u64 = u64::MAX;

impl Default for Split {
    fn default() -> Self {
        Self::NONE
    }
}

impl Split {
    /// No segment known.
    pub const NONE: Split = Split([MISSING; 5]);

    /// The segments the points allow. A segment whose end points are out of
    /// order (a clock step mid-packet) is missing, not negative.
    pub fn from_points(p: &Points) -> Self {
        let between = |a: Option<u64>, b: Option<u64>| b?.checked_sub(a?);
        let dwell = between(p.t2, p.t3);
        let network = between(p.t1_driver, p.t4_driver)
            .and_then(|total| total.checked_sub(dwell.unwrap_or(0)));
        let mut s = Self::NONE;
        let mut put = |seg: Segment, v: Option<u64>| {
            if let Some(v) = v {
                s.0[seg.index()] = v.min(MISSING - 1);
            }
        };
        put(Segment::Send, between(p.t1_user, p.t1_driver));
        put(Segment::Network, network);
        put(Segment::Dwell, dwell);
        put(Segment::Receive, between(p.t4_driver, p.t4_user));
        put(Segment::NicRoundTrip, between(p.t1_hw, p.t4_hw));
        s
    }

    /// One segment, if it was measured.
    #[inline]
    pub fn get(&self, seg: Segment) -> Option<u64> {
        let v = self.0[seg.index()];
        (v != MISSING).then_some(v)
    }

    /// Whether any segment was measured.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&v| v == MISSING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Points {
        Points {
            seq: 7,
            t1_user: Some(1_000),
            t1_sched: Some(1_400),
            t1_driver: Some(1_900),
            t1_hw: None,
            t2: Some(50_000),
            t3: Some(53_000),
            t4_hw: None,
            t4_driver: Some(9_900),
            t4_user: Some(12_000),
            rtt_ns: Some(11_000),
        }
    }

    #[test]
    fn segments_partition_the_realtime_round_trip() {
        let s = Split::from_points(&full());
        assert_eq!(s.get(Segment::Send), Some(900));
        assert_eq!(s.get(Segment::Dwell), Some(3_000));
        assert_eq!(s.get(Segment::Network), Some(8_000 - 3_000));
        assert_eq!(s.get(Segment::Receive), Some(2_100));
        assert_eq!(s.get(Segment::NicRoundTrip), None);
        let sum: u64 = [
            Segment::Send,
            Segment::Network,
            Segment::Dwell,
            Segment::Receive,
        ]
        .iter()
        .filter_map(|&g| s.get(g))
        .sum();
        assert_eq!(sum, 12_000 - 1_000);
    }

    #[test]
    fn without_stamp_the_network_segment_includes_the_far_side() {
        let p = Points {
            t2: None,
            t3: None,
            ..full()
        };
        let s = Split::from_points(&p);
        assert_eq!(s.get(Segment::Dwell), None);
        assert_eq!(s.get(Segment::Network), Some(8_000));
    }

    #[test]
    fn a_missing_stamp_leaves_its_segments_missing_and_nothing_else() {
        let p = Points {
            t1_driver: None,
            ..full()
        };
        let s = Split::from_points(&p);
        assert_eq!(s.get(Segment::Send), None, "never replaced by T1 sched");
        assert_eq!(s.get(Segment::Network), None);
        assert_eq!(s.get(Segment::Receive), Some(2_100));
        assert!(!s.is_empty());
        assert!(Split::from_points(&Points::default()).is_empty());
    }

    #[test]
    fn out_of_order_points_give_no_segment() {
        let p = Points {
            t4_user: Some(9_000),
            ..full()
        };
        assert_eq!(Split::from_points(&p).get(Segment::Receive), None);
    }

    #[test]
    fn hardware_points_are_only_subtracted_from_each_other() {
        let p = Points {
            t1_hw: Some(5_000_000_000),
            t4_hw: Some(5_000_007_000),
            ..full()
        };
        let s = Split::from_points(&p);
        assert_eq!(s.get(Segment::NicRoundTrip), Some(7_000));
        assert_eq!(s.get(Segment::Send), Some(900), "software points unchanged");
    }
}
