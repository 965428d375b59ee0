//! TCP's system calls: stream receives and sends (never `MSG_TRUNC`, which
//! on a stream throws the data away; always `MSG_NOSIGNAL`, so a peer that
//! went away is an `EPIPE`, not a signal), `TCP_NODELAY`, `TCP_INFO`, and
//! `accept4` for the reflector.

use super::addr::RawAddr;
use super::cmsg::ControlBuf;
use super::errno::zero;
use super::io::{recv_flags, send_flags};
use super::sockopt::set_int;
use super::timestamping::{self, RecvMeta};
use std::io;
use std::mem::size_of;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Receives up to `buf.len()` bytes of the stream. `Ok(0)`: the peer
/// closed its side (FIN). One `recv`.
#[inline]
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(fd, buf, 0)
}

/// [`recv`] that never waits, even on a blocking socket.
#[inline]
pub fn recv_now(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(fd, buf, libc::MSG_DONTWAIT)
}

/// Receives up to `buf.len()` bytes with the RX stamp of the last segment
/// they came in (`SO_TIMESTAMPING`'s control data). One `recvmsg`.
#[inline]
pub fn recv_stamped(
    fd: RawFd,
    buf: &mut [u8],
    control: &mut ControlBuf,
    stamp_type: i32,
    now: bool,
) -> io::Result<RecvMeta> {
    let flags = if now { libc::MSG_DONTWAIT } else { 0 };
    timestamping::recv_stamped_flags(fd, buf, None, control, stamp_type, flags)
}

/// Sends what the kernel will take of `buf` now, never waiting for room:
/// the bytes taken (maybe fewer than asked). One `send`.
#[inline]
pub fn send_now(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    send_flags(fd, buf, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
}

/// [`send_now`], asking for the TX stamps in `tx_flags` of the last byte
/// sent (`SOF_TIMESTAMPING_TX_*`, including `TX_ACK`). One `sendmsg`.
#[inline]
pub fn send_now_stamped(fd: RawFd, buf: &[u8], tx_flags: u32) -> io::Result<usize> {
    let flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
    timestamping::send_stamped_flags(fd, buf, tx_flags, flags)
}

/// Turns Nagle's algorithm off (`TCP_NODELAY`): a request leaves at once,
/// whatever is still unacknowledged.
pub fn set_nodelay(fd: RawFd) -> io::Result<()> {
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)
}

/// What the kernel's own TCP says about a connection (`TCP_INFO`), in
/// the units it keeps. Fields a kernel does not report are 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// `tcpi_state` (1: established, 7: closed, …).
    pub state: u8,
    /// The smoothed round trip, µs (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Its variation, µs.
    pub rttvar_us: u32,
    /// The lowest round trip seen in the last few minutes, µs.
    pub min_rtt_us: u32,
    /// The retransmission timeout, µs.
    pub rto_us: u32,
    /// Segments resent over the connection's life.
    pub total_retrans: u32,
    /// Bytes resent.
    pub bytes_retrans: u64,
    /// DSACKs received: resent segments the peer already had (the resend
    /// was not needed).
    pub dsack_dups: u32,
    /// Segments received (data or not).
    pub segs_in: u32,
    /// Segments received that carried data.
    pub data_segs_in: u32,
    /// Segments sent that carried data.
    pub data_segs_out: u32,
    /// Out-of-order segments received.
    pub rcv_ooopack: u32,
    /// Reordering events seen.
    pub reord_seen: u32,
    /// Bytes sent and acknowledged by the peer (`tcpi_bytes_acked`; the
    /// SYN counts one).
    pub bytes_acked: u64,
    /// Bytes received in order (`tcpi_bytes_received`).
    pub bytes_received: u64,
    /// Bytes handed to the network, resends included (`tcpi_bytes_sent`).
    pub bytes_sent: u64,
    /// The congestion window, segments.
    pub snd_cwnd: u32,
    /// Bytes written but not yet sent (`tcpi_notsent_bytes`).
    pub notsent_bytes: u32,
}

/// The kernel's `struct tcp_info` up to `tcpi_rcv_ooopack` (Linux 5.4;
/// older kernels fill less of it, which `getsockopt` reports).
#[repr(C)]
#[derive(Clone, Copy)]
struct RawTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
    snd_wnd: u32,
}

