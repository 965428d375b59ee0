//! Follow-Up Telemetry (RFC 8972 §4.7) without a `--log`: the kernel's TX
//! stamp of each answer whose request asked for it, matched to the
//! answer, so the session's next answer can carry it.
//!
//! Only those answers are stamped: each asks for its TX stamp in its own
//! `sendmsg` (`SO_TIMESTAMPING` control message), so the kernel numbers
//! them (`OPT_ID`) and every other answer costs nothing. The error queue
//! is read only when a session's next request finds its stamp not in yet
//! (by then it has long been taken; one read files every stamp waiting, so
//! many sessions share it), and every tick. With a `--log`, the log's own
//! stamps serve instead (`AnswerLog`).
//!
//! With the NIC stamping too, the kernel's stamp comes first and the NIC's
//! later: the session gets the kernel's at once and the NIC's when it
//! comes, so its next answer carries the best one in by then.
//!
//! The kernel drops a TX stamp when the socket's receive buffer is full (a
//! flood keeps it full). Once a later answer's stamp has been read, an
//! earlier one still missing most likely never comes: its session stops
//! waiting for it, and its next request costs no read of a queue that does
//! not hold it (under a flood most reads were such). The answer stays in
//! the table, so a stamp that was only overtaken (a queueing discipline or
//! a multi-queue NIC may reorder) still reaches its session.

use super::stamp_counters::StampCounters;
use super::test_clock::shifted_opt;
use crate::protocol::stamp::TimeFormat;
use crate::protocol::tlv_reflect::follow_up_of;
use crate::sys::errqueue::TxPoint;
use crate::sys::icmp_error::IcmpReport;
use crate::sys::timestamping::Stamps;
use crate::timestamping::phc_map::PhcMap;
use crate::timestamping::tx_matcher::{TxEntry, TxMatcher, TxStampReader};
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Answers whose stamp may still be on its way.
const WAITING: usize = 64;

/// One answer waiting for its TX stamp.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    peer: SocketAddr,
    seq: u32,
    stamps: Stamps,
    /// The NIC stamps too: done only once its stamp is in.
    want_hw: bool,
}

impl TxEntry for Waiting {
    fn file(&mut self, point: TxPoint, stamps: Stamps) {
        if point == TxPoint::Sent {
            self.stamps.software = self.stamps.software.or(stamps.software);
            self.stamps.hardware = self.stamps.hardware.or(stamps.hardware);
        }
    }

    fn complete(&self) -> bool {
        self.stamps.hardware.is_some() || (!self.want_hw && self.stamps.software.is_some())
    }
}

/// Matches Follow-Up answers to their TX stamps. Allocation-free.
#[derive(Debug)]
pub struct FollowUpStamps {
    reader: TxStampReader,
    matcher: TxMatcher<Waiting, WAITING>,
    /// The TX stamps an answer asks for.
    ask: u32,
    /// The NIC stamps too.
    hardware: bool,
    /// Answers numbered below this one have been settled: stamped, or
    /// known never to be.
    settled: u32,
    /// The format the Follow-Up's send times are written in (the
    /// reflector's).
    format: TimeFormat,
}

impl FollowUpStamps {
    /// For a socket whose stamps arrive as control-message `cmsg_type`
    /// (numbered with `OPT_ID`, asked per answer), from the kernel and,
    /// when `hardware`, the NIC.
    pub fn new(cmsg_type: i32, hardware: bool, format: TimeFormat) -> Self {
        let mut ask = libc::SOF_TIMESTAMPING_TX_SOFTWARE;
        if hardware {
            ask |= libc::SOF_TIMESTAMPING_TX_HARDWARE;
        }
        Self {
            reader: TxStampReader::new(cmsg_type),
            matcher: TxMatcher::new(),
            ask,
            hardware,
            settled: 0,
            format,
        }
    }

    /// The TX stamps an answer asks for.
    pub fn ask(&self) -> u32 {
        self.ask
    }

