//! The TCP echo reflector's connections: a slab of slots (a token names a
//! slot and its generation, so an event for a connection closed earlier in
//! the same batch is never taken for the one that reuses its slot), and how
//! many each source address holds.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::time::Instant;

/// One open connection.
#[derive(Debug)]
pub struct Conn {
    /// The socket (non-blocking).
    pub fd: OwnedFd,
    /// The client.
    pub peer: SocketAddr,
    /// Bytes received that the kernel would not take back yet: the client
    /// is not reading. Empty on the ordinary path (nothing is allocated).
    pub pending: Vec<u8>,
    /// Since when `pending` has not drained (stalled past a limit: closed).
    pub blocked_since: Option<Instant>,
}

/// Why a connection was refused at accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refuse {
    /// Its source is outside `--allow`.
    NotAllowed,
    /// Its source already holds `--max-connections-per-source`.
    PerSource,
    /// `--max-sessions` connections are open.
    Total,
}

/// The open connections.
#[derive(Debug, Default)]
pub struct Conns {
    slots: Vec<Option<Conn>>,
    generations: Vec<u32>,
    free: Vec<usize>,
    per_source: HashMap<IpAddr, u32>,
    open: usize,
}

impl Conns {
    /// How many are open.
    pub fn open(&self) -> usize {
        self.open
    }

    /// Whether one more from `ip` fits under both caps.
    pub fn admits(&self, ip: IpAddr, per_source: u32, total: usize) -> Result<(), Refuse> {
        if self.open >= total {
            return Err(Refuse::Total);
        }
        if self.per_source.get(&ip).copied().unwrap_or(0) >= per_source {
            return Err(Refuse::PerSource);
        }
        Ok(())
    }

    /// Keeps `conn`; returns its token.
    pub fn insert(&mut self, conn: Conn) -> u64 {
        *self.per_source.entry(conn.peer.ip()).or_insert(0) += 1;
        self.open += 1;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.generations.push(0);
                self.slots.len() - 1
            }
        };
        self.slots[slot] = Some(conn);
        token(slot, self.generations[slot])
    }

    /// The connection `token` names, if it is still open.
    pub fn get(&mut self, token: u64) -> Option<&mut Conn> {
        let (slot, generation) = untoken(token);
        if self.generations.get(slot) != Some(&generation) {
            return None;
        }
        self.slots.get_mut(slot).and_then(Option::as_mut)
    }

    /// Forgets the connection `token` names (dropping it closes it).
    pub fn remove(&mut self, token: u64) -> Option<Conn> {
        let (slot, generation) = untoken(token);
        if self.generations.get(slot) != Some(&generation) {
            return None;
        }
        let conn = self.slots.get_mut(slot)?.take()?;
        self.generations[slot] = self.generations[slot].wrapping_add(1);
        self.free.push(slot);
        self.open -= 1;
        if let Some(n) = self.per_source.get_mut(&conn.peer.ip()) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&conn.peer.ip());
            }
        }
        Some(conn)
    }

    /// The tokens of connections blocked since before `limit`.
    pub fn stalled(&self, limit: Instant) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let since = c.as_ref()?.blocked_since?;
                (since < limit).then(|| token(i, self.generations[i]))
            })
            .collect()
    }
}

fn token(slot: usize, generation: u32) -> u64 {
    (u64::from(generation) << 32) | slot as u64
}

fn untoken(token: u64) -> (usize, u32) {
    ((token & 0xffff_ffff) as usize, (token >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn conn(peer: &str) -> Conn {
        let fd = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().into();
        Conn {
            fd,
            peer: peer.parse().unwrap(),
            pending: Vec::new(),
            blocked_since: None,
        }
    }

    #[test]
    fn a_reused_slot_does_not_answer_to_the_old_token() {
        let mut c = Conns::default();
        let a = c.insert(conn("192.0.2.1:1000"));
        assert!(c.remove(a).is_some());
        let b = c.insert(conn("192.0.2.1:1001"));
        assert_ne!(a, b, "same slot, new generation");
        assert!(c.get(a).is_none());
        assert!(c.remove(a).is_none());
        assert_eq!(c.get(b).unwrap().peer.port(), 1001);
        assert_eq!(c.open(), 1);
    }

    #[test]
    fn caps_count_per_source_and_in_all() {
        let mut c = Conns::default();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        let a = c.insert(conn("192.0.2.1:1"));
        c.insert(conn("192.0.2.1:2"));
        assert_eq!(c.admits(ip, 2, 10), Err(Refuse::PerSource));
        assert_eq!(c.admits(other, 2, 10), Ok(()));
        assert_eq!(c.admits(other, 2, 2), Err(Refuse::Total));
        c.remove(a);
        assert_eq!(c.admits(ip, 2, 10), Ok(()));
    }

    #[test]
    fn only_connections_blocked_past_the_limit_are_stalled() {
        let mut c = Conns::default();
        let now = Instant::now();
        let a = c.insert(conn("192.0.2.1:1"));
        let b = c.insert(conn("192.0.2.1:2"));
        c.get(a).unwrap().blocked_since = Some(now);
        c.get(b).unwrap().blocked_since = Some(now + Duration::from_secs(10));
        assert_eq!(c.stalled(now + Duration::from_secs(5)), vec![a]);
    }
}
