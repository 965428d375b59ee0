//! An error the kernel queued on a socket's error queue (`IP_RECVERR`,
//! `IPV6_RECVERR`), read as what it says rather than as a bare errno: who
//! reported it (a router's or the far host's ICMP, or this host), the ICMP
//! type and code, `ee_info` (the MTU of a "fragmentation needed"), the
//! offender's address (`SO_EE_OFFENDER`), the destination of the datagram
//! it is about, and the first bytes of that datagram's payload as the
//! reporter quoted them, where a probe's identity can be read. A `Copy`
//! value: reading one allocates nothing.

use super::addr::RawAddr;
use super::timestamping::Stamps;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Bytes of the quoted payload a report keeps: a router may quote as
/// little as 8 (RFC 792); a probe's identity fits in those.
pub const QUOTED: usize = 16;

/// `IP_RECVERR_RFC4884` (Linux 5.9): `ee_data` then says where ICMP
/// extensions (RFC 4884: MPLS labels, RFC 4950) begin in the quoted payload.
pub(super) const IP_RECVERR_RFC4884: libc::c_int = 26;
/// `IPV6_RECVERR_RFC4884`, the same for ICMPv6.
pub(super) const IPV6_RECVERR_RFC4884: libc::c_int = 31;
/// `SO_EE_RFC4884_FLAG_INVALID`: the extension structure failed its checks.
const RFC4884_FLAG_INVALID: u8 = 1;

/// ICMP (IPv4) types and codes a report is asked about.
mod icmp4 {
    pub const DEST_UNREACH: u8 = 3;
    pub const PORT_UNREACH: u8 = 3;
    pub const FRAG_NEEDED: u8 = 4;
    pub const TIME_EXCEEDED: u8 = 11;
}

/// ICMPv6 types and codes a report is asked about.
mod icmp6 {
    pub const DEST_UNREACH: u8 = 1;
    pub const PORT_UNREACH: u8 = 4;
    pub const PACKET_TOO_BIG: u8 = 2;
    pub const TIME_EXCEEDED: u8 = 3;
}

/// Who reported an error (`ee_origin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrOrigin {
    /// This host (`SO_EE_ORIGIN_LOCAL`): a datagram larger than the path MTU
    /// it knows, for instance.
    Local,
    /// An ICMP message from a router or the far host (`SO_EE_ORIGIN_ICMP`).
    Icmp,
    /// An ICMPv6 message (`SO_EE_ORIGIN_ICMP6`).
    Icmp6,
    /// Any other origin the kernel may add (its number).
    Other(u8),
}

impl ErrOrigin {
    fn of(origin: u8) -> Self {
        match origin {
            libc::SO_EE_ORIGIN_LOCAL => Self::Local,
            libc::SO_EE_ORIGIN_ICMP => Self::Icmp,
            libc::SO_EE_ORIGIN_ICMP6 => Self::Icmp6,
            other => Self::Other(other),
        }
    }
}

/// The first bytes of the payload of the datagram an error is about, as
/// quoted back (the kernel strips the IP and UDP headers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quoted {
    bytes: [u8; QUOTED],
    kept: u8,
    read: u16,
}

impl Quoted {
    /// What `read` bytes of a quote, `payload` holding the first of them.
    pub(super) fn of(payload: &[u8], read: usize) -> Self {
        let kept = payload.len().min(QUOTED).min(read);
        let mut bytes = [0u8; QUOTED];
        bytes[..kept].copy_from_slice(&payload[..kept]);
        Self {
            bytes,
            kept: kept as u8,
            read: u16::try_from(read).unwrap_or(u16::MAX),
        }
    }

    /// The first bytes quoted (at most [`QUOTED`]).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.kept)]
    }

    /// How many bytes of payload the read returned (quoted ones, up to
    /// the reader's buffer; with RFC 4884, extensions after them).
    pub fn read_len(&self) -> usize {
        usize::from(self.read)
    }
}

/// One error off the error queue: what reported it, about which datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpReport {
    /// The errno the kernel maps it to (`EHOSTUNREACH` for a TTL that ran
    /// out, `ECONNREFUSED` for a port unreachable, `EMSGSIZE` …).
    pub errno: i32,
    /// Who reported it.
    pub origin: ErrOrigin,
    /// ICMP or ICMPv6 type (0 for a local error).
    pub icmp_type: u8,
    /// ICMP or ICMPv6 code.
    pub icmp_code: u8,
    /// `ee_info`: the MTU of a fragmentation-needed or packet-too-big.
    pub info: u32,
    /// The address that sent the ICMP message (`SO_EE_OFFENDER`): the
    /// router or host that reported; `None` for a local error.
    pub offender: Option<IpAddr>,
    /// Where the datagram it is about was going (address and port).
    pub destination: Option<SocketAddr>,
    /// The start of that datagram's payload, as quoted.
    pub quoted: Quoted,
    /// Where RFC 4884 extensions begin in the payload read, when the
    /// socket asked (`IP_RECVERR_RFC4884`) and the message has valid ones.
    pub extensions_at: Option<u16>,
    /// When the ICMP message arrived, when the socket stamps what it
    /// receives (`SO_TIMESTAMPING` RX).
    pub arrived: Stamps,
}

