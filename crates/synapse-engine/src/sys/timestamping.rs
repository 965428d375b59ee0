//! Linux `SO_TIMESTAMPING`: switching it on, and the `recvmsg` and
//! `sendmsg` that carry stamps in control data: RX stamps (with the TTL,
//! arrival address and TOS byte the same control data may hold) on the
//! way in, a per-packet TX-stamp request on the way out. TX stamps
//! themselves come back on the error queue (`errqueue`).
//!
//! See the kernel's `Documentation/networking/timestamping.rst`.

use super::addr::RawAddr;
use super::cmsg::{self, ControlBuf, Encoder, Space};
use super::io::{self, Received, received};
use super::pktinfo::{self, Arrival};
use super::sockopt::set_int;
use std::os::fd::RawFd;

/// `SO_TIMESTAMPING_NEW` (64-bit time on every ABI; asm-generic/socket.h).
pub(super) const SO_TIMESTAMPING_NEW: i32 = 65;
/// The original option, for kernels before 5.1.
const SO_TIMESTAMPING_OLD: i32 = 37;

/// `SOF_TIMESTAMPING_*` flag sets.
pub mod flags {
    /// TX stamps: on entering the qdisc, and in the driver (software).
    pub const TX_SOFTWARE: u32 =
        libc::SOF_TIMESTAMPING_TX_SCHED | libc::SOF_TIMESTAMPING_TX_SOFTWARE;
    /// The TX stamp the NIC takes.
    pub const TX_HARDWARE: u32 = libc::SOF_TIMESTAMPING_TX_HARDWARE;
    /// RX stamps in software.
    pub const RX_SOFTWARE: u32 = libc::SOF_TIMESTAMPING_RX_SOFTWARE;
    /// Report software stamps.
    pub const REPORT_SOFTWARE: u32 = libc::SOF_TIMESTAMPING_SOFTWARE;
    /// NIC stamps in both directions, reported raw (PHC clock).
    pub const HARDWARE: u32 = libc::SOF_TIMESTAMPING_TX_HARDWARE
        | libc::SOF_TIMESTAMPING_RX_HARDWARE
        | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
    /// Number TX stamps per packet, and return no payload with them.
    pub const OPTIONS: u32 = libc::SOF_TIMESTAMPING_OPT_ID
        | libc::SOF_TIMESTAMPING_OPT_TSONLY
        | libc::SOF_TIMESTAMPING_OPT_TX_SWHW;
}

/// Switches timestamping on with `flags`. Returns the control-message type
/// the stamps will arrive as (it depends on which option the kernel took).
pub fn enable(fd: RawFd, flags: u32) -> std::io::Result<i32> {
    let value = flags as libc::c_int;
    match set_int(fd, libc::SOL_SOCKET, SO_TIMESTAMPING_NEW, value) {
        Ok(()) => Ok(SO_TIMESTAMPING_NEW),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOPROTOOPT | libc::EINVAL)) => {
            set_int(fd, libc::SOL_SOCKET, SO_TIMESTAMPING_OLD, value)?;
            Ok(SO_TIMESTAMPING_OLD)
        }
        Err(e) => Err(e),
    }
}

