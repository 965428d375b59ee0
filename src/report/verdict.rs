//! PASS, FAIL or INCONCLUSIVE: every criterion a run is judged by, with its
//! limit, the value measured and what came of it. A criterion that could
//! not be checked (no replies, so no RTT) does not hold: a verdict never
//! passes what it did not check. Requests without a timely reply count as
//! at least the timeout in the percentiles a threshold judges (RFC 6703
//! §4). Whether the run itself completed (a signal, a log that could not
//! be written) is the report's [`super::Outcome`], over this.

use crate::config::{BaselineComparison, RegressionRule};
use serde::Serialize;
use std::time::Duration;
use synapse_stats::significance::{BEYOND, Verdict as Change};
use synapse_stats::{Stats, Summary, Threshold};
use synapse_units::{format_ns, format_ns_plain};

/// How much loss a run may have and still pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Requests without a timely reply, percent of those sent (`None`:
    /// not judged).
    pub loss_percent: Option<f64>,
    /// The longest outage (`None`: not judged).
    pub outage: Option<Duration>,
    /// How long a request waits for its reply: what an unanswered one
    /// counts as in the percentiles a threshold judges.
    pub timeout: Duration,
}

impl Limits {
    /// Limits that nothing exceeds, for tests of the other criteria.
    #[cfg(test)]
    pub fn none() -> Self {
        Self {
            loss_percent: Some(100.0),
            outage: Some(Duration::MAX),
            timeout: Duration::from_millis(100),
        }
    }
}

/// What came of a criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Held {
    /// It held.
    Yes,
    /// It did not.
    No,
    /// A comparison that could show neither (`--fail-on-regression`).
    Inconclusive,
}

/// One criterion of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Criterion {
    /// What was judged: `mean`, `p99`, `loss`, `p50 against the baseline`, …
    pub metric: String,
    /// Its limit.
    pub limit: f64,
    /// What was measured; `None` when nothing could be.
    pub value: Option<f64>,
    /// `value` is a lower bound: the percentile fell among requests without
    /// a timely reply, each counted as the timeout.
    pub at_least: bool,
    /// `ns` or `percent`.
    pub unit: &'static str,
    /// Whether it held.
    pub held: bool,
    /// It held, failed, or (a comparison) was inconclusive.
    pub outcome: Held,
    /// Requests the figure rests on (a percentile or the maximum: replies
    /// and requests without a timely reply; the mean: replies).
    pub samples: Option<u64>,
    /// A percentile: samples beyond it; fewer than 10 and it is not
    /// resolved (p99.99 of 2,000 is the maximum).
    pub beyond: Option<u64>,
    /// For a comparison: its sentence (the change, its interval, what it
    /// could have shown).
    pub detail: Option<String>,
    /// A multicast run: the responder judged (`null`: the group, by each
    /// request's slowest answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub responder: Option<String>,
}

impl Criterion {
    pub(super) fn plain(
        metric: &str,
        limit: f64,
        value: Option<f64>,
        unit: &'static str,
        held: bool,
    ) -> Self {
        Self {
            metric: metric.into(),
            limit,
            value,
            at_least: false,
            unit,
            held,
            outcome: if held { Held::Yes } else { Held::No },
            samples: None,
            beyond: None,
            detail: None,
            responder: None,
        }
    }

    /// A percentile with too few samples beyond it to be more than the
    /// largest few.
    pub fn unresolved(&self) -> bool {
        self.beyond.is_some_and(|b| b < BEYOND)
    }

    /// One style for every criterion, held or not: `p99 61.2 µs, below
    /// 500 µs`, `max 82.6 µs, above 1 µs`, `loss 0.20 %, within 1 %`.
    pub fn describe(&self) -> String {
        self.describe_in(None)
    }

