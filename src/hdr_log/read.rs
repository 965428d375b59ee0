//! Reading interval logs back: Synapse's own, or any HdrHistogram
//! interval log (Java's, Python's), for `compare`, `plot` and baselines.

use super::HdrLogError;
use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::path::Path;
use std::time::Duration;
use synapse_stats::intervals::{Interval, OUTAGE};
use synapse_units::count_of;

/// A log read back.
#[derive(Debug, Clone)]
pub struct LoggedRun {
    /// When the log says its run started, seconds since the epoch.
    pub start_time: Option<f64>,
    /// Its intervals, each with every series logged for it, in order.
    pub intervals: Vec<Interval>,
    /// Outages (series `outage`, any prefix), each as its line says: from
    /// Synapse, a line spanning the outage; from older logs, the interval
    /// the outage ended in (see [`LoggedRun::outages`]).
    pub spans: Vec<Interval>,
    /// The comment lines (without `#`), header included.
    pub comments: Vec<String>,
    /// The log was cut short (a write interrupted): what was read of it.
    pub cut_short: Option<String>,
}

impl LoggedRun {
    /// The outages of series `tag` (`outage`, or a peer's `NAME/outage`),
    /// as (start, end) ns: each from its length back from where its line
    /// ends, so a line spanning its outage gives it exactly, and an older
    /// log's line (the interval it ended in) within that interval.
    pub fn outages(&self, tag: &str) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for span in &self.spans {
            let Some(h) = span.get(tag) else { continue };
            let end = span.start_ns + span.length_ns;
            for v in h.iter_recorded() {
                let value = v.value_iterated_to();
                // A line spanning its one outage has its exact length.
                let length = if h.len() == 1 && h.equivalent(value, span.length_ns) {
                    span.length_ns
                } else {
                    h.highest_equivalent(value)
                };
                for _ in 0..v.count_at_value() {
                    out.push((end.saturating_sub(length), end));
                }
            }
        }
        out
    }

    /// Every tag in the log, in the order first seen.
    pub fn tags(&self) -> Vec<String> {
        let mut tags: Vec<String> = Vec::new();
        for i in self.intervals.iter().chain(&self.spans) {
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

/// Reads an interval log from its text. A log whose last line was cut
/// short (its writer stopped mid-line) is read up to its last whole
/// interval, and says so in [`LoggedRun::cut_short`].
pub fn read_text(bytes: &[u8]) -> Result<LoggedRun, String> {
    let whole = match parse(bytes) {
        Ok(run) => return Ok(run),
        Err(e) => {
            // Only a last line without its newline can have been cut.
            let Some(at) = bytes.iter().rposition(|&b| b == b'\n').map(|p| p + 1) else {
                return Err(e);
            };
            if at == bytes.len() {
                return Err(e);
            }
            (at, e)
        }
    };
    let (at, why) = whole;
    let mut run = parse(&bytes[..at]).map_err(|_| why)?;
    let cut = String::from_utf8_lossy(&bytes[at..]);
    let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    // The cut line may have been one of the last interval's series: that
    // interval is not whole unless the line began another.
    let cut_start = cut
        .strip_prefix("Tag=")
        .map_or(Some(&*cut), |rest| rest.split_once(',').map(|(_, r)| r))
        .and_then(|r| r.split_once(','))
        .and_then(|(t, _)| t.parse::<f64>().ok());
    if let Some(last) = run.intervals.last() {
        let began_another = cut_start
            .is_some_and(|s| (s * 1e9).round() as u64 > last.start_ns + last.length_ns / 2);
        if !began_another && !cut.starts_with('#') {
            run.intervals.pop();
        }
    }
    let read = run.intervals.last().map_or("nothing".to_string(), |l| {
        let secs = (l.start_ns + l.length_ns) as f64 / 1e9;
        format!(
            "{} ({secs:.3} s)",
            count_of(run.intervals.len() as u64, "whole interval")
        )
    });
    run.cut_short = Some(format!(
        "cut short at line {line} (its writer stopped mid-line): read up to its last whole interval, {read}"
    ));
    Ok(run)
}

/// Reads a log that must be whole.
fn parse(bytes: &[u8]) -> Result<LoggedRun, String> {
    let (mut start, mut base) = (None, None);
    let mut first: Option<Duration> = None;
    let mut intervals: Vec<Interval> = Vec::new();
    let mut spans: Vec<Interval> = Vec::new();
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
        let h = match entry {
            LogEntry::StartTime(t) => {
                start = Some(t);
                continue;
            }
            LogEntry::BaseTime(t) => {
                base = Some(t);
                continue;
            }
            LogEntry::Interval(h) => h,
        };
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
        if tag.ends_with(OUTAGE) {
            spans.push(Interval {
                start_ns,
                length_ns,
                series: vec![(tag, hist)],
            });
            continue;
        }
        // Series of one interval share its times; a tag seen again at the
        // same (millisecond) times starts the next interval.
        match intervals.last_mut() {
            Some(last)
                if last.start_ns == start_ns
                    && last.length_ns == length_ns
                    && last.get(&tag).is_none() =>
            {
                last.series.push((tag, hist));
            }
            _ => intervals.push(Interval {
                start_ns,
                length_ns,
                series: vec![(tag, hist)],
            }),
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
        spans,
        comments,
        cut_short: None,
    })
}
