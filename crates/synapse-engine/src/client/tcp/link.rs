//! The client's connection over a run: lost (reset, closed, stalled,
//! failed) and opened again, with a backoff that doubles from 10 ms to a
//! second, so a peer that is gone is asked less and less often and the
//! client never spins. Each spell without a connection is timed.

use super::conn::{Conn, OpenError, Opener};
use super::kernel::KernelWatch;
use crate::mono::Mono;
use std::time::Duration;
use synapse_stats::tcp::{Break, ConnectFailure};
use synapse_stats::{TcpLive, TcpStats};

/// The first wait before opening a lost connection again.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
/// The longest wait between attempts.
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The connection, and how to get it back.
#[derive(Debug)]
pub(crate) struct Link {
    opener: Opener,
    /// The open connection, if there is one.
    pub conn: Option<Conn>,
    backoff: Duration,
    next_try: Mono,
    down_since: Option<Mono>,
    /// Connections the peer ended before any reply came, and how the last
    /// one ended.
    pub ended_before_reply: (u64, Break),
    /// Why the last attempt failed.
    pub last_failure: Option<OpenError>,
    /// TX stamps of closed connections that came too late to be matched.
    pub stale: u64,
}

impl Link {
    /// A link whose first connection is `first` (already counted).
    pub fn new(opener: Opener, first: Option<Conn>) -> Self {
        Self {
            opener,
            conn: first,
            backoff: BACKOFF_MIN,
            next_try: Mono::now(),
            down_since: None,
            ended_before_reply: (0, Break::Closed),
            last_failure: None,
            stale: 0,
        }
    }

    /// How connections are opened.
    pub fn opener(&self) -> &Opener {
        &self.opener
    }

    /// When the next attempt to open may be made.
    pub fn next_try(&self) -> Mono {
        self.next_try
    }

    /// Closes the connection, keeping its kernel's last word and its
    /// stamps' count.
    fn drop_conn(&mut self, kernel: &mut KernelWatch, live: &TcpLive) {
        if let Some(conn) = self.conn.take() {
            kernel.closing(conn.fd, live);
            self.stale += conn.stamps.as_ref().map_or(0, |s| s.stale());
        }
    }

    /// Tries to open the connection again, unless the backoff says wait.
    /// Returns whether one is open.
    pub fn reopen(
        &mut self,
        now: Mono,
        tcp: &mut TcpStats,
        kernel: &mut KernelWatch,
        live: &TcpLive,
    ) -> bool {
        if self.conn.is_some() {
            return true;
        }
        if now < self.next_try {
            return false;
        }
        match self.opener.open() {
            Ok(conn) => {
                tcp.connections += 1;
                tcp.reconnects += 1;
                if let Some(since) = self.down_since.take() {
                    tcp.reconnected_after(Mono::now().ns_since(since));
                }
                self.backoff = BACKOFF_MIN;
                let _ = kernel.read(conn.fd, live);
                self.conn = Some(conn);
                live.set_connected(true, tcp.reconnects);
                true
            }
            Err(failure) => {
                tcp.connect_failed(failure.0);
                self.last_failure = Some(failure);
                self.next_try = Mono::now() + self.backoff;
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                false
            }
        }
    }

    /// The connection was lost (`why`); `replied`: a reply came on it
    /// before. The kernel's last word on it is kept.
    pub fn lose(
        &mut self,
        why: Break,
        replied: bool,
        tcp: &mut TcpStats,
        kernel: &mut KernelWatch,
        live: &TcpLive,
    ) {
        self.drop_conn(kernel, live);
        tcp.broke(why);
        if !replied {
            self.ended_before_reply = (self.ended_before_reply.0 + 1, why);
        }
        let now = Mono::now();
        self.down_since.get_or_insert(now);
        self.next_try = now + self.backoff;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        live.set_connected(false, tcp.reconnects);
    }

    /// The run is over: the open connection closes, and a spell without
    /// one still going on ends here.
    pub fn close(&mut self, tcp: &mut TcpStats, kernel: &mut KernelWatch, live: &TcpLive) {
        self.drop_conn(kernel, live);
        if let Some(since) = self.down_since.take() {
            tcp.reconnected_after(since.elapsed_ns());
            // Not a reconnect: the spell is counted, the connection never came back.
        }
    }

    /// Whether the last attempt to open was refused.
    pub fn refused(&self) -> bool {
        matches!(self.last_failure, Some((ConnectFailure::Refused, _)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_lost_connection_comes_back_after_a_growing_backoff() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let opener = Opener {
            server: addr,
            bind: None,
            timeout: Duration::from_millis(200),
            busy_poll: false,
            stamp_every: None,
            tos: None,
        };
        let first = opener.open().unwrap();
        let (mut tcp, mut kernel, live) = (
            TcpStats::new(false),
            KernelWatch::default(),
            TcpLive::default(),
        );
        let mut link = Link::new(opener, Some(first));
        link.lose(Break::Reset, true, &mut tcp, &mut kernel, &live);
        assert!(link.conn.is_none());
        assert!(!live.view().connected);
        drop(l);
        // Too soon: the backoff says wait, and nothing is tried.
        assert!(!link.reopen(Mono::now(), &mut tcp, &mut kernel, &live));
        assert_eq!(tcp.figures().connect_failed, [0, 0, 0]);
        std::thread::sleep(Duration::from_millis(25));
        let before = Mono::now();
        assert!(!link.reopen(before, &mut tcp, &mut kernel, &live));
        assert!(link.refused(), "nothing listens any more");
        let waited = link.next_try.duration_since(before);
        assert!(waited >= Duration::from_millis(20), "doubled: {waited:?}");
        assert_eq!(link.backoff, Duration::from_millis(40), "and doubles again");
        let l = TcpListener::bind(addr).unwrap();
        std::thread::sleep(waited + Duration::from_millis(5));
        assert!(link.reopen(Mono::now(), &mut tcp, &mut kernel, &live));
        let f = tcp.figures();
        assert_eq!((f.reconnects, f.broken[0], f.connect_failed[0]), (1, 1, 1));
        assert_eq!(f.disconnected.count, 1);
        assert!(f.disconnected.total_ms >= 25.0, "{f:?}");
        drop(l);
    }
}
