//! A multicast run's fan-out: how far apart the answers to one request
//! came, beyond what each responder's own figures say.
//!
//! - The reply spread: per request answered by two responders or more,
//!   its slowest answer's round trip less its fastest's. It holds both
//!   ways (the request's fan-out and the answers' way back), and needs no
//!   clock but this host's.
//! - The delivery skew (STAMP): per such request, the latest of the
//!   responders' receive stamps (T2) less the earliest: how far apart the
//!   request reached them, the fan-out a market-data consumer cares
//!   about. The stamps are each responder's own clock, so a request's
//!   skew is kept only when every one of them says its clock is
//!   synchronised, with the largest error two of them claim together;
//!   otherwise it is counted as not measurable, never shown.

use super::MAX_TRACKABLE_NS;
use super::hdr_counts::HdrCounts;
use hdrhistogram::Histogram;

/// The spread and skew of a multicast run's requests.
#[derive(Debug, Clone)]
pub struct FanOut {
    spread: HdrCounts,
    skew: HdrCounts,
    /// The largest error two responders' clocks claimed together in any
    /// skew kept, ns.
    skew_error_ns: u64,
    /// Requests with two answers or more whose skew could not be had:
    /// some responder's clock is not synchronised, or it gave no T2.
    skew_unmeasurable: u64,
}

impl Default for FanOut {
    fn default() -> Self {
        Self::new()
    }
}

impl FanOut {
    /// Empty; all memory allocated here.
    pub fn new() -> Self {
        #[allow(clippy::expect_used)]
        let counts = || HdrCounts::new(MAX_TRACKABLE_NS, 3).expect("constant bounds are valid");
        Self {
            spread: counts(),
            skew: counts(),
            skew_error_ns: 0,
            skew_unmeasurable: 0,
        }
    }

    /// One request's answers came `spread_ns` apart (slowest less fastest
    /// round trip).
    #[inline]
    pub fn spread(&mut self, spread_ns: u64) {
        self.spread.record(spread_ns);
    }

    /// One request reached its responders `skew_ns` apart, by stamps whose
    /// clocks claim together at most `error_ns`; `None`: not measurable.
    #[inline]
    pub fn skew(&mut self, skew: Option<(u64, u64)>) {
        match skew {
            Some((skew_ns, error_ns)) => {
                self.skew.record(skew_ns);
                self.skew_error_ns = self.skew_error_ns.max(error_ns);
            }
            None => self.skew_unmeasurable += 1,
        }
    }

    /// The reply spreads (ns).
    pub fn spreads(&self) -> &Histogram<u64> {
        self.spread.histogram()
    }

    /// The delivery skews kept (ns), and the largest clock error they
    /// carry; `None` when none could be kept.
    pub fn skews(&self) -> Option<(&Histogram<u64>, u64)> {
        (!self.skew.is_empty()).then(|| (self.skew.histogram(), self.skew_error_ns))
    }

    /// Requests whose skew could not be had.
    pub fn skew_unmeasurable(&self) -> u64 {
        self.skew_unmeasurable
    }

    /// Adds another run's.
    pub fn merge(&mut self, other: &FanOut) {
        self.spread.add(&other.spread);
        self.skew.add(&other.skew);
        self.skew_error_ns = self.skew_error_ns.max(other.skew_error_ns);
        self.skew_unmeasurable += other.skew_unmeasurable;
    }
}

/// The delivery skew of one request from its answers' receive stamps and
/// each one's claimed clock error (`None`: not synchronised): the latest
/// less the earliest, and the sum of the two largest errors; `None` when
/// fewer than two answers, or one without a stamp or a bound.
pub fn skew_of(stamps: impl Iterator<Item = (Option<u64>, Option<u64>)>) -> Option<(u64, u64)> {
    let (mut lo, mut hi, mut n) = (u64::MAX, 0u64, 0u32);
    let mut errors = [0u64; 2];
    for (t2, error) in stamps {
        let (t2, error) = (t2?, error?);
        lo = lo.min(t2);
        hi = hi.max(t2);
        n += 1;
        if error > errors[0] {
            errors = [error, errors[0]];
        } else if error > errors[1] {
            errors[1] = error;
        }
    }
    (n >= 2).then(|| (hi - lo, errors[0] + errors[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_needs_two_stamped_synchronised_answers() {
        let ok = [
            (Some(1_000), Some(50)),
            (Some(1_700), Some(80)),
            (Some(1_200), Some(10)),
        ];
        assert_eq!(skew_of(ok.into_iter()), Some((700, 130)));
        let one = [(Some(1_000), Some(50))];
        assert_eq!(skew_of(one.into_iter()), None);
        let unsynced = [(Some(1_000), Some(50)), (Some(1_700), None)];
        assert_eq!(skew_of(unsynced.into_iter()), None);
        let unstamped = [(Some(1_000), Some(50)), (None, Some(5))];
        assert_eq!(skew_of(unstamped.into_iter()), None);
    }

    #[test]
    fn spreads_and_skews_are_kept_and_merged() {
        let mut a = FanOut::new();
        a.spread(2_000);
        a.skew(Some((500, 100)));
        a.skew(None);
        let mut b = FanOut::new();
        b.spread(4_000);
        b.skew(Some((900, 300)));
        a.merge(&b);
        assert_eq!(a.spreads().len(), 2);
        let (skews, error) = a.skews().unwrap();
        assert_eq!((skews.len(), error), (2, 300));
        assert_eq!(a.skew_unmeasurable(), 1);
        assert!(FanOut::new().skews().is_none());
    }
}
