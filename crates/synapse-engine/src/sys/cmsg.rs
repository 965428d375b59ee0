//! Control messages (`cmsg(3)`), written and read in one place: the
//! [`Encoder`] every `sendmsg` and `sendmmsg` builds its messages with
//! (TX-stamp requests, source addresses, TOS bytes, GSO segment sizes),
//! and the [`Iter`] every `recvmsg` and `recvmmsg` reads them back with
//! (RX stamps, TTL, arrival address, TOS, queued errors). Both walk the
//! buffer with the C library's own `CMSG_*` arithmetic.

use std::marker::PhantomData;
use std::mem::{size_of, zeroed};

/// Room for control messages, aligned as `cmsghdr` wants.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(8))]
pub struct Space<const N: usize>([u8; N]);

impl<const N: usize> Default for Space<N> {
    fn default() -> Self {
        Self([0; N])
    }
}

impl<const N: usize> Space<N> {
    /// Where the kernel may write (`msg_control`).
    pub(super) fn as_mut_ptr(&mut self) -> *mut libc::c_void {
        self.0.as_mut_ptr().cast()
    }

    /// Its size (`msg_controllen`).
    pub(super) const fn capacity(&self) -> usize {
        N
    }

    /// The first `len` bytes, as the kernel filled them (`len` is clamped
    /// to the room).
    pub(super) fn filled(&self, len: usize) -> &[u8] {
        &self.0[..len.min(N)]
    }
}

/// Room for whatever a receive's control data may hold: RX stamps, TTL,
/// arrival, TOS, or an error-queue report.
pub type ControlBuf = Space<512>;

/// Writes control messages one after another into a [`Space`].
#[derive(Debug)]
pub(super) struct Encoder<'a> {
    buf: &'a mut [u8],
    used: usize,
    /// A message did not fit: the send must fail rather than go without it.
    overflowed: bool,
}

impl<'a> Encoder<'a> {
    /// An encoder writing into `space` from its start.
    pub(super) fn new<const N: usize>(space: &'a mut Space<N>) -> Self {
        Self {
            buf: &mut space.0,
            used: 0,
            overflowed: false,
        }
    }

    /// Appends one control message of `level` and `kind` holding `value`.
    /// One that would not fit is not written, and [`Encoder::attach`] then
    /// fails: a send never goes out without a message it asked for (the
    /// buffers are sized for what their callers write, so this is a bug's
    /// symptom, caught in every build).
    pub(super) fn push<T: Copy>(&mut self, level: libc::c_int, kind: libc::c_int, value: T) {
        let len = size_of::<T>() as u32;
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(len) } as usize;
        if self.used + space > self.buf.len() {
            self.overflowed = true;
            return;
        }
        // SAFETY: the buffer starts 8-aligned (`Space`) and `used` is a sum
        // of CMSG_SPACEs, each a multiple of the header's alignment, so the
        // header at `used` is aligned; `used + space` bytes are inside the
        // buffer (checked above), which holds the header and CMSG_LEN(len)
        // bytes of data; the data is written unaligned.
        unsafe {
            let cmsg = self.buf.as_mut_ptr().add(self.used).cast::<libc::cmsghdr>();
            (*cmsg).cmsg_level = level;
            (*cmsg).cmsg_type = kind;
            (*cmsg).cmsg_len = libc::CMSG_LEN(len) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<T>(), value);
        }
        self.used += space;
    }

    /// Points `msg` at what was written (no control data at all when
    /// nothing was), or fails (`EMSGSIZE`) when a message did not fit.
    pub(super) fn attach(&mut self, msg: &mut libc::msghdr) -> std::io::Result<()> {
        if self.overflowed {
            return Err(std::io::Error::from_raw_os_error(libc::EMSGSIZE));
        }
        if self.used == 0 {
            msg.msg_control = std::ptr::null_mut();
        } else {
            msg.msg_control = self.buf.as_mut_ptr().cast();
        }
        msg.msg_controllen = self.used as _;
        Ok(())
    }
}

/// One control message as received.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cmsg<'a> {
    /// `cmsg_level` (`SOL_SOCKET`, `IPPROTO_IP` …).
    pub level: libc::c_int,
    /// `cmsg_type`.
    pub kind: libc::c_int,
    /// Its data, as long as the kernel said.
    pub data: &'a [u8],
}

/// The control messages the kernel wrote into a buffer.
pub(super) struct Iter<'a> {
    /// A header describing the buffer alone, for `CMSG_FIRSTHDR` and
    /// `CMSG_NXTHDR`.
    msg: libc::msghdr,
    next: *const libc::cmsghdr,
    end: usize,
    _buf: PhantomData<&'a [u8]>,
}

