//! A run cut into intervals of fixed length, each with one histogram per
//! series: what an HdrHistogram interval log holds, what `synapse compare`
//! resamples and what `synapse plot` draws over time.
//!
//! The recorder is fed the records a consumer takes off the ring (never by
//! the measurement thread). An interval is placed by the record's own time
//! (`at_ns`, on the run's clock), not by when the consumer saw it, so the
//! cut does not depend on how often the consumer wakes up. Intervals start
//! at multiples of the length from the log's base; one with nothing in it
//! is not emitted.

use super::{MAX_TRACKABLE_NS, Record, RecordKind, Segment};
use hdrhistogram::Histogram;
use std::collections::HashMap;

/// The RTT series' tag.
pub const RTT: &str = "rtt";
/// Requests without a timely reply (lost, or late), each recorded as the
/// timeout it waited: their count over `rtt`'s plus theirs is the loss.
pub const UNANSWERED: &str = "unanswered";
/// Outages (two or more requests in a row without a timely reply), each
/// recorded as its length, in a line of its own that spans it: from its
/// first unanswered request leaving to the reply that ended it (see
/// [`IntervalRecorder::take_spans`]).
pub const OUTAGE: &str = "outage";
/// STAMP: the request's one-way delay, client clock to reflector clock.
pub const FORWARD: &str = "forward";
/// STAMP: the reply's one-way delay, reflector clock to client clock.
pub const BACKWARD: &str = "backward";
/// Server: T3 driver − T2 driver, everything the host added.
pub const RESPONSE: &str = "response";
/// Server: T3 user − T2 driver, the reflector's dwell as STAMP reports it.
pub const DWELL: &str = "dwell";

/// An empty histogram of the run statistics' kind (nanoseconds, 3
/// significant digits), so that an interval's percentiles fall on the same
/// values as the report's. It grows to the values recorded.
pub fn empty_histogram() -> Histogram<u64> {
    #[allow(clippy::expect_used)]
    let mut h = Histogram::new_with_bounds(1, 2, 3).expect("constant histogram bounds are valid");
    h.auto(true);
    h
}

/// One closed interval.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Its start, ns after the log's base.
    pub start_ns: u64,
    /// Its length, ns (the last one of a run may be shorter).
    pub length_ns: u64,
    /// A histogram per series, in the order the series first appeared.
    pub series: Vec<(String, Histogram<u64>)>,
}

impl Interval {
    /// The histogram of series `tag`, if the interval has one.
    pub fn get(&self, tag: &str) -> Option<&Histogram<u64>> {
        self.series.iter().find(|(t, _)| t == tag).map(|(_, h)| h)
    }

    /// Whether nothing at all was recorded in it.
    pub fn is_empty(&self) -> bool {
        self.series.iter().all(|(_, h)| h.is_empty())
    }
}

/// Cuts a stream of values into intervals.
#[derive(Debug)]
pub struct IntervalRecorder {
    length_ns: u64,
    /// The open interval's start, once anything was recorded.
    open_start: Option<u64>,
    open: Vec<(String, Histogram<u64>)>,
    /// Where the open interval ends early (the end of a run).
    closed: Vec<Interval>,
    /// Outages, each an interval of its own spanning it.
    spans: Vec<Interval>,
    /// Each series' highest trackable value when its last interval
    /// closed: its next histogram starts that big, rather than growing
    /// (and copying its counts) a step at a time, record by record. One
    /// entry per series name seen, so bounded by the peers a run can have.
    reach: HashMap<String, u64>,
}

/// Whether series name `name` is `prefix` followed by `tag` (compared in
/// place: a record's lookup builds no string).
fn names(name: &str, prefix: &str, tag: &str) -> bool {
    name.len() == prefix.len() + tag.len() && name.starts_with(prefix) && name.ends_with(tag)
}

