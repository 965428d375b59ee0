//! A run cut into slices of consecutive requests, by count rather than by
//! time: what the within-run intervals resample (the block bootstrap of
//! [`crate::significance`] and [`crate::percentiles`]) whatever the run's
//! length. A 3,000-request run that lasts 60 ms has no 1 s interval to
//! resample, but it has 64 slices of 47 requests.
//!
//! Between [`MIN_SLICES`] and twice as many are kept: when the count
//! reaches twice, neighbours merge and each slice holds twice as many
//! requests from then on. A slice is sparse (its distinct values and their
//! counts, on the histograms' 3-significant-digit buckets), so a long run
//! costs memory in proportion to the values it saw, not to its length.

use super::intervals::{Interval, RTT, UNANSWERED, empty_histogram};
use super::{MAX_TRACKABLE_NS, Record, RecordKind};
use hdrhistogram::Histogram;

/// Slices kept at least, once the run is long enough; at most twice this.
pub const MIN_SLICES: usize = 64;
/// Requests in a slice at first.
const FIRST_SIZE: u64 = 16;

/// Consecutive requests: their RTTs (value, count; ascending, each value
/// the highest of its histogram bucket) and how many got no timely reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slice {
    /// The first request's time, ns (on the run's clock).
    pub start_ns: u64,
    /// The last request's time, ns.
    pub end_ns: u64,
    /// RTT values and their counts, ascending.
    pub rtt: Vec<(u64, u64)>,
    /// Requests without a timely reply.
    pub unanswered: u64,
}

impl Slice {
    /// Requests in it.
    pub fn requests(&self) -> u64 {
        self.rtt.iter().map(|&(_, n)| n).sum::<u64>() + self.unanswered
    }

