//! Synapse's statistics, shared by every consumer: the engine's
//! authoritative totals, the headless reports and the live display all use
//! these types. The engine records [`Record`]s into [`Stats`]; [`Summary`]
//! reduces them for a report; [`LiveStats`] keeps the display's windows;
//! [`significance`] compares runs (`synapse compare`). It depends on
//! nothing else in Synapse but `synapse-units`.

mod breakdown;
pub mod clock_offset;
pub mod cos;
mod direction;
pub mod fan_out;
mod hdr_counts;
pub mod intervals;
mod jitter;
mod live;
pub mod load;
mod one_way;
mod order;
pub mod outages;
pub mod path_error;
mod record;
pub mod reply_watch;
mod rtt_figures;
mod schedule;
mod segment;
mod signed_histogram;
pub mod significance;
pub mod slices;
mod split_mix;
pub mod stream_slices;
mod summary;
pub mod tcp;
pub mod tcp_legs;
mod threshold;
pub mod trace;

pub use breakdown::{BelowZero, Breakdown, SegmentFigures};
pub use clock_offset::{DriftFigures, OffsetFigures, StepFigures};
pub use cos::{CosFigures, CosStats, Dscp, Ecn, Marks};
pub use direction::{DirectionStats, LossDirection};
pub use fan_out::FanOut;
pub use hdr_counts::HdrCounts;
pub use jitter::{Jitter, JitterFigures};
pub use live::{
    BINS, HISTORY, LiveStats, LogBins, RECENT_WINDOWS, RecentHistogram, WINDOW, WindowPoint,
};
pub use one_way::{ClockErrors, CutPointFigures, DelayFigures, OneWay, OneWayFigures, TRUST_RATIO};
pub use order::ReplyOrder;
pub use outages::{Outage, OutageDetector, Outages};
pub use path_error::{PathError, PathErrorKind, PathErrors};
pub use record::{FarSide, Record, RecordKind};
pub use schedule::{Pattern, ScheduleFigures, ScheduleStats};
pub use segment::{SEGMENTS, Segment, SegmentSet, Split};
pub use signed_histogram::SignedHistogram;
pub use split_mix::SplitMix;
// `Shape` is defined below.
pub use rtt_figures::RttFigures;
pub use summary::{Distribution, DistributionBucket, Summary};
pub use tcp::{TcpFigures, TcpLive, TcpLiveView, TcpStats};
pub use threshold::{Judged, RttMetric, Threshold};

use hdrhistogram::Histogram;

/// Largest RTT the histogram resolves; anything slower is clamped to it.
/// The client's timeout is capped below this, so only pathological clock
/// jumps could reach it.
pub const MAX_TRACKABLE_NS: u64 = 120_000_000_000;

/// Packet accounting. Invariant: `sent == received + lost + late`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// Requests sent after warm-up.
    pub sent: u64,
    /// Fresh replies (each one an RTT sample).
    pub received: u64,
    /// Requests that never got a reply.
    pub lost: u64,
    /// Replies that arrived after their timeout.
    pub late: u64,
    /// Repeated replies.
    pub duplicate: u64,
    /// Replies (timely or late) that arrived after a later request's reply
    /// (RFC 4737).
    pub reordered: u64,
    /// Datagrams that were not replies to this run (other source, wrong
    /// form, unknown sequence).
    pub stray: u64,
}

impl Counters {
    fn add(&mut self, o: &Counters) {
        self.sent += o.sent;
        self.received += o.received;
        self.lost += o.lost;
        self.late += o.late;
        self.duplicate += o.duplicate;
        self.reordered += o.reordered;
        self.stray += o.stray;
    }

    /// Requests without a timely reply (lost or late) as a percentage of
    /// those sent: what the verdict's `--max-loss` judges.
    pub fn unanswered_percent(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            100.0 * (self.lost + self.late) as f64 / self.sent as f64
        }
    }

    /// Lost requests as a percentage of those sent.
    pub fn loss_percent(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            100.0 * self.lost as f64 / self.sent as f64
        }
    }
}

