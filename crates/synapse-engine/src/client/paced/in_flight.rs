//! The requests a paced run has in flight: one slot per sequence number in
//! a ring sized up front (a power of two, so a slot is `seq & mask`), each
//! holding what is known of the request until its deadline settles it.

use crate::points::Points;

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Sent, no reply yet.
    Pending,
    /// Its reply came in time (already recorded as a sample).
    Answered,
}

/// One request in flight.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Its sequence number.
    pub seq: u64,
    /// Pending or answered.
    pub state: State,
    /// When it was sent, ns since the run's epoch (monotonic).
    pub sent_ns: u64,
    /// How late after its slot it left, ns.
    pub lag_ns: u64,
    /// When its reply came, ns since the epoch (answered only).
    pub answered_ns: u64,
    /// The send succeeded (a failed one has no TX stamps to wait for).
    pub tx_sent: bool,
    /// Part of the warm-up.
    pub warmup: bool,
    /// Everything known of it, for its log row and its split.
    pub points: Points,
}

/// The ring. Allocated once.
#[derive(Debug)]
pub struct InFlight {
    slots: Box<[Option<Entry>]>,
    mask: u64,
}

impl InFlight {
    /// Room for `at_least` requests at once.
    pub fn new(at_least: usize) -> Self {
        let n = at_least.max(2).next_power_of_two();
        Self {
            slots: vec![None; n].into_boxed_slice(),
            mask: n as u64 - 1,
        }
    }

    /// Requests it can hold.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Files a request just sent. Returns the one whose slot it takes, if
    /// that one is still there: more were sent within a timeout than the
    /// ring was sized for (a burst of short Poisson gaps).
    #[inline]
    pub fn insert(&mut self, entry: Entry) -> Option<Entry> {
        let slot = &mut self.slots[(entry.seq & self.mask) as usize];
        // Nearly always empty (its last request settled at its deadline):
        // then nothing is moved out, where `replace` copied the whole
        // empty slot (an entry is a few hundred bytes) to hand it back.
        let displaced = if slot.is_some() { slot.take() } else { None };
        *slot = Some(entry);
        displaced
    }

    /// Request `seq`, while it is in flight.
    #[inline]
    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Entry> {
        self.slots[(seq & self.mask) as usize]
            .as_mut()
            .filter(|e| e.seq == seq)
    }

    /// Empties request `seq`'s slot, if it is in flight (settled where it
    /// lay).
    #[inline]
    pub fn clear(&mut self, seq: u64) {
        let slot = &mut self.slots[(seq & self.mask) as usize];
        if slot.is_some_and(|e| e.seq == seq) {
            *slot = None;
        }
    }

    /// Takes request `seq` out, if it is in flight.
    #[inline]
    pub fn take(&mut self, seq: u64) -> Option<Entry> {
        let slot = &mut self.slots[(seq & self.mask) as usize];
        if slot.is_some_and(|e| e.seq == seq) {
            slot.take()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64) -> Entry {
        Entry {
            seq,
            state: State::Pending,
            sent_ns: seq,
            lag_ns: 0,
            answered_ns: 0,
            tx_sent: true,
            warmup: false,
            points: Points::default(),
        }
    }

    #[test]
    fn requests_are_found_by_number_until_taken() {
        let mut f = InFlight::new(3);
        assert_eq!(f.capacity(), 4);
        for s in 0..4 {
            assert!(f.insert(entry(s)).is_none());
        }
        f.get_mut(2).unwrap().state = State::Answered;
        assert_eq!(f.take(2).unwrap().state, State::Answered);
        assert!(f.take(2).is_none());
        f.clear(7);
        assert_eq!(
            f.get_mut(3).unwrap().seq,
            3,
            "another number's slot is left"
        );
        f.clear(3);
        assert!(f.get_mut(3).is_none());
        assert!(f.get_mut(6).is_none(), "same slot, other number");
    }

    #[test]
    fn an_overfull_ring_hands_back_the_request_it_displaces() {
        let mut f = InFlight::new(2);
        f.insert(entry(0));
        f.insert(entry(1));
        assert_eq!(f.insert(entry(2)).unwrap().seq, 0);
        assert!(f.get_mut(0).is_none());
    }
}
