//! Round trips per minute, aggregated as draft-ietf-ippm-responsiveness
//! does: a one-sided trimmed mean (the slowest 5 % left out) of the
//! foreign probes and of the loaded ones, each made a rate (60 s over it)
//! and the two rates averaged.
//!
//! Here the foreign probes are Synapse's UDP probes on their own flow, and
//! the loaded ones the load connections' own round trips (`tcpi_rtt` of
//! their senders): probe-based, not the draft's HTTP and TLS exchanges,
//! so the figure is not a networkQuality one and is never called that.

use serde::Serialize;

/// The share kept by the one-sided trimmed mean (the draft's TMP).
pub const KEPT: f64 = 0.95;

/// The mean of the fastest [`KEPT`] of `values` (`None`: none).
pub fn trimmed_mean(values: &[u64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let keep = ((v.len() as f64 * KEPT).ceil() as usize).clamp(1, v.len());
    Some(v[..keep].iter().map(|&x| x as f64).sum::<f64>() / keep as f64)
}

/// A phase's responsiveness.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rpm {
    /// Round trips per minute, all told.
    pub rpm: f64,
    /// From the probes alone (the draft's foreign responsiveness).
    pub foreign_rpm: f64,
    /// From the load connections alone (`None`: none measured).
    pub loaded_rpm: Option<f64>,
    /// The probes' trimmed mean, ns.
    pub foreign_trimmed_mean_ns: f64,
    /// The load connections' trimmed mean, ns.
    pub loaded_trimmed_mean_ns: Option<f64>,
    /// Probes and load-connection samples it rests on.
    pub foreign_samples: usize,
    /// Samples of the load connections' round trips.
    pub loaded_samples: usize,
}

fn per_minute(ns: f64) -> f64 {
    60e9 / ns.max(1.0)
}

impl Rpm {
    /// From the probes' round trips and the load connections', ns. With
    /// no loaded sample, the probes' alone (and `loaded_rpm` says so).
    pub fn of(foreign_ns: &[u64], loaded_ns: &[u64]) -> Option<Self> {
        let f = trimmed_mean(foreign_ns)?;
        let l = trimmed_mean(loaded_ns);
        let (fr, lr) = (per_minute(f), l.map(per_minute));
        Some(Self {
            rpm: lr.map_or(fr, |lr| (fr + lr) / 2.0),
            foreign_rpm: fr,
            loaded_rpm: lr,
            foreign_trimmed_mean_ns: f,
            loaded_trimmed_mean_ns: l,
            foreign_samples: foreign_ns.len(),
            loaded_samples: loaded_ns.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_five_percent_are_left_out() {
        let mut v: Vec<u64> = vec![10; 95];
        v.extend([1_000_000; 5]);
        assert_eq!(trimmed_mean(&v), Some(10.0));
        // One outlier more than 5 % of them: the fastest 95 keep one.
        let mut w: Vec<u64> = vec![10; 94];
        w.extend([1_000_000; 6]);
        let m = trimmed_mean(&w).unwrap();
        assert!((m - (940.0 + 1e6) / 95.0).abs() < 1e-6, "{m}");
        assert_eq!(trimmed_mean(&[]), None);
        assert_eq!(trimmed_mean(&[7]), Some(7.0));
    }

    #[test]
    fn rpm_averages_the_two_rates_as_the_draft_does() {
        // 100 ms foreign, 50 ms loaded: 600 and 1,200 per minute.
        let r = Rpm::of(&[100_000_000; 20], &[50_000_000; 20]).unwrap();
        assert!((r.foreign_rpm - 600.0).abs() < 1e-9);
        assert_eq!(r.loaded_rpm.map(f64::round), Some(1200.0));
        assert!(
            (r.rpm - 900.0).abs() < 1e-9,
            "the rates averaged, not the times"
        );
        let alone = Rpm::of(&[100_000_000; 3], &[]).unwrap();
        assert_eq!((alone.rpm.round(), alone.loaded_rpm), (600.0, None));
        assert_eq!(Rpm::of(&[], &[1]), None);
    }
}
