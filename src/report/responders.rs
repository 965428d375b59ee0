//! A multicast run's report beyond the group's own figures: a row per
//! responder (its summary shaped as the run's, its percentiles with their
//! intervals, its split, whether it went silent), and the fan-out: the
//! reply spread per request and, with STAMP, the delivery skew.

use super::percentiles::{self, Percentile};
use serde::Serialize;
use std::net::SocketAddr;
use std::time::Duration;
use synapse_engine::{GroupOutcome, ResponderOutcome};
use synapse_stats::slices::Slice;
use synapse_stats::{FanOut, RttFigures, SegmentFigures, Summary};

/// One responder.
#[derive(Debug, Clone, Serialize)]
pub struct ResponderReport {
    /// The address its answers came from.
    pub address: SocketAddr,
    /// The name its answers carried (`null`: it told none; it is known by
    /// its address).
    pub name: Option<String>,
    /// Its figures, shaped as the run's own: `rtt_ns`, `packets` (its
    /// lost, late and duplicate answers among them), jitter, outages,
    /// one-way delays with STAMP.
    #[serde(flatten)]
    pub summary: Summary,
    /// Its percentiles, each with what it rests on and its interval.
    pub percentiles: Vec<Percentile>,
    /// Its round trips split by the kernel's stamps (the send path is the
    /// request's, shared by every responder; the rest is its own).
    pub segments: Vec<SegmentFigures>,
    /// It stopped answering before the run ended: when.
    pub silent: Option<Silence>,
    /// The first request it was asked (the one it was first heard on).
    pub first_request: u64,
    /// Its own slices of consecutive requests, as the run's `slices`: what
    /// lets `synapse compare` resample this responder for its own noise.
    pub slices: Option<super::slices_json::SlicesJson>,
    /// Its index in the run (the order it was first heard in): its
    /// records' tag.
    #[serde(skip)]
    pub index: usize,
}

/// A responder that stopped answering.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Silence {
    /// The first request it did not answer, of those after its last answer.
    pub since_request: u64,
    /// Its last answer, seconds since the run started (`null`: none).
    pub last_answer_s: Option<f64>,
    /// Requests it left unanswered since, to the end of the run.
    pub requests: u64,
}

/// The fan-out: spread and skew.
#[derive(Debug, Clone, Serialize)]
pub struct FanOutReport {
    /// Per request answered by two responders or more: its slowest
    /// answer's round trip less its fastest's (ns).
    pub spread_ns: Option<RttFigures>,
    /// Requests the spread rests on.
    pub spread_requests: u64,
    /// STAMP: per such request, the latest responder's receive stamp less
    /// the earliest (ns), only from responders whose clocks say they are
    /// synchronised.
    pub skew_ns: Option<RttFigures>,
    /// The largest error two responders' clocks claimed together in a
    /// skew kept (ns): the skew's uncertainty.
    pub skew_clock_error_ns: Option<u64>,
    /// Requests whose skew could not be had (a clock not synchronised, or
    /// no receive stamp: plain echo).
    pub skew_unmeasurable: u64,
}

/// The group's part of a report.
#[derive(Debug, Clone, Serialize)]
pub struct GroupReport {
    /// The group.
    pub group: SocketAddr,
    /// Responders each request waited for at the end.
    pub expected: u32,
    /// Whether that was asked (`--responders`), or counted from those heard.
    pub expected_asked: bool,
    /// Each responder, in the order first heard.
    pub responders: Vec<ResponderReport>,
    /// How far apart each request's answers came.
    pub fan_out: FanOutReport,
    /// Answers that carried a known responder's name from another address
    /// (strays: never matched).
    pub strange: u64,
    /// Answers from responders beyond the 64 a run tells apart (strays).
    pub unlisted: u64,
}

impl ResponderReport {
    /// A responder's row: `slices`, its own, for its intervals; `last_seq`
    /// the run's last request, `warmup` its first measured one.
    fn of(
        (index, r): (usize, &ResponderOutcome),
        slices: &[Slice],
        measured: Duration,
        last_seq: u64,
    ) -> Self {
        let summary = Summary::from_stats(&r.stats, measured);
        let percentiles = percentiles::of(&summary, slices);
        let since = r.last_answer.map_or(r.first_seq, |(seq, _)| seq + 1);
        let unanswered = (last_seq + 1).saturating_sub(since);
        Self {
            address: r.address,
            name: r.name.map(|n| n.to_string()),
            summary,
            percentiles,
            segments: r.stats.breakdown().map(|b| b.figures()).unwrap_or_default(),
            // Two or more in a row at the end: an outage still open.
            silent: (unanswered >= 2).then(|| Silence {
                since_request: since,
                last_answer_s: r.last_answer.map(|(_, at)| at as f64 / 1e9),
                requests: unanswered,
            }),
            first_request: r.first_seq,
            slices: (!slices.is_empty()).then(|| super::slices_json::SlicesJson::of(slices)),
            index,
        }
    }

    /// How the report names it: its name, else its address.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| self.address.to_string())
    }
}

impl FanOutReport {
    fn of(f: &FanOut) -> Self {
        let skews = f.skews();
        Self {
            spread_ns: RttFigures::of(f.spreads()),
            spread_requests: f.spreads().len(),
            skew_ns: skews.and_then(|(h, _)| RttFigures::of(h)),
            skew_clock_error_ns: skews.map(|(_, e)| e),
            skew_unmeasurable: f.skew_unmeasurable(),
        }
    }
}

impl GroupReport {
    /// The group's part of a finished run; `slices[i]`: responder `i`'s
    /// (missing ones: no interval).
    pub fn of(g: &GroupOutcome, slices: &[Vec<Slice>], measured: Duration) -> Self {
        let mut report = Self {
            group: g.group,
            expected: g.expected,
            expected_asked: g.expected_asked,
            responders: g
                .responders
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let own = slices.get(i).map_or(&[][..], Vec::as_slice);
                    ResponderReport::of((i, r), own, measured, g.last_seq)
                })
                .collect(),
            fan_out: FanOutReport::of(&g.fan_out),
            strange: g.strange,
            unlisted: g.unlisted,
        };
        report
            .responders
            .sort_by_key(|r| (r.name.clone(), r.address));
        report
    }
}
