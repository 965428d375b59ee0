//! Answering from the address a request was sent to. A socket bound to a
//! wildcard address (`0.0.0.0`, `::`) would otherwise answer from whichever
//! local address the route back prefers, and a client that checks where
//! its replies come from (any connected socket: Synapse's own, irtt's,
//! most) drops the answer. `IP_PKTINFO` / `IPV6_RECVPKTINFO` say, per
//! datagram, which local address it came to, and the same control message
//! on the answer's `sendmsg` makes that its source.

use super::addr::RawAddr;
use super::cmsg::{self, Encoder, Space};
use super::sockopt::set_int;
use std::io;
use std::mem::zeroed;
use std::net::IpAddr;
use std::os::fd::RawFd;

/// The local address a datagram arrived on, as its answer's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// IPv4: the kernel's "specific destination" (the address itself, or
    /// for a broadcast, the address of the interface it came in on).
    V4([u8; 4]),
    /// IPv6 (or an IPv4-mapped one on a dual-stack socket), and the
    /// interface, which a link-local address needs.
    V6([u8; 16], u32),
}

/// Room for the control messages of one answer that leaves from its
/// arrival address: the packet info, and a GSO segment size after it.
pub type ArrivalControl = Space<64>;

/// Asks the kernel to say which local address each datagram came to.
pub fn enable(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO)
    } else {
        (libc::IPPROTO_IP, libc::IP_PKTINFO)
    };
    set_int(fd, level, name, 1)
}

/// The arrival a control message of `level`/`kind` with `data` says, if it
/// is one. A multicast destination is no source, so it gives none.
pub(crate) fn parse(level: i32, kind: i32, data: &[u8]) -> Option<Arrival> {
    match (level, kind) {
        (libc::IPPROTO_IP, libc::IP_PKTINFO) => {
            let info: libc::in_pktinfo = cmsg::read(data)?;
            Some(Arrival::V4(info.ipi_spec_dst.s_addr.to_ne_bytes()))
        }
        (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
            let info: libc::in6_pktinfo = cmsg::read(data)?;
            let addr = info.ipi6_addr.s6_addr;
            (addr[0] != 0xff).then_some(Arrival::V6(addr, info.ipi6_ifindex))
        }
        _ => None,
    }
}

/// The group a datagram was sent to, from the same control message as
/// its arrival, when it was sent to one: where an answer to the group
/// goes (`synapse server --answer-to-group`).
pub(crate) fn group_of(level: i32, kind: i32, data: &[u8]) -> Option<IpAddr> {
    let ip = match (level, kind) {
        (libc::IPPROTO_IP, libc::IP_PKTINFO) => {
            let info: libc::in_pktinfo = cmsg::read(data)?;
            IpAddr::from(info.ipi_addr.s_addr.to_ne_bytes())
        }
        (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
            let info: libc::in6_pktinfo = cmsg::read(data)?;
            IpAddr::from(info.ipi6_addr.s6_addr)
        }
        _ => return None,
    };
    ip.is_multicast().then_some(ip)
}

/// Where a datagram came to, from its receive's control data: its
/// answer's source (`None`: not said, or a multicast destination), and
/// the group it was sent to, if any.
pub(super) fn arrived_in(control: &[u8]) -> (Option<Arrival>, Option<IpAddr>) {
    cmsg::Iter::new(control)
        .find(|c| {
            matches!(
                (c.level, c.kind),
                (libc::IPPROTO_IP, libc::IP_PKTINFO) | (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO)
            )
        })
        .map_or((None, None), |c| {
            (
                parse(c.level, c.kind, c.data),
                group_of(c.level, c.kind, c.data),
            )
        })
}

/// Adds the control message that makes `from` an answer's source.
pub(super) fn push_source(control: &mut Encoder<'_>, from: Arrival) {
    match from {
        Arrival::V4(addr) => {
            // SAFETY: in_pktinfo is plain old data; all-zero is valid.
            let mut info: libc::in_pktinfo = unsafe { zeroed() };
            // The interface is left to the route back (0): only the
            // source is chosen.
            info.ipi_spec_dst.s_addr = u32::from_ne_bytes(addr);
            control.push(libc::IPPROTO_IP, libc::IP_PKTINFO, info);
        }
        Arrival::V6(addr, ifindex) => {
            // SAFETY: in6_pktinfo is plain old data; all-zero is valid.
            let mut info: libc::in6_pktinfo = unsafe { zeroed() };
            info.ipi6_addr.s6_addr = addr;
            info.ipi6_ifindex = ifindex;
            control.push(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, info);
        }
    }
}

