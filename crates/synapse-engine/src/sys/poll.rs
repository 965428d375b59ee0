//! Waiting on one socket with `ppoll`, to the nanosecond (unlike
//! `SO_RCVTIMEO`, which the kernel keeps in whole ticks): for input, for
//! room to send, or for a terminal's keys.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// What a wait on a socket saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// A datagram (or an error) can be received.
    Readable,
    /// Only the error queue has something (TX stamps or ICMP reports).
    ErrorQueue,
    /// The time ran out (or a signal came).
    TimedOut,
}

/// `ppoll` on one descriptor for `events`: its `revents`, `Some(0)` when
/// the time ran out, `None` when a signal came.
#[inline]
pub(super) fn ppoll(
    fd: RawFd,
    events: libc::c_short,
    timeout: Duration,
) -> io::Result<Option<libc::c_short>> {
    let mut pfd = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let ts = timespec_of(timeout);
    // SAFETY: pfd and ts are live for the call; one pollfd is passed; a
    // null signal mask leaves the thread's mask alone.
    let n = unsafe { libc::ppoll(&raw mut pfd, 1, &raw const ts, std::ptr::null()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(if n == 0 { 0 } else { pfd.revents }))
}

/// Waits until `fd` has a datagram or an error, at most `timeout`.
#[inline]
pub fn wait_readable(fd: RawFd, timeout: Duration) -> io::Result<Readiness> {
    Ok(match ppoll(fd, libc::POLLIN, timeout)? {
        None | Some(0) => Readiness::TimedOut,
        Some(revents) if revents & libc::POLLIN != 0 => Readiness::Readable,
        Some(_) => Readiness::ErrorQueue,
    })
}

/// Sockets [`wait_any`] waits on at most.
pub const WAIT_ANY_MAX: usize = 64;

/// Waits until one of `fds` (at most [`WAIT_ANY_MAX`]) has a datagram or
/// an error, at most `timeout`; `ready[i]` says what `fds[i]` has. Returns
/// how many have something (0: the time ran out or a signal came). One
/// `ppoll`, nothing allocated.
pub fn wait_any(fds: &[RawFd], ready: &mut [Readiness], timeout: Duration) -> io::Result<usize> {
    let n = fds.len().min(WAIT_ANY_MAX).min(ready.len());
    let mut pfds = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; WAIT_ANY_MAX];
    for (p, &fd) in pfds.iter_mut().zip(&fds[..n]) {
        p.fd = fd;
        p.events = libc::POLLIN;
    }
    let ts = timespec_of(timeout);
    // SAFETY: pfds and ts are live for the call; `n` of the pollfds are
    // passed, within the array; a null signal mask leaves the thread's.
    let got = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            n as libc::nfds_t,
            &raw const ts,
            std::ptr::null(),
        )
    };
    if got < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EINTR) => Ok(0),
            _ => Err(e),
        };
    }
    for (r, p) in ready.iter_mut().zip(&pfds[..n]) {
        *r = match p.revents {
            0 => Readiness::TimedOut,
            e if e & libc::POLLIN != 0 => Readiness::Readable,
            _ => Readiness::ErrorQueue,
        };
    }
    Ok(got as usize)
}

fn timespec_of(timeout: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    }
}

/// Waits until `fd` can take more bytes (or failed), at most `timeout`.
/// Returns whether it can.
pub fn wait_writable(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    Ok(ppoll(fd, libc::POLLOUT, timeout)?.is_some_and(|r| r != 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_wait_sees_a_datagram_and_times_out_without_one() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let ms = Duration::from_millis;
        assert_eq!(
            wait_readable(rx.as_raw_fd(), ms(1)).unwrap(),
            Readiness::TimedOut
        );
        assert!(
            wait_writable(tx.as_raw_fd(), ms(1)).unwrap(),
            "room to send"
        );
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        assert_eq!(
            wait_readable(rx.as_raw_fd(), ms(500)).unwrap(),
            Readiness::Readable
        );
    }

    /// Of three sockets, the one a datagram came to is the one said ready.
    #[test]
    fn a_wait_on_many_names_the_ready_one() {
        let rx: Vec<UdpSocket> = (0..3)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let fds: Vec<RawFd> = rx.iter().map(AsRawFd::as_raw_fd).collect();
        let mut ready = [Readiness::TimedOut; 3];
        let ms = Duration::from_millis;
        assert_eq!(wait_any(&fds, &mut ready, ms(1)).unwrap(), 0);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"x", rx[1].local_addr().unwrap()).unwrap();
        assert_eq!(wait_any(&fds, &mut ready, ms(2000)).unwrap(), 1);
        assert_eq!(
            ready,
            [
                Readiness::TimedOut,
                Readiness::Readable,
                Readiness::TimedOut
            ]
        );
    }
}