    /// `peer`'s answer numbered `seq` went out asking for its stamp.
    /// Returns the answer (peer, number) whose place in the table it took:
    /// that one's stamp will not be filed now.
    #[inline]
    pub fn sent(&mut self, peer: SocketAddr, seq: u32) -> Option<(SocketAddr, u32)> {
        let entry = Waiting {
            peer,
            seq,
            stamps: Stamps::default(),
            want_hw: self.hardware,
        };
        self.matcher.sent(entry).1.map(|w| (w.peer, w.seq))
    }

    /// An answer that asked could not be sent.
    pub fn send_failed(&mut self) {
        self.matcher.send_failed();
    }

    /// Reads the error queue (never blocking; one `recvmmsg` unless it
    /// holds more than a batch) and gives each session the stamp of its
    /// answer: the NIC's, placed on the system clock through `clock`, or
    /// else the kernel's. Returns the last ICMP error it read past.
    pub fn collect(
        &mut self,
        fd: RawFd,
        counters: &mut StampCounters,
        clock: Option<&PhcMap>,
    ) -> Option<IcmpReport> {
        let mut newest = None;
        while let Some((id, point, stamps)) = self.reader.next(fd) {
            self.file(id, point, stamps, counters, clock);
            newest = Some(later(newest.unwrap_or(id), id));
            if self.reader.drained() {
                break;
            }
        }
        if let Some(id) = newest {
            self.settle_before(id, counters);
        }
        self.reader.take_error()
    }

    /// Files one stamp; its answer's session gets the best send time in
    /// so far (the kernel's, then the NIC's).
    fn file(
        &mut self,
        id: u32,
        point: TxPoint,
        stamps: Stamps,
        counters: &mut StampCounters,
        clock: Option<&PhcMap>,
    ) {
        let done = self.matcher.file(id, point, stamps);
        if let Some(w) = done.or_else(|| self.matcher.peek(id).copied())
            && let Some(f) = follow_up_of(
                w.seq,
                shifted_opt(w.stamps.software),
                shifted_opt(
                    w.stamps
                        .hardware
                        .and_then(|hw| clock?.place(hw, w.stamps.software)),
                ),
                self.format,
            )
        {
            counters.stamped(&w.peer, f);
        }
    }

    /// A stamp of answer `newest` was read: answers before it still
    /// waiting most likely lost theirs, and their sessions stop waiting
    /// (the answers stay in the table, for a stamp that was overtaken).
    fn settle_before(&mut self, newest: u32, counters: &mut StampCounters) {
        // Only the table's last WAITING numbers can still be in it.
        let floor = newest.wrapping_sub(WAITING as u32);
        let mut id = later(self.settled, floor);
        while id != newest && later(id, newest) == newest {
            if let Some(w) = self.matcher.peek(id) {
                counters.stamp_lost(&w.peer, w.seq);
            }
            id = id.wrapping_add(1);
        }
        self.settled = later(self.settled, newest);
    }
}

