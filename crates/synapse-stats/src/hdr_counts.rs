//! A histogram recorded in a few instructions: `hdrhistogram`'s exact
//! bucket layout (the same counts index for every value, for the same
//! bounds and significant digits, the lowest discernible value 1), whose record is a clamp, an index
//! computed from the value's leading zeros, and one increment.
//! `hdrhistogram`'s own record also checks bounds and tracks the minimum,
//! maximum and total (about 60 instructions, three times per sample on the
//! client's measurement thread); none of that is needed per value, since
//! its `min()`, `max()`, `len()` and `mean()` read the same whatever value
//! of a bucket was recorded. Whoever reads gets an `hdrhistogram::Histogram`
//! built from the counts (once, when first read after a change), so every
//! quantile, report and log reads what it read before. (With a lowest
//! discernible value of 1 the first index holds 0 alone, which
//! `hdrhistogram` leaves out of its minimum; with a coarser unit it would
//! share it with values that count, so that is the one layout offered.)

use hdrhistogram::{CreationError, Histogram};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Counts in `hdrhistogram`'s layout, and the `Histogram` they make.
#[derive(Debug, Clone)]
pub struct HdrCounts {
    /// One count per `hdrhistogram` counts index.
    counts: Box<[u64]>,
    /// The index of the highest trackable value: where a value past the
    /// counts goes (`saturating_record` clamps it to that value).
    top: usize,
    /// `hdrhistogram`'s `sub_bucket_mask`: maps small values to bucket 0.
    sub_bucket_mask: u64,
    /// `hdrhistogram`'s `leading_zero_count_base`.
    leading_zero_base: u32,
    /// log2 of half a bucket's sub-buckets.
    half_magnitude: u32,
    /// The highest trackable value and the significant digits, for the
    /// `Histogram` built from the counts.
    bounds: (u64, u8),
    /// The `Histogram` these counts make, once read (forgotten on a change).
    built: OnceLock<Histogram<u64>>,
    /// Whether `built` may hold one: a plain byte a record reads through
    /// `&mut` (the `OnceLock`'s own check was an out-of-line call for
    /// every value recorded).
    read: ReadFlag,
}

/// Set by every read of the counts, cleared by the first change after.
#[derive(Debug, Default)]
struct ReadFlag(AtomicBool);

impl Clone for ReadFlag {
    fn clone(&self) -> Self {
        Self(AtomicBool::new(self.0.load(Ordering::Relaxed)))
    }
}

impl HdrCounts {
    /// Empty counts in `Histogram::new_with_bounds(1, high, sigfig)`'s
    /// layout (its errors too). All memory is allocated here.
    pub fn new(high: u64, sigfig: u8) -> Result<Self, CreationError> {
        let empty = Histogram::<u64>::new_with_bounds(1, high, sigfig)?;
        // The same arithmetic as `Histogram::new_with_bounds`, with a unit
        // magnitude of 0 (log2 of the lowest discernible value, 1).
        let largest = 2 * 10_u32.pow(u32::from(sigfig));
        let count_magnitude = f64::from(largest).log2().ceil() as u32;
        let mut counts = Self {
            counts: vec![0; empty.distinct_values()].into_boxed_slice(),
            top: 0,
            sub_bucket_mask: (1_u64 << count_magnitude) - 1,
            leading_zero_base: 64 - count_magnitude,
            half_magnitude: count_magnitude - 1,
            bounds: (high, sigfig),
            // Not the empty histogram: the first record would free it, on
            // the measurement thread.
            built: OnceLock::new(),
            read: ReadFlag::default(),
        };
        counts.top = counts.index(high);
        Ok(counts)
    }

    /// `hdrhistogram`'s counts index of `v` (past the counts for a value
    /// above the highest trackable one, unless it shares its last bucket).
    #[inline(always)]
    fn index(&self, v: u64) -> usize {
        let bucket = self.leading_zero_base - (v | self.sub_bucket_mask).leading_zeros();
        // `(bucket + 1) << half − half + sub_bucket`, with the halves cancelled.
        ((bucket as usize) << self.half_magnitude) + (v >> bucket) as usize
    }

