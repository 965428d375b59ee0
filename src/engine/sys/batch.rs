//! Many datagrams per syscall: `recvmmsg` fills up to `BATCH` slots, each
//! with its source address, and `sendmmsg` sends chosen slots back to their
//! sources. The reflector uses it only when datagrams are already waiting,
//! so a lone packet never waits for a batch to fill.
#![allow(unsafe_code)]

use super::pktinfo::{self, Arrival, ArrivalControl};
use super::timestamping;
use super::{RawAddr, Received, received};
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::RawFd;

/// Datagrams per `recvmmsg`: enough to amortise the syscall, small enough
/// that a batch's answers leave within microseconds of its first arrival.
pub const BATCH: usize = 32;

/// `BATCH` receive slots, allocated once.
pub struct Batch {
    /// `BATCH` slots of `slot` bytes each.
    bufs: Box<[u8]>,
    slot: usize,
    from: [RawAddr; BATCH],
    got: [Received; BATCH],
    /// Where each came to, when asked for (see [`pktinfo`]).
    arrival: [Option<Arrival>; BATCH],
    /// Their control data, when arrivals are asked for.
    controls: Option<Box<[ArrivalControl; BATCH]>>,
    len: usize,
}

impl Batch {
    /// Slots of `slot` bytes each (a datagram longer than that is reported
    /// truncated, as a single receive into `slot` bytes would be), and
    /// with `arrivals`, where each datagram came to (the socket must have
    /// [`pktinfo::enable`]d it), for each answer to leave from there.
    pub fn new(slot: usize, arrivals: bool) -> Self {
        Self {
            bufs: vec![0u8; slot * BATCH].into_boxed_slice(),
            slot,
            from: [RawAddr::empty(); BATCH],
            got: [Received::default(); BATCH],
            arrival: [None; BATCH],
            controls: arrivals.then(|| Box::new([ArrivalControl::default(); BATCH])),
            len: 0,
        }
    }

    /// Datagrams held by the last `recv`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the last `recv` got nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot `i`'s datagram, its size and its source.
    pub fn datagram(&self, i: usize) -> (&[u8], Received, &RawAddr) {
        let at = i * self.slot;
        let got = self.got[i];
        (&self.bufs[at..at + got.len], got, &self.from[i])
    }

    /// Receives whatever is waiting, up to `BATCH` datagrams, without
    /// blocking (one `recvmmsg`, `MSG_DONTWAIT`): `EAGAIN` when nothing is.
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.len = 0;
        // SAFETY: iovec and mmsghdr are plain old data; all-zero is valid.
        let mut iov: [libc::iovec; BATCH] = unsafe { zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        let base = self.bufs.as_mut_ptr();
        for (i, (m, v)) in msgs.iter_mut().zip(iov.iter_mut()).enumerate() {
            // SAFETY: slot i lies inside `bufs` (BATCH slots of `slot` bytes).
            v.iov_base = unsafe { base.add(i * self.slot) }.cast();
            v.iov_len = self.slot;
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_name = self.from[i].storage_ptr().cast();
            m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            if let Some(controls) = self.controls.as_deref_mut() {
                m.msg_hdr.msg_control = controls[i].as_mut_ptr();
                m.msg_hdr.msg_controllen = controls[i].capacity() as _;
            }
        }
        // SAFETY: every header points at a live slot and address of the
        // sizes given, all owned by `self` and the stack for the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        self.len = n as usize;
        for (i, m) in msgs.iter().take(self.len).enumerate() {
            self.from[i].set_len(m.msg_hdr.msg_namelen);
            self.arrival[i] = self
                .controls
                .is_some()
                .then(|| timestamping::arrival_of(&m.msg_hdr))
                .flatten();
            let truncated = m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let len = m.msg_len as usize;
            self.got[i] = if truncated {
                received(self.slot + 1, self.slot)
            } else {
                received(len, self.slot)
            };
        }
        Ok(self.len)
    }

    /// Sends slots `which` back to their sources as they are, each from
    /// where it came to when that is known (one `sendmmsg` while all go; a
    /// slot the kernel refuses is skipped). Returns how many could not be
    /// sent.
    pub fn send_back(&self, fd: RawFd, which: &[u8]) -> u64 {
        // SAFETY: iovec and mmsghdr are plain old data; all-zero is valid.
        let mut iov: [libc::iovec; BATCH] = unsafe { zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        let mut controls = [ArrivalControl::default(); BATCH];
        let count = which.len().min(BATCH);
        let each = msgs.iter_mut().zip(iov.iter_mut()).zip(controls.iter_mut());
        for (((m, v), control), &slot) in each.zip(which) {
            let (bytes, _, to) = self.datagram(usize::from(slot));
            v.iov_base = bytes.as_ptr().cast_mut().cast();
            v.iov_len = bytes.len();
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_name = to.storage_ptr_const().cast_mut().cast();
            m.msg_hdr.msg_namelen = to.len;
            if let Some(from) = self.arrival[usize::from(slot)] {
                pktinfo::put_source(&mut m.msg_hdr, control, from);
            }
        }
        let mut failed = 0;
        let mut at = 0;
        while at < count {
            // SAFETY: headers at..count point at live slots and addresses;
            // the kernel only reads them for the duration of the call.
            let n = unsafe {
                libc::sendmmsg(fd, msgs[at..].as_mut_ptr(), (count - at) as libc::c_uint, 0)
            };
            if n > 0 {
                at += n as usize;
            } else {
                // The first of the rest failed (an error after some were
                // sent is reported on the next call, for that one).
                failed += 1;
                at += 1;
            }
        }
        failed
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        (a, b)
    }

    #[test]
    fn nothing_waiting_is_eagain_not_a_wait() {
        let (_, b) = pair();
        let mut batch = Batch::new(64, false);
        let e = batch.recv(b.as_raw_fd()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN));
        assert!(batch.is_empty());
    }

