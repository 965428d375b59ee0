//! One-way delays from STAMP's four timestamps, the clocks' offset and
//! drift read from the same stamps, and how far the delays can be trusted.
//!
//! Each delay is taken between two sets of cut points (see
//! [`FarSide`](super::FarSide)): the *kernel's* (T1 and T4 the kernel's or
//! NIC's stamps here, T2 and T3 the reflector's, its measured send time
//! when Follow-Up carries it) and the *application's* (T1 just before the
//! send call, T4 just after the receive). Forward T2 − T1 reads the
//! client's clock at one end and the reflector's at the other, backward
//! T4 − T3 the other way round, so each is the true delay give or take
//! the clocks' error. That error travels with the stamps: each end's STAMP
//! error estimate (its S bit and its maximum error). A direction's delays
//! are *trusted* when both ends share one clock, or when both are
//! synchronised and the sum of their errors is at most a tenth of the
//! direction's median delay ([`TRUST_RATIO`]), and their measured offset
//! does not contradict that sum. Otherwise they are not figures at all.
//!
//! The offset, its bound and its drift come from the kernel cut points
//! when the run has them (the tightest), else the application's; see
//! `clock_offset.rs`.

use super::Record;
use super::clock_offset::{OffsetFigures, OffsetTrack};
use super::jitter::{Jitter, JitterFigures};
use super::signed_histogram::SignedHistogram;
use serde::Serialize;

/// A direction's delays are trusted when the clocks' summed error is at
/// most this share of its median delay.
pub const TRUST_RATIO: f64 = 0.1;

/// One direction's delays, ns, as the clocks read them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DelayFigures {
    /// Replies with this direction's delay.
    pub samples: u64,
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
    /// The delays are delays: within ± `error_bound_ns` of the truth, a
    /// bound at most [`TRUST_RATIO`] of the median.
    pub trusted: bool,
    /// The direction's jitter (a constant clock offset cancels in it, so it
    /// holds whether or not the delays can be trusted).
    pub jitter: Option<JitterFigures>,
}

/// Both directions between one set of cut points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CutPointFigures {
    /// Request: client to reflector (T2 − T1).
    pub forward: DelayFigures,
    /// Reply: reflector to client (T4 − T3).
    pub backward: DelayFigures,
    /// The clocks' offset read from these stamps.
    pub clocks: Option<OffsetFigures>,
}

/// The clocks' errors as their STAMP estimates said over the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ClockErrors {
    /// Replies counted.
    pub replies: u64,
    /// Of those, the reflector said it was not synchronised (S = 0).
    pub reflector_unsynchronized: u64,
    /// Of those, this host was not when the request left.
    pub client_unsynchronized: u64,
    /// The largest error the reflector claimed while synchronised, ns.
    pub reflector_max_ns: u64,
    /// The largest error this host claimed while synchronised, ns.
    pub client_max_ns: u64,
}

impl ClockErrors {
    fn record(&mut self, r: Option<u64>, c: Option<u64>) {
        self.replies += 1;
        match r {
            Some(ns) => self.reflector_max_ns = self.reflector_max_ns.max(ns),
            None => self.reflector_unsynchronized += 1,
        }
        match c {
            Some(ns) => self.client_max_ns = self.client_max_ns.max(ns),
            None => self.client_unsynchronized += 1,
        }
    }

    fn merge(&mut self, o: &ClockErrors) {
        self.replies += o.replies;
        self.reflector_unsynchronized += o.reflector_unsynchronized;
        self.client_unsynchronized += o.client_unsynchronized;
        self.reflector_max_ns = self.reflector_max_ns.max(o.reflector_max_ns);
        self.client_max_ns = self.client_max_ns.max(o.client_max_ns);
    }

    /// Client error + reflector error, the largest either claimed: what a
    /// one-way delay can be off by (`None`: an end was not synchronised).
    pub fn bound_ns(&self) -> Option<u64> {
        (self.replies > 0 && self.reflector_unsynchronized == 0 && self.client_unsynchronized == 0)
            .then(|| self.reflector_max_ns + self.client_max_ns)
    }
}

/// The one-way figures of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneWayFigures {
    /// Between the kernel (or NIC) cut points (`None`: the run has no
    /// kernel stamps, or none came with a reply).
    pub kernel: Option<CutPointFigures>,
    /// Between the application cut points.
    pub application: CutPointFigures,
    /// Both ends read one clock (the reflector runs on this host).
    pub same_clock: bool,
    /// Each end's error as its STAMP estimates said.
    pub clock_errors: ClockErrors,
    /// What a delay can be off by: 0 on one clock, else client error +
    /// reflector error (`None`: not bounded, an end is unsynchronised).
    pub error_bound_ns: Option<u64>,
    /// Why the delays are not (all) trusted, when they are not.
    pub untrusted_reason: Option<String>,
}

impl OneWayFigures {
    /// The cut points the offset is read from: the kernel's when there
    /// are, else the application's.
    pub fn best(&self) -> &CutPointFigures {
        self.kernel.as_ref().unwrap_or(&self.application)
    }
}

