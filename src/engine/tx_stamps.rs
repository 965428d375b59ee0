//! The client's kernel (and NIC) stamps: switching `SO_TIMESTAMPING` on,
//! and matching the TX stamps the error queue returns to packets.
//!
//! TX stamps are numbered by `SOF_TIMESTAMPING_OPT_ID`, a counter the
//! kernel bumps for every datagram it builds. The reader keeps the same
//! count. A send that fails may or may not have bumped it, so after one the
//! reader adopts the newest number it sees (the queue is in order).

use super::points::Points;
use super::sys::timestamping::{self, ControlBuf, ErrQueue, RecvMeta, TxPoint, flags};
use std::io;
use std::os::fd::RawFd;

/// At most this many error-queue reads per packet: stamps for one packet
/// are two or three messages; anything older is skipped on the way.
const MAX_READS: usize = 16;

/// Reads and matches one socket's stamps. Owns its control buffer, so the
/// hot path allocates nothing.
#[derive(Debug)]
pub struct StampReader {
    stamp_type: i32,
    control: ControlBuf,
    next_id: u32,
    resync: bool,
    hardware: bool,
    /// TX stamps that belonged to no packet still waiting (arrived after
    /// their packet was settled).
    pub stale: u64,
}

impl StampReader {
    /// Switches stamping on for `fd`: TX SCHED and SOFTWARE, RX SOFTWARE,
    /// numbered and payload-free, plus both hardware directions when asked.
    pub fn enable(fd: RawFd, hardware: bool) -> io::Result<Self> {
        let mut wanted =
            flags::TX_SOFTWARE | flags::RX_SOFTWARE | flags::REPORT_SOFTWARE | flags::OPTIONS;
        if hardware {
            wanted |= flags::HARDWARE;
        }
        let stamp_type = timestamping::enable(fd, wanted)?;
        // Not a substitute for counting misses: it only keeps the first
        // packets from going unstamped while the kernel switches RX
        // stamping on. If it never comes, the misses are reported.
        timestamping::wait_for_rx_stamping(std::time::Duration::from_millis(500));
        Ok(Self {
            stamp_type,
            control: ControlBuf::default(),
            next_id: 0,
            resync: false,
            hardware,
            stale: 0,
        })
    }

    /// A packet went out: its TX stamps will carry the returned number.
    #[inline]
    pub fn sent(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    /// A send failed: whether the kernel counted it is unknown.
    pub fn send_failed(&mut self) {
        self.resync = true;
    }

    /// Receives one datagram with its RX stamps.
    #[inline]
    pub fn recv(&mut self, fd: RawFd, buf: &mut [u8]) -> io::Result<RecvMeta> {
        timestamping::recv_stamped(fd, buf, None, &mut self.control, self.stamp_type)
    }

    /// Reads the error queue (never blocking) until packet `id`'s TX stamps
    /// are in `points` or the queue is empty. Stamps that never came stay
    /// `None`.
    pub fn collect(&mut self, fd: RawFd, mut id: u32, points: &mut Points) {
        for _ in 0..MAX_READS {
            let Ok(ErrQueue::Stamp {
                id: got,
                point,
                stamps,
            }) = timestamping::read_error_queue(fd, &mut self.control, self.stamp_type)
            else {
                // Empty, an ICMP report (its errno has already reached the
                // receive call, which the kernel wakes first), or an error:
                // either way nothing more to match now.
                break;
            };
            if got != id {
                // After a failed send, numbers ahead of ours are ours.
                if self.resync && got.wrapping_sub(id) < u32::MAX / 2 {
                    id = got;
                    self.next_id = got.wrapping_add(1);
                    (points.t1_sched, points.t1_driver, points.t1_hw) = (None, None, None);
                } else {
                    self.stale += 1;
                    continue;
                }
            }
            // A stamp matched: the count agrees with the kernel's again.
            self.resync = false;
            match point {
                TxPoint::Sched => points.t1_sched = points.t1_sched.or(stamps.software),
                TxPoint::Sent => {
                    points.t1_driver = points.t1_driver.or(stamps.software);
                    points.t1_hw = points.t1_hw.or(stamps.hardware);
                }
            }
            let complete = points.t1_sched.is_some()
                && points.t1_driver.is_some()
                && (!self.hardware || points.t1_hw.is_some());
            if complete {
                break;
            }
        }
    }
}
