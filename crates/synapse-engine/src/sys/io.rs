//! Sending and receiving: one system call each, into and out of the
//! caller's buffers, nothing allocated. `send`/`recv` for connected
//! sockets, `sendto`/`recvfrom` for the others, and the one `sendmsg` and
//! one `recvmsg` that every path with control messages goes through.

use super::addr::RawAddr;
use super::cmsg::Encoder;
use super::direct;
use super::errno::count;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::RawFd;

/// Result of one datagram receive.
#[derive(Debug, Clone, Copy, Default)]
pub struct Received {
    /// Bytes written to the buffer.
    pub len: usize,
    /// The datagram was longer than the buffer (`MSG_TRUNC`).
    pub truncated: bool,
}

/// A datagram of `real` bytes received into `capacity` bytes.
pub(super) fn received(real: usize, capacity: usize) -> Received {
    Received {
        len: real.min(capacity),
        truncated: real > capacity,
    }
}

/// One `send` with `flags`: the bytes the kernel took.
#[inline]
pub(super) fn send_flags(fd: RawFd, buf: &[u8], flags: i32) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes for the duration of the call.
    count(unsafe { direct::send(fd, buf.as_ptr().cast(), buf.len(), flags) })
}

/// One `recv` with `flags`: the bytes received (with `MSG_TRUNC` on a
/// datagram socket, its real length, however long the buffer).
#[inline]
pub(super) fn recv_flags(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<usize> {
    // SAFETY: buf is writable for buf.len() bytes; the kernel writes no further.
    count(unsafe { direct::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) })
}

/// Sends one datagram on a connected socket. One `send` syscall.
#[inline]
pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    send_flags(fd, buf, 0)
}

/// Sends one datagram to `to`. One `sendto` syscall, no allocation.
#[inline]
pub fn send_to(fd: RawFd, buf: &[u8], to: &RawAddr) -> io::Result<usize> {
    // SAFETY: buf and the address are valid for the lengths passed; the kernel
    // only reads them for the duration of the call.
    count(unsafe {
        direct::sendto(
            fd,
            buf.as_ptr().cast(),
            buf.len(),
            0,
            std::ptr::from_ref(&to.storage).cast(),
            to.len,
        )
    })
}

/// Receives one datagram on a connected socket (the kernel has already
/// checked its source). One `recv` syscall.
#[inline]
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<Received> {
    let n = recv_flags(fd, buf, libc::MSG_TRUNC)?;
    Ok(received(n, buf.len()))
}

/// [`recv`] that never waits, even on a blocking socket (`EAGAIN`).
#[inline]
pub fn recv_now(fd: RawFd, buf: &mut [u8]) -> io::Result<Received> {
    let n = recv_flags(fd, buf, libc::MSG_TRUNC | libc::MSG_DONTWAIT)?;
    Ok(received(n, buf.len()))
}

/// Receives one datagram and its source address. One `recvfrom` syscall.
///
/// With `MSG_TRUNC` the kernel reports the datagram's real length, so an
/// oversized datagram is recognised rather than silently cut.
pub fn recv_from(fd: RawFd, buf: &mut [u8], from: &mut RawAddr) -> io::Result<Received> {
    recv_from_flags(fd, buf, from, libc::MSG_TRUNC)
}

/// [`recv_from`] that never waits, even on a blocking socket (`EAGAIN`).
pub fn recv_from_now(fd: RawFd, buf: &mut [u8], from: &mut RawAddr) -> io::Result<Received> {
    recv_from_flags(fd, buf, from, libc::MSG_TRUNC | libc::MSG_DONTWAIT)
}

fn recv_from_flags(
    fd: RawFd,
    buf: &mut [u8],
    from: &mut RawAddr,
    flags: i32,
) -> io::Result<Received> {
    from.len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: buf is writable for buf.len() bytes and from.storage for from.len
    // bytes; the kernel writes no further and updates from.len.
    let n = count(unsafe {
        direct::recvfrom(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            flags,
            std::ptr::from_mut(&mut from.storage).cast(),
            &raw mut from.len,
        )
    })?;
    Ok(received(n, buf.len()))
}

/// What one `recvmsg` received: its length, and how much control data
/// the kernel wrote.
#[derive(Debug, Clone, Copy)]
pub(super) struct Message {
    /// Bytes of the message (its real length with `MSG_TRUNC`).
    pub len: usize,
    /// Bytes of control data written.
    pub control_len: usize,
}

/// One `recvmsg` into `buf`, with control data into `control` (its
/// pointer and room) and the sender into `from` when given.
pub(super) fn recv_msg(
    fd: RawFd,
    buf: &mut [u8],
    from: Option<&mut RawAddr>,
    control: (*mut libc::c_void, usize),
    flags: i32,
) -> io::Result<Message> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain old data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0;
    msg.msg_controllen = control.1 as _;
    let mut from = from;
    if let Some(f) = from.as_deref_mut() {
        msg.msg_name = f.storage_ptr().cast();
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    }
    // SAFETY: every pointer in msg refers to a live buffer of the stated
    // length (buf, the caller's control buffer, and the address storage).
    let n = count(unsafe { direct::recvmsg(fd, &raw mut msg, flags) })?;
    if let Some(f) = from {
        f.set_len(msg.msg_namelen);
    }
    Ok(Message {
        len: n,
        control_len: msg.msg_controllen as usize,
    })
}

/// One `sendmsg` of `buf` to `to` (`None`: the connected peer), carrying
/// the control messages `control` holds (none, when it holds none).
pub(super) fn send_msg(
    fd: RawFd,
    buf: &[u8],
    to: Option<&RawAddr>,
    control: &mut Encoder<'_>,
    flags: i32,
) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain old data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if let Some(to) = to {
        msg.msg_name = to.storage_ptr_const().cast_mut().cast();
        msg.msg_namelen = to.len;
    }
    control.attach(&mut msg)?;
    // SAFETY: every pointer in msg refers to a live buffer of the stated
    // length (payload, address, control data); the kernel only reads.
    count(unsafe { direct::sendmsg(fd, &raw const msg, flags) })
}