/// Sends `buf` to `to`, from `from` when given (one `sendmsg`), else as
/// the route back chooses (one `sendto`).
#[inline]
pub fn send_to_from(
    fd: RawFd,
    buf: &[u8],
    to: &RawAddr,
    from: Option<Arrival>,
) -> io::Result<usize> {
    let Some(from) = from else {
        return super::io::send_to(fd, buf, to);
    };
    let mut space = ArrivalControl::default();
    let mut control = Encoder::new(&mut space);
    push_source(&mut control, from);
    super::io::send_msg(fd, buf, Some(to), &mut control, 0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::sys::cmsg::ControlBuf;
    use crate::sys::timestamping::recv_stamped;
    use std::mem::size_of;
    use std::net::{SocketAddr, UdpSocket};
    use std::os::fd::AsRawFd;

    /// A datagram to `to` on a wildcard socket of `any` says where it
    /// came, and the answer sent from there arrives from there.
    fn answer_comes_from_where_it_was_sent(any: &str, to: &str, ipv6: bool) {
        let server = UdpSocket::bind(any).unwrap();
        enable(server.as_raw_fd(), ipv6).unwrap();
        let port = server.local_addr().unwrap().port();
        let to: SocketAddr = format!("{to}:{port}").parse().unwrap();
        let client = UdpSocket::bind(SocketAddr::new(to.ip(), 0)).unwrap();
        client.connect(to).unwrap();
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        client.send(b"ping").unwrap();
        let mut buf = [0u8; 16];
        let mut from = RawAddr::empty();
        let mut control = ControlBuf::default();
        let got = recv_stamped(
            server.as_raw_fd(),
            &mut buf,
            Some(&mut from),
            &mut control,
            -1,
        )
        .unwrap();
        let arrival = got.arrival.unwrap();
        match (arrival, to.ip()) {
            (Arrival::V4(a), std::net::IpAddr::V4(ip)) => assert_eq!(a, ip.octets()),
            (Arrival::V6(a, _), std::net::IpAddr::V6(ip)) => assert_eq!(a, ip.octets()),
            other => panic!("{other:?}"),
        }
        send_to_from(server.as_raw_fd(), b"pong", &from, Some(arrival)).unwrap();
        // The connected client takes it only from `to`.
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"pong");
    }

    #[test]
    fn ipv4_answers_leave_from_the_address_asked() {
        // 127.0.0.2 is not the address the route back would choose.
        answer_comes_from_where_it_was_sent("0.0.0.0:0", "127.0.0.2", false);
    }

    #[test]
    fn ipv6_answers_leave_from_the_address_asked() {
        if UdpSocket::bind("[::1]:0").is_err() {
            eprintln!("skipped: no IPv6 loopback here");
            return;
        }
        answer_comes_from_where_it_was_sent("[::]:0", "[::1]", true);
    }

    #[test]
    fn the_group_a_datagram_was_sent_to_is_read_and_a_unicast_destination_is_none() {
        // An in_pktinfo's bytes: the interface, the specific destination
        // (the answer's source), the header's destination.
        let mut v4 = vec![0u8; size_of::<libc::in_pktinfo>()];
        v4[4..8].copy_from_slice(&[10, 0, 0, 2]);
        v4[8..12].copy_from_slice(&[239, 1, 2, 3]);
        let (ip, pktinfo) = (libc::IPPROTO_IP, libc::IP_PKTINFO);
        assert_eq!(
            group_of(ip, pktinfo, &v4),
            Some("239.1.2.3".parse().unwrap())
        );
        assert_eq!(
            parse(ip, pktinfo, &v4),
            Some(Arrival::V4([10, 0, 0, 2])),
            "answered from the interface's own address"
        );
        v4[8..12].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(group_of(ip, pktinfo, &v4), None, "sent to this host");
        let mut v6 = vec![0u8; size_of::<libc::in6_pktinfo>()];
        v6[..2].copy_from_slice(&[0xff, 0x02]);
        v6[15] = 1;
        let (ip6, pktinfo6) = (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO);
        assert_eq!(
            group_of(ip6, pktinfo6, &v6),
            Some("ff02::1".parse().unwrap())
        );
        v6[0] = 0x20;
        assert_eq!(group_of(ip6, pktinfo6, &v6), None);
        assert_eq!(group_of(ip6, pktinfo6, &v6[..8]), None, "too short");
    }

    #[test]
    fn a_multicast_destination_is_no_source() {
        // An in6_pktinfo's bytes: the address (ff00::), then the interface.
        let mut info = vec![0u8; size_of::<libc::in6_pktinfo>()];
        info[0] = 0xff;
        assert_eq!(parse(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &info), None);
        info[0] = 0x20;
        let mut unicast = [0u8; 16];
        unicast[0] = 0x20;
        assert_eq!(
            parse(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &info),
            Some(Arrival::V6(unicast, 0))
        );
        assert_eq!(
            parse(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &info[..8]),
            None,
            "too short"
        );
    }
}
