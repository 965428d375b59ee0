//! Multicast socket options: joining and leaving a group (any-source, or
//! source-specific: IGMPv3 / MLDv2 SSM), receiving only the groups this
//! socket joined, and how a sender's group datagrams leave (hop limit,
//! interface, loopback).
//!
//! Joins use the protocol-independent RFC 3678 requests
//! (`MCAST_JOIN_GROUP`, `MCAST_JOIN_SOURCE_GROUP`), which name the
//! interface by its index for both families.

use super::addr::RawAddr;
use super::errno::zero;
use super::sockopt::set_int;
use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;

/// The option level of a group's family.
fn level_of(group: IpAddr) -> i32 {
    if group.is_ipv4() {
        libc::IPPROTO_IP
    } else {
        libc::IPPROTO_IPV6
    }
}

/// `addr` (port 0) in a `sockaddr_storage`.
fn storage_of(addr: IpAddr) -> libc::sockaddr_storage {
    RawAddr::from_socket_addr(SocketAddr::new(addr, 0)).storage
}

/// Sets a socket option whose value is `value`, a plain struct.
fn set_struct<T>(fd: RawFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: the option value is a live `T` of the size passed, and every
    // caller passes the struct the kernel expects for `name`.
    zero(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            std::ptr::from_ref(value).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })
}

/// Joins `group` on interface `ifindex` (0: the one the route to the group
/// names), from every source, or from `source` alone (SSM).
pub fn join(fd: RawFd, group: IpAddr, source: Option<IpAddr>, ifindex: u32) -> io::Result<()> {
    membership(fd, group, source, ifindex, true)
}

/// Leaves what [`join`] joined.
pub fn leave(fd: RawFd, group: IpAddr, source: Option<IpAddr>, ifindex: u32) -> io::Result<()> {
    membership(fd, group, source, ifindex, false)
}

fn membership(
    fd: RawFd,
    group: IpAddr,
    source: Option<IpAddr>,
    ifindex: u32,
    join: bool,
) -> io::Result<()> {
    let level = level_of(group);
    match source {
        None => {
            // SAFETY: group_req is plain old data; all-zero is valid.
            let mut req: libc::group_req = unsafe { zeroed() };
            req.gr_interface = ifindex;
            req.gr_group = storage_of(group);
            let name = if join {
                libc::MCAST_JOIN_GROUP
            } else {
                libc::MCAST_LEAVE_GROUP
            };
            set_struct(fd, level, name, &req)
        }
        Some(source) => {
            // SAFETY: group_source_req is plain old data; all-zero is valid.
            let mut req: libc::group_source_req = unsafe { zeroed() };
            req.gsr_interface = ifindex;
            req.gsr_group = storage_of(group);
            req.gsr_source = storage_of(source);
            let name = if join {
                libc::MCAST_JOIN_SOURCE_GROUP
            } else {
                libc::MCAST_LEAVE_SOURCE_GROUP
            };
            set_struct(fd, level, name, &req)
        }
    }
}

/// Receive only the groups this socket joined: by default (`IP_MULTICAST_ALL`
/// on) a socket bound to a wildcard address receives every group any socket
/// of the host joined on its port.
pub fn receive_joined_only(fd: RawFd, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_ALL, 0)?;
    }
    // A dual-stack socket receives IPv4 groups too.
    set_int(fd, libc::IPPROTO_IP, libc::IP_MULTICAST_ALL, 0)
        .or_else(|e| if ipv6 { Ok(()) } else { Err(e) })
}

/// How far a sender's group datagrams go: their TTL (hop limit).
pub fn set_hops(fd: RawFd, ipv6: bool, hops: u8) -> io::Result<()> {
    if ipv6 {
        set_int(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MULTICAST_HOPS,
            i32::from(hops),
        )
    } else {
        set_int(
            fd,
            libc::IPPROTO_IP,
            libc::IP_MULTICAST_TTL,
            i32::from(hops),
        )
    }
}

/// Whether a sender's group datagrams are also delivered to this host's own
/// members.
pub fn set_loopback(fd: RawFd, ipv6: bool, on: bool) -> io::Result<()> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP)
    } else {
        (libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP)
    };
    set_int(fd, level, name, i32::from(on))
}

/// The interface a sender's group datagrams leave by (instead of the one
/// the route to the group names).
pub fn set_interface(fd: RawFd, ipv6: bool, ifindex: u32) -> io::Result<()> {
    if ipv6 {
        return set_int(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MULTICAST_IF,
            ifindex as libc::c_int,
        );
    }
    // SAFETY: ip_mreqn is plain old data; all-zero is valid (any address).
    let mut req: libc::ip_mreqn = unsafe { zeroed() };
    req.imr_ifindex = ifindex as libc::c_int;
    set_struct(fd, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, &req)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_socket_joins_and_leaves_a_group_on_loopback_and_a_second_leave_fails() {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        let fd = s.as_raw_fd();
        let lo = super::super::interfaces::index_of("lo").unwrap();
        let group: IpAddr = "239.255.77.1".parse().unwrap();
        receive_joined_only(fd, false).unwrap();
        join(fd, group, None, lo).unwrap();
        assert_eq!(
            join(fd, group, None, lo).unwrap_err().raw_os_error(),
            Some(libc::EADDRINUSE),
            "joined once already"
        );
        leave(fd, group, None, lo).unwrap();
        assert!(leave(fd, group, None, lo).is_err(), "nothing left to leave");
        let source: IpAddr = "127.0.0.1".parse().unwrap();
        join(fd, group, Some(source), lo).unwrap();
        leave(fd, group, Some(source), lo).unwrap();
    }

    #[test]
    fn sender_options_are_accepted() {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        let fd = s.as_raw_fd();
        set_hops(fd, false, 3).unwrap();
        set_loopback(fd, false, false).unwrap();
        let lo = super::super::interfaces::index_of("lo").unwrap();
        set_interface(fd, false, lo).unwrap();
        assert_eq!(s.multicast_ttl_v4().unwrap(), 3);
        assert!(!s.multicast_loop_v4().unwrap());
    }
}
