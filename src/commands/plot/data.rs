//! What a picture draws of one run, read off its input: an interval log
//! (its intervals, its outages where they began, its split), a JSON report
//! with slices (its slices over time, its percentiles from their merged
//! histogram), or one with figures only (its percentiles as points).
//!
//! Nothing absent becomes a zero here: an interval without replies has no
//! p50, an interval without stamped packets no split.

use crate::report::runs::Input;
use hdrhistogram::Histogram;
use synapse_stats::Segment;
use synapse_stats::intervals::{Interval, OUTAGE, RTT, UNANSWERED, empty_histogram};
use synapse_stats::slices::Slice;

/// The deepest quantile drawn: 1/(1−q) up to 10^5 (p99.999).
pub const MAX_NINES: f64 = 5.0;

/// A run's distribution: a line from a histogram, or a report's figures.
#[derive(Debug, Clone)]
pub enum Curve {
    /// (nines, µs) along the whole distribution.
    Line(Vec<(f64, f64)>),
    /// (nines, µs) at the figures a report gave.
    Points(Vec<(f64, f64)>),
}

/// One interval (or slice) of a run, seconds and µs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its start and end, s after the run's start.
    pub start: f64,
    /// Its end.
    pub end: f64,
    /// p50, p99 and maximum of its timely replies: `None` without any.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Slowest.
    pub max: Option<f64>,
    /// Timely replies.
    pub replies: u64,
    /// Requests without a timely reply.
    pub unanswered: u64,
}

impl Row {
    /// Its middle, where its figures are drawn.
    pub fn mid(&self) -> f64 {
        (self.start + self.end) / 2.0
    }
}

/// The split over time: each interval's segment means, stacked.
#[derive(Debug, Clone)]
pub struct Split {
    /// The segments present in the run, bottom to top.
    pub segments: Vec<Segment>,
    /// Per interval: (start s, end s, the stacked tops in µs, or `None`
    /// when the interval had no stamped packet for every segment).
    pub rows: Vec<(f64, f64, Option<Vec<f64>>)>,
}

/// What is drawn of one run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Its name in legends.
    pub name: String,
    /// Its distribution.
    pub curve: Curve,
    /// Over time (empty: the input has no time).
    pub rows: Vec<Row>,
    /// Outages, (start, end) s.
    pub outages: Vec<(f64, f64)>,
    /// Its split, if its input has one.
    pub split: Option<Split>,
    /// Why it has no time, when it has none.
    pub why_no_time: Option<&'static str>,
    /// Why it has no split, when it has none.
    pub why_no_split: &'static str,
}

/// A short name for a run in a legend: the file's name.
pub fn short(label: &str) -> String {
    std::path::Path::new(label)
        .file_name()
        .map_or_else(|| label.to_string(), |f| f.to_string_lossy().into_owned())
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A histogram's distribution along the nines axis, µs.
fn line_of(h: &Histogram<u64>) -> Curve {
    let deepest = (h.len().max(1) as f64).log10().min(MAX_NINES);
    let pts = (0..=(deepest * 100.0) as usize)
        .map(|k| {
            let x = k as f64 / 100.0;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64 / 1e3)
        })
        .collect();
    Curve::Line(pts)
}

/// A row of a histogram of replies and a count of unanswered requests.
fn row(start_ns: u64, end_ns: u64, rtt: Option<&Histogram<u64>>, unanswered: u64) -> Row {
    let rtt = rtt.filter(|h| !h.is_empty());
    let q = |q: f64| rtt.map(|h| h.value_at_quantile(q) as f64 / 1e3);
    Row {
        start: secs(start_ns),
        end: secs(end_ns),
        p50: q(0.5),
        p99: q(0.99),
        max: q(1.0),
        replies: rtt.map_or(0, Histogram::len),
        unanswered,
    }
}

impl Run {
    /// What `input` gives to draw; `prefix`: an agent peer's series.
    pub fn of(input: &Input, prefix: &str) -> Self {
        let name = short(&input.label);
        if let Some(log) = &input.log {
            return Self::of_log(
                name,
                &log.intervals,
                log.outages(&format!("{prefix}{OUTAGE}")),
                prefix,
            );
        }
        if !input.slices.is_empty() {
            return Self::of_slices(name, &input.slices);
        }
        let pts = input
            .percentiles
            .iter()
            .map(|&(q, ns)| (-(1.0 - q).log10(), ns / 1e3))
            .collect();
        Self {
            name,
            curve: Curve::Points(pts),
            rows: Vec::new(),
            outages: Vec::new(),
            split: None,
            why_no_time: Some("a report without slices holds figures only, no time"),
            why_no_split: "a report holds no split over time",
        }
    }