impl IntervalRecorder {
    /// A recorder of intervals `length` long (at least 1 ms).
    pub fn new(length: std::time::Duration) -> Self {
        Self {
            length_ns: (length.as_nanos() as u64).max(1_000_000),
            open_start: None,
            open: Vec::new(),
            closed: Vec::new(),
            spans: Vec::new(),
            reach: HashMap::new(),
        }
    }

    /// The interval length, ns.
    pub fn length_ns(&self) -> u64 {
        self.length_ns
    }

    /// Moves to the interval holding `t_ns`, closing the open one if `t_ns`
    /// is past it. A time before the open interval (records of many in
    /// flight arrive a little out of order) stays in the open one.
    fn advance(&mut self, t_ns: u64) {
        // Most records fall in the open interval: no division for them.
        if self
            .open_start
            .is_some_and(|open| t_ns < open + self.length_ns)
        {
            return;
        }
        let start = t_ns / self.length_ns * self.length_ns;
        match self.open_start {
            Some(open) if start <= open => {}
            Some(open) => {
                self.close(open + self.length_ns);
                self.open_start = Some(start);
            }
            None => self.open_start = Some(start),
        }
    }

    /// Adds `value` to series `tag` at time `t_ns` (after the log's base).
    pub fn add(&mut self, t_ns: u64, tag: &str, value: u64) {
        self.add_tagged(t_ns, "", tag, value);
    }

    /// Adds `value` to series `prefix` + `tag` at time `t_ns`.
    fn add_tagged(&mut self, t_ns: u64, prefix: &str, tag: &str, value: u64) {
        self.advance(t_ns);
        let i = match self.open.iter().position(|(t, _)| names(t, prefix, tag)) {
            Some(i) => i,
            None => self.open_series(format!("{prefix}{tag}")),
        };
        let h = &mut self.open[i].1;
        // Auto-resizing: recording grows the histogram (saturating would
        // clamp to its current top instead).
        if h.record(value.min(MAX_TRACKABLE_NS)).is_err() {
            h.saturating_record(value);
        }
    }

    /// A series' histogram in the open interval, as big as it last was.
    fn open_series(&mut self, name: String) -> usize {
        let h = self
            .reach
            .get(&name)
            .and_then(|&high| Histogram::new_with_bounds(1, high.max(2), 3).ok())
            .map_or_else(empty_histogram, |mut h| {
                h.auto(true);
                h
            });
        self.open.push((name, h));
        self.open.len() - 1
    }

    /// Adds what a client record says at time `t_ns`: its RTT, segments
    /// and one-way delays (a sample), an unanswered request (recorded as
    /// `timeout_ns`), or an outage's length. Warm-up is left out; tags get
    /// `prefix` before them (the agent's peer name and a `/`).
    pub fn add_record(&mut self, t_ns: u64, r: &Record, timeout_ns: u64, prefix: &str) {
        if r.warmup {
            return;
        }
        match r.kind {
            RecordKind::Sample => {
                self.add_tagged(t_ns, prefix, RTT, r.rtt_ns.max(1));
                for seg in Segment::ALL {
                    if let Some(v) = r.split.get(seg) {
                        self.add_tagged(t_ns, prefix, seg.key(), v);
                    }
                }
                // Delays across two clocks can read negative; a histogram
                // holds none, so those are left out (the header says so).
                for (name, v) in [
                    (FORWARD, r.far.forward_ns()),
                    (BACKWARD, r.far.backward_ns()),
                ] {
                    if let Some(v) = v.and_then(|v| u64::try_from(v).ok()) {
                        self.add_tagged(t_ns, prefix, name, v);
                    }
                }
            }
            RecordKind::Lost => self.add_tagged(t_ns, prefix, UNANSWERED, timeout_ns.max(1)),
            RecordKind::Outage { .. } => self.add_span(t_ns, prefix, r.rtt_ns.max(1)),
            _ => {}
        }
    }

