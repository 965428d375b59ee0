//! What the measurement thread reports about each packet.

use super::cos::Marks;
use super::path_error::{PathError, PathErrorKind};
use super::segment::Split;
use std::net::{IpAddr, Ipv6Addr};

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
    /// The path or the far side said something about request `seq`: an
    /// ICMP error, or the TCP peer closing or resetting. The error is
    /// [`Record::path_error`]. Not a loss: the request's deadline decides.
    PathError,
}

/// What a STAMP reflector's stamps say about one round trip, beyond its
/// dwell: the one-way delays, which mix the two hosts' clocks, measured
/// between two sets of cut points; the error each clock claimed; and the
/// reflector's own sequence number. Absent fields hold sentinels so the
/// record stays small and `Copy`.
///
/// - Application cut points: T2 − T1 user (this host's send call to the
///   reflector's T2 as it carried it) and T4 user − T3 (its T3 as carried
///   to the return of this host's receive).
/// - Kernel cut points: T2 − T1 kernel (the kernel's TX stamp, or the
///   NIC's placed on the system clock when the NIC stamped) and T4 kernel
///   − T3 (the reflector's measured send time when Follow-Up carried it,
///   else its T3 as carried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FarSide {
    app: [i64; 2],
    kernel: [i64; 2],
    reflector_seq: u32,
    /// Each end's error as its STAMP estimate said, ns (`UNBOUNDED`: not
    /// synchronised, or beyond what fits).
    reflector_error_ns: u32,
    client_error_ns: u32,
}

/// An absent delay.
const NO_DELAY: i64 = i64::MIN;
/// A clock whose error has no bound.
const UNBOUNDED: u32 = u32::MAX;

impl FarSide {
    /// Nothing known (plain echo, or a lost packet).
    pub const NONE: Self = Self {
        app: [NO_DELAY; 2],
        kernel: [NO_DELAY; 2],
        reflector_seq: u32::MAX,
        reflector_error_ns: UNBOUNDED,
        client_error_ns: UNBOUNDED,
    };

    /// A reply numbered `reflector_seq` by the reflector, no delay known
    /// yet.
    pub fn new(reflector_seq: u32) -> Self {
        Self {
            reflector_seq: reflector_seq.min(u32::MAX - 1),
            ..Self::NONE
        }
    }

    /// The same, with the delays between the application cut points:
    /// forward T2 − T1 user, backward T4 user − T3 (each across the two
    /// clocks, so signed).
    #[must_use]
    pub fn with_application(mut self, forward: Option<i64>, backward: Option<i64>) -> Self {
        self.app = [store(forward), store(backward)];
        self
    }

    /// The same, with the delays between the kernel (or NIC) cut points.
    #[must_use]
    pub fn with_kernel(mut self, forward: Option<i64>, backward: Option<i64>) -> Self {
        self.kernel = [store(forward), store(backward)];
        self
    }

    /// The same, with the error each clock claimed, ns (`None`: no bound,
    /// an unsynchronised clock).
    #[must_use]
    pub fn with_errors(mut self, reflector_ns: Option<f64>, client_ns: Option<f64>) -> Self {
        let ns = |e: Option<f64>| {
            e.filter(|e| *e < f64::from(UNBOUNDED))
                .map_or(UNBOUNDED, |e| e.ceil() as u32)
        };
        self.reflector_error_ns = ns(reflector_ns);
        self.client_error_ns = ns(client_ns);
        self
    }

    /// Only the reflector's number for a reply (a late or repeated one,
    /// whose delays are not samples); nothing when there is none.
    pub fn numbered(reflector_seq: Option<u32>) -> Self {
        reflector_seq.map_or(Self::NONE, Self::new)
    }

    /// Forward and backward between the application cut points.
    pub fn application(&self) -> Option<(i64, i64)> {
        pair(self.app)
    }

    /// Forward and backward between the kernel (or NIC) cut points.
    pub fn kernel(&self) -> Option<(i64, i64)> {
        pair(self.kernel)
    }

    /// Request's one-way delay, client clock to reflector clock, between
    /// the application cut points (every STAMP reply has them, so a series
    /// of them never mixes cut points).
    pub fn forward_ns(&self) -> Option<i64> {
        self.application().map(|(f, _)| f)
    }

    /// Reply's one-way delay, reflector clock to client clock, between the
    /// application cut points.
    pub fn backward_ns(&self) -> Option<i64> {
        self.application().map(|(_, b)| b)
    }

