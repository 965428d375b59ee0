//! Live statistics for a display: running totals plus time windows.
//!
//! The consumer feeds [`Record`]s as they come off the ring and closes a
//! window every [`WINDOW`]. Closed windows give the percentile history (for
//! sparklines) and the recent log-scaled histogram. The histogram covers
//! only the last [`RECENT_WINDOWS`], so its range comes back down after a
//! spike.

use super::Stats;
use super::{Record, RecordKind, Shape};
use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::time::Duration;

/// Length of one time window.
pub const WINDOW: Duration = Duration::from_millis(250);
/// Windows of percentile history kept (one minute).
pub const HISTORY: usize = 240;
/// Windows the live histogram covers (ten seconds).
pub const RECENT_WINDOWS: usize = 40;

/// Bits of a value below its leading one that pick its bin.
const SUB_BITS: u32 = 5;
/// Bins per doubling of RTT: each bin is about 2 % wide, so a zoomed
/// histogram still has bins to spread over its columns.
pub const BINS_PER_OCTAVE: usize = 1 << SUB_BITS;
/// Values below 2^MIN_EXP ns share bin 0.
const MIN_EXP: u32 = 6;
/// Number of bins; enough for any RTT up to 2^38 ns (275 s).
pub const BINS: usize = 32 * BINS_PER_OCTAVE;

/// Counts per logarithmic RTT bin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogBins {
    /// Samples per bin.
    pub counts: Box<[u64; BINS]>,
}

impl Default for LogBins {
    fn default() -> Self {
        Self {
            counts: Box::new([0; BINS]),
        }
    }
}

impl LogBins {
    /// The bin an RTT falls in.
    pub fn index(ns: u64) -> usize {
        if ns < 1 << MIN_EXP {
            return 0;
        }
        let exp = 63 - ns.leading_zeros();
        let sub = ((ns >> (exp - SUB_BITS)) as usize) & (BINS_PER_OCTAVE - 1);
        (((exp - MIN_EXP) as usize) * BINS_PER_OCTAVE + sub + 1).min(BINS - 1)
    }

    /// The smallest RTT in bin `i`.
    pub fn lower_bound(i: usize) -> u64 {
        if i == 0 {
            return 0;
        }
        let exp = (i - 1) / BINS_PER_OCTAVE + MIN_EXP as usize;
        let sub = ((i - 1) % BINS_PER_OCTAVE) as u64;
        (BINS_PER_OCTAVE as u64 + sub) << (exp - SUB_BITS as usize)
    }

    fn add(&mut self, other: &LogBins) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }

    fn subtract(&mut self, other: &LogBins) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a = a.saturating_sub(*b);
        }
    }

    /// Total samples.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The bin holding quantile `q` (0..=1) of the samples, if any.
    pub fn quantile_bin(&self, q: f64) -> Option<usize> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        self.counts.iter().position(|&c| {
            seen += c;
            seen >= rank
        })
    }
}

/// Percentiles of one closed window (ns; 0 when it had no samples).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowPoint {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Samples in the window.
    pub samples: u64,
    /// Requests whose timeout came in the window (lost, or late once
    /// their reply comes).
    pub timed_out: u64,
    /// Late replies that came in the window (each timed out before).
    pub late: u64,
}

/// What the live histogram covers: the samples by bin, and the requests
/// without a timely reply, split as the totals split them.
#[derive(Debug, Clone, Default)]
pub struct RecentHistogram {
    /// RTT samples per bin.
    pub bins: LogBins,
    /// Requests that timed out and got no reply (yet).
    pub lost: u64,
    /// Requests that timed out and got their reply late.
    pub late: u64,
}

/// Everything a live display shows about a client run.
#[derive(Debug, Clone)]
pub struct LiveStats {
    total: Stats,
    window: Histogram<u64>,
    window_bins: LogBins,
    window_timed_out: u64,
    window_late: u64,
    history: VecDeque<WindowPoint>,
    /// The closed windows the histogram covers, and their sum.
    recent: VecDeque<LogBins>,
    recent_sum: LogBins,
    /// The most recent RTT sample (warm-up included), ns.
    pub last_rtt_ns: Option<u64>,
    /// Sequence number of the most recent sample.
    pub last_seq: u64,
    /// Warm-up records seen so far.
    pub warmup_seen: u64,
    /// A post-warm-up record has been seen.
    pub warmed_up: bool,
    /// Resolved packets (answered or lost, warm-up included) ever ingested.
    pub resolved: u64,
}

