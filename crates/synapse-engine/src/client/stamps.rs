//! The client socket's kernel (and NIC) timestamps: switching
//! `SO_TIMESTAMPING` on, RX stamps with each reply, and the TX stamps of
//! the packet in flight fetched from the error queue once it is settled.

use crate::points::Points;
use crate::sys::icmp_error::IcmpReport;
use crate::sys::timestamping::{self, RecvMeta, flags};
use crate::timestamping::phc_map::PhcMap;
use crate::timestamping::tx_matcher::{TxMatcher, TxPoints, TxStampReader};
use crate::timestamping::tx_sample::TxSample;
use std::io;
use std::os::fd::RawFd;

/// At most this many error-queue reads per packet: one packet's stamps are
/// two or three messages; anything older is skipped on the way.
const MAX_READS: usize = 16;

/// Reads and matches one socket's stamps. Allocates nothing per packet.
#[derive(Debug)]
pub struct ClientStamps {
    reader: TxStampReader,
    /// One packet is in flight at a time; a few slots absorb stamps that
    /// come late.
    matcher: TxMatcher<TxPoints, 8>,
    hardware: bool,
    /// The packet in flight's stamps, when they all came before it settled.
    done: Option<TxPoints>,
    /// TX stamps on one packet in this many (1: every packet, asked for
    /// by the socket; more: asked for per packet).
    every: u64,
    /// Which packets those are: drawn at random.
    sample: TxSample,
    /// The NIC's clock on the system clock, for T1 hw beside T1 driver.
    clock: Option<PhcMap>,
}

impl ClientStamps {
    /// Switches stamping on for `fd`: RX SOFTWARE on every packet, TX SCHED
    /// and SOFTWARE on one packet in `every`, numbered and payload-free,
    /// plus both hardware directions when asked.
    pub fn enable(fd: RawFd, hardware: bool, every: u32) -> io::Result<Self> {
        let every = u64::from(every.max(1));
        Ok(Self {
            reader: TxStampReader::enable_client(fd, hardware, every > 1)?,
            matcher: TxMatcher::new(),
            hardware,
            done: None,
            every,
            sample: TxSample::seeded(every as u32),
            clock: None,
        })
    }

    /// The same, placing NIC stamps on the system clock through `clock`.
    #[must_use]
    pub fn with_clock(self, clock: Option<PhcMap>) -> Self {
        Self { clock, ..self }
    }

    /// Whether measured packet number `index` (counted from the first
    /// after warm-up; warm-up packets, `None`, all are) is one of the
    /// stamped sample: each with chance 1/every (see `tx_sample.rs`).
    /// Called once per packet.
    #[inline]
    pub fn samples(&mut self, index: Option<u64>) -> bool {
        self.sample.take(index)
    }

    /// Sends a packet, asking for its TX stamps when it is `sampled` (the
    /// socket asks for every packet's when the sample is all of them).
    #[inline]
    pub fn send(&self, fd: RawFd, payload: &[u8], sampled: bool) -> io::Result<usize> {
        if self.every == 1 || !sampled {
            return crate::sys::io::send(fd, payload);
        }
        let mut tx = flags::TX_SOFTWARE;
        if self.hardware {
            tx |= flags::TX_HARDWARE;
        }
        timestamping::send_stamped(fd, payload, tx)
    }

    /// [`Self::send`] to `to`, on an unconnected socket (a multicast
    /// client's).
    #[inline]
    pub fn send_to(
        &self,
        fd: RawFd,
        payload: &[u8],
        to: &crate::sys::addr::RawAddr,
        sampled: bool,
    ) -> io::Result<usize> {
        if self.every == 1 || !sampled {
            return crate::sys::io::send_to(fd, payload, to);
        }
        let mut tx = flags::TX_SOFTWARE;
        if self.hardware {
            tx |= flags::TX_HARDWARE;
        }
        timestamping::send_to_stamped(fd, payload, to, tx)
    }

    /// A packet went out: its TX stamps are waited for.
    #[inline]
    pub fn sent(&mut self) {
        self.done = None;
        self.matcher.sent(TxPoints {
            want_hw: self.hardware,
            ..TxPoints::default()
        });
    }

    /// A send failed: whether the kernel counted it is unknown.
    pub fn send_failed(&mut self) {
        self.matcher.send_failed();
    }

    /// Receives one datagram with its RX stamps.
    #[inline]
    pub fn recv(&mut self, fd: RawFd, buf: &mut [u8]) -> io::Result<RecvMeta> {
        let cmsg_type = self.reader.cmsg_type();
        timestamping::recv_stamped(fd, buf, None, self.reader.control(), cmsg_type)
    }

    /// [`Self::recv`] that never waits, even on a blocking socket.
    pub fn recv_now(&mut self, fd: RawFd, buf: &mut [u8]) -> io::Result<RecvMeta> {
        let cmsg_type = self.reader.cmsg_type();
        timestamping::recv_stamped_now(fd, buf, self.reader.control(), cmsg_type)
    }

    /// Receives one datagram with its RX stamps and its source (an
    /// unconnected socket: a multicast run), told not to wait when `now`.
    #[inline]
    pub fn recv_from(
        &mut self,
        fd: RawFd,
        buf: &mut [u8],
        from: &mut crate::sys::addr::RawAddr,
        now: bool,
    ) -> io::Result<RecvMeta> {
        let cmsg_type = self.reader.cmsg_type();
        timestamping::recv_stamped_from(fd, buf, from, self.reader.control(), cmsg_type, now)
    }

    /// Reads what the error queue holds now (never blocking): TX stamps
    /// are filed for the packet in flight; the last ICMP report, if one
    /// was there, is returned. Called while waiting, when the queue wakes
    /// the wait.
    pub fn absorb(&mut self, fd: RawFd) -> Option<IcmpReport> {
        for _ in 0..MAX_READS {
            let Some((id, point, stamps)) = self.reader.next(fd) else {
                break;
            };
            if let Some(tx) = self.matcher.file(id, point, stamps) {
                self.done = Some(tx);
            }
        }
        self.reader.take_error()
    }

    /// Reads the error queue (never blocking) until the packet in flight
    /// has its TX stamps, then puts them in `points`. Stamps that never
    /// came stay `None`; the packet leaves the table either way, so one
    /// that comes later is counted stale.
    pub fn collect(&mut self, fd: RawFd, points: &mut Points) {
        let mut done = self.done.take();
        for _ in 0..MAX_READS {
            if done.is_some() {
                break;
            }
            let Some((id, point, stamps)) = self.reader.next(fd) else {
                break;
            };
            // Only the packet in flight waits in the table: whatever
            // completes is its.
            if let Some(tx) = self.matcher.file(id, point, stamps) {
                done = Some(tx);
                break;
            }
        }
        // Incomplete, the packet in flight is the newest one sent (its
        // number may have moved, when a failed send made the kernel's
        // count run ahead).
        let newest = self.matcher.newest();
        if let Some(tx) = done.or_else(|| self.matcher.take(newest)) {
            points.t1_sched = tx.sched;
            points.t1_driver = tx.driver;
            points.t1_hw = tx.hw;
            points.t1_wire = tx.mapped(self.clock.as_ref()).wire;
        }
    }

    /// TX stamps that came after their packet was settled.
    pub fn stale(&self) -> u64 {
        self.matcher.stale
    }
}
