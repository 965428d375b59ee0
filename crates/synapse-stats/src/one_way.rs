//! One-way delays from STAMP's four timestamps, and how far to trust them.
//!
//! Forward T2 − T1 reads the client's clock at one end and the reflector's
//! at the other; backward T4 − T3 the other way round. Each is the true
//! delay plus or minus the offset between the clocks, so they are only
//! delays when the clocks agree. The offset is estimated the NTP way,
//! `((T2 − T1) + (T3 − T4)) / 2`, from the fastest round trip (the least
//! queueing, so the least asymmetry), and its drift over the run by a
//! least-squares line through the fastest round trip of each stretch of
//! the run (queueing noise would swamp a line through every packet). The
//! figures are
//! marked untrusted, with the reason, unless the two ends share a clock or
//! both say they are synchronised and the offset is below the RTT.

use super::jitter::{Jitter, JitterFigures};
use super::{MAX_TRACKABLE_NS, Record};
use hdrhistogram::Histogram;
use serde::Serialize;

/// Delays of either sign: the clocks' offset can make one negative.
#[derive(Debug, Clone)]
struct SignedHistogram {
    negative: Histogram<u64>,
    positive: Histogram<u64>,
}

impl SignedHistogram {
    fn new() -> Self {
        #[allow(clippy::expect_used)]
        let h = || {
            Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 3)
                .expect("constant histogram bounds are valid")
        };
        Self {
            negative: h(),
            positive: h(),
        }
    }

    fn record(&mut self, v: i64) {
        let magnitude = v.unsigned_abs();
        if v < 0 {
            self.negative.saturating_record(magnitude);
        } else {
            self.positive.saturating_record(magnitude);
        }
    }

    fn len(&self) -> u64 {
        self.negative.len() + self.positive.len()
    }

    fn merge(&mut self, other: &SignedHistogram) {
        let _ = self.negative.add(&other.negative);
        let _ = self.positive.add(&other.positive);
    }

    /// The value at quantile `q` of the whole signed distribution.
    fn quantile(&self, q: f64) -> i64 {
        let (neg, total) = (self.negative.len(), self.len());
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total.max(1));
        if rank <= neg {
            // The rank-th smallest is the (neg − rank + 1)-th largest magnitude.
            let q_neg = (neg - rank + 1) as f64 / neg as f64;
            -(self.negative.value_at_quantile(q_neg) as i64)
        } else {
            let q_pos = (rank - neg) as f64 / self.positive.len() as f64;
            self.positive.value_at_quantile(q_pos) as i64
        }
    }

    fn min(&self) -> i64 {
        if self.negative.is_empty() {
            self.positive.min() as i64
        } else {
            -(self.negative.max() as i64)
        }
    }

    fn max(&self) -> i64 {
        if self.positive.is_empty() {
            -(self.negative.min() as i64)
        } else {
            self.positive.max() as i64
        }
    }
}

/// One direction's delays, ns, as the clocks read them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DelayFigures {
    /// Smallest.
    pub min: i64,
    /// 10th percentile.
    pub p10: i64,
    /// Median.
    pub p50: i64,
    /// 90th percentile.
    pub p90: i64,
    /// 99th percentile.
    pub p99: i64,
    /// Largest.
    pub max: i64,
    /// The direction's jitter (a constant clock offset cancels in it, so it
    /// holds whether or not the delays can be trusted).
    pub jitter: Option<JitterFigures>,
}

/// The one-way figures of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneWayFigures {
    /// Request: client to reflector.
    pub forward: DelayFigures,
    /// Reply: reflector to client.
    pub backward: DelayFigures,
    /// The reflector's clock minus the client's, from the fastest round
    /// trip, ns.
    pub clock_offset_ns: i64,
    /// How fast that offset changed over the run, in parts per million.
    pub clock_drift_ppm: f64,
    /// The delays can be taken as delays.
    pub trusted: bool,
    /// Why they cannot, when they cannot.
    pub untrusted_reason: Option<String>,
}

/// Accumulates one-way delays. Allocates once, in `new`.
#[derive(Debug, Clone)]
pub struct OneWay {
    same_clock: bool,
    client_synced: bool,
    forward: SignedHistogram,
    backward: SignedHistogram,
    forward_jitter: Jitter,
    backward_jitter: Jitter,
    /// (RTT, offset) of the fastest round trip.
    fastest: Option<(u64, i64)>,
    reflector_unsynced: u64,
    /// The fastest round trip of each stretch, for the drift.
    stretches: Stretches,
}

/// Stretches the run is cut into for the drift line.
const STRETCHES: usize = 32;