impl Default for LiveStats {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveStats {
    /// Empty live statistics. Allocates everything up front.
    pub fn new() -> Self {
        #[allow(clippy::expect_used)]
        let window = Histogram::new_with_bounds(1, super::MAX_TRACKABLE_NS, 3)
            .expect("constant histogram bounds are valid");
        Self {
            total: Stats::new(),
            window,
            window_bins: LogBins::default(),
            window_timed_out: 0,
            window_late: 0,
            history: VecDeque::with_capacity(HISTORY),
            recent: VecDeque::with_capacity(RECENT_WINDOWS),
            recent_sum: LogBins::default(),
            last_rtt_ns: None,
            last_seq: 0,
            warmup_seen: 0,
            warmed_up: false,
            resolved: 0,
        }
    }

    /// Accounts for one record.
    pub fn ingest(&mut self, r: &Record) {
        self.total.record(r);
        if matches!(r.kind, RecordKind::Sample | RecordKind::Lost) {
            self.resolved += 1;
        }
        if r.warmup {
            self.warmup_seen += 1;
        } else {
            self.warmed_up = true;
        }
        match r.kind {
            RecordKind::Sample => {
                self.last_rtt_ns = Some(r.rtt_ns);
                self.last_seq = r.seq;
                if !r.warmup {
                    self.window.saturating_record(r.rtt_ns.max(1));
                    self.window_bins.counts[LogBins::index(r.rtt_ns)] += 1;
                }
            }
            RecordKind::Lost if !r.warmup => self.window_timed_out += 1,
            RecordKind::Late { .. } if !r.warmup => self.window_late += 1,
            _ => {}
        }
    }

    /// Ends the current window: its percentiles join the history and its
    /// bins the recent histogram.
    pub fn close_window(&mut self) {
        let h = &self.window;
        let mut point = WindowPoint {
            timed_out: self.window_timed_out,
            late: self.window_late,
            ..WindowPoint::default()
        };
        if !h.is_empty() {
            point.p50 = h.value_at_quantile(0.5);
            point.p99 = h.value_at_quantile(0.99);
            point.p999 = h.value_at_quantile(0.999);
            point.samples = h.len();
        }
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(point);
        if self.recent.len() == RECENT_WINDOWS
            && let Some(old) = self.recent.pop_front()
        {
            self.recent_sum.subtract(&old);
        }
        let bins = std::mem::take(&mut self.window_bins);
        self.recent_sum.add(&bins);
        self.recent.push_back(bins);
        self.window.reset();
        self.window_timed_out = 0;
        self.window_late = 0;
    }

    /// A new run starts: its sequence numbers start afresh, so the walks
    /// along them (reordering, loss direction) start again too; what was
    /// counted stays.
    pub fn start_run(&mut self) {
        self.total.start_run();
    }

    /// Takes the engine's shape (segments, schedule, one-way) from now on.
    pub fn use_shape(&mut self, shape: Shape) {
        self.total.use_shape(shape);
    }

    /// Totals since the last clear (what the live view received).
    pub fn total(&self) -> &Stats {
        &self.total
    }

    /// Closed windows, oldest first.
    pub fn history(&self) -> &VecDeque<WindowPoint> {
        &self.history
    }

    /// Samples of the recent windows plus the open one, and the requests
    /// among them without a timely reply: lost and late, as the totals
    /// count them (a late reply turns one that timed out from lost into
    /// late).
    pub fn recent_histogram(&self) -> RecentHistogram {
        let mut bins = self.window_bins.clone();
        bins.add(&self.recent_sum);
        let windows = self.history.len().min(self.recent.len());
        let closed = self.history.iter().rev().take(windows);
        let (timed_out, late) = closed
            .fold((self.window_timed_out, self.window_late), |(t, l), w| {
                (t + w.timed_out, l + w.late)
            });
        RecentHistogram {
            bins,
            lost: timed_out.saturating_sub(late),
            late: late.min(timed_out),
        }
    }

