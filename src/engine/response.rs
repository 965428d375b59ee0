//! The reflector's side of the split, for the server's `--log` (rant's
//! `response.txt`): when each answered datagram arrived (kernel RX stamp,
//! then user space) and when its answer left (user space, packet
//! scheduler, driver).
//!
//! The answer's TX stamps come back on the error queue, numbered by
//! `SOF_TIMESTAMPING_OPT_ID` in send order. Answers wait for them in a
//! small table indexed by that number, so a stamp that comes late still
//! finds its answer. An answer is logged once its stamps are in, or when
//! its slot is needed again, with whatever never came left empty.

use super::reflector::Protocol;
use super::sys::timestamping::{self, ControlBuf, ErrQueue, TxPoint, flags};
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Answers whose TX stamps may still be on their way.
const PENDING: usize = 64;
/// Error-queue reads per call at most: one answer's stamps are two
/// messages; the bound keeps a flood of them from stalling the reflector.
const MAX_READS: usize = 16;

/// One answered datagram. Times are ns since the Unix epoch
/// (`CLOCK_REALTIME`), except the hardware ones, which are the NIC's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponsePoints {
    /// Which reflector answered.
    pub protocol: Protocol,
    /// Who asked.
    pub peer: SocketAddr,
    /// STAMP: the sender's sequence number. Echo: the first 8 bytes read
    /// as a Synapse client's sequence number (see `protocol::echo_seq`).
    pub seq: Option<u64>,
    /// The kernel's software RX stamp.
    pub t2_driver: Option<u64>,
    /// The NIC's RX stamp.
    pub t2_hw: Option<u64>,
    /// User space, just after the receive returned.
    pub t2_user: Option<u64>,
    /// User space, just before the answer was sent.
    pub t3_user: Option<u64>,
    /// The answer entered the packet scheduler.
    pub t3_sched: Option<u64>,
    /// The driver took the answer.
    pub t3_driver: Option<u64>,
    /// The NIC sent the answer.
    pub t3_hw: Option<u64>,
}

impl ResponsePoints {
    /// A datagram from `peer`, received with these stamps.
    pub fn received(protocol: Protocol, peer: SocketAddr, rx: timestamping::Stamps) -> Self {
        Self {
            protocol,
            peer,
            seq: None,
            t2_driver: rx.software,
            t2_hw: rx.hardware,
            t2_user: None,
            t3_user: None,
            t3_sched: None,
            t3_driver: None,
            t3_hw: None,
        }
    }

    /// Time in this host's kernel and reflector: the driver's TX stamp
    /// minus the kernel's RX stamp.
    pub fn response_ns(&self) -> Option<u64> {
        Some(self.t3_driver?.saturating_sub(self.t2_driver?))
    }

    /// The same on the NIC's clock.
    pub fn response_hw_ns(&self) -> Option<u64> {
        Some(self.t3_hw?.saturating_sub(self.t2_hw?))
    }
}

/// Matches the reflector's TX stamps to its answers and hands finished
/// answers to the log ring. Everything is allocated up front.
pub struct ResponseStamps {
    stamp_type: i32,
    control: ControlBuf,
    pending: [Option<(u32, ResponsePoints)>; PENDING],
    next_id: u32,
    resync: bool,
    out: rtrb::Producer<ResponsePoints>,
    /// Answers the log ring had no room for.
    pub overflow: u64,
    /// TX stamps whose answer had already been logged.
    pub stale: u64,
}

impl ResponseStamps {
    /// Switches software stamping on for `fd`, both ways, and starts
    /// matching. (The server never switches a NIC's clock on, so the
    /// hardware points stay empty.) Returns the control-message type RX
    /// stamps arrive as, too.
    pub fn enable(fd: RawFd, out: rtrb::Producer<ResponsePoints>) -> io::Result<(Self, i32)> {
        let wanted = flags::TX_SOFTWARE | flags::RX_SOFTWARE | flags::REPORT_SOFTWARE;
        let stamp_type = timestamping::enable(fd, wanted | flags::OPTIONS)?;
        let me = Self {
            stamp_type,
            control: ControlBuf::default(),
            pending: [None; PENDING],
            next_id: 0,
            resync: false,
            out,
            overflow: 0,
            stale: 0,
        };
        Ok((me, stamp_type))
    }

