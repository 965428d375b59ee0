//! The socket's error queue (`MSG_ERRQUEUE`): the TX stamps the kernel
//! reports there, numbered per packet (`SOF_TIMESTAMPING_OPT_ID`), and
//! the ICMP errors `IP_RECVERR` queues. Read one message at a time, or a
//! batch per `recvmmsg`. Never blocks.

use super::cmsg::{self, ControlBuf};
use super::io;
use super::timestamping::Stamps;
use std::mem::zeroed;
use std::os::fd::RawFd;

/// `ee_info` of a stamp taken when the driver handed the packet on.
const SCM_TSTAMP_SND: u32 = 0;
/// `ee_info` of a stamp taken on entering the packet scheduler.
const SCM_TSTAMP_SCHED: u32 = 1;
/// `ee_info` of a stamp taken when the peer's ACK covered the bytes (TCP).
const SCM_TSTAMP_ACK: u32 = 2;

/// What the control messages of one error-queue message hold.
fn classify(control: &[u8], stamp_type: i32) -> ErrQueue {
    let mut stamps = Stamps::default();
    let mut error = None;
    for c in cmsg::Iter::new(control) {
        match (c.level, c.kind) {
            (libc::SOL_SOCKET, t) if t == stamp_type => stamps = Stamps::of(c.data),
            (libc::IPPROTO_IP, libc::IP_RECVERR) | (libc::IPPROTO_IPV6, libc::IPV6_RECVERR) => {
                error = cmsg::read::<libc::sock_extended_err>(c.data);
            }
            _ => {}
        }
    }
    match error {
        Some(ee)
            if ee.ee_errno == libc::ENOMSG as u32
                && ee.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING =>
        {
            let point = match ee.ee_info {
                SCM_TSTAMP_SCHED => TxPoint::Sched,
                SCM_TSTAMP_SND => TxPoint::Sent,
                SCM_TSTAMP_ACK => TxPoint::Acked,
                _ => return ErrQueue::Other,
            };
            ErrQueue::Stamp {
                id: ee.ee_data,
                point,
                stamps,
            }
        }
        Some(ee) if ee.ee_errno != 0 => ErrQueue::Error(ee.ee_errno as i32),
        _ => ErrQueue::Other,
    }
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
    /// An ICMP error (port unreachable, no route, too big…): its errno.
    Error(i32),
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
    let mut scratch = [0u8; 64];
    let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
    let room = (control.as_mut_ptr(), control.capacity());
    match io::recv_msg(fd, &mut scratch, None, room, flags) {
        Ok(got) => Ok(classify(control.filled(got.control_len), stamp_type)),
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(ErrQueue::Empty),
        Err(e) => Err(e),
    }
}

/// Discards everything queued on the socket's error queue (ICMP errors
/// reported through `IP_RECVERR`). Never blocks.
/// Returns the errno of the last ICMP error it held: reading an error
/// clears the socket's pending error, so this is the only place left to
/// learn it.
pub fn drain_error_queue(fd: RawFd) -> Option<i32> {
    let mut control = ControlBuf::default();
    let mut errno = None;
    loop {
        match read_error_queue(fd, &mut control, 0) {
            Ok(ErrQueue::Error(e)) => errno = Some(e),
            Ok(ErrQueue::Stamp { .. } | ErrQueue::Other) => {}
            Ok(ErrQueue::Empty) | Err(_) => return errno,
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
    controls: Box<[ControlBuf; ERRQUEUE_BATCH]>,
    read: [ErrQueue; ERRQUEUE_BATCH],
    filled: usize,
}

impl Default for ErrQueueBatch {
    fn default() -> Self {
        Self {
            controls: Box::new(std::array::from_fn(|_| ControlBuf::default())),
            read: [ErrQueue::Empty; ERRQUEUE_BATCH],
            filled: 0,
        }
    }
}

impl ErrQueueBatch {
    /// Reads what the queue holds, up to a batch, never blocking. Returns
    /// the messages read (none: the queue was empty, or unreadable).
    pub fn fill(&mut self, fd: RawFd, stamp_type: i32) -> &[ErrQueue] {
        // Payloads are not wanted (stamps come without, OPT_TSONLY; an
        // ICMP report's quoted datagram is cut short): one scratch buffer
        // serves every message.
        let mut scratch = [0u8; 64];
        let mut iov = libc::iovec {
            iov_base: scratch.as_mut_ptr().cast(),
            iov_len: scratch.len(),
        };
        // SAFETY: mmsghdr is plain old data; all-zero is valid.
        let mut msgs: [libc::mmsghdr; ERRQUEUE_BATCH] = unsafe { zeroed() };
        for (m, control) in msgs.iter_mut().zip(self.controls.iter_mut()) {
            m.msg_hdr.msg_iov = &raw mut iov;
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = control.as_mut_ptr();
            m.msg_hdr.msg_controllen = control.capacity() as _;
        }
        // SAFETY: every msghdr points at live buffers of the stated
        // lengths (the shared scratch iovec, its own control buffer); the
        // count is the array's length; no timeout.
        let n = unsafe {
            super::direct::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                ERRQUEUE_BATCH as libc::c_uint,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        self.filled = usize::try_from(n).unwrap_or(0).min(ERRQUEUE_BATCH);
        for ((slot, m), control) in self
            .read
            .iter_mut()
            .zip(&msgs[..self.filled])
            .zip(self.controls.iter())
        {
            *slot = classify(control.filled(m.msg_hdr.msg_controllen), stamp_type);
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
    use crate::sys::timestamping::{enable, flags, recv_stamped};
    use std::net::UdpSocket;
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
}
