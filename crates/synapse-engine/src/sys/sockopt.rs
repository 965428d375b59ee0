//! Socket options: one `setsockopt` of an integer, and the options that
//! are switched on that way (`IP_RECVERR`, the TTL of received datagrams).

use super::errno::zero;
use std::io;
use std::mem::size_of;
use std::os::fd::RawFd;

/// Sets an integer socket option.
pub(crate) fn set_int(fd: RawFd, level: i32, name: i32, value: libc::c_int) -> io::Result<()> {
    // SAFETY: the option value is a live c_int of the size passed.
    zero(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            std::ptr::from_ref(&value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
}

/// Turns on `IP_RECVERR`/`IPV6_RECVERR`, so ICMP errors (port unreachable)
/// reach an unconnected socket instead of being dropped silently.
pub fn enable_recverr(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVERR)
    } else {
        (libc::IPPROTO_IP, libc::IP_RECVERR)
    };
    set_int(fd, level, name, 1)
}

/// Asks the kernel to say where an ICMP error's RFC 4884 extensions
/// (MPLS label stacks, RFC 4950) begin in its quote (Linux 5.9 and later;
/// an older kernel refuses, and reports then simply place none).
pub fn enable_recverr_rfc4884(fd: RawFd, ipv6: bool) -> io::Result<()> {
    /// `IP_RECVERR_RFC4884` (Linux 5.9): `ee_data` then says where ICMP
    /// extensions begin in the quoted payload.
    const IP_RECVERR_RFC4884: libc::c_int = 26;
    /// `IPV6_RECVERR_RFC4884`, the same for ICMPv6.
    const IPV6_RECVERR_RFC4884: libc::c_int = 31;
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, IPV6_RECVERR_RFC4884)
    } else {
        (libc::IPPROTO_IP, IP_RECVERR_RFC4884)
    };
    set_int(fd, level, name, 1)
}

/// Asks for the TTL (hop limit) of received datagrams, for STAMP.
pub fn enable_ttl(fd: RawFd, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, 1)?;
    }
    // Dual-stack sockets see IPv4 too.
    set_int(fd, libc::IPPROTO_IP, libc::IP_RECVTTL, 1)
        .or_else(|e| if ipv6 { Ok(()) } else { Err(e) })
}
