//! PASS or FAIL: every criterion a run is judged by, with its limit, the
//! value measured and whether it held. A criterion that could not be
//! checked (no replies, so no RTT) does not hold: a verdict never passes
//! what it did not check.

use crate::config::{BaselineComparison, RegressionRule};
use serde::Serialize;
use std::time::Duration;
use synapse_stats::{Stats, Summary, Threshold};
use synapse_units::{format_ns, format_ns_plain};

/// How much loss a run may have and still pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Requests without a timely reply, percent of those sent.
    pub loss_percent: f64,
    /// The longest outage.
    pub outage: Duration,
}

impl Limits {
    /// Limits that nothing exceeds, for tests of the other criteria.
    #[cfg(test)]
    pub fn none() -> Self {
        Self {
            loss_percent: 100.0,
            outage: Duration::MAX,
        }
    }
}

/// One criterion of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Criterion {
    /// What was judged: `mean`, `p99`, `loss`, `p50 regression`, …
    pub metric: String,
    /// Its limit.
    pub limit: f64,
    /// What was measured; `None` when nothing could be.
    pub value: Option<f64>,
    /// `ns` or `percent`.
    pub unit: &'static str,
    /// Whether it held.
    pub held: bool,
}

impl Criterion {
    /// `p99 61.2 µs < 500 µs`, `loss 0.20 % ≤ 1 %`, with what was measured.
    pub fn describe(&self) -> String {
        if let Some(fig) = self.metric.strip_suffix(" significant regression") {
            let change = self.value.map_or_else(
                || "—".to_string(),
                |v| format!("{} %", synapse_units::signed(v, 2)),
            );
            let what = if self.held {
                "no significant regression"
            } else {
                "a significant regression"
            };
            return format!(
                "{fig} against the baseline {change}: {what} beyond {} % (--min-effect)",
                self.limit
            );
        }
        if self.metric == "unchecked regression" {
            return "regression against the baseline: not checked".into();
        }
        let value = |v: f64| match self.unit {
            "ns" => format_ns(v),
            _ => format!("{v:.2} %"),
        };
        let limit = match self.unit {
            "ns" => format_ns_plain(self.limit as u64),
            _ => format!("{} %", self.limit),
        };
        let shown = self
            .value
            .map_or_else(|| "— (no replies)".to_string(), value);
        let op = if self.unit == "ns" && self.metric != "outage" {
            "<"
        } else {
            "≤"
        };
        format!("{} {shown} {op} {limit}", self.metric)
    }
}

/// Pass or fail, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Every criterion held.
    pub pass: bool,
    /// Each criterion with its limit, its value and whether it held.
    pub criteria: Vec<Criterion>,
    /// The mean's threshold held (and replies came back).
    pub mean_ok: bool,
    /// p50 or p99 regressed past `--fail-on-regression`.
    pub regressed: bool,
}

impl Verdict {
    /// Judges a run (its statistics and their summary) against the
    /// thresholds, the loss limit (percent of requests lost or late) and the
    /// baseline comparison, if any.
    pub fn judge(
        stats: &Stats,
        summary: &Summary,
        thresholds: &[Threshold],
        limits: Limits,
        baseline: Option<&BaselineComparison>,
    ) -> Self {
        let max_loss = limits.loss_percent;
        let mut criteria: Vec<Criterion> = thresholds
            .iter()
            .map(|t| {
                let value = t.metric.of(stats);
                let limit = t.limit.as_nanos() as f64;
                Criterion {
                    metric: t.metric.to_string(),
                    limit,
                    value,
                    unit: "ns",
                    held: value.is_some_and(|v| v < limit),
                }
            })
            .collect();
        let loss = summary.packets.unanswered_percent();
        criteria.push(Criterion {
            metric: "loss".into(),
            limit: max_loss,
            value: (summary.packets.sent > 0).then_some(loss),
            unit: "percent",
            held: summary.packets.sent > 0 && loss <= max_loss,
        });
        let longest = summary.outages.longest_ms * 1e6;
        let max_outage = limits.outage.as_nanos() as f64;
        criteria.push(Criterion {
            metric: "outage".into(),
            limit: max_outage,
            value: (summary.packets.sent > 0).then_some(longest),
            unit: "ns",
            held: summary.packets.sent > 0 && longest <= max_outage,
        });
        if let Some(b) = baseline {
            criteria.extend(regression_criteria(b));
        }
        let mean_ok = criteria
            .iter()
            .filter(|c| c.metric == "mean")
            .all(|c| c.held)
            && summary.packets.received > 0;
        let regressed = criteria
            .iter()
            .any(|c| c.metric.ends_with("regression") && !c.held);
        Self {
            pass: criteria.iter().all(|c| c.held),
            criteria,
            mean_ok,
            regressed,
        }
    }

    /// The criteria that did not hold.
    pub fn failed(&self) -> impl Iterator<Item = &Criterion> {
        self.criteria.iter().filter(|c| !c.held)
    }
}