    /// An outage that ended at `end_ns`, `length_ns` long: known only when
    /// it ends, after the intervals it covered have closed, it is kept as
    /// an interval of its own that spans it, so a reader places it where
    /// it began rather than in the interval where it ended.
    fn add_span(&mut self, end_ns: u64, prefix: &str, length_ns: u64) {
        let start = end_ns.saturating_sub(length_ns);
        let mut h = empty_histogram();
        let _ = h.record(length_ns.min(MAX_TRACKABLE_NS));
        self.spans.push(Interval {
            start_ns: start,
            length_ns: end_ns - start,
            series: vec![(format!("{prefix}{OUTAGE}"), h)],
        });
    }

    /// The outages ended since the last call, each an interval spanning it
    /// (series `outage`, its length): an interval log writes them as lines
    /// of their own; they are not intervals of the run's grid.
    pub fn take_spans(&mut self) -> Vec<Interval> {
        std::mem::take(&mut self.spans)
    }

    /// Closes the open interval at `end_ns` (at most its full length).
    fn close(&mut self, end_ns: u64) {
        let Some(start) = self.open_start.take() else {
            return;
        };
        let series = std::mem::take(&mut self.open);
        for (name, h) in &series {
            match self.reach.get_mut(name) {
                Some(high) => *high = h.high(),
                None => _ = self.reach.insert(name.clone(), h.high()),
            }
        }
        let interval = Interval {
            start_ns: start,
            length_ns: end_ns.clamp(start, start + self.length_ns) - start,
            series,
        };
        if !interval.is_empty() {
            self.closed.push(interval);
        }
    }

    /// The intervals closed since the last call.
    pub fn take_closed(&mut self) -> Vec<Interval> {
        std::mem::take(&mut self.closed)
    }

    /// Ends the run at `end_ns`: the open interval is closed there, and
    /// every interval not yet taken is returned.
    pub fn finish(&mut self, end_ns: u64) -> Vec<Interval> {
        let end = self
            .open_start
            .map_or(end_ns, |s| end_ns.max(s + 1).min(s + self.length_ns));
        self.close(end);
        self.take_closed()
    }
}

