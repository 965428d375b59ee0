//! Kernel timestamps of a paced run: many requests in flight, so each TX
//! stamp is filed under the (peer, sequence number) it belongs to, and the
//! request gets it whenever it comes, until its deadline settles it.

use crate::sys::addr::RawAddr;
use crate::sys::errqueue::{ErrQueue, TxPoint};
use crate::sys::icmp_error::IcmpReport;
use crate::sys::timestamping::{self, RecvMeta, Stamps};
use crate::timestamping::phc_map::PhcMap;
use crate::timestamping::tx_matcher::{TxEntry, TxMatcher, TxPoints, TxStampReader};
use std::io;
use std::os::fd::RawFd;

/// Stamps come within microseconds of the send; this many sends may wait
/// for theirs at once.
const WAITING: usize = 64;

/// One request's TX stamps, tagged with whose they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tagged {
    /// The peer (index into the run's probes).
    pub probe: usize,
    /// Its sequence number.
    pub seq: u64,
    /// The stamps so far.
    pub tx: TxPoints,
}

impl TxEntry for Tagged {
    fn file(&mut self, point: TxPoint, stamps: Stamps) {
        self.tx.file(point, stamps);
    }

    fn complete(&self) -> bool {
        self.tx.complete()
    }
}

/// Reads and matches one socket's stamps. Allocates nothing per packet.
#[derive(Debug)]
pub struct PacedStamps {
    reader: TxStampReader,
    matcher: TxMatcher<Tagged, WAITING>,
    hardware: bool,
    /// The NIC's clock on the system clock, for T1 hw beside T1 driver.
    clock: Option<PhcMap>,
}

impl PacedStamps {
    /// Switches stamping on for `fd` (as the ping-pong client does).
    pub fn enable(fd: RawFd, hardware: bool) -> io::Result<Self> {
        Ok(Self {
            reader: TxStampReader::enable_client(fd, hardware, false)?,
            matcher: TxMatcher::new(),
            hardware,
            clock: None,
        })
    }

    /// The same, placing NIC stamps on the system clock through `clock`.
    #[must_use]
    pub fn with_clock(self, clock: Option<PhcMap>) -> Self {
        Self { clock, ..self }
    }

    /// Request `seq` to `probe` went out. Returns a request that had to
    /// leave the table with what it had (more than `WAITING` sends since).
    #[inline]
    pub fn sent(&mut self, probe: usize, seq: u64) -> Option<Tagged> {
        let tx = TxPoints {
            want_hw: self.hardware,
            ..TxPoints::default()
        };
        self.matcher.sent(Tagged { probe, seq, tx }).1
    }

    /// A send failed: whether the kernel counted it is unknown.
    pub fn send_failed(&mut self) {
        self.matcher.send_failed();
    }

    /// Receives one datagram, its sender and its RX stamps.
    #[inline]
    pub fn recv(&mut self, fd: RawFd, buf: &mut [u8], from: &mut RawAddr) -> io::Result<RecvMeta> {
        let cmsg_type = self.reader.cmsg_type();
        timestamping::recv_stamped(fd, buf, Some(from), self.reader.control(), cmsg_type)
    }

    /// Reads what the error queue holds now (never blocking), handing each
    /// request whose stamps are complete to `done`. Returns the last ICMP
    /// report read past, if any.
    pub fn absorb(&mut self, fd: RawFd, mut done: impl FnMut(Tagged)) -> Option<IcmpReport> {
        while let Some((id, point, stamps)) = self.reader.next(fd) {
            self.file(id, point, stamps, &mut done);
        }
        self.reader.take_error()
    }

    /// Files one TX stamp read off the queue by someone else (a trace
    /// reading it whole), handing its request to `done` once complete.
    pub fn file(&mut self, id: u32, point: TxPoint, stamps: Stamps, done: &mut impl FnMut(Tagged)) {
        if let Some(t) = self.matcher.file(id, point, stamps) {
            done(Tagged {
                tx: t.tx.mapped(self.clock.as_ref()),
                ..t
            });
        }
    }

    /// What the reader has read and not handed out yet, in order: stamps
    /// filed (`done` as above), reports to `report`. For a reader of the
    /// queue's messages one by one, which must see them after these.
    pub fn drain_read(
        &mut self,
        mut done: impl FnMut(Tagged),
        mut report: impl FnMut(&IcmpReport),
    ) {
        while let Some(m) = self.reader.next_read() {
            match m {
                ErrQueue::Stamp { id, point, stamps } => self.file(id, point, stamps, &mut done),
                ErrQueue::Error(r) => report(&r),
                ErrQueue::Other | ErrQueue::Empty => {}
            }
        }
        if let Some(r) = self.reader.take_error() {
            report(&r);
        }
    }

    /// The control-message type stamps arrive as.
    pub fn cmsg_type(&self) -> i32 {
        self.reader.cmsg_type()
    }

    /// Takes `seq`'s stamps out, complete or not (it is being settled).
    pub fn take(&mut self, probe: usize, seq: u64) -> Option<TxPoints> {
        // Only the newest few wait; a linear look is cheaper than an index.
        let newest = self.matcher.newest();
        let id = (0..WAITING as u32)
            .map(|back| newest.wrapping_sub(back))
            .find(|&id| {
                self.matcher
                    .peek(id)
                    .is_some_and(|t| t.probe == probe && t.seq == seq)
            })?;
        self.matcher
            .take(id)
            .map(|t| t.tx.mapped(self.clock.as_ref()))
    }

    /// TX stamps that came after their request had left the table.
    pub fn stale(&self) -> u64 {
        self.matcher.stale
    }
}
