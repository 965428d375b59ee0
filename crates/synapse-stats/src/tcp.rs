//! What a TCP run knows beyond its round trips: its connections (opened,
//! lost, how long without one), the handshake's share with
//! `--connect-each`, how the far kernel's ACKs came back, what the kernel's
//! own TCP says (`TCP_INFO`), which leg the resends point to, and how the
//! replies arrived (whole, or in pieces that waited on each other). The
//! engine records into [`TcpStats`]; reports read [`TcpFigures`].

use super::MAX_TRACKABLE_NS;
pub use super::tcp_legs::{ResendReport, Resends};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Why a connection ended in the middle of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// The peer reset it (RST: killed, or refused it after accepting).
    Reset,
    /// The peer closed its side (FIN): a half-close, or it went away
    /// cleanly.
    Closed,
    /// Requests could not even be written within the timeout: the peer
    /// stopped reading.
    Stalled,
    /// The kernel gave up on it (no ACKs: timed out, unreachable).
    Failed,
}

/// Why opening a connection failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectFailure {
    /// Nothing listens there (RST to the SYN).
    Refused,
    /// No answer to the SYN within the timeout.
    TimedOut,
    /// Anything else (no route, out of local ports, …).
    Other,
}

/// What the kernel's TCP says of the run's connections, from `TCP_INFO`
/// (read now and then, never per transaction): the smoothed RTT and its
/// variation as last seen, the lowest RTT of all, and resends summed over
/// every connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KernelView {
    /// The kernel's smoothed RTT (`tcpi_rtt`), ns, at the last reading.
    pub srtt_ns: Option<u64>,
    /// Its variation (`tcpi_rttvar`), ns.
    pub rttvar_ns: Option<u64>,
    /// The lowest RTT the kernel saw (`tcpi_min_rtt`), ns.
    pub min_rtt_ns: Option<u64>,
    /// The retransmission timeout (`tcpi_rto`), ns, at the last reading.
    pub rto_ns: Option<u64>,
    /// Segments this client resent (`tcpi_total_retrans`, all connections).
    pub retransmits: u64,
    /// Bytes it resent (`tcpi_bytes_retrans`).
    pub bytes_retrans: u64,
    /// Resends the peer said it already had (`tcpi_dsack_dups`: DSACKs).
    pub dsack_dups: u64,
    /// Segments that arrived out of order (`tcpi_rcv_ooopack`).
    pub out_of_order_in: u64,
}

/// How the far kernel's ACKs of the requests came back (sampled
/// transactions with kernel stamps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Acks {
    /// On their own, before the reply: the kernel RTT is measured.
    pub separate: u64,
    /// Riding on the reply: no kernel RTT for those.
    pub piggybacked: u64,
    /// No ACK stamp came.
    pub missing: u64,
}

/// Time without a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Disconnected {
    /// Spells without a connection after the first one was open.
    pub count: u64,
    /// All of them, ms.
    pub total_ms: f64,
    /// The longest, ms.
    pub longest_ms: f64,
}

/// Percentiles of one timing, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub max: u64,
}

/// How the replies came in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pieces {
    /// Replies read in two or more pieces (the stream split them).
    pub split: u64,
    /// Of those, replies whose pieces were 30 to 250 ms apart: the
    /// signature of a peer's second write held by Nagle's algorithm until
    /// this client's delayed ACK.
    pub stalled: u64,
}

/// The gap between a reply's pieces that looks like Nagle's algorithm on
/// the peer meeting this client's delayed ACK (Linux delays an ACK 40 to
/// 200 ms; other systems up to 200 ms).
pub const NAGLE_GAP_NS: std::ops::RangeInclusive<u64> = 30_000_000..=250_000_000;

/// A TCP run's own figures, for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TcpFigures {
    /// A new connection per transaction (`--connect-each`).
    pub connect_each: bool,
    /// Connections opened.
    pub connections: u64,
    /// Of those, connections opened again after one was lost.
    pub reconnects: u64,
    /// Attempts that failed: refused, timed out, other.
    pub connect_failed: [u64; 3],
    /// Connections lost mid-run: reset, closed by the peer, stalled, failed.
    pub broken: [u64; 4],
    /// Requests whose reply was lost with its connection.
    pub lost_with_connection: u64,
    /// Requests that could not be sent for want of a connection (counted
    /// lost, one per timeout, as a UDP request the network refused).
    pub unsent: u64,
    /// Time without a connection.
    pub disconnected: Disconnected,
    /// `--connect-each`: socket to `connect` returning.
    pub connect_ns: Option<Timing>,
    /// `--connect-each`: socket to the reply's first byte.
    pub first_byte_ns: Option<Timing>,
    /// How the replies came in.
    pub pieces: Pieces,
    /// How the far kernel's ACKs came back.
    pub acks: Acks,
    /// The kernel's own view.
    pub kernel: KernelView,
    /// Replies late by a resend, by what they point to, and the leg.
    pub resends: ResendReport,
}

