//! `--threshold`: the RTT figure a verdict judges and the limit it must
//! stay below. Parsed on the command line and in profiles, judged by the
//! report's verdict.

use super::Stats;
use std::fmt;
use std::time::Duration;
use synapse_units::{duration_text, millis};

/// An RTT figure a threshold can judge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RttMetric {
    /// The arithmetic mean (what a bare limit, `1ms`, judges).
    Mean,
    /// A percentile, 0 < p < 100.
    Percentile(f64),
    /// The slowest reply.
    Max,
}

impl RttMetric {
    /// The figure in `stats`; `None` without replies.
    pub fn of(self, stats: &Stats) -> Option<f64> {
        let h = stats.histogram();
        (!h.is_empty()).then(|| match self {
            RttMetric::Mean => h.mean(),
            RttMetric::Max => h.max() as f64,
            RttMetric::Percentile(p) => h.value_at_quantile(p / 100.0) as f64,
        })
    }
}

impl fmt::Display for RttMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RttMetric::Mean => f.write_str("mean"),
            RttMetric::Max => f.write_str("max"),
            RttMetric::Percentile(p) => write!(f, "p{p}"),
        }
    }
}

/// `--threshold`: an RTT figure that must stay below a limit. `1ms` means
/// the mean (the bare form); `p99=500us`, `mean=1ms`, `max=5ms` name it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    /// What is judged.
    pub metric: RttMetric,
    /// It must be below this.
    pub limit: Duration,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.metric, duration_text(self.limit))
    }
}

impl std::str::FromStr for Threshold {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let Some((name, limit)) = s.split_once('=') else {
            return Ok(Self {
                metric: RttMetric::Mean,
                limit: millis(s)?,
            });
        };
        let metric = match name.trim() {
            "mean" => RttMetric::Mean,
            "max" => RttMetric::Max,
            p => match p.strip_prefix('p').map(str::parse::<f64>) {
                Some(Ok(q)) if q > 0.0 && q < 100.0 => RttMetric::Percentile(q),
                _ => {
                    return Err(format!(
                        "'{name}' is not an RTT figure (mean, max, or a percentile such as p50, p99.9)"
                    ));
                }
            },
        };
        Ok(Self {
            metric,
            limit: millis(limit)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Threshold {
        s.parse().unwrap()
    }

    #[test]
    fn thresholds_read_the_seeds_form_and_named_figures() {
        assert_eq!(
            t("1ms"),
            Threshold {
                metric: RttMetric::Mean,
                limit: Duration::from_millis(1)
            }
        );
        assert_eq!(t("p99=500us").metric, RttMetric::Percentile(99.0));
        assert_eq!(t("p99.9=5ms").limit, Duration::from_millis(5));
        assert_eq!(
            t("max=2").limit,
            Duration::from_millis(2),
            "bare numbers are ms"
        );
        assert_eq!(t("p99=500us").to_string(), "p99=500us");
        assert_eq!(t("mean=1ms").to_string(), "mean=1ms");
        for bad in ["p100=1ms", "q99=1ms", "p99=soon", "fast"] {
            assert!(bad.parse::<Threshold>().is_err(), "{bad}");
        }
    }
}
