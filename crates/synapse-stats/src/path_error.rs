//! What the path or the far side said about a request, beyond silence: an
//! ICMP error (port or host unreachable, fragmentation needed …) read off
//! the socket's error queue, or, over TCP, the peer closing or resetting
//! the connection. Counted by kind and by who sent it (the reflector's own
//! host, or a router on the way), without allocating: the measurement
//! thread counts as errors arrive.
//!
//! An error informs the report; it never ends a run by itself. ICMP can be
//! forged and is rate-limited (about one a second per destination), so
//! silence, not an error, decides when to give up.

use serde::Serialize;
use serde::ser::SerializeStruct;
use std::net::IpAddr;

/// What kind of error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathErrorKind {
    /// ICMP port unreachable: the datagram arrived, nothing listens there.
    PortUnreachable,
    /// ICMP host unreachable (or address unreachable, ICMPv6).
    HostUnreachable,
    /// ICMP network unreachable (no route, ICMPv6).
    NetUnreachable,
    /// ICMP administratively prohibited: a filter on the way refused it.
    Prohibited,
    /// ICMP fragmentation needed / ICMPv6 packet too big: the datagram is
    /// larger than the path's MTU.
    TooBig,
    /// ICMP time exceeded: its TTL ran out on the way (a routing loop).
    TimeExceeded,
    /// Another ICMP error (its errno is all that is kept).
    OtherIcmp,
    /// TCP: the peer closed the connection (FIN).
    PeerClosed,
    /// TCP: the peer reset the connection (RST).
    PeerReset,
}

/// How many kinds there are (the counters' length).
pub const KINDS: usize = 9;

impl PathErrorKind {
    /// Every kind, in the order they are counted and reported.
    pub const ALL: [PathErrorKind; KINDS] = [
        Self::PortUnreachable,
        Self::HostUnreachable,
        Self::NetUnreachable,
        Self::Prohibited,
        Self::TooBig,
        Self::TimeExceeded,
        Self::OtherIcmp,
        Self::PeerClosed,
        Self::PeerReset,
    ];

    /// Its name in JSON, CSV and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Self::PortUnreachable => "port_unreachable",
            Self::HostUnreachable => "host_unreachable",
            Self::NetUnreachable => "net_unreachable",
            Self::Prohibited => "prohibited",
            Self::TooBig => "too_big",
            Self::TimeExceeded => "time_exceeded",
            Self::OtherIcmp => "other_icmp",
            Self::PeerClosed => "peer_closed",
            Self::PeerReset => "peer_reset",
        }
    }

    /// Its name in a sentence.
    pub fn words(self) -> &'static str {
        match self {
            Self::PortUnreachable => "port unreachable",
            Self::HostUnreachable => "host unreachable",
            Self::NetUnreachable => "network unreachable",
            Self::Prohibited => "administratively prohibited",
            Self::TooBig => "fragmentation needed",
            Self::TimeExceeded => "time exceeded",
            Self::OtherIcmp => "an ICMP error",
            Self::PeerClosed => "connection closed by the peer",
            Self::PeerReset => "connection reset by the peer",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One error about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathError {
    /// What it says.
    pub kind: PathErrorKind,
    /// Who sent it (the ICMP message's source); `None` when this host
    /// reported it (a local error, or a TCP connection's end).
    pub from: Option<IpAddr>,
    /// The path's MTU, for [`PathErrorKind::TooBig`].
    pub mtu: Option<u32>,
}

impl PathError {
    /// A kind of error, from nobody in particular.
    pub fn of(kind: PathErrorKind) -> Self {
        Self {
            kind,
            from: None,
            mtu: None,
        }
    }

    /// Who sent it, measured against the reflector at `reflector`.
    pub fn sender(&self, reflector: IpAddr) -> Sender {
        match self.from {
            None => Sender::ThisHost,
            Some(a) if a == reflector => Sender::Reflector,
            Some(a) => Sender::Router(a),
        }
    }

    /// A short phrase: `port unreachable from 10.0.1.2`,
    /// `fragmentation needed (MTU 1400) from 10.0.0.1`, `connection reset
    /// by 10.0.1.2`.
    pub fn phrase(&self) -> String {
        let tcp = matches!(
            self.kind,
            PathErrorKind::PeerClosed | PathErrorKind::PeerReset
        );
        let mut s = match (tcp, self.from) {
            (true, Some(_)) => self.kind.words().trim_end_matches(" the peer").to_string(),
            _ => self.kind.words().to_string(),
        };
        if let Some(mtu) = self.mtu {
            s.push_str(&format!(" (MTU {mtu})"));
        }
        match (tcp, self.from) {
            (true, Some(from)) => s.push_str(&format!(" {from}")),
            (false, Some(from)) => s.push_str(&format!(" from {from}")),
            (_, None) => {}
        }
        s
    }
}

/// Who sent an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// The reflector's own host (its kernel: no process on the port, say).
    Reflector,
    /// A router on the way.
    Router(IpAddr),
    /// This host.
    ThisHost,
}

