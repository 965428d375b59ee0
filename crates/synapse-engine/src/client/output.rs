//! Where a client run's results go: the authoritative statistics first,
//! then a lock-free ring for a live consumer (a full ring costs the live
//! view, never the totals) and the per-packet log's ring.

use super::paced::Sink;
use crate::points::Points;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use synapse_stats::{Record, Stats};

/// The rings a client thread writes to.
pub(super) struct Output {
    /// Every record, for a live consumer.
    pub ring: rtrb::Producer<Record>,
    /// Records the ring had no room for.
    pub overflow: Arc<AtomicU64>,
    /// Every settled packet's points, for the per-packet log.
    pub log: Option<rtrb::Producer<Points>>,
}

/// The consumer ends of a client's rings, handed to `ClientRun`.
pub(super) struct Rings {
    /// Every record.
    pub records: rtrb::Consumer<Record>,
    /// Every settled packet's points, when a log is kept.
    pub points: Option<rtrb::Consumer<Points>>,
    /// Records the record ring had no room for.
    pub overflow: Arc<AtomicU64>,
}

impl Output {
    /// A run's rings, allocated before its thread starts: `ring_capacity`
    /// records (at least one) and, with a `log_capacity`, the log's.
    pub(super) fn with_rings(ring_capacity: usize, log_capacity: usize) -> (Self, Rings) {
        let (log, points) = match log_capacity {
            0 => (None, None),
            n => {
                let (p, c) = rtrb::RingBuffer::new(n);
                (Some(p), Some(c))
            }
        };
        let (ring, records) = rtrb::RingBuffer::new(ring_capacity.max(1));
        let overflow = Arc::new(AtomicU64::new(0));
        let output = Self {
            ring,
            overflow: Arc::clone(&overflow),
            log,
        };
        let rings = Rings {
            records,
            points,
            overflow,
        };
        (output, rings)
    }

    /// Offers a row to the per-packet log, when one is kept: `true` when
    /// its ring had no room. Taken by reference: a row is a few hundred bytes,
    /// copied only into the ring, never on a run that keeps no log.
    #[inline]
    pub(super) fn log_row(&mut self, row: &Points) -> bool {
        self.log.as_mut().is_some_and(|log| log.push(*row).is_err())
    }
}

/// A paced client's sink: its one peer's statistics and the rings.
pub(super) struct ClientSink {
    pub out: Output,
    pub stats: Stats,
    /// Log rows the log's ring had no room for.
    pub log_overflow: u64,
}

impl Sink for ClientSink {
    #[inline]
    fn record(&mut self, _probe: usize, r: Record) {
        self.stats.record(&r);
        if self.out.ring.push(r).is_err() {
            self.out.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[inline]
    fn row(&mut self, _probe: usize, p: &Points) {
        self.log_overflow += u64::from(self.out.log_row(p));
    }
}
