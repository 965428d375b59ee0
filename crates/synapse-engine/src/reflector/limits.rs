//! How much the reflector answers: a token bucket per source address
//! (`--max-pps`, `--burst`), one for all sources together
//! (`--max-total-pps`), and a cap on sessions at once (`--max-sessions`).
//!
//! A bucket is kept in its GCRA form (the "virtual scheduling" of ITU-T
//! I.371): one number, the time at which the bucket would be empty again.
//! Admitting a datagram is a compare and an add, with no division and no
//! float on the hot path. A source is its IP address, not its port: a
//! reflection victim is an address, and a stranger spoofing it from many
//! ports must not multiply its share.

use super::peer_hash::{PeerMap, peer_map};
use std::net::IpAddr;

/// The reflector's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Datagrams per second answered to one source address (0: no limit).
    pub per_source_pps: u32,
    /// Datagrams one source (and, for the total, all of them) may send back
    /// to back before its rate applies.
    pub burst: u32,
    /// Datagrams per second answered in all (0: no limit).
    pub total_pps: u32,
    /// Sessions (source address and port) served at once; a new one beyond
    /// them is refused until one ends.
    pub max_sessions: usize,
}

impl Limits {
    /// The defaults, justified in docs/security.md ("Choosing the limits"):
    /// above what one closed-loop client asks of a kernel UDP path
    /// (busy-poll on loopback runs at 150–200 k/s here), a
    /// millisecond of that rate as burst (a paced sender's tick), four
    /// sources' worth in total, and the session table's size.
    pub const DEFAULT: Self = Self {
        per_source_pps: 250_000,
        burst: 256,
        total_pps: 1_000_000,
        max_sessions: 4096,
    };

    /// No rate limit at all (sessions still capped at the default).
    pub const UNLIMITED: Self = Self {
        per_source_pps: 0,
        total_pps: 0,
        ..Self::DEFAULT
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl std::fmt::Display for Limits {
    /// `250000/s per source (burst 256), 1000000/s in all, 4096 sessions`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = |pps: u32| match pps {
            0 => "unlimited".to_string(),
            n => format!("{n}/s"),
        };
        write!(
            f,
            "{} per source (burst {}), {} in all, {} sessions",
            rate(self.per_source_pps),
            self.burst,
            rate(self.total_pps),
            self.max_sessions
        )
    }
}

/// A rate and burst, in the units the bucket works in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// Nanoseconds one datagram uses up (0: unlimited).
    interval_ns: u64,
    /// How far ahead of now the bucket may be booked: the burst.
    tolerance_ns: u64,
}

impl Pace {
    /// `pps` datagrams per second (0: unlimited) with `burst` back to back.
    pub fn new(pps: u32, burst: u32) -> Self {
        let interval_ns = if pps == 0 {
            0
        } else {
            1_000_000_000 / u64::from(pps)
        };
        Self {
            interval_ns,
            tolerance_ns: interval_ns * u64::from(burst.max(1) - 1),
        }
    }

    /// Whether this pace limits anything.
    pub fn is_limited(&self) -> bool {
        self.interval_ns > 0
    }

    /// Admits one datagram at `now_ns` against the bucket whose empty time
    /// is `tat`, and books it when admitted.
    #[inline]
    pub fn admit(&self, tat: &mut u64, now_ns: u64) -> bool {
        let booked = (*tat).max(now_ns);
        if booked - now_ns > self.tolerance_ns {
            return false;
        }
        *tat = booked + self.interval_ns;
        true
    }
}

#[derive(Debug)]
struct Source {
    ip: IpAddr,
    /// When this source's bucket is empty again.
    tat: u64,
    /// Sessions of this source still open.
    sessions: u32,
}

/// One bucket per source address, shared by its sessions. Sized up front:
/// twice the session cap, because a drained bucket outlives its sessions
/// (a source that pauses must not come back with a fresh burst).
#[derive(Debug)]
pub struct SourceBuckets {
    pace: Pace,
    room: usize,
    slots: Vec<Source>,
    free: Vec<usize>,
    index: PeerMap<IpAddr, usize>,
}

impl SourceBuckets {
    /// Room for the sources of `max_sessions` sessions, each held to `pace`.
    pub fn new(pace: Pace, max_sessions: usize) -> Self {
        let room = max_sessions.saturating_mul(2).max(1);
        Self {
            pace,
            room,
            slots: Vec::with_capacity(room),
            free: Vec::with_capacity(room),
            index: peer_map(room),
        }
    }