/// `--fail-on-regression`'s criteria, by the rule that judged the run.
fn regression_criteria(b: &BaselineComparison) -> Vec<Criterion> {
    match (b.rule, &b.test, b.limit_percent) {
        (Some(RegressionRule::Significance), Some(test), _) => test
            .figures
            .iter()
            .map(|f| Criterion {
                metric: format!("{} significant regression", f.figure.name()),
                limit: b.min_effect_percent.unwrap_or(0.0),
                value: f.difference_percent,
                unit: "percent",
                held: !f.regression,
            })
            .collect(),
        (Some(RegressionRule::FixedPercent), _, Some(limit)) => {
            [("p50", b.change_percent.p50), ("p99", b.change_percent.p99)]
                .into_iter()
                .map(|(name, change)| Criterion {
                    metric: format!("{name} regression"),
                    limit,
                    value: Some(change),
                    unit: "percent",
                    held: change <= limit,
                })
                .collect()
        }
        (Some(_), _, _) => vec![Criterion {
            metric: "unchecked regression".into(),
            limit: 0.0,
            value: None,
            unit: "percent",
            held: false,
        }],
        (None, _, _) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::{Record, RecordKind};

    /// 100 replies of `rtt`, one of `slow`, then `lost` lost and `late` late.
    fn run(rtt: u64, slow: u64, lost: u64, late: u64) -> (Stats, Summary) {
        let mut stats = Stats::new();
        let mut seq = 0;
        for r in std::iter::repeat_n(rtt, 100).chain([slow]) {
            stats.record(&Record::sample(seq, 0, r, false));
            seq += 1;
        }
        for _ in 0..lost + late {
            stats.record(&Record::event(RecordKind::Lost, seq, 0, false));
            seq += 1;
        }
        for s in 0..late {
            stats.record(&Record::event(
                RecordKind::Late { reordered: false },
                101 + s,
                0,
                false,
            ));
        }
        let summary = Summary::from_stats(&stats, Duration::from_secs(1));
        (stats, summary)
    }

    fn t(s: &str) -> Threshold {
        s.parse().unwrap()
    }

    #[test]
    fn loss_counts_lost_and_late_of_sent() {
        let (stats, s) = run(50_000, 90_000, 1, 1);
        assert_eq!(s.packets.sent, 103);
        let limits = |loss_percent| Limits {
            loss_percent,
            ..Limits::none()
        };
        let v = Verdict::judge(&stats, &s, &[t("1ms")], limits(1.0), None);
        assert!(!v.pass, "2 of 103 unanswered is above 1 %");
        let failed: Vec<_> = v.failed().map(|c| c.metric.as_str()).collect();
        assert_eq!(failed, ["loss"]);
        assert!(v.mean_ok);
        assert!(Verdict::judge(&stats, &s, &[t("1ms")], limits(2.0), None).pass);
    }

    #[test]
    fn a_percentile_threshold_fails_on_its_own_figure() {
        let (stats, s) = run(50_000, 900_000, 0, 0);
        let v = Verdict::judge(
            &stats,
            &s,
            &[t("1ms"), t("max=500us")],
            Limits::none(),
            None,
        );
        assert!(!v.pass);
        let failed: Vec<_> = v.failed().map(Criterion::describe).collect();
        assert_eq!(failed.len(), 1);
        assert!(failed[0].starts_with("max 900."), "{failed:?}");
        assert!(failed[0].ends_with("µs < 500 µs"), "{failed:?}");
        assert!(Verdict::judge(&stats, &s, &[t("p99=100us")], Limits::none(), None).pass);
    }

    #[test]
    fn an_outage_longer_than_the_limit_fails_a_run_of_little_loss() {
        let (mut stats, _) = run(50_000, 60_000, 0, 0);
        stats.record(&Record::outage(101, 19, 0, 2_000_000_000));
        let s = Summary::from_stats(&stats, Duration::from_secs(4));
        let limits = Limits {
            loss_percent: 100.0,
            outage: Duration::from_secs(1),
        };
        let v = Verdict::judge(&stats, &s, &[t("1ms")], limits, None);
        let failed: Vec<_> = v.failed().map(Criterion::describe).collect();
        assert_eq!(failed, ["outage 2.00 s ≤ 1 s"]);
    }

    #[test]
    fn no_replies_holds_no_rtt_criterion() {
        let mut stats = Stats::new();
        stats.record(&Record::event(RecordKind::Lost, 0, 0, false));
        let s = Summary::from_stats(&stats, Duration::from_secs(1));
        let v = Verdict::judge(&stats, &s, &[t("1ms")], Limits::none(), None);
        assert!(!v.pass, "a verdict never passes what it did not check");
        let mean = &v.criteria[0];
        assert_eq!((mean.value, mean.held), (None, false));
        assert_eq!(mean.describe(), "mean — (no replies) < 1 ms");
    }

    #[test]
    fn a_significance_criterion_says_what_it_tested() {
        let c = |held, value| Criterion {
            metric: "p99.9 significant regression".into(),
            limit: 50.0,
            value,
            unit: "percent",
            held,
        };
        assert_eq!(
            c(true, Some(1036.16)).describe(),
            "p99.9 against the baseline +1036.16 %: no significant regression beyond 50 % (--min-effect)"
        );
        assert_eq!(
            c(false, None).describe(),
            "p99.9 against the baseline —: a significant regression beyond 50 % (--min-effect)"
        );
    }
}
