//! The socket's error queue (`MSG_ERRQUEUE`): the TX stamps the kernel
//! reports there, numbered per packet (`SOF_TIMESTAMPING_OPT_ID`), and
//! the ICMP errors `IP_RECVERR` queues, each read as an [`IcmpReport`].
//! The two share the queue and are told apart by their origin: a stamp is
//! never taken for an ICMP error, nor an error for a stamp. Read one
//! message at a time, or a batch per `recvmmsg`. Never blocks.

use super::addr::RawAddr;
use super::cmsg::{self, ControlBuf};
use super::icmp_error::{IcmpReport, QUOTED, Quoted};
use super::io;
use super::timestamping::Stamps;
use std::mem::{size_of, zeroed};
use std::os::fd::RawFd;

/// `ee_info` of a stamp taken when the driver handed the packet on.
const SCM_TSTAMP_SND: u32 = 0;
/// `ee_info` of a stamp taken on entering the packet scheduler.
const SCM_TSTAMP_SCHED: u32 = 1;
/// `ee_info` of a stamp taken when the peer's ACK covered the bytes (TCP).
const SCM_TSTAMP_ACK: u32 = 2;

/// What one error-queue message is: its control messages, `payload` the
/// start of what it carried (`read` bytes in all) and `name` the address
/// the kernel gave (the erring datagram's destination).
fn classify(
    control: &[u8],
    stamp_type: i32,
    payload: &[u8],
    read: usize,
    name: &RawAddr,
) -> ErrQueue {
    let mut stamps = Stamps::default();
    let mut error = None;
    for c in cmsg::Iter::new(control) {
        match (c.level, c.kind) {
            (libc::SOL_SOCKET, t) if t == stamp_type => stamps = Stamps::of(c.data),
            (libc::IPPROTO_IP, libc::IP_RECVERR) | (libc::IPPROTO_IPV6, libc::IPV6_RECVERR) => {
                error = cmsg::read::<libc::sock_extended_err>(c.data)
                    .map(|ee| (ee, c.data.get(size_of::<libc::sock_extended_err>()..)));
            }
            _ => {}
        }
    }
    let Some((ee, after)) = error else {
        return ErrQueue::Other;
    };
    if ee.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING {
        // A stamp (ENOMSG), never an error, whatever else it carries.
        if ee.ee_errno != libc::ENOMSG as u32 {
            return ErrQueue::Other;
        }
        let point = match ee.ee_info {
            SCM_TSTAMP_SCHED => TxPoint::Sched,
            SCM_TSTAMP_SND => TxPoint::Sent,
            SCM_TSTAMP_ACK => TxPoint::Acked,
            _ => return ErrQueue::Other,
        };
        return ErrQueue::Stamp {
            id: ee.ee_data,
            point,
            stamps,
        };
    }
    if ee.ee_errno == 0 {
        return ErrQueue::Other;
    }
    let quoted = Quoted::of(payload, read);
    let after = after.unwrap_or_default();
    ErrQueue::Error(IcmpReport::of(&ee, after, name, quoted, stamps))
}

/// Which moment a TX stamp records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxPoint {
    /// Entering the packet scheduler (qdisc).
    Sched,
    /// Handed to the device (software stamp) or sent by it (hardware).
    Sent,
    /// TCP: the peer's cumulative ACK moved past the last byte
    /// (`SOF_TIMESTAMPING_TX_ACK`).
    Acked,
}

/// What one read of the error queue found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrQueue {
    /// A TX stamp for packet `id` (counted from 0 since enabling).
    Stamp {
        /// Which packet (`SOF_TIMESTAMPING_OPT_ID` counter).
        id: u32,
        /// Which moment.
        point: TxPoint,
        /// The stamps.
        stamps: Stamps,
    },
    /// An error (an ICMP port unreachable or time exceeded, no route, too
    /// big…): what reported it, about which datagram.
    Error(IcmpReport),
    /// Another kind of report; nothing to time.
    Other,
    /// Nothing queued.
    Empty,
}

/// Reads one message from the error queue. Never blocks.
pub fn read_error_queue(
    fd: RawFd,
    control: &mut ControlBuf,
    stamp_type: i32,
) -> std::io::Result<ErrQueue> {
    let mut payload = [0u8; QUOTED];
    read_error_queue_into(fd, control, stamp_type, &mut payload)
}

