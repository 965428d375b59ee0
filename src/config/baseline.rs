//! Baselines: the summary of a run the user accepted as normal, and how a
//! later run compares with it.

use super::error::ConfigError;
use serde::Serialize;
use std::ops::Range;
use std::time::{SystemTime, UNIX_EPOCH};
use synapse_stats::Summary;
use toml_edit::{Item, Table, TableLike, value};

/// The accepted summary of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    /// When it was taken (UTC, RFC 3339).
    pub date: String,
    /// Median RTT (ns).
    pub p50_ns: u64,
    /// 99th percentile RTT (ns).
    pub p99_ns: u64,
    /// 99.9th percentile RTT (ns).
    pub p999_ns: u64,
    /// Lost packets, percent.
    pub loss_percent: f64,
    /// `user`, `software` or `hardware`.
    pub timestamp_source: String,
    /// The kind of run it was (`None`: set before Synapse kept it).
    pub kind: Option<super::RunKind>,
}

/// A run against its baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineComparison {
    /// The baseline.
    pub baseline: Baseline,
    /// Change of p50, p99 and p99.9, in percent of the baseline (positive is
    /// slower). The JSON report writes `null` when the run was not
    /// compared (`not_compared`).
    pub change_percent: ChangePercent,
    /// Loss now minus loss then, in percentage points.
    pub loss_change_points: f64,
    /// The old rule's limit (p50 or p99 worse by more than this percent),
    /// when the old rule judged the run.
    pub limit_percent: Option<f64>,
    /// `--min-effect`, when `--fail-on-regression` judged the run.
    pub min_effect_percent: Option<f64>,
    /// How `--fail-on-regression` judged the run (`null` without it).
    pub rule: Option<RegressionRule>,
    /// Why that rule, and what it can say, in a sentence.
    pub rule_note: Option<String>,
    /// The test's figures, when it judged the run.
    pub test: Option<synapse_stats::significance::Comparison>,
    /// Why this run was not compared with the baseline: it is of another
    /// kind (its transport, pattern, protocol, size, interval, timestamps,
    /// DSCP, IP version or reflector differ). `None`: compared.
    pub not_compared: Option<String>,
    /// What the rule found: `regression`, `no regression` or
    /// `inconclusive` (`null`: not judged).
    pub verdict: Option<synapse_stats::significance::Verdict>,
    /// The run regressed, by that rule.
    pub regressed: bool,
}

/// How `--fail-on-regression` judged a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegressionRule {
    /// The test of `synapse compare` against the baseline's stored runs.
    Significance,
    /// The old rule (p50 or p99 worse by more than `--min-effect`): the
    /// baseline keeps no runs.
    FixedPercent,
    /// Neither could judge (no stored runs readable, no `--min-effect`):
    /// the verdict fails rather than pass unchecked.
    Unchecked,
}

/// Percentile changes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChangePercent {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