/// What a run's statistics hold besides the RTT and the counters: the
/// segments it splits, its schedule, and one-way delays. A consumer builds
/// its own statistics in the engine's shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// The round-trip segments the run measures.
    pub segments: SegmentSet,
    /// Paced: the pattern and (mean) interval, ns.
    pub schedule: Option<(Pattern, u64)>,
    /// STAMP: one-way delays, and whether both ends read one clock.
    pub one_way: Option<bool>,
    /// Class of service per leg, the requests sent with this TOS byte.
    pub cos: Option<u8>,
}

/// An RTT histogram plus packet counters.
#[derive(Debug, Clone)]
pub struct Stats {
    /// The RTTs: `hdrhistogram`'s layout, recorded in a few instructions.
    hist: HdrCounts,
    counters: Counters,
    /// The round-trip split, for runs whose stamps allow one.
    breakdown: Option<Breakdown>,
    /// Runs of requests without a timely reply.
    outages: Outages,
    /// Round-trip jitter.
    jitter: Jitter,
    /// Paced runs: how the schedule was kept.
    schedule: Option<ScheduleStats>,
    /// STAMP runs: one-way delays.
    one_way: Option<OneWay>,
    /// STAMP runs: which way losses went.
    direction: DirectionStats,
    /// Class of service per leg (runs that mark or read it).
    cos: Option<CosStats>,
    /// The highest request answered, for reordering.
    order: ReplyOrder,
    /// What the path said beyond silence (ICMP errors, a TCP peer's end).
    path_errors: PathErrors,
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

impl Stats {
    /// Empty statistics: nanosecond resolution, 3 significant digits. All
    /// memory is allocated here; recording never allocates.
    pub fn new() -> Self {
        #[allow(clippy::expect_used)]
        let hist =
            HdrCounts::new(MAX_TRACKABLE_NS, 3).expect("constant histogram bounds are valid");
        Self {
            hist,
            counters: Counters::default(),
            breakdown: None,
            outages: Outages::default(),
            jitter: Jitter::new(),
            schedule: None,
            one_way: None,
            direction: DirectionStats::default(),
            cos: None,
            order: ReplyOrder::default(),
            path_errors: PathErrors::default(),
        }
    }

    /// The same statistics, for a run sending on a schedule.
    #[must_use]
    pub fn paced(mut self, pattern: Pattern, interval_ns: u64) -> Self {
        self.schedule = Some(ScheduleStats::new(pattern, interval_ns));
        self
    }

    /// The same statistics, for a STAMP run: one-way delays too
    /// (`same_clock`: the reflector runs on this host).
    #[must_use]
    pub fn with_one_way(mut self, same_clock: bool) -> Self {
        self.one_way = Some(OneWay::new(same_clock));
        self
    }

    /// Empty statistics that also split each reply's round trip into the
    /// `segments` (none: same as [`Stats::new`]).
    pub fn with_segments(segments: SegmentSet) -> Self {
        let mut s = Self::new();
        if !segments.is_empty() {
            s.breakdown = Some(Breakdown::new(segments));
        }
        s
    }

    /// Empty statistics of the given shape.
    pub fn shaped(shape: Shape) -> Self {
        let mut s = Self::with_segments(shape.segments);
        if let Some((pattern, interval_ns)) = shape.schedule {
            s = s.paced(pattern, interval_ns);
        }
        if let Some(same_clock) = shape.one_way {
            s = s.with_one_way(same_clock);
        }
        s.cos = shape.cos.map(CosStats::new);
        s
    }

    /// The shape of these statistics.
    pub fn shape(&self) -> Shape {
        Shape {
            segments: self
                .breakdown
                .as_ref()
                .map(Breakdown::segments)
                .unwrap_or_default(),
            schedule: self.schedule.as_ref().map(ScheduleStats::setup),
            one_way: self.one_way.as_ref().map(OneWay::setup),
            cos: self.cos.as_ref().map(CosStats::sent),
        }
    }