    /// The lowest value of counts index `i` (`hdrhistogram`'s `value_for`).
    fn value_at(&self, i: usize) -> u64 {
        let half = 1_usize << self.half_magnitude;
        let (bucket, sub_bucket) = match (i >> self.half_magnitude).checked_sub(1) {
            Some(bucket) => (bucket, (i & (half - 1)) + half),
            None => (0, i),
        };
        (sub_bucket as u64) << bucket
    }

    /// Counts `v` as `Histogram::saturating_record` does: a value past the
    /// counts as the highest trackable one. Always inlined: a call costs
    /// as much as the record.
    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        // Nothing is built mid-run: one byte tested, no call.
        if *self.read.0.get_mut() {
            self.forget_built();
        }
        let i = self.index(v);
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.counts[self.top] += 1,
        }
    }

    /// Adds `other`'s counts (`Histogram::add`); both have the same layout
    /// (the same bounds), else `other` is added value by value.
    pub fn add(&mut self, other: &HdrCounts) {
        if self.bounds == other.bounds {
            self.forget_built();
            for (a, b) in self.counts.iter_mut().zip(&other.counts) {
                *a += b;
            }
        } else {
            let mut h = self.histogram().clone();
            let _ = h.add(other.histogram());
            *self = Self::from_histogram(self.bounds, &h);
        }
    }

    /// Forgets every value.
    pub fn reset(&mut self) {
        self.forget_built();
        self.counts.fill(0);
    }

    /// A change: the `Histogram` built before no longer holds.
    #[cold]
    fn forget_built(&mut self) {
        *self.read.0.get_mut() = false;
        self.built.take();
    }

    /// The `Histogram` of these counts (built when first read after a
    /// change: allocates then).
    pub fn histogram(&self) -> &Histogram<u64> {
        self.read.0.store(true, Ordering::Relaxed);
        self.built.get_or_init(|| {
            let (high, sigfig) = self.bounds;
            #[allow(clippy::expect_used)]
            let mut h = Histogram::new_with_bounds(1, high, sigfig)
                .expect("the bounds were accepted in new");
            for (i, &c) in self.counts.iter().enumerate().filter(|(_, c)| **c != 0) {
                // The lowest value of an index lies within the counts.
                let _ = h.record_n(self.value_at(i), c);
            }
            h
        })
    }

    /// Counts of `bounds` holding `h`'s values (each at its bucket's
    /// lowest value).
    fn from_histogram(bounds: (u64, u8), h: &Histogram<u64>) -> Self {
        #[allow(clippy::expect_used)]
        let mut counts = Self::new(bounds.0, bounds.1).expect("the bounds were accepted before");
        for v in h.iter_recorded() {
            let i = counts.index(h.lowest_equivalent(v.value_iterated_to()));
            let i = if i < counts.counts.len() {
                i
            } else {
                counts.top
            };
            counts.counts[i] += v.count_at_value();
        }
        counts
    }

    /// Values counted (`Histogram::len`).
    pub fn len(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_TRACKABLE_NS;
    use proptest::prelude::*;

    /// Stats' RTT histogram, the jitter's, and three more layouts (wider,
    /// narrower, finer) to show the arithmetic is not tuned to the two in
    /// use.
    const BOUNDS: [(u64, u8); 5] = [
        (MAX_TRACKABLE_NS, 3),
        (MAX_TRACKABLE_NS, 2),
        (3_600_000_000_000_000, 2),
        (2_000, 1),
        (1 << 24, 4),
    ];
    const QUANTILES: [f64; 12] = [
        0.0, 0.000_1, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.999_9, 1.0,
    ];

    /// Values across the whole range: the smallest, log-uniform ones, those
    /// around each layout's top (within and past its counts), the largest.
    fn value() -> impl Strategy<Value = u64> {
        prop_oneof![
            0_u64..=3,
            (0_u32..64, any::<u64>()).prop_map(|(shift, v)| v >> shift),
            (0_usize..BOUNDS.len(), -5_000_i64..5_000)
                .prop_map(|(b, d)| BOUNDS[b].0.saturating_add_signed(d)),
            (0_usize..BOUNDS.len(), 1_u64..4).prop_map(|(b, m)| BOUNDS[b].0.saturating_mul(m)),
            u64::MAX - 3..=u64::MAX,
        ]
    }

    fn reference(bounds: (u64, u8), values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, bounds.0, bounds.1).unwrap();
        values.iter().for_each(|&v| h.saturating_record(v));
        h
    }

    fn counted(bounds: (u64, u8), values: &[u64]) -> HdrCounts {
        let mut c = HdrCounts::new(bounds.0, bounds.1).unwrap();
        values.iter().for_each(|&v| c.record(v));
        c
    }

    /// Every read `hdrhistogram` offers gives the same answer.
    fn assert_same(c: &HdrCounts, want: &Histogram<u64>, q: f64) {
        let got = c.histogram();
        // `==` compares the count at every index, the length, min and max
        // (not `assert_eq!`: a histogram's `Debug` is all its counts).
        assert!(got == want, "counts, length, min or max differ");
        assert_eq!(got.len(), want.len());
        assert_eq!((c.len(), c.is_empty()), (want.len(), want.is_empty()));
        assert_eq!(got.min(), want.min());
        assert_eq!(got.min_nz(), want.min_nz());
        assert_eq!(got.max(), want.max());
        assert_eq!(got.mean().to_bits(), want.mean().to_bits());
        assert_eq!(got.stdev().to_bits(), want.stdev().to_bits());
        for q in QUANTILES.into_iter().chain([q]) {
            assert_eq!(got.value_at_quantile(q), want.value_at_quantile(q), "{q}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn every_read_matches_hdrhistograms(
            b in 0_usize..BOUNDS.len(),
            values in prop::collection::vec(value(), 0..200),
            q in 0.0_f64..=1.0,
        ) {
            let bounds = BOUNDS[b];
            assert_same(&counted(bounds, &values), &reference(bounds, &values), q);
        }

        #[test]
        fn one_value_lands_on_hdrhistograms_index(b in 0_usize..BOUNDS.len(), v in value()) {
            let bounds = BOUNDS[b];
            assert_same(&counted(bounds, &[v]), &reference(bounds, &[v]), 0.5);
        }

        #[test]
        fn added_and_reset_counts_match_hdrhistograms(
            b in 0_usize..BOUNDS.len(),
            x in prop::collection::vec(value(), 0..100),
            y in prop::collection::vec(value(), 0..100),
            q in 0.0_f64..=1.0,
        ) {
            let bounds = BOUNDS[b];
            let mut got = counted(bounds, &x);
            // Read in between: the built histogram is forgotten on a change.
            let _ = got.histogram().len();
            got.add(&counted(bounds, &y));
            let mut want = reference(bounds, &x);
            want.add(reference(bounds, &y)).unwrap();
            assert_same(&got, &want, q);
            got.reset();
            want.reset();
            assert_same(&got, &want, q);
            got.record(x.first().copied().unwrap_or(7));
            want.saturating_record(x.first().copied().unwrap_or(7));
            assert_same(&got, &want, q);
        }
    }

    #[test]
    fn the_edges_of_every_layout_land_where_hdrhistograms_do() {
        for bounds in BOUNDS {
            let c = HdrCounts::new(bounds.0, bounds.1).unwrap();
            let last = c.value_at(c.counts.len() - 1);
            let edges = [0, 1, 2, 3, bounds.0, bounds.0 + 1, last, last + 1, u64::MAX];
            for v in edges {
                assert_same(&counted(bounds, &[v]), &reference(bounds, &[v]), 0.5);
            }
            assert_same(&counted(bounds, &edges), &reference(bounds, &edges), 0.5);
        }
    }

    #[test]
    fn counts_of_other_bounds_are_added_value_by_value() {
        let (a, b) = (BOUNDS[0], BOUNDS[1]);
        let mut got = counted(a, &[5, 1_000_000]);
        got.add(&counted(b, &[123_456]));
        let mut want = reference(a, &[5, 1_000_000]);
        want.add(reference(b, &[123_456])).unwrap();
        assert_same(&got, &want, 0.5);
    }

    #[test]
    fn bad_bounds_are_refused_as_hdrhistogram_refuses_them() {
        assert!(HdrCounts::new(1, 3).is_err());
        assert!(HdrCounts::new(10, 6).is_err());
    }
}