fn change(now: u64, then: u64) -> f64 {
    if then == 0 {
        0.0
    } else {
        (now as f64 - then as f64) / then as f64 * 100.0
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a time after the epoch.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

impl BaselineComparison {
    /// As the JSON report writes it: no change where the run was not
    /// compared (a number the comparison does not support is not shown).
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if self.not_compared.is_some() {
            v["change_percent"] = serde_json::Value::Null;
            v["loss_change_points"] = serde_json::Value::Null;
        }
        v
    }
}

impl Baseline {
    /// The baseline a summary would make, taken at `now`; `None` when the
    /// run had no replies (a baseline of zeros would disable every later
    /// regression check).
    /// `source` is the run's `--timestamps` source: kernel stamping adds its
    /// own cost to the RTT, so a baseline says which it was taken with.
    pub fn from_summary(s: &Summary, source: &str, now: SystemTime) -> Option<Self> {
        let r = s.rtt_ns.as_ref()?;
        Some(Self {
            date: rfc3339_utc(now),
            p50_ns: r.p50,
            p99_ns: r.p99,
            p999_ns: r.p999,
            loss_percent: s.packets.loss_percent(),
            timestamp_source: source.to_string(),
            kind: None,
        })
    }

    /// The same baseline, of a run of `kind`.
    #[must_use]
    pub fn of_kind(self, kind: super::RunKind) -> Self {
        Self {
            kind: Some(kind),
            ..self
        }
    }

    /// Why a run of `kind`, stamped by `source`, is not to be compared with
    /// this baseline; `None`: alike (or a baseline too old to know).
    pub fn unlike(&self, kind: &super::RunKind, source: &str) -> Option<String> {
        let mut why = self
            .kind
            .as_ref()
            .map(|k| k.differences(kind))
            .unwrap_or_default();
        if self.timestamp_source != source {
            why.push(format!(
                "timestamps {source}, not {}",
                self.timestamp_source
            ));
        }
        (!why.is_empty()).then(|| {
            format!(
                "the baseline ({}) is of another kind of run: this one has {}",
                self.date,
                why.join(", ")
            )
        })
    }

    /// Compares a run with this baseline; `None` when the run has no RTT
    /// figures to compare (no replies).
    pub fn compare(&self, s: &Summary, limit_percent: Option<f64>) -> Option<BaselineComparison> {
        let r = s.rtt_ns.as_ref()?;
        let c = ChangePercent {
            p50: change(r.p50, self.p50_ns),
            p99: change(r.p99, self.p99_ns),
            p999: change(r.p999, self.p999_ns),
        };
        Some(BaselineComparison {
            baseline: self.clone(),
            change_percent: c,
            loss_change_points: s.packets.loss_percent() - self.loss_percent,
            limit_percent,
            min_effect_percent: None,
            rule: None,
            rule_note: None,
            test: None,
            not_compared: None,
            verdict: None,
            regressed: limit_percent.is_some_and(|l| c.p50 > l || c.p99 > l),
        })
    }

    /// The table written under `[profiles.NAME.baseline]`.
    pub fn to_table(&self) -> Table {
        let mut t = Table::new();
        t["date"] = value(self.date.clone());
        t["p50_ns"] = value(self.p50_ns as i64);
        t["p99_ns"] = value(self.p99_ns as i64);
        t["p999_ns"] = value(self.p999_ns as i64);
        t["loss_percent"] = value(self.loss_percent);
        t["timestamp_source"] = value(self.timestamp_source.clone());
        if let Some(k) = &self.kind {
            t["kind"] = Item::Table(k.to_table());
        }
        t
    }

    /// Reads a baseline table; `err` builds located errors.
    pub(crate) fn read(
        t: &dyn TableLike,
        prefix: &str,
        err: impl Fn(Option<Range<usize>>, &str, String) -> ConfigError,
    ) -> Result<Self, ConfigError> {
        let get = |k: &str| -> Result<&Item, ConfigError> {
            t.get(k)
                .ok_or_else(|| err(None, &format!("{prefix}.{k}"), "missing".to_string()))
        };
        let int = |k: &str| -> Result<u64, ConfigError> {
            let item = get(k)?;
            item.as_integer()
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| {
                    err(
                        item.span(),
                        &format!("{prefix}.{k}"),
                        "expected a non-negative integer".into(),
                    )
                })
        };
        let text = |k: &str| -> Result<String, ConfigError> {
            let item = get(k)?;
            item.as_str().map(str::to_string).ok_or_else(|| {
                err(
                    item.span(),
                    &format!("{prefix}.{k}"),
                    "expected a string".into(),
                )
            })
        };
        let loss = get("loss_percent")?;
        let loss_percent = loss
            .as_float()
            .or_else(|| loss.as_integer().map(|n| n as f64))
            .ok_or_else(|| {
                err(
                    loss.span(),
                    &format!("{prefix}.loss_percent"),
                    "expected a number".into(),
                )
            })?;
        for (k, item) in t.iter() {
            if ![
                "date",
                "p50_ns",
                "p99_ns",
                "p999_ns",
                "loss_percent",
                "timestamp_source",
                "kind",
            ]
            .contains(&k)
            {
                return Err(err(
                    item.span(),
                    &format!("{prefix}.{k}"),
                    format!("unknown key '{k}' in a baseline"),
                ));
            }
        }
        Ok(Self {
            date: text("date")?,
            p50_ns: int("p50_ns")?,
            p99_ns: int("p99_ns")?,
            p999_ns: int("p999_ns")?,
            loss_percent,
            timestamp_source: text("timestamp_source")?,
            kind: match t.get("kind") {
                None => None,
                Some(item) => {
                    let kt = item.as_table_like().ok_or_else(|| {
                        err(
                            item.span(),
                            &format!("{prefix}.kind"),
                            "expected a table".into(),
                        )
                    })?;
                    Some(super::RunKind::read(kt, &format!("{prefix}.kind"), &err)?)
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use synapse_stats::{Counters, RttFigures};

    fn summary(p50: u64, p99: u64, lost: u64) -> Summary {
        Summary {
            rtt_ns: (lost < 100).then_some(RttFigures {
                p50,
                p99,
                p999: p99 * 2,
                ..RttFigures::default()
            }),
            packets: Counters {
                sent: 100,
                received: 100 - lost,
                lost,
                ..Counters::default()
            },
            duration_s: Some(1.0),
            rate_pps: Some(100.0),
            outages: Default::default(),
            schedule: None,
            rtt_from_schedule_ns: None,
            jitter_ns: None,
            one_way_ns: None,
            loss_direction: None,
            class_of_service: None,
            distribution: Default::default(),
        }
    }

    #[test]
    fn a_run_without_replies_makes_no_baseline() {
        assert_eq!(
            Baseline::from_summary(&summary(0, 0, 100), "user", UNIX_EPOCH),
            None
        );
    }

    #[test]
    fn dates_are_utc_rfc3339() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_171_815);
        assert_eq!(rfc3339_utc(t), "2026-11-20T10:50:15Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339_utc(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn changes_are_percent_of_the_baseline_and_the_limit_judges_p50_and_p99() {
        let b = Baseline::from_summary(&summary(100_000, 200_000, 0), "user", UNIX_EPOCH).unwrap();
        let same = b
            .compare(&summary(100_000, 200_000, 0), Some(10.0))
            .unwrap();
        assert_eq!(same.change_percent.p50, 0.0);
        assert!(!same.regressed);
        let worse = b
            .compare(&summary(111_000, 200_000, 1), Some(10.0))
            .unwrap();
        assert!((worse.change_percent.p50 - 11.0).abs() < 1e-9);
        assert!((worse.loss_change_points - 1.0).abs() < 1e-9);
        assert!(worse.regressed);
        let tail = b
            .compare(&summary(100_000, 230_000, 0), Some(10.0))
            .unwrap();
        assert!(tail.regressed, "p99 counts too");
        let p999_only = b
            .compare(&summary(100_000, 200_000, 0), Some(10.0))
            .unwrap();
        assert!(!p999_only.regressed);
        assert!(
            !b.compare(&summary(300_000, 900_000, 0), None)
                .unwrap()
                .regressed,
            "no limit, no regression verdict"
        );
        let better = b.compare(&summary(50_000, 100_000, 0), Some(0.0)).unwrap();
        assert!(!better.regressed);
    }

    #[test]
    fn a_baseline_round_trips_through_its_table() {
        let kind = crate::config::RunKind {
            transport: "tcp".into(),
            pattern: "periodic".into(),
            protocol: "echo".into(),
            size: 1400,
            interval_ns: Some(1_000_000),
            dscp: Some(46),
            ip: 6,
            reflector: "remote".into(),
        };
        let b = Baseline::from_summary(&summary(123_456, 234_567, 2), "software", UNIX_EPOCH)
            .unwrap()
            .of_kind(kind);
        let t = b.to_table();
        let back = Baseline::read(&t, "b", |_, k, m| ConfigError {
            path: "x".into(),
            line: 0,
            column: 0,
            key: k.into(),
            message: m,
        })
        .unwrap();
        assert_eq!(back, b);
    }
}
