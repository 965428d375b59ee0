//! A trace of one flow's path, hop by hop, and what it shows: what the
//! probes of each TTL brought back ([`PathTally`], filled by the engine as
//! answers come), each hop's loss with its interval and round trip
//! ([`hops`]), the suspect link ([`suspect`]: the first hop after which
//! loss persists to the destination, never a router that only rate-limits
//! its ICMP), and, over several source ports, the ECMP tree and the link
//! the lossy paths share ([`tree`]). Pure: no clock, no socket.

pub mod hops;
pub mod suspect;
pub mod tree;

pub use hops::{HopFigures, HopState, Proportion, figures};
pub use suspect::{HopRef, Inconclusive, Suspect, Verdict, judge};
pub use tree::{EcmpTree, TreePath, tree};

use std::net::IpAddr;

/// What answered a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// A router's time exceeded: the probe's TTL ran out there.
    TimeExceeded,
    /// The destination's echo (a reflector or any echo server): an answer
    /// no router rate-limits.
    Echo,
    /// The destination's port unreachable: it arrived, nothing listens.
    /// An ICMP error, rate-limited as any.
    PortUnreachable,
    /// Another destination unreachable (no route, host, prohibited …), with
    /// its ICMP code: the path ends at whoever sent it.
    Unreachable(u8),
}

impl AnswerKind {
    /// Whether the sender may leave probes unanswered only to keep its rate
    /// of ICMP errors down (Linux: about one a second per destination).
    pub fn rate_limited(self) -> bool {
        !matches!(self, Self::Echo)
    }

    /// Whether this answer means the probe went no further (the destination,
    /// or a router that cannot forward it).
    pub fn ends_path(self) -> bool {
        !matches!(self, Self::TimeExceeded)
    }
}

/// One MPLS label stack entry a router quoted (RFC 4950).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MplsEntry {
    /// The label (20 bits).
    pub label: u32,
    /// Traffic class (3 bits).
    pub tc: u8,
    /// Bottom of the stack.
    pub bottom: bool,
    /// The entry's TTL.
    pub ttl: u8,
}

/// One address that answered the probes of a TTL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Responder {
    /// Who.
    pub addr: IpAddr,
    /// How: the kind of its first answer.
    pub kind: AnswerKind,
    /// How many probes it answered.
    pub answers: u32,
    /// The MPLS labels its last answer quoted (none: no extension).
    pub mpls: Vec<MplsEntry>,
}

/// What the probes of one TTL brought back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HopTally {
    /// Probes whose fate is known (answered, or timed out).
    pub sent: u32,
    /// Of them, answered.
    pub answered: u32,
    /// Who answered, in the order first seen.
    pub responders: Vec<Responder>,
    /// Each answer's round trip, ns.
    pub rtt_ns: Vec<u64>,
}

impl HopTally {
    /// Counts one answer from `addr`.
    pub fn answer(&mut self, addr: IpAddr, kind: AnswerKind, rtt_ns: u64, mpls: &[MplsEntry]) {
        self.answered += 1;
        self.rtt_ns.push(rtt_ns);
        match self.responders.iter_mut().find(|r| r.addr == addr) {
            Some(r) => {
                r.answers += 1;
                if !mpls.is_empty() {
                    r.mpls = mpls.to_vec();
                }
            }
            None => self.responders.push(Responder {
                addr,
                kind,
                answers: 1,
                mpls: mpls.to_vec(),
            }),
        }
    }

    /// Whether any answer here ended the path.
    pub fn ends_path(&self) -> bool {
        self.responders.iter().any(|r| r.kind.ends_path())
    }
}

/// One flow's trace: its source port and what each TTL, from 1, saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTally {
    /// The flow's source port.
    pub port: u16,
    /// Where it goes.
    pub destination: IpAddr,
    /// TTL 1 first. Ends at the TTL where the path ended, when it did.
    pub hops: Vec<HopTally>,
    /// The highest TTL probed.
    pub max_ttl: u8,
}

impl PathTally {
    /// How the path ended: the first TTL whose answer ends it, and that
    /// answer's kind and sender (the destination's own answer first).
    pub fn end(&self) -> Option<(u8, AnswerKind, IpAddr)> {
        self.hops.iter().enumerate().find_map(|(i, h)| {
            let r = h
                .responders
                .iter()
                .filter(|r| r.kind.ends_path())
                .max_by_key(|r| (r.kind == AnswerKind::Echo, r.answers))?;
            Some((i as u8 + 1, r.kind, r.addr))
        })
    }
}
