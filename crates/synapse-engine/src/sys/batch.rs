//! Many datagrams per syscall: `recvmmsg` fills up to `BATCH` slots, each
//! with its source address, and `sendmmsg` sends chosen slots back to their
//! sources. The reflector waits in it for the first datagram and takes
//! only what is already queued beside it (`MSG_WAITFORONE`), so a lone
//! packet never waits for a batch to fill.
//!
//! Answers to one source go as one message where they can (UDP GSO,
//! `UDP_SEGMENT`): the kernel walks its send path once for the lot and cuts
//! it into the same datagrams at the device (or, on loopback, at the
//! receiving socket). Per source the order is kept. A route or device
//! that refuses GSO gets them one by one, and no more GSO: of that size or
//! larger past an MTU, at all otherwise. A group that fails for another
//! reason is sent again one by one.

use super::addr::RawAddr;
use super::cmsg::Encoder;
use super::io::{Received, received};
use super::pktinfo::{self, Arrival, ArrivalControl};
use std::cell::Cell;
use std::io;
use std::mem::{MaybeUninit, size_of, zeroed};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;

/// Datagrams per `recvmmsg`: enough to amortise the syscall, small enough
/// that a batch's answers leave within microseconds of its first arrival.
pub const BATCH: usize = 32;

/// `UDP_SEGMENT` (linux/udp.h; the libc crate has it for few targets).
const UDP_SEGMENT: libc::c_int = 103;

/// Bytes one GSO message may carry: what an IPv4 or IPv6 packet holds,
/// with room for the headers.
const MAX_GSO_BYTES: usize = 65_000;

/// One datagram per group, for answers sent one by one.
const SINGLES: [u8; BATCH] = [1; BATCH];

/// `BATCH` receive slots, allocated once.
pub struct Batch {
    /// `BATCH` slots of `slot` bytes each.
    bufs: Box<[u8]>,
    slot: usize,
    /// On the heap, as the slots and control data: the headers point at
    /// them and must stay valid when the batch moves.
    from: Box<[RawAddr; BATCH]>,
    /// The receive headers, built once: a `recv` resets only what the
    /// kernel wrote into those it filled (the reflector tries one after
    /// every answer, most finding nothing).
    headers: Box<[libc::mmsghdr; BATCH]>,
    /// Their buffers, one slot each (the headers point here).
    iov: Box<[libc::iovec; BATCH]>,
    got: [Received; BATCH],
    /// Where each came to, when asked for (see [`pktinfo`]).
    arrival: [Option<Arrival>; BATCH],
    /// The group each was sent to, when asked for and it was one.
    group: [Option<IpAddr>; BATCH],
    /// Their control data, when arrivals are asked for.
    controls: Option<Box<[ArrivalControl; BATCH]>>,
    len: usize,
    /// The largest datagram still sent with GSO: lowered when a route
    /// refuses a size (its MTU), zero once a device cannot do it at all.
    gso_limit: Cell<usize>,
}

impl Batch {
    /// Slots of `slot` bytes each (a datagram longer than that is reported
    /// truncated, as a single receive into `slot` bytes would be), and
    /// with `arrivals`, where each datagram came to (the socket must have
    /// [`pktinfo::enable`]d it), for each answer to leave from there.
    pub fn new(slot: usize, arrivals: bool) -> Self {
        let mut batch = Self {
            bufs: vec![0u8; slot * BATCH].into_boxed_slice(),
            slot,
            from: Box::new([RawAddr::empty(); BATCH]),
            // SAFETY: mmsghdr and iovec are plain old data; all-zero is valid.
            headers: Box::new(unsafe { zeroed() }),
            // SAFETY: as above.
            iov: Box::new(unsafe { zeroed() }),
            got: [Received::default(); BATCH],
            arrival: [None; BATCH],
            group: [None; BATCH],
            controls: arrivals.then(|| Box::new([ArrivalControl::default(); BATCH])),
            len: 0,
            gso_limit: Cell::new(usize::from(u16::MAX)),
        };
        batch.point_headers();
        batch
    }