    /// The slice of an interval's `rtt` and `unanswered` series (tags after
    /// `prefix`), its values on the histogram's buckets.
    pub fn of_interval(i: &Interval, prefix: &str) -> Self {
        let rtt = i
            .get(&format!("{prefix}{RTT}"))
            .map(|h| {
                h.iter_recorded()
                    .map(|v| {
                        (
                            h.highest_equivalent(v.value_iterated_to()),
                            v.count_at_value(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let unanswered = i
            .get(&format!("{prefix}{UNANSWERED}"))
            .map_or(0, Histogram::len);
        Self {
            start_ns: i.start_ns,
            end_ns: i.start_ns + i.length_ns,
            rtt,
            unanswered,
        }
    }

    /// As an interval (series `rtt` and `unanswered`, the latter recorded
    /// as `timeout_ns`), for an interval log or a JSON report.
    pub fn to_interval(&self, timeout_ns: u64) -> Interval {
        let mut series = Vec::new();
        if !self.rtt.is_empty() {
            let mut h = empty_histogram();
            for &(v, n) in &self.rtt {
                let _ = h.record_n(v.min(MAX_TRACKABLE_NS), n);
            }
            series.push((RTT.to_string(), h));
        }
        if self.unanswered > 0 {
            let mut h = empty_histogram();
            let _ = h.record_n(timeout_ns.clamp(1, MAX_TRACKABLE_NS), self.unanswered);
            series.push((UNANSWERED.to_string(), h));
        }
        Interval {
            start_ns: self.start_ns,
            length_ns: self.end_ns.saturating_sub(self.start_ns).max(1),
            series,
        }
    }

    /// Adds `other` (the slice after it).
    fn absorb(&mut self, other: Slice) {
        self.end_ns = self.end_ns.max(other.end_ns);
        self.unanswered += other.unanswered;
        let mine = std::mem::take(&mut self.rtt);
        self.rtt = merge_counts(&mine, &other.rtt);
    }
}

/// Two ascending (value, count) lists as one.
fn merge_counts(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let take_a = j >= b.len() || (i < a.len() && a[i].0 <= b[j].0);
        let (v, n) = if take_a {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        match out.last_mut() {
            Some((last, count)) if *last == v => *count += n,
            _ => out.push((v, n)),
        }
    }
    out
}

/// Cuts a run's records into slices. Fed by a consumer of the ring (never
/// the measurement thread); warm-up is left out.
#[derive(Debug, Clone)]
pub struct SliceRecorder {
    size: u64,
    closed: Vec<Slice>,
    /// The open slice's raw values (sorted when it closes), its times and
    /// its unanswered requests.
    values: Vec<u64>,
    open: Slice,
    open_requests: u64,
    /// Only for its bucket arithmetic.
    buckets: Histogram<u64>,
}

impl Default for SliceRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl SliceRecorder {
    /// Nothing recorded yet.
    pub fn new() -> Self {
        Self {
            size: FIRST_SIZE,
            closed: Vec::new(),
            values: Vec::new(),
            open: Slice::default(),
            open_requests: 0,
            buckets: empty_histogram(),
        }
    }

    /// Accounts for a record: a reply's RTT, or a request without a timely
    /// reply.
    pub fn record(&mut self, r: &Record) {
        if r.warmup {
            return;
        }
        match r.kind {
            RecordKind::Sample => self.values.push(
                self.buckets
                    .highest_equivalent(r.rtt_ns.clamp(1, MAX_TRACKABLE_NS)),
            ),
            RecordKind::Lost => self.open.unanswered += 1,
            _ => return,
        }
        if self.open_requests == 0 {
            self.open.start_ns = r.at_ns;
        }
        self.open.end_ns = self.open.end_ns.max(r.at_ns);
        self.open_requests += 1;
        if self.open_requests >= self.size {
            self.close();
        }
    }

    fn close(&mut self) {
        if self.open_requests == 0 {
            return;
        }
        self.values.sort_unstable();
        let mut rtt: Vec<(u64, u64)> = Vec::new();
        for &v in &self.values {
            match rtt.last_mut() {
                Some((last, n)) if *last == v => *n += 1,
                _ => rtt.push((v, 1)),
            }
        }
        self.values.clear();
        let mut slice = std::mem::take(&mut self.open);
        slice.rtt = rtt;
        self.open_requests = 0;
        self.closed.push(slice);
        if self.closed.len() >= 2 * MIN_SLICES {
            let old = std::mem::take(&mut self.closed);
            let mut it = old.into_iter();
            while let Some(mut a) = it.next() {
                if let Some(b) = it.next() {
                    a.absorb(b);
                }
                self.closed.push(a);
            }
            self.size *= 2;
        }
    }

    /// Requests each slice holds now.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The slices so far, the open one closed, while recording goes on.
    pub fn snapshot(&self) -> Vec<Slice> {
        self.clone().finish()
    }

    /// The slices so far, the open one closed (it may hold fewer).
    pub fn finish(mut self) -> Vec<Slice> {
        self.close();
        self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(r: &mut SliceRecorder, n: u64) {
        for i in 0..n {
            let rec = if i % 100 == 99 {
                Record::event(RecordKind::Lost, i, i * 1_000, false)
            } else {
                Record::sample(i, i * 1_000, 10_000 + (i % 37) * 100, false)
            };
            r.record(&rec);
        }
    }

    #[test]
    fn slices_hold_every_request_once_in_order() {
        for n in [1u64, 15, 16, 1_000, 3_000, 100_000] {
            let mut r = SliceRecorder::new();
            r.record(&Record::sample(0, 0, 5, true));
            feed(&mut r, n);
            let size = r.size();
            let slices = r.finish();
            let total: u64 = slices.iter().map(Slice::requests).sum();
            assert_eq!(total, n, "{n} requests");
            let lost: u64 = slices.iter().map(|s| s.unanswered).sum();
            assert_eq!(lost, n / 100);
            assert!(slices.len() < 2 * MIN_SLICES, "{n}: {}", slices.len());
            if n >= FIRST_SIZE * MIN_SLICES as u64 {
                assert!(slices.len() >= MIN_SLICES, "{n}: {}", slices.len());
            }
            // All but the last hold `size`; times run forward.
            for w in slices.windows(2) {
                assert_eq!(w[0].requests(), size, "{n}");
                assert!(w[0].end_ns < w[1].start_ns);
            }
            for s in &slices {
                assert!(s.rtt.windows(2).all(|w| w[0].0 < w[1].0));
            }
        }
    }

    #[test]
    fn a_slice_round_trips_through_an_interval() {
        let mut r = SliceRecorder::new();
        feed(&mut r, 200);
        let slices = r.finish();
        let s = &slices[6];
        let back = Slice::of_interval(&s.to_interval(7_000_000), "");
        assert_eq!(&back, s);
        let i = s.to_interval(7_000_000);
        assert_eq!(i.get(UNANSWERED).map(|h| h.len()), Some(1));
        assert_eq!(i.start_ns, s.start_ns);
    }

    #[test]
    fn merged_counts_stay_ascending_and_add_up() {
        let a = [(1, 2), (5, 1), (9, 4)];
        let b = [(1, 1), (6, 2), (9, 1), (12, 3)];
        assert_eq!(
            merge_counts(&a, &b),
            [(1, 3), (5, 1), (6, 2), (9, 5), (12, 3)]
        );
    }
}