    /// The reflector's sequence number for this reply.
    pub fn reflector_seq(&self) -> Option<u32> {
        (self.reflector_seq != u32::MAX).then_some(self.reflector_seq)
    }

    /// The reflector's clock error, ns (`None`: it is not synchronised).
    pub fn reflector_error_ns(&self) -> Option<u64> {
        (self.reflector_error_ns != UNBOUNDED).then_some(u64::from(self.reflector_error_ns))
    }

    /// This host's clock error when the request left, ns (`None`: not
    /// synchronised).
    pub fn client_error_ns(&self) -> Option<u64> {
        (self.client_error_ns != UNBOUNDED).then_some(u64::from(self.client_error_ns))
    }

    /// The reflector says its clock is synchronised.
    pub fn reflector_synced(&self) -> bool {
        self.reflector_error_ns().is_some()
    }
}

fn store(v: Option<i64>) -> i64 {
    v.map_or(NO_DELAY, |v| v.max(NO_DELAY + 1))
}

fn pair([f, b]: [i64; 2]) -> Option<(i64, i64)> {
    (f != NO_DELAY && b != NO_DELAY).then_some((f, b))
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

    /// The path's error `e` about request `seq`, at `at_ns`. The error rides
    /// where a sample keeps its split (an error has none), so the record
    /// stays its size.
    pub fn path_error(seq: u64, at_ns: u64, e: PathError, warmup: bool) -> Self {
        Self {
            split: Split::from_words(encode_error(e)),
            ..Self::event(RecordKind::PathError, seq, at_ns, warmup)
        }
    }

    /// The path's error, for a [`RecordKind::PathError`] record.
    pub fn error(&self) -> Option<PathError> {
        (self.kind == RecordKind::PathError).then(|| decode_error(self.split.words()))
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

/// A path error as the words of a split: its kind, whether it has a
/// sender and of which family, and its MTU in the first; the sender's
/// address in the next two.
fn encode_error(e: PathError) -> [u64; crate::SEGMENTS] {
    let mut w = [0u64; crate::SEGMENTS];
    let kind = PathErrorKind::ALL
        .iter()
        .position(|&k| k == e.kind)
        .unwrap_or(0) as u64;
    let (family, bytes) = match e.from {
        None => (0, [0u8; 16]),
        Some(IpAddr::V4(a)) => (1, a.to_ipv6_mapped().octets()),
        Some(IpAddr::V6(a)) => (2, a.octets()),
    };
    let mtu = e.mtu.map_or(0, |m| u64::from(m) + 1);
    w[0] = kind | family << 8 | mtu << 16;
    w[1] = u64::from_be_bytes(bytes[..8].try_into().unwrap_or_default());
    w[2] = u64::from_be_bytes(bytes[8..].try_into().unwrap_or_default());
    w
}

/// The path error [`encode_error`] wrote.
fn decode_error(w: [u64; crate::SEGMENTS]) -> PathError {
    let kind = PathErrorKind::ALL[(w[0] & 0xff) as usize % PathErrorKind::ALL.len()];
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&w[1].to_be_bytes());
    bytes[8..].copy_from_slice(&w[2].to_be_bytes());
    let v6 = Ipv6Addr::from(bytes);
    let from = match (w[0] >> 8) & 0xff {
        1 => v6.to_ipv4_mapped().map(IpAddr::V4),
        2 => Some(IpAddr::V6(v6)),
        _ => None,
    };
    let mtu = (w[0] >> 16) as u32;
    PathError {
        kind,
        from,
        mtu: mtu.checked_sub(1),
    }
}

// docs/architecture.md quotes the size; a ring slot per packet.
const _: () = assert!(std::mem::size_of::<Record>() == 160);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_error_rides_in_its_record_whole() {
        for e in [
            PathError {
                kind: PathErrorKind::PortUnreachable,
                from: "10.0.1.2".parse().ok(),
                mtu: None,
            },
            PathError {
                kind: PathErrorKind::TooBig,
                from: "2001:db8::1".parse().ok(),
                mtu: Some(1280),
            },
            PathError::of(PathErrorKind::PeerReset),
            PathError {
                kind: PathErrorKind::TooBig,
                from: None,
                mtu: Some(0),
            },
        ] {
            let r = Record::path_error(7, 9, e, false);
            assert_eq!(r.kind, RecordKind::PathError);
            assert_eq!(r.error(), Some(e));
        }
        assert_eq!(Record::sample(1, 2, 3, false).error(), None);
    }
}
