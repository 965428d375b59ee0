//! The kernel's own view of the client's connections (`TCP_INFO`), read
//! off the per-transaction path: once a second, after a transaction that
//! was slow, and as a connection closes. Resends are summed over every
//! connection of the run. After a slow reply the counters' growth is
//! handed, with what else was measured of it, to the statistics that put
//! it down to a leg (`stats::tcp_legs`). A resend with no DSACK yet is held
//! until the next reply: a DSACK for it can come just after the reply
//! when the far kernel's own resend of the reply crossed ours.

use crate::mono::Mono;
use crate::sys::tcp::{self as sys_tcp, TcpInfo};
use std::os::fd::RawFd;
use std::time::Duration;
use synapse_stats::TcpLive;
use synapse_stats::tcp::{KernelView, Resends};
use synapse_stats::tcp_legs::SlowReply;

/// How often the view is refreshed for the live display.
const REFRESH: Duration = Duration::from_secs(1);

/// Resend counters that only grow, summed over connections.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    retrans: u64,
    bytes_retrans: u64,
    dsack: u64,
    ooo: u64,
}

impl Counts {
    fn of(i: &TcpInfo) -> Self {
        Self {
            retrans: u64::from(i.total_retrans),
            bytes_retrans: i.bytes_retrans,
            dsack: u64::from(i.dsack_dups),
            ooo: u64::from(i.rcv_ooopack),
        }
    }

    fn plus(self, o: Counts) -> Self {
        Self {
            retrans: self.retrans + o.retrans,
            bytes_retrans: self.bytes_retrans + o.bytes_retrans,
            dsack: self.dsack + o.dsack,
            ooo: self.ooo + o.ooo,
        }
    }
}

/// Watches the run's connections through `TCP_INFO`.
#[derive(Debug)]
pub(crate) struct KernelWatch {
    /// The open connection's last reading.
    current: Counts,
    /// Connections already closed.
    closed: Counts,
    view: KernelView,
    last_read: Mono,
    /// Slow replies put down to what they point to.
    pub resends: Resends,
    /// A slow reply this client resent for, no DSACK seen yet (and whether
    /// it is measured): settled at the next reply's reading.
    pending: Option<(SlowReply, bool)>,
}

impl Default for KernelWatch {
    fn default() -> Self {
        Self {
            current: Counts::default(),
            closed: Counts::default(),
            view: KernelView::default(),
            last_read: Mono::now(),
            resends: Resends::default(),
            pending: None,
        }
    }
}

impl KernelWatch {
    /// Whether a refresh is due at `now`.
    #[inline]
    pub fn due(&self, now: Mono) -> bool {
        now.duration_since(self.last_read) >= REFRESH
    }

    /// Reads the open connection `fd` and publishes the view; returns how
    /// much its resend and DSACK counters grew since the last reading.
    pub fn read(&mut self, fd: RawFd, live: &TcpLive) -> Option<(u64, u64)> {
        let info = sys_tcp::tcp_info(fd).ok()?;
        self.last_read = Mono::now();
        let now = Counts::of(&info);
        let grown = (
            now.retrans.saturating_sub(self.current.retrans),
            now.dsack.saturating_sub(self.current.dsack),
        );
        self.current = now;
        let ns = |us: u32| (us > 0).then_some(u64::from(us) * 1_000);
        let v = &mut self.view;
        v.srtt_ns = ns(info.rtt_us).or(v.srtt_ns);
        v.rttvar_ns = ns(info.rttvar_us).or(v.rttvar_ns);
        v.rto_ns = ns(info.rto_us).or(v.rto_ns);
        if let Some(min) = ns(info.min_rtt_us) {
            v.min_rtt_ns = Some(v.min_rtt_ns.map_or(min, |m| m.min(min)));
        }
        let all = self.closed.plus(now);
        v.retransmits = all.retrans;
        v.bytes_retrans = all.bytes_retrans;
        v.dsack_dups = all.dsack;
        v.out_of_order_in = all.ooo;
        live.set_kernel(v);
        Some(self.credit_pending(grown))
    }

    /// DSACKs that came in go first to the held resend, up to one each.
    fn credit_pending(&mut self, (retrans, dsack): (u64, u64)) -> (u64, u64) {
        let Some((p, _)) = self.pending.as_mut() else {
            return (retrans, dsack);
        };
        let taken = dsack.min(p.resent.saturating_sub(p.dsack));
        p.dsack += taken;
        (retrans, dsack - taken)
    }