/// [`read_error_queue`] that puts an error's quoted payload into
/// `payload`, as much as fits (the report says how much was read): room
/// for the whole quote lets its RFC 4884 extensions be read after it.
pub fn read_error_queue_into(
    fd: RawFd,
    control: &mut ControlBuf,
    stamp_type: i32,
    payload: &mut [u8],
) -> std::io::Result<ErrQueue> {
    let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
    let room = (control.as_mut_ptr(), control.capacity());
    let mut name = RawAddr::empty();
    match io::recv_msg(fd, payload, Some(&mut name), room, flags) {
        Ok(got) => {
            let read = got.len.min(payload.len());
            let control = control.filled(got.control_len);
            Ok(classify(control, stamp_type, payload, read, &name))
        }
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(ErrQueue::Empty),
        Err(e) => Err(e),
    }
}

/// Discards everything queued on the socket's error queue (ICMP errors
/// reported through `IP_RECVERR`). Never blocks.
/// Returns the last error it held: reading an error clears the socket's
/// pending error, so this is the only place left to learn it.
pub fn drain_error_queue(fd: RawFd) -> Option<IcmpReport> {
    let mut control = ControlBuf::default();
    let mut last = None;
    loop {
        match read_error_queue(fd, &mut control, 0) {
            Ok(ErrQueue::Error(report)) => last = Some(report),
            Ok(ErrQueue::Stamp { .. } | ErrQueue::Other) => {}
            Ok(ErrQueue::Empty) | Err(_) => return last,
        }
    }
}

/// Error-queue messages one [`ErrQueueBatch::fill`] reads at most.
pub const ERRQUEUE_BATCH: usize = 16;

/// Reads the error queue up to [`ERRQUEUE_BATCH`] messages per
/// `recvmmsg`: a paced run's burst of sends leaves two stamps each, and
/// one syscall for all of them (and none to learn that the queue is
/// empty, when it returns fewer) costs a fraction of one each.
/// Allocation-free after `new`.
#[derive(Debug)]
pub struct ErrQueueBatch {
    buffers: Box<BatchBuffers>,
    read: [ErrQueue; ERRQUEUE_BATCH],
    filled: usize,
}

/// What each message of a batch is read into: its control data, the start
/// of its payload (an error's quote; stamps come without, OPT_TSONLY) and
/// its address.
#[derive(Debug)]
struct BatchBuffers {
    controls: [ControlBuf; ERRQUEUE_BATCH],
    payloads: [[u8; QUOTED]; ERRQUEUE_BATCH],
    names: [RawAddr; ERRQUEUE_BATCH],
}

impl Default for ErrQueueBatch {
    fn default() -> Self {
        Self {
            buffers: Box::new(BatchBuffers {
                controls: std::array::from_fn(|_| ControlBuf::default()),
                payloads: [[0; QUOTED]; ERRQUEUE_BATCH],
                names: [RawAddr::empty(); ERRQUEUE_BATCH],
            }),
            read: [ErrQueue::Empty; ERRQUEUE_BATCH],
            filled: 0,
        }
    }
}