    /// Points each receive header at its slot, address and control data
    /// (all on the heap, owned by the batch, so this holds for its life).
    fn point_headers(&mut self) {
        let base = self.bufs.as_mut_ptr();
        let slots = self.headers.iter_mut().zip(self.iov.iter_mut());
        for (i, (m, v)) in slots.enumerate() {
            // SAFETY: slot i lies inside `bufs` (BATCH slots of `slot` bytes).
            v.iov_base = unsafe { base.add(i * self.slot) }.cast();
            v.iov_len = self.slot;
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_name = self.from[i].storage_ptr().cast();
            if let Some(controls) = self.controls.as_deref_mut() {
                m.msg_hdr.msg_control = controls[i].as_mut_ptr();
            }
        }
        for i in 0..BATCH {
            self.reset_header(i);
        }
    }

    /// Restores what the kernel writes into header `i` when it fills it.
    #[inline]
    fn reset_header(&mut self, i: usize) {
        let m = &mut self.headers[i];
        m.msg_len = 0;
        m.msg_hdr.msg_flags = 0;
        m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        if let Some(controls) = self.controls.as_deref() {
            m.msg_hdr.msg_controllen = controls[i].capacity() as _;
        }
    }

    /// Datagrams held by the last `recv`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the last `recv` got nothing.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot `i`'s datagram, its size and its source.
    pub fn datagram(&self, i: usize) -> (&[u8], Received, &RawAddr) {
        let at = i * self.slot;
        let got = self.got[i];
        (&self.bufs[at..at + got.len], got, &self.from[i])
    }

    /// Slot `i`'s datagram, to answer in place.
    #[inline]
    pub fn datagram_mut(&mut self, i: usize) -> &mut [u8] {
        let at = i * self.slot;
        let len = self.got[i].len;
        &mut self.bufs[at..at + len]
    }