    /// The same, a round-trip figure in the report's unit (`scale`); an
    /// outage of none says none (not `0 ns`).
    pub fn describe_in(&self, scale: Option<&synapse_units::Scale>) -> String {
        if let Some(detail) = &self.detail {
            return detail.clone();
        }
        if self.metric == "unchecked regression" {
            return "regression against the baseline: not checked".into();
        }
        let rtt = self.metric != "outage";
        let value = |v: f64| match (self.unit, scale) {
            ("ns", Some(s)) if rtt => s.format(v),
            ("ns", _) => format_ns(v),
            _ => format!("{v:.2} %"),
        };
        let limit = match self.unit {
            "ns" => format_ns_plain(self.limit as u64),
            _ => format!("{} %", self.limit),
        };
        // A responder's criterion (a multicast run) says whose it is.
        let who = self
            .responder
            .as_deref()
            .map(|r| format!("{r}: "))
            .unwrap_or_default();
        let Some(v) = self.value else {
            return format!("{who}{} — (no replies), so not below {limit}", self.metric);
        };
        if !rtt && v == 0.0 && self.held {
            return format!("{who}outage: none, within {limit}");
        }
        let strict = self.unit == "ns" && self.metric != "outage";
        let shown = if self.at_least {
            // The timeout it waited, as it was given: not a measured figure.
            format!("≥ {} (no timely reply)", format_ns_plain(v as u64))
        } else {
            value(v)
        };
        let relation = match (strict, self.held) {
            (true, true) => "below",
            (false, true) => "within",
            (_, false) if v > self.limit || self.at_least => "above",
            (_, false) => "at the limit, not below",
        };
        let mut s = format!("{who}{} {shown}, {relation} {limit}", self.metric);
        if self.unresolved() {
            s.push_str(&format!(
                " (not resolved: {} beyond it of {})",
                self.beyond.unwrap_or(0),
                self.samples.unwrap_or(0)
            ));
        }
        s
    }
}

/// Pass, fail or inconclusive, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Every criterion held.
    pub pass: bool,
    /// No criterion failed, but a comparison was inconclusive.
    pub inconclusive: bool,
    /// Each criterion with its limit, its value and what came of it.
    pub criteria: Vec<Criterion>,
    /// The mean's threshold held (and replies came back).
    pub mean_ok: bool,
    /// The baseline comparison found a regression.
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
        let timeout_ns = limits.timeout.as_nanos() as u64;
        let mut criteria: Vec<Criterion> = thresholds
            .iter()
            .map(|t| {
                let j = t.metric.judged(stats, timeout_ns);
                let limit = t.limit.as_nanos() as f64;
                let held = j.value.is_some_and(|v| v < limit && !j.at_least);
                Criterion {
                    at_least: j.at_least,
                    samples: Some(j.samples),
                    beyond: j.beyond,
                    ..Criterion::plain(&t.metric.to_string(), limit, j.value, "ns", held)
                }
            })
            .collect();
        let sent = summary.packets.sent;
        let loss = summary.packets.unanswered_percent();
        if let Some(limit) = limits.loss_percent {
            criteria.push(Criterion::plain(
                "loss",
                limit,
                (sent > 0).then_some(loss),
                "percent",
                sent > 0 && loss <= limit,
            ));
        }
        let longest = summary.outages.longest_ms * 1e6;
        if let Some(outage) = limits.outage {
            let max_outage = outage.as_nanos() as f64;
            criteria.push(Criterion::plain(
                "outage",
                max_outage,
                (sent > 0).then_some(longest),
                "ns",
                sent > 0 && longest <= max_outage,
            ));
        }
        if let Some(b) = baseline {
            criteria.extend(regression_criteria(b));
        }
        let mean_ok = criteria
            .iter()
            .filter(|c| c.metric == "mean")
            .all(|c| c.held)
            && summary.packets.received > 0;
        let failed = criteria.iter().any(|c| c.outcome == Held::No);
        Self {
            pass: !failed && criteria.iter().all(|c| c.outcome == Held::Yes),
            inconclusive: !failed && criteria.iter().any(|c| c.outcome == Held::Inconclusive),
            regressed: baseline.is_some_and(|b| b.regressed),
            criteria,
            mean_ok,
        }
    }

    /// The run gave up on a silent peer: `silent` without a reply (the
    /// limit `limit`), the path's last error `last`. A criterion that
    /// fails: a run that could not be completed is not a pass.
    pub fn gave_up(
        &mut self,
        silent: Duration,
        limit: Duration,
        last: Option<synapse_stats::PathError>,
    ) {
        let said = last.map_or(String::new(), |e| {
            format!("; the path's last word: {}", e.phrase())
        });
        self.criteria.push(Criterion {
            detail: Some(format!(
                "replies: none for {}, so the run gave up (--give-up-after {}){said}",
                format_ns(silent.as_nanos() as f64),
                format_ns_plain(limit.as_nanos() as u64),
            )),
            ..Criterion::plain(
                "replies",
                limit.as_nanos() as f64,
                Some(silent.as_nanos() as f64),
                "ns",
                false,
            )
        });
        self.pass = false;
        self.inconclusive = false;
    }

    /// The same verdict with more criteria (a load run's), judged anew.
    pub fn extend(&mut self, more: Vec<Criterion>) {
        self.criteria.extend(more);
        let failed = self.criteria.iter().any(|c| c.outcome == Held::No);
        self.pass = !failed && self.criteria.iter().all(|c| c.outcome == Held::Yes);
        self.inconclusive = !failed
            && self
                .criteria
                .iter()
                .any(|c| c.outcome == Held::Inconclusive);
    }

    /// A multicast run: each responder judged by the same thresholds and
    /// limits as the group, its criteria added under its name. The
    /// verdict passes only if every one holds.
    pub fn with_responders<'a>(
        mut self,
        responders: impl Iterator<Item = (String, &'a Stats, &'a Summary)>,
        thresholds: &[Threshold],
        limits: Limits,
    ) -> Self {
        let mut more = Vec::new();
        for (label, stats, summary) in responders {
            let own = Verdict::judge(stats, summary, thresholds, limits, None);
            more.extend(own.criteria.into_iter().map(|c| Criterion {
                responder: Some(label.clone()),
                ..c
            }));
        }
        self.extend(more);
        self
    }

    /// The criteria that did not hold.
    pub fn failed(&self) -> impl Iterator<Item = &Criterion> {
        self.criteria.iter().filter(|c| c.outcome == Held::No)
    }

    /// The criteria a comparison could not settle.
    pub fn unsettled(&self) -> impl Iterator<Item = &Criterion> {
        self.criteria
            .iter()
            .filter(|c| c.outcome == Held::Inconclusive)
    }
}

