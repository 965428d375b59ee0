//! The reflector's clients: one session per peer address, what each sent,
//! and when it went quiet, with its source's rate bucket. The table is
//! sized up front (`--max-sessions`), so a new peer never allocates on the
//! hot path, and a peer beyond it is refused until a session ends.

use super::limits::{Limits, Pace, SourceBuckets};
use super::peer_hash::{PeerMap, peer_map};
use super::{ReflectorEvent, ReflectorTotals, Refusal, SessionInfo};
use crate::sys::addr::RawAddr;
use std::net::SocketAddr;
use std::time::Duration;

struct Session {
    addr: RawAddr,
    /// Its source address's bucket.
    bucket: usize,
    info: SessionInfo,
}

/// Every client heard from recently, and the reflector's totals.
pub struct Sessions {
    sessions: Vec<Session>,
    /// Where each peer's session is in `sessions`. Sized for
    /// `MAX_SESSIONS` up front, so a new peer never allocates.
    index: PeerMap<SocketAddr, usize>,
    /// Index of the session that sent the previous datagram: the common case
    /// of one busy client skips the table search.
    last: usize,
    /// Sessions served at once.
    max: usize,
    /// One rate bucket per source address.
    sources: SourceBuckets,
    /// Life totals.
    pub totals: ReflectorTotals,
    idle_ns: u64,
    /// Session-ended events waiting for room in the ring; they must not be
    /// dropped, because headless mode prints one line per session.
    backlog: Vec<ReflectorEvent>,
}

impl Sessions {
    /// An empty table for `limits.max_sessions`, each source held to
    /// `limits.per_source_pps`; a peer silent for `idle` has ended its
    /// session.
    pub fn new(idle: Duration, limits: &Limits) -> Self {
        let max = limits.max_sessions.max(1);
        let pace = Pace::new(limits.per_source_pps, limits.burst);
        Self {
            sessions: Vec::with_capacity(max),
            index: peer_map(max),
            last: usize::MAX,
            max,
            sources: SourceBuckets::new(pace, max),
            totals: ReflectorTotals::default(),
            idle_ns: idle.as_nanos() as u64,
            backlog: Vec::new(),
        }
    }

    /// The session of a datagram from `from` at `now_ns`, opened when new,
    /// if its source is within its rate: the index to account it with, or
    /// why it is refused (counted in the session's own line).
    #[cfg(test)]
    pub fn admit(&mut self, from: &RawAddr, now_ns: u64) -> Result<usize, Refusal> {
        let idx = self.find(from, now_ns)?;
        if self.within_rate(idx, now_ns) {
            Ok(idx)
        } else {
            Err(self.refuse(idx, Refusal::Rate))
        }
    }

    /// The session of a datagram from `from` at `now_ns`, opened when new;
    /// refused only when it is new and the table is full.
    #[inline(always)]
    pub fn find(&mut self, from: &RawAddr, now_ns: u64) -> Result<usize, Refusal> {
        // Refused datagrams keep a session alive too (a moment-old clock;
        // an answer sets the exact time).
        if let Some(s) = self.sessions.get_mut(self.last)
            && s.addr.same_as(from)
        {
            s.info.last_seen_ns = now_ns;
            return Ok(self.last);
        }
        let peer = from.to_socket_addr().ok_or(Refusal::Malformed)?;
        let idx = match self.index.get(&peer) {
            Some(&i) => i,
            None => self.open(*from, peer, now_ns).ok_or(Refusal::Sessions)?,
        };
        self.last = idx;
        self.sessions[idx].info.last_seen_ns = now_ns;
        Ok(idx)
    }

    /// Whether session `idx`'s source may have one more datagram answered
    /// at `now_ns` (booked when it may; nothing changes when not).
    #[inline]
    pub fn within_rate(&mut self, idx: usize, now_ns: u64) -> bool {
        let bucket = self.sessions[idx].bucket;
        self.sources.admit(bucket, now_ns)
    }

    /// Counts one answered datagram of `bytes` in session `idx`, answered
    /// at `now_ns`.
    #[inline]
    pub fn account(&mut self, idx: usize, bytes: u64, now_ns: u64) {
        self.totals.packets += 1;
        self.totals.bytes += bytes;
        if let Some(s) = self.sessions.get_mut(idx) {
            s.info.packets += 1;
            s.info.bytes += bytes;
            s.info.last_seen_ns = now_ns;
        }
    }

    /// Counts a refusal of session `idx`'s datagram, and returns it.
    #[inline]
    pub fn refuse(&mut self, idx: usize, why: Refusal) -> Refusal {
        if let Some(s) = self.sessions.get_mut(idx) {
            s.info.refused.count(why);
        }
        why
    }

    fn open(&mut self, addr: RawAddr, peer: SocketAddr, now_ns: u64) -> Option<usize> {
        if self.sessions.len() >= self.max {
            return None;
        }
        let bucket = self.sources.attach(peer.ip())?;
        self.totals.sessions += 1;
        self.index.insert(peer, self.sessions.len());
        self.sessions.push(Session {
            addr,
            bucket,
            info: SessionInfo {
                peer,
                packets: 0,
                bytes: 0,
                last_seen_ns: now_ns,
                refused: super::Refusals::default(),
            },
        });
        Some(self.sessions.len() - 1)
    }

