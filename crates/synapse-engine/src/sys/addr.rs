//! Socket addresses in the kernel's own layout (`sockaddr_storage`),
//! converted once and compared in place, so no per-packet path converts.

use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// Bytes of a `sockaddr_storage`.
const STORAGE: usize = size_of::<libc::sockaddr_storage>();

/// A socket address in the kernel's own layout, built once and reused for
/// every `sendto` so the hot path never converts addresses.
#[derive(Clone, Copy)]
pub struct RawAddr {
    pub(super) storage: libc::sockaddr_storage,
    pub(super) len: libc::socklen_t,
}

impl std::fmt::Debug for RawAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawAddr({:?})", self.to_socket_addr())
    }
}

impl RawAddr {
    /// Converts a standard address into the kernel layout.
    pub fn from_socket_addr(addr: SocketAddr) -> Self {
        // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let len = match addr {
            SocketAddr::V4(v4) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: v4.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(v4.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and suitably aligned
                // for sockaddr_in, as the kernel ABI guarantees.
                unsafe { std::ptr::write(std::ptr::from_mut(&mut storage).cast(), sin) };
                size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(v6) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: v6.port().to_be(),
                    sin6_flowinfo: v6.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: v6.ip().octets(),
                    },
                    sin6_scope_id: v6.scope_id(),
                };
                // SAFETY: as above, for sockaddr_in6.
                unsafe { std::ptr::write(std::ptr::from_mut(&mut storage).cast(), sin6) };
                size_of::<libc::sockaddr_in6>()
            }
        };
        Self {
            storage,
            len: len as libc::socklen_t,
        }
    }

    /// An empty address, to be filled by `recv_from`.
    pub fn empty() -> Self {
        // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
        let storage = unsafe { zeroed() };
        Self { storage, len: 0 }
    }

    /// Converts back to a standard address; `None` for families other than
    /// IPv4/IPv6 (which a UDP socket never reports).
    pub fn to_socket_addr(self) -> Option<SocketAddr> {
        match i32::from(self.storage.ss_family) {
            libc::AF_INET if self.len as usize >= size_of::<libc::sockaddr_in>() => {
                // SAFETY: the family says the storage holds a sockaddr_in and
                // the kernel wrote at least that many bytes.
                let sin: libc::sockaddr_in =
                    unsafe { std::ptr::read(std::ptr::from_ref(&self.storage).cast()) };
                let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Some(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 if self.len as usize >= size_of::<libc::sockaddr_in6>() => {
                // SAFETY: as above, for sockaddr_in6.
                let sin6: libc::sockaddr_in6 =
                    unsafe { std::ptr::read(std::ptr::from_ref(&self.storage).cast()) };
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                Some(SocketAddr::V6(SocketAddrV6::new(
                    ip,
                    u16::from_be(sin6.sin6_port),
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }

    /// The port, read in place: `sockaddr_in` and `sockaddr_in6` both keep it
    /// big-endian at bytes 2..4. Cheap enough for every packet.
    #[inline]
    pub fn port(&self) -> u16 {
        match self.bytes() {
            [_, _, hi, lo, ..] => u16::from_be_bytes([*hi, *lo]),
            _ => 0,
        }
    }

    /// Where `recvmsg` may write a source address.
    pub(crate) fn storage_ptr(&mut self) -> *mut libc::sockaddr_storage {
        &raw mut self.storage
    }

    /// Where `sendmsg` reads a destination address.
    pub(crate) fn storage_ptr_const(&self) -> *const libc::sockaddr_storage {
        &raw const self.storage
    }

    /// Records how much of the storage the kernel filled.
    pub(crate) fn set_len(&mut self, len: libc::socklen_t) {
        self.len = len.min(size_of::<libc::sockaddr_storage>() as libc::socklen_t);
    }

    /// Comparison of the meaningful part, cheap enough for every packet:
    /// integer compares, no call to `memcmp`. An IPv4 address (family,
    /// port, address, zero padding) is 16 bytes, one 128-bit compare; an
    /// IPv6 one is 28, that and a 64- and a 32-bit one.
    #[inline]
    pub fn same_as(&self, other: &RawAddr) -> bool {
        const V4: usize = size_of::<libc::sockaddr_in>();
        const V6: usize = size_of::<libc::sockaddr_in6>();
        let (a, b) = (self.whole(), other.whole());
        // The bytes at..at + n (n at most 16) as one integer.
        let word = |x: &[u8; STORAGE], at: usize, n: usize| {
            let mut w = [0u8; 16];
            w[..n].copy_from_slice(&x[at..at + n]);
            u128::from_ne_bytes(w)
        };
        self.len == other.len
            && match self.len as usize {
                V4 => word(a, 0, V4) == word(b, 0, V4),
                V6 => {
                    word(a, 0, 16) == word(b, 0, 16) && word(a, 16, V6 - 16) == word(b, 16, V6 - 16)
                }
                _ => self.bytes() == other.bytes(),
            }
    }

    /// The whole storage, initialised (zeroed when made, then written).
    fn whole(&self) -> &[u8; STORAGE] {
        // SAFETY: sockaddr_storage is STORAGE bytes of plain old data with
        // no padding (a family, a byte array, an aligning word), every byte
        // initialised (zeroed in `empty` and `from_socket_addr`, then
        // written by them or the kernel), and a byte array needs no
        // alignment.
        unsafe { &*std::ptr::from_ref(&self.storage).cast::<[u8; STORAGE]>() }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: storage is a live, initialised value of at least `len` bytes
        // (len never exceeds size_of::<sockaddr_storage>()).
        unsafe {
            std::slice::from_raw_parts(
                std::ptr::from_ref(&self.storage).cast::<u8>(),
                (self.len as usize).min(size_of::<libc::sockaddr_storage>()),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_addr_round_trips_v4_and_v6() {
        for s in ["127.0.0.1:8080", "[::1]:9", "[fe80::1%2]:862", "0.0.0.0:0"] {
            let addr: SocketAddr = s.parse().unwrap();
            assert_eq!(RawAddr::from_socket_addr(addr).to_socket_addr(), Some(addr));
        }
    }

    #[test]
    fn port_is_read_in_place_for_both_families() {
        for s in ["127.0.0.1:8080", "[::1]:999", "0.0.0.0:0"] {
            let a: SocketAddr = s.parse().unwrap();
            assert_eq!(RawAddr::from_socket_addr(a).port(), a.port());
        }
        assert_eq!(RawAddr::empty().port(), 0);
    }

    #[test]
    fn same_as_distinguishes_ports_and_families() {
        let a = RawAddr::from_socket_addr("127.0.0.1:1".parse().unwrap());
        let b = RawAddr::from_socket_addr("127.0.0.1:2".parse().unwrap());
        let c = RawAddr::from_socket_addr("[::ffff:127.0.0.1]:1".parse().unwrap());
        assert!(a.same_as(&a));
        assert!(!a.same_as(&b));
        assert!(!a.same_as(&c));
    }

    /// Each byte of an IPv6 address counts, to its scope id (the last 4),
    /// and only those: what lies past the address's length does not.
    #[test]
    fn same_as_compares_every_byte_of_an_ipv6_address_and_no_more() {
        let raw = |s: &str| RawAddr::from_socket_addr(s.parse().unwrap());
        let a = raw("[2001:db8::1]:9");
        assert!(a.same_as(&raw("[2001:db8::1]:9")));
        for other in [
            "[2001:db8::2]:9",
            "[2001:db8::1%3]:9",
            "[2001:db9::1]:9",
            "[2001:db8::1]:8",
        ] {
            assert!(!a.same_as(&raw(other)), "{other}");
        }
        // Junk past the address (a longer one written there before).
        let junk = |mut x: RawAddr| {
            // SAFETY: bytes 28..32 lie inside the 128-byte storage.
            unsafe { x.storage_ptr().cast::<u8>().add(28).write_bytes(0xa5, 4) };
            x
        };
        assert!(a.same_as(&junk(a)), "bytes past the address do not count");
        let v4 = raw("192.0.2.1:9");
        assert!(v4.same_as(&junk(v4)) && !v4.same_as(&raw("192.0.2.2:9")));
    }
}
