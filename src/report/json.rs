//! The `--json` report: exactly one object on stdout.

use super::{BreakdownReport, LogSummary, Report, Verdict};
use crate::config::BaselineComparison;
use serde::Serialize;
use std::io::{self, Write};
use synapse_stats::Summary;

/// The report as JSON: what `--json` prints, and `--json-stream`'s last line.
#[derive(Serialize)]
pub(super) struct JsonReport<'a> {
    synapse_version: &'static str,
    #[serde(flatten)]
    summary: &'a Summary,
    /// Each percentile with its sample count, what lies beyond it, whether
    /// it is resolved and its interval within the run.
    percentiles: &'a [super::percentiles::Percentile],
    /// How requests without a timely reply enter the figures (RFC 6703 §4).
    unanswered_treatment: &'static str,
    /// `pass`, `fail`, `inconclusive`, `interrupted` or `run failed`, and
    /// the exit status it gives.
    outcome: super::Outcome,
    exit_status: i32,
    /// The signal that stopped the run (`SIGINT`), or `null`.
    interrupted_by: Option<String>,
    verdict: &'a Verdict,
    config: serde_json::Value,
    baseline: Option<serde_json::Value>,
    breakdown: Option<&'a BreakdownReport>,
    log: Option<&'a LogSummary>,
    hdr_log: Option<&'a crate::hdr_log::HdrLogOutcome>,
    floor: Option<&'a super::FloorComparison>,
    /// Present in authenticated mode only.
    #[serde(skip_serializing_if = "Option::is_none")]
    unauthenticated_replies: Option<u64>,
    /// Present in TCP runs only.
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp: Option<&'a synapse_stats::TcpFigures>,
    stamp_extensions: Option<Extensions<'a>>,
    /// What the path said beyond silence (ICMP errors; over TCP the
    /// peer's FIN or RST), by kind and by who sent it.
    path_errors: &'a synapse_stats::PathErrors,
    /// The run gave up on a silent peer: how long it had been silent, s
    /// (`null`: it did not).
    gave_up_after_s: Option<f64>,
    /// A multicast run: the group, whom each request waited for.
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<GroupJson>,
    /// A multicast run: each responder, shaped as the run's own figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    responders: Option<&'a [super::responders::ResponderReport]>,
    /// A multicast run: the reply spread and delivery skew.
    #[serde(skip_serializing_if = "Option::is_none")]
    fan_out: Option<&'a super::responders::FanOutReport>,
    interrupted: bool,
    /// The run's slices of consecutive requests, so that `synapse compare`
    /// can resample this report for its own noise.
    slices: Option<super::slices_json::SlicesJson>,
    /// Latency under load (`--load`): its phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    load: Option<super::load::LoadJson<'a>>,
}

/// JSON `group`.
#[derive(Serialize)]
struct GroupJson {
    address: std::net::SocketAddr,
    expected_responders: u32,
    expected_asked: bool,
    /// Answers carrying a known responder's name from another address.
    strange: u64,
    /// Answers from responders beyond the 64 a run tells apart.
    unlisted: u64,
}

/// What `unanswered_treatment` says.
pub const UNANSWERED: &str = "left out of rtt_ns and percentiles (their delay is undefined); counted as at least the timeout in the percentiles and maximum a threshold judges (verdict.criteria)";

/// JSON `stamp_extensions`: what the TLVs said, and the warnings.
#[derive(Serialize)]
struct Extensions<'a> {
    #[serde(flatten)]
    summary: &'a synapse_engine::extensions::TlvSummary,
    warnings: &'a [String],
}

/// Writes the report as one JSON object and a newline.
pub fn write_json(out: &mut impl Write, report: &Report) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &document(report))?;
    writeln!(out)
}

/// The report's JSON document.
pub(super) fn document(report: &Report) -> JsonReport<'_> {
    JsonReport {
        synapse_version: env!("CARGO_PKG_VERSION"),
        summary: &report.summary,
        percentiles: &report.percentiles,
        unanswered_treatment: UNANSWERED,
        outcome: report.outcome(),
        exit_status: report.exit_status(),
        interrupted_by: report.signal.map(super::signal_name),
        verdict: &report.verdict,
        config: report.config.to_json(),
        baseline: report.baseline.as_ref().map(BaselineComparison::to_json),
        breakdown: report.breakdown.as_ref(),
        log: report.log.as_ref(),
        hdr_log: report.hdr_log.as_ref(),
        floor: report.floor.as_ref(),
        unauthenticated_replies: report.unauthenticated_replies,
        tcp: report.tcp.as_ref(),
        stamp_extensions: report.extensions.as_ref().map(|summary| Extensions {
            summary,
            warnings: &report.extension_warnings,
        }),
        path_errors: &report.path_errors,
        gave_up_after_s: report.gave_up.map(|d| d.as_secs_f64()),
        group: report.group.as_ref().map(|g| GroupJson {
            address: g.group,
            expected_responders: g.expected,
            expected_asked: g.expected_asked,
            strange: g.strange,
            unlisted: g.unlisted,
        }),
        responders: report.group.as_ref().map(|g| &g.responders[..]),
        fan_out: report.group.as_ref().map(|g| &g.fan_out),
        interrupted: report.interrupted,
        slices: (!report.slices.is_empty())
            .then(|| super::slices_json::SlicesJson::of(&report.slices)),
        load: report.load.as_ref().map(super::load::LoadReport::json),
    }
}