    /// The bucket of a new session from `ip`; `None` when every slot holds
    /// a source still booked ahead (then the session is refused).
    pub fn attach(&mut self, ip: IpAddr) -> Option<usize> {
        if let Some(&slot) = self.index.get(&ip) {
            self.slots[slot].sessions += 1;
            return Some(slot);
        }
        let source = Source {
            ip,
            tat: 0,
            sessions: 1,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = source;
                slot
            }
            None if self.slots.len() < self.room => {
                self.slots.push(source);
                self.slots.len() - 1
            }
            None => return None,
        };
        self.index.insert(ip, slot);
        Some(slot)
    }

    /// A session of the source in `slot` ended.
    pub fn detach(&mut self, slot: usize) {
        if let Some(s) = self.slots.get_mut(slot) {
            s.sessions = s.sessions.saturating_sub(1);
        }
    }

    /// Admits one datagram from the source in `slot`.
    #[inline]
    pub fn admit(&mut self, slot: usize, now_ns: u64) -> bool {
        !self.pace.is_limited()
            || self
                .slots
                .get_mut(slot)
                .is_some_and(|s| self.pace.admit(&mut s.tat, now_ns))
    }

    /// Frees the slots of sources with no session whose bucket has refilled
    /// (forgetting them changes nothing). Runs every tick.
    pub fn prune(&mut self, now_ns: u64) {
        for (slot, s) in self.slots.iter_mut().enumerate() {
            if s.sessions == 0 && s.tat <= now_ns && self.index.get(&s.ip) == Some(&slot) {
                self.index.remove(&s.ip);
                self.free.push(slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_bucket_admits_its_burst_then_its_rate() {
        // 1000/s: one datagram per ms, five back to back.
        let pace = Pace::new(1000, 5);
        let mut tat = 0;
        let now = 10 * MS;
        let burst = (0..10).filter(|_| pace.admit(&mut tat, now)).count();
        assert_eq!(burst, 5, "the burst, then nothing at the same instant");
        assert!(!pace.admit(&mut tat, now + MS / 2));
        assert!(pace.admit(&mut tat, now + MS), "one interval frees one");
        assert!(!pace.admit(&mut tat, now + MS));
        // Over a long run the rate holds: 1000 offered per ms for 100 ms.
        let (mut tat, mut admitted) = (0, 0);
        for us in 0..100_000u64 {
            admitted += u64::from(pace.admit(&mut tat, 1_000 * MS + us * 1_000));
        }
        assert!((100..=105).contains(&admitted), "{admitted}");
    }

    #[test]
    fn zero_is_unlimited_and_a_burst_of_one_is_strict_spacing() {
        let free = Pace::new(0, 1);
        let mut tat = 0;
        assert!(!free.is_limited());
        assert!((0..1000).all(|_| free.admit(&mut tat, 5)));
        let strict = Pace::new(1000, 1);
        let mut tat = 0;
        assert!(strict.admit(&mut tat, MS));
        assert!(!strict.admit(&mut tat, MS + MS - 1));
        assert!(strict.admit(&mut tat, 2 * MS));
    }

    #[test]
    fn sources_share_a_bucket_by_address_and_outlive_their_sessions() {
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        let mut b = SourceBuckets::new(Pace::new(1000, 2), 1);
        let s1 = b.attach(ip).unwrap();
        assert_eq!(b.attach(ip), Some(s1), "a second port, the same bucket");
        assert!(b.admit(s1, 0) && b.admit(s1, 0) && !b.admit(s1, 0));
        let s2 = b.attach(other).unwrap();
        assert_ne!(s1, s2);
        assert!(b.admit(s2, 0), "another address has its own");
        // Room is 2 slots: a third address waits for one to free.
        assert_eq!(b.attach("192.0.2.3".parse().unwrap()), None);
        b.detach(s1);
        b.detach(s1);
        b.prune(MS / 2);
        assert_eq!(b.attach("192.0.2.3".parse().unwrap()), None, "still booked");
        b.prune(2 * MS);
        let s3 = b.attach("192.0.2.3".parse().unwrap()).unwrap();
        assert_eq!(s3, s1, "the refilled source's slot is reused");
        assert!(b.admit(s3, 2 * MS) && b.admit(s3, 2 * MS));
    }

    #[test]
    fn the_defaults_read_as_a_sentence() {
        assert_eq!(
            Limits::DEFAULT.to_string(),
            "250000/s per source (burst 256), 1000000/s in all, 4096 sessions"
        );
        assert_eq!(
            Limits::UNLIMITED.to_string(),
            "unlimited per source (burst 256), unlimited in all, 4096 sessions"
        );
    }
}