/// One direction between one set of cut points.
#[derive(Debug, Clone)]
struct Leg {
    delays: SignedHistogram,
    jitter: Jitter,
}

impl Leg {
    fn new() -> Self {
        Self {
            delays: SignedHistogram::new(),
            jitter: Jitter::new(),
        }
    }

    fn record(&mut self, seq: u64, ns: i64) {
        self.delays.record(ns);
        self.jitter.add(seq, ns);
    }

    fn merge(&mut self, o: &Leg) {
        self.delays.merge(&o.delays);
        self.jitter.merge(&o.jitter);
    }

    fn figures(&self, trusted: bool) -> DelayFigures {
        let h = &self.delays;
        DelayFigures {
            samples: h.len(),
            min: h.min(),
            p10: h.quantile(0.1),
            p50: h.quantile(0.5),
            p90: h.quantile(0.9),
            p99: h.quantile(0.99),
            max: h.max(),
            trusted,
            jitter: self.jitter.figures(),
        }
    }
}

/// Both directions between one set of cut points, and the offset.
#[derive(Debug, Clone)]
struct CutPoints {
    forward: Leg,
    backward: Leg,
    clocks: OffsetTrack,
}

impl CutPoints {
    fn new() -> Self {
        Self {
            forward: Leg::new(),
            backward: Leg::new(),
            clocks: OffsetTrack::default(),
        }
    }

    #[inline]
    fn record(&mut self, r: &Record, (fwd, bwd): (i64, i64)) {
        self.forward.record(r.seq, fwd);
        self.backward.record(r.seq, bwd);
        self.clocks.add(r.at_ns, fwd, bwd);
    }

    fn merge(&mut self, o: &CutPoints) {
        self.forward.merge(&o.forward);
        self.backward.merge(&o.backward);
        self.clocks.merge(&o.clocks);
    }

    fn figures(&self, trust: impl Fn(i64) -> bool) -> Option<CutPointFigures> {
        (!self.forward.delays.is_empty()).then(|| {
            let (f, b) = (&self.forward.delays, &self.backward.delays);
            CutPointFigures {
                forward: self.forward.figures(trust(f.quantile(0.5))),
                backward: self.backward.figures(trust(b.quantile(0.5))),
                clocks: self.clocks.figures(),
            }
        })
    }
}

/// Accumulates one-way delays. Allocates once, in `new`.
#[derive(Debug, Clone)]
pub struct OneWay {
    same_clock: bool,
    kernel: CutPoints,
    application: CutPoints,
    errors: ClockErrors,
}

impl OneWay {
    /// Empty. `same_clock`: the reflector runs on this host, so both ends
    /// read one clock.
    pub fn new(same_clock: bool) -> Self {
        Self {
            same_clock,
            kernel: CutPoints::new(),
            application: CutPoints::new(),
            errors: ClockErrors::default(),
        }
    }

    /// Whether both ends read one clock.
    pub fn setup(&self) -> bool {
        self.same_clock
    }

    /// The same setup, with nothing recorded.
    pub fn emptied(&self) -> Self {
        Self::new(self.same_clock)
    }

    /// Accounts for one sample's far side, if it has one.
    #[inline]
    pub fn record(&mut self, r: &Record) {
        let Some(app) = r.far.application() else {
            return;
        };
        self.application.record(r, app);
        if let Some(kernel) = r.far.kernel() {
            self.kernel.record(r, kernel);
        }
        self.errors
            .record(r.far.reflector_error_ns(), r.far.client_error_ns());
    }

    /// Adds a later run's delays (the offset's track is this run's).
    pub fn merge(&mut self, other: &OneWay) {
        self.kernel.merge(&other.kernel);
        self.application.merge(&other.application);
        self.errors.merge(&other.errors);
    }

    /// The figures, once a reply had the reflector's stamps.
    pub fn figures(&self) -> Option<OneWayFigures> {
        let bound = if self.same_clock {
            Some(0)
        } else {
            self.errors.bound_ns()
        };
        let offset_contradicts = self.contradiction(bound);
        let trust = |median: i64| {
            offset_contradicts.is_none()
                && bound.is_some_and(|e| e as f64 <= TRUST_RATIO * median as f64)
        };
        let application = self.application.figures(trust)?;
        let kernel = self.kernel.figures(trust);
        let best = kernel.as_ref().unwrap_or(&application);
        let reason = offset_contradicts.or_else(|| self.reason(bound, best));
        Some(OneWayFigures {
            kernel,
            application,
            same_clock: self.same_clock,
            clock_errors: self.errors,
            error_bound_ns: bound,
            untrusted_reason: reason,
        })
    }

