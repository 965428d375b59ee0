//! What the measurement thread reports about each packet.

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
        }
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
        }
    }
}

// The README quotes the size; a ring slot per packet.
const _: () = assert!(std::mem::size_of::<Record>() == 80);