    /// Receives whatever is waiting, up to `BATCH` datagrams, without
    /// blocking (one `recvmmsg`, `MSG_DONTWAIT`): `EAGAIN` when nothing is.
    /// (The reflector waits in [`Batch::recv_waiting`]; the tests here
    /// look at a queue without waiting on it.)
    #[cfg(test)]
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_DONTWAIT)
    }

    /// Waits for a datagram as the socket waits (blocking, up to its
    /// receive timeout, or not at all when it is non-blocking), then takes
    /// whatever else is already queued, up to `BATCH`, without waiting
    /// (one `recvmmsg`, `MSG_WAITFORONE`): a lone datagram costs one call,
    /// as a `recvfrom` would, and a queue is drained by the same call.
    pub fn recv_waiting(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_WAITFORONE)
    }

    fn recv_flags(&mut self, fd: RawFd, flags: libc::c_int) -> io::Result<usize> {
        self.len = 0;
        // SAFETY: every header points at a live slot, address and control
        // buffer of the sizes given, all owned by `self` on the heap.
        let n = unsafe {
            super::direct::recvmmsg(fd, self.headers.as_mut_ptr(), BATCH as libc::c_uint, flags)
        };
        if n < 0 {
            // The kernel writes back a header only for a datagram received.
            return Err(io::Error::last_os_error());
        }
        self.len = n as usize;
        for i in 0..self.len {
            let m = self.headers[i];
            self.from[i].set_len(m.msg_hdr.msg_namelen);
            // Without control data every arrival stays `None`, as made.
            if let Some(controls) = self.controls.as_deref() {
                let control = controls[i].filled(m.msg_hdr.msg_controllen);
                (self.arrival[i], self.group[i]) = pktinfo::arrived_in(control);
            }
            let truncated = m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let len = m.msg_len as usize;
            self.got[i] = if truncated {
                received(self.slot + 1, self.slot)
            } else {
                received(len, self.slot)
            };
            self.reset_header(i);
        }
        Ok(self.len)
    }

    /// Turns slots `which` sent to a group toward that group, on their
    /// sender's port (`synapse server --answer-to-group`): their answers go
    /// where every member of the group on that port hears them.
    pub fn answer_to_groups(&mut self, which: &[u8]) {
        for &i in which {
            let i = usize::from(i);
            if let Some(group) = self.group[i] {
                let port = self.from[i].port();
                self.from[i] = RawAddr::from_socket_addr(SocketAddr::new(group, port));
            }
        }
    }

    /// Sends slot `i` back to its source as it is, from where it came to
    /// when that is known (one `sendto`, or `sendmsg` with the source):
    /// the answer to a batch of one, without a `sendmmsg`'s headers.
    #[inline]
    pub fn send_one(&self, fd: RawFd, i: usize) -> io::Result<usize> {
        let (bytes, _, to) = self.datagram(i);
        pktinfo::send_to_from(fd, bytes, to, self.arrival[i])
    }

    /// Sends slots `which` back to their sources as they are, each from
    /// where it came to when that is known: one `sendmmsg` while all go,
    /// answers to one source merged by GSO where they can be (a slot the
    /// kernel refuses is skipped). Returns how many could not be sent.
    pub fn send_back(&self, fd: RawFd, which: &[u8]) -> u64 {
        let mut order = [0u8; BATCH];
        let mut sizes = [0u8; BATCH];
        let groups = self.group(which, &mut order, &mut sizes);
        self.send_groups(fd, &order[..which.len().min(BATCH)], &sizes[..groups])
    }

    /// Orders `which` into groups that can each leave as one GSO message:
    /// the same source and arrival, one size (the last may be shorter),
    /// the group in the order its datagrams came. A datagram that cannot
    /// join ends its source's group, so no source's answers overtake each
    /// other. Fills `order` (the slots, group by group) and `sizes` (each
    /// group's count); returns the number of groups.
    fn group(&self, which: &[u8], order: &mut [u8; BATCH], sizes: &mut [u8; BATCH]) -> usize {
        let count = which.len().min(BATCH);
        let limit = self.gso_limit.get();
        let mut used = [false; BATCH];
        let (mut placed, mut groups) = (0, 0);
        for a in 0..count {
            if used[a] {
                continue;
            }
            let lead = usize::from(which[a]);
            let size = self.got[lead].len;
            order[placed] = which[a];
            placed += 1;
            let (mut members, mut total) = (1, size);
            // Only a datagram GSO may carry leads a group of more.
            let end = if (1..=limit).contains(&size) {
                count
            } else {
                a
            };
            for b in a + 1..end {
                let slot = usize::from(which[b]);
                if used[b] || !self.same_path(lead, slot) {
                    continue;
                }
                let len = self.got[slot].len;
                if len == 0 || len > size || total + len > MAX_GSO_BYTES {
                    break;
                }
                used[b] = true;
                order[placed] = which[b];
                placed += 1;
                members += 1;
                total += len;
                if len < size {
                    break; // a shorter one can only be a group's last
                }
            }
            sizes[groups] = members;
            groups += 1;
        }
        groups
    }

    /// Whether slots `a` and `b` answer the same source from the same
    /// address. The ports first: with many sources, most differ there, and
    /// each lead is compared with the rest of its batch.
    fn same_path(&self, a: usize, b: usize) -> bool {
        self.from[a].port() == self.from[b].port()
            && self.from[a].same_as(&self.from[b])
            && self.arrival[a] == self.arrival[b]
    }

    /// Sends `order`, cut into groups of `sizes`, a message per group.
    /// Returns how many datagrams could not be sent.
    fn send_groups(&self, fd: RawFd, order: &[u8], sizes: &[u8]) -> u64 {
        // Only the headers, buffers and control data of the groups sent are
        // written (most sends are one group): zeroing all `BATCH` of each
        // cost more than the rest of an answer.
        let mut iov = [MaybeUninit::<libc::iovec>::uninit(); BATCH];
        let mut msgs = [MaybeUninit::<libc::mmsghdr>::uninit(); BATCH];
        let mut controls = [MaybeUninit::<ArrivalControl>::uninit(); BATCH];
        let mut firsts = [0usize; BATCH];
        let mut at = 0;
        for (g, &size) in sizes.iter().enumerate() {
            let members = &order[at..at + usize::from(size)];
            for (v, &slot) in iov[at..].iter_mut().zip(members) {
                let (bytes, _, _) = self.datagram(usize::from(slot));
                v.write(libc::iovec {
                    iov_base: bytes.as_ptr().cast_mut().cast(),
                    iov_len: bytes.len(),
                });
            }
            let lead = usize::from(members[0]);
            // SAFETY: mmsghdr is plain old data; all-zero is valid.
            let m = &mut msgs[g].write(unsafe { zeroed() }).msg_hdr;
            m.msg_iov = (&raw mut iov[at]).cast();
            m.msg_iovlen = members.len();
            m.msg_name = self.from[lead].storage_ptr_const().cast_mut().cast();
            m.msg_namelen = self.from[lead].len;
            let mut control = Encoder::new(controls[g].write(ArrivalControl::default()));
            if let Some(from) = self.arrival[lead] {
                pktinfo::push_source(&mut control, from);
            }
            if members.len() > 1 {
                // Every datagram's size but the last's.
                let size = self.got[lead].len as u16;
                control.push(libc::SOL_UDP, UDP_SEGMENT, size);
            }
            if control.attach(m).is_err() {
                // Never sent without the source or segment size it needs:
                // every datagram of this send fails (counted as such).
                return order.len() as u64;
            }
            firsts[g] = at;
            at += members.len();
        }
        let (groups, mut failed, mut g) = (sizes.len(), 0, 0);
        while g < groups {
            // SAFETY: headers g..groups were written above and point at
            // live iovecs (written), slots, addresses and control data; the
            // kernel only reads them for the duration of the call.
            let n = unsafe {
                super::direct::sendmmsg(
                    fd,
                    msgs[g..].as_mut_ptr().cast::<libc::mmsghdr>(),
                    (groups - g) as libc::c_uint,
                    0,
                )
            };
            if n > 0 {
                g += n as usize;
                continue;
            }
            // The first of the rest failed (an error after some were sent
            // is reported on the next call, for that one).
            let members = &order[firsts[g]..firsts[g] + usize::from(sizes[g])];
            let errno = io::Error::last_os_error().raw_os_error();
            failed += if members.len() > 1 {
                if let Some(errno) = errno.filter(|&e| refuses_gso(e)) {
                    let size = self.got[usize::from(members[0])].len;
                    let limit = if errno == libc::EIO { 0 } else { size - 1 };
                    self.gso_limit.set(self.gso_limit.get().min(limit));
                }
                // One by one: GSO refused, or the error was an earlier
                // send's (an ICMP report the socket held, which failing
                // this send consumed) and must not cost a whole group.
                self.send_groups(fd, members, &SINGLES[..members.len()])
            } else {
                1
            };
            g += 1;
        }
        failed
    }
}

