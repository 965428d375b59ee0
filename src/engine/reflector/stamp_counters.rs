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

use crate::engine::sys::RawAddr;
use std::collections::HashMap;
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
}

/// Per-sender sequence numbers.
#[derive(Debug)]
pub struct StampCounters {
    counters: HashMap<SocketAddr, Counter>,
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
            counters: HashMap::with_capacity(MAX_COUNTERS),
            idle_ns: idle.as_nanos() as u64,
        }
    }

    /// The number for `from`'s request arriving at `now_ns`; `None` (answer
    /// statelessly) when the table is full or the address unreadable.
    #[inline]
    pub fn next(&mut self, from: &RawAddr, now_ns: u64) -> Option<u32> {
        let peer = from.to_socket_addr()?;
        let full = self.counters.len() >= MAX_COUNTERS;
        let c = match self.counters.get_mut(&peer) {
            Some(c) => c,
            None if full => return None,
            None => self.counters.entry(peer).or_insert(Counter {
                next: 0,
                last_ns: now_ns,
            }),
        };
        if now_ns.saturating_sub(c.last_ns) >= self.idle_ns {
            c.next = 0;
        }
        c.last_ns = now_ns;
        let n = c.next;
        c.next = c.next.wrapping_add(1);
        Some(n)
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
}
