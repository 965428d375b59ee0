//! `epoll` for the TCP reflector's many connections, and the descriptor
//! limit that lets it hold them.

use super::errno::zero;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

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
        let rc = unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &raw mut ev) };
        zero(rc)
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
                self.0.as_raw_fd(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::tcp::accept;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

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
