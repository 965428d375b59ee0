//! A run's slices of consecutive requests in its JSON report (`slices`),
//! and read back by `synapse compare`: what lets a comparison of two JSON
//! reports resample each run for its own noise. Each slice's RTTs are one
//! histogram in HdrHistogram's compressed encoding (base64), as an interval
//! log's lines carry them.

use crate::hdr_log::{decode_histogram, encode_histogram};
use serde::Serialize;
use synapse_stats::intervals::empty_histogram;
use synapse_stats::slices::Slice;

/// The `slices` object of a JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct SlicesJson {
    /// Requests in each slice (the last may hold fewer).
    pub requests_each: u64,
    /// The slices, in order.
    pub items: Vec<SliceJson>,
}

/// One slice.
#[derive(Debug, Clone, Serialize)]
pub struct SliceJson {
    /// Its first request's time, ns after the run's start.
    pub start_ns: u64,
    /// Its last request's, ns.
    pub end_ns: u64,
    /// Its RTT histogram (ns), compressed and base64 (`null`: no replies).
    pub rtt: Option<String>,
    /// Requests without a timely reply.
    pub unanswered: u64,
}

impl SlicesJson {
    /// A run's slices, for its report.
    pub fn of(slices: &[Slice]) -> Self {
        Self {
            requests_each: slices.first().map_or(0, Slice::requests),
            items: slices
                .iter()
                .map(|s| SliceJson {
                    start_ns: s.start_ns,
                    end_ns: s.end_ns,
                    rtt: (!s.rtt.is_empty()).then(|| {
                        let mut h = empty_histogram();
                        for &(v, n) in &s.rtt {
                            let _ = h.record_n(v, n);
                        }
                        encode_histogram(&h)
                    }),
                    unanswered: s.unanswered,
                })
                .collect(),
        }
    }
}

/// The slices of a report's `slices` object.
pub fn read(v: &serde_json::Value) -> Result<Vec<Slice>, String> {
    let items = v["items"].as_array().ok_or("slices: no items")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |k: &str| {
                item[k]
                    .as_u64()
                    .ok_or_else(|| format!("slices: item {i} has no {k}"))
            };
            let rtt = match item["rtt"].as_str() {
                Some(text) => {
                    let h = decode_histogram(text).map_err(|e| format!("slices: item {i}: {e}"))?;
                    h.iter_recorded()
                        .map(|v| {
                            (
                                h.highest_equivalent(v.value_iterated_to()),
                                v.count_at_value(),
                            )
                        })
                        .collect()
                }
                None => Vec::new(),
            };
            Ok(Slice {
                start_ns: field("start_ns")?,
                end_ns: field("end_ns")?,
                rtt,
                unanswered: field("unanswered")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::Record;
    use synapse_stats::slices::SliceRecorder;

    #[test]
    fn slices_round_trip_through_the_json() {
        let mut r = SliceRecorder::new();
        for i in 0..2_000u64 {
            r.record(&Record::sample(
                i,
                i * 20_000,
                15_000 + (i * 7919) % 5_000,
                false,
            ));
        }
        let slices = r.finish();
        let json = serde_json::to_value(SlicesJson::of(&slices)).unwrap();
        assert_eq!(json["requests_each"], 16);
        assert_eq!(read(&json).unwrap(), slices);
        assert!(read(&serde_json::json!({"items": [{"start_ns": 1}]})).is_err());
    }
}
