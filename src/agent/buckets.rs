//! The buckets every agent histogram has: classic and native at once
//! (`prometheus-client` 0.25), so a text scrape gets the fixed buckets and
//! a protobuf scrape the sparse ones as well. Base unit seconds.

use prometheus_client::metrics::histogram::{Histogram, NativeHistogramConfig};

/// The classic buckets' upper bounds, seconds: six per decade from 10 µs
/// to 1 ms (where a host pair's RTT lives), three per decade elsewhere,
/// 1 µs to 1 s. Each costs a line per series in every text scrape.
pub const CLASSIC_BUCKETS: [f64; 25] = [
    1e-6, 2e-6, 5e-6, 10e-6, 15e-6, 20e-6, 30e-6, 50e-6, 70e-6, 100e-6, 150e-6, 200e-6, 300e-6,
    500e-6, 700e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1.0,
];

/// Native resolution: schema 3, buckets 2^(1/8) ≈ 9 % wide; a 1 ns zero
/// bucket (only an |IPDV| of 0 falls in it); at most 160 buckets a series.
pub fn native_config() -> NativeHistogramConfig {
    NativeHistogramConfig::with_schema(3)
        .zero_threshold(1e-9)
        .max_buckets(160)
        .max_zero_threshold(1e-6)
}

pub(super) fn histogram() -> Histogram {
    Histogram::new_classic_and_native(CLASSIC_BUCKETS, native_config())
}