/// The fastest round trip of each of up to [`STRETCHES`] equal stretches of
/// the run: when they run out, neighbours merge and stretches double in
/// length, so any run fits in a fixed array.
#[derive(Debug, Clone, Copy)]
struct Stretches {
    t0: Option<u64>,
    width_ns: u64,
    /// (rtt, at_ns, offset) per stretch; `rtt == u64::MAX`: none yet.
    best: [(u64, u64, i64); STRETCHES],
}

impl Stretches {
    fn new() -> Self {
        Self {
            t0: None,
            width_ns: 100_000_000,
            best: [(u64::MAX, 0, 0); STRETCHES],
        }
    }

    fn add(&mut self, rtt: u64, at_ns: u64, offset: i64) {
        let t0 = *self.t0.get_or_insert(at_ns);
        let mut i = (at_ns.saturating_sub(t0) / self.width_ns) as usize;
        while i >= STRETCHES {
            for k in 0..STRETCHES / 2 {
                let (a, b) = (self.best[2 * k], self.best[2 * k + 1]);
                self.best[k] = if b.0 < a.0 { b } else { a };
            }
            self.best[STRETCHES / 2..].fill((u64::MAX, 0, 0));
            self.width_ns *= 2;
            i = (at_ns.saturating_sub(t0) / self.width_ns) as usize;
        }
        if rtt < self.best[i].0 {
            self.best[i] = (rtt, at_ns, offset);
        }
    }

    /// The slope of the offset over time, ns per second.
    fn drift(&self) -> f64 {
        let t0 = self.t0.unwrap_or(0);
        let points = self.best.iter().filter(|b| b.0 != u64::MAX);
        let (mut n, mut st, mut so, mut stt, mut sto) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(_, at, offset) in points {
            let (t, o) = (at.saturating_sub(t0) as f64 / 1e9, offset as f64);
            n += 1.0;
            st += t;
            so += o;
            stt += t * t;
            sto += t * o;
        }
        let d = n * stt - st * st;
        if n < 2.0 || d.abs() < f64::EPSILON {
            0.0
        } else {
            (n * sto - st * so) / d
        }
    }
}

impl OneWay {
    /// Empty. `same_clock`: the reflector runs on this host, so both ends
    /// read one clock. `client_synced`: this host's clock is synchronised
    /// (what its own STAMP error estimate says).
    pub fn new(same_clock: bool, client_synced: bool) -> Self {
        Self {
            same_clock,
            client_synced,
            forward: SignedHistogram::new(),
            backward: SignedHistogram::new(),
            forward_jitter: Jitter::new(),
            backward_jitter: Jitter::new(),
            fastest: None,
            reflector_unsynced: 0,
            stretches: Stretches::new(),
        }
    }

    /// (same clock, client synchronised).
    pub fn setup(&self) -> (bool, bool) {
        (self.same_clock, self.client_synced)
    }

    /// The same setup, with nothing recorded.
    pub fn emptied(&self) -> Self {
        Self::new(self.same_clock, self.client_synced)
    }

    /// Accounts for one sample's far side, if it has one.
    #[inline]
    pub fn record(&mut self, r: &Record) {
        let (Some(fwd), Some(bwd)) = (r.far.forward_ns(), r.far.backward_ns()) else {
            return;
        };
        self.forward.record(fwd);
        self.backward.record(bwd);
        self.forward_jitter.add(fwd);
        self.backward_jitter.add(bwd);
        self.reflector_unsynced += u64::from(!r.far.reflector_synced());
        let offset = ((i128::from(fwd) - i128::from(bwd)) / 2) as i64;
        if self.fastest.is_none_or(|(rtt, _)| r.rtt_ns < rtt) {
            self.fastest = Some((r.rtt_ns, offset));
        }
        self.stretches.add(r.rtt_ns, r.at_ns, offset);
    }

    /// Adds a later run's delays (the drift line is this run's).
    pub fn merge(&mut self, other: &OneWay) {
        self.forward.merge(&other.forward);
        self.backward.merge(&other.backward);
        self.forward_jitter.merge(&other.forward_jitter);
        self.backward_jitter.merge(&other.backward_jitter);
        self.reflector_unsynced += other.reflector_unsynced;
        if let Some((rtt, o)) = other.fastest
            && self.fastest.is_none_or(|(mine, _)| rtt < mine)
        {
            self.fastest = Some((rtt, o));
        }
    }

