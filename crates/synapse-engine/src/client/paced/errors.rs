//! What the path said about a paced run's requests: an ICMP error off the
//! error queue (or a send's errno) recorded against the peer and the
//! request it is about, and written to that request's row. The socket is
//! not connected, so the error's destination names the peer and its quote
//! the request.

use super::{Pacer, Sink};
use crate::client::far_error;
use crate::sys::icmp_error::IcmpReport;
use synapse_stats::Record;

impl<S: Sink> Pacer<'_, S> {
    /// Records what `report` (or, with none, `errno`) says about the
    /// request it quotes. Never a loss by itself: deadlines decide.
    #[cold]
    pub(super) fn path_error(&mut self, report: Option<IcmpReport>, errno: Option<i32>) {
        let e = match (report, errno) {
            (Some(r), _) => far_error::of_report(&r),
            (None, Some(errno)) => far_error::of_errno(errno),
            (None, None) => return,
        };
        let p = report
            .and_then(|r| r.destination)
            .and_then(|to| self.by_addr.get(&to).copied())
            .unwrap_or(0);
        let Some(probe) = self.probes.get_mut(p) else {
            return;
        };
        let newest = probe.newest();
        let seq = report
            .and_then(|r| probe.codec.quoted_seq(r.quoted.bytes(), newest))
            .unwrap_or(newest);
        if let Some(entry) = probe.in_flight.get_mut(seq) {
            entry.points.path_error = Some(e);
        }
        let warmup = probe.is_warmup(seq);
        let at_ns = self.now_ns();
        self.record(p, Record::path_error(seq, at_ns, e, warmup));
    }
}
