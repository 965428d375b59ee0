//! Matching the kernel's TX timestamps to the datagrams they belong to: one
//! matcher for the client's packets and the reflector's answers alike.
//!
//! TX stamps come back on the socket's error queue, numbered by
//! `SOF_TIMESTAMPING_OPT_ID`: a counter the kernel bumps for every datagram
//! it stamps. The matcher keeps the same count. Each datagram waits for its
//! stamps in a small table indexed by that number, so a stamp that comes
//! late still finds it; a datagram whose slot is needed again leaves with
//! whatever never came. A send that fails may or may not have bumped the
//! kernel's counter, so after one the matcher re-learns the numbering from
//! the next stamp of the newest datagram (the queue is in send order).

use super::phc_map::PhcMap;
use crate::sys::cmsg::ControlBuf;
use crate::sys::errqueue::{self, ErrQueue, ErrQueueBatch, TxPoint};
use crate::sys::icmp_error::IcmpReport;
use crate::sys::timestamping::{self, Stamps};
use std::os::fd::RawFd;

/// What waits in the table for its TX stamps.
pub trait TxEntry: Copy {
    /// Takes one stamp.
    fn file(&mut self, point: TxPoint, stamps: Stamps);
    /// Whether every stamp it waits for is in.
    fn complete(&self) -> bool;
}

/// The TX stamps of one client packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxPoints {
    /// Entering the packet scheduler.
    pub sched: Option<u64>,
    /// Handed to the driver (software).
    pub driver: Option<u64>,
    /// Sent by the NIC (its clock).
    pub hw: Option<u64>,
    /// The NIC's stamp on the system clock, when that clock is mapped.
    pub wire: Option<u64>,
    /// Whether a NIC stamp is expected too.
    pub want_hw: bool,
}

impl TxPoints {
    /// The same stamps with the NIC's one also on the system clock, when
    /// `clock` maps the NIC's clock there.
    #[inline]
    #[must_use]
    pub fn mapped(mut self, clock: Option<&PhcMap>) -> Self {
        self.wire = self.hw.and_then(|hw| clock?.place(hw, self.driver));
        self
    }
}

impl TxEntry for TxPoints {
    fn file(&mut self, point: TxPoint, stamps: Stamps) {
        match point {
            TxPoint::Sched => self.sched = self.sched.or(stamps.software),
            TxPoint::Sent => {
                self.driver = self.driver.or(stamps.software);
                self.hw = self.hw.or(stamps.hardware);
            }
            // UDP datagrams are never acknowledged.
            TxPoint::Acked => {}
        }
    }

    fn complete(&self) -> bool {
        self.sched.is_some() && self.driver.is_some() && (!self.want_hw || self.hw.is_some())
    }
}

/// Numbers datagrams as the kernel does and files their TX stamps. `N`
/// datagrams may wait at once. Allocation-free.
#[derive(Debug)]
pub struct TxMatcher<T, const N: usize> {
    pending: [Option<(u32, T)>; N],
    next_id: u32,
    /// After a failed send: our number for the first datagram sent since,
    /// whose stamp (the first read from then on, the queue being in send
    /// order) says whether the kernel counted the failed one.
    resync: Option<u32>,
    /// Stamps whose datagram had already left the table.
    pub stale: u64,
}

impl<T: TxEntry, const N: usize> Default for TxMatcher<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: TxEntry, const N: usize> TxMatcher<T, N> {
    /// An empty table; numbering starts at 0, as the kernel's does when
    /// `SO_TIMESTAMPING` is switched on.
    pub fn new() -> Self {
        Self {
            pending: [None; N],
            next_id: 0,
            resync: None,
            stale: 0,
        }
    }

    fn slot(id: u32) -> usize {
        id as usize % N
    }

    /// A datagram went out: it waits under the returned number. Also
    /// returns the entry its slot held, which will never be completed now.
    #[inline]
    pub fn sent(&mut self, entry: T) -> (u32, Option<T>) {
        let id = self.next_id;
        self.next_id = id.wrapping_add(1);
        let evicted = self.pending[Self::slot(id)].replace((id, entry));
        (id, evicted.map(|(_, e)| e))
    }

    /// The number the latest datagram waits under (its own, unless a
    /// failed send since made the numbering uncertain).
    pub fn newest(&self) -> u32 {
        self.next_id.wrapping_sub(1)
    }