    fn of_log(name: String, log: &[Interval], outages: Vec<(u64, u64)>, prefix: &str) -> Self {
        let (rtt, lost) = (format!("{prefix}{RTT}"), format!("{prefix}{UNANSWERED}"));
        let mut all = empty_histogram();
        for h in log.iter().filter_map(|i| i.get(&rtt)) {
            let _ = all.add(h);
        }
        let rows = log
            .iter()
            .map(|i| {
                let unanswered = i.get(&lost).map_or(0, Histogram::len);
                row(
                    i.start_ns,
                    i.start_ns + i.length_ns,
                    i.get(&rtt),
                    unanswered,
                )
            })
            .collect();
        let split = split_of(log, prefix);
        Self {
            name,
            curve: line_of(&all),
            rows,
            outages: outages
                .into_iter()
                .map(|(s, e)| (secs(s), secs(e)))
                .collect(),
            why_no_split: if split.is_none() {
                "its log has no segments (kernel stamps were off, or the peer's log has none)"
            } else {
                ""
            },
            split,
            why_no_time: None,
        }
    }

    fn of_slices(name: String, slices: &[Slice]) -> Self {
        let mut all = empty_histogram();
        let rows = slices
            .iter()
            .map(|s| {
                let mut h = empty_histogram();
                for &(v, n) in &s.rtt {
                    let _ = h.record_n(v, n);
                }
                let _ = all.add(&h);
                row(s.start_ns, s.end_ns, Some(&h), s.unanswered)
            })
            .collect();
        Self {
            name,
            curve: line_of(&all),
            rows,
            outages: Vec::new(),
            split: None,
            why_no_time: None,
            why_no_split: "a report's slices hold round trips only, no split",
        }
    }
}

/// The split of a log's intervals, if it has any segment.
fn split_of(log: &[Interval], prefix: &str) -> Option<Split> {
    let tag = |s: &Segment| format!("{prefix}{}", s.key());
    let segments: Vec<Segment> = [
        Segment::Send,
        Segment::Network,
        Segment::Dwell,
        Segment::Receive,
    ]
    .into_iter()
    .filter(|s| log.iter().any(|i| i.get(&tag(s)).is_some()))
    .collect();
    if segments.is_empty() {
        return None;
    }
    let rows = log
        .iter()
        .map(|i| {
            let means: Option<Vec<f64>> = segments
                .iter()
                .map(|s| {
                    i.get(&tag(s))
                        .filter(|h| !h.is_empty())
                        .map(|h| h.mean() / 1e3)
                })
                .collect();
            let tops = means.map(|m| {
                m.iter()
                    .scan(0.0, |acc, v| {
                        *acc += v;
                        Some(*acc)
                    })
                    .collect()
            });
            (secs(i.start_ns), secs(i.start_ns + i.length_ns), tops)
        })
        .collect();
    Some(Split { segments, rows })
}

/// Runs of neighbouring items that each have a value: an item starts a
/// new run after one without, or after a stretch of time with none.
pub fn contiguous<T>(
    items: &[T],
    span: impl Fn(&T) -> (f64, f64),
    has: impl Fn(&T) -> bool,
) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for (k, item) in items.iter().enumerate() {
        if !has(item) {
            continue;
        }
        let joins = out.last().is_some_and(|r| {
            let (_, prev_end) = span(&items[r.end - 1]);
            let (start, end) = span(item);
            r.end == k && start <= prev_end + (end - start).abs() * 0.01 + 1e-9
        });
        match out.last_mut() {
            Some(r) if joins => r.end = k + 1,
            _ => out.push(k..k + 1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(start_ms: u64, replies: &[u64], unanswered: u64) -> Interval {
        let mut series = Vec::new();
        if !replies.is_empty() {
            let mut h = empty_histogram();
            for &v in replies {
                h.record(v).unwrap();
            }
            series.push((RTT.to_string(), h));
        }
        if unanswered > 0 {
            let mut h = empty_histogram();
            h.record_n(100_000_000, unanswered).unwrap();
            series.push((UNANSWERED.to_string(), h));
        }
        Interval {
            start_ns: start_ms * 1_000_000,
            length_ns: 1_000_000_000,
            series,
        }
    }

    /// Issue 51: an interval without replies has no figures (never 0).
    #[test]
    fn an_interval_without_replies_has_no_figures() {
        let log = [
            interval(0, &[50_000, 60_000], 0),
            interval(1_000, &[], 10),
            interval(2_000, &[70_000], 1),
        ];
        let run = Run::of_log("r".into(), &log, vec![(1_500_000_000, 2_100_000_000)], "");
        let p50: Vec<Option<f64>> = run.rows.iter().map(|r| r.p50).collect();
        assert_eq!(p50[1], None);
        assert!(p50[0].unwrap() > 49.0 && p50[2].unwrap() > 69.0);
        assert_eq!((run.rows[1].replies, run.rows[1].unanswered), (0, 10));
        assert_eq!(run.outages, [(1.5, 2.1)]);
        assert!(run.split.is_none());
        let runs = contiguous(&run.rows, |r| (r.start, r.end), |r| r.p50.is_some());
        assert_eq!(runs, [0..1, 2..3], "the gap breaks the line");
    }

    #[test]
    fn neighbours_apart_in_time_are_not_joined() {
        let rows = [(0.0, 1.0), (1.0, 2.0), (5.0, 6.0)];
        assert_eq!(contiguous(&rows, |r| *r, |_| true), [0..2, 2..3]);
    }
}