/// A TCP run's statistics, as the engine records them. Histograms are
/// allocated here; recording never allocates.
#[derive(Debug, Clone)]
pub struct TcpStats {
    connect_each: bool,
    connect: Histogram<u64>,
    first_byte: Histogram<u64>,
    /// Connections opened.
    pub connections: u64,
    /// Connections opened after one was lost.
    pub reconnects: u64,
    connect_failed: [u64; 3],
    broken: [u64; 4],
    /// Requests whose reply was lost with its connection.
    pub lost_with_connection: u64,
    /// Requests not sent for want of a connection.
    pub unsent: u64,
    /// Time without a connection.
    pub disconnected: Disconnected,
    /// How the replies came in.
    pub pieces: Pieces,
    /// How the far kernel's ACKs came back.
    pub acks: Acks,
    /// The kernel's view.
    pub kernel: KernelView,
    /// Resends by leg.
    pub resends: Resends,
}

fn histogram() -> Histogram<u64> {
    #[allow(clippy::expect_used)]
    Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 3).expect("constant histogram bounds are valid")
}

impl TcpStats {
    /// Empty; `connect_each` says whether handshakes are timed.
    pub fn new(connect_each: bool) -> Self {
        Self {
            connect_each,
            connect: histogram(),
            first_byte: histogram(),
            connections: 0,
            reconnects: 0,
            connect_failed: [0; 3],
            broken: [0; 4],
            lost_with_connection: 0,
            unsent: 0,
            disconnected: Disconnected::default(),
            pieces: Pieces::default(),
            acks: Acks::default(),
            kernel: KernelView::default(),
            resends: Resends::default(),
        }
    }

    /// A connection attempt failed.
    pub fn connect_failed(&mut self, why: ConnectFailure) {
        self.connect_failed[why as usize] += 1;
    }

    /// A connection was lost mid-run.
    pub fn broke(&mut self, why: Break) {
        self.broken[why as usize] += 1;
    }

    /// A spell without a connection ended, `ns` long.
    pub fn reconnected_after(&mut self, ns: u64) {
        let ms = ns as f64 / 1e6;
        let d = &mut self.disconnected;
        d.count += 1;
        d.total_ms += ms;
        d.longest_ms = d.longest_ms.max(ms);
    }

    /// `--connect-each`: one transaction's handshake (socket to connected)
    /// and first byte (socket to the reply's first byte), ns.
    #[inline]
    pub fn handshake(&mut self, connect_ns: u64, first_byte_ns: u64) {
        self.connect.saturating_record(connect_ns.max(1));
        self.first_byte.saturating_record(first_byte_ns.max(1));
    }

    /// A reply came in `pieces` reads, the last `gap_ns` after the first.
    #[inline]
    pub fn reply_pieces(&mut self, pieces: u32, gap_ns: u64) {
        if pieces >= 2 {
            self.pieces.split += 1;
            self.pieces.stalled += u64::from(NAGLE_GAP_NS.contains(&gap_ns));
        }
    }

    /// The figures, for reports.
    pub fn figures(&self) -> TcpFigures {
        let timing = |h: &Histogram<u64>| {
            (self.connect_each && !h.is_empty()).then(|| Timing {
                p50: h.value_at_quantile(0.5),
                p99: h.value_at_quantile(0.99),
                mean: h.mean(),
                max: h.max(),
            })
        };
        TcpFigures {
            connect_each: self.connect_each,
            connections: self.connections,
            reconnects: self.reconnects,
            connect_failed: self.connect_failed,
            broken: self.broken,
            lost_with_connection: self.lost_with_connection,
            unsent: self.unsent,
            disconnected: self.disconnected,
            connect_ns: timing(&self.connect),
            first_byte_ns: timing(&self.first_byte),
            pieces: self.pieces,
            acks: self.acks,
            kernel: self.kernel,
            resends: self.resends.into(),
        }
    }
}

