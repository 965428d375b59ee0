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

use super::stamp_counters::StampCounters;
use crate::engine::protocol::tlv_reflect::follow_up_of;
use crate::engine::sys::timestamping::{Stamps, TxPoint};
use crate::engine::timestamping::phc_map::PhcMap;
use crate::engine::timestamping::tx_matcher::{TxEntry, TxMatcher, TxStampReader};
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
}

impl TxEntry for Waiting {
    fn file(&mut self, point: TxPoint, stamps: Stamps) {
        if point == TxPoint::Sent {
            self.stamps.software = self.stamps.software.or(stamps.software);
            self.stamps.hardware = self.stamps.hardware.or(stamps.hardware);
        }
    }

    fn complete(&self) -> bool {
        self.stamps.software.is_some() || self.stamps.hardware.is_some()
    }
}

/// Matches Follow-Up answers to their TX stamps. Allocation-free.
#[derive(Debug)]
pub struct FollowUpStamps {
    reader: TxStampReader,
    matcher: TxMatcher<Waiting, WAITING>,
    /// The TX stamps an answer asks for.
    ask: u32,
}

impl FollowUpStamps {
    /// For a socket whose stamps arrive as control-message `cmsg_type`
    /// (numbered with `OPT_ID`, asked per answer), from the kernel and,
    /// when `hardware`, the NIC.
    pub fn new(cmsg_type: i32, hardware: bool) -> Self {
        let mut ask = libc::SOF_TIMESTAMPING_TX_SOFTWARE;
        if hardware {
            ask |= libc::SOF_TIMESTAMPING_TX_HARDWARE;
        }
        Self {
            reader: TxStampReader::new(cmsg_type),
            matcher: TxMatcher::new(),
            ask,
        }
    }

    /// The TX stamps an answer asks for.
    pub fn ask(&self) -> u32 {
        self.ask
    }

    /// `peer`'s answer numbered `seq` went out asking for its stamp.
    #[inline]
    pub fn sent(&mut self, peer: SocketAddr, seq: u32) {
        let entry = Waiting {
            peer,
            seq,
            stamps: Stamps::default(),
        };
        self.matcher.sent(entry);
    }

    /// An answer that asked could not be sent.
    pub fn send_failed(&mut self) {
        self.matcher.send_failed();
    }

    /// Reads the error queue (never blocking; one `recvmmsg` unless it
    /// holds more than a batch) and gives each session the stamp of its
    /// answer: the NIC's, placed on the system clock through `clock`, or
    /// else the kernel's. Returns the errno of an ICMP error it read past.
    pub fn collect(
        &mut self,
        fd: RawFd,
        counters: &mut StampCounters,
        clock: Option<&PhcMap>,
    ) -> Option<i32> {
        while let Some((id, point, stamps)) = self.reader.next(fd) {
            if let Some(w) = self.matcher.file(id, point, stamps)
                && let Some(f) = follow_up_of(
                    w.seq,
                    w.stamps.software,
                    w.stamps.hardware.and_then(|hw| clock?.to_system(hw)),
                )
            {
                counters.stamped(&w.peer, f);
            }
            if self.reader.drained() {
                break;
            }
        }
        self.reader.take_error()
    }
}