    /// An answer went out: it waits for its TX stamps, which are read now.
    pub fn sent(&mut self, fd: RawFd, points: ResponsePoints) {
        self.track(points);
        self.collect(fd);
    }

    /// Numbers an answer that went out and files it to wait for stamps.
    fn track(&mut self, points: ResponsePoints) {
        let id = self.next_id;
        self.next_id = id.wrapping_add(1);
        let slot = &mut self.pending[id as usize % PENDING];
        if let Some((_, old)) = slot.replace((id, points)) {
            self.emit(old);
        }
    }

    /// An answer could not be sent: logged without TX stamps. Whether the
    /// kernel counted it is unknown, so the numbering is re-learned.
    pub fn send_failed(&mut self, points: ResponsePoints) {
        self.resync = true;
        self.emit(points);
    }

    /// Reads the error queue (never blocking) and files what it holds.
    pub fn collect(&mut self, fd: RawFd) {
        for _ in 0..MAX_READS {
            match timestamping::read_error_queue(fd, &mut self.control, self.stamp_type) {
                Ok(ErrQueue::Stamp { id, point, stamps }) => self.file(id, point, stamps),
                // An ICMP report about some client: not ours to time.
                Ok(ErrQueue::Other) => {}
                Ok(ErrQueue::Empty) | Err(_) => break,
            }
        }
    }

    fn file(&mut self, id: u32, point: TxPoint, stamps: timestamping::Stamps) {
        let newest = self.next_id.wrapping_sub(1);
        if self.resync && id == newest {
            self.resync = false;
        } else if self.resync && id.wrapping_sub(newest) < u32::MAX / 2 {
            // After a failed send the kernel's count runs ahead of ours:
            // this stamp is the newest answer's, and so are the next ones.
            // (An older answer's late stamp says nothing about that.)
            if let Some(entry) = self.pending[newest as usize % PENDING].take() {
                self.pending[id as usize % PENDING] = Some((id, entry.1));
            }
            self.next_id = id.wrapping_add(1);
            self.resync = false;
        }
        let slot = id as usize % PENDING;
        let Some((want, p)) = self.pending[slot].as_mut() else {
            self.stale += 1;
            return;
        };
        if *want != id {
            self.stale += 1;
            return;
        }
        match point {
            TxPoint::Sched => p.t3_sched = p.t3_sched.or(stamps.software),
            TxPoint::Sent => {
                p.t3_driver = p.t3_driver.or(stamps.software);
                p.t3_hw = p.t3_hw.or(stamps.hardware);
            }
        }
        if p.t3_sched.is_some()
            && p.t3_driver.is_some()
            && let Some((_, done)) = self.pending[slot].take()
        {
            self.emit(done);
        }
    }

    /// Logs every answer still waiting, oldest first (at the stop).
    pub fn finish(&mut self) {
        let start = self.next_id.wrapping_sub(PENDING as u32);
        for k in 0..PENDING as u32 {
            let id = start.wrapping_add(k);
            if let Some((_, p)) = self.pending[id as usize % PENDING].take() {
                self.emit(p);
            }
        }
    }

