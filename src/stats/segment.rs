//! The segments of one round trip: which parts of its time a run can
//! measure, and one packet's lengths for them. The engine fills these from
//! the points in time it stamps (`engine::Points`); everything else reads
//! them.

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
/// Marks a packet outside the stamped sample (`--tx-stamp-every`): not a
/// missing split, no split asked for.
const UNSAMPLED: u64 = u64::MAX - 1;

impl Default for Split {
    fn default() -> Self {
        Self::NONE
    }
}

impl Split {
    /// No segment known.
    pub const NONE: Split = Split([MISSING; 5]);

    /// A packet the split was not sampled from: statistics neither count
    /// it nor call its segments missing.
    pub const UNSAMPLED: Split = Split([UNSAMPLED; 5]);

    /// A split from each segment's length, in [`Segment::ALL`] order
    /// (`None`: not measured).
    pub fn from_parts(parts: [Option<u64>; 5]) -> Self {
        Self(parts.map(|v| v.map_or(MISSING, |v| v.min(UNSAMPLED - 1))))
    }

    /// One segment, if it was measured.
    #[inline]
    pub fn get(&self, seg: Segment) -> Option<u64> {
        let v = self.0[seg.index()];
        (v < UNSAMPLED).then_some(v)
    }

    /// Whether any segment was measured.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&v| v >= UNSAMPLED)
    }

    /// Whether the packet is outside the stamped sample.
    pub fn is_unsampled(&self) -> bool {
        self.0[0] == UNSAMPLED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_keep_their_places_and_none_stays_missing() {
        let s = Split::from_parts([Some(1), None, Some(3), Some(u64::MAX), None]);
        assert_eq!(s.get(Segment::Send), Some(1));
        assert_eq!(s.get(Segment::Network), None);
        assert_eq!(s.get(Segment::Dwell), Some(3));
        assert_eq!(
            s.get(Segment::Receive),
            Some(u64::MAX - 2),
            "clamped, never missing or unsampled"
        );
        assert!(Split::UNSAMPLED.is_unsampled() && Split::UNSAMPLED.is_empty());
        assert!(!Split::NONE.is_unsampled());
        assert_eq!(Split::UNSAMPLED.get(Segment::Send), None);
        assert!(!s.is_empty());
        assert!(Split::from_parts([None; 5]).is_empty());
        assert_eq!(Split::from_parts([None; 5]), Split::NONE);
    }

    #[test]
    fn a_run_measures_what_its_stamps_allow() {
        let kernel = SegmentSet::for_run(true, false, false);
        let keys: Vec<_> = kernel.iter().map(Segment::key).collect();
        assert_eq!(keys, ["send_path", "network", "receive_path"]);
        assert!(SegmentSet::for_run(false, false, false).is_empty());
        assert!(SegmentSet::for_run(false, true, false).contains(Segment::Dwell));
    }
}
