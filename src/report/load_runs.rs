//! A load run read back from its JSON report (its `load` object), for
//! `synapse compare` (each phase's inflation) and `synapse plot` (the
//! load and the round trip over time, the stage split).

use synapse_stats::load::compare::PhaseRun;

/// One phase as the report gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseRead {
    /// `idle`, `download`, …
    pub name: String,
    /// When it started and how long it ran, seconds.
    pub start_s: f64,
    /// Its length.
    pub duration_s: f64,
    /// Its p50 inflation and interval (loaded phases).
    pub inflation: Option<PhaseRun>,
    /// Each stage's share of the added delay, by its key.
    pub shares: Vec<(String, f64)>,
}

/// A quarter second of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct BinRead {
    /// Its start, seconds.
    pub t_s: f64,
    /// Its phase.
    pub phase: String,
    /// Its median round trip, ns.
    pub p50_ns: Option<f64>,
}

/// One second of the load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPoint {
    /// Its end, seconds.
    pub t_s: f64,
    /// Goodput each way, bits per second.
    pub down: Option<f64>,
    /// Up.
    pub up: Option<f64>,
}

/// A load run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadRead {
    /// Its phases, in order.
    pub phases: Vec<PhaseRead>,
    /// The round trip over time.
    pub timeline: Vec<BinRead>,
    /// The load over time.
    pub throughput: Vec<LoadPoint>,
}

impl LoadRead {
    /// The load object of a JSON report, when it has one.
    pub fn of(report: &serde_json::Value) -> Option<Self> {
        let l = report.get("load")?;
        let f = |v: &serde_json::Value, k: &str| v[k].as_f64();
        let phases = l["phases"]
            .as_array()?
            .iter()
            .map(|p| PhaseRead {
                name: p["name"].as_str().unwrap_or("?").to_string(),
                start_s: f(p, "start_s").unwrap_or(0.0),
                duration_s: f(p, "duration_s").unwrap_or(0.0),
                inflation: f(&p["inflation_ns"], "p50").map(|p50_ns| PhaseRun {
                    p50_ns,
                    ci: f(&p["inflation_ns"], "p50_ci_low")
                        .zip(f(&p["inflation_ns"], "p50_ci_high")),
                }),
                shares: p["stage_share"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        let list = |k: &str| l[k].as_array().cloned().unwrap_or_default();
        Some(Self {
            phases,
            timeline: list("timeline")
                .iter()
                .map(|b| BinRead {
                    t_s: f(b, "t_s").unwrap_or(0.0),
                    phase: b["phase"].as_str().unwrap_or("idle").to_string(),
                    p50_ns: f(b, "p50_ns"),
                })
                .collect(),
            throughput: list("throughput")
                .iter()
                .map(|t| LoadPoint {
                    t_s: f(t, "t_s").unwrap_or(0.0),
                    down: f(t, "down"),
                    up: f(t, "up"),
                })
                .collect(),
        })
    }

    /// The loaded phases' inflations, by phase name.
    pub fn inflations(&self) -> impl Iterator<Item = (&str, PhaseRun)> {
        self.phases
            .iter()
            .filter_map(|p| Some((p.name.as_str(), p.inflation?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reports_load_object_reads_back() {
        let j = serde_json::json!({"load": {
            "phases": [
                {"name": "idle", "start_s": 0.0, "duration_s": 2.0, "stage_share": {}},
                {"name": "download", "start_s": 2.0, "duration_s": 6.0,
                 "inflation_ns": {"p50": 5e8, "p50_ci_low": 4.8e8, "p50_ci_high": 5.2e8},
                 "stage_share": {"backward": 0.98, "forward": 0.02}}
            ],
            "timeline": [{"t_s": 0.25, "phase": "idle", "p50_ns": 1e6}],
            "throughput": [{"t_s": 3.0, "phase": "download", "down": 9.5e6}]
        }});
        let l = LoadRead::of(&j).unwrap();
        assert_eq!(l.phases.len(), 2);
        let (name, run) = l.inflations().next().unwrap();
        assert_eq!(
            (name, run.p50_ns, run.ci),
            ("download", 5e8, Some((4.8e8, 5.2e8)))
        );
        assert_eq!(l.timeline[0].p50_ns, Some(1e6));
        assert_eq!(
            (l.throughput[0].down, l.throughput[0].up),
            (Some(9.5e6), None)
        );
        assert!(LoadRead::of(&serde_json::json!({"packets": {}})).is_none());
    }
}