    /// Numbers the next datagram `id` (tests reach the wrap this way).
    #[cfg(test)]
    pub fn skip_to(&mut self, id: u32) {
        self.next_id = id;
    }

    /// A send failed: whether the kernel counted it is unknown.
    pub fn send_failed(&mut self) {
        self.resync = self.resync.or(Some(self.next_id));
    }

    /// Files one stamp; returns the entry it completed, which leaves the
    /// table.
    pub fn file(&mut self, id: u32, point: TxPoint, stamps: Stamps) -> Option<T> {
        if let Some(from) = self.resync {
            self.resync_on(from, id);
        }
        let slot = &mut self.pending[Self::slot(id)];
        match slot {
            Some((want, entry)) if *want == id => {
                entry.file(point, stamps);
                if entry.complete() {
                    return slot.take().map(|(_, e)| e);
                }
            }
            _ => self.stale += 1,
        }
        None
    }

    /// The first stamp since a failed send of a datagram sent after it:
    /// ours is numbered `from`, the kernel's `id`. When the kernel counted
    /// the failed one, its numbers run one ahead of ours from there on:
    /// the datagrams since move up to the kernel's numbers. (An older
    /// datagram's late stamp says nothing about it.)
    fn resync_on(&mut self, from: u32, id: u32) {
        let ahead = id.wrapping_sub(from);
        if ahead >= N as u32 || self.next_id.wrapping_sub(from) == 0 {
            // Older than the failure, or nothing sent since it.
            return;
        }
        if ahead > 0 {
            let mut k = self.next_id;
            while k != from {
                k = k.wrapping_sub(1);
                if let Some(entry) = self.take(k) {
                    self.pending[Self::slot(k.wrapping_add(ahead))] =
                        Some((k.wrapping_add(ahead), entry));
                }
            }
            self.next_id = self.next_id.wrapping_add(ahead);
        }
        self.resync = None;
    }

    /// The entry waiting under `id`, if it still is.
    pub fn peek(&self, id: u32) -> Option<&T> {
        match &self.pending[Self::slot(id)] {
            Some((want, entry)) if *want == id => Some(entry),
            _ => None,
        }
    }

    /// Takes the entry of `id` out of the table, complete or not.
    pub fn take(&mut self, id: u32) -> Option<T> {
        let slot = &mut self.pending[Self::slot(id)];
        match slot {
            Some((want, _)) if *want == id => slot.take().map(|(_, e)| e),
            _ => None,
        }
    }

    /// Every entry still waiting, oldest first (at the end of a run).
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        let start = self.next_id.wrapping_sub(N as u32);
        (0..N as u32).filter_map(move |k| {
            let id = start.wrapping_add(k);
            self.take(id)
        })
    }
}

/// Reads TX stamps off a socket's error queue, never blocking, a batch of
/// messages per syscall. Owns its control buffers, so reading allocates
/// nothing.
#[derive(Debug)]
pub struct TxStampReader {
    cmsg_type: i32,
    control: ControlBuf,
    batch: ErrQueueBatch,
    /// Messages of the last batch read, and how many were handed out.
    read: usize,
    handed: usize,
    /// The last ICMP error read past (reading it cleared the socket's
    /// pending error).
    error: Option<IcmpReport>,
}

impl TxStampReader {
    /// Switches a client socket's stamping on (TX SCHED and SOFTWARE, RX
    /// SOFTWARE, numbered and payload-free, plus both hardware directions
    /// when asked) and returns the reader of its TX stamps.
    ///
    /// `per_packet`: the socket asks for no TX stamps itself; each packet
    /// that wants them asks when it is sent ([`timestamping::send_stamped`]).
    pub fn enable_client(fd: RawFd, hardware: bool, per_packet: bool) -> std::io::Result<Self> {
        use timestamping::flags;
        let mut wanted =
            flags::TX_SOFTWARE | flags::RX_SOFTWARE | flags::REPORT_SOFTWARE | flags::OPTIONS;
        if hardware {
            wanted |= flags::HARDWARE;
        }
        if per_packet {
            wanted &= !(flags::TX_SOFTWARE | flags::TX_HARDWARE);
        }
        let cmsg_type = timestamping::enable(fd, wanted)?;
        // Not a substitute for counting misses: it only keeps the first
        // packets from going unstamped while the kernel switches RX
        // stamping on. If it never comes, the misses are reported.
        timestamping::wait_for_rx_stamping(std::time::Duration::from_millis(500));
        Ok(Self::new(cmsg_type))
    }

