//! How much runs of one configuration differ from each other, beyond each
//! run's own noise: what one run a side cannot show and the comparison
//! must know from elsewhere. A run's latency figures move between runs by
//! a factor (a blocking run's p50 lands on one of a few wake-up levels by
//! where its threads were placed: 20 µs in one run, 28 µs in the next), so
//! the spread is kept on the log scale: the standard deviation of
//! ln(figure) between runs, with the degrees of freedom it rests on.
//!
//! Where it comes from, best first: the runs compared, when a side has two
//! or more (pooled with what follows, as a prior: Smyth's moderated
//! variance, 2004); this host's, measured by `synapse calibrate` (runs of
//! Synapse's own loopback ping-pong); else an assumed one, wide enough to
//! cover the spreads measured on the development VM (docs/compare.md).

use serde::{Deserialize, Serialize};

/// Where the run-to-run spread came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SpreadSource {
    /// Not measured here: the built-in allowance (docs/compare.md).
    Assumed,
    /// Measured on this host by `synapse calibrate`.
    Host {
        /// When (RFC 3339).
        calibrated_at: String,
        /// How many runs it measured.
        runs: usize,
    },
}

/// The run-to-run spread of the five latency figures (p50, p90, p99,
/// p99.9, mean): standard deviations of ln(figure) between runs, net of the
/// runs' own noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Where it came from.
    pub source: SpreadSource,
    /// Per figure, in report order.
    pub log_sd: [f64; 5],
    /// The degrees of freedom the estimate rests on.
    pub df: f64,
}

/// The assumed spread: about twice the largest measured on the development
/// VM (BENCHMARKS.md §18, docs/compare.md), so that an A/A pair is called
/// a regression in under 5 % of pairs even where runs land on different
/// wake-up levels. Held as if measured on 5 runs (4 degrees of freedom):
/// a weak prior, which the runs themselves outweigh once a side has a few.
pub const ASSUMED_LOG_SD: [f64; 5] = [0.20, 0.20, 0.30, 0.50, 0.20];
/// Its degrees of freedom.
pub const ASSUMED_DF: f64 = 4.0;

impl Spread {
    /// The built-in allowance.
    pub fn assumed() -> Self {
        Self {
            source: SpreadSource::Assumed,
            log_sd: ASSUMED_LOG_SD,
            df: ASSUMED_DF,
        }
    }

    /// Measured on this host: the figures of `runs` separate runs (each
    /// figure's ln), less the mean within-run variance of those runs
    /// (`within`, on the same scale), clamped at zero.
    pub fn measured(calibrated_at: &str, per_run: &[[f64; 5]], within: [f64; 5]) -> Option<Self> {
        if per_run.len() < 3 {
            return None;
        }
        let n = per_run.len() as f64;
        let mut log_sd = [0.0; 5];
        for (k, sd) in log_sd.iter_mut().enumerate() {
            let ys: Vec<f64> = per_run.iter().map(|r| r[k].max(1.0).ln()).collect();
            let mean = ys.iter().sum::<f64>() / n;
            let var = ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1.0);
            *sd = (var - within[k]).max(0.0).sqrt();
        }
        Some(Self {
            source: SpreadSource::Host {
                calibrated_at: calibrated_at.into(),
                runs: per_run.len(),
            },
            log_sd,
            df: n - 1.0,
        })
    }

    /// In a sentence: `assumed (not measured on this host: synapse
    /// calibrate measures it)` or `this host's (8 runs, calibrated …)`.
    pub fn describe(&self) -> String {
        match &self.source {
            SpreadSource::Assumed => {
                "assumed, not measured on this host (synapse calibrate measures it)".into()
            }
            SpreadSource::Host {
                calibrated_at,
                runs,
            } => format!(
                "this host's, from {runs} runs of synapse calibrate ({})",
                calibrated_at.get(..10).unwrap_or(calibrated_at)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_spread_is_net_of_the_runs_own_noise() {
        let runs: Vec<[f64; 5]> = [20_000.0, 28_000.0, 20_000.0, 28_000.0]
            .iter()
            .map(|&p| [p, p, p, p, p])
            .collect();
        let s =
            Spread::measured("2026-11-27T00:00:00Z", &runs, [0.0, 0.0, 0.0, 0.0, 0.01]).unwrap();
        let ln = (28.0f64 / 20.0).ln();
        // Two at each level: sd = ln(1.4)/2 · √(4/3).
        let want = ln / 2.0 * (4.0f64 / 3.0).sqrt();
        assert!((s.log_sd[0] - want).abs() < 1e-9, "{:?}", s.log_sd);
        assert!((s.log_sd[4] - (want * want - 0.01).sqrt()).abs() < 1e-9);
        assert_eq!(s.df, 3.0);
        assert!(
            s.describe().starts_with("this host's, from 4 runs"),
            "{}",
            s.describe()
        );
        assert!(Spread::measured("x", &runs[..2], [0.0; 5]).is_none());
    }
}