impl IcmpReport {
    /// Reads a report from the kernel's `sock_extended_err` and what
    /// follows it in the control message (`SO_EE_OFFENDER`).
    pub(super) fn of(
        ee: &libc::sock_extended_err,
        after: &[u8],
        destination: &RawAddr,
        quoted: Quoted,
        arrived: Stamps,
    ) -> Self {
        let origin = ErrOrigin::of(ee.ee_origin);
        let [len_lo, len_hi, flags, _] = ee.ee_data.to_ne_bytes();
        let extensions_at = u16::from_ne_bytes([len_lo, len_hi]);
        let icmp = matches!(origin, ErrOrigin::Icmp | ErrOrigin::Icmp6);
        Self {
            errno: ee.ee_errno as i32,
            origin,
            icmp_type: ee.ee_type,
            icmp_code: ee.ee_code,
            info: ee.ee_info,
            offender: offender(after),
            destination: destination.to_socket_addr(),
            quoted,
            extensions_at: (icmp && extensions_at > 0 && flags & RFC4884_FLAG_INVALID == 0)
                .then_some(extensions_at),
            arrived,
        }
    }

    /// A router's "time exceeded in transit": the datagram's TTL (hop
    /// limit) ran out at [`IcmpReport::offender`].
    pub fn is_time_exceeded(&self) -> bool {
        self.is(icmp4::TIME_EXCEEDED, icmp6::TIME_EXCEEDED) && self.icmp_code == 0
    }

    /// The far host's "port unreachable": the datagram arrived and nothing
    /// listens on its port.
    pub fn is_port_unreachable(&self) -> bool {
        self.is(icmp4::DEST_UNREACH, icmp6::DEST_UNREACH)
            && self.icmp_code == self.pick(icmp4::PORT_UNREACH, icmp6::PORT_UNREACH)
    }

    /// Any "destination unreachable" (no route, host, port, prohibited …).
    pub fn is_unreachable(&self) -> bool {
        self.is(icmp4::DEST_UNREACH, icmp6::DEST_UNREACH)
    }

    /// The path's MTU, when this says the datagram was too big for it (an
    /// ICMP fragmentation-needed, an ICMPv6 packet-too-big, or this host's
    /// own `EMSGSIZE`).
    pub fn mtu(&self) -> Option<u32> {
        let too_big = match self.origin {
            ErrOrigin::Icmp => {
                self.icmp_type == icmp4::DEST_UNREACH && self.icmp_code == icmp4::FRAG_NEEDED
            }
            ErrOrigin::Icmp6 => self.icmp_type == icmp6::PACKET_TOO_BIG,
            ErrOrigin::Local => self.errno == libc::EMSGSIZE,
            ErrOrigin::Other(_) => false,
        };
        (too_big && self.info > 0).then_some(self.info)
    }

    /// Whether the type is `v4` from ICMP or `v6` from ICMPv6.
    fn is(&self, v4: u8, v6: u8) -> bool {
        match self.origin {
            ErrOrigin::Icmp | ErrOrigin::Icmp6 => self.icmp_type == self.pick(v4, v6),
            ErrOrigin::Local | ErrOrigin::Other(_) => false,
        }
    }

    fn pick(&self, v4: u8, v6: u8) -> u8 {
        if self.origin == ErrOrigin::Icmp6 {
            v6
        } else {
            v4
        }
    }
}