impl ErrQueueBatch {
    /// Reads what the queue holds, up to a batch, never blocking. Returns
    /// the messages read (none: the queue was empty, or unreadable).
    pub fn fill(&mut self, fd: RawFd, stamp_type: i32) -> &[ErrQueue] {
        let b = &mut *self.buffers;
        let mut iovs: [libc::iovec; ERRQUEUE_BATCH] = std::array::from_fn(|i| libc::iovec {
            iov_base: b.payloads[i].as_mut_ptr().cast(),
            iov_len: QUOTED,
        });
        // SAFETY: mmsghdr is plain old data; all-zero is valid.
        let mut msgs: [libc::mmsghdr; ERRQUEUE_BATCH] = unsafe { zeroed() };
        for (i, m) in msgs.iter_mut().enumerate() {
            m.msg_hdr.msg_iov = &raw mut iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = b.controls[i].as_mut_ptr();
            m.msg_hdr.msg_controllen = b.controls[i].capacity() as _;
            m.msg_hdr.msg_name = b.names[i].storage_ptr().cast();
            m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        // SAFETY: every msghdr points at live buffers of the stated
        // lengths (its own payload, control buffer and address storage);
        // the count is the array's length; no timeout.
        let n = unsafe {
            super::direct::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                ERRQUEUE_BATCH as libc::c_uint,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        self.filled = usize::try_from(n).unwrap_or(0).min(ERRQUEUE_BATCH);
        for (i, m) in msgs[..self.filled].iter().enumerate() {
            b.names[i].set_len(m.msg_hdr.msg_namelen);
            let control = b.controls[i].filled(m.msg_hdr.msg_controllen);
            let read = (m.msg_len as usize).min(QUOTED);
            let name = &b.names[i];
            self.read[i] = classify(control, stamp_type, &b.payloads[i], read, name);
        }
        &self.read[..self.filled]
    }

    /// Message `i` of the last [`ErrQueueBatch::fill`] (`Empty` past it).
    pub fn fill_result(&self, i: usize) -> ErrQueue {
        self.read[..self.filled]
            .get(i)
            .copied()
            .unwrap_or(ErrQueue::Empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::clock::realtime_ns;
    use crate::sys::icmp_error::ErrOrigin;
    use crate::sys::timestamping::{enable, flags, recv_stamped};
    use std::net::{SocketAddr, UdpSocket};
    use std::os::fd::AsRawFd;

    /// Three sends, six stamps, one `recvmmsg`: SCHED then SND for each,
    /// numbered; the queue is empty after them.
    #[test]
    fn a_batch_reads_every_waiting_stamp_in_one_call() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let kind = enable(
            tx.as_raw_fd(),
            flags::TX_SOFTWARE | flags::REPORT_SOFTWARE | flags::OPTIONS,
        )
        .unwrap();
        for _ in 0..3 {
            tx.send(b"stamp me").unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut batch = ErrQueueBatch::default();
        let got: Vec<(u32, TxPoint)> = batch
            .fill(tx.as_raw_fd(), kind)
            .iter()
            .map(|m| match *m {
                ErrQueue::Stamp { id, point, stamps } => {
                    assert!(stamps.software.is_some(), "a software stamp");
                    (id, point)
                }
                other => panic!("not a stamp: {other:?}"),
            })
            .collect();
        let want: Vec<(u32, TxPoint)> = (0..3)
            .flat_map(|id| [(id, TxPoint::Sched), (id, TxPoint::Sent)])
            .collect();
        assert_eq!(got, want);
        assert!(batch.fill(tx.as_raw_fd(), kind).is_empty(), "drained");
        assert_eq!(batch.fill_result(0), ErrQueue::Empty);
    }

    /// The ordering the guide describes on loopback: user send ≤ SCHED ≤
    /// SND ≤ RX software ≤ user receive, all in CLOCK_REALTIME, each TX stamp
    /// numbered by OPT_ID.
    #[test]
    fn loopback_stamps_arrive_in_order_and_numbered() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let tx_type = enable(
            tx.as_raw_fd(),
            flags::TX_SOFTWARE | flags::REPORT_SOFTWARE | flags::OPTIONS,
        )
        .unwrap();
        let rx_type = enable(rx.as_raw_fd(), flags::RX_SOFTWARE | flags::REPORT_SOFTWARE).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let mut control = ControlBuf::default();
        // The kernel switches RX stamping on asynchronously (a deferred
        // static key), so the first packets may go unstamped: warm up.
        let mut buf = [0u8; 64];
        let mut warmup = 0u32;
        loop {
            tx.send(b"warm-up").unwrap();
            warmup += 1;
            let got = recv_stamped(rx.as_raw_fd(), &mut buf, None, &mut control, rx_type).unwrap();
            if got.stamps.software.is_some() {
                break;
            }
            assert!(warmup < 200, "RX stamping never came on");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        while read_error_queue(tx.as_raw_fd(), &mut control, tx_type).unwrap() != ErrQueue::Empty {}
        for id in warmup..warmup + 3 {
            let t1 = realtime_ns();
            tx.send(b"stamp me").unwrap();
            let got = recv_stamped(rx.as_raw_fd(), &mut buf, None, &mut control, rx_type).unwrap();
            let t4 = realtime_ns();
            assert_eq!(&buf[..got.received.len], b"stamp me");
            let rx_sw = got.stamps.software.expect("RX software stamp");
            assert_eq!(got.stamps.hardware, None, "no NIC clock on loopback");
            let mut sched = None;
            let mut sent = None;
            for _ in 0..100 {
                match read_error_queue(tx.as_raw_fd(), &mut control, tx_type).unwrap() {
                    ErrQueue::Stamp {
                        id: got_id,
                        point,
                        stamps,
                    } => {
                        assert_eq!(got_id, id, "OPT_ID numbers packets from 0");
                        match point {
                            TxPoint::Sched => sched = stamps.software,
                            TxPoint::Sent => sent = stamps.software,
                            TxPoint::Acked => panic!("a UDP datagram is never acknowledged"),
                        }
                    }
                    ErrQueue::Other | ErrQueue::Error(_) => {
                        panic!("unexpected error-queue message")
                    }
                    ErrQueue::Empty if sched.is_some() && sent.is_some() => break,
                    ErrQueue::Empty => std::thread::sleep(std::time::Duration::from_millis(1)),
                }
            }
            let (sched, sent) = (sched.expect("SCHED stamp"), sent.expect("SND stamp"));
            assert!(
                t1 <= sched && sched <= sent && sent <= rx_sw && rx_sw <= t4,
                "{t1} {sched} {sent} {rx_sw} {t4}"
            );
        }
        assert_eq!(
            read_error_queue(tx.as_raw_fd(), &mut control, tx_type).unwrap(),
            ErrQueue::Empty
        );
    }

    /// A socket (IPv4 or IPv6 loopback) with `IP_RECVERR` and TX and RX
    /// software stamps on, and a port on the same address nothing listens on.
    fn erring_socket(ipv6: bool) -> (UdpSocket, SocketAddr, i32) {
        let host = if ipv6 { "[::1]:0" } else { "127.0.0.1:0" };
        let tx = UdpSocket::bind(host).unwrap();
        crate::sys::sockopt::enable_recverr(tx.as_raw_fd(), ipv6).unwrap();
        let wanted =
            flags::TX_SOFTWARE | flags::RX_SOFTWARE | flags::REPORT_SOFTWARE | flags::OPTIONS;
        let kind = enable(tx.as_raw_fd(), wanted).unwrap();
        assert!(
            crate::sys::timestamping::wait_for_rx_stamping(std::time::Duration::from_secs(2)),
            "RX stamping never came on"
        );
        let closed = UdpSocket::bind(host).unwrap().local_addr().unwrap();
        (tx, closed, kind)
    }

    /// Sends, again when the first try only returned the error an earlier
    /// datagram left pending on the socket (it fails the next send).
    fn send_past_pending(tx: &UdpSocket, payload: &[u8], to: SocketAddr) {
        if tx.send_to(payload, to).is_err() {
            tx.send_to(payload, to).unwrap();
        }
    }

    /// Reads the queue until it has held `want` messages (bounded), in order.
    fn read_all(fd: RawFd, kind: i32, want: usize) -> Vec<ErrQueue> {
        let mut control = ControlBuf::default();
        let mut got = Vec::new();
        for _ in 0..2000 {
            match read_error_queue(fd, &mut control, kind).unwrap() {
                ErrQueue::Empty if got.len() >= want => break,
                ErrQueue::Empty => std::thread::sleep(std::time::Duration::from_millis(1)),
                m => got.push(m),
            }
        }
        got
    }

    /// A datagram to a closed port on loopback: its two TX stamps and the
    /// far side's port unreachable share the queue; the stamps are read as
    /// stamps and the ICMP message as a report saying who sent it, about
    /// which destination, quoting the datagram's payload, stamped on
    /// arrival. Both families.
    #[test]
    fn a_port_unreachable_is_a_report_and_never_a_stamp() {
        for ipv6 in [false, true] {
            let (tx, closed, kind) = erring_socket(ipv6);
            let payload = *b"probe-identity:0123456789";
            let sent_at = realtime_ns();
            tx.send_to(&payload, closed).unwrap();
            let got = read_all(tx.as_raw_fd(), kind, 3);
            let stamps: Vec<TxPoint> = got
                .iter()
                .filter_map(|m| match *m {
                    ErrQueue::Stamp { id: 0, point, .. } => Some(point),
                    _ => None,
                })
                .collect();
            assert_eq!(stamps, [TxPoint::Sched, TxPoint::Sent], "{got:?}");
            let reports: Vec<IcmpReport> = got
                .iter()
                .filter_map(|m| match *m {
                    ErrQueue::Error(r) => Some(r),
                    _ => None,
                })
                .collect();
            assert_eq!(reports.len(), 1, "one ICMP error: {got:?}");
            assert_eq!(got.len(), 3, "nothing else: {got:?}");
            let r = reports[0];
            assert_eq!(r.errno, libc::ECONNREFUSED);
            let origin = if ipv6 {
                ErrOrigin::Icmp6
            } else {
                ErrOrigin::Icmp
            };
            assert_eq!(r.origin, origin);
            assert!(r.is_port_unreachable() && !r.is_time_exceeded(), "{r:?}");
            assert_eq!(
                (r.icmp_type, r.icmp_code),
                if ipv6 { (1, 4) } else { (3, 3) }
            );
            assert_eq!(r.offender, Some(closed.ip()), "the host refused");
            assert_eq!(r.destination, Some(closed));
            assert_eq!(r.quoted.bytes(), &payload[..QUOTED]);
            assert_eq!(r.quoted.read_len(), QUOTED, "as much as the buffer held");
            assert_eq!(r.extensions_at, None, "not asked for");
            assert_eq!(r.mtu(), None);
            let arrived = r.arrived.software.expect("an RX stamp on the ICMP message");
            assert!(arrived >= sent_at, "{arrived} {sent_at}");
        }
    }

    /// The same through a batch read, and a whole quote through a larger
    /// buffer: a report holds the first bytes, the buffer the rest.
    #[test]
    fn a_batch_tells_stamps_from_reports_and_a_large_buffer_gets_the_quote() {
        let (tx, closed, kind) = erring_socket(false);
        let payload: Vec<u8> = (0..200u8).collect();
        send_past_pending(&tx, &payload, closed);
        send_past_pending(&tx, &payload, closed);
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut batch = ErrQueueBatch::default();
        let got = batch.fill(tx.as_raw_fd(), kind);
        let errors = got
            .iter()
            .filter(|m| matches!(m, ErrQueue::Error(_)))
            .count();
        let stamps = got
            .iter()
            .filter(|m| matches!(m, ErrQueue::Stamp { .. }))
            .count();
        assert_eq!((stamps, errors, got.len()), (4, 2, 6), "{got:?}");
        for m in got {
            if let ErrQueue::Error(r) = m {
                assert!(r.is_port_unreachable());
                assert_eq!(r.quoted.bytes(), &payload[..QUOTED]);
                assert_eq!(r.destination, Some(closed));
            }
        }
        send_past_pending(&tx, &payload, closed);
        let mut control = ControlBuf::default();
        let mut whole = [0u8; 512];
        let mut report = None;
        for _ in 0..2000 {
            match read_error_queue_into(tx.as_raw_fd(), &mut control, kind, &mut whole).unwrap() {
                ErrQueue::Error(r) => {
                    report = Some(r);
                    break;
                }
                _ => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
        let r = report.expect("a port unreachable");
        assert_eq!(r.quoted.read_len(), payload.len(), "loopback quotes it all");
        assert_eq!(&whole[..payload.len()], &payload[..]);
    }

    /// Draining keeps the last report, and reading it took the socket's
    /// pending error with it.
    #[test]
    fn draining_returns_the_last_report() {
        let (tx, closed, _) = erring_socket(false);
        send_past_pending(&tx, b"first", closed);
        send_past_pending(&tx, b"second", closed);
        std::thread::sleep(std::time::Duration::from_millis(30));
        let last = drain_error_queue(tx.as_raw_fd()).expect("an error was queued");
        assert_eq!(last.quoted.bytes(), b"second");
        assert_eq!(drain_error_queue(tx.as_raw_fd()), None, "drained");
    }
}