/// Waits (up to `max`) until the kernel stamps received packets. RX
/// stamping is switched on system-wide by deferred work after the first
/// socket asks for it, so packets in the meantime arrive unstamped. Probes
/// over loopback with a throwaway pair of sockets; returns whether a stamp
/// was seen.
pub fn wait_for_rx_stamping(max: std::time::Duration) -> bool {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    let pair = || -> std::io::Result<(UdpSocket, UdpSocket, i32)> {
        let rx = UdpSocket::bind("127.0.0.1:0")?;
        let tx = UdpSocket::bind("127.0.0.1:0")?;
        tx.connect(rx.local_addr()?)?;
        rx.set_read_timeout(Some(std::time::Duration::from_millis(50)))?;
        let kind = enable(rx.as_raw_fd(), flags::RX_SOFTWARE | flags::REPORT_SOFTWARE)?;
        Ok((tx, rx, kind))
    };
    let Ok((tx, rx, kind)) = pair() else {
        return false;
    };
    let deadline = std::time::Instant::now() + max;
    let mut control = ControlBuf::default();
    let mut buf = [0u8; 8];
    while std::time::Instant::now() < deadline {
        if tx.send(b"probe").is_err() {
            return false;
        }
        if let Ok(got) = recv_stamped(rx.as_raw_fd(), &mut buf, None, &mut control, kind)
            && got.stamps.software.is_some()
        {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    false
}

/// Stamps of one event: software (`CLOCK_REALTIME`) and hardware (the
/// NIC's clock). Never mixed: each is reported as what it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamps {
    /// Software stamp, ns since the epoch.
    pub software: Option<u64>,
    /// Raw hardware stamp, ns in the NIC's clock.
    pub hardware: Option<u64>,
}

impl Stamps {
    /// The stamps an `SCM_TIMESTAMPING` message's data holds: three
    /// `__kernel_timespec`s (software, legacy, hardware).
    pub(super) fn of(data: &[u8]) -> Self {
        Self {
            software: timespec_ns(data, 0),
            hardware: timespec_ns(data, 2),
        }
    }
}

/// A datagram with what the kernel said about it.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecvMeta {
    /// Length and truncation.
    pub received: Received,
    /// RX stamps.
    pub stamps: Stamps,
    /// TTL or hop limit, when asked for.
    pub ttl: Option<u8>,
    /// The local address it came to, when asked for (`IP_PKTINFO`).
    pub arrival: Option<Arrival>,
    /// The group it was sent to, when asked for (`IP_PKTINFO`) and it was.
    pub group: Option<std::net::IpAddr>,
    /// Its TOS (Traffic Class) byte, when asked for (`IP_RECVTOS`).
    pub tos: Option<u8>,
}

fn timespec_ns(data: &[u8], i: usize) -> Option<u64> {
    // struct __kernel_timespec { s64 tv_sec; s64 tv_nsec; } (16 bytes, also
    // the layout of the old struct timespec on 64-bit targets).
    let at = i * 16;
    let sec = i64::from_ne_bytes(data.get(at..at + 8)?.try_into().ok()?);
    let nsec = i64::from_ne_bytes(data.get(at + 8..at + 16)?.try_into().ok()?);
    (sec != 0 || nsec != 0).then(|| sec as u64 * 1_000_000_000 + nsec as u64)
}

/// What the control messages of one receive say, stamps of `stamp_type`
/// (what [`enable`] returned) among them.
pub(super) fn read_control(control: &[u8], stamp_type: i32, meta: &mut RecvMeta) {
    for c in cmsg::Iter::new(control) {
        match (c.level, c.kind) {
            (libc::SOL_SOCKET, t) if t == stamp_type => meta.stamps = Stamps::of(c.data),
            (libc::IPPROTO_IP, libc::IP_TTL) | (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT) => {
                meta.ttl = cmsg::int_of(c.data).map(|t| t as u8);
            }
            (libc::IPPROTO_IP, libc::IP_PKTINFO) | (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
                meta.arrival = pktinfo::parse(c.level, c.kind, c.data);
                meta.group = pktinfo::group_of(c.level, c.kind, c.data);
            }
            (libc::IPPROTO_IP, libc::IP_TOS) | (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
                meta.tos = super::marks::parse_tos(c.level, c.kind, c.data);
            }
            _ => {}
        }
    }
}

/// Receives one datagram with its RX stamps (and TTL, arrival and TOS,
/// when enabled). `stamp_type` is what [`enable`] returned. One `recvmsg`.
pub fn recv_stamped(
    fd: RawFd,
    buf: &mut [u8],
    from: Option<&mut RawAddr>,
    control: &mut ControlBuf,
    stamp_type: i32,
) -> std::io::Result<RecvMeta> {
    recv_stamped_flags(fd, buf, from, control, stamp_type, libc::MSG_TRUNC)
}

