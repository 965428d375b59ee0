//! Class of service on the wire: the TOS (IPv4) or Traffic Class (IPv6)
//! byte a socket sends with, set once; reading each datagram's on arrival
//! (`IP_RECVTOS`, `IPV6_RECVTCLASS`, set once; the byte comes in the
//! `recvmsg` control data the timestamps already use); and the
//! reflector's answers, whose marks differ per request, with their
//! source address, TOS and TX-stamp request as control messages of the
//! one `sendmsg` that sends them.
#![allow(unsafe_code)]

use super::RawAddr;
use super::pktinfo::Arrival;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::RawFd;

/// Sends with TOS byte `tos` from now on (IPv4, and IPv4-mapped on a
/// dual-stack socket), or Traffic Class `tos` (IPv6). Linux lets a UDP
/// socket set the ECN bits too.
pub fn set_tos(fd: RawFd, ipv6: bool, tos: u8) -> io::Result<()> {
    let v = libc::c_int::from(tos);
    if ipv6 {
        super::set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, v)?;
        // A dual-stack socket's IPv4 packets take IP_TOS.
        let _ = super::set_int_option(fd, libc::IPPROTO_IP, libc::IP_TOS, v);
        Ok(())
    } else {
        super::set_int_option(fd, libc::IPPROTO_IP, libc::IP_TOS, v)
    }
}

/// Asks for each received datagram's TOS (Traffic Class) byte.
pub fn enable_recv_tos(fd: RawFd, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        super::set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
    }
    super::set_int_option(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)
        .or_else(|e| if ipv6 { Ok(()) } else { Err(e) })
}

/// The TOS byte a control message of `level`/`kind` carries, if it is
/// one: one octet for IPv4's `IP_TOS`, an `int` for `IPV6_TCLASS`.
pub(crate) fn parse_tos(level: i32, kind: i32, data: &[u8]) -> Option<u8> {
    match (level, kind) {
        (libc::IPPROTO_IP, libc::IP_TOS) => data.first().copied(),
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => data
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(|b| i32::from_ne_bytes(b) as u8),
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

/// Room for the answer's control messages, aligned as the kernel wants:
/// an in6_pktinfo (20 octets), an int and a u32, each with its header.
#[repr(C, align(8))]
struct Control([u8; 128]);

/// Appends control messages to a `msghdr`'s buffer.
struct Builder<'a> {
    msg: &'a mut libc::msghdr,
    used: usize,
}

impl<'a> Builder<'a> {
    fn new(msg: &'a mut libc::msghdr, control: &'a mut Control) -> Self {
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = control.0.len() as _;
        Self { msg, used: 0 }
    }

    /// One control message holding `value`.
    fn push<T: Copy>(&mut self, level: i32, kind: i32, value: T) {
        let len = size_of::<T>() as u32;
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(len) } as usize;
        debug_assert!(self.used + space <= 128);
        // SAFETY: msg_control points at the 128-octet, 8-aligned Control
        // buffer; `used` is a multiple of the cmsg alignment and `used +
        // space` fits in it (three messages of at most 40 octets), so the
        // header and its data are written inside the buffer.
        unsafe {
            let cmsg = self
                .msg
                .msg_control
                .cast::<u8>()
                .add(self.used)
                .cast::<libc::cmsghdr>();
            (*cmsg).cmsg_level = level;
            (*cmsg).cmsg_type = kind;
            (*cmsg).cmsg_len = libc::CMSG_LEN(len) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<T>(), value);
        }
        self.used += space;
    }

    fn finish(self) {
        self.msg.msg_controllen = self.used as _;
        if self.used == 0 {
            self.msg.msg_control = std::ptr::null_mut();
        }
    }
}

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
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    let mut control = Control([0; 128]);
    // SAFETY: msghdr is plain old data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_name = to.storage_ptr_const().cast_mut().cast();
    msg.msg_namelen = to.len;
    let mut b = Builder::new(&mut msg, &mut control);
    match how.from {
        Some(Arrival::V4(addr)) => {
            // SAFETY: in_pktinfo is plain old data; all-zero is valid.
            let mut info: libc::in_pktinfo = unsafe { zeroed() };
            info.ipi_spec_dst.s_addr = u32::from_ne_bytes(addr);
            b.push(libc::IPPROTO_IP, libc::IP_PKTINFO, info);
        }
        Some(Arrival::V6(addr, ifindex)) => {
            // SAFETY: in6_pktinfo is plain old data; all-zero is valid.
            let mut info: libc::in6_pktinfo = unsafe { zeroed() };
            info.ipi6_addr.s6_addr = addr;
            info.ipi6_ifindex = ifindex;
            b.push(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, info);
        }
        None => {}
    }
    if let Some(tos) = how.tos {
        let v = libc::c_int::from(tos);
        if ipv4_destination(to) {
            b.push(libc::IPPROTO_IP, libc::IP_TOS, v);
        } else {
            b.push(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, v);
        }
    }
    if how.tx_stamps != 0 {
        b.push(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, how.tx_stamps);
    }
    b.finish();
    // SAFETY: every pointer in msg refers to a live buffer of the stated
    // length (payload, address, control data); the kernel only reads.
    let n = unsafe { libc::sendmsg(fd, &raw const msg, 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
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
    use crate::sys::timestamping::{ControlBuf, recv_stamped};
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
