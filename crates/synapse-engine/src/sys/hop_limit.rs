//! A datagram's TTL (IPv4) or hop limit (IPv6) set for that datagram alone,
//! in a control message of its `sendmsg` (`IP_TTL`, `IPV6_HOPLIMIT`): the
//! socket's own setting, and so every other datagram it sends, is left
//! alone. This is how a trace probes the path of a flow whose measurement
//! goes on over the same socket.

use super::addr::RawAddr;
use super::cmsg::{Encoder, Space};
use std::io;
use std::os::fd::RawFd;

/// Sends `buf` to `to` (`None`: the connected peer) with TTL (hop limit)
/// `ttl`, one `sendmsg`. `ipv6`: the datagram leaves as IPv6.
pub fn send_with_ttl(
    fd: RawFd,
    buf: &[u8],
    to: Option<&RawAddr>,
    ipv6: bool,
    ttl: u8,
) -> io::Result<usize> {
    let mut space = Space::<32>::default();
    let mut control = Encoder::new(&mut space);
    let value = libc::c_int::from(ttl);
    if ipv6 {
        control.push(libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT, value);
    } else {
        control.push(libc::IPPROTO_IP, libc::IP_TTL, value);
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
}
