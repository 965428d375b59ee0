//! The kernel's answers: a return value turned into a `Result` (`errno`
//! read at once, before anything else can change it), and what each error
//! means to a measurement.

use std::io;

/// A byte count, or the error `-1` stands for.
#[inline]
pub(super) fn count(n: isize) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Success (`0`), or the error another value stands for.
#[inline]
pub(super) fn zero(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// ICMP errors the kernel reports on a socket with `IP_RECVERR` (or a
/// connected one). Mid-run they mean "this datagram is lost", not "give up".
pub fn is_network_error(errno: i32) -> bool {
    is_pending_icmp(errno) || matches!(errno, libc::EMSGSIZE | libc::EACCES | libc::EPERM)
}

/// The network errors that arrive by ICMP about an earlier datagram and
/// wait on the socket, failing whatever send comes next; the others
/// (too big, a local firewall) are about the send that gets them.
pub fn is_pending_icmp(errno: i32) -> bool {
    matches!(
        errno,
        libc::ECONNREFUSED
            | libc::EHOSTUNREACH
            | libc::ENETUNREACH
            | libc::EHOSTDOWN
            | libc::ENONET
    )
}

/// Errors on send that mean "this datagram did not go out" rather than
/// "something is broken here": the network errors, and a full local queue
/// (ENOBUFS, which Linux reports once `IP_RECVERR` is on).
pub fn is_send_drop(errno: i32) -> bool {
    is_network_error(errno) || errno == libc::ENOBUFS
}

/// Whether `errno` says a TCP connection is gone (reset, timed out by the
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

/// Whether a receive found nothing (`EAGAIN`) or was interrupted
/// (`EINTR`): either way, nothing came, and the wait goes on.
#[inline]
pub fn is_again(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_told_apart() {
        assert!(is_pending_icmp(libc::ECONNREFUSED) && is_network_error(libc::ECONNREFUSED));
        assert!(is_network_error(libc::EMSGSIZE) && !is_pending_icmp(libc::EMSGSIZE));
        assert!(is_send_drop(libc::ENOBUFS) && !is_network_error(libc::ENOBUFS));
        assert!(is_connection_lost(libc::EPIPE) && !is_connection_lost(libc::EAGAIN));
        assert!(is_again(&io::Error::from_raw_os_error(libc::EINTR)));
        assert!(!is_again(&io::Error::from_raw_os_error(libc::EPIPE)));
        assert_eq!(count(3).unwrap(), 3);
        assert!(zero(0).is_ok());
    }
}
