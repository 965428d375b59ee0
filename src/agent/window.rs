//! Each peer's recent figures, for the live table and the `--json` lines:
//! counts and percentiles over one `--report-every` window, turned over
//! at its end, with the medians of past windows for a sparkline.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::VecDeque;
use synapse_stats::{MAX_TRACKABLE_NS, Record, RecordKind, ReplyOrder, Segment};

/// Windows of history kept for the sparkline.
pub const HISTORY: usize = 60;

/// One peer's figures over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Probes whose fate is known.
    pub sent: u64,
    /// Without a timely reply.
    pub lost: u64,
    /// Answered after the timeout.
    pub late: u64,
    /// Replies seen twice.
    pub duplicate: u64,
    /// Late replies that overtook nothing.
    pub reordered: u64,
    /// Datagrams that answered no probe.
    pub stray: u64,
    /// Slots skipped.
    pub schedule_misses: u64,
    /// `lost / sent`, percent (`None`: nothing sent).
    pub loss_percent: Option<f64>,
    /// Median RTT, ns (`None`: no reply).
    pub rtt_p50_ns: Option<u64>,
    /// 99th percentile RTT, ns.
    pub rtt_p99_ns: Option<u64>,
    /// 99th percentile |IPDV|, ns (`None`: fewer than two replies).
    pub ipdv_p99_ns: Option<u64>,
    /// Mean of each segment, ns, in [`Segment::ALL`] order.
    #[serde(skip)]
    pub segments_mean_ns: [Option<u64>; synapse_stats::SEGMENTS],
    /// Errors the path gave (ICMP; a TCP peer's FIN or RST).
    pub path_errors: u64,
    /// The last of them.
    #[serde(skip)]
    pub last_error: Option<synapse_stats::PathError>,
}

/// A window being filled.
#[derive(Debug, Clone)]
struct Window {
    rtt: Histogram<u32>,
    ipdv: Histogram<u32>,
    counts: Figures,
    seg_sum: [u64; synapse_stats::SEGMENTS],
    seg_n: [u64; synapse_stats::SEGMENTS],
}

impl Window {
    fn new() -> Self {
        // Two significant digits (1 %) in u32 counts: about 10 KiB each.
        #[allow(clippy::expect_used)]
        let h = || {
            Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 2)
                .expect("constant histogram bounds are valid")
        };
        Self {
            rtt: h(),
            ipdv: h(),
            counts: Figures::default(),
            seg_sum: [0; synapse_stats::SEGMENTS],
            seg_n: [0; synapse_stats::SEGMENTS],
        }
    }

    fn reset(&mut self) {
        self.rtt.reset();
        self.ipdv.reset();
        self.counts = Figures::default();
        self.seg_sum = [0; synapse_stats::SEGMENTS];
        self.seg_n = [0; synapse_stats::SEGMENTS];
    }

    fn figures(&self) -> Figures {
        let q = |h: &Histogram<u32>, q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q));
        let c = self.counts;
        Figures {
            loss_percent: (c.sent > 0).then(|| c.lost as f64 * 100.0 / c.sent as f64),
            rtt_p50_ns: q(&self.rtt, 0.5),
            rtt_p99_ns: q(&self.rtt, 0.99),
            ipdv_p99_ns: q(&self.ipdv, 0.99),
            segments_mean_ns: std::array::from_fn(|i| {
                (self.seg_n[i] > 0).then(|| self.seg_sum[i] / self.seg_n[i])
            }),
            ..c
        }
    }
}

/// One peer's window being filled, the figures of the last one, and its
/// history. (Only one window's histograms: a thousand peers' worth of
/// memory stays small.)
#[derive(Debug, Clone)]
pub struct PeerWindow {
    current: Window,
    previous: Option<Figures>,
    previous_rtt_ns: Option<u64>,
    order: ReplyOrder,
    /// Median RTT of each past window, oldest first (`None`: no reply).
    pub history: VecDeque<Option<u64>>,
}

impl Default for PeerWindow {
    fn default() -> Self {
        Self {
            current: Window::new(),
            previous: None,
            previous_rtt_ns: None,
            order: ReplyOrder::default(),
            history: VecDeque::with_capacity(HISTORY),
        }
    }
}

