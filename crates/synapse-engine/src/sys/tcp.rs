//! TCP's system calls: stream receives and sends (never `MSG_TRUNC`, which
//! on a stream throws the data away; always `MSG_NOSIGNAL`, so a peer that
//! went away is an `EPIPE`, not a signal), `TCP_INFO`, socket options,
//! `accept4` and `epoll` for the reflector, and the descriptor limit.

use super::timestamping::{self, ControlBuf, RecvMeta};
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

fn recv_flags(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<usize> {
    // SAFETY: buf is writable for buf.len() bytes; the kernel writes no further.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
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
    let flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
    // SAFETY: buf is valid for buf.len() bytes for the duration of the call.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// [`send_now`], asking for the TX stamps in `tx_flags` of the last byte
/// sent (`SOF_TIMESTAMPING_TX_*`, including `TX_ACK`). One `sendmsg`.
#[inline]
pub fn send_now_stamped(fd: RawFd, buf: &[u8], tx_flags: u32) -> io::Result<usize> {
    let flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
    timestamping::send_stamped_flags(fd, buf, tx_flags, flags)
}

/// Waits until `fd` can take more bytes (or failed), at most `timeout`
/// (`ppoll`, to the nanosecond). Returns whether it can.
pub fn wait_writable(fd: RawFd, timeout: std::time::Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: pfd and ts are live for the call; one pollfd is passed; a
    // null signal mask leaves the thread's mask alone.
    let n = unsafe { libc::ppoll(&raw mut pfd, 1, &raw const ts, std::ptr::null()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EINTR) => Ok(false),
            _ => Err(e),
        };
    }
    Ok(n > 0)
}

/// Turns Nagle's algorithm off (`TCP_NODELAY`): a request leaves at once,
/// whatever is still unacknowledged.
pub fn set_nodelay(fd: RawFd) -> io::Result<()> {
    super::set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)
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
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            std::ptr::from_mut(&mut raw).cast(),
            &raw mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
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
    })
}

/// Accepts one waiting connection, non-blocking and close-on-exec, with
/// its peer's address. `EAGAIN`: none is waiting. One `accept4`.
pub fn accept(listener: RawFd) -> io::Result<(OwnedFd, std::net::SocketAddr)> {
    let mut from = super::RawAddr::empty();
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

/// One `epoll` instance: which descriptors are watched, and for what.
#[derive(Debug)]
pub struct Epoll(OwnedFd);

/// Readiness for reading (data, a new connection, or the peer's FIN).
pub const READABLE: u32 = libc::EPOLLIN as u32 | libc::EPOLLRDHUP as u32;
/// Readiness for writing (room in the send buffer).
pub const WRITABLE: u32 = libc::EPOLLOUT as u32;
/// The peer hung up or the socket failed.
pub const HANGUP: u32 = libc::EPOLLHUP as u32 | libc::EPOLLERR as u32;

/// One ready descriptor: its token and what it is ready for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    /// The token it was added with.
    pub token: u64,
    /// `READABLE`, `WRITABLE`, `HANGUP` bits.
    pub events: u32,
}

impl Epoll {
    /// A new instance, close-on-exec.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain integer flags; returns a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: epoll_create1 returned a new descriptor nothing else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn ctl(&self, op: i32, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: ev is a live epoll_event for the call; both descriptors
        // are the caller's.
        let rc = unsafe {
            libc::epoll_ctl(
                std::os::fd::AsRawFd::as_raw_fd(&self.0),
                op,
                fd,
                &raw mut ev,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Watches `fd` for `events`, reported with `token`.
    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    /// Watches `fd` for other `events`.
    pub fn modify(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    /// Stops watching `fd` (closing it does too).
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits up to `timeout_ms` (0: never waits) for ready descriptors and
    /// fills `ready`; returns how many. A signal counts as none.
    pub fn wait(&self, ready: &mut [Ready], timeout_ms: i32) -> io::Result<usize> {
        const MAX: usize = 256;
        // SAFETY: epoll_event is plain old data; all-zero is valid.
        let mut events: [libc::epoll_event; MAX] = unsafe { std::mem::zeroed() };
        let room = ready.len().min(MAX);
        // SAFETY: `events` is writable for `room` entries, the count passed.
        let n = unsafe {
            libc::epoll_wait(
                std::os::fd::AsRawFd::as_raw_fd(&self.0),
                events.as_mut_ptr(),
                room as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINTR) => Ok(0),
                _ => Err(e),
            };
        }
        let n = n as usize;
        for (slot, ev) in ready.iter_mut().zip(&events[..n]) {
            *slot = Ready {
                token: ev.u64,
                events: ev.events,
            };
        }
        Ok(n)
    }
}

/// Raises this process's soft limit on open descriptors to its hard limit
/// (a reflector holding thousands of connections needs more than the
/// usual 1,024). Returns the limit now in force.
pub fn raise_fd_limit() -> io::Result<u64> {
    // SAFETY: rlimit is plain old data; all-zero is valid.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: lim is a live, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: raised is a live rlimit; only this process is changed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const raised) } == 0 {
            return Ok(raised.rlim_cur);
        }
    }
    Ok(lim.rlim_cur)
}

/// Whether `errno` says the connection is gone (reset, timed out by the
/// kernel, the peer unreachable): it must be opened again.
pub fn is_connection_lost(errno: i32) -> bool {
    matches!(
        errno,
        libc::ECONNRESET
            | libc::EPIPE
            | libc::ETIMEDOUT
            | libc::ENOTCONN
            | libc::ECONNABORTED
            | libc::EHOSTUNREACH
            | libc::ENETUNREACH
            | libc::EHOSTDOWN
            | libc::ENETDOWN
            | libc::ECONNREFUSED
    )
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
    }

    #[test]
    fn epoll_reports_a_new_connection_and_its_data() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let ep = Epoll::new().unwrap();
        ep.add(l.as_raw_fd(), READABLE, 7).unwrap();
        let mut ready = [Ready::default(); 8];
        assert_eq!(ep.wait(&mut ready, 0).unwrap(), 0, "nothing yet");
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert_eq!(ep.wait(&mut ready, 2_000).unwrap(), 1);
        assert_eq!(ready[0].token, 7);
        let (conn, peer) = accept(l.as_raw_fd()).unwrap();
        assert_eq!(peer, c.local_addr().unwrap());
        assert_eq!(
            accept(l.as_raw_fd()).unwrap_err().raw_os_error(),
            Some(libc::EAGAIN)
        );
        ep.add(conn.as_raw_fd(), READABLE, 9).unwrap();
        c.write_all(b"x").unwrap();
        assert_eq!(ep.wait(&mut ready, 2_000).unwrap(), 1);
        assert_eq!(ready[0].token, 9);
        assert!(ready[0].events & READABLE != 0);
        ep.delete(conn.as_raw_fd()).unwrap();
        assert!(raise_fd_limit().unwrap() >= 1024);
    }
}
