//! The segments of one round trip: which parts of its time a run can
//! measure, and one packet's lengths for them. The engine fills these from
//! the points in time it stamps (`engine::Points`); everything else reads
//! them.

/// How many segments there are.
pub const SEGMENTS: usize = 8;

/// The segments of a round trip, in display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// T1 user → T1 driver: the client's system call, UDP/IP and qdisc.
    Send,
    /// T1 driver → T4 driver, less the server dwell: wires, switches and
    /// the far side's stacks.
    Network,
    /// T1 driver → T1 hw on the system clock: the request from the driver
    /// to the wire (a part of `Network`; hardware stamps whose NIC clock
    /// could be read against the system clock).
    ToWire,
    /// TCP: T1 driver → T1 ack, the request leaving until the far kernel's
    /// ACK of its last byte came back (a part of `Network`; only when that
    /// ACK did not ride on the reply).
    KernelRtt,
    /// TCP: T1 ack → T4 driver, the rest of `Network`: the far
    /// application's share (it read, answered, and the reply came back).
    FarShare,
    /// T2 → T3 on the reflector's clock (STAMP only).
    Dwell,
    /// T4 driver → T4 user: the client's receive stack, wake-up and copy.
    Receive,
    /// T1 hw → T4 hw: NIC to NIC (hardware stamps only).
    NicRoundTrip,
}

impl Segment {
    /// All segments, in display order.
    pub const ALL: [Segment; SEGMENTS] = [
        Segment::Send,
        Segment::Network,
        Segment::ToWire,
        Segment::KernelRtt,
        Segment::FarShare,
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
            Segment::ToWire => "  driver to wire (NIC)",
            Segment::KernelRtt => "  kernel RTT (ACK)",
            Segment::FarShare => "  far side's share",
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
            Segment::ToWire => "to_wire",
            Segment::KernelRtt => "kernel_rtt",
            Segment::FarShare => "far_share",
            Segment::Dwell => "server_dwell",
            Segment::Receive => "receive_path",
            Segment::NicRoundTrip => "nic_round_trip",
        }
    }

    /// Whether a NIC's clock stamps one of its ends (always, for these).
    pub fn hardware(self) -> bool {
        matches!(self, Segment::ToWire | Segment::NicRoundTrip)
    }

    /// The points it runs between.
    pub fn span(self) -> &'static str {
        match self {
            Segment::Send => "T1 user → T1 driver",
            Segment::Network => "T1 driver → T4 driver − dwell",
            Segment::ToWire => "T1 driver → T1 hw (NIC clock read against the system's)",
            Segment::KernelRtt => "T1 driver → T1 ack (far kernel's ACK)",
            Segment::FarShare => "T1 ack → T4 driver",
            Segment::Dwell => "T2 → T3 (reflector clock)",
            Segment::Receive => "T4 driver → T4 user",
            Segment::NicRoundTrip => "T1 hw → T4 hw (NIC clock)",
        }
    }
}

/// Which segments a run can measure at all: what its stamps allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentSet([bool; SEGMENTS]);

impl SegmentSet {
    /// Kernel stamps give the send, network and receive segments; STAMP
    /// the dwell; NIC stamps the NIC round trip.
    pub fn for_run(kernel: bool, stamp: bool, hardware: bool) -> Self {
        let mut s = [false; SEGMENTS];
        for seg in [Segment::Send, Segment::Network, Segment::Receive] {
            s[seg.index()] = kernel;
        }
        s[Segment::Dwell.index()] = stamp;
        s[Segment::NicRoundTrip.index()] = hardware;
        Self(s)
    }

    /// The same set, for a TCP run: with kernel stamps, the network
    /// segment splits further at the far kernel's ACK.
    #[must_use]
    pub fn with_tcp(mut self) -> Self {
        let kernel = self.contains(Segment::Network);
        self.0[Segment::KernelRtt.index()] = kernel;
        self.0[Segment::FarShare.index()] = kernel;
        self
    }