    /// The measured offset beyond what the clocks' errors allow: their
    /// claims are wrong.
    fn contradiction(&self, bound: Option<u64>) -> Option<String> {
        let track = if !self.kernel.forward.delays.is_empty() {
            &self.kernel.clocks
        } else {
            &self.application.clocks
        };
        let o = track.figures()?;
        let e = bound?;
        (o.offset_ns.unsigned_abs() > e + o.bound_ns).then(|| {
            format!(
                "the clocks read {} µs apart (± {} µs), more than the {} µs their error estimates allow",
                o.offset_ns / 1_000,
                o.bound_ns / 1_000,
                e / 1_000
            )
        })
    }

    /// Why a direction is not trusted, when one is not.
    fn reason(&self, bound: Option<u64>, best: &CutPointFigures) -> Option<String> {
        let e = &self.errors;
        let Some(b) = bound else {
            return Some(
                match (e.client_unsynchronized, e.reflector_unsynchronized) {
                    (0, n) => {
                        format!("the reflector's clock is not synchronised (S=0 in {n} replies)")
                    }
                    (n, 0) => format!(
                        "this host's clock is not synchronised (S=0 in {n} of its requests)"
                    ),
                    _ => "neither clock is synchronised (S=0 from both ends)".into(),
                },
            );
        };
        (!best.forward.trusted || !best.backward.trusted).then(|| {
            format!(
                "the clocks' error (± {} µs: this host's {} + the reflector's {}) is more than {:.0} % of the delay",
                b as f64 / 1e3,
                e.client_max_ns as f64 / 1e3,
                e.reflector_max_ns as f64 / 1e3,
                TRUST_RATIO * 100.0
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FarSide;

    const MS: u64 = 1_000_000;

    /// A reply at `at` with these delays between both sets of cut points
    /// (the application's 10 µs wider each way), and each end's error.
    fn sample(at: u64, fwd: i64, bwd: i64, errors: (Option<f64>, Option<f64>)) -> Record {
        let far = FarSide::new(0)
            .with_application(Some(fwd + 10_000), Some(bwd + 10_000))
            .with_kernel(Some(fwd), Some(bwd))
            .with_errors(errors.0, errors.1);
        Record::sample(at / MS, at, (fwd + bwd) as u64 + 20_000, false).with_far(far)
    }

    #[test]
    fn one_clock_is_trusted_and_the_offset_holds_zero() {
        let mut w = OneWay::new(true);
        for i in 0..200 {
            let q = (i * 37 % 500) as i64;
            w.record(&sample(i * MS, 5_000 + q, 5_200, (None, None)));
        }
        let f = w.figures().unwrap();
        assert_eq!(f.error_bound_ns, Some(0));
        let k = f.kernel.as_ref().unwrap();
        assert!(k.forward.trusted && k.backward.trusted, "{f:?}");
        assert_eq!(f.untrusted_reason, None);
        let o = k.clocks.as_ref().unwrap();
        assert!(o.offset_ns.unsigned_abs() <= o.bound_ns, "{o:?}");
        assert!(
            f.application.forward.p50 > k.forward.p50,
            "wider cut points"
        );
    }

    #[test]
    fn trust_needs_errors_small_against_the_delay() {
        let synced = |us: f64| Some(us * 1e3);
        // 1 µs + 2 µs against 50 µs delays: within a tenth.
        let mut w = OneWay::new(false);
        w.record(&sample(0, 50_000, 50_000, (synced(1.0), synced(2.0))));
        let f = w.figures().unwrap();
        assert_eq!(f.error_bound_ns, Some(3_000));
        assert!(f.best().forward.trusted, "{f:?}");
        // An NTP clock's milliseconds against the same delays: not.
        let mut ntp = OneWay::new(false);
        ntp.record(&sample(
            0,
            50_000,
            50_000,
            (synced(4_000.0), synced(1_000.0)),
        ));
        let f = ntp.figures().unwrap();
        assert!(!f.best().forward.trusted && !f.best().backward.trusted);
        let why = f.untrusted_reason.unwrap();
        assert!(why.contains("5000 µs") && why.contains("10 %"), "{why}");
        // Unsynchronised: no bound at all.
        let mut un = OneWay::new(false);
        un.record(&sample(0, 50_000, 50_000, (None, synced(1.0))));
        let f = un.figures().unwrap();
        assert_eq!(f.error_bound_ns, None);
        assert!(f.untrusted_reason.unwrap().contains("reflector"));
    }

    #[test]
    fn an_offset_beyond_the_claimed_errors_is_a_contradiction() {
        let mut w = OneWay::new(false);
        // Both claim 1 µs, but the reflector reads 2 ms ahead.
        let e = (Some(1_000.0), Some(1_000.0));
        w.record(&sample(0, 2_050_000, -1_950_000, e));
        let f = w.figures().unwrap();
        assert!(!f.best().forward.trusted);
        assert!(f.untrusted_reason.unwrap().contains("2000 µs apart"));
    }

    #[test]
    fn echo_samples_are_ignored() {
        let mut w = OneWay::new(true);
        w.record(&Record::sample(0, 0, 5, false));
        assert_eq!(w.figures(), None);
    }
}