    /// Takes `shape` from now on: a part whose setup changes starts afresh
    /// (the RTT figures and counters are kept).
    pub fn use_shape(&mut self, shape: Shape) {
        let mine = self.shape();
        if mine.segments != shape.segments {
            self.breakdown = (!shape.segments.is_empty()).then(|| Breakdown::new(shape.segments));
        }
        if mine.schedule != shape.schedule {
            self.schedule = shape
                .schedule
                .map(|(pattern, interval_ns)| ScheduleStats::new(pattern, interval_ns));
        }
        if mine.one_way != shape.one_way {
            self.one_way = shape.one_way.map(OneWay::new);
        }
        if mine.cos != shape.cos {
            self.cos = shape.cos.map(CosStats::new);
        }
    }

    /// The round-trip split, when the run measures one.
    pub fn breakdown(&self) -> Option<&Breakdown> {
        self.breakdown.as_ref()
    }

    /// Accounts for one record. Warm-up records are ignored (but for the
    /// reflector numbers their replies show). Always inlined: the client's
    /// measurement thread calls it once a packet, and a call saved and
    /// restored a dozen registers around it.
    #[inline(always)]
    pub fn record(&mut self, r: &Record) {
        self.direction.record(r);
        if r.warmup {
            return;
        }
        if let Some(s) = &mut self.schedule {
            s.record(r);
        }
        let c = &mut self.counters;
        match r.kind {
            RecordKind::Sample => {
                c.sent += 1;
                c.received += 1;
                c.reordered += u64::from(self.order.timely(r.seq));
                self.hist.record(r.rtt_ns.max(1));
                self.jitter.add(r.seq, r.rtt_ns as i64);
                // Checked here, not in the call: most packets are outside
                // the stamped sample, and the call cost more than the check.
                if let Some(b) = &mut self.breakdown
                    && !r.split.is_unsampled()
                {
                    b.record(&r.split, r.rtt_ns);
                }
                if let Some(w) = &mut self.one_way {
                    w.record(r);
                }
                if let Some(c) = &mut self.cos {
                    c.record(&r.marks);
                }
            }
            RecordKind::Lost => {
                c.sent += 1;
                c.lost += 1;
            }
            RecordKind::Late { reordered } => {
                // A late reply was first counted lost when it timed out. (A
                // live view whose ring overflowed may have missed that loss,
                // hence saturating; the engine's own statistics see both.)
                c.lost = c.lost.saturating_sub(1);
                c.late += 1;
                c.reordered += u64::from(reordered);
                self.order.answered(r.seq);
            }
            RecordKind::Duplicate => c.duplicate += 1,
            RecordKind::Stray => c.stray += 1,
            RecordKind::Outage { packets } => self.outages.add(u64::from(packets), r.rtt_ns),
            RecordKind::Missed => {}
            RecordKind::PathError => {
                if let Some(e) = r.error() {
                    self.path_errors.count(e, r.at_ns);
                }
            }
        }
    }

    /// Another run's records follow: its sequence numbers start afresh, so
    /// the walks along them start again (as [`Stats::merge`] keeps the
    /// later run's); the counts stay. Without it, a run's first replies
    /// would read as reordered behind the last run's.
    pub fn start_run(&mut self) {
        self.order = ReplyOrder::default();
        self.direction = DirectionStats::default();
    }

