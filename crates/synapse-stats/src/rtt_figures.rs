//! The figures a histogram of round trips reduces to.

use hdrhistogram::Histogram;
use serde::Serialize;

/// RTT figures in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RttFigures {
    /// Fastest reply.
    pub min: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// 10th percentile.
    pub p10: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// Slowest reply.
    pub max: u64,
}

impl RttFigures {
    /// The figures of a histogram of nanoseconds; `None` when it is empty.
    pub fn of(h: &Histogram<u64>) -> Option<Self> {
        (!h.is_empty()).then(|| Self {
            min: h.min(),
            mean: h.mean(),
            stddev: h.stdev(),
            p10: h.value_at_quantile(0.1),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
        })
    }
}
