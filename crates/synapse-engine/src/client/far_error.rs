//! An error off the socket's error queue (or only its errno, when the
//! queue held nothing more) as the path error the run counts and reports:
//! what kind, who sent it, the MTU of a datagram too big.

use crate::sys::icmp_error::{ErrOrigin, IcmpReport};
use synapse_stats::{PathError, PathErrorKind};

/// ICMP (IPv4) destination-unreachable codes (RFC 792, RFC 1812).
mod icmp4 {
    pub const DEST_UNREACH: u8 = 3;
    pub const TIME_EXCEEDED: u8 = 11;
    pub const NET: [u8; 3] = [0, 6, 11];
    pub const HOST: [u8; 4] = [1, 5, 7, 12];
    pub const PORT: u8 = 3;
    pub const FRAG_NEEDED: u8 = 4;
    pub const PROHIBITED: [u8; 3] = [9, 10, 13];
}

/// ICMPv6 types and destination-unreachable codes (RFC 4443).
mod icmp6 {
    pub const DEST_UNREACH: u8 = 1;
    pub const PACKET_TOO_BIG: u8 = 2;
    pub const TIME_EXCEEDED: u8 = 3;
    pub const NO_ROUTE: u8 = 0;
    pub const PROHIBITED: [u8; 3] = [1, 5, 6];
    pub const ADDRESS: u8 = 3;
    pub const PORT: u8 = 4;
}

/// What `report` says, as a path error.
pub(crate) fn of_report(report: &IcmpReport) -> PathError {
    let kind = match report.origin {
        ErrOrigin::Icmp => icmp4_kind(report.icmp_type, report.icmp_code),
        ErrOrigin::Icmp6 => icmp6_kind(report.icmp_type, report.icmp_code),
        ErrOrigin::Local | ErrOrigin::Other(_) => kind_of_errno(report.errno),
    };
    PathError {
        kind,
        from: report.offender,
        mtu: report.mtu(),
    }
}

/// What `errno` alone says (the queue held no report).
pub(crate) fn of_errno(errno: i32) -> PathError {
    PathError::of(kind_of_errno(errno))
}

fn icmp4_kind(t: u8, code: u8) -> PathErrorKind {
    use icmp4::*;
    match t {
        DEST_UNREACH if code == PORT => PathErrorKind::PortUnreachable,
        DEST_UNREACH if code == FRAG_NEEDED => PathErrorKind::TooBig,
        DEST_UNREACH if NET.contains(&code) => PathErrorKind::NetUnreachable,
        DEST_UNREACH if HOST.contains(&code) => PathErrorKind::HostUnreachable,
        DEST_UNREACH if PROHIBITED.contains(&code) => PathErrorKind::Prohibited,
        TIME_EXCEEDED => PathErrorKind::TimeExceeded,
        _ => PathErrorKind::OtherIcmp,
    }
}

fn icmp6_kind(t: u8, code: u8) -> PathErrorKind {
    use icmp6::*;
    match t {
        DEST_UNREACH if code == PORT => PathErrorKind::PortUnreachable,
        DEST_UNREACH if code == ADDRESS => PathErrorKind::HostUnreachable,
        DEST_UNREACH if code == NO_ROUTE => PathErrorKind::NetUnreachable,
        DEST_UNREACH if PROHIBITED.contains(&code) => PathErrorKind::Prohibited,
        PACKET_TOO_BIG => PathErrorKind::TooBig,
        TIME_EXCEEDED => PathErrorKind::TimeExceeded,
        _ => PathErrorKind::OtherIcmp,
    }
}

fn kind_of_errno(errno: i32) -> PathErrorKind {
    match errno {
        libc::ECONNREFUSED => PathErrorKind::PortUnreachable,
        libc::EHOSTUNREACH | libc::EHOSTDOWN => PathErrorKind::HostUnreachable,
        libc::ENETUNREACH | libc::ENONET => PathErrorKind::NetUnreachable,
        libc::EACCES | libc::EPERM => PathErrorKind::Prohibited,
        libc::EMSGSIZE => PathErrorKind::TooBig,
        libc::ECONNRESET => PathErrorKind::PeerReset,
        _ => PathErrorKind::OtherIcmp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_name_their_kind_in_both_families() {
        assert_eq!(icmp4_kind(3, 3), PathErrorKind::PortUnreachable);
        assert_eq!(icmp4_kind(3, 1), PathErrorKind::HostUnreachable);
        assert_eq!(icmp4_kind(3, 0), PathErrorKind::NetUnreachable);
        assert_eq!(icmp4_kind(3, 13), PathErrorKind::Prohibited);
        assert_eq!(icmp4_kind(3, 4), PathErrorKind::TooBig);
        assert_eq!(icmp4_kind(11, 0), PathErrorKind::TimeExceeded);
        assert_eq!(icmp6_kind(1, 4), PathErrorKind::PortUnreachable);
        assert_eq!(icmp6_kind(1, 3), PathErrorKind::HostUnreachable);
        assert_eq!(icmp6_kind(1, 1), PathErrorKind::Prohibited);
        assert_eq!(icmp6_kind(2, 0), PathErrorKind::TooBig);
        assert_eq!(
            of_errno(libc::ECONNREFUSED).kind,
            PathErrorKind::PortUnreachable
        );
        assert_eq!(
            of_errno(libc::EHOSTUNREACH).kind,
            PathErrorKind::HostUnreachable
        );
    }
}
