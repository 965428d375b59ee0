//! Who answered a multicast run: one entry per responder, known by the
//! name it puts in its answers (`synapse server --name`) and the address
//! that name first came from, or, for a responder that tells no name, by
//! its address alone. An answer that carries a known name from another
//! address is no one's (a stray, counted), never matched to the
//! responder it names: that address is not the one it answered from.
//!
//! Each entry keeps its own sequence tracker (its answers are fresh,
//! late, duplicate or stray by its own record), statistics in the run's
//! shape and outage detector. Entries are made when a responder is first
//! heard from (its statistics allocated then, once), up to
//! [`MAX_RESPONDERS`]; nothing is allocated per answer.

use super::super::sequence::SequenceTracker;
use crate::protocol::responder_name::ResponderName;
use crate::sys::addr::RawAddr;
use std::net::SocketAddr;
use synapse_stats::{OutageDetector, Shape, Stats};

/// The most responders a run tells apart (one bit each in a request's
/// answered set).
pub const MAX_RESPONDERS: usize = 64;

/// Requests a responder's tracker remembers: its late answers are told
/// from strays within this many.
const WINDOW: u64 = 4096;

/// How far back a responder heard for the first time may be answering:
/// an older answer of an unknown responder is a stray.
const FIRST_ANSWER_BACK: u64 = 64;

/// One responder and what it has done.
#[derive(Debug)]
pub struct Responder {
    /// The name its answers carry, if it tells one.
    pub name: Option<ResponderName>,
    /// The address its answers come from (the first one, for a named one).
    pub address: SocketAddr,
    raw: RawAddr,
    /// Its answers, request by request.
    pub tracker: SequenceTracker,
    /// Its figures, in the run's shape.
    pub stats: Stats,
    /// Its runs of requests without a timely answer.
    pub outages: OutageDetector,
    /// The first request it was asked (the one it was first heard on).
    pub first_seq: u64,
    /// Its last timely answer: the request, and when (ns since the start).
    pub last_answer: Option<(u64, u64)>,
}

/// What an answer's sender turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// A responder of the table.
    Known(usize),
    /// A known name from another address.
    Strange,
    /// A new responder beyond [`MAX_RESPONDERS`], or one first heard
    /// answering a request too old to place.
    Unlisted,
}

/// The responders of one run.
#[derive(Debug)]
pub struct Responders {
    all: Vec<Responder>,
    shape: Shape,
}

impl Responders {
    /// An empty table whose responders' statistics take `shape`.
    pub fn new(shape: Shape) -> Self {
        Self {
            all: Vec::with_capacity(MAX_RESPONDERS),
            shape,
        }
    }

    /// Every responder, in the order first heard.
    pub fn all(&self) -> &[Responder] {
        &self.all
    }

    /// Every responder, to account a request for.
    pub fn all_mut(&mut self) -> &mut [Responder] {
        &mut self.all
    }

    /// How many are known.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// The responder an answer to request `answers` (while `current` is
    /// in flight) came from: `name` from `from`. A new one is added, its
    /// tracker told of every request from `answers` on.
    pub fn find_or_add(
        &mut self,
        name: Option<ResponderName>,
        from: &RawAddr,
        answers: u64,
        current: u64,
    ) -> Sender {
        let found = self.all.iter().position(|r| match (name, r.name) {
            (Some(n), Some(m)) => n == m,
            (None, None) => r.raw.same_as(from),
            _ => false,
        });
        match found {
            Some(i) if self.all[i].raw.same_as(from) => Sender::Known(i),
            Some(_) => Sender::Strange,
            None => self.add(name, from, answers, current),
        }
    }

    fn add(
        &mut self,
        name: Option<ResponderName>,
        from: &RawAddr,
        answers: u64,
        current: u64,
    ) -> Sender {
        let Some(address) = from.to_socket_addr() else {
            return Sender::Unlisted;
        };
        if self.all.len() >= MAX_RESPONDERS
            || answers > current
            || current - answers > FIRST_ANSWER_BACK
        {
            return Sender::Unlisted;
        }
        let mut tracker = SequenceTracker::starting_at(WINDOW, answers);
        for seq in answers..=current {
            tracker.sent(seq);
            if seq < current {
                tracker.timed_out(seq);
            }
        }
        self.all.push(Responder {
            name,
            address,
            raw: *from,
            tracker,
            stats: Stats::shaped(self.shape),
            outages: OutageDetector::default(),
            first_seq: answers,
            last_answer: None,
        });
        Sender::Known(self.all.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::super::sequence::Reply;
    use super::*;

    fn raw(s: &str) -> RawAddr {
        RawAddr::from_socket_addr(s.parse().unwrap())
    }

    #[test]
    fn responders_are_known_by_name_and_address_or_address_alone() {
        let mut t = Responders::new(Shape::default());
        let (a, b) = (raw("10.0.0.2:8080"), raw("10.0.0.3:8080"));
        let r1 = Some("r1".parse().unwrap());
        assert_eq!(t.find_or_add(r1, &a, 0, 0), Sender::Known(0));
        assert_eq!(t.find_or_add(None, &b, 0, 0), Sender::Known(1));
        assert_eq!(t.find_or_add(r1, &a, 0, 0), Sender::Known(0));
        assert_eq!(t.find_or_add(None, &b, 0, 0), Sender::Known(1));
        assert_eq!(
            t.find_or_add(r1, &b, 0, 0),
            Sender::Strange,
            "r1's name from another address"
        );
        let r2 = Some("r2".parse().unwrap());
        assert_eq!(
            t.find_or_add(r2, &a, 0, 0),
            Sender::Known(2),
            "another name from one address: another responder"
        );
        assert_eq!(t.len(), 3);
        assert_eq!(t.all()[0].address, "10.0.0.2:8080".parse().unwrap());
    }

    #[test]
    fn a_responder_first_heard_late_has_its_answer_classified_late() {
        let mut t = Responders::new(Shape::default());
        let a = raw("10.0.0.2:8080");
        let Sender::Known(i) = t.find_or_add(None, &a, 7, 9) else {
            panic!("added")
        };
        let r = &mut t.all_mut()[i];
        assert_eq!(r.first_seq, 7);
        assert_eq!(r.tracker.on_reply(7), Reply::Late { reordered: false });
        assert_eq!(r.tracker.on_reply(9), Reply::Fresh);
        assert_eq!(r.tracker.on_reply(6), Reply::Stray, "before it was heard");
        let b = raw("10.0.0.3:8080");
        assert_eq!(
            t.find_or_add(None, &b, 0, 900),
            Sender::Unlisted,
            "too old to place"
        );
    }

    #[test]
    fn the_table_holds_at_most_its_bound() {
        let mut t = Responders::new(Shape::default());
        for i in 0..MAX_RESPONDERS {
            let a = raw(&format!("10.0.{}.{}:1", i / 200, i % 200 + 1));
            assert_eq!(t.find_or_add(None, &a, 0, 0), Sender::Known(i));
        }
        assert_eq!(
            t.find_or_add(None, &raw("10.9.9.9:1"), 0, 0),
            Sender::Unlisted
        );
    }
}
