//! Reading interval logs back: Synapse's own, or any HdrHistogram
//! interval log (Java's, Python's), for `compare`, `plot` and baselines.

use super::HdrLogError;
use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::path::Path;
use std::time::Duration;
use synapse_stats::intervals::Interval;

/// A log read back.
#[derive(Debug, Clone)]
pub struct LoggedRun {
    /// When the log says its run started, seconds since the epoch.
    pub start_time: Option<f64>,
    /// Its intervals, each with every series logged for it, in order.
    pub intervals: Vec<Interval>,
    /// The comment lines (without `#`), header included.
    pub comments: Vec<String>,
}

impl LoggedRun {
    /// Every tag in the log, in the order first seen.
    pub fn tags(&self) -> Vec<String> {
        let mut tags: Vec<String> = Vec::new();
        for i in &self.intervals {
            for (t, _) in &i.series {
                if !tags.contains(t) {
                    tags.push(t.clone());
                }
            }
        }
        tags
    }
}

/// Reads the interval log at `path`.
pub fn read(path: &Path) -> Result<LoggedRun, HdrLogError> {
    let bytes = std::fs::read(path).map_err(|source| HdrLogError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    read_text(&bytes).map_err(|why| HdrLogError::Format {
        path: path.to_path_buf(),
        why,
    })
}

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// Reads an interval log from its text.
pub fn read_text(bytes: &[u8]) -> Result<LoggedRun, String> {
    let (mut start, mut base) = (None, None);
    let mut first: Option<Duration> = None;
    let mut intervals: Vec<Interval> = Vec::new();
    let mut deserializer = Deserializer::new();
    let mut raw = Vec::new();
    for (n, entry) in IntervalLogIterator::new(bytes).enumerate() {
        let entry = entry.map_err(|e| {
            let at = match e {
                hdrhistogram::serialization::interval_log::LogIteratorError::ParseError {
                    offset,
                } => offset,
            };
            let line = bytes[..at.min(bytes.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            format!("line {line}: not an HdrHistogram interval log line")
        })?;
        match entry {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::Interval(h) => {
                let ts = h.start_timestamp();
                let first = *first.get_or_insert(ts);
                // Relative to BaseTime; without one, to StartTime when the
                // stamps are clearly deltas (the Java reader's rule), else
                // absolute: counted from the first interval.
                let rel = match (base, start) {
                    (Some(_), _) => ts,
                    (None, Some(s)) if ts + YEAR < s => ts,
                    _ => ts.saturating_sub(first),
                };
                raw.clear();
                base64::engine::general_purpose::STANDARD
                    .decode_vec(h.encoded_histogram(), &mut raw)
                    .map_err(|e| format!("entry {}: bad base64: {e}", n + 1))?;
                let hist: Histogram<u64> = deserializer
                    .deserialize(&mut raw.as_slice())
                    .map_err(|e| format!("entry {}: not a histogram: {e:?}", n + 1))?;
                let tag = h.tag().map_or_else(String::new, |t| t.as_str().to_string());
                let (start_ns, length_ns) = (rel.as_nanos() as u64, h.duration().as_nanos() as u64);
                match intervals.last_mut() {
                    Some(last) if last.start_ns == start_ns && last.length_ns == length_ns => {
                        last.series.push((tag, hist));
                    }
                    _ => intervals.push(Interval {
                        start_ns,
                        length_ns,
                        series: vec![(tag, hist)],
                    }),
                }
            }
        }
    }
    let comments = String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(str::to_string)
        .collect();
    Ok(LoggedRun {
        start_time: start.or(base).map(|d| d.as_secs_f64()),
        intervals,
        comments,
    })
}