    /// The figures, with `rtt_p50` (ns) to judge the offset by.
    pub fn figures(&self, rtt_p50: u64) -> Option<OneWayFigures> {
        let (_, offset) = self.fastest?;
        let reason = if self.same_clock {
            None
        } else if !self.client_synced {
            Some("this host's clock is not synchronised (its STAMP error estimate says S=0)".into())
        } else if self.reflector_unsynced > 0 {
            Some(format!(
                "the reflector's clock is not synchronised (S=0 in {} replies)",
                self.reflector_unsynced
            ))
        } else if offset.unsigned_abs() > rtt_p50 {
            Some(format!(
                "the clocks are {} µs apart, more than the round trip",
                offset / 1_000
            ))
        } else {
            None
        };
        let figures = |h: &SignedHistogram, j: &Jitter| DelayFigures {
            min: h.min(),
            p10: h.quantile(0.1),
            p50: h.quantile(0.5),
            p90: h.quantile(0.9),
            p99: h.quantile(0.99),
            max: h.max(),
            jitter: j.figures(),
        };
        Some(OneWayFigures {
            forward: figures(&self.forward, &self.forward_jitter),
            backward: figures(&self.backward, &self.backward_jitter),
            clock_offset_ns: offset,
            clock_drift_ppm: self.stretches.drift() / 1_000.0,
            trusted: reason.is_none(),
            untrusted_reason: reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FarSide;

    fn sample(at_ns: u64, rtt: u64, fwd: i64, bwd: i64, synced: bool) -> Record {
        Record::sample(0, at_ns, rtt, false).with_far(FarSide::new(fwd, bwd, 0, synced))
    }

    #[test]
    fn offset_comes_from_the_fastest_round_trip_and_drift_from_the_line() {
        let mut w = OneWay::new(false, true);
        // The reflector's clock runs 2 ms ahead and gains 10 µs per second
        // (10 ppm); delays are 50 µs each way, but every third packet is
        // queued for up to 300 µs on its way out, which skews its estimate.
        for i in 0..1_000u64 {
            let offset = 2_000_000 + (i as i64) * 100;
            let extra = if i % 3 == 0 {
                (i as i64 * 7_919) % 300_000
            } else {
                0
            };
            let (fwd, bwd) = (50_000 + offset + extra, 50_000 - offset);
            w.record(&sample(
                i * 10_000_000,
                100_000 + extra as u64,
                fwd,
                bwd,
                true,
            ));
        }
        let f = w.figures(100_000).unwrap();
        assert_eq!(f.clock_offset_ns, 2_000_000, "the first fastest one");
        assert!(
            (f.clock_drift_ppm - 10.0).abs() < 0.1,
            "{}",
            f.clock_drift_ppm
        );
        assert!(!f.trusted, "2 ms apart is more than a 100 µs round trip");
        assert!(f.untrusted_reason.unwrap().contains("2000 µs apart"));
        assert!(
            f.backward.p50 < 0,
            "backward reads negative: {:?}",
            f.backward
        );
        assert!(f.forward.p50 > 2_000_000);
    }

    #[test]
    fn trust_needs_one_clock_or_two_synchronised_ones() {
        let r = sample(0, 100_000, 40_000, 60_000, false);
        let mut same = OneWay::new(true, false);
        same.record(&r);
        let f = same.figures(100_000).unwrap();
        assert!(f.trusted, "{f:?}");
        // Three significant digits.
        assert!(f.forward.p50.abs_diff(40_000) <= 40 && f.backward.p50.abs_diff(60_000) <= 60);
        let mut unsynced = OneWay::new(false, false);
        unsynced.record(&r);
        assert!(
            unsynced
                .figures(100_000)
                .unwrap()
                .untrusted_reason
                .unwrap()
                .contains("this host")
        );
        let mut far_unsynced = OneWay::new(false, true);
        far_unsynced.record(&r);
        let why = far_unsynced
            .figures(100_000)
            .unwrap()
            .untrusted_reason
            .unwrap();
        assert!(why.contains("reflector"), "{why}");
        let mut both = OneWay::new(false, true);
        both.record(&sample(0, 100_000, 40_000, 60_000, true));
        assert!(both.figures(100_000).unwrap().trusted);
    }

    #[test]
    fn signed_quantiles_span_zero() {
        let mut h = SignedHistogram::new();
        for v in [-300i64, -200, -100, 100, 200] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.2), -300);
        assert_eq!(h.quantile(0.5), -100);
        assert_eq!(h.quantile(0.8), 100);
        assert_eq!(h.quantile(1.0), 200);
        assert_eq!((h.min(), h.max()), (-300, 200));
    }

    #[test]
    fn echo_samples_are_ignored() {
        let mut w = OneWay::new(true, true);
        w.record(&Record::sample(0, 0, 5, false));
        assert_eq!(w.figures(5), None);
    }
}
