//! The raw calls the floor is measured with: a trivial syscall, and one
//! byte through a pipe (two threads handing it back and forth: two
//! context switches per round).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// `getpid` as a real syscall (glibc may answer it from a cache).
#[inline]
pub fn getpid_syscall() -> i64 {
    // SAFETY: SYS_getpid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getpid) }
}

/// A pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Writes one byte (blocking).
#[inline]
pub fn put_byte(fd: RawFd) -> io::Result<()> {
    let b = [1u8];
    // SAFETY: b is a live one-byte buffer.
    match unsafe { libc::write(fd, b.as_ptr().cast(), 1) } {
        1 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Reads one byte (blocking); an error at end of file.
#[inline]
pub fn take_byte(fd: RawFd) -> io::Result<()> {
    let mut b = [0u8];
    // SAFETY: b is a live one-byte buffer.
    match unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) } {
        1 => Ok(()),
        0 => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
        _ => Err(io::Error::last_os_error()),
    }
}
