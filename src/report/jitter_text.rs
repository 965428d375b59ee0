//! One line of jitter, by both pairings: the RTT's in the timing section
//! and each direction's in the one-way section.

use synapse_stats::JitterFigures;
use synapse_units::{format_ns, group_thousands};

fn pairs(n: u64) -> String {
    match n {
        1 => "1 pair".into(),
        n => format!("{} pairs", group_thousands(n)),
    }
}

/// Jitter by both pairings: consecutive sequence numbers (RFC 5481 §4.1)
/// and consecutive arrivals (RFC 3550).
pub fn jitter_line(j: &JitterFigures) -> String {
    let ipdv = match (j.ipdv_p50, j.ipdv_p99) {
        (Some(p50), Some(p99)) => format!(
            "|IPDV| P50 {}, P99 {} ({} of consecutive numbers, RFC 5481)",
            format_ns(p50 as f64),
            format_ns(p99 as f64),
            pairs(j.ipdv_pairs)
        ),
        _ => "no IPDV (no two consecutive numbers answered)".into(),
    };
    format!(
        "{ipdv}; by arrival |D| P50 {}, RFC 3550 jitter {}",
        format_ns(j.arrival_p50 as f64),
        format_ns(j.rfc3550)
    )
}
