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

/// A figure as a threshold judges it: requests without a timely reply
/// count as "at least the timeout" (RFC 6703 §4: their delay is not a
/// number, but it is no less than the wait), so a p99 threshold fails
/// when more than 1 % of requests got no reply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// The figure, ns; `None` without replies (the mean) or requests.
    pub value: Option<f64>,
    /// The value is only a lower bound: the percentile (or the maximum)
    /// fell among requests without a timely reply, and is the timeout.
    pub at_least: bool,
    /// Requests the figure rests on: replies, plus the unanswered for a
    /// percentile or the maximum.
    pub samples: u64,
    /// A percentile: samples beyond it.
    pub beyond: Option<u64>,
}

impl RttMetric {
    /// The figure in `stats`, over replies only; `None` without replies.
    pub fn of(self, stats: &Stats) -> Option<f64> {
        let h = stats.histogram();
        (!h.is_empty()).then(|| match self {
            RttMetric::Mean => h.mean(),
            RttMetric::Max => h.max() as f64,
            RttMetric::Percentile(p) => h.value_at_quantile(p / 100.0) as f64,
        })
    }

    /// The figure as a threshold judges it, each request without a timely
    /// reply counted as `timeout_ns` or more. The mean stays the replies'
    /// (an unanswered request has no delay to add).
    pub fn judged(self, stats: &Stats, timeout_ns: u64) -> Judged {
        let h = stats.histogram();
        let c = stats.counters();
        let (replies, unanswered) = (h.len(), c.lost + c.late);
        let n = replies + unanswered;
        match self {
            RttMetric::Mean => Judged {
                value: (replies > 0).then(|| h.mean()),
                at_least: false,
                samples: replies,
                beyond: None,
            },
            RttMetric::Max if unanswered > 0 => Judged {
                value: Some(timeout_ns as f64),
                at_least: true,
                samples: n,
                beyond: None,
            },
            RttMetric::Max => Judged {
                value: (replies > 0).then(|| h.max() as f64),
                at_least: false,
                samples: n,
                beyond: None,
            },
            RttMetric::Percentile(p) => {
                let rank = crate::significance::rank(n, p / 100.0);
                let beyond = Some(n.saturating_sub(rank));
                if n == 0 {
                    return Judged {
                        value: None,
                        at_least: false,
                        samples: 0,
                        beyond,
                    };
                }
                if rank > replies {
                    return Judged {
                        value: Some(timeout_ns as f64),
                        at_least: true,
                        samples: n,
                        beyond,
                    };
                }
                Judged {
                    value: value_at_rank(h, rank).map(|v| v as f64),
                    at_least: false,
                    samples: n,
                    beyond,
                }
            }
        }
    }
}

/// The value of the `rank`-th smallest sample (1-based): the highest value
/// of its bucket, as `value_at_quantile` gives.
fn value_at_rank(h: &hdrhistogram::Histogram<u64>, rank: u64) -> Option<u64> {
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return Some(h.highest_equivalent(v.value_iterated_to()));
        }
    }
    None
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
    use crate::{Record, RecordKind};

    #[test]
    fn unanswered_requests_count_as_at_least_the_timeout() {
        let mut s = Stats::new();
        for i in 0..985u64 {
            s.record(&Record::sample(i, 0, 50_000 + i, false));
        }
        for i in 985..1_000 {
            s.record(&Record::event(RecordKind::Lost, i, 0, false));
        }
        let p99 = RttMetric::Percentile(99.0).judged(&s, 100_000_000);
        // 15 of 1,000 unanswered: the 990th request is one of them.
        assert_eq!(
            p99,
            Judged {
                value: Some(1e8),
                at_least: true,
                samples: 1_000,
                beyond: Some(10)
            }
        );
        let p90 = RttMetric::Percentile(90.0).judged(&s, 100_000_000);
        assert!(!p90.at_least);
        assert_eq!(
            p90.value,
            Some(s.histogram().highest_equivalent(50_899) as f64)
        );
        assert!(RttMetric::Max.judged(&s, 7).at_least);
        let mean = RttMetric::Mean.judged(&s, 7);
        assert_eq!((mean.at_least, mean.samples), (false, 985));
        assert_eq!(RttMetric::Mean.judged(&Stats::new(), 7).value, None);
    }

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
        // One rule for every duration (issue 51): a unit is required.
        let bare = "max=2".parse::<Threshold>().unwrap_err();
        assert!(bare.starts_with("'2' needs a unit: 2ms"), "{bare}");
        assert_eq!(t("p99=500us").to_string(), "p99=500us");
        assert_eq!(t("mean=1ms").to_string(), "mean=1ms");
        for bad in ["p100=1ms", "q99=1ms", "p99=soon", "fast"] {
            assert!(bad.parse::<Threshold>().is_err(), "{bad}");
        }
    }
}
