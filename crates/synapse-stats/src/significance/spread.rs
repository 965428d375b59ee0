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
//! variance, 2004); else an assumed one, wide enough to cover the spreads
//! measured on the development VM (docs/compare.md), or this host's,
//! measured by `synapse calibrate`, where that is wider. A calibration's
//! runs are taken back to back, so they show how runs of one moment differ,
//! not runs an hour apart: where it measured less than the allowance, it
//! does not narrow it (measured: BENCHMARKS.md §18, false alarms above 5 %
//! when it did).

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
    /// This host's where wider than the assumed allowance, the allowance
    /// elsewhere ([`Spread::for_comparison`]).
    HostOrAssumed {
        /// When the host's was measured (RFC 3339).
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

    /// What a comparison starts from, given this host's calibration: per
    /// figure the wider of it and the assumed allowance, held with the
    /// degrees of freedom of the one that stands (the fewer, where they
    /// mix).
    pub fn for_comparison(host: Option<&Spread>) -> Spread {
        let assumed = Self::assumed();
        let Some(host) = host else {
            return assumed;
        };
        let SpreadSource::Host {
            calibrated_at,
            runs,
        } = &host.source
        else {
            return host.clone();
        };
        if host.log_sd.iter().zip(ASSUMED_LOG_SD).all(|(h, a)| *h >= a) {
            return host.clone();
        }
        let mut log_sd = host.log_sd;
        for (sd, floor) in log_sd.iter_mut().zip(ASSUMED_LOG_SD) {
            *sd = sd.max(floor);
        }
        Spread {
            source: SpreadSource::HostOrAssumed {
                calibrated_at: calibrated_at.clone(),
                runs: *runs,
            },
            log_sd,
            df: host.df.min(ASSUMED_DF),
        }
    }

    /// In a sentence: `assumed (not measured on this host: synapse
    /// calibrate measures it)` or `this host's (8 runs, calibrated …)`.
    pub fn describe(&self) -> String {
        let day = |at: &String| at.get(..10).unwrap_or(at).to_string();
        match &self.source {
            SpreadSource::Assumed => {
                "assumed, not measured on this host (synapse calibrate measures it)".into()
            }
            SpreadSource::Host {
                calibrated_at,
                runs,
            } => format!(
                "this host's, from {runs} runs of synapse calibrate ({})",
                day(calibrated_at)
            ),
            SpreadSource::HostOrAssumed {
                calibrated_at,
                runs,
            } => format!(
                "the assumed allowance, or this host's where wider ({runs} runs of synapse \
                 calibrate, {}: back-to-back runs, which cannot show how runs at other times \
                 differ, so they do not narrow it)",
                day(calibrated_at)
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

    fn host(log_sd: [f64; 5]) -> Spread {
        Spread {
            source: SpreadSource::Host {
                calibrated_at: "2026-11-27T00:00:00Z".into(),
                runs: 10,
            },
            log_sd,
            df: 9.0,
        }
    }

    #[test]
    fn a_calibration_widens_the_allowance_but_never_narrows_it() {
        assert_eq!(Spread::for_comparison(None), Spread::assumed());
        // Quieter than assumed everywhere: the allowance stands, and says why.
        let quiet = Spread::for_comparison(Some(&host([0.03; 5])));
        assert_eq!(quiet.log_sd, ASSUMED_LOG_SD);
        assert_eq!(quiet.df, ASSUMED_DF);
        assert!(
            quiet
                .describe()
                .starts_with("the assumed allowance, or this host's where wider (10 runs"),
            "{}",
            quiet.describe()
        );
        // Noisier everywhere: the host's, as measured.
        let noisy = host([0.6; 5]);
        assert_eq!(Spread::for_comparison(Some(&noisy)), noisy);
        // Mixed: each figure the wider, on the fewer degrees of freedom.
        let mixed = Spread::for_comparison(Some(&host([0.05, 0.05, 0.9, 0.05, 0.05])));
        assert_eq!(mixed.log_sd, [0.20, 0.20, 0.9, 0.50, 0.20]);
        assert_eq!(mixed.df, ASSUMED_DF);
    }
}