/// Distinct senders a run keeps apart; more are counted together.
pub const SENDERS: usize = 8;

/// One sender's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderCount {
    /// Its address (`None`: this host).
    pub address: Option<IpAddr>,
    /// Errors it sent.
    pub count: u64,
    /// The kind of the last one.
    pub last: PathErrorKind,
}

/// A run's errors, counted by kind and by sender. Fixed size: counting
/// allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathErrors {
    by_kind: [u64; KINDS],
    senders: [Option<SenderCount>; SENDERS],
    /// Errors from senders beyond the first [`SENDERS`].
    other_senders: u64,
    /// The first and the last, with when they came (ns since the run began).
    first: Option<(u64, PathError)>,
    last: Option<(u64, PathError)>,
}

impl Default for PathErrors {
    fn default() -> Self {
        Self {
            by_kind: [0; KINDS],
            senders: [None; SENDERS],
            other_senders: 0,
            first: None,
            last: None,
        }
    }
}

impl PathErrors {
    /// Counts `e`, which came `at_ns` after the run began.
    pub fn count(&mut self, e: PathError, at_ns: u64) {
        self.by_kind[e.kind.index()] += 1;
        self.first.get_or_insert((at_ns, e));
        self.last = Some((at_ns, e));
        self.count_sender(e.from, 1, e.kind);
    }

    /// Adds another run's (or probe's) counts.
    pub fn merge(&mut self, o: &PathErrors) {
        for (a, b) in self.by_kind.iter_mut().zip(o.by_kind) {
            *a += b;
        }
        for s in o.senders.iter().flatten() {
            self.count_sender(s.address, s.count, s.last);
        }
        self.other_senders += o.other_senders;
        if self
            .first
            .is_none_or(|(t, _)| o.first.is_some_and(|(u, _)| u < t))
        {
            self.first = o.first.or(self.first);
        }
        if self
            .last
            .is_none_or(|(t, _)| o.last.is_some_and(|(u, _)| u > t))
        {
            self.last = o.last.or(self.last);
        }
    }

    /// `n` errors from `address`, the last of `kind`: its row, a new row,
    /// or the count of senders past the table's room.
    fn count_sender(&mut self, address: Option<IpAddr>, n: u64, kind: PathErrorKind) {
        for slot in &mut self.senders {
            match slot {
                Some(s) if s.address == address => {
                    s.count += n;
                    s.last = kind;
                    return;
                }
                None => {
                    *slot = Some(SenderCount {
                        address,
                        count: n,
                        last: kind,
                    });
                    return;
                }
                Some(_) => {}
            }
        }
        self.other_senders += n;
    }

    /// All errors counted.
    pub fn total(&self) -> u64 {
        self.by_kind.iter().sum()
    }

    /// Errors of `kind`.
    pub fn of_kind(&self, kind: PathErrorKind) -> u64 {
        self.by_kind[kind.index()]
    }

    /// The kinds seen, with their counts, in [`PathErrorKind::ALL`]'s order.
    pub fn kinds(&self) -> impl Iterator<Item = (PathErrorKind, u64)> + '_ {
        PathErrorKind::ALL
            .into_iter()
            .map(|k| (k, self.of_kind(k)))
            .filter(|&(_, n)| n > 0)
    }

    /// The senders seen, first seen first.
    pub fn senders(&self) -> impl Iterator<Item = &SenderCount> {
        self.senders.iter().flatten()
    }

    /// Errors from senders past the table's room.
    pub fn other_senders(&self) -> u64 {
        self.other_senders
    }

    /// The first error and when it came (ns since the run began).
    pub fn first(&self) -> Option<(u64, PathError)> {
        self.first
    }

    /// The last error and when it came.
    pub fn last(&self) -> Option<(u64, PathError)> {
        self.last
    }
}