    /// Closes idle sessions and publishes state. Runs every tick.
    pub fn tick(&mut self, now_ns: u64, events: &mut rtrb::Producer<ReflectorEvent>) {
        let idle_ns = self.idle_ns;
        let mut i = 0;
        while i < self.sessions.len() {
            let info = self.sessions[i].info;
            if now_ns.saturating_sub(info.last_seen_ns) >= idle_ns {
                self.backlog.push(ReflectorEvent::Ended(info));
                self.sources.detach(self.sessions[i].bucket);
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
        self.sources.prune(now_ns);
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

    fn answer(s: &mut Sessions, port: u16, now_ns: u64) {
        let idx = s.admit(&addr(port), now_ns).unwrap();
        s.account(idx, 10, now_ns);
    }

    fn from_host(host: u8, port: u16) -> RawAddr {
        RawAddr::from_socket_addr(SocketAddr::from(([192, 0, 2, host], port)))
    }

    #[test]
    fn sessions_beyond_the_cap_are_refused_until_one_ends() {
        let limits = Limits {
            max_sessions: 2,
            ..Limits::UNLIMITED
        };
        let mut s = Sessions::new(Duration::from_nanos(100), &limits);
        let (mut tx, _rx) = rtrb::RingBuffer::new(64);
        assert!(s.admit(&from_host(1, 1000), 0).is_ok());
        assert!(s.admit(&from_host(2, 1000), 0).is_ok());
        assert_eq!(s.admit(&from_host(3, 1000), 0), Err(Refusal::Sessions));
        assert!(s.admit(&from_host(1, 1000), 50).is_ok(), "known ones go on");
        s.tick(120, &mut tx);
        assert!(s.admit(&from_host(3, 1000), 130).is_ok(), "2 went idle");
        assert_eq!(s.totals.sessions, 3);
    }

    #[test]
    fn a_source_over_its_rate_is_refused_across_its_ports() {
        let limits = Limits {
            per_source_pps: 1000,
            burst: 3,
            ..Limits::UNLIMITED
        };
        let mut s = Sessions::new(Duration::from_secs(1), &limits);
        let ok = |s: &mut Sessions, port| s.admit(&from_host(1, port), 0).is_ok();
        // Three back to back from one address, whichever its port.
        assert!(ok(&mut s, 1000) && ok(&mut s, 1001) && ok(&mut s, 1002));
        assert_eq!(s.admit(&from_host(1, 1003), 0), Err(Refusal::Rate));
        assert!(s.admit(&from_host(2, 1000), 0).is_ok(), "not another's");
        assert!(
            s.admit(&from_host(1, 1000), 1_000_000).is_ok(),
            "1 ms later"
        );
        let refused: u64 = s.sessions.iter().map(|x| x.info.refused.rate).sum();
        assert_eq!(refused, 1, "counted in the refused session's own line");
    }

    #[test]
    fn sessions_are_found_through_the_index_across_expiry() {
        let mut echo = Sessions::new(Duration::from_nanos(100), &Limits::UNLIMITED);
        let (mut tx, mut rx) = rtrb::RingBuffer::new(64);
        // Three peers, interleaved so the last-sender shortcut is not enough.
        for port in [1, 2, 3, 1, 3, 2, 1] {
            answer(&mut echo, port, 0);
        }
        assert_eq!(echo.totals.sessions, 3);
        assert_eq!(echo.index.len(), 3);
        // Peer 1 stays active; 2 and 3 go idle and are removed (swap_remove
        // moves entries, so the index must follow them).
        answer(&mut echo, 1, 150);
        echo.tick(200, &mut tx);
        assert_eq!(echo.sessions.len(), 1);
        assert_eq!(echo.index.len(), 1);
        for (peer, &i) in &echo.index {
            assert_eq!(echo.sessions[i].info.peer, *peer);
        }
        answer(&mut echo, 3, 210);
        answer(&mut echo, 1, 220);
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

    proptest::proptest! {
        /// The session key under any traffic: whatever addresses arrive, in
        /// whatever order, with ticks between, the table never exceeds its
        /// cap, its index always points at the session it names, and every
        /// datagram is either admitted or refused for a stated reason.
        #[test]
        fn the_session_table_holds_under_any_traffic(
            ops in proptest::collection::vec((0u8..6, 0u16..4, 0u64..300), 1..300),
        ) {
            let limits = Limits { max_sessions: 4, per_source_pps: 1000, burst: 2, ..Limits::UNLIMITED };
            let mut s = Sessions::new(Duration::from_nanos(500), &limits);
            let (mut tx, mut rx) = rtrb::RingBuffer::new(4096);
            let mut now = 0u64;
            for (host, port, step) in ops {
                now += step;
                if step > 250 {
                    s.tick(now, &mut tx);
                    while rx.pop().is_ok() {}
                    continue;
                }
                let from = from_host(host, 1000 + port);
                match s.admit(&from, now) {
                    Ok(idx) => {
                        proptest::prop_assert!(s.sessions[idx].addr.same_as(&from));
                        s.account(idx, 10, now);
                    }
                    Err(Refusal::Sessions) => proptest::prop_assert_eq!(s.sessions.len(), 4),
                    Err(why) => proptest::prop_assert_eq!(why, Refusal::Rate),
                }
                proptest::prop_assert!(s.sessions.len() <= 4);
                proptest::prop_assert_eq!(s.index.len(), s.sessions.len());
                for (peer, &i) in &s.index {
                    proptest::prop_assert_eq!(s.sessions[i].info.peer, *peer);
                }
            }
        }
    }
}
