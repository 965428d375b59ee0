//! Multicast ping-pong: one request to a group, every member's answer,
//! each with its own round trip.
//!
//! The socket is unconnected (answers come from every member's unicast
//! address), bound to the wildcard, and sends to the group with the hop
//! limit, interface and loopback asked for. Each answer is matched to its
//! request by sequence number and to its responder by the name it tells
//! or the address it comes from (`responders.rs`); each responder has its
//! own tracker, figures and outages. A request waits for the responders
//! expected (`--responders N`, or as many as have answered so far; the
//! first [`DISCOVERY_ROUNDS`] requests wait out their whole timeout to
//! hear from everyone) or its timeout, then the next is sent.
//!
//! The run's own records (the ring a front end reads, the figures the
//! report calls the group's) are one per request: answered when every
//! expected responder answered in time, its round trip the slowest
//! answer's (what a ping-pong over the group waits for), lost otherwise.
//! Each responder's records go to their own ring, tagged with its index.
//! None of this touches the unicast ping-pong loop.

mod pacing;
mod pinger;
mod responders;
mod round;

pub(super) use pinger::{AnswerRing, GroupPinger};

/// The consumer ends of a multicast run's responder rings.
pub(super) struct AnswerRings {
    /// Each responder's records, tagged with its index.
    pub records: rtrb::Consumer<crate::client::prober::PeerRecord>,
    /// Records that ring had no room for.
    pub overflow: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Each responder as first heard.
    pub directory: rtrb::Consumer<ResponderEntry>,
    /// The per-packet log's rows, with a `log_capacity`.
    pub points: Option<rtrb::Consumer<ResponderPoints>>,
}

/// A multicast run's responder rings, allocated before its thread starts:
/// `ring_capacity` records (at least one), room for every responder's
/// entry, and with a `log_capacity` the log's rows.
pub(super) fn answer_rings(ring_capacity: usize, log_capacity: usize) -> (AnswerRing, AnswerRings) {
    let (ring, records) = rtrb::RingBuffer::new(ring_capacity.max(1));
    let (directory, entries) = rtrb::RingBuffer::new(MAX_RESPONDERS);
    let (log, points) = match log_capacity {
        0 => (None, None),
        n => {
            let (p, c) = rtrb::RingBuffer::new(n);
            (Some(p), Some(c))
        }
    };
    let overflow = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let producers = AnswerRing {
        ring,
        overflow: std::sync::Arc::clone(&overflow),
        directory,
        log,
    };
    let consumers = AnswerRings {
        records,
        overflow,
        directory: entries,
        points,
    };
    (producers, consumers)
}
pub use responders::MAX_RESPONDERS;

use crate::protocol::responder_name::ResponderName;
use std::net::SocketAddr;
use synapse_stats::{FanOut, Stats};

/// Requests at the start of a run that wait out their timeout, so that
/// every responder is heard before one may be waited for alone.
pub const DISCOVERY_ROUNDS: u64 = 3;

/// How a multicast client sends, and whom it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MulticastOptions {
    /// The requests' hop limit (TTL): 1 stays on the link.
    pub hops: u8,
    /// Send by this interface (its index) instead of the route's.
    pub interface: Option<u32>,
    /// Deliver the requests to this host's own members too.
    pub loopback: bool,
    /// Join the group too, to hear answers sent to it (a reflector that
    /// answers to the group, as sockperf's server does).
    pub join: bool,
    /// Responders each request waits for (`None`: as many as have
    /// answered so far).
    pub responders: Option<u32>,
}

impl Default for MulticastOptions {
    fn default() -> Self {
        Self {
            hops: 1,
            interface: None,
            loopback: false,
            join: false,
            responders: None,
        }
    }
}

/// A responder first heard: its index (its records' tag), the name its
/// answers carry, and the address they come from. A live front end reads
/// these from their own ring, once each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponderEntry {
    /// Its index: the tag of its records.
    pub index: u32,
    /// The name its answers carry, if it tells one.
    pub name: Option<ResponderName>,
    /// The address its answers come from.
    pub address: SocketAddr,
}

/// One row of a multicast run's per-packet log: a responder's answer,
/// loss, late answer or duplicate of one request, and who it was.
#[derive(Debug, Clone, Copy)]
pub struct ResponderPoints {
    /// The responder.
    pub responder: ResponderEntry,
    /// The request's points and its answer's (as a unicast run's row).
    pub points: crate::points::Points,
}

/// One responder as the run saw it.
#[derive(Debug, Clone)]
pub struct ResponderOutcome {
    /// The address its answers came from.
    pub address: SocketAddr,
    /// The name its answers carried, if it told one.
    pub name: Option<ResponderName>,
    /// Its figures, in the run's shape: its round trips, its losses,
    /// late and duplicate answers, its split.
    pub stats: Stats,
    /// The first request it was asked (it was first heard on it).
    pub first_seq: u64,
    /// Its last timely answer: the request, and when (ns since the start).
    pub last_answer: Option<(u64, u64)>,
}

/// What a multicast run hands back besides the group's own figures.
#[derive(Debug, Clone)]
pub struct GroupOutcome {
    /// The group.
    pub group: SocketAddr,
    /// Every responder, in the order first heard.
    pub responders: Vec<ResponderOutcome>,
    /// The responders each request waited for at the end (asked, or
    /// heard so far).
    pub expected: u32,
    /// Whether that was asked (`--responders`).
    pub expected_asked: bool,
    /// How far apart each request's answers came.
    pub fan_out: FanOut,
    /// Answers that carried a known responder's name from another address.
    pub strange: u64,
    /// Answers from responders beyond [`MAX_RESPONDERS`].
    pub unlisted: u64,
    /// Requests sent after the warm-up.
    pub requests: u64,
    /// The last request settled (its sequence number).
    pub last_seq: u64,
}