/// Whether a GSO send failed for being GSO: `EINVAL` when a segment and
/// its headers exceed the route's MTU (or the socket sends without
/// checksums), `EIO` when the device or an IPsec route cannot segment.
fn refuses_gso(errno: i32) -> bool {
    matches!(errno, libc::EINVAL | libc::EIO | libc::EMSGSIZE)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// Switches a socket's integer option `name` on.
    fn switch_on(socket: &UdpSocket, level: libc::c_int, name: libc::c_int) {
        crate::sys::sockopt::set_int(socket.as_raw_fd(), level, name, 1).unwrap();
    }

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
        // A second datagram from 127.0.0.2's client, merged with its first.
        clients[0].send(&[2]).unwrap();
        let mut batch = Batch::new(64, true);
        assert_eq!(batch.recv(server.as_raw_fd()).unwrap(), 3);
        let arrivals = [batch.arrival[0], batch.arrival[1]];
        assert_eq!(
            arrivals,
            [
                Some(Arrival::V4([127, 0, 0, 2])),
                Some(Arrival::V4([127, 0, 0, 3]))
            ]
        );
        assert_eq!(batch.send_back(server.as_raw_fd(), &[0, 1, 2]), 0);
        assert_eq!(batch.gso_limit.get(), 65_535, "the kernel took the GSO");
        let mut buf = [0u8; 8];
        for (c, last) in [&clients[0], &clients[0], &clients[1]]
            .iter()
            .zip([2u8, 2, 3])
        {
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
        // The last two are merged: the IPv6 source and the segment size
        // fill the control buffer to its last byte.
        let sent = [&b"v4"[..], b"v4 again", b"and more"];
        for datagram in sent {
            client.send(datagram).unwrap();
        }
        let mut batch = Batch::new(64, true);
        assert_eq!(batch.recv(server.as_raw_fd()).unwrap(), 3);
        let mapped = std::net::Ipv4Addr::new(127, 0, 0, 2)
            .to_ipv6_mapped()
            .octets();
        assert!(
            matches!(batch.arrival[0], Some(Arrival::V6(a, _)) if a == mapped),
            "{:?}",
            batch.arrival[0]
        );
        assert_eq!(batch.send_back(server.as_raw_fd(), &[0, 1, 2]), 0);
        assert_eq!(batch.gso_limit.get(), 65_535, "the kernel took the GSO");
        let mut buf = [0u8; 16];
        for datagram in sent {
            let n = client.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], datagram);
        }
    }

    /// Three sources, interleaved: each source's answers that GSO can carry
    /// leave as one message, and each source still gets its own datagrams,
    /// whole and in the order it sent them.
    #[test]
    fn answers_to_one_source_are_merged_and_arrive_as_sent() {
        let (a, server) = pair();
        let (b, c) = pair();
        c.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        b.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let to = server.local_addr().unwrap();
        // (who, size), in the order they are sent; each byte is its index.
        let sent: [(&UdpSocket, usize); 9] = [
            (&a, 8),
            (&b, 4),
            (&a, 8),
            (&c, 0),
            (&a, 8),
            (&b, 4),
            (&a, 5),
            (&c, 6),
            (&a, 8),
        ];
        for (i, (who, size)) in sent.iter().enumerate() {
            who.send_to(&vec![i as u8; *size], to).unwrap();
        }
        let mut batch = Batch::new(64, false);
        assert_eq!(batch.recv(server.as_raw_fd()).unwrap(), 9);
        let all: Vec<u8> = (0..9).collect();
        let (mut order, mut sizes) = ([0u8; BATCH], [0u8; BATCH]);
        let groups = batch.group(&all, &mut order, &mut sizes);
        // a's three 8s and its shorter 5 (a group's last); b's two 4s; c's
        // empty datagram alone (GSO cannot carry it), its 6 alone; a's last
        // 8 after its group, never before it.
        assert_eq!(&sizes[..groups], &[4, 2, 1, 1, 1]);
        assert_eq!(&order[..9], &[0, 2, 4, 6, 1, 5, 3, 7, 8]);
        assert_eq!(batch.send_back(server.as_raw_fd(), &all), 0);
        assert_eq!(batch.gso_limit.get(), 65_535, "the kernel took the GSO");
        let mut buf = [0u8; 64];
        for (i, (who, size)) in sent.iter().enumerate() {
            let n = who.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &vec![i as u8; *size][..], "datagram {i}");
        }
        for who in [&a, &b, &c] {
            who.set_nonblocking(true).unwrap();
            assert!(who.recv(&mut buf).is_err(), "nothing else was sent");
        }
    }

    /// A socket that sends without UDP checksums cannot use GSO (the kernel
    /// says `EINVAL`): the datagrams go one by one, all of them, and later
    /// batches of that size are not merged again.
    #[test]
    fn a_gso_refusal_sends_one_by_one_and_stops_merging() {
        let (a, server) = pair();
        switch_on(&server, libc::SOL_SOCKET, libc::SO_NO_CHECK);
        let to = server.local_addr().unwrap();
        let mut batch = Batch::new(64, false);
        let mut buf = [0u8; 64];
        for round in 0..2u8 {
            for i in 0..4u8 {
                a.send_to(&[round * 4 + i; 10], to).unwrap();
            }
            assert_eq!(batch.recv(server.as_raw_fd()).unwrap(), 4);
            assert_eq!(batch.send_back(server.as_raw_fd(), &[0, 1, 2, 3]), 0);
            for i in 0..4u8 {
                let n = a.recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], &[round * 4 + i; 10]);
            }
            assert!(batch.gso_limit.get() < 10, "round {round}");
        }
        let (mut order, mut sizes) = ([0u8; BATCH], [0u8; BATCH]);
        assert_eq!(batch.group(&[0, 1, 2, 3], &mut order, &mut sizes), 4);
    }

    /// An ICMP report about an earlier answer, held by the socket, fails
    /// the next send whatever it is: for a merged group, that must not
    /// lose the group.
    #[test]
    fn an_earlier_answers_error_does_not_cost_a_group() {
        let (a, server) = pair();
        switch_on(&server, libc::IPPROTO_IP, libc::IP_RECVERR);
        let to = server.local_addr().unwrap();
        for i in 0..3u8 {
            a.send_to(&[i; 12], to).unwrap();
        }
        let mut batch = Batch::new(64, false);
        assert_eq!(batch.recv(server.as_raw_fd()).unwrap(), 3);
        // An answer to a port nobody listens on: loopback's "port
        // unreachable" comes back at once and waits on the socket.
        let gone = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        server.send_to(b"to nobody", gone).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(batch.send_back(server.as_raw_fd(), &[0, 1, 2]), 0);
        let mut buf = [0u8; 64];
        for i in 0..3u8 {
            let n = a.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[i; 12]);
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
