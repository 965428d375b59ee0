//! The socket calls of the per-packet paths, made straight through
//! `syscall(2)` rather than libc's wrappers. glibc's `send`, `recv`,
//! `recvmsg`, `recvmmsg`… are cancellation points: in a program with more
//! than one thread each call is bracketed by
//! `__pthread_enable_asynccancel` / `__pthread_disable_asynccancel`, some
//! 60 instructions a call that buy nothing here (no thread is ever
//! cancelled: every loop stops on its flag). The system call made is the
//! one the wrapper makes (on x86-64 `send` and `recv` are `sendto` and
//! `recvfrom` with no address), so `strace` sees the same calls; errors
//! come back the same way, `-1` and `errno`.
//!
//! Each function has its libc namesake's contract: the caller's
//! `// SAFETY:` for that call holds for this one.

use libc::{c_int, c_long, c_uint, c_void, mmsghdr, msghdr, size_t, sockaddr, socklen_t, ssize_t};

/// `send`: `sendto` with no address.
#[inline]
pub(super) unsafe fn send(fd: c_int, buf: *const c_void, len: size_t, flags: c_int) -> ssize_t {
    // SAFETY: the caller's contract is send(2)'s; a null address of length
    // 0 is what send(2) itself passes.
    unsafe { sendto(fd, buf, len, flags, std::ptr::null(), 0) }
}

/// `recv`: `recvfrom` with no address.
#[inline]
pub(super) unsafe fn recv(fd: c_int, buf: *mut c_void, len: size_t, flags: c_int) -> ssize_t {
    // SAFETY: the caller's contract is recv(2)'s; no address is written.
    unsafe {
        recvfrom(
            fd,
            buf,
            len,
            flags,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}

/// `sendto(2)`.
#[inline]
pub(super) unsafe fn sendto(
    fd: c_int,
    buf: *const c_void,
    len: size_t,
    flags: c_int,
    to: *const sockaddr,
    to_len: socklen_t,
) -> ssize_t {
    // SAFETY: the caller guarantees sendto(2)'s contract for these
    // arguments; every argument is passed as the kernel's long.
    unsafe {
        libc::syscall(
            libc::SYS_sendto,
            c_long::from(fd),
            buf,
            len,
            c_long::from(flags),
            to,
            c_long::from(to_len),
        ) as ssize_t
    }
}

/// `recvfrom(2)`.
#[inline]
pub(super) unsafe fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    len: size_t,
    flags: c_int,
    from: *mut sockaddr,
    from_len: *mut socklen_t,
) -> ssize_t {
    // SAFETY: the caller guarantees recvfrom(2)'s contract for these
    // arguments.
    unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            c_long::from(fd),
            buf,
            len,
            c_long::from(flags),
            from,
            from_len,
        ) as ssize_t
    }
}

/// `sendmsg(2)`.
#[inline]
pub(super) unsafe fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    // SAFETY: the caller guarantees sendmsg(2)'s contract for msg.
    unsafe {
        libc::syscall(
            libc::SYS_sendmsg,
            c_long::from(fd),
            msg,
            c_long::from(flags),
        ) as ssize_t
    }
}

/// `recvmsg(2)`.
#[inline]
pub(super) unsafe fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    // SAFETY: the caller guarantees recvmsg(2)'s contract for msg.
    unsafe {
        libc::syscall(
            libc::SYS_recvmsg,
            c_long::from(fd),
            msg,
            c_long::from(flags),
        ) as ssize_t
    }
}

/// `sendmmsg(2)`.
#[inline]
pub(super) unsafe fn sendmmsg(fd: c_int, msgs: *mut mmsghdr, n: c_uint, flags: c_int) -> c_int {
    // SAFETY: the caller guarantees sendmmsg(2)'s contract for msgs[..n].
    unsafe {
        libc::syscall(
            libc::SYS_sendmmsg,
            c_long::from(fd),
            msgs,
            c_long::from(n),
            c_long::from(flags),
        ) as c_int
    }
}

/// `recvmmsg(2)`, with no timeout.
#[inline]
pub(super) unsafe fn recvmmsg(fd: c_int, msgs: *mut mmsghdr, n: c_uint, flags: c_int) -> c_int {
    // SAFETY: the caller guarantees recvmmsg(2)'s contract for msgs[..n];
    // a null timeout is allowed.
    unsafe {
        libc::syscall(
            libc::SYS_recvmmsg,
            c_long::from(fd),
            msgs,
            c_long::from(n),
            c_long::from(flags),
            std::ptr::null_mut::<libc::timespec>(),
        ) as c_int
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_datagram_goes_out_and_comes_back_through_the_direct_calls() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let out = *b"direct";
        // SAFETY: out is readable for its length.
        let sent = unsafe { send(a.as_raw_fd(), out.as_ptr().cast(), out.len(), 0) };
        assert_eq!(sent, 6);
        let mut buf = [0u8; 16];
        // SAFETY: buf is writable for its length.
        let got = unsafe { recv(b.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        assert_eq!(got, 6);
        assert_eq!(&buf[..6], b"direct");
    }

    #[test]
    fn an_error_is_minus_one_and_errno_as_from_libc() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 4];
        // SAFETY: buf is writable for its length.
        let got = unsafe { recv(a.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        assert_eq!(got, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EAGAIN)
        );
    }
}