/// Reads `TCP_INFO`. One `getsockopt`; outside any timed part.
pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    // SAFETY: RawTcpInfo is plain old data; all-zero is a valid value.
    let mut raw: RawTcpInfo = unsafe { std::mem::zeroed() };
    let mut len = size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: raw is writable for `len` bytes; the kernel writes at most
    // that many and says how many in `len`.
    zero(unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            std::ptr::from_mut(&mut raw).cast(),
            &raw mut len,
        )
    })?;
    // Fields past what this kernel filled stay zero (zeroed above).
    Ok(TcpInfo {
        state: raw.state,
        rtt_us: raw.rtt,
        rttvar_us: raw.rttvar,
        min_rtt_us: raw.min_rtt,
        rto_us: raw.rto,
        total_retrans: raw.total_retrans,
        bytes_retrans: raw.bytes_retrans,
        dsack_dups: raw.dsack_dups,
        segs_in: raw.segs_in,
        data_segs_in: raw.data_segs_in,
        data_segs_out: raw.data_segs_out,
        rcv_ooopack: raw.rcv_ooopack,
        reord_seen: raw.reord_seen,
        bytes_acked: raw.bytes_acked,
        bytes_received: raw.bytes_received,
        bytes_sent: raw.bytes_sent,
        snd_cwnd: raw.snd_cwnd,
        notsent_bytes: raw.notsent_bytes,
    })
}

/// Accepts one waiting connection, non-blocking and close-on-exec, with
/// its peer's address. `EAGAIN`: none is waiting. One `accept4`.
pub fn accept(listener: RawFd) -> io::Result<(OwnedFd, std::net::SocketAddr)> {
    let mut from = RawAddr::empty();
    let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: the address storage is writable for `len` bytes; the kernel
    // writes no further and says how many in `len`.
    let fd = unsafe {
        libc::accept4(
            listener,
            from.storage_ptr().cast(),
            &raw mut len,
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: accept4 returned a new descriptor that nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    from.set_len(len);
    let peer = from
        .to_socket_addr()
        .ok_or_else(|| io::Error::other("not an IP peer"))?;
    Ok((owned, peer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn stream_receives_never_throw_data_away() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        set_nodelay(c.as_raw_fd()).unwrap();
        assert_eq!(send_now(c.as_raw_fd(), b"hello world").unwrap(), 11);
        let mut buf = [0u8; 5];
        s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        assert_eq!(recv(s.as_raw_fd(), &mut buf).unwrap(), 5);
        assert_eq!(&buf, b"hello");
        let mut rest = [0u8; 16];
        let n = recv(s.as_raw_fd(), &mut rest).unwrap();
        assert_eq!(&rest[..n], b" world", "the rest is still there");
        assert_eq!(
            recv_now(s.as_raw_fd(), &mut rest)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::EAGAIN)
        );
        drop(c.shutdown(std::net::Shutdown::Write));
        assert_eq!(recv(s.as_raw_fd(), &mut rest).unwrap(), 0, "FIN reads as 0");
        s.write_all(b"x").unwrap();
        let mut one = [0u8; 1];
        c.read_exact(&mut one).unwrap();
    }

    #[test]
    fn tcp_info_counts_what_the_connection_carried() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let before = tcp_info(c.as_raw_fd()).unwrap();
        assert_eq!(before.state, 1, "established");
        for _ in 0..3 {
            send_now(c.as_raw_fd(), b"ping").unwrap();
            let mut b = [0u8; 4];
            s.read_exact(&mut b).unwrap();
            s.write_all(&b).unwrap();
            let mut r = [0u8; 4];
            (&c).read_exact(&mut r).unwrap();
        }
        let after = tcp_info(c.as_raw_fd()).unwrap();
        assert!(after.data_segs_out >= before.data_segs_out + 3, "{after:?}");
        assert!(after.data_segs_in >= before.data_segs_in + 3, "{after:?}");
        assert!(after.rtt_us > 0 && after.min_rtt_us > 0, "{after:?}");
        assert_eq!(after.total_retrans, 0);
        assert!(after.bytes_acked >= 12, "{after:?}");
        assert!(after.bytes_received >= 12, "{after:?}");
        // The SYN counts one byte in bytes_acked, none in bytes_sent.
        assert_eq!(after.bytes_acked, after.bytes_sent + 1, "{after:?}");
        assert!(after.snd_cwnd > 0, "{after:?}");
    }
}