    /// A reader for stamps of control-message type `cmsg_type` (what
    /// [`timestamping::enable`] returned).
    pub fn new(cmsg_type: i32) -> Self {
        Self {
            cmsg_type,
            control: ControlBuf::default(),
            batch: ErrQueueBatch::default(),
            read: 0,
            handed: 0,
            error: None,
        }
    }

    /// The next TX stamp, reading past ICMP reports (the last one is kept
    /// for [`TxStampReader::take_error`]); `None` once the queue is
    /// empty or cannot be read.
    #[inline]
    pub fn next(&mut self, fd: RawFd) -> Option<(u32, TxPoint, Stamps)> {
        loop {
            if self.handed == self.read {
                // Everything read is handed out: read the next batch (what
                // is left of one stays for the next call).
                self.read = self.batch.fill(fd, self.cmsg_type).len();
                self.handed = 0;
                if self.read == 0 {
                    return None;
                }
            }
            let message = self.batch.fill_result(self.handed);
            self.handed += 1;
            match message {
                ErrQueue::Stamp { id, point, stamps } => return Some((id, point, stamps)),
                ErrQueue::Error(report) => self.error = Some(report),
                ErrQueue::Other | ErrQueue::Empty => {}
            }
        }
    }

    /// The next message the last read found and has not handed out, if
    /// any; reads nothing.
    pub fn next_read(&mut self) -> Option<ErrQueue> {
        (self.handed < self.read).then(|| {
            self.handed += 1;
            self.batch.fill_result(self.handed - 1)
        })
    }

    /// Whether everything the last read found is handed out and that read
    /// found fewer than a batch: the queue was empty then, and another read
    /// now would most likely only say so (a syscall saved).
    pub fn drained(&self) -> bool {
        self.handed == self.read && self.read < errqueue::ERRQUEUE_BATCH
    }

    /// The ICMP error read past since the last call, if any.
    pub fn take_error(&mut self) -> Option<IcmpReport> {
        self.error.take()
    }

    /// The receive side's control buffer, shared so one socket needs one.
    pub fn control(&mut self) -> &mut ControlBuf {
        &mut self.control
    }