    /// Packets per second (answered or lost) over the last second of closed
    /// windows.
    pub fn rate_pps(&self) -> f64 {
        let n = self.history.len().min(4);
        if n == 0 {
            return 0.0;
        }
        let count: u64 = self
            .history
            .iter()
            .rev()
            .take(n)
            .map(|w| w.samples + w.timed_out)
            .sum();
        count as f64 / (n as f64 * WINDOW.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_monotonic_and_bounds_invert_index() {
        let mut last = 0;
        for ns in [
            0,
            63,
            64,
            71,
            72,
            100,
            1_000,
            25_000,
            1_000_000,
            120_000_000_000,
        ] {
            let i = LogBins::index(ns);
            assert!(i >= last, "{ns}");
            last = i;
            assert!(LogBins::lower_bound(i) <= ns, "{ns} below its bin's bound");
            if i + 1 < BINS {
                assert!(LogBins::lower_bound(i + 1) > ns, "{ns} above its bin");
            }
        }
        assert_eq!(LogBins::lower_bound(LogBins::index(64)), 64);
        assert_eq!(LogBins::index(64), 1);
    }

    #[test]
    fn windows_record_percentiles_and_loss() {
        let mut l = LiveStats::new();
        for i in 0..100 {
            l.ingest(&Record::sample(i, 0, 10_000 + i * 10, false));
        }
        l.ingest(&Record::event(RecordKind::Lost, 100, 0, false));
        l.close_window();
        let w = l.history()[0];
        assert_eq!(w.samples, 100);
        assert_eq!(w.timed_out, 1);
        assert!((10_480..=10_520).contains(&w.p50), "{}", w.p50);
        assert!((l.rate_pps() - 404.0).abs() < 1e-9);
        assert_eq!(l.total().counters().lost, 1);
    }

    #[test]
    fn recent_histogram_forgets_old_spikes() {
        let mut l = LiveStats::new();
        l.ingest(&Record::sample(0, 0, 50_000_000, false));
        l.close_window();
        assert_eq!(l.recent_histogram().bins.total(), 1);
        for i in 0..RECENT_WINDOWS as u64 {
            l.ingest(&Record::sample(i + 1, 0, 20_000, false));
            l.close_window();
        }
        let bins = l.recent_histogram().bins;
        assert_eq!(bins.total(), RECENT_WINDOWS as u64);
        assert_eq!(bins.quantile_bin(1.0), Some(LogBins::index(20_000)));
    }

    /// Issue 36: the histogram said `lost 1,471` where the totals said
    /// 626 lost and 845 late; it counts them as the totals do.
    #[test]
    fn the_histogram_splits_lost_and_late_as_the_totals_do() {
        let mut l = LiveStats::new();
        for seq in 0..10u64 {
            l.ingest(&Record::event(RecordKind::Lost, seq, 0, false));
        }
        l.close_window();
        // Four of them answer late, in the next window.
        for seq in 0..4u64 {
            l.ingest(&Record::event(
                RecordKind::Late { reordered: false },
                seq,
                0,
                false,
            ));
        }
        let h = l.recent_histogram();
        let c = *l.total().counters();
        assert_eq!((h.lost, h.late), (6, 4));
        assert_eq!((h.lost, h.late), (c.lost, c.late));
        l.close_window();
        let h = l.recent_histogram();
        assert_eq!(
            (h.lost, h.late),
            (c.lost, c.late),
            "closed windows agree too"
        );
    }

    #[test]
    fn finer_bins_keep_their_order_and_width() {
        // About 2 % a bin: 100 µs and 102.5 µs fall in different bins.
        assert!(LogBins::index(102_500) > LogBins::index(100_000));
        for i in 1..BINS - 1 {
            let (lo, hi) = (LogBins::lower_bound(i), LogBins::lower_bound(i + 1));
            assert!(hi > lo, "{i}");
            assert_eq!(LogBins::index(lo), i);
            assert_eq!(LogBins::index(hi - 1), i);
        }
        assert_eq!(LogBins::index(u64::MAX), BINS - 1);
    }

    #[test]
    fn warmup_is_shown_but_not_counted() {
        let mut l = LiveStats::new();
        l.ingest(&Record::sample(0, 0, 5_000, true));
        assert_eq!(l.last_rtt_ns, Some(5_000));
        assert_eq!(l.warmup_seen, 1);
        assert!(!l.warmed_up);
        assert_eq!(l.total().counters().sent, 0);
        l.close_window();
        assert_eq!(l.history()[0].samples, 0);
    }

    #[test]
    fn history_is_bounded() {
        let mut l = LiveStats::new();
        for _ in 0..HISTORY + 10 {
            l.close_window();
        }
        assert_eq!(l.history().len(), HISTORY);
    }
}
