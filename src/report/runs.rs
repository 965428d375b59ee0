//! Runs read back for `compare` and `plot`: JSON reports, interval logs
//! (`--hdr-log`, or any HdrHistogram interval log), and profiles' stored
//! baselines (`baseline:PROFILE`).

use crate::config::{self, baseline_runs};
use crate::error::AppError;
use crate::hdr_log::{self, LoggedRun};
use std::path::{Path, PathBuf};
use synapse_stats::intervals::RTT;
use synapse_stats::significance::Run;
use synapse_stats::slices::Slice;
use synapse_units::count_of;

/// One run read back.
#[derive(Debug, Clone)]
pub struct Input {
    /// How the report names it.
    pub label: String,
    /// What it is, in a few words.
    pub what: String,
    /// As the comparison sees it.
    pub run: Run,
    /// Its intervals, when it has them.
    pub log: Option<LoggedRun>,
    /// A JSON report's percentiles: (quantile, ns).
    pub percentiles: Vec<(f64, f64)>,
    /// A JSON report's slices, when it has them (its run over time).
    pub slices: Vec<Slice>,
    /// A load run's phases and series (a JSON report of `--load`).
    pub load: Option<super::load_runs::LoadRead>,
    /// A multicast run's responders, each read as a run of its own (its
    /// label the run's and its name, or its address).
    pub responders: Vec<Responder>,
}

/// One responder of a multicast run read back.
#[derive(Debug, Clone)]
pub struct Responder {
    /// Its name, else its address: what it is matched by across runs.
    pub key: String,
    pub input: Input,
}

/// The series prefix of `--peer NAME` (an agent's log), or none.
pub fn prefix(peer: Option<&str>) -> String {
    peer.map(crate::hdr_log::peer_prefix).unwrap_or_default()
}

/// Reads `spec`: a file, or `baseline:PROFILE` (all its runs).
pub fn load(
    spec: &str,
    config_file: Option<&PathBuf>,
    prefix: &str,
) -> Result<Vec<Input>, AppError> {
    if let Some(name) = spec.strip_prefix("baseline:") {
        return baseline(name, config_file, prefix);
    }
    let path = Path::new(spec);
    let bytes = std::fs::read(path).map_err(|source| hdr_log::HdrLogError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return Ok(vec![json_report(spec, &bytes)?]);
    }
    let log = hdr_log::read_text(&bytes)
        .map_err(|why| AppError::Usage(format!("{}: {why}", path.display())))?;
    Ok(vec![from_log(spec, log, prefix)?])
}

fn from_log(label: &str, log: LoggedRun, prefix: &str) -> Result<Input, AppError> {
    if let Some(cut) = &log.cut_short {
        crate::console::note(&format!("{label}: {cut}"));
    }
    let tag = format!("{prefix}{RTT}");
    let replies: u64 = log
        .intervals
        .iter()
        .filter_map(|i| i.get(&tag))
        .map(|h| h.len())
        .sum();
    if log.intervals.is_empty() || !log.tags().contains(&tag) {
        let tags = log.tags().join(", ");
        return Err(AppError::Usage(format!(
            "{label}: no '{tag}' series in this interval log (it has: {})",
            if tags.is_empty() { "none" } else { &tags }
        )));
    }
    let length = log.intervals[0].length_ns;
    Ok(Input {
        label: label.into(),
        what: format!(
            "interval log: {} of {}, {}",
            count_of(log.intervals.len() as u64, "interval"),
            synapse_units::format_ns(length as f64),
            if replies == 1 {
                "1 reply".to_string()
            } else {
                format!("{} replies", synapse_units::group_thousands(replies))
            }
        ),
        run: Run::from_intervals(label, &log.intervals, prefix),
        log: Some(log),
        percentiles: Vec::new(),
        slices: Vec::new(),
        load: None,
        responders: Vec::new(),
    })
}