    /// The control-message type stamps arrive as.
    pub fn cmsg_type(&self) -> i32 {
        self.cmsg_type
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A datagram known by a tag, complete once both software stamps are in.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Tagged(u64, TxPoints);

    impl TxEntry for Tagged {
        fn file(&mut self, point: TxPoint, stamps: Stamps) {
            self.1.file(point, stamps);
        }
        fn complete(&self) -> bool {
            self.1.complete()
        }
    }

    fn sw(ns: u64) -> Stamps {
        Stamps {
            software: Some(ns),
            hardware: None,
        }
    }

    fn tag(t: u64) -> Tagged {
        Tagged(t, TxPoints::default())
    }

    type Matcher = TxMatcher<Tagged, 64>;

    /// Files both stamps of `id`; returns what completed.
    fn both(m: &mut Matcher, id: u32, at: u64) -> Option<Tagged> {
        assert_eq!(m.file(id, TxPoint::Sched, sw(at)), None);
        m.file(id, TxPoint::Sent, sw(at + 1))
    }

    #[test]
    fn an_entry_completes_once_both_stamps_are_in_even_late_ones() {
        let mut m = Matcher::new();
        assert_eq!(m.sent(tag(0)).0, 0);
        assert_eq!(m.sent(tag(1)).0, 1);
        assert_eq!(both(&mut m, 1, 10).map(|t| t.0), Some(1));
        let late = both(&mut m, 0, 5).unwrap();
        assert_eq!((late.0, late.1.sched, late.1.driver), (0, Some(5), Some(6)));
        assert_eq!(m.file(0, TxPoint::Sent, sw(7)), None);
        assert_eq!(m.stale, 1, "a stamp for an entry that already left");
    }

    #[test]
    fn a_slot_needed_again_hands_back_its_entry_with_the_stamps_missing() {
        let mut m = Matcher::new();
        for t in 0..64 {
            assert_eq!(m.sent(tag(t)).1, None);
        }
        let (id, evicted) = m.sent(tag(64));
        assert_eq!(id, 64);
        assert_eq!(evicted, Some(tag(0)));
        let rest: Vec<u64> = m.drain().map(|t| t.0).collect();
        assert_eq!(rest, (1..=64).collect::<Vec<_>>(), "oldest first");
    }

    #[test]
    fn after_a_failed_send_the_numbering_follows_the_kernel() {
        let mut m = Matcher::new();
        m.sent(tag(0));
        assert_eq!(both(&mut m, 0, 1).map(|t| t.0), Some(0));
        m.send_failed();
        // The kernel counted the failed datagram: our tag 2 is its number
        // 2, where we would have said 1.
        assert_eq!(m.sent(tag(2)).0, 1);
        assert_eq!(both(&mut m, 2, 3).map(|t| t.0), Some(2));
        assert_eq!(m.sent(tag(3)).0, 3, "counting goes on from the kernel's");
        assert_eq!(both(&mut m, 3, 5).map(|t| t.0), Some(3));
        assert_eq!(m.stale, 0);
    }

    #[test]
    fn after_a_failed_send_a_kernel_that_did_not_count_it_is_followed_too() {
        let mut m = Matcher::new();
        m.send_failed();
        assert_eq!(m.sent(tag(1)).0, 0);
        assert_eq!(both(&mut m, 0, 3).map(|t| t.0), Some(1));
        assert_eq!(m.stale, 0);
    }

    #[test]
    fn a_late_stamp_after_a_failed_send_does_not_end_the_resync() {
        let mut m = Matcher::new();
        m.sent(tag(0));
        m.send_failed();
        m.sent(tag(2));
        // Entry 0's stamps come late; then entry 2's, numbered by the
        // kernel as 2 where we said 1.
        assert_eq!(both(&mut m, 0, 1).map(|t| t.0), Some(0));
        assert_eq!(both(&mut m, 2, 3).map(|t| t.0), Some(2));
        assert_eq!(m.stale, 0);
    }

    #[test]
    fn after_a_failed_send_several_datagrams_move_to_the_kernels_numbers() {
        let mut m = Matcher::new();
        m.sent(tag(0));
        m.send_failed();
        // The kernel counted the failed one: ours 1, 2, 3 are its 2, 3, 4.
        for t in 1..=3 {
            m.sent(tag(t));
        }
        assert_eq!(both(&mut m, 0, 1).map(|t| t.0), Some(0), "a late older one");
        assert_eq!(both(&mut m, 2, 3).map(|t| t.0), Some(1));
        assert_eq!(both(&mut m, 3, 5).map(|t| t.0), Some(2));
        assert_eq!(both(&mut m, 4, 7).map(|t| t.0), Some(3));
        assert_eq!(m.sent(tag(5)).0, 5, "counting goes on from the kernel's");
        assert_eq!(m.stale, 0);
    }

    #[test]
    fn a_stamp_before_anything_is_sent_again_does_not_end_the_resync() {
        let mut m = Matcher::new();
        m.sent(tag(0));
        m.send_failed();
        assert_eq!(both(&mut m, 0, 1).map(|t| t.0), Some(0));
        m.sent(tag(2));
        assert_eq!(
            both(&mut m, 2, 3).map(|t| t.0),
            Some(2),
            "the kernel counted it"
        );
        assert_eq!(m.stale, 0);
    }

    #[test]
    fn take_returns_only_the_entry_asked_for() {
        let mut m = Matcher::new();
        let (id, _) = m.sent(tag(9));
        assert_eq!(m.file(id, TxPoint::Sched, sw(1)), None);
        assert_eq!(m.take(id + 64), None, "same slot, another number");
        let t = m.take(id).unwrap();
        assert_eq!((t.0, t.1.sched, t.1.driver), (9, Some(1), None));
        assert_eq!(m.take(id), None);
    }

    #[test]
    fn a_nic_stamp_is_waited_for_only_when_wanted() {
        let mut p = TxPoints::default();
        p.file(TxPoint::Sched, sw(1));
        p.file(TxPoint::Sent, sw(2));
        assert!(p.complete());
        let mut hw = TxPoints {
            want_hw: true,
            ..TxPoints::default()
        };
        hw.file(TxPoint::Sched, sw(1));
        hw.file(TxPoint::Sent, sw(2));
        assert!(!hw.complete());
        hw.file(
            TxPoint::Sent,
            Stamps {
                software: None,
                hardware: Some(9),
            },
        );
        assert!(hw.complete());
        assert_eq!((hw.driver, hw.hw), (Some(2), Some(9)), "first stamps kept");
    }
}