    /// The same set, with the send path to the wire when the NIC's clock
    /// is mapped onto the system clock.
    #[must_use]
    pub fn with_wire(mut self, mapped: bool) -> Self {
        self.0[Segment::ToWire.index()] = mapped && self.contains(Segment::NicRoundTrip);
        self
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
pub struct Split([u64; SEGMENTS]);

/// Marks a segment whose end points were not both stamped.
const MISSING: u64 = u64::MAX;
/// Marks a packet outside the stamped sample (`--tx-stamp-every`): not a
/// missing split, no split asked for.
const UNSAMPLED: u64 = u64::MAX - 1;
/// Marks a TCP segment that cannot exist for this reply: the far kernel's
/// ACK rode on the reply, so the two arrived together.
const PIGGYBACKED: u64 = u64::MAX - 2;

impl Default for Split {
    fn default() -> Self {
        Self::NONE
    }
}

impl Split {
    /// No segment known.
    pub const NONE: Split = Split([MISSING; SEGMENTS]);

    /// The raw words, for a record that is not a sample to keep something
    /// else where a sample keeps its split (see `Record::path_error`).
    pub(crate) const fn from_words(words: [u64; SEGMENTS]) -> Self {
        Self(words)
    }

    /// The raw words.
    pub(crate) const fn words(&self) -> [u64; SEGMENTS] {
        self.0
    }

    /// A packet the split was not sampled from: statistics neither count
    /// it nor call its segments missing.
    pub const UNSAMPLED: Split = Split([UNSAMPLED; SEGMENTS]);

    /// A split from each UDP segment's length: send, network, dwell,
    /// receive, NIC round trip (`None`: not measured). The TCP segments
    /// are missing; [`Split::with_ack`] sets them.
    pub fn from_parts(parts: [Option<u64>; 5]) -> Self {
        let mut s = Self::NONE;
        let at = [
            Segment::Send,
            Segment::Network,
            Segment::Dwell,
            Segment::Receive,
            Segment::NicRoundTrip,
        ];
        for (seg, v) in at.into_iter().zip(parts) {
            s.0[seg.index()] = clamp(v);
        }
        s
    }

    /// The same split with TCP's two parts of the network segment: the
    /// kernel RTT and the far side's share, both `Some` when the far
    /// kernel's ACK came on its own, or `piggybacked` when it rode on the
    /// reply (then neither exists).
    #[must_use]
    pub fn with_ack(
        mut self,
        kernel_rtt: Option<u64>,
        far: Option<u64>,
        piggybacked: bool,
    ) -> Self {
        let (k, f) = if piggybacked {
            (PIGGYBACKED, PIGGYBACKED)
        } else {
            (clamp(kernel_rtt), clamp(far))
        };
        self.0[Segment::KernelRtt.index()] = k;
        self.0[Segment::FarShare.index()] = f;
        self
    }

    /// The same split with the send path to the wire (`None`: not
    /// measured). It may be negative: the NIC's stamp is placed on the
    /// system clock through a reading with its own error, and a reading
    /// below zero is kept (dropping those would bias the segment up).
    #[must_use]
    pub fn with_wire(mut self, to_wire: Option<i64>) -> Self {
        // Zigzag: 0, −1, 1, −2 … → 0, 1, 2, 3 …, far below the markers.
        let zigzag = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
        self.0[Segment::ToWire.index()] = clamp(to_wire.map(zigzag));
        self
    }

    /// The send path to the wire, signed.
    pub fn wire_ns(&self) -> Option<i64> {
        let v = self.0[Segment::ToWire.index()];
        (v < PIGGYBACKED).then(|| ((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// One segment, if it was measured. The send path to the wire reads 0
    /// where it is below zero (see [`Split::wire_ns`]): a percentile at or
    /// above zero is the same either way.
    #[inline]
    pub fn get(&self, seg: Segment) -> Option<u64> {
        if seg == Segment::ToWire {
            return self.wire_ns().map(|v| v.max(0) as u64);
        }
        let v = self.0[seg.index()];
        (v < PIGGYBACKED).then_some(v)
    }

    /// Whether `seg` does not exist for this reply because the far
    /// kernel's ACK rode on the reply (TCP).
    #[inline]
    pub fn is_piggybacked(&self, seg: Segment) -> bool {
        self.0[seg.index()] == PIGGYBACKED
    }

    /// Whether any segment was measured.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&v| v >= PIGGYBACKED)
    }

    /// Whether the packet is outside the stamped sample.
    pub fn is_unsampled(&self) -> bool {
        self.0[0] == UNSAMPLED
    }
}

/// A length as stored: `None` is missing, and no length is taken for a
/// marker.
fn clamp(v: Option<u64>) -> u64 {
    v.map_or(MISSING, |v| v.min(PIGGYBACKED - 1))
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
            Some(u64::MAX - 3),
            "clamped, never missing, unsampled or piggy-backed"
        );
        assert!(Split::UNSAMPLED.is_unsampled() && Split::UNSAMPLED.is_empty());
        assert!(!Split::NONE.is_unsampled());
        assert_eq!(Split::UNSAMPLED.get(Segment::Send), None);
        assert!(!s.is_empty());
        assert!(Split::from_parts([None; 5]).is_empty());
        assert_eq!(Split::from_parts([None; 5]), Split::NONE);
        let tcp = s.with_ack(Some(10), Some(20), false);
        assert_eq!(tcp.get(Segment::KernelRtt), Some(10));
        assert_eq!(tcp.get(Segment::FarShare), Some(20));
        assert_eq!(
            tcp.get(Segment::Dwell),
            Some(3),
            "the others keep their places"
        );
        let rode = s.with_ack(Some(10), Some(20), true);
        assert_eq!(rode.get(Segment::KernelRtt), None);
        assert!(rode.is_piggybacked(Segment::FarShare));
        assert!(!rode.is_piggybacked(Segment::Send));
        assert!(!tcp.is_piggybacked(Segment::KernelRtt));
        for v in [0i64, 1, -1, 12_623, -4_000, 1 << 40, -(1 << 40)] {
            let w = s.with_wire(Some(v));
            assert_eq!(w.wire_ns(), Some(v));
            assert_eq!(w.get(Segment::ToWire), Some(v.max(0) as u64));
        }
        assert_eq!(s.with_wire(None).wire_ns(), None);
    }

    #[test]
    fn a_run_measures_what_its_stamps_allow() {
        let kernel = SegmentSet::for_run(true, false, false);
        let keys: Vec<_> = kernel.iter().map(Segment::key).collect();
        assert_eq!(keys, ["send_path", "network", "receive_path"]);
        assert!(SegmentSet::for_run(false, false, false).is_empty());
        assert!(SegmentSet::for_run(false, true, false).contains(Segment::Dwell));
        let tcp: Vec<_> = kernel.with_tcp().iter().map(Segment::key).collect();
        assert_eq!(
            tcp,
            [
                "send_path",
                "network",
                "kernel_rtt",
                "far_share",
                "receive_path"
            ]
        );
        assert!(
            SegmentSet::for_run(false, false, false)
                .with_tcp()
                .is_empty()
        );
    }
}
