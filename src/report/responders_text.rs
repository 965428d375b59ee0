//! The text report's multicast part: a row per responder, each one's
//! split, the reply spread and the delivery skew.

use super::percentiles::Percentile;
use super::responders::{FanOutReport, GroupReport, ResponderReport};
use std::io::{self, Write};
use synapse_stats::RttFigures;
use synapse_units::{count_of, format_ns, group_thousands};

/// Writes the group's part of the report.
pub fn write_group(out: &mut impl Write, g: &GroupReport) -> io::Result<()> {
    let waited = if g.expected_asked {
        format!("each request waited for {} (--responders)", g.expected)
    } else {
        format!(
            "each request waited for {}, as many as answered",
            count_of(u64::from(g.expected), "responder")
        )
    };
    writeln!(
        out,
        "Responders of {} ({} heard; {waited}; the group's figures above are each request's slowest answer):",
        g.group,
        g.responders.len()
    )?;
    if g.responders.is_empty() {
        writeln!(out, "  (none answered)")?;
    }
    write_rows(out, &g.responders)?;
    if g.strange + g.unlisted > 0 {
        writeln!(
            out,
            "  Strays: {} with a known responder's name from another address, {} from responders beyond the 64 told apart",
            group_thousands(g.strange),
            group_thousands(g.unlisted)
        )?;
    }
    writeln!(out)?;
    write_splits(out, &g.responders)?;
    write_fan_out(out, &g.fan_out)?;
    writeln!(out)
}

/// One row per responder: its answers, losses and percentiles, and when it
/// went silent.
fn write_rows(out: &mut impl Write, rows: &[ResponderReport]) -> io::Result<()> {
    let width = rows
        .iter()
        .map(|r| label(r).len())
        .max()
        .unwrap_or(9)
        .max(9);
    writeln!(
        out,
        "  {:<width$} {:>9} {:>7} {:>6} {:>6} {:>6}   {:<30} {:>10} {:>10}",
        "responder",
        "answered",
        "lost",
        "loss",
        "late",
        "dup",
        "P50 [95 % within the run]",
        "P99",
        "max"
    )?;
    for r in rows {
        let p = &r.summary.packets;
        let loss = if p.sent == 0 {
            "—".to_string()
        } else {
            format!("{:.1} %", 100.0 * (p.lost + p.late) as f64 / p.sent as f64)
        };
        let rtt = r.summary.rtt_ns.as_ref();
        writeln!(
            out,
            "  {:<width$} {:>9} {:>7} {:>6} {:>6} {:>6}   {:<30} {:>10} {:>10}",
            label(r),
            group_thousands(p.received),
            group_thousands(p.lost),
            loss,
            group_thousands(p.late),
            group_thousands(p.duplicate),
            median(rtt, r.percentiles.first()),
            shown(rtt.map(|f| f.p99)),
            shown(rtt.map(|f| f.max)),
        )?;
        if let Some(s) = &r.silent {
            let last = s.last_answer_s.map_or_else(
                || "it never answered".to_string(),
                |t| format!("its last answer at {t:.2} s"),
            );
            writeln!(
                out,
                "  {:<width$} silent since request {} ({last}): {} unanswered to the end",
                "",
                group_thousands(s.since_request),
                count_of(s.requests, "request")
            )?;
        }
    }
    Ok(())
}

/// `r1 10.0.0.2:8080`, or the address alone.
fn label(r: &ResponderReport) -> String {
    match &r.name {
        Some(n) => format!("{n} {}", r.address),
        None => r.address.to_string(),
    }
}

fn shown(ns: Option<u64>) -> String {
    ns.map_or_else(|| "—".into(), |v| format_ns(v as f64))
}

/// `61.4 µs [60.8 µs–62.0 µs]`, without the brackets when there is no
/// interval.
fn median(rtt: Option<&RttFigures>, p50: Option<&Percentile>) -> String {
    let Some(r) = rtt else {
        return "—".into();
    };
    match p50.and_then(|p| Some((p.ci_low_ns?, p.ci_high_ns?))) {
        Some((lo, hi)) => format!(
            "{} [{}–{}]",
            format_ns(r.p50 as f64),
            format_ns(lo),
            format_ns(hi)
        ),
        None => format_ns(r.p50 as f64),
    }
}

/// Each responder's split, P50 / P99 per segment.
fn write_splits(out: &mut impl Write, rows: &[ResponderReport]) -> io::Result<()> {
    let Some(first) = rows.iter().find(|r| !r.segments.is_empty()) else {
        return Ok(());
    };
    writeln!(
        out,
        "Split per responder (P50 / P99; the send path is the request's, the same for every one):"
    )?;
    let width = rows.iter().map(|r| label(r).len()).max().unwrap_or(9);
    let names: Vec<String> = first
        .segments
        .iter()
        .map(|s| format!("{:>21}", s.label))
        .collect();
    writeln!(out, "  {:<width$}{}", "", names.join(""))?;
    for r in rows.iter().filter(|r| !r.segments.is_empty()) {
        let cells: Vec<String> = r
            .segments
            .iter()
            .map(|s| {
                format!(
                    "{:>21}",
                    format!("{} / {}", shown(s.p50_ns), shown(s.p99_ns))
                )
            })
            .collect();
        writeln!(out, "  {:<width$}{}", label(r), cells.join(""))?;
    }
    writeln!(out)
}

/// The reply spread and the delivery skew.
fn write_fan_out(out: &mut impl Write, f: &FanOutReport) -> io::Result<()> {
    let figures = |r: &RttFigures| {
        format!(
            "P50 {}   P90 {}   P99 {}   max {}",
            format_ns(r.p50 as f64),
            format_ns(r.p90 as f64),
            format_ns(r.p99 as f64),
            format_ns(r.max as f64)
        )
    };
    match &f.spread_ns {
        Some(s) => writeln!(
            out,
            "Reply spread (each request's slowest answer less its fastest, over {} answered by two or more):\n  {}",
            count_of(f.spread_requests, "request"),
            figures(s)
        )?,
        None => writeln!(
            out,
            "Reply spread: no request was answered by two responders"
        )?,
    }
    match (&f.skew_ns, f.skew_clock_error_ns) {
        (Some(s), Some(e)) => writeln!(
            out,
            "Delivery skew (the latest responder's receive stamp less the earliest, each on its own clock, ± {}):\n  {}",
            format_ns(e as f64),
            figures(s)
        ),
        _ if f.skew_unmeasurable > 0 => writeln!(
            out,
            "Delivery skew: not shown for {}: a responder's clock says it is not synchronised, or gave no receive stamp (STAMP gives them)",
            count_of(f.skew_unmeasurable, "request")
        ),
        _ => Ok(()),
    }
}