    fn emit(&mut self, p: ResponsePoints) {
        if self.out.push(p).is_err() {
            self.overflow += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sys::timestamping::Stamps;

    fn points(seq: u64) -> ResponsePoints {
        ResponsePoints {
            seq: Some(seq),
            ..ResponsePoints::received(
                Protocol::Echo,
                SocketAddr::from(([127, 0, 0, 1], 9)),
                Stamps::default(),
            )
        }
    }

    fn sw(ns: u64) -> Stamps {
        Stamps {
            software: Some(ns),
            hardware: None,
        }
    }

    fn tracker(capacity: usize) -> (ResponseStamps, rtrb::Consumer<ResponsePoints>) {
        let (tx, rx) = rtrb::RingBuffer::new(capacity);
        let me = ResponseStamps {
            stamp_type: 0,
            control: ControlBuf::default(),
            pending: [None; PENDING],
            next_id: 0,
            resync: false,
            out: tx,
            overflow: 0,
            stale: 0,
        };
        (me, rx)
    }

    /// Sends without a socket: reading a real error queue is exercised by
    /// the integration tests.
    fn send(t: &mut ResponseStamps, p: ResponsePoints) {
        t.track(p);
    }

    #[test]
    fn an_answer_is_logged_once_both_tx_stamps_are_in_even_late_ones() {
        let (mut t, mut rx) = tracker(16);
        send(&mut t, points(0));
        send(&mut t, points(1));
        t.file(1, TxPoint::Sched, sw(10));
        t.file(1, TxPoint::Sent, sw(11));
        assert_eq!(rx.pop().unwrap().seq, Some(1));
        assert!(rx.pop().is_err(), "answer 0 still waits for its stamps");
        t.file(0, TxPoint::Sched, sw(5));
        t.file(0, TxPoint::Sent, sw(6));
        let late = rx.pop().unwrap();
        assert_eq!(
            (late.seq, late.t3_sched, late.t3_driver),
            (Some(0), Some(5), Some(6))
        );
        t.file(0, TxPoint::Sent, sw(7));
        assert_eq!(t.stale, 1, "a stamp for an answer already logged");
    }

    #[test]
    fn a_slot_needed_again_logs_its_answer_with_the_stamps_missing() {
        let (mut t, mut rx) = tracker(128);
        for seq in 0..=PENDING as u64 {
            send(&mut t, points(seq));
        }
        let evicted = rx.pop().unwrap();
        assert_eq!((evicted.seq, evicted.t3_driver), (Some(0), None));
        t.finish();
        let rest: Vec<_> = std::iter::from_fn(|| rx.pop().ok())
            .map(|p| p.seq.unwrap())
            .collect();
        assert_eq!(
            rest,
            (1..=PENDING as u64).collect::<Vec<_>>(),
            "oldest first"
        );
    }

    #[test]
    fn after_a_failed_send_the_numbering_follows_the_kernel() {
        let (mut t, mut rx) = tracker(16);
        send(&mut t, points(0));
        t.file(0, TxPoint::Sched, sw(1));
        t.file(0, TxPoint::Sent, sw(2));
        t.send_failed(points(1));
        // The kernel counted the failed datagram: answer 2 is its number 2,
        // where we would have said 1.
        send(&mut t, points(2));
        t.file(2, TxPoint::Sched, sw(3));
        t.file(2, TxPoint::Sent, sw(4));
        send(&mut t, points(3));
        t.file(3, TxPoint::Sched, sw(5));
        t.file(3, TxPoint::Sent, sw(6));
        let got: Vec<_> = std::iter::from_fn(|| rx.pop().ok())
            .map(|p| (p.seq.unwrap(), p.t3_driver))
            .collect();
        assert_eq!(
            got,
            [(0, Some(2)), (1, None), (2, Some(4)), (3, Some(6))],
            "{got:?}"
        );
        assert_eq!(t.stale, 0);
    }

    #[test]
    fn a_late_stamp_after_a_failed_send_does_not_end_the_resync() {
        let (mut t, mut rx) = tracker(16);
        send(&mut t, points(0));
        t.send_failed(points(1));
        send(&mut t, points(2));
        // Answer 0's stamps come late; then answer 2's, numbered by the
        // kernel as 2 where we said 1.
        t.file(0, TxPoint::Sched, sw(1));
        t.file(0, TxPoint::Sent, sw(2));
        t.file(2, TxPoint::Sched, sw(3));
        t.file(2, TxPoint::Sent, sw(4));
        let got: Vec<_> = std::iter::from_fn(|| rx.pop().ok())
            .map(|p| (p.seq.unwrap(), p.t3_driver))
            .collect();
        assert_eq!(got, [(1, None), (0, Some(2)), (2, Some(4))], "{got:?}");
        assert_eq!(t.stale, 0);
    }

    #[test]
    fn a_full_ring_counts_instead_of_blocking() {
        let (mut t, _rx) = tracker(1);
        t.send_failed(points(0));
        t.send_failed(points(1));
        assert_eq!(t.overflow, 1);
    }

    #[test]
    fn the_response_spans_stay_on_one_clock() {
        let p = ResponsePoints {
            t2_driver: Some(100),
            t3_driver: Some(350),
            t2_hw: Some(7),
            t3_hw: None,
            ..points(0)
        };
        assert_eq!(p.response_ns(), Some(250));
        assert_eq!(p.response_hw_ns(), None, "never filled from software");
    }
}
