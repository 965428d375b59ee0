//! What the measurement thread reports about each packet.

use super::cos::Marks;
use super::segment::Split;

/// The outcome of one request (or one unexpected datagram).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// A fresh reply: `rtt_ns` holds the round-trip time.
    Sample,
    /// No reply within the timeout.
    Lost,
    /// A reply to a request that had already timed out (it was counted lost;
    /// now it is counted late instead). Not used as an RTT sample.
    Late {
        /// It arrived after a reply to a later request.
        reordered: bool,
    },
    /// A repeated reply.
    Duplicate,
    /// A datagram from another source, of the wrong form, or for a sequence
    /// number this run never sent (or no longer remembers).
    Stray,
    /// An outage ended: `packets` consecutive requests got no timely reply.
    /// `rtt_ns` holds its length, from the first of them leaving to the
    /// next timely reply (or the end of the run); `seq` is the first.
    Outage {
        /// Requests in a row without a timely reply.
        packets: u32,
    },
    /// Paced mode: a send slot that could not be met in time (more than
    /// half an interval late) and was skipped, never made up for.
    Missed,
}

/// What a STAMP reflector's stamps say about one round trip, beyond its
/// dwell: the one-way delays, which mix the two hosts' clocks, and the
/// reflector's own sequence number. Absent fields hold sentinels so the
/// record stays small and `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FarSide {
    forward_ns: i64,
    backward_ns: i64,
    reflector_seq: u32,
    reflector_synced: bool,
}

impl FarSide {
    /// Nothing known (plain echo, or a lost packet).
    pub const NONE: Self = Self {
        forward_ns: i64::MIN,
        backward_ns: i64::MIN,
        reflector_seq: u32::MAX,
        reflector_synced: false,
    };

    /// T2 − T1 and T4 − T3 (each across the two clocks, so signed), the
    /// reflector's sequence number, and whether its error estimate says its
    /// clock is synchronised.
    pub fn new(forward_ns: i64, backward_ns: i64, reflector_seq: u32, synced: bool) -> Self {
        Self {
            forward_ns: forward_ns.max(i64::MIN + 1),
            backward_ns: backward_ns.max(i64::MIN + 1),
            reflector_seq: reflector_seq.min(u32::MAX - 1),
            reflector_synced: synced,
        }
    }

    /// Only the reflector's number for a reply (a late or repeated one,
    /// whose delays are not samples); nothing when there is none.
    pub fn numbered(reflector_seq: Option<u32>) -> Self {
        match reflector_seq {
            Some(seq) => Self {
                reflector_seq: seq.min(u32::MAX - 1),
                ..Self::NONE
            },
            None => Self::NONE,
        }
    }

    /// Request's one-way delay, client clock to reflector clock.
    pub fn forward_ns(&self) -> Option<i64> {
        (self.forward_ns != i64::MIN).then_some(self.forward_ns)
    }

    /// Reply's one-way delay, reflector clock to client clock.
    pub fn backward_ns(&self) -> Option<i64> {
        (self.backward_ns != i64::MIN).then_some(self.backward_ns)
    }

    /// The reflector's sequence number for this reply.
    pub fn reflector_seq(&self) -> Option<u32> {
        (self.reflector_seq != u32::MAX).then_some(self.reflector_seq)
    }

    /// The reflector says its clock is synchronised.
    pub fn reflector_synced(&self) -> bool {
        self.reflector_synced
    }
}

impl Default for FarSide {
    fn default() -> Self {
        Self::NONE
    }
}

/// One event from the measurement thread. Small and `Copy`, so it moves
/// through the ring without allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Sequence number the event concerns (0 for strays).
    pub seq: u64,
    /// Nanoseconds since the run started (monotonic clock).
    pub at_ns: u64,
    /// Round-trip time in nanoseconds (samples only, else 0).
    pub rtt_ns: u64,
    /// What happened.
    pub kind: RecordKind,
    /// Part of the warm-up: shown live, excluded from statistics.
    pub warmup: bool,
    /// Where the round trip's time went (samples with kernel stamps only).
    pub split: Split,
    /// Paced mode: how long after its scheduled time the request left, ns
    /// (samples and losses; 0 in ping-pong).
    pub send_lag_ns: u64,
    /// STAMP: one-way delays and the reflector's sequence number (samples).
    pub far: FarSide,
    /// Class of service: what each leg's packet carried (samples).
    pub marks: Marks,
}

impl Record {
    /// A fresh RTT sample.
    pub fn sample(seq: u64, at_ns: u64, rtt_ns: u64, warmup: bool) -> Self {
        Self {
            seq,
            at_ns,
            rtt_ns,
            kind: RecordKind::Sample,
            warmup,
            split: Split::NONE,
            send_lag_ns: 0,
            far: FarSide::NONE,
            marks: Marks::NONE,
        }
    }

    /// The same record, for a request that left `lag_ns` after its slot.
    #[must_use]
    pub fn with_send_lag(mut self, lag_ns: u64) -> Self {
        self.send_lag_ns = lag_ns;
        self
    }

    /// The same record with what the reflector's stamps say.
    #[must_use]
    pub fn with_far(mut self, far: FarSide) -> Self {
        self.far = far;
        self
    }

    /// The same record with what each leg's packet carried.
    #[must_use]
    pub fn with_marks(mut self, marks: Marks) -> Self {
        self.marks = marks;
        self
    }

    /// The same record with its round trip split.
    #[must_use]
    pub fn with_split(mut self, split: Split) -> Self {
        self.split = split;
        self
    }

    /// Any other outcome but an outage.
    pub fn event(kind: RecordKind, seq: u64, at_ns: u64, warmup: bool) -> Self {
        Self {
            seq,
            at_ns,
            rtt_ns: 0,
            kind,
            warmup,
            split: Split::NONE,
            send_lag_ns: 0,
            far: FarSide::NONE,
            marks: Marks::NONE,
        }
    }

    /// An outage of `packets` requests from `seq` on, `length_ns` long.
    pub fn outage(seq: u64, packets: u32, at_ns: u64, length_ns: u64) -> Self {
        Self {
            seq,
            at_ns,
            rtt_ns: length_ns,
            kind: RecordKind::Outage { packets },
            warmup: false,
            split: Split::NONE,
            send_lag_ns: 0,
            far: FarSide::NONE,
            marks: Marks::NONE,
        }
    }
}

// docs/architecture.md quotes the size; a ring slot per packet.
const _: () = assert!(std::mem::size_of::<Record>() == 136);