/// The offender's address in the bytes after `sock_extended_err`: a
/// `sockaddr_in` or `sockaddr_in6`, `AF_UNSPEC` (all zero) when there is none.
fn offender(after: &[u8]) -> Option<IpAddr> {
    let family = u16::from_ne_bytes(after.get(..2)?.try_into().ok()?);
    match i32::from(family) {
        libc::AF_INET => {
            // sockaddr_in: family, port, then the address.
            let octets: [u8; 4] = after.get(4..8)?.try_into().ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(octets)))
        }
        libc::AF_INET6 => {
            // sockaddr_in6: family, port, flow info, then the address.
            let octets: [u8; 16] = after.get(8..24)?.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(octets)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ee(origin: u8, kind: u8, code: u8, info: u32, data: u32) -> libc::sock_extended_err {
        libc::sock_extended_err {
            ee_errno: libc::EHOSTUNREACH as u32,
            ee_origin: origin,
            ee_type: kind,
            ee_code: code,
            ee_pad: 0,
            ee_info: info,
            ee_data: data,
        }
    }

    fn report(e: &libc::sock_extended_err) -> IcmpReport {
        IcmpReport::of(
            e,
            &[],
            &RawAddr::empty(),
            Quoted::default(),
            Stamps::default(),
        )
    }

    #[test]
    fn kinds_are_told_apart_per_family() {
        let te4 = report(&ee(libc::SO_EE_ORIGIN_ICMP, 11, 0, 0, 0));
        let te6 = report(&ee(libc::SO_EE_ORIGIN_ICMP6, 3, 0, 0, 0));
        assert!(te4.is_time_exceeded() && te6.is_time_exceeded());
        assert!(!te4.is_port_unreachable() && !te4.is_unreachable());
        let pu4 = report(&ee(libc::SO_EE_ORIGIN_ICMP, 3, 3, 0, 0));
        let pu6 = report(&ee(libc::SO_EE_ORIGIN_ICMP6, 1, 4, 0, 0));
        assert!(pu4.is_port_unreachable() && pu6.is_port_unreachable());
        assert!(pu4.is_unreachable() && !pu4.is_time_exceeded());
        // ICMPv6 type 3 is time exceeded, ICMP type 3 unreachable.
        assert!(!report(&ee(libc::SO_EE_ORIGIN_ICMP6, 3, 3, 0, 0)).is_port_unreachable());
        // Reassembly time exceeded (code 1) is not a TTL that ran out.
        assert!(!report(&ee(libc::SO_EE_ORIGIN_ICMP, 11, 1, 0, 0)).is_time_exceeded());
        assert!(!report(&ee(libc::SO_EE_ORIGIN_LOCAL, 11, 0, 0, 0)).is_time_exceeded());
    }

    #[test]
    fn the_mtu_is_read_only_from_a_too_big() {
        assert_eq!(
            report(&ee(libc::SO_EE_ORIGIN_ICMP, 3, 4, 1400, 0)).mtu(),
            Some(1400)
        );
        assert_eq!(
            report(&ee(libc::SO_EE_ORIGIN_ICMP6, 2, 0, 1280, 0)).mtu(),
            Some(1280)
        );
        assert_eq!(report(&ee(libc::SO_EE_ORIGIN_ICMP, 3, 3, 0, 0)).mtu(), None);
        let mut local = ee(libc::SO_EE_ORIGIN_LOCAL, 0, 0, 1500, 0);
        local.ee_errno = libc::EMSGSIZE as u32;
        assert_eq!(report(&local).mtu(), Some(1500));
    }

    #[test]
    fn extensions_are_placed_only_when_valid_and_from_icmp() {
        let at = |origin, flags: u8| {
            let data = u32::from_ne_bytes([100, 0, flags, 0]);
            report(&ee(origin, 11, 0, 0, data)).extensions_at
        };
        assert_eq!(at(libc::SO_EE_ORIGIN_ICMP, 0), Some(100));
        assert_eq!(at(libc::SO_EE_ORIGIN_ICMP6, 0), Some(100));
        assert_eq!(at(libc::SO_EE_ORIGIN_ICMP, RFC4884_FLAG_INVALID), None);
        assert_eq!(at(libc::SO_EE_ORIGIN_LOCAL, 0), None);
        assert_eq!(
            report(&ee(libc::SO_EE_ORIGIN_ICMP, 11, 0, 0, 0)).extensions_at,
            None
        );
    }

    #[test]
    fn offenders_of_both_families_and_none() {
        let mut v4 = [0u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[4..8].copy_from_slice(&[10, 1, 2, 3]);
        assert_eq!(offender(&v4), Some("10.1.2.3".parse().unwrap()));
        let mut v6 = [0u8; 28];
        v6[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[8..24].copy_from_slice(&"2001:db8::7".parse::<Ipv6Addr>().unwrap().octets());
        assert_eq!(offender(&v6), Some("2001:db8::7".parse().unwrap()));
        assert_eq!(offender(&[0u8; 16]), None, "AF_UNSPEC: a local error");
        assert_eq!(offender(&v6[..20]), None, "cut short");
    }

    #[test]
    fn a_quote_keeps_its_first_bytes_and_its_length() {
        let q = Quoted::of(b"0123456789abcdefXYZ", 300);
        assert_eq!(q.bytes(), b"0123456789abcdef");
        assert_eq!(q.read_len(), 300);
        let short = Quoted::of(b"01234567", 8);
        assert_eq!(short.bytes(), b"01234567");
        assert_eq!(Quoted::of(b"", 0).bytes(), b"");
    }
}
