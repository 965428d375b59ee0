//! The kernel's own view of the client's connections (`TCP_INFO`), read
//! off the per-transaction path: once a second, after a transaction that
//! was slow, and as a connection closes. Resends are summed over every
//! connection of the run, and the slow transactions during which the
//! resend counters moved are put down to the leg those counters point to.

use crate::engine::sys::tcp::{self as sys_tcp, TcpInfo};
use crate::stats::TcpLive;
use crate::stats::tcp::{KernelView, Resends};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// How often the view is refreshed for the live display.
const REFRESH: Duration = Duration::from_secs(1);

/// What a slow transaction's reading says about its resends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leg {
    /// This client resent data the peer had not got: lost on the way there.
    Forward,
    /// This client resent data the peer already had (a DSACK says so):
    /// what was lost or held was on the way back.
    Reverse,
}

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
    last_read: Instant,
    /// Slow transactions put down to a leg.
    pub resends: Resends,
}

impl Default for KernelWatch {
    fn default() -> Self {
        Self {
            current: Counts::default(),
            closed: Counts::default(),
            view: KernelView::default(),
            last_read: Instant::now(),
            resends: Resends::default(),
        }
    }
}

impl KernelWatch {
    /// Whether a refresh is due at `now`.
    #[inline]
    pub fn due(&self, now: Instant) -> bool {
        now.duration_since(self.last_read) >= REFRESH
    }

    /// Reads the open connection `fd` and publishes the view; returns how
    /// much its resend and DSACK counters grew since the last reading.
    pub fn read(&mut self, fd: RawFd, live: &TcpLive) -> Option<(u64, u64)> {
        let info = sys_tcp::tcp_info(fd).ok()?;
        self.last_read = Instant::now();
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
        Some(grown)
    }

    /// After a slow transaction (or a late reply, or a timeout): reads the
    /// connection, and when its resend counters moved, puts the slowness
    /// down to the leg they point to.
    pub fn explain_slow(&mut self, fd: RawFd, live: &TcpLive, measured: bool) -> Option<Leg> {
        let (retrans, dsack) = self.read(fd, live)?;
        let leg = if dsack > 0 {
            Leg::Reverse
        } else if retrans > 0 {
            Leg::Forward
        } else {
            return None;
        };
        if measured {
            match leg {
                Leg::Forward => self.resends.forward += 1,
                Leg::Reverse => self.resends.reverse += 1,
            }
        }
        Some(leg)
    }

    /// The connection `fd` is about to close (or has broken): its last
    /// reading is kept in the run's sums.
    pub fn closing(&mut self, fd: RawFd, live: &TcpLive) {
        let _ = self.read(fd, live);
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
        assert!(!w.due(Instant::now()));
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
            assert_eq!(
                w.explain_slow(c.as_raw_fd(), &live, true),
                None,
                "no resends"
            );
            w.closing(c.as_raw_fd(), &live);
        }
        let v = w.view();
        assert!(v.srtt_ns.is_some_and(|r| r > 0), "{v:?}");
        assert!(v.min_rtt_ns.is_some());
        assert_eq!(v.retransmits, 0);
        assert_eq!(w.resends, Resends::default());
        assert!(live.view().srtt_us > 0);
    }
}