/// The later of two answer numbers, which wrap.
fn later(a: u32, b: u32) -> u32 {
    if b.wrapping_sub(a) < u32::MAX / 2 {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::addr::RawAddr;

    fn peer(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// Answers a request of `port`'s session, asking for its TX stamp, as
    /// the reflector does.
    fn answer(f: &mut FollowUpStamps, c: &mut StampCounters, port: u16) -> u32 {
        let counted = c.count(&RawAddr::from_socket_addr(peer(port)), 0).unwrap();
        c.await_stamp(&peer(port));
        if let Some((p, seq)) = f.sent(peer(port), counted.seq) {
            c.stamp_lost(&p, seq);
        }
        counted.seq
    }

    /// The kernel's stamp of answer `id` read off the queue.
    fn read(f: &mut FollowUpStamps, c: &mut StampCounters, ids: &[u32]) {
        for &id in ids {
            let stamps = Stamps {
                software: Some(1_000 + u64::from(id)),
                ..Stamps::default()
            };
            f.file(id, TxPoint::Sent, stamps, c, None);
        }
        if let Some(&newest) = ids.iter().max() {
            f.settle_before(newest, c);
        }
    }

    #[test]
    fn a_stamp_dropped_before_a_later_one_is_waited_for_no_more() {
        let (mut f, mut c) = (
            FollowUpStamps::new(0, false, TimeFormat::Ntp),
            StampCounters::default(),
        );
        answer(&mut f, &mut c, 1); // kernel number 0: its stamp is dropped
        answer(&mut f, &mut c, 2); // 1
        read(&mut f, &mut c, &[1]);
        assert!(
            !c.is_awaiting(&peer(1)),
            "0 will never come: 1 came after it"
        );
        assert!(!c.is_awaiting(&peer(2)));
        assert_eq!(c.follow_up_for(&peer(2), 1).map(|f| f.seq), Some(0));
        assert_eq!(c.follow_up_for(&peer(1), 1), None);

        answer(&mut f, &mut c, 1); // 2
        answer(&mut f, &mut c, 2); // 3: not read yet, so still awaited
        read(&mut f, &mut c, &[2]);
        assert!(!c.is_awaiting(&peer(1)));
        assert!(c.is_awaiting(&peer(2)), "3 may still come");
        assert_eq!(c.follow_up_for(&peer(1), 2).map(|f| f.seq), Some(1));
        read(&mut f, &mut c, &[3]);
        assert!(!c.is_awaiting(&peer(2)));
    }

    #[test]
    fn settling_survives_the_kernel_numbers_wrapping() {
        let (mut f, mut c) = (
            FollowUpStamps::new(0, false, TimeFormat::Ntp),
            StampCounters::default(),
        );
        // The kernel numbers these answers u32::MAX - 1, u32::MAX and 0.
        f.matcher.skip_to(u32::MAX - 1);
        f.settled = u32::MAX - 1;
        answer(&mut f, &mut c, 1);
        answer(&mut f, &mut c, 2);
        answer(&mut f, &mut c, 3);
        read(&mut f, &mut c, &[0]);
        assert!(!c.is_awaiting(&peer(1)) && !c.is_awaiting(&peer(2)));
        assert!(!c.is_awaiting(&peer(3)));
        assert_eq!(f.settled, 0);
    }

    #[test]
    fn an_overtaken_stamp_still_reaches_its_session() {
        let (mut f, mut c) = (
            FollowUpStamps::new(0, false, TimeFormat::Ntp),
            StampCounters::default(),
        );
        answer(&mut f, &mut c, 1); // 0
        answer(&mut f, &mut c, 2); // 1: its stamp is read first
        read(&mut f, &mut c, &[1]);
        assert!(!c.is_awaiting(&peer(1)));
        read(&mut f, &mut c, &[0]);
        assert_eq!(c.follow_up_for(&peer(1), 1).map(|f| f.seq), Some(0));
        assert_eq!(f.matcher.stale, 0);
    }

    #[test]
    fn with_the_nic_the_kernels_stamp_serves_until_the_nics_comes() {
        let (mut f, mut c) = (
            FollowUpStamps::new(0, true, TimeFormat::Ntp),
            StampCounters::default(),
        );
        let clock = PhcMap::identity();
        answer(&mut f, &mut c, 1);
        let kernel = Stamps {
            software: Some(1_000),
            ..Stamps::default()
        };
        f.file(0, TxPoint::Sent, kernel, &mut c, Some(&clock));
        assert!(!c.is_awaiting(&peer(1)));
        let mode = |c: &StampCounters| c.follow_up_for(&peer(1), 1).map(|f| f.mode);
        assert_eq!(mode(&c), Some(crate::protocol::tlv::method::SOFTWARE));
        let nic = Stamps {
            hardware: Some(990),
            ..Stamps::default()
        };
        f.file(0, TxPoint::Sent, nic, &mut c, Some(&clock));
        assert_eq!(mode(&c), Some(crate::protocol::tlv::method::HARDWARE));
        assert!(f.matcher.peek(0).is_none(), "complete with the NIC's stamp");
    }
}
