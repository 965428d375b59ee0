//! The clocks between this host and each STAMP peer, beside the per-probe
//! families in [`super::metrics`]: each reply's one-way delays, the
//! clocks' offset with its bound (RFC 5905 §8) from the tightest of the
//! last [`OFFSET_REPLIES`] exchanges, and each end's clock error and sync
//! as its STAMP error estimate said. A fleet sees which hosts' clocks are
//! off, and which one-way delays its clocks can vouch for
//! (`assets/prometheus`: a recording rule keeps only those, an alert
//! fires on an unsynchronised reflector).
//!
//! Delays are between the kernel's cut points where the reply had them,
//! else the application's (`synapse_stats::FarSide`); a histogram holds
//! no negative value, so a delay that reads below zero (the clocks'
//! offset) is observed as 0.

use super::pair::Pair;
use super::register::register;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use synapse_stats::FarSide;

type FloatGauge = Gauge<f64, AtomicU64>;

/// Replies the offset's tightest exchange is taken over.
pub const OFFSET_REPLIES: u32 = 100;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Direction {
    #[prometheus(flatten)]
    pair: Pair,
    /// `forward` (request) or `backward` (reply).
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct End {
    #[prometheus(flatten)]
    pair: Pair,
    /// `source` (this host) or `peer` (the reflector).
    end: &'static str,
}

const DIRECTIONS: [&str; 2] = ["forward", "backward"];
const ENDS: [&str; 2] = ["source", "peer"];

/// The families, registered once.
#[derive(Debug, Clone)]
pub struct ClockMetrics {
    delay: Family<Direction, Histogram, fn() -> Histogram>,
    offset: Family<Pair, FloatGauge>,
    bound: Family<Pair, FloatGauge>,
    error: Family<End, FloatGauge>,
    synchronized: Family<End, Gauge>,
}

/// One peer's tightest exchange since the offset was last published.
#[derive(Debug, Clone, Copy, Default)]
pub struct OffsetWindow {
    replies: u32,
    /// (half the round trip less the dwell, offset), ns.
    best: Option<(u64, i64)>,
}

impl ClockMetrics {
    /// Registers the families in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self {
            delay: Family::new_with_constructor(super::buckets::histogram),
            offset: Family::default(),
            bound: Family::default(),
            error: Family::default(),
            synchronized: Family::default(),
        };
        register!(registry, seconds:
            "synapse_one_way_delay", "One-way delay per reply (STAMP; kernel cut points where there are; below 0 observed as 0): a figure only within synapse_clock_error_seconds of both ends" => m.delay;
            "synapse_clock_offset", "The peer's clock minus this host's, from the tightest of the last 100 STAMP exchanges (RFC 5905)" => m.offset;
            "synapse_clock_offset_bound", "synapse_clock_offset is right within ± this: half that exchange's round trip less the reflector's dwell" => m.bound;
            "synapse_clock_error", "Each end's clock error as its STAMP error estimate said on the latest reply (+Inf: not synchronised)" => m.error;
        );
        register!(registry,
            "synapse_clock_synchronized", "Each end's STAMP S bit on the latest reply: 1 when its clock is synchronised" => m.synchronized;
        );
        m
    }

    /// One STAMP reply's far side, for peer `pair`.
    pub fn record(&self, pair: &Pair, w: &mut OffsetWindow, far: &FarSide) {
        let Some((fwd, bwd)) = far.kernel().or(far.application()) else {
            return;
        };
        for (direction, ns) in DIRECTIONS.into_iter().zip([fwd, bwd]) {
            let d = Direction {
                pair: pair.clone(),
                direction,
            };
            self.delay.get_or_create(&d).observe(ns.max(0) as f64 / 1e9);
        }
        for (end, err) in ENDS
            .into_iter()
            .zip([far.client_error_ns(), far.reflector_error_ns()])
        {
            let e = End {
                pair: pair.clone(),
                end,
            };
            self.error
                .get_or_create(&e)
                .set(err.map_or(f64::INFINITY, |ns| ns as f64 / 1e9));
            self.synchronized
                .get_or_create(&e)
                .set(i64::from(err.is_some()));
        }
        if let Ok(delta) = u64::try_from(i128::from(fwd) + i128::from(bwd)) {
            let reading = (
                delta.div_ceil(2),
                ((i128::from(fwd) - i128::from(bwd)) / 2) as i64,
            );
            if w.best.is_none_or(|(half, _)| reading.0 < half) {
                w.best = Some(reading);
            }
        }
        w.replies += 1;
        if w.replies >= OFFSET_REPLIES
            && let Some((half, theta)) = w.best.take()
        {
            self.offset.get_or_create(pair).set(theta as f64 / 1e9);
            self.bound.get_or_create(pair).set(half as f64 / 1e9);
            w.replies = 0;
        }
    }

    /// Removes a gone peer's series.
    pub fn forget(&self, pair: &Pair) {
        for direction in DIRECTIONS {
            self.delay.remove(&Direction {
                pair: pair.clone(),
                direction,
            });
        }
        for end in ENDS {
            let e = End {
                pair: pair.clone(),
                end,
            };
            self.error.remove(&e);
            self.synchronized.remove(&e);
        }
        self.offset.remove(pair);
        self.bound.remove(pair);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> Pair {
        Pair {
            source: "a".into(),
            peer: "b".into(),
            transport: "udp",
            topo: Vec::new(),
        }
    }

    fn text(r: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, r).unwrap();
        out
    }

    #[test]
    fn each_reply_gives_its_delays_and_errors_and_a_hundred_the_offset() {
        let mut r = Registry::default();
        let m = ClockMetrics::new(&mut r);
        let mut w = OffsetWindow::default();
        for i in 0..OFFSET_REPLIES {
            // The peer 2 ms ahead; 50 µs each way, the 40th exchange not
            // queued, the others 30 µs on the way out.
            let q = if i == 40 { 0 } else { 30_000 };
            let far = FarSide::new(i)
                .with_kernel(Some(50_000 + 2_000_000 + q), Some(50_000 - 2_000_000))
                .with_errors(None, Some(1_500.0));
            m.record(&pair(), &mut w, &far);
        }
        let t = text(&r);
        let has = |line: &str| t.lines().any(|l| l == line);
        for line in [
            r#"synapse_clock_offset_seconds{source="a",peer="b",transport="udp"} 0.002"#,
            r#"synapse_clock_offset_bound_seconds{source="a",peer="b",transport="udp"} 0.00005"#,
            r#"synapse_clock_synchronized{source="a",peer="b",transport="udp",end="peer"} 0"#,
            // prometheus-client writes +Inf as `inf`; Prometheus reads it
            // with Go's ParseFloat, which takes both spellings.
            r#"synapse_clock_error_seconds{source="a",peer="b",transport="udp",end="peer"} inf"#,
            r#"synapse_clock_error_seconds{source="a",peer="b",transport="udp",end="source"} 0.0000015"#,
            r#"synapse_one_way_delay_seconds_count{source="a",peer="b",transport="udp",direction="backward"} 100"#,
            // The backward delay reads −1.95 ms (the offset): observed as 0.
            r#"synapse_one_way_delay_seconds_sum{source="a",peer="b",transport="udp",direction="backward"} 0.0"#,
        ] {
            assert!(has(line), "{line} missing from:\n{t}");
        }
        m.forget(&pair());
        assert!(!text(&r).contains("peer=\"b\""), "gone");
    }
}
