//! The hash of the reflector's per-peer tables (sessions, sources, STAMP
//! counters), looked up on every answer: a keyed multiply-rotate over the
//! address's few words, a fraction of the standard SipHash's cost. Each
//! table draws its own random key, so a sender cannot choose addresses
//! that collide in every reflector; the tables are bounded
//! (`--max-sessions`, [`super::stamp_counters::MAX_COUNTERS`]) besides.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// A table keyed by a peer's address, hashed by [`PeerHasher`].
pub type PeerMap<K, V> = HashMap<K, V, PeerHashing>;

/// An empty [`PeerMap`] with room for `capacity` peers and a fresh key.
pub fn peer_map<K, V>(capacity: usize) -> PeerMap<K, V> {
    HashMap::with_capacity_and_hasher(capacity, PeerHashing::new())
}

/// Builds [`PeerHasher`]s seeded with one table's random key.
#[derive(Debug, Clone)]
pub struct PeerHashing {
    key: u64,
}

impl PeerHashing {
    /// A fresh random key (from the standard library's per-process seed).
    pub fn new() -> Self {
        Self {
            key: RandomState::new().hash_one(0x5eed_u64),
        }
    }
}

impl Default for PeerHashing {
    fn default() -> Self {
        Self::new()
    }
}

impl BuildHasher for PeerHashing {
    type Hasher = PeerHasher;

    #[inline]
    fn build_hasher(&self) -> PeerHasher {
        PeerHasher { h: self.key }
    }
}

/// Folds each word in with a rotate, xor and odd multiply (FxHash's step),
/// and mixes the result so the high bits (hashbrown's tag) and the low
/// bits (its bucket) both depend on every input bit.
#[derive(Debug, Clone, Copy)]
pub struct PeerHasher {
    h: u64,
}

const MUL: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl PeerHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.h = (self.h.rotate_left(5) ^ word).wrapping_mul(MUL);
    }
}

impl Hasher for PeerHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.add(u64::from_le_bytes(b));
        }
        let mut rest = words.remainder();
        if rest.len() >= 4 {
            let mut b = [0u8; 4];
            b.copy_from_slice(&rest[..4]);
            self.add(u64::from(u32::from_le_bytes(b)));
            rest = &rest[4..];
        }
        for &b in rest {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // murmur3's finaliser
        let mut h = self.h;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

    #[test]
    fn equal_addresses_hash_alike_and_neighbours_apart() {
        let hashing = PeerHashing::new();
        let a = SocketAddr::new(Ipv4Addr::new(10, 0, 0, 1).into(), 4000);
        assert_eq!(hashing.hash_one(a), hashing.hash_one(a));
        // Every port of one host and every host of one /16 on one port:
        // no two alike, and the tag (top 7 bits) spread over all values.
        let ports = (0..=u16::MAX).map(|p| SocketAddr::new(a.ip(), p));
        let hosts = (0..=u16::MAX).map(|h| {
            let [x, y] = h.to_be_bytes();
            SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, x, y)), 4000)
        });
        for set in [ports.collect::<Vec<_>>(), hosts.collect()] {
            let hashes: HashSet<u64> = set.iter().map(|s| hashing.hash_one(s)).collect();
            assert_eq!(hashes.len(), set.len());
            let tags: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
            assert_eq!(tags.len(), 128);
            let buckets: HashSet<u64> = hashes.iter().map(|h| h & 4095).collect();
            assert!(buckets.len() > 4000, "{} of 4096 buckets", buckets.len());
        }
    }

    #[test]
    fn each_table_has_its_own_key() {
        let ip = IpAddr::V6(Ipv6Addr::LOCALHOST);
        let (a, b) = (PeerHashing::new(), PeerHashing::new());
        assert_ne!(a.hash_one(ip), b.hash_one(ip));
    }

    #[test]
    fn a_peer_map_finds_what_it_holds() {
        let mut map: PeerMap<SocketAddr, usize> = peer_map(8);
        for port in 1..100u16 {
            map.insert(
                SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port),
                port.into(),
            );
        }
        for port in 1..100u16 {
            let key = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port);
            assert_eq!(map.get(&key), Some(&usize::from(port)));
        }
    }
}