impl TcpFigures {
    /// Failed attempts by name: `refused`, `timed_out`, `other`.
    pub const CONNECT_FAILURES: [&'static str; 3] = ["refused", "timed_out", "other"];
    /// Lost connections by name.
    pub const BREAKS: [&'static str; 4] = ["reset", "closed_by_peer", "stalled", "failed"];

    /// Whether replies stalled as Nagle's algorithm on the peer makes them
    /// (at least 3 replies, and at least 1 % of the split ones… of all).
    pub fn nagle_suspected(&self, replies: u64) -> bool {
        self.pieces.stalled >= 3 && self.pieces.stalled * 100 >= replies.max(1)
    }
}

/// What the live display can read of a TCP run while it goes on: written
/// by the measurement thread now and then (never per transaction), read
/// by the display each frame. Lock-free.
#[derive(Debug, Default)]
pub struct TcpLive {
    connected: AtomicBool,
    reconnects: AtomicU64,
    srtt_us: AtomicU64,
    min_rtt_us: AtomicU64,
    retransmits: AtomicU64,
}

/// One reading of [`TcpLive`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpLiveView {
    /// A connection is open.
    pub connected: bool,
    /// Connections opened again after one was lost.
    pub reconnects: u64,
    /// The kernel's smoothed RTT, µs (0: not read yet).
    pub srtt_us: u64,
    /// The kernel's lowest RTT, µs.
    pub min_rtt_us: u64,
    /// Segments resent so far.
    pub retransmits: u64,
}

impl TcpLive {
    /// Publishes the connection state.
    pub fn set_connected(&self, connected: bool, reconnects: u64) {
        self.connected.store(connected, Ordering::Relaxed);
        self.reconnects.store(reconnects, Ordering::Relaxed);
    }

    /// Publishes the kernel's view.
    pub fn set_kernel(&self, k: &KernelView) {
        let us = |ns: Option<u64>| ns.map_or(0, |n| n / 1_000);
        self.srtt_us.store(us(k.srtt_ns), Ordering::Relaxed);
        self.min_rtt_us.store(us(k.min_rtt_ns), Ordering::Relaxed);
        self.retransmits.store(k.retransmits, Ordering::Relaxed);
    }

    /// What was published last.
    pub fn view(&self) -> TcpLiveView {
        TcpLiveView {
            connected: self.connected.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
            srtt_us: self.srtt_us.load(Ordering::Relaxed),
            min_rtt_us: self.min_rtt_us.load(Ordering::Relaxed),
            retransmits: self.retransmits.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshakes_are_timed_only_when_each_transaction_connects() {
        let mut s = TcpStats::new(true);
        for (c, f) in [(30_000, 50_000), (32_000, 52_000), (90_000, 120_000)] {
            s.handshake(c, f);
        }
        let f = s.figures();
        let c = f.connect_ns.unwrap();
        assert!((31_900..=32_100).contains(&c.p50), "{c:?}");
        assert!(c.max >= 89_000);
        assert!(f.first_byte_ns.unwrap().p50 >= 51_900);
        assert_eq!(TcpStats::new(false).figures().connect_ns, None);
    }

    #[test]
    fn split_replies_are_counted_and_nagle_gaps_picked_out() {
        let mut s = TcpStats::new(false);
        s.reply_pieces(1, 0);
        s.reply_pieces(2, 5_000_000);
        for _ in 0..3 {
            s.reply_pieces(2, 40_100_000);
        }
        s.reply_pieces(3, 400_000_000);
        let f = s.figures();
        assert_eq!(
            f.pieces,
            Pieces {
                split: 5,
                stalled: 3
            }
        );
        assert!(f.nagle_suspected(100));
        assert!(!f.nagle_suspected(1_000), "3 of 1000 replies is noise");
    }

    #[test]
    fn failures_and_breaks_are_counted_by_kind() {
        let mut s = TcpStats::new(false);
        s.connect_failed(ConnectFailure::Refused);
        s.connect_failed(ConnectFailure::Refused);
        s.connect_failed(ConnectFailure::Other);
        s.broke(Break::Reset);
        s.broke(Break::Closed);
        s.reconnected_after(2_000_000);
        s.reconnected_after(500_000);
        let f = s.figures();
        assert_eq!(f.connect_failed, [2, 0, 1]);
        assert_eq!(f.broken, [1, 1, 0, 0]);
        assert_eq!(f.disconnected.count, 2);
        assert!((f.disconnected.total_ms - 2.5).abs() < 1e-9);
        assert!((f.disconnected.longest_ms - 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_live_view_reads_what_was_published() {
        let live = TcpLive::default();
        live.set_connected(true, 2);
        live.set_kernel(&KernelView {
            srtt_ns: Some(45_000),
            min_rtt_ns: Some(12_000),
            retransmits: 4,
            ..KernelView::default()
        });
        let v = live.view();
        assert_eq!(
            v,
            TcpLiveView {
                connected: true,
                reconnects: 2,
                srtt_us: 45,
                min_rtt_us: 12,
                retransmits: 4
            }
        );
    }
}
