//! The reflector's side of the split, for the server's `--log` (rant's
//! `response.txt`): when each answered datagram arrived (kernel RX stamp,
//! then user space) and when its answer left (user space, packet
//! scheduler, driver).
//!
//! The answer's TX stamps come back on the error queue and are matched by
//! the same [`TxMatcher`] the client uses. An answer is logged once its
//! stamps are in, or when its slot is needed again, with whatever never
//! came left empty.

use super::Protocol;
use crate::sys::errqueue::TxPoint;
use crate::sys::timestamping::{self, Stamps, flags};
use crate::timestamping::tx_matcher::{TxEntry, TxMatcher, TxPoints, TxStampReader};
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
pub struct AnswerPoints {
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
    /// When the answer entered the packet scheduler, was taken by the
    /// driver, and left the NIC: its TX stamps.
    pub t3: TxPoints,
    /// STAMP: the answer's own number, when its request asked for
    /// Follow-Up Telemetry (the next answer carries its TX stamp).
    pub follow_up: Option<u32>,
}

impl AnswerPoints {
    /// A datagram from `peer`, received with these stamps.
    pub fn received(protocol: Protocol, peer: SocketAddr, rx: Stamps) -> Self {
        Self {
            protocol,
            peer,
            seq: None,
            t2_driver: rx.software,
            t2_hw: rx.hardware,
            t2_user: None,
            t3_user: None,
            t3: TxPoints::default(),
            follow_up: None,
        }
    }

    /// Time in this host's kernel and reflector: the driver's TX stamp
    /// minus the kernel's RX stamp.
    pub fn response_ns(&self) -> Option<u64> {
        Some(self.t3.driver?.saturating_sub(self.t2_driver?))
    }

    /// The same on the NIC's clock.
    pub fn response_hw_ns(&self) -> Option<u64> {
        Some(self.t3.hw?.saturating_sub(self.t2_hw?))
    }
}

impl TxEntry for AnswerPoints {
    fn file(&mut self, point: TxPoint, stamps: Stamps) {
        self.t3.file(point, stamps);
    }

    fn complete(&self) -> bool {
        self.t3.complete()
    }
}

/// Matches the reflector's TX stamps to its answers and hands finished
/// answers to the log ring. Everything is allocated up front.
#[derive(Debug)]
pub struct AnswerLog {
    reader: TxStampReader,
    matcher: TxMatcher<AnswerPoints, PENDING>,
    out: rtrb::Producer<AnswerPoints>,
    /// Answers the log ring had no room for.
    pub overflow: u64,
    /// Whether each answer waits for its NIC's TX stamp too.
    hardware: bool,
    /// Follow-Up answers stamped since the reflector last looked (room
    /// for `PENDING`, allocated up front; more are dropped, and their
    /// sessions' next answers carry no follow-up).
    follow_ups: Vec<AnswerPoints>,
}

impl AnswerLog {
    /// Switches kernel stamping on for `fd`, both ways (and the NIC's,
    /// when `hardware`: its stamping must have been switched on), and
    /// starts matching. Also returns the control-message type RX stamps
    /// arrive as.
    pub fn enable(
        fd: RawFd,
        out: rtrb::Producer<AnswerPoints>,
        hardware: bool,
    ) -> io::Result<(Self, i32)> {
        let mut wanted = flags::TX_SOFTWARE | flags::RX_SOFTWARE | flags::REPORT_SOFTWARE;
        if hardware {
            wanted |= flags::HARDWARE;
        }
        let cmsg_type = timestamping::enable(fd, wanted | flags::OPTIONS)?;
        let mut log = Self::new(cmsg_type, out);
        log.hardware = hardware;
        Ok((log, cmsg_type))
    }

    fn new(cmsg_type: i32, out: rtrb::Producer<AnswerPoints>) -> Self {
        Self {
            reader: TxStampReader::new(cmsg_type),
            matcher: TxMatcher::new(),
            out,
            overflow: 0,
            hardware: false,
            follow_ups: Vec::with_capacity(PENDING),
        }
    }

    /// Hands each Follow-Up answer stamped since the last call to `f`.
    pub fn take_follow_ups(&mut self, mut f: impl FnMut(&AnswerPoints)) {
        for p in self.follow_ups.drain(..) {
            f(&p);
        }
    }

