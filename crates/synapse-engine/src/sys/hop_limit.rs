//! A datagram's TTL (IPv4) or hop limit (IPv6) set for that datagram alone,
//! in a control message of its `sendmsg` (`IP_TTL`, `IPV6_HOPLIMIT`): the
//! socket's own setting, and so every other datagram it sends, is left
//! alone. This is how a trace probes the path of a flow whose measurement
//! goes on over the same socket.

use super::addr::RawAddr;
use super::cmsg::{Encoder, Space};
use std::io;
use std::os::fd::RawFd;

/// How a probe leaves: its TTL, its family, and whether it must ask for no
/// TX stamp (on a socket that stamps every datagram, so that the probe
/// neither takes a number of the kernel's per-datagram count nor puts a
/// stamp on the error queue that the socket's own datagrams' matcher would
/// take for one of theirs).
#[derive(Debug, Clone, Copy)]
pub struct ProbeSend {
    /// TTL (hop limit).
    pub ttl: u8,
    /// The datagram leaves as IPv6.
    pub ipv6: bool,
    /// Ask for no TX stamp.
    pub unstamped: bool,
}

/// Sends `buf` to `to` (`None`: the connected peer) with TTL (hop limit)
/// `ttl`, one `sendmsg`. `ipv6`: the datagram leaves as IPv6.
pub fn send_with_ttl(
    fd: RawFd,
    buf: &[u8],
    to: Option<&RawAddr>,
    ipv6: bool,
    ttl: u8,
) -> io::Result<usize> {
    let how = ProbeSend {
        ttl,
        ipv6,
        unstamped: false,
    };
    send_probe(fd, buf, to, how)
}

/// Sends `buf` to `to` as `how` says, one `sendmsg`.
pub fn send_probe(
    fd: RawFd,
    buf: &[u8],
    to: Option<&RawAddr>,
    how: ProbeSend,
) -> io::Result<usize> {
    let (ttl, ipv6) = (how.ttl, how.ipv6);
    let mut space = Space::<48>::default();
    let mut control = Encoder::new(&mut space);
    let value = libc::c_int::from(ttl);
    if ipv6 {
        control.push(libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT, value);
    } else {
        control.push(libc::IPPROTO_IP, libc::IP_TTL, value);
    }
    if how.unstamped {
        // The TX flags of this datagram alone: none.
        control.push(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, 0u32);
    }
    super::io::send_msg(fd, buf, to, &mut control, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::cmsg::ControlBuf;
    use crate::sys::sockopt::enable_ttl;
    use crate::sys::timestamping::recv_stamped;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// Each datagram arrives with the TTL its own send asked for, and a
    /// plain send after them with the socket's default: nothing stuck.
    #[test]
    fn the_ttl_is_per_datagram_and_the_socket_keeps_its_own() {
        for (host, ipv6) in [("127.0.0.1:0", false), ("[::1]:0", true)] {
            let rx = UdpSocket::bind(host).unwrap();
            enable_ttl(rx.as_raw_fd(), ipv6).unwrap();
            rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                .unwrap();
            let tx = UdpSocket::bind(host).unwrap();
            tx.connect(rx.local_addr().unwrap()).unwrap();
            let mut control = ControlBuf::default();
            let mut buf = [0u8; 16];
            let mut ttl_of_next = || {
                recv_stamped(rx.as_raw_fd(), &mut buf, None, &mut control, 0)
                    .unwrap()
                    .ttl
            };
            for ttl in [1u8, 7, 255] {
                send_with_ttl(tx.as_raw_fd(), b"ttl", None, ipv6, ttl).unwrap();
                assert_eq!(ttl_of_next(), Some(ttl), "{host}");
            }
            tx.send(b"plain").unwrap();
            let default = if ipv6 {
                "/proc/sys/net/ipv6/conf/lo/hop_limit"
            } else {
                "/proc/sys/net/ipv4/ip_default_ttl"
            };
            let default: u8 = std::fs::read_to_string(default)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(
                ttl_of_next(),
                Some(default),
                "{host}: the socket's, untouched"
            );
            let to = RawAddr::from_socket_addr(rx.local_addr().unwrap());
            let other = UdpSocket::bind(host).unwrap();
            send_with_ttl(other.as_raw_fd(), b"ttl", Some(&to), ipv6, 3).unwrap();
            assert_eq!(ttl_of_next(), Some(3), "{host}: unconnected");
        }
    }

    /// On a socket that stamps every datagram and numbers the stamps, an
    /// unstamped probe between two datagrams leaves no stamp and takes no
    /// number: the second datagram's stamps carry the next number.
    #[test]
    fn an_unstamped_probe_takes_no_stamp_and_no_number() {
        use crate::sys::errqueue::{ErrQueue, read_error_queue};
        use crate::sys::timestamping::{enable, flags};
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let wanted = flags::TX_SOFTWARE | flags::REPORT_SOFTWARE | flags::OPTIONS;
        let kind = enable(tx.as_raw_fd(), wanted).unwrap();
        let how = ProbeSend {
            ttl: 9,
            ipv6: false,
            unstamped: true,
        };
        tx.send(b"measured").unwrap();
        send_probe(tx.as_raw_fd(), b"probe", None, how).unwrap();
        tx.send(b"measured").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut control = ControlBuf::default();
        let mut ids = Vec::new();
        loop {
            match read_error_queue(tx.as_raw_fd(), &mut control, kind).unwrap() {
                ErrQueue::Stamp { id, .. } => ids.push(id),
                ErrQueue::Empty => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(ids, [0, 0, 1, 1], "two stamps each, numbered 0 and 1");
    }
}
