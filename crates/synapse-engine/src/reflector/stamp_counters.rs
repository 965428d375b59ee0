//! The stateful STAMP reflector's sequence numbers (RFC 8762 §4.2.1): one
//! counter per session-sender, 0, 1, 2, … in the order its requests
//! arrive, so the sender can tell a request that never came from a reply
//! that was lost.
//!
//! A session is the sender's address. It is forgotten only after
//! [`COUNTER_IDLE`] of silence, far longer than the display's session
//! idle, so a slow paced sender keeps one count. The table is sized up
//! front; when it is full, a new sender is answered statelessly (its own
//! number copied), which the sender recognises, rather than evicting a
//! count someone relies on.
//!
//! Each count also keeps what RFC 8972 asks of a session: its Direct
//! Measurement counters (requests received, answers sent) and, for
//! Follow-Up Telemetry, the real send time of its previous answer once
//! the kernel's TX stamp of it is in.

use super::peer_hash::{PeerMap, peer_map};
use crate::protocol::tlv::FollowUp;
use crate::sys::addr::RawAddr;
use std::net::SocketAddr;
use std::time::Duration;

/// Silence after which a sender's count starts again from 0.
pub const COUNTER_IDLE: Duration = Duration::from_secs(300);
/// Senders counted at once.
pub const MAX_COUNTERS: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Counter {
    next: u32,
    last_ns: u64,
    /// Requests received in the session (R_RxC).
    received: u32,
    /// Answers sent (R_TxC).
    sent: u32,
    /// The send time of the answer numbered `follow.seq`, once stamped.
    follow: Option<FollowUp>,
    /// The number of its last answer, when that asked for its TX stamp
    /// and the stamp is not in yet (nor known lost).
    awaiting: Option<u32>,
}

impl Counter {
    fn new(now_ns: u64) -> Self {
        Self {
            next: 0,
            last_ns: now_ns,
            received: 0,
            sent: 0,
            follow: None,
            awaiting: None,
        }
    }
}

/// A stateful answer's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// The answer's sequence number.
    pub seq: u32,
    /// Requests received in the session, this one included (R_RxC).
    pub received: u32,
    /// Answers sent in the session before this one (R_TxC).
    pub sent: u32,
    /// The previous answer's real send time, when its stamp is in.
    pub follow_up: Option<FollowUp>,
    /// The previous answer's stamp was asked for and is not in yet.
    pub awaiting: bool,
}

/// Per-sender sequence numbers.
#[derive(Debug)]
pub struct StampCounters {
    counters: PeerMap<SocketAddr, Counter>,
    idle_ns: u64,
}

impl Default for StampCounters {
    fn default() -> Self {
        Self::new(COUNTER_IDLE)
    }
}

impl StampCounters {
    /// An empty table whose counts are forgotten after `idle` of silence.
    pub fn new(idle: Duration) -> Self {
        Self {
            counters: peer_map(MAX_COUNTERS),
            idle_ns: idle.as_nanos() as u64,
        }
    }

    /// The number for `from`'s request arriving at `now_ns`; `None` (answer
    /// statelessly) when the table is full or the address unreadable.
    #[cfg(test)]
    pub fn next(&mut self, from: &RawAddr, now_ns: u64) -> Option<u32> {
        self.count(from, now_ns).map(|c| c.seq)
    }

    /// `from`'s request arriving at `now_ns`: its answer's number and the
    /// session's counts (the answer counted as sent; see
    /// [`StampCounters::send_failed`]). `None` as for [`StampCounters::next`].
    #[inline]
    pub fn count(&mut self, from: &RawAddr, now_ns: u64) -> Option<Counted> {
        let peer = from.to_socket_addr()?;
        let full = self.counters.len() >= MAX_COUNTERS;
        let c = match self.counters.get_mut(&peer) {
            Some(c) => c,
            None if full => return None,
            None => self.counters.entry(peer).or_insert(Counter::new(now_ns)),
        };
        if now_ns.saturating_sub(c.last_ns) >= self.idle_ns {
            *c = Counter::new(now_ns);
        }
        c.last_ns = now_ns;
        let n = c.next;
        c.next = c.next.wrapping_add(1);
        c.received = c.received.wrapping_add(1);
        let sent = c.sent;
        c.sent = c.sent.wrapping_add(1);
        // Only the answer just before this one is followed up.
        let follow_up = c.follow.filter(|f| f.seq.wrapping_add(1) == n);
        Some(Counted {
            seq: n,
            received: c.received,
            sent,
            follow_up,
            awaiting: c.awaiting.is_some(),
        })
    }