impl Serialize for PathErrors {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Kind {
            kind: &'static str,
            count: u64,
        }
        #[derive(Serialize)]
        struct From {
            address: Option<String>,
            count: u64,
            last: &'static str,
        }
        #[derive(Serialize)]
        struct At {
            at_s: f64,
            kind: &'static str,
            from: Option<String>,
            mtu: Option<u32>,
        }
        let at = |(ns, e): (u64, PathError)| At {
            at_s: ns as f64 / 1e9,
            kind: e.kind.name(),
            from: e.from.map(|a| a.to_string()),
            mtu: e.mtu,
        };
        let kinds: Vec<Kind> = self
            .kinds()
            .map(|(k, count)| Kind {
                kind: k.name(),
                count,
            })
            .collect();
        let senders: Vec<From> = self
            .senders()
            .map(|c| From {
                address: c.address.map(|a| a.to_string()),
                count: c.count,
                last: c.last.name(),
            })
            .collect();
        let mut st = s.serialize_struct("PathErrors", 6)?;
        st.serialize_field("total", &self.total())?;
        st.serialize_field("by_kind", &kinds)?;
        st.serialize_field("by_sender", &senders)?;
        st.serialize_field("other_senders", &self.other_senders)?;
        st.serialize_field("first", &self.first.map(at))?;
        st.serialize_field("last", &self.last.map(at))?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(kind: PathErrorKind, a: &str) -> PathError {
        PathError {
            kind,
            from: Some(a.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))),
            mtu: None,
        }
    }

    #[test]
    fn errors_are_counted_by_kind_and_by_sender() {
        let mut e = PathErrors::default();
        e.count(from(PathErrorKind::PortUnreachable, "10.0.1.2"), 5);
        e.count(from(PathErrorKind::PortUnreachable, "10.0.1.2"), 7);
        e.count(from(PathErrorKind::HostUnreachable, "10.0.0.1"), 9);
        assert_eq!(e.total(), 3);
        assert_eq!(e.of_kind(PathErrorKind::PortUnreachable), 2);
        let senders: Vec<_> = e.senders().map(|s| (s.address, s.count)).collect();
        assert_eq!(senders.len(), 2);
        assert_eq!(senders[0].1, 2);
        assert_eq!(e.first().map(|f| f.0), Some(5));
        assert_eq!(
            e.last().map(|l| l.1.kind),
            Some(PathErrorKind::HostUnreachable)
        );
        let reflector: IpAddr = "10.0.1.2".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert_eq!(
            e.last().map(|l| l.1.sender(reflector)),
            Some(Sender::Router("10.0.0.1".parse().unwrap_or(reflector)))
        );
    }

    #[test]
    fn senders_past_the_table_are_counted_together() {
        let mut e = PathErrors::default();
        for i in 0..(SENDERS as u8 + 3) {
            e.count(
                from(PathErrorKind::HostUnreachable, &format!("10.0.0.{i}")),
                0,
            );
        }
        assert_eq!(e.senders().count(), SENDERS);
        assert_eq!(e.other_senders(), 3);
        assert_eq!(e.total(), SENDERS as u64 + 3);
    }

    #[test]
    fn merged_counts_keep_one_row_per_sender() {
        let mut a = PathErrors::default();
        a.count(from(PathErrorKind::PortUnreachable, "10.0.1.2"), 10);
        let mut b = PathErrors::default();
        b.count(from(PathErrorKind::PortUnreachable, "10.0.1.2"), 3);
        b.count(from(PathErrorKind::PortUnreachable, "10.0.1.2"), 20);
        a.merge(&b);
        assert_eq!(a.total(), 3);
        assert_eq!(a.senders().count(), 1);
        assert_eq!(a.first().map(|f| f.0), Some(3));
        assert_eq!(a.last().map(|f| f.0), Some(20));
    }

    #[test]
    fn a_phrase_names_the_kind_the_mtu_and_the_sender() {
        let e = PathError {
            kind: PathErrorKind::TooBig,
            from: "10.0.0.1".parse().ok(),
            mtu: Some(1400),
        };
        assert_eq!(e.phrase(), "fragmentation needed (MTU 1400) from 10.0.0.1");
        assert_eq!(
            PathError::of(PathErrorKind::PeerReset).phrase(),
            "connection reset by the peer"
        );
        let reset = PathError {
            from: "10.0.1.2".parse().ok(),
            ..PathError::of(PathErrorKind::PeerReset)
        };
        assert_eq!(reset.phrase(), "connection reset by 10.0.1.2");
    }
}