/// [`recv_stamped`] that never waits, even on a blocking socket.
pub fn recv_stamped_now(
    fd: RawFd,
    buf: &mut [u8],
    control: &mut ControlBuf,
    stamp_type: i32,
) -> std::io::Result<RecvMeta> {
    let flags = libc::MSG_TRUNC | libc::MSG_DONTWAIT;
    recv_stamped_flags(fd, buf, None, control, stamp_type, flags)
}

/// [`recv_stamped`] with the source address, told not to wait when
/// `now` (`ppoll` said something is there).
#[inline]
pub fn recv_stamped_from(
    fd: RawFd,
    buf: &mut [u8],
    from: &mut RawAddr,
    control: &mut ControlBuf,
    stamp_type: i32,
    now: bool,
) -> std::io::Result<RecvMeta> {
    let flags = if now {
        libc::MSG_TRUNC | libc::MSG_DONTWAIT
    } else {
        libc::MSG_TRUNC
    };
    recv_stamped_flags(fd, buf, Some(from), control, stamp_type, flags)
}

/// [`recv_stamped`] with `recvmsg` flags of the caller's (a stream's
/// receive takes no `MSG_TRUNC`).
pub(super) fn recv_stamped_flags(
    fd: RawFd,
    buf: &mut [u8],
    from: Option<&mut RawAddr>,
    control: &mut ControlBuf,
    stamp_type: i32,
    flags: i32,
) -> std::io::Result<RecvMeta> {
    let capacity = buf.len();
    let got = io::recv_msg(
        fd,
        buf,
        from,
        (control.as_mut_ptr(), control.capacity()),
        flags,
    )?;
    let mut meta = RecvMeta {
        received: received(got.len, capacity),
        ..RecvMeta::default()
    };
    read_control(control.filled(got.control_len), stamp_type, &mut meta);
    Ok(meta)
}

/// Sends one datagram on a connected socket asking, for it alone, for the
/// TX stamps in `tx_flags` (`SOF_TIMESTAMPING_TX_*`: Linux takes them per
/// `sendmsg` as an `SO_TIMESTAMPING` control message). One `sendmsg`.
pub fn send_stamped(fd: RawFd, buf: &[u8], tx_flags: u32) -> std::io::Result<usize> {
    send_stamped_flags(fd, buf, tx_flags, 0)
}

/// [`send_stamped`] to `to`, on an unconnected socket (a multicast
/// client's). One `sendmsg`.
pub fn send_to_stamped(
    fd: RawFd,
    buf: &[u8],
    to: &RawAddr,
    tx_flags: u32,
) -> std::io::Result<usize> {
    let mut space = Space::<32>::default();
    let mut control = Encoder::new(&mut space);
    control.push(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, tx_flags);
    io::send_msg(fd, buf, Some(to), &mut control, 0)
}

/// [`send_stamped`] with `sendmsg` flags (`MSG_NOSIGNAL`, `MSG_DONTWAIT`).
pub(super) fn send_stamped_flags(
    fd: RawFd,
    buf: &[u8],
    tx_flags: u32,
    flags: i32,
) -> std::io::Result<usize> {
    let mut space = Space::<32>::default();
    let mut control = Encoder::new(&mut space);
    control.push(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, tx_flags);
    io::send_msg(fd, buf, None, &mut control, flags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::sockopt::enable_ttl;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn ttl_is_reported_when_asked_for() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.set_ttl(37).unwrap();
        enable_ttl(rx.as_raw_fd(), false).unwrap();
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        let mut control = ControlBuf::default();
        let mut buf = [0u8; 8];
        let mut from = RawAddr::empty();
        let got = recv_stamped(
            rx.as_raw_fd(),
            &mut buf,
            Some(&mut from),
            &mut control,
            SO_TIMESTAMPING_NEW,
        )
        .unwrap();
        assert_eq!(got.ttl, Some(37));
        assert_eq!(got.stamps, Stamps::default(), "no stamps unless enabled");
        assert_eq!(from.to_socket_addr(), Some(tx.local_addr().unwrap()));
    }
}
