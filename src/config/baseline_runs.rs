//! A baseline's interval histograms: kept in the store beside the TOML
//! file (`baselines/PROFILE/run-N.hlog` next to `config.toml`), never in it,
//! as HdrHistogram interval logs. The TOML keeps the figures a person
//! reads; these keep the whole distribution and its course, which the
//! regression test resamples. A baseline may hold several runs: the more
//! it has, the better it knows the run-to-run variation.

use super::error::ConfigError;
use crate::hdr_log::{self, LoggedRun};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use synapse_stats::intervals::Interval;

/// Runs a baseline keeps at most; adding one more drops the oldest.
pub const MAX_RUNS: usize = 20;

/// Where profile `name`'s baseline runs live, beside `config`.
pub fn dir(config: &Path, name: &str) -> PathBuf {
    config
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("baselines")
        .join(name)
}

fn io_err(path: &Path, e: &std::io::Error) -> ConfigError {
    ConfigError::io(path, e)
}

/// The stored runs' files, oldest first.
fn files(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name
                .strip_prefix("run-")?
                .strip_suffix(".hlog")?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .collect();
    found.sort();
    found
}

/// Stores a run's intervals in profile `name`'s baseline: as its only run
/// (`replace`), or beside the runs already there. Returns how many runs the
/// baseline now holds.
pub fn save(
    config: &Path,
    name: &str,
    intervals: &[Interval],
    taken: SystemTime,
    replace: bool,
) -> Result<usize, ConfigError> {
    let dir = dir(config, name);
    std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, &e))?;
    let mut old = files(&dir);
    if replace {
        for (_, p) in old.drain(..) {
            std::fs::remove_file(&p).map_err(|e| io_err(&p, &e))?;
        }
    }
    while old.len() >= MAX_RUNS {
        let (_, p) = old.remove(0);
        std::fs::remove_file(&p).map_err(|e| io_err(&p, &e))?;
    }
    let next = old.last().map_or(1, |(n, _)| n + 1);
    let path = dir.join(format!("run-{next}.hlog"));
    let mut text = Vec::new();
    for line in hdr_log::header(&format!("baseline of profile '{name}'")) {
        let _ = writeln!(text, "#{line}");
    }
    let secs = taken
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let _ = writeln!(
        text,
        "#[Histogram log format version {}]",
        hdr_log::FORMAT_VERSION
    );
    let _ = writeln!(text, "#[StartTime: {secs:.3} (seconds since epoch)]");
    let _ = writeln!(text, "#[BaseTime: {secs:.3} (seconds since epoch)]");
    hdr_log::encode(intervals, &mut text).map_err(|e| io_err(&path, &e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| io_err(&dir, &e))?;
    tmp.write_all(&text)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io_err(&path, &e))?;
    tmp.persist(&path).map_err(|e| io_err(&path, &e.error))?;
    Ok(old.len() + 1)
}

/// How many runs profile `name`'s baseline holds.
pub fn count(config: &Path, name: &str) -> usize {
    files(&dir(config, name)).len()
}

/// Profile `name`'s stored runs, oldest first (none: a baseline from before
/// Synapse kept histograms, or none at all).
pub fn load(config: &Path, name: &str) -> Result<Vec<(PathBuf, LoggedRun)>, ConfigError> {
    files(&dir(config, name))
        .into_iter()
        .map(|(_, p)| {
            hdr_log::read(&p)
                .map(|run| (p.clone(), run))
                .map_err(|e| ConfigError {
                    path: p.clone(),
                    line: 0,
                    column: 0,
                    key: String::new(),
                    message: e.to_string(),
                })
        })
        .collect()
}

/// Forgets profile `name`'s runs (the profile was removed).
pub fn remove(config: &Path, name: &str) -> Result<(), ConfigError> {
    let dir = dir(config, name);
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(&dir, &e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use synapse_stats::Record;
    use synapse_stats::intervals::IntervalRecorder;

    fn run(rtt: u64) -> Vec<Interval> {
        let mut r = IntervalRecorder::new(Duration::from_millis(100));
        for i in 0..50u64 {
            r.add_record(i * 10_000_000, &Record::sample(i, 0, rtt, false), 0, "");
        }
        r.finish(500_000_000)
    }

    #[test]
    fn runs_are_kept_beside_the_file_added_replaced_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let config = d.path().join("config.toml");
        assert!(load(&config, "lab").unwrap().is_empty());
        assert_eq!(
            save(&config, "lab", &run(1_000), SystemTime::now(), true).unwrap(),
            1
        );
        assert_eq!(
            save(&config, "lab", &run(2_000), SystemTime::now(), false).unwrap(),
            2
        );
        let runs = load(&config, "lab").unwrap();
        assert_eq!(runs.len(), 2);
        assert!(runs[0].0.ends_with("baselines/lab/run-1.hlog"));
        assert_eq!(runs[1].1.intervals.len(), 5);
        let h = runs[1].1.intervals[0].get("rtt").unwrap();
        assert_eq!((h.len(), h.max()), (10, h.highest_equivalent(2_000)));
        assert_eq!(
            save(&config, "lab", &run(3_000), SystemTime::now(), true).unwrap(),
            1
        );
        let only = load(&config, "lab").unwrap();
        assert_eq!(only.len(), 1);
        let h = only[0].1.intervals[0].get("rtt").unwrap();
        assert_eq!(
            h.max(),
            h.highest_equivalent(3_000),
            "the new run replaced both"
        );
        for _ in 0..MAX_RUNS + 3 {
            save(&config, "lab", &run(3_000), SystemTime::now(), false).unwrap();
        }
        assert_eq!(load(&config, "lab").unwrap().len(), MAX_RUNS);
        remove(&config, "lab").unwrap();
        assert!(load(&config, "lab").unwrap().is_empty());
    }
}