    /// The send time of `peer`'s answer before the one numbered `seq`,
    /// if it is in (asked again once the error queue has been read).
    pub fn follow_up_for(&self, peer: &std::net::SocketAddr, seq: u32) -> Option<FollowUp> {
        let c = self.counters.get(peer)?;
        c.follow.filter(|f| f.seq.wrapping_add(1) == seq)
    }

    /// `peer`'s answer just sent asked for its TX stamp.
    pub fn await_stamp(&mut self, peer: &std::net::SocketAddr) {
        if let Some(c) = self.counters.get_mut(peer) {
            c.awaiting = Some(c.next.wrapping_sub(1));
        }
    }

    /// The answer just counted for `peer` could not be sent.
    pub fn send_failed(&mut self, peer: &std::net::SocketAddr) {
        if let Some(c) = self.counters.get_mut(peer) {
            c.sent = c.sent.wrapping_sub(1);
        }
    }

    /// `peer`'s answer numbered `f.seq` left at `f.t3`: the next answer
    /// follows it up (a stamp older than the one kept is not kept).
    pub fn stamped(&mut self, peer: &std::net::SocketAddr, f: FollowUp) {
        // The latest answer, or (while the request after it is being
        // answered, its number already taken) the one before it.
        if let Some(c) = self.counters.get_mut(peer) {
            let latest = c.next.wrapping_sub(1);
            if f.seq == latest || f.seq == latest.wrapping_sub(1) {
                c.follow = Some(f);
            }
            if c.awaiting == Some(f.seq) {
                c.awaiting = None;
            }
        }
    }

    /// `peer`'s answer numbered `seq` will never be stamped (the kernel
    /// dropped its stamp): its next request reads no queue for it.
    pub fn stamp_lost(&mut self, peer: &std::net::SocketAddr, seq: u32) {
        if let Some(c) = self.counters.get_mut(peer)
            && c.awaiting == Some(seq)
        {
            c.awaiting = None;
        }
    }

    /// Whether `peer`'s last answer's stamp is still awaited.
    #[cfg(test)]
    pub fn is_awaiting(&self, peer: &std::net::SocketAddr) -> bool {
        self.counters
            .get(peer)
            .is_some_and(|c| c.awaiting.is_some())
    }

    /// Forgets senders silent for the idle time. Runs every tick.
    pub fn prune(&mut self, now_ns: u64) {
        let idle_ns = self.idle_ns;
        self.counters
            .retain(|_, c| now_ns.saturating_sub(c.last_ns) < idle_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> RawAddr {
        RawAddr::from_socket_addr(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    #[test]
    fn each_sender_counts_from_zero_in_arrival_order() {
        let mut c = StampCounters::new(Duration::from_secs(1));
        assert_eq!(c.next(&addr(1), 0), Some(0));
        assert_eq!(c.next(&addr(1), 1), Some(1));
        assert_eq!(c.next(&addr(2), 2), Some(0));
        assert_eq!(c.next(&addr(1), 3), Some(2));
    }

    #[test]
    fn silence_restarts_the_count_and_pruning_forgets() {
        let mut c = StampCounters::new(Duration::from_nanos(100));
        assert_eq!(c.next(&addr(1), 0), Some(0));
        assert_eq!(c.next(&addr(1), 99), Some(1));
        assert_eq!(c.next(&addr(1), 199), Some(0), "100 ns of silence");
        c.prune(1_000);
        assert!(c.counters.is_empty());
    }

    #[test]
    fn a_full_table_answers_new_senders_statelessly() {
        let mut c = StampCounters::new(Duration::from_secs(1));
        for port in 0..MAX_COUNTERS as u16 {
            assert!(c.next(&addr(port), 0).is_some());
        }
        assert_eq!(c.next(&addr(u16::MAX), 0), None);
        assert_eq!(c.next(&addr(0), 1), Some(1), "known senders keep counting");
    }

    #[test]
    fn only_the_awaited_answers_stamp_or_loss_ends_the_wait() {
        let mut c = StampCounters::new(Duration::from_secs(1));
        let p = SocketAddr::from(([127, 0, 0, 1], 1));
        let stamp = |seq| FollowUp {
            seq,
            t3: crate::protocol::stamp::WireTime::from_unix_ns(5),
            mode: crate::protocol::tlv::method::SOFTWARE,
        };
        c.next(&addr(1), 0);
        c.await_stamp(&p); // answer 0
        c.next(&addr(1), 1);
        c.await_stamp(&p); // answer 1
        c.stamped(&p, stamp(0));
        c.stamp_lost(&p, 0);
        assert!(c.is_awaiting(&p), "answer 1's stamp is still to come");
        c.stamp_lost(&p, 1);
        assert!(!c.is_awaiting(&p));
        c.next(&addr(1), 2);
        c.await_stamp(&p); // answer 2
        c.stamped(&p, stamp(2));
        assert!(!c.is_awaiting(&p));
    }
}