    /// Whether a resend waits for the next reply's reading.
    #[inline]
    pub fn awaiting_dsack(&self) -> bool {
        self.pending.is_some()
    }

    /// A reply came after a held resend's: its DSACK, if any, is in.
    pub fn confirm(&mut self, fd: RawFd, live: &TcpLive) {
        let _ = self.read(fd, live);
        self.settle_pending();
    }

    fn settle_pending(&mut self) {
        if let Some((p, true)) = self.pending.take() {
            self.resends.record(&p);
        }
    }

    /// After a slow reply (or a late one): reads the connection and hands
    /// `facts` (its delay and ACK), with the resend and DSACK counters'
    /// growth, to the statistics; a resend without a DSACK yet is held
    /// until the next reply. Returns how many resends the reading found
    /// (none when the connection could not be read).
    pub fn explain_slow(
        &mut self,
        fd: RawFd,
        live: &TcpLive,
        facts: SlowReply,
        measured: bool,
    ) -> Option<u64> {
        let grown = self.read(fd, live)?;
        self.place(grown, facts, measured);
        Some(grown.0)
    }

    /// A slow reply's counters' growth (already credited to a held
    /// resend) and facts: the held resend is settled, this one counted or
    /// held.
    fn place(&mut self, (resent, dsack): (u64, u64), facts: SlowReply, measured: bool) {
        self.settle_pending();
        let facts = SlowReply {
            resent,
            dsack,
            ..facts
        };
        if resent > 0 && dsack == 0 {
            self.pending = Some((facts, measured));
        } else if measured {
            self.resends.record(&facts);
        }
    }

    /// The connection `fd` is about to close (or has broken): its last
    /// reading is kept in the run's sums.
    pub fn closing(&mut self, fd: RawFd, live: &TcpLive) {
        let _ = self.read(fd, live);
        self.settle_pending();
        self.closed = self.closed.plus(self.current);
        self.current = Counts::default();
    }

    /// What the kernel said, over the whole run.
    pub fn view(&self) -> KernelView {
        self.view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn the_view_follows_the_connection_and_sums_closed_ones() {
        let live = TcpLive::default();
        let mut w = KernelWatch::default();
        assert!(!w.due(Mono::now()));
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        for _ in 0..2 {
            let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (mut s, _) = l.accept().unwrap();
            c.write_all(b"abcd").unwrap();
            let mut b = [0u8; 4];
            s.read_exact(&mut b).unwrap();
            s.write_all(&b).unwrap();
            c.read_exact(&mut b).unwrap();
            assert_eq!(w.read(c.as_raw_fd(), &live), Some((0, 0)));
            w.explain_slow(c.as_raw_fd(), &live, SlowReply::default(), true);
            assert!(!w.awaiting_dsack(), "no resends");
            w.closing(c.as_raw_fd(), &live);
        }
        let v = w.view();
        assert!(v.srtt_ns.is_some_and(|r| r > 0), "{v:?}");
        assert!(v.min_rtt_ns.is_some());
        assert_eq!(v.retransmits, 0);
        assert_eq!(w.resends, Resends::default());
        assert!(live.view().srtt_us > 0);
    }

    #[test]
    fn a_resend_waits_for_the_next_reply_in_case_a_dsack_follows() {
        let late = SlowReply {
            extra_ns: 250_000_000,
            ..SlowReply::default()
        };
        // Resent, the DSACK after the reply: reverse, once it came.
        let mut w = KernelWatch::default();
        w.place((1, 0), late, true);
        assert!(w.awaiting_dsack());
        assert_eq!(w.resends, Resends::default());
        assert_eq!(
            w.credit_pending((0, 1)),
            (0, 0),
            "the DSACK is the held one's"
        );
        w.settle_pending();
        assert_eq!((w.resends.reverse, w.resends.forward), (1, 0));
        // Resent, no DSACK by the next reply: forward.
        w.place((1, 0), late, true);
        assert_eq!(w.credit_pending((0, 0)), (0, 0));
        w.settle_pending();
        assert_eq!((w.resends.reverse, w.resends.forward), (1, 1));
        // A DSACK beyond the held resend's one stays with the next reply.
        w.place((1, 0), late, true);
        assert_eq!(w.credit_pending((2, 2)), (2, 1));
        w.place((2, 1), late, true);
        assert!(!w.awaiting_dsack());
        assert_eq!((w.resends.reverse, w.resends.forward), (3, 1));
        // Warm-up replies are placed but not counted.
        w.place((1, 1), late, false);
        assert_eq!(w.resends.reverse, 3);
    }
}
