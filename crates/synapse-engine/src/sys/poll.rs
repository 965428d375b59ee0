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
}
