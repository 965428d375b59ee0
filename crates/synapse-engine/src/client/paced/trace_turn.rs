//! The paced loop's side trace (the agent's `--trace-on-loss`, a
//! [`TraceSlot`]): its probes leave between the schedule's, on the same
//! socket; its reports and echoes are taken out before the loop judges
//! what is left. Without a trace under way, one branch a turn.

use super::receive::file_into;
use super::{Pacer, Sink};
use crate::sys::icmp_error::IcmpReport;
use crate::sys::timestamping::Stamps;
use crate::trace::TraceSlot;

impl<S: Sink> Pacer<'_, S> {
    /// The loop with a trace slot (the agent's prober).
    #[must_use]
    pub fn with_traces(mut self, slot: TraceSlot) -> Self {
        self.trace = Some(slot);
        self
    }

    /// Whether a trace is under way.
    #[inline]
    pub(super) fn tracing(&self) -> bool {
        self.trace.as_ref().is_some_and(TraceSlot::active)
    }

    /// The trace's turn at `now`: a waiting one taken up, a probe sent
    /// (again, once the queue is read, when an ICMP error pending on the
    /// socket failed it).
    pub(super) fn trace_turn(&mut self, now: u64) -> Result<(), crate::EngineError> {
        for _ in 0..2 {
            let wall = self.wall_ns(now);
            let unstamped = self.stamps.is_some();
            let (fd, probes) = (self.fd, &self.probes);
            let Some(slot) = self.trace.as_mut() else {
                return Ok(());
            };
            if !slot.turn(fd, now, wall, unstamped, |p| {
                probes.get(p).map(|q| q.cfg.addr)
            }) {
                return Ok(());
            }
            self.absorb_error_queue()?;
        }
        Ok(())
    }

    /// When the trace next needs a turn.
    pub(super) fn trace_due(&self) -> Option<u64> {
        self.trace.as_ref().and_then(TraceSlot::due_ns)
    }

    /// The datagram in the buffer (`len` bytes, stamped `rx`), if it is
    /// the trace's echo.
    pub(super) fn trace_echo(&mut self, len: usize, rx: Stamps, now: u64) -> bool {
        let wall = rx.software.unwrap_or_else(|| self.wall_ns(now));
        match self.trace.as_mut() {
            Some(slot) => slot.take_echo(&self.from, &self.buf[..len], wall),
            None => false,
        }
    }

    /// The error queue read with a trace under way: every message whole,
    /// the trace's reports to it, stamps filed as ever. The last report
    /// that was not the trace's.
    pub(super) fn absorb_with_trace(&mut self) -> Option<IcmpReport> {
        let wall = self.wall_ns(self.now_ns());
        let (fd, probes) = (self.fd, &mut self.probes);
        let slot = self.trace.as_mut()?;
        let Some(stamps) = self.stamps.as_mut() else {
            return slot.absorb(fd, 0, wall, |_, _, _| {});
        };
        // What the stamp reader already read comes first, in order.
        let mut other = None;
        stamps.drain_read(
            |t| file_into(probes, t),
            |r| {
                if !slot.take_report(r, wall) {
                    other = Some(*r);
                }
            },
        );
        let kind = stamps.cmsg_type();
        let last = slot.absorb(fd, kind, wall, |id, point, st| {
            stamps.file(id, point, st, &mut |t| file_into(probes, t));
        });
        last.or(other)
    }
}