    /// An answer went out: it waits for its TX stamps, which are read now.
    pub fn sent(&mut self, fd: RawFd, points: AnswerPoints) {
        self.track(points);
        self.collect(fd);
    }

    /// Files an answer that went out to wait for its stamps.
    fn track(&mut self, mut points: AnswerPoints) {
        points.t3.want_hw = self.hardware;
        if let (_, Some(old)) = self.matcher.sent(points) {
            self.emit(old);
        }
    }

    /// An answer could not be sent: logged without TX stamps.
    pub fn send_failed(&mut self, points: AnswerPoints) {
        self.matcher.send_failed();
        self.emit(points);
    }

    /// Reads the error queue (never blocking) and files what it holds.
    pub fn collect(&mut self, fd: RawFd) {
        for _ in 0..MAX_READS {
            let Some((id, point, stamps)) = self.reader.next(fd) else {
                break;
            };
            if let Some(done) = self.matcher.file(id, point, stamps) {
                self.emit(done);
            }
        }
    }

    /// Logs every answer still waiting, oldest first (at the stop).
    pub fn finish(&mut self) {
        let waiting: Vec<_> = self.matcher.drain().collect();
        for p in waiting {
            self.emit(p);
        }
    }

    /// TX stamps that came after their answer had been logged.
    pub fn stale(&self) -> u64 {
        self.matcher.stale
    }

    fn emit(&mut self, p: AnswerPoints) {
        if p.follow_up.is_some() && self.follow_ups.len() < self.follow_ups.capacity() {
            self.follow_ups.push(p);
        }
        if self.out.push(p).is_err() {
            self.overflow += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(seq: u64) -> AnswerPoints {
        AnswerPoints {
            seq: Some(seq),
            ..AnswerPoints::received(
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

    /// Files a stamp as `collect` would after reading it off the queue.
    fn file(log: &mut AnswerLog, id: u32, point: TxPoint, stamps: Stamps) {
        if let Some(done) = log.matcher.file(id, point, stamps) {
            log.emit(done);
        }
    }

    #[test]
    fn answers_are_logged_once_stamped_or_evicted_and_all_at_the_end() {
        let (tx, mut rx) = rtrb::RingBuffer::new(128);
        let mut log = AnswerLog::new(0, tx);
        log.track(points(0));
        log.track(points(1));
        file(&mut log, 1, TxPoint::Sched, sw(10));
        file(&mut log, 1, TxPoint::Sent, sw(11));
        let first = rx.pop().unwrap();
        assert_eq!(
            (first.seq, first.t3.sched, first.t3.driver),
            (Some(1), Some(10), Some(11))
        );
        for seq in 2..=PENDING as u64 {
            log.track(points(seq));
        }
        let evicted = rx.pop().unwrap();
        assert_eq!((evicted.seq, evicted.t3.driver), (Some(0), None));
        log.send_failed(points(99));
        assert_eq!(
            rx.pop().unwrap().seq,
            Some(99),
            "a failed send is logged at once"
        );
        log.finish();
        let rest: Vec<_> = std::iter::from_fn(|| rx.pop().ok())
            .map(|p| p.seq.unwrap())
            .collect();
        assert_eq!(
            rest,
            (2..=PENDING as u64).collect::<Vec<_>>(),
            "oldest first"
        );
    }

    #[test]
    fn a_full_ring_counts_instead_of_blocking() {
        let (tx, _rx) = rtrb::RingBuffer::new(1);
        let mut log = AnswerLog::new(0, tx);
        log.send_failed(points(0));
        log.send_failed(points(1));
        assert_eq!(log.overflow, 1);
    }

    #[test]
    fn the_response_spans_stay_on_one_clock() {
        let p = AnswerPoints {
            t2_driver: Some(100),
            t3: TxPoints {
                driver: Some(350),
                ..TxPoints::default()
            },
            t2_hw: Some(7),
            ..points(0)
        };
        assert_eq!(p.response_ns(), Some(250));
        assert_eq!(p.response_hw_ns(), None, "never filled from software");
    }
}