/// Halves the number of intervals: each pair of neighbours becomes one
/// (series added up), so a long run kept in memory stays bounded.
pub fn coarsen(intervals: &mut Vec<Interval>) {
    let old = std::mem::take(intervals);
    let mut it = old.into_iter();
    while let Some(mut a) = it.next() {
        if let Some(b) = it.next() {
            a.length_ns = (b.start_ns + b.length_ns).saturating_sub(a.start_ns);
            for (tag, h) in b.series {
                match a.series.iter_mut().find(|(t, _)| *t == tag) {
                    Some((_, mine)) => {
                        let _ = mine.add(&h);
                    }
                    None => a.series.push((tag, h)),
                }
            }
        }
        intervals.push(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FarSide, Split};
    use std::time::Duration;

    const MS: u64 = 1_000_000;

    #[test]
    fn records_fall_into_the_interval_of_their_own_time() {
        let mut r = IntervalRecorder::new(Duration::from_millis(100));
        r.add_record(5 * MS, &Record::sample(0, 0, 50_000, false), 0, "");
        r.add_record(99 * MS, &Record::sample(1, 0, 60_000, false), 0, "");
        assert!(r.take_closed().is_empty(), "the first is still open");
        r.add_record(
            100 * MS,
            &Record::event(RecordKind::Lost, 2, 0, false),
            7 * MS,
            "",
        );
        let first = r.take_closed();
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].start_ns, first[0].length_ns), (0, 100 * MS));
        assert_eq!(first[0].get(RTT).map(Histogram::len), Some(2));
        assert!(first[0].get(UNANSWERED).is_none());
        // Nothing between 200 and 400 ms: no empty intervals are emitted.
        r.add_record(450 * MS, &Record::sample(3, 0, 70_000, false), 0, "");
        let last = r.finish(470 * MS);
        assert_eq!(last.len(), 2);
        assert_eq!((last[0].start_ns, last[0].length_ns), (100 * MS, 100 * MS));
        let lost = last[0].get(UNANSWERED).unwrap();
        assert_eq!(
            (lost.len(), lost.max()),
            (1, lost.highest_equivalent(7 * MS))
        );
        assert_eq!((last[1].start_ns, last[1].length_ns), (400 * MS, 70 * MS));
    }

    #[test]
    fn a_series_starts_each_interval_as_big_as_it_last_was() {
        let mut r = IntervalRecorder::new(Duration::from_millis(10));
        r.add_record(0, &Record::sample(0, 0, 9 * MS, false), 0, "a/");
        r.add_record(0, &Record::sample(1, 0, 1_000, false), 0, "b/");
        r.add_record(10 * MS, &Record::sample(2, 0, 1_000, false), 0, "a/");
        let first = r.take_closed();
        let high = first[0].get("a/rtt").unwrap().high();
        assert!(high >= 9 * MS);
        let last = r.finish(11 * MS);
        let a = last[0].get("a/rtt").unwrap();
        assert_eq!(
            (a.len(), a.high()),
            (1, high),
            "sized from the last interval"
        );
        assert!(last[0].get("b/rtt").is_none(), "each prefix its own series");
    }

    #[test]
    fn coarsening_merges_neighbours_and_keeps_every_count() {
        let mut r = IntervalRecorder::new(Duration::from_millis(10));
        for i in 0..5u64 {
            r.add_record(
                i * 10 * MS,
                &Record::sample(i, 0, 1_000 * (i + 1), false),
                0,
                "",
            );
        }
        let mut all = r.finish(50 * MS);
        coarsen(&mut all);
        let spans: Vec<(u64, u64, u64)> = all
            .iter()
            .map(|i| (i.start_ns / MS, i.length_ns / MS, i.get(RTT).unwrap().len()))
            .collect();
        assert_eq!(spans, [(0, 20, 2), (20, 20, 2), (40, 10, 1)]);
    }

    #[test]
    fn a_late_record_stays_in_the_open_interval_and_warmup_is_left_out() {
        let mut r = IntervalRecorder::new(Duration::from_millis(10));
        r.add_record(25 * MS, &Record::sample(0, 0, 1_000, false), 0, "");
        r.add_record(12 * MS, &Record::sample(1, 0, 2_000, false), 0, "");
        r.add_record(26 * MS, &Record::sample(2, 0, 3_000, true), 0, "");
        let all = r.finish(30 * MS);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].start_ns, 20 * MS);
        assert_eq!(all[0].get(RTT).unwrap().len(), 2);
    }

    #[test]
    fn segments_one_way_delays_and_outages_get_series_of_their_own() {
        let mut r = IntervalRecorder::new(Duration::from_secs(1));
        let split = Split::from_parts([Some(1_000), Some(2_000), Some(3_000), None, None]);
        let s = Record::sample(0, 0, 9_000, false)
            .with_split(split)
            .with_far(FarSide::new(0).with_application(Some(4_000), Some(-5)));
        r.add_record(0, &s, 0, "b/");
        r.add_record(2_000 * MS, &Record::outage(1, 3, 0, 300 * MS), 0, "b/");
        let i = &r.finish(2)[0];
        let tags: Vec<&str> = i.series.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            tags,
            [
                "b/rtt",
                "b/send_path",
                "b/network",
                "b/server_dwell",
                "b/forward",
            ],
            "a negative backward reading is left out"
        );
        assert_eq!(i.length_ns, 2, "a run's last interval ends with it");
        // Issue 51: the outage spans the time it covered, not the interval
        // it ended in.
        let spans = r.take_spans();
        assert_eq!(spans.len(), 1);
        assert_eq!(
            (spans[0].start_ns, spans[0].length_ns),
            (1_700 * MS, 300 * MS)
        );
        let h = spans[0].get("b/outage").unwrap();
        assert_eq!((h.len(), h.max()), (1, h.highest_equivalent(300 * MS)));
    }
}
