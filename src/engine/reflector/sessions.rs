//! The reflector's clients: one session per peer address, what each sent,
//! and when it went quiet. The table is sized up front, so a new peer never
//! allocates on the hot path.

use super::{ReflectorEvent, ReflectorTotals, SessionInfo};
use crate::engine::sys::RawAddr;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Sessions tracked individually; further peers are only counted in totals.
pub const MAX_SESSIONS: usize = 4096;

struct Session {
    addr: RawAddr,
    info: SessionInfo,
}

/// Every client heard from recently, and the reflector's totals.
pub struct Sessions {
    sessions: Vec<Session>,
    /// Where each peer's session is in `sessions`. Sized for
    /// `MAX_SESSIONS` up front, so a new peer never allocates.
    index: HashMap<SocketAddr, usize>,
    /// Index of the session that sent the previous datagram: the common case
    /// of one busy client skips the table search.
    last: usize,
    /// Life totals.
    pub totals: ReflectorTotals,
    idle_ns: u64,
    /// Session-ended events waiting for room in the ring; they must not be
    /// dropped, because headless mode prints one line per session.
    backlog: Vec<ReflectorEvent>,
}

impl Sessions {
    /// An empty table; a peer silent for `idle` has ended its session.
    pub fn new(idle: Duration) -> Self {
        Self {
            sessions: Vec::with_capacity(MAX_SESSIONS),
            index: HashMap::with_capacity(MAX_SESSIONS),
            last: usize::MAX,
            totals: ReflectorTotals::default(),
            idle_ns: idle.as_nanos() as u64,
            backlog: Vec::new(),
        }
    }

    /// Counts one answered datagram of `bytes` from `from`.
    #[inline]
    pub fn account(&mut self, from: &RawAddr, bytes: u64, now_ns: u64) {
        self.totals.packets += 1;
        self.totals.bytes += bytes;
        let idx = if self
            .sessions
            .get(self.last)
            .is_some_and(|s| s.addr.same_as(from))
        {
            self.last
        } else {
            let Some(peer) = from.to_socket_addr() else {
                return;
            };
            match self.index.get(&peer) {
                Some(&i) => i,
                None if self.sessions.len() < MAX_SESSIONS => self.open(*from, peer, now_ns),
                None => return,
            }
        };
        self.last = idx;
        let info = &mut self.sessions[idx].info;
        info.packets += 1;
        info.bytes += bytes;
        info.last_seen_ns = now_ns;
    }

    fn open(&mut self, addr: RawAddr, peer: SocketAddr, now_ns: u64) -> usize {
        self.totals.sessions += 1;
        self.index.insert(peer, self.sessions.len());
        self.sessions.push(Session {
            addr,
            info: SessionInfo {
                peer,
                packets: 0,
                bytes: 0,
                last_seen_ns: now_ns,
            },
        });
        self.sessions.len() - 1
    }

    /// Closes idle sessions and publishes state. Runs every tick.
    pub fn tick(&mut self, now_ns: u64, events: &mut rtrb::Producer<ReflectorEvent>) {
        let idle_ns = self.idle_ns;
        let mut i = 0;
        while i < self.sessions.len() {
            let info = self.sessions[i].info;
            if now_ns.saturating_sub(info.last_seen_ns) >= idle_ns {
                self.backlog.push(ReflectorEvent::Ended(info));
                self.index.remove(&info.peer);
                self.sessions.swap_remove(i);
                if let Some(moved) = self.sessions.get(i) {
                    self.index.insert(moved.info.peer, i);
                }
                self.last = usize::MAX;
            } else {
                i += 1;
            }
        }
        // Ended sessions first: they must not lose their ring slots to the
        // best-effort snapshots below (a slow UI just sees fewer of those).
        self.flush_backlog(events);
        for s in &self.sessions {
            let _ = events.push(ReflectorEvent::Active(s.info));
        }
        let _ = events.push(ReflectorEvent::Totals(self.totals, now_ns));
    }

    /// Everything the front end has not been told has ended.
    pub fn unreported(&mut self) -> Vec<SessionInfo> {
        let ended = self.backlog.drain(..).filter_map(|e| match e {
            ReflectorEvent::Ended(s) => Some(s),
            _ => None,
        });
        ended
            .chain(self.sessions.drain(..).map(|s| s.info))
            .collect()
    }

    /// Hands queued session-ended events to the ring, as room allows.
    pub fn flush_backlog(&mut self, events: &mut rtrb::Producer<ReflectorEvent>) {
        let room = events.slots().min(self.backlog.len());
        for ev in self.backlog.drain(..room) {
            let _ = events.push(ev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> RawAddr {
        RawAddr::from_socket_addr(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    #[test]
    fn sessions_are_found_through_the_index_across_expiry() {
        let mut echo = Sessions::new(Duration::from_nanos(100));
        let (mut tx, mut rx) = rtrb::RingBuffer::new(64);
        // Three peers, interleaved so the last-sender shortcut is not enough.
        for port in [1, 2, 3, 1, 3, 2, 1] {
            echo.account(&addr(port), 10, 0);
        }
        assert_eq!(echo.totals.sessions, 3);
        assert_eq!(echo.index.len(), 3);
        // Peer 1 stays active; 2 and 3 go idle and are removed (swap_remove
        // moves entries, so the index must follow them).
        echo.account(&addr(1), 10, 150);
        echo.tick(200, &mut tx);
        assert_eq!(echo.sessions.len(), 1);
        assert_eq!(echo.index.len(), 1);
        for (peer, &i) in &echo.index {
            assert_eq!(echo.sessions[i].info.peer, *peer);
        }
        echo.account(&addr(3), 10, 210);
        echo.account(&addr(1), 10, 220);
        let one = echo.sessions[echo.index[&addr(1).to_socket_addr().unwrap()]].info;
        assert_eq!((one.packets, one.bytes), (5, 50));
        assert_eq!(echo.totals.sessions, 4, "peer 3 came back as a new session");
        let ended: Vec<_> = std::iter::from_fn(|| rx.pop().ok())
            .filter_map(|e| match e {
                ReflectorEvent::Ended(s) => Some((s.peer.port(), s.packets)),
                _ => None,
            })
            .collect();
        assert_eq!(ended.len(), 2);
        assert!(
            ended.contains(&(2, 2)) && ended.contains(&(3, 2)),
            "{ended:?}"
        );
    }
}
