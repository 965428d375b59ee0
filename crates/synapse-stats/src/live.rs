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

/// Bins per doubling of RTT: each bin is about 9 % wide.
pub const BINS_PER_OCTAVE: usize = 8;
/// Values below 2^MIN_EXP ns share bin 0.
const MIN_EXP: u32 = 6;
/// Number of bins; enough for any RTT up to 2^37 ns (137 s).
pub const BINS: usize = 256;

/// Counts per logarithmic RTT bin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogBins {
    /// Samples per bin.
    pub counts: [u64; BINS],
}

impl Default for LogBins {
    fn default() -> Self {
        Self { counts: [0; BINS] }
    }
}

impl LogBins {
    /// The bin an RTT falls in.
    pub fn index(ns: u64) -> usize {
        if ns < 1 << MIN_EXP {
            return 0;
        }
        let exp = 63 - ns.leading_zeros();
        let sub = ((ns >> (exp - 3)) & 7) as usize;
        (((exp - MIN_EXP) as usize) * BINS_PER_OCTAVE + sub + 1).min(BINS - 1)
    }

    /// The smallest RTT in bin `i`.
    pub fn lower_bound(i: usize) -> u64 {
        if i == 0 {
            return 0;
        }
        let exp = (i - 1) / BINS_PER_OCTAVE + MIN_EXP as usize;
        let sub = ((i - 1) % BINS_PER_OCTAVE) as u64;
        (8 + sub) << (exp - 3)
    }

    fn add(&mut self, other: &LogBins) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
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
    /// Packets lost in the window.
    pub lost: u64,
}

/// Everything a live display shows about a client run.
#[derive(Debug, Clone)]
pub struct LiveStats {
    total: Stats,
    window: Histogram<u64>,
    window_bins: LogBins,
    window_lost: u64,
    history: VecDeque<WindowPoint>,
    recent: VecDeque<(LogBins, u64)>,
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
            window_lost: 0,
            history: VecDeque::with_capacity(HISTORY),
            recent: VecDeque::with_capacity(RECENT_WINDOWS),
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
            RecordKind::Lost if !r.warmup => self.window_lost += 1,
            _ => {}
        }
    }

    /// Ends the current window: its percentiles join the history and its
    /// bins the recent histogram.
    pub fn close_window(&mut self) {
        let h = &self.window;
        let point = if h.is_empty() {
            WindowPoint {
                lost: self.window_lost,
                ..WindowPoint::default()
            }
        } else {
            WindowPoint {
                p50: h.value_at_quantile(0.5),
                p99: h.value_at_quantile(0.99),
                p999: h.value_at_quantile(0.999),
                samples: h.len(),
                lost: self.window_lost,
            }
        };
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(point);
        if self.recent.len() == RECENT_WINDOWS {
            self.recent.pop_front();
        }
        self.recent
            .push_back((std::mem::take(&mut self.window_bins), self.window_lost));
        self.window.reset();
        self.window_lost = 0;
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

    /// Samples and losses of the recent windows plus the open one.
    pub fn recent_histogram(&self) -> (LogBins, u64) {
        let mut bins = self.window_bins.clone();
        let mut lost = self.window_lost;
        for (b, l) in &self.recent {
            bins.add(b);
            lost += l;
        }
        (bins, lost)
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
            .map(|w| w.samples + w.lost)
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
        assert_eq!(w.lost, 1);
        assert!((10_480..=10_520).contains(&w.p50), "{}", w.p50);
        assert!((l.rate_pps() - 404.0).abs() < 1e-9);
        assert_eq!(l.total().counters().lost, 1);
    }

    #[test]
    fn recent_histogram_forgets_old_spikes() {
        let mut l = LiveStats::new();
        l.ingest(&Record::sample(0, 0, 50_000_000, false));
        l.close_window();
        assert_eq!(l.recent_histogram().0.total(), 1);
        for i in 0..RECENT_WINDOWS as u64 {
            l.ingest(&Record::sample(i + 1, 0, 20_000, false));
            l.close_window();
        }
        let (bins, _) = l.recent_histogram();
        assert_eq!(bins.total(), RECENT_WINDOWS as u64);
        assert_eq!(bins.quantile_bin(1.0), Some(LogBins::index(20_000)));
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