fn json_report(label: &str, bytes: &[u8]) -> Result<Input, AppError> {
    let j: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| AppError::Usage(format!("{label}: not JSON: {e}")))?;
    let mut input = json_figures(label, &j)?;
    input.load = super::load_runs::LoadRead::of(&j);
    for r in j["responders"].as_array().into_iter().flatten() {
        let Some(key) = r["name"].as_str().or(r["address"].as_str()) else {
            continue;
        };
        let own = json_figures(&format!("{label} {key}"), r)?;
        input.responders.push(Responder {
            key: key.to_string(),
            input: own,
        });
    }
    Ok(input)
}

/// A run's figures from a JSON object shaped as a report (the report
/// itself, or one of its responders): `packets`, `rtt_ns`, `slices`.
fn json_figures(label: &str, j: &serde_json::Value) -> Result<Input, AppError> {
    let bad = |why: &str| AppError::Usage(format!("{label}: {why}"));
    let packets = &j["packets"];
    let count = |k: &str| packets[k].as_u64();
    let (Some(sent), Some(lost), Some(late)) = (count("sent"), count("lost"), count("late")) else {
        return Err(bad(
            "not a Synapse JSON report (no packets.sent, lost, late)",
        ));
    };
    let rtt = &j["rtt_ns"];
    let get = |k: &str| rtt[k].as_f64();
    let figures = [
        get("p50"),
        get("p90"),
        get("p99"),
        get("p999"),
        get("mean"),
        (sent > 0).then(|| 100.0 * (lost + late) as f64 / sent as f64),
    ];
    let percentiles = [
        (0.5, "p50"),
        (0.9, "p90"),
        (0.99, "p99"),
        (0.999, "p999"),
        (0.9999, "p9999"),
    ]
    .iter()
    .filter_map(|&(q, k)| Some((q, get(k)?)))
    .collect();
    // A report with its slices is resampled like an interval log.
    let (run, what, slices) = match j.get("slices").filter(|v| !v.is_null()) {
        Some(v) => {
            let slices = super::slices_json::read(v).map_err(|e| bad(&e))?;
            let n = slices.len() as u64;
            (
                Run::from_slices(label, &slices),
                format!("JSON report: {sent} sent, {}", count_of(n, "slice")),
                slices,
            )
        }
        None => (
            Run::from_figures(label, figures, sent, lost + late),
            format!(
                "JSON report: {sent} sent, figures only (no slices: its own noise is not known)"
            ),
            Vec::new(),
        ),
    };
    Ok(Input {
        label: label.into(),
        what,
        run,
        log: None,
        percentiles,
        slices,
        load: None,
        responders: Vec::new(),
    })
}

fn baseline(
    name: &str,
    config_file: Option<&PathBuf>,
    prefix: &str,
) -> Result<Vec<Input>, AppError> {
    let cfg = config::load(config_file, false, &crate::cli::settings_schema())?;
    let profile = cfg.profile(name)?;
    let runs = baseline_runs::load(&cfg.path, name)?;
    if !runs.is_empty() {
        return runs
            .into_iter()
            .map(|(path, log)| {
                let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
                let label = format!("baseline:{name}/{}", file.unwrap_or_default());
                from_log(&label, log, prefix)
            })
            .collect();
    }
    let Some(b) = &profile.baseline else {
        return Err(AppError::Usage(format!(
            "profile '{name}' has no baseline (--set-baseline keeps one)"
        )));
    };
    // A baseline from before Synapse kept histograms: its figures only.
    let figures = [
        Some(b.p50_ns as f64),
        None,
        Some(b.p99_ns as f64),
        Some(b.p999_ns as f64),
        None,
        Some(b.loss_percent),
    ];
    let label = format!("baseline:{name}");
    Ok(vec![Input {
        what: format!("baseline of {} (figures only, no histograms)", b.date),
        run: Run::from_figures(&label, figures, 0, 0),
        label,
        log: None,
        percentiles: vec![
            (0.5, b.p50_ns as f64),
            (0.99, b.p99_ns as f64),
            (0.999, b.p999_ns as f64),
        ],
        slices: Vec::new(),
        load: None,
        responders: Vec::new(),
    }])
}