    #[test]
    fn queued_datagrams_come_in_one_call_with_their_sources_and_go_back() {
        let (a, b) = pair();
        let other = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = b.local_addr().unwrap();
        for i in 0..5u8 {
            a.send_to(&vec![i; usize::from(i) + 1], to).unwrap();
        }
        other.send_to(b"other", to).unwrap();
        let mut batch = Batch::new(64, false);
        assert_eq!(batch.recv(b.as_raw_fd()).unwrap(), 6);
        for i in 0..5u8 {
            let (bytes, got, from) = batch.datagram(usize::from(i));
            assert_eq!(bytes, &vec![i; usize::from(i) + 1][..]);
            assert!(!got.truncated);
            assert_eq!(from.to_socket_addr(), Some(a.local_addr().unwrap()));
        }
        let (bytes, _, from) = batch.datagram(5);
        assert_eq!(
            (bytes, from.to_socket_addr()),
            (&b"other"[..], Some(other.local_addr().unwrap()))
        );
        // Slots 1 and 3 only, back to `a`.
        assert_eq!(batch.send_back(b.as_raw_fd(), &[3, 1]), 0);
        let mut buf = [0u8; 64];
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[3, 3, 3, 3]);
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[1, 1]);
        a.set_nonblocking(true).unwrap();
        assert!(a.recv(&mut buf).is_err(), "nothing else was sent");
    }

    #[test]
    fn a_datagram_longer_than_its_slot_is_marked_truncated() {
        let (a, b) = pair();
        let to = b.local_addr().unwrap();
        a.send_to(&[7u8; 100], to).unwrap();
        a.send_to(&[8u8; 16], to).unwrap();
        let mut batch = Batch::new(16, false);
        assert_eq!(batch.recv(b.as_raw_fd()).unwrap(), 2);
        let (bytes, got, _) = batch.datagram(0);
        assert!(got.truncated);
        assert_eq!(bytes.len(), 16);
        let (bytes, got, _) = batch.datagram(1);
        assert!(!got.truncated, "exactly the slot's size fits");
        assert_eq!(bytes, &[8u8; 16]);
    }

    /// On a wildcard socket, each datagram says where it came to, and its
    /// answer leaves from there: clients connected to 127.0.0.2 and
    /// 127.0.0.3 each take theirs (the route back prefers 127.0.0.1).
    #[test]
    fn answers_leave_from_the_address_each_request_came_to() {
        let server = UdpSocket::bind("0.0.0.0:0").unwrap();
        pktinfo::enable(server.as_raw_fd(), false).unwrap();
        let port = server.local_addr().unwrap().port();
        let clients: Vec<UdpSocket> = [[127, 0, 0, 2], [127, 0, 0, 3]]
            .iter()
            .map(|ip| {
                let c = UdpSocket::bind("127.0.0.1:0").unwrap();
                c.connect((std::net::Ipv4Addr::from(*ip), port)).unwrap();
                c.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                    .unwrap();
                c.send(&ip[3..]).unwrap();
                c
            })
            .collect();
        let mut batch = Batch::new(64, true);
        assert_eq!(batch.recv(server.as_raw_fd()).unwrap(), 2);
        let arrivals = [batch.arrival[0], batch.arrival[1]];
        assert_eq!(
            arrivals,
            [
                Some(Arrival::V4([127, 0, 0, 2])),
                Some(Arrival::V4([127, 0, 0, 3]))
            ]
        );
        assert_eq!(batch.send_back(server.as_raw_fd(), &[0, 1]), 0);
        let mut buf = [0u8; 8];
        for (c, last) in clients.iter().zip([2u8, 3]) {
            let n = c.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[last]);
        }
    }

    /// The same on a dual-stack `[::]` socket: IPv4 requests arrive as
    /// IPv4-mapped addresses and their answers still leave from them.
    #[test]
    fn dual_stack_answers_leave_from_the_mapped_address_asked() {
        let Ok(server) = UdpSocket::bind("[::]:0") else {
            eprintln!("skipped: no IPv6 here");
            return;
        };
        pktinfo::enable(server.as_raw_fd(), true).unwrap();
        let port = server.local_addr().unwrap().port();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(("127.0.0.2", port)).unwrap();
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        client.send(b"v4").unwrap();
        client.send(b"v4 again").unwrap();
        let mut batch = Batch::new(64, true);
        assert_eq!(batch.recv(server.as_raw_fd()).unwrap(), 2);
        let mapped = std::net::Ipv4Addr::new(127, 0, 0, 2)
            .to_ipv6_mapped()
            .octets();
        assert!(
            matches!(batch.arrival[0], Some(Arrival::V6(a, _)) if a == mapped),
            "{:?}",
            batch.arrival[0]
        );
        assert_eq!(batch.send_back(server.as_raw_fd(), &[0, 1]), 0);
        let mut buf = [0u8; 16];
        for sent in [&b"v4"[..], b"v4 again"] {
            let n = client.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], sent);
        }
    }

    #[test]
    fn more_than_a_batch_waits_for_the_next_call() {
        let (a, b) = pair();
        let to = b.local_addr().unwrap();
        for i in 0..(BATCH + 3) {
            a.send_to(&(i as u32).to_be_bytes(), to).unwrap();
        }
        let mut batch = Batch::new(8, false);
        assert_eq!(batch.recv(b.as_raw_fd()).unwrap(), BATCH);
        assert_eq!(batch.recv(b.as_raw_fd()).unwrap(), 3);
        assert_eq!(batch.datagram(2).0, &((BATCH + 2) as u32).to_be_bytes());
    }
}