impl<'a> Iter<'a> {
    /// The messages in `control`: the bytes the kernel filled
    /// (`msg_controllen` of them) of an 8-aligned buffer.
    pub(super) fn new(control: &'a [u8]) -> Self {
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_control = control.as_ptr().cast_mut().cast();
        msg.msg_controllen = control.len() as _;
        // SAFETY: msg describes `control`, live for 'a; CMSG_FIRSTHDR
        // only compares its length with a header's and returns its start
        // (or null).
        let next = unsafe { libc::CMSG_FIRSTHDR(&raw const msg) };
        Self {
            msg,
            next,
            end: control.as_ptr() as usize + control.len(),
            _buf: PhantomData,
        }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = Cmsg<'a>;

    fn next(&mut self) -> Option<Cmsg<'a>> {
        if self.next.is_null() {
            return None;
        }
        let cmsg = self.next;
        // SAFETY: `cmsg` is non-null, so CMSG_FIRSTHDR or CMSG_NXTHDR
        // found a whole header inside the buffer; the buffer is aligned
        // for it.
        let hdr = unsafe { &*cmsg };
        // SAFETY: CMSG_DATA points just past the header, inside the buffer.
        let data = unsafe { libc::CMSG_DATA(cmsg) };
        let claimed = hdr.cmsg_len.saturating_sub(data as usize - cmsg as usize);
        let len = claimed.min(self.end.saturating_sub(data as usize));
        // SAFETY: `len` bytes from `data` lie inside the buffer (clamped
        // to its end above), which lives for 'a.
        let data = unsafe { std::slice::from_raw_parts(data, len) };
        // SAFETY: as for CMSG_FIRSTHDR: CMSG_NXTHDR returns the next
        // header inside the buffer `msg` describes, or null past its end.
        self.next = unsafe { libc::CMSG_NXTHDR(&raw const self.msg, cmsg) };
        Some(Cmsg {
            level: hdr.cmsg_level,
            kind: hdr.cmsg_type,
            data,
        })
    }
}

/// The `i32` a control message holds (TTL, hop limit, traffic class).
pub(super) fn int_of(data: &[u8]) -> Option<i32> {
    data.get(..4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_ne_bytes)
}

/// A value of plain-old-data type `T` read from a control message's data
/// (`None` when it is too short).
pub(super) fn read<T: Copy>(data: &[u8]) -> Option<T> {
    (data.len() >= size_of::<T>())
        // SAFETY: at least size_of::<T>() bytes are readable (checked);
        // read_unaligned copes with any alignment; every caller's T is a
        // C struct of integers, for which any bytes are a valid value.
        .then(|| unsafe { std::ptr::read_unaligned(data.as_ptr().cast::<T>()) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn what_is_encoded_is_read_back_in_order() {
        let mut space = Space::<128>::default();
        let mut enc = Encoder::new(&mut space);
        enc.push(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, 0x55u32);
        enc.push(libc::IPPROTO_IP, libc::IP_TOS, 0xb8 as libc::c_int);
        enc.push(libc::SOL_UDP, 103, 1200u16);
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        enc.attach(&mut msg).unwrap();
        let len = msg.msg_controllen as usize;
        let got: Vec<(i32, i32, Vec<u8>)> = Iter::new(space.filled(len))
            .map(|c| (c.level, c.kind, c.data.to_vec()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    libc::SOL_SOCKET,
                    libc::SO_TIMESTAMPING,
                    0x55u32.to_ne_bytes().to_vec()
                ),
                (
                    libc::IPPROTO_IP,
                    libc::IP_TOS,
                    0xb8i32.to_ne_bytes().to_vec()
                ),
                (libc::SOL_UDP, 103, 1200u16.to_ne_bytes().to_vec()),
            ]
        );
        assert_eq!(int_of(&got[1].2), Some(0xb8));
        assert_eq!(read::<u16>(&got[2].2), Some(1200));
        assert_eq!(read::<u64>(&got[2].2), None, "too short");
    }

    #[test]
    fn nothing_encoded_attaches_no_control_data() {
        let mut space = Space::<32>::default();
        let mut enc = Encoder::new(&mut space);
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        enc.attach(&mut msg).unwrap();
        assert!(msg.msg_control.is_null());
        assert_eq!(msg.msg_controllen, 0);
        assert_eq!(Iter::new(space.filled(0)).count(), 0);
    }

    #[test]
    fn a_message_that_does_not_fit_fails_the_send_in_every_build() {
        let mut space = Space::<16>::default();
        let mut enc = Encoder::new(&mut space);
        enc.push(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, 1u32);
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        let err = enc.attach(&mut msg).expect_err("the message did not fit");
        assert_eq!(err.raw_os_error(), Some(libc::EMSGSIZE));
        assert!(msg.msg_control.is_null(), "nothing attached");
    }

    #[test]
    fn a_send_whose_control_data_overflows_sends_nothing() {
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut space = Space::<16>::default();
        let mut enc = Encoder::new(&mut space);
        enc.push(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, 1u32);
        let fd = std::os::fd::AsRawFd::as_raw_fd(&tx);
        let err = super::super::io::send_msg(fd, b"x", None, &mut enc, 0).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EMSGSIZE));
        rx.set_nonblocking(true).unwrap();
        assert!(rx.recv(&mut [0u8; 8]).is_err(), "nothing was sent");
    }
}