/// `--fail-on-regression`'s criteria, by the rule that judged the run.
fn regression_criteria(b: &BaselineComparison) -> Vec<Criterion> {
    match (b.rule, &b.test, b.limit_percent) {
        (Some(RegressionRule::Significance), Some(test), _) => test
            .figures
            .iter()
            .map(|f| {
                let outcome = match f.verdict {
                    Change::Regression => Held::No,
                    Change::NoRegression => Held::Yes,
                    Change::Inconclusive => Held::Inconclusive,
                };
                Criterion {
                    outcome,
                    detail: Some(format!(
                        "{} against the baseline",
                        super::compare_text::figure_sentence(f)
                    )),
                    ..Criterion::plain(
                        &format!("{} against the baseline", f.figure.name()),
                        b.min_effect_percent.unwrap_or(0.0),
                        f.difference_percent.or(f.difference),
                        "percent",
                        outcome == Held::Yes,
                    )
                }
            })
            .collect(),
        (Some(RegressionRule::FixedPercent), _, Some(limit)) => {
            [("p50", b.change_percent.p50), ("p99", b.change_percent.p99)]
                .into_iter()
                .map(|(name, change)| {
                    Criterion::plain(
                        &format!("{name} change against the baseline"),
                        limit,
                        Some(change),
                        "percent",
                        change <= limit,
                    )
                })
                .collect()
        }
        (Some(_), _, _) => vec![Criterion {
            detail: b
                .not_compared
                .as_ref()
                .map(|why| format!("regression against the baseline: not checked ({why})")),
            ..Criterion::plain("unchecked regression", 0.0, None, "percent", false)
        }],
        (None, _, _) => Vec::new(),
    }
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