impl PeerWindow {
    /// Adds one record (warm-up excluded).
    pub fn record(&mut self, r: &Record) {
        if r.warmup {
            return;
        }
        let w = &mut self.current;
        let c = &mut w.counts;
        match r.kind {
            RecordKind::Sample => {
                c.sent += 1;
                c.reordered += u64::from(self.order.timely(r.seq));
                let _ = w.rtt.record(r.rtt_ns.clamp(1, MAX_TRACKABLE_NS));
                if let Some(prev) = self.previous_rtt_ns.replace(r.rtt_ns) {
                    let _ = w
                        .ipdv
                        .record(prev.abs_diff(r.rtt_ns).clamp(1, MAX_TRACKABLE_NS));
                }
                for seg in Segment::ALL {
                    if let Some(v) = r.split.get(seg) {
                        w.seg_sum[seg.index()] += v;
                        w.seg_n[seg.index()] += 1;
                    }
                }
            }
            RecordKind::Lost => {
                c.sent += 1;
                c.lost += 1;
            }
            RecordKind::Late { reordered } => {
                c.late += 1;
                c.reordered += u64::from(reordered);
                self.order.answered(r.seq);
            }
            RecordKind::Duplicate => c.duplicate += 1,
            RecordKind::Stray => c.stray += 1,
            RecordKind::Missed => c.schedule_misses += 1,
            RecordKind::PathError => {
                c.path_errors += 1;
                c.last_error = r.error().or(c.last_error);
            }
            RecordKind::Outage { .. } => {}
        }
    }

    /// What the live table shows: the last whole window, or the first one
    /// as it fills.
    pub fn live(&self) -> Figures {
        self.previous.unwrap_or_else(|| self.current.figures())
    }

    /// Ends the window: its figures, kept in the history.
    pub fn turn(&mut self) -> Figures {
        let f = self.current.figures();
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(f.rtt_p50_ns);
        self.current.reset();
        self.previous = Some(f);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::Split;

    fn sample(rtt: u64) -> Record {
        Record::sample(0, 0, rtt, false)
    }

    #[test]
    fn a_window_counts_and_ranks_what_it_saw() {
        let mut w = PeerWindow::default();
        for rtt in [10_000, 30_000, 20_000] {
            w.record(&sample(rtt));
        }
        w.record(&Record::event(RecordKind::Lost, 3, 0, false));
        w.record(&Record::event(RecordKind::Lost, 4, 0, true)); // warm-up
        let f = w.turn();
        assert_eq!((f.sent, f.lost), (4, 1));
        assert_eq!(f.loss_percent, Some(25.0));
        assert!(f.rtt_p50_ns.unwrap().abs_diff(20_000) <= 200);
        // |IPDV|: 20 µs then 10 µs.
        assert!(f.ipdv_p99_ns.unwrap().abs_diff(20_000) <= 200);
        assert_eq!(w.history, [f.rtt_p50_ns]);
    }

    #[test]
    fn no_reply_means_no_rtt_and_no_traffic_means_no_loss_figure() {
        let mut w = PeerWindow::default();
        assert_eq!(w.live().loss_percent, None);
        w.record(&Record::event(RecordKind::Lost, 0, 0, false));
        let f = w.turn();
        assert_eq!(
            (f.rtt_p50_ns, f.ipdv_p99_ns, f.loss_percent),
            (None, None, Some(100.0))
        );
        assert_eq!(w.history, [None]);
    }

    #[test]
    fn the_live_view_is_the_last_whole_window_and_history_is_bounded() {
        let mut w = PeerWindow::default();
        w.record(&sample(10_000));
        assert_eq!(w.live().sent, 1, "the first window as it fills");
        w.turn();
        w.record(&sample(10_000));
        w.record(&sample(10_000));
        assert_eq!(w.live().sent, 1, "the last whole window");
        w.turn();
        assert_eq!(w.live().sent, 2);
        w.turn();
        assert_eq!(w.live().sent, 0, "a window without traffic shows none");
        for _ in 0..HISTORY + 5 {
            w.turn();
        }
        assert_eq!(w.history.len(), HISTORY);
    }

    #[test]
    fn segments_are_averaged_where_measured() {
        let mut w = PeerWindow::default();
        let mut r = sample(10_000);
        r.split = Split::from_parts([Some(1_000), Some(8_000), None, Some(1_000), None]);
        w.record(&r);
        r.split = Split::from_parts([Some(3_000), Some(6_000), None, Some(1_000), None]);
        w.record(&r);
        let f = w.turn();
        assert_eq!(
            f.segments_mean_ns,
            [
                Some(2_000),
                Some(7_000),
                None,
                None,
                None,
                None,
                Some(1_000),
                None
            ]
        );
    }
}
