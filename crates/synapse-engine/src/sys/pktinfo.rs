//! Answering from the address a request was sent to. A socket bound to a
//! wildcard address (`0.0.0.0`, `::`) would otherwise answer from whichever
//! local address the route back prefers, and a client that checks where
//! its replies come from (any connected socket: Synapse's own, irtt's,
//! most) drops the answer. `IP_PKTINFO` / `IPV6_RECVPKTINFO` say, per
//! datagram, which local address it came to, and the same control message
//! on the answer's `sendmsg` makes that its source.
#![allow(unsafe_code)]

use super::RawAddr;
use std::io;
use std::mem::{size_of, zeroed};
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

/// Room for one packet-info control message, aligned as the kernel wants.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct ArrivalControl([u8; 64]);

impl Default for ArrivalControl {
    fn default() -> Self {
        Self([0; 64])
    }
}

impl ArrivalControl {
    /// Where `recvmsg` may write.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut libc::c_void {
        self.0.as_mut_ptr().cast()
    }

    /// Its size, for `msg_controllen`.
    pub(crate) fn capacity(&self) -> usize {
        self.0.len()
    }
}

/// Asks the kernel to say which local address each datagram came to.
pub fn enable(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO)
    } else {
        (libc::IPPROTO_IP, libc::IP_PKTINFO)
    };
    let on: libc::c_int = 1;
    // SAFETY: a c_int option value of the stated size, read by the kernel.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&raw const on).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The arrival a control message of `level`/`kind` with `data` says, if it
/// is one. A multicast destination is no source, so it gives none.
pub(crate) fn parse(level: i32, kind: i32, data: &[u8]) -> Option<Arrival> {
    match (level, kind) {
        (libc::IPPROTO_IP, libc::IP_PKTINFO) if data.len() >= size_of::<libc::in_pktinfo>() => {
            // SAFETY: the kernel put an in_pktinfo here (length checked);
            // read_unaligned copes with any alignment.
            let info: libc::in_pktinfo = unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) };
            Some(Arrival::V4(info.ipi_spec_dst.s_addr.to_ne_bytes()))
        }
        (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO)
            if data.len() >= size_of::<libc::in6_pktinfo>() =>
        {
            // SAFETY: as above, for in6_pktinfo.
            let info: libc::in6_pktinfo = unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) };
            let addr = info.ipi6_addr.s6_addr;
            (addr[0] != 0xff).then_some(Arrival::V6(addr, info.ipi6_ifindex))
        }
        _ => None,
    }
}

/// Writes the control message that makes `from` an answer's source into
/// `control`, and points `msg` at it.
pub(crate) fn put_source(msg: &mut libc::msghdr, control: &mut ArrivalControl, from: Arrival) {
    let (level, kind, len) = match from {
        Arrival::V4(_) => (
            libc::IPPROTO_IP,
            libc::IP_PKTINFO,
            size_of::<libc::in_pktinfo>(),
        ),
        Arrival::V6(..) => (
            libc::IPPROTO_IPV6,
            libc::IPV6_PKTINFO,
            size_of::<libc::in6_pktinfo>(),
        ),
    };
    msg.msg_control = control.as_mut_ptr();
    // SAFETY: CMSG_SPACE only computes a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(len as u32) } as _;
    // SAFETY: the control buffer is 64 bytes, more than CMSG_SPACE of
    // either pktinfo (32 and 40), so the header and its data lie inside it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(msg);
        (*cmsg).cmsg_level = level;
        (*cmsg).cmsg_type = kind;
        (*cmsg).cmsg_len = libc::CMSG_LEN(len as u32) as _;
        let data = libc::CMSG_DATA(cmsg);
        match from {
            Arrival::V4(addr) => {
                // The interface is left to the route back (0): only the
                // source is chosen.
                let mut info: libc::in_pktinfo = zeroed();
                info.ipi_spec_dst.s_addr = u32::from_ne_bytes(addr);
                std::ptr::write_unaligned(data.cast(), info);
            }
            Arrival::V6(addr, ifindex) => {
                let mut info: libc::in6_pktinfo = zeroed();
                info.ipi6_addr.s6_addr = addr;
                info.ipi6_ifindex = ifindex;
                std::ptr::write_unaligned(data.cast(), info);
            }
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
        return super::send_to(fd, buf, to);
    };
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    let mut control = ArrivalControl::default();
    // SAFETY: msghdr is plain old data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_name = to.storage_ptr_const().cast_mut().cast();
    msg.msg_namelen = to.len;
    put_source(&mut msg, &mut control, from);
    // SAFETY: every pointer in msg refers to a live buffer of the stated
    // length (payload, address, control data); the kernel only reads.
    let n = unsafe { libc::sendmsg(fd, &raw const msg, 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::sys::timestamping::{ControlBuf, recv_stamped};
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