    /// Adds another run's statistics to these.
    pub fn merge(&mut self, other: &Stats) {
        self.hist.add(&other.hist);
        self.counters.add(&other.counters);
        self.outages.merge(&other.outages);
        self.path_errors.merge(&other.path_errors);
        match (&mut self.breakdown, &other.breakdown) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.breakdown = Some(b.clone()),
            _ => {}
        }
        self.jitter.merge(&other.jitter);
        match (&mut self.schedule, &other.schedule) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.schedule = Some(b.clone()),
            _ => {}
        }
        match (&mut self.one_way, &other.one_way) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.one_way = Some(b.clone()),
            _ => {}
        }
        match (&mut self.cos, &other.cos) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.cos = Some(b.clone()),
            _ => {}
        }
        // Direction and order are walks along one run's sequence numbers:
        // the later run's walk is the one kept.
        if other.direction.figures(0).is_some() {
            self.direction = other.direction.clone();
        }
        self.order = other.order;
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.hist.reset();
        self.counters = Counters::default();
        self.outages = Outages::default();
        if let Some(b) = &mut self.breakdown {
            b.clear();
        }
        let fresh = Stats::new();
        self.jitter = fresh.jitter;
        self.direction = fresh.direction;
        self.order = fresh.order;
        if let Some(s) = &mut self.schedule {
            *s = s.emptied();
        }
        if let Some(w) = &mut self.one_way {
            *w = w.emptied();
        }
        if let Some(c) = &mut self.cos {
            *c = c.emptied();
        }
    }

    /// Class of service per leg (`None`: the run neither marks nor reads it).
    pub fn cos(&self) -> Option<&CosStats> {
        self.cos.as_ref()
    }

    /// Round-trip jitter.
    pub fn jitter(&self) -> &Jitter {
        &self.jitter
    }

    /// How a paced run kept its schedule (`None`: ping-pong).
    pub fn schedule(&self) -> Option<&ScheduleStats> {
        self.schedule.as_ref()
    }

    /// One-way delays (`None`: not a STAMP run).
    pub fn one_way(&self) -> Option<&OneWay> {
        self.one_way.as_ref()
    }

    /// Loss by direction (figures only once STAMP replies came).
    pub fn direction(&self) -> &DirectionStats {
        &self.direction
    }

    /// Runs of requests without a timely reply.
    pub fn outages(&self) -> &Outages {
        &self.outages
    }

    /// What the path said beyond silence, counted.
    pub fn path_errors(&self) -> &PathErrors {
        &self.path_errors
    }

    /// The packet counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The RTT histogram (nanoseconds; built from the counts when first
    /// read after a change).
    pub fn histogram(&self) -> &Histogram<u64> {
        self.hist.histogram()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seq: u64, rtt: u64) -> Record {
        Record::sample(seq, seq * 1000, rtt, false)
    }

    #[test]
    fn counters_keep_their_invariant_through_a_late_reply() {
        let mut s = Stats::new();
        s.record(&sample(0, 10_000));
        s.record(&Record::event(RecordKind::Lost, 1, 0, false));
        s.record(&Record::event(RecordKind::Lost, 2, 0, false));
        s.record(&Record::event(
            RecordKind::Late { reordered: true },
            1,
            0,
            false,
        ));
        s.record(&Record::event(RecordKind::Duplicate, 0, 0, false));
        s.record(&Record::event(RecordKind::Stray, 0, 0, false));
        let c = *s.counters();
        assert_eq!(
            c,
            Counters {
                sent: 3,
                received: 1,
                lost: 1,
                late: 1,
                duplicate: 1,
                reordered: 1,
                stray: 1
            }
        );
        assert_eq!(c.sent, c.received + c.lost + c.late);
        assert_eq!(s.histogram().len(), 1);
    }

    #[test]
    fn warmup_records_are_ignored() {
        let mut s = Stats::new();
        s.record(&Record::sample(0, 0, 5, true));
        s.record(&Record::event(RecordKind::Lost, 1, 0, true));
        assert_eq!(*s.counters(), Counters::default());
        assert_eq!(s.histogram().len(), 0);
    }

    #[test]
    fn merge_adds_histograms_and_counters_and_clear_empties() {
        let mut a = Stats::new();
        let mut b = Stats::new();
        a.record(&sample(0, 1_000));
        b.record(&sample(0, 3_000));
        a.merge(&b);
        assert_eq!(a.counters().received, 2);
        assert_eq!(a.histogram().len(), 2);
        assert!(a.histogram().max() >= 2_990);
        a.clear();
        assert_eq!(a.histogram().len(), 0);
        assert_eq!(a.counters().sent, 0);
    }

    #[test]
    fn absurd_rtts_are_clamped_not_dropped() {
        let mut s = Stats::new();
        s.record(&sample(0, u64::MAX));
        assert_eq!(s.histogram().len(), 1);
    }
}
