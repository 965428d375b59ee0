//! The `--json` report: exactly one object on stdout.

use super::{BreakdownReport, LogSummary, Report, Verdict};
use crate::config::BaselineComparison;
use serde::Serialize;
use std::io::{self, Write};
use synapse_stats::Summary;

#[derive(Serialize)]
struct JsonReport<'a> {
    synapse_version: &'static str,
    #[serde(flatten)]
    summary: &'a Summary,
    verdict: &'a Verdict,
    config: serde_json::Value,
    baseline: Option<&'a BaselineComparison>,
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
    interrupted: bool,
}

/// JSON `stamp_extensions`: what the TLVs said, and the warnings.
#[derive(Serialize)]
struct Extensions<'a> {
    #[serde(flatten)]
    summary: &'a synapse_engine::extensions::TlvSummary,
    warnings: &'a [String],
}

/// Writes the report as one JSON object and a newline.
pub fn write_json(out: &mut impl Write, report: &Report) -> io::Result<()> {
    let doc = JsonReport {
        synapse_version: env!("CARGO_PKG_VERSION"),
        summary: &report.summary,
        verdict: &report.verdict,
        config: report.config.to_json(),
        baseline: report.baseline.as_ref(),
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
        interrupted: report.interrupted,
    };
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}
