//! Class of service on the wire: the TOS (IPv4) or Traffic Class (IPv6)
//! byte a socket sends with, set once; reading each datagram's on arrival
//! (`IP_RECVTOS`, `IPV6_RECVTCLASS`, set once; the byte comes in the
//! `recvmsg` control data the timestamps already use); and the
//! reflector's answers, whose marks differ per request, with their
//! source address, TOS and TX-stamp request as control messages of the
//! one `sendmsg` that sends them.

use super::addr::RawAddr;
use super::cmsg::{Encoder, Space};
use super::pktinfo::{self, Arrival};
use super::sockopt::set_int;
use std::io;
use std::os::fd::RawFd;

/// Sends with TOS byte `tos` from now on (IPv4, and IPv4-mapped on a
/// dual-stack socket), or Traffic Class `tos` (IPv6). Linux lets a UDP
/// socket set the ECN bits too.
pub fn set_tos(fd: RawFd, ipv6: bool, tos: u8) -> io::Result<()> {
    let v = libc::c_int::from(tos);
    if ipv6 {
        set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, v)?;
        // A dual-stack socket's IPv4 packets take IP_TOS.
        let _ = set_int(fd, libc::IPPROTO_IP, libc::IP_TOS, v);
        Ok(())
    } else {
        set_int(fd, libc::IPPROTO_IP, libc::IP_TOS, v)
    }
}

/// Asks for each received datagram's TOS (Traffic Class) byte.
pub fn enable_recv_tos(fd: RawFd, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
    }
    set_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)
        .or_else(|e| if ipv6 { Ok(()) } else { Err(e) })
}

/// The TOS byte a control message of `level`/`kind` carries, if it is
/// one: one octet for IPv4's `IP_TOS`, an `int` for `IPV6_TCLASS`.
pub(crate) fn parse_tos(level: i32, kind: i32, data: &[u8]) -> Option<u8> {
    match (level, kind) {
        (libc::IPPROTO_IP, libc::IP_TOS) => data.first().copied(),
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => super::cmsg::int_of(data).map(|t| t as u8),
        _ => None,
    }
}

/// How one answer leaves, beyond its bytes and destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answer {
    /// From the local address its request came to (`IP_PKTINFO`).
    pub from: Option<Arrival>,
    /// With this TOS (Traffic Class) byte.
    pub tos: Option<u8>,
    /// Asking for these TX stamps (`SOF_TIMESTAMPING_TX_*`; 0: none).
    pub tx_stamps: u32,
}

/// Room for the answer's control messages: an in6_pktinfo (20 octets),
/// an int and a u32, each with its header.
type AnswerControl = Space<128>;

/// Whether an answer to `to` leaves as IPv4: an IPv4 destination, or an
/// IPv4-mapped one on a dual-stack socket.
fn ipv4_destination(to: &RawAddr) -> bool {
    match to.to_socket_addr() {
        Some(std::net::SocketAddr::V4(_)) => true,
        Some(std::net::SocketAddr::V6(v6)) => v6.ip().to_ipv4_mapped().is_some(),
        None => true,
    }
}

/// Sends one answer `buf` to `to` as `how` says: one `sendto` when it
/// says nothing, else one `sendmsg` with the control messages it needs.
#[inline]
pub fn send_answer(fd: RawFd, buf: &[u8], to: &RawAddr, how: &Answer) -> io::Result<usize> {
    if how.tos.is_none() && how.tx_stamps == 0 {
        return super::pktinfo::send_to_from(fd, buf, to, how.from);
    }
    let mut space = AnswerControl::default();
    let mut control = Encoder::new(&mut space);
    if let Some(from) = how.from {
        pktinfo::push_source(&mut control, from);
    }
    if let Some(tos) = how.tos {
        let v = libc::c_int::from(tos);
        if ipv4_destination(to) {
            control.push(libc::IPPROTO_IP, libc::IP_TOS, v);
        } else {
            control.push(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, v);
        }
    }
    if how.tx_stamps != 0 {
        control.push(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, how.tx_stamps);
    }
    super::io::send_msg(fd, buf, Some(to), &mut control, 0)
}

/// Sends `buf` to `to` with TOS byte `tos` (one `sendmsg`): for a socket
/// serving peers of different marks.
#[inline]
pub fn send_to_marked(fd: RawFd, buf: &[u8], to: &RawAddr, tos: u8) -> io::Result<usize> {
    let how = Answer {
        tos: Some(tos),
        ..Answer::default()
    };
    send_answer(fd, buf, to, &how)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::sys::cmsg::ControlBuf;
    use crate::sys::timestamping::recv_stamped;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    fn receiver(addr: &str, ipv6: bool) -> UdpSocket {
        let rx = UdpSocket::bind(addr).unwrap();
        enable_recv_tos(rx.as_raw_fd(), ipv6).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        rx
    }

    fn tos_of_next(rx: &UdpSocket) -> Option<u8> {
        let mut buf = [0u8; 64];
        let mut control = ControlBuf::default();
        let mut from = RawAddr::empty();
        recv_stamped(rx.as_raw_fd(), &mut buf, Some(&mut from), &mut control, -1)
            .unwrap()
            .tos
    }

    /// A socket's TOS, and each answer's own, arrive as sent (IPv4).
    #[test]
    fn tos_is_sent_and_read_back() {
        let rx = receiver("127.0.0.1:0", false);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_tos(tx.as_raw_fd(), false, 0xba).unwrap();
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        assert_eq!(tos_of_next(&rx), Some(0xba), "EF, ECT(0)");
        let to = RawAddr::from_socket_addr(rx.local_addr().unwrap());
        let how = Answer {
            tos: Some(0x29),
            tx_stamps: libc::SOF_TIMESTAMPING_TX_SOFTWARE,
            ..Answer::default()
        };
        send_answer(tx.as_raw_fd(), b"y", &to, &how).unwrap();
        assert_eq!(tos_of_next(&rx), Some(0x29), "AF11, ECT(1), per answer");
        send_to_marked(tx.as_raw_fd(), b"z", &to, 0x03).unwrap();
        assert_eq!(tos_of_next(&rx), Some(0x03));
    }

    /// IPv6, and IPv4 through a dual-stack socket.
    #[test]
    fn traffic_class_is_sent_and_read_back() {
        if UdpSocket::bind("[::1]:0").is_err() {
            eprintln!("skipped: no IPv6 loopback here");
            return;
        }
        let rx = receiver("[::]:0", true);
        let port = rx.local_addr().unwrap().port();
        let tx = UdpSocket::bind("[::1]:0").unwrap();
        let to = RawAddr::from_socket_addr(format!("[::1]:{port}").parse().unwrap());
        send_to_marked(tx.as_raw_fd(), b"a", &to, 0xb9).unwrap();
        assert_eq!(tos_of_next(&rx), Some(0xb9));
        let tx4 = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_tos(tx4.as_raw_fd(), false, 0x28).unwrap();
        tx4.send_to(b"b", ("127.0.0.1", port)).unwrap();
        assert_eq!(tos_of_next(&rx), Some(0x28), "IPv4 on a dual-stack socket");
    }
}
