//! The text report of `synapse calibrate`.

use super::Calibration;
use super::audit::Finding;
use std::io::{self, Write};
use std::path::Path;
use synapse_engine::floor::Figures;
use synapse_units::format_ns;

/// Reads one figure.
type Get = fn(&Figures) -> Option<f64>;

/// Each figure's line: its JSON key's field, and what it is.
const ROWS: [(Get, &str); 11] = [
    (|f| f.clock_read_ns, "clock read (monotonic, vDSO)"),
    (|f| f.clock_read_realtime_ns, "clock read (realtime)"),
    (|f| f.syscall_ns, "syscall (getpid)"),
    (|f| f.context_switch_same_core_ns, "context switch, one CPU"),
    (|f| f.wakeup_cross_core_ns, "wake-up across CPUs"),
    (|f| f.timer_overshoot_ns, "100 µs sleep wakes late by"),
    (
        |f| f.udp_blocking_rtt_same_core_ns,
        "UDP RTT, blocking, one CPU",
    ),
    (|f| f.udp_blocking_rtt_ns, "UDP RTT, blocking, two CPUs"),
    (|f| f.udp_busy_poll_rtt_ns, "UDP RTT, busy-poll, two CPUs"),
    (|f| f.tcp_blocking_rtt_ns, "TCP RTT, blocking, two CPUs"),
    (
        |f| f.tx_timestamping_cost_ns,
        "kernel stamps add (busy-poll)",
    ),
];

/// How far separate runs spread: what `synapse compare` allows one run a
/// side, as a factor a run's figure may move by (1 σ).
fn write_spread(out: &mut impl Write, r: &synapse_engine::floor::RunToRun) -> io::Result<()> {
    let sd = &r.spread.log_sd;
    let p50s: Vec<String> = r.p50_ns.iter().map(|&v| format_ns(v)).collect();
    writeln!(
        out,
        "  {:<32} p50 ×{:.2}, p99 ×{:.2}, p99.9 ×{:.2} (1 σ, {} runs: p50 {})",
        "runs differ by",
        sd[0].exp(),
        sd[2].exp(),
        sd[3].exp(),
        r.p50_ns.len(),
        p50s.join(", ")
    )
}

/// How the calibration ended.
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    /// Where it was kept, if it was.
    pub kept: Option<&'a Path>,
    /// Stopped before every figure was measured.
    pub interrupted: bool,
}

/// Writes the figures, the audit and where the result was kept.
pub fn write(
    out: &mut impl Write,
    c: &Calibration,
    findings: &[Finding],
    outcome: Outcome<'_>,
) -> io::Result<()> {
    let cpus: Vec<String> = c.cpus.iter().map(ToString::to_string).collect();
    writeln!(
        out,
        "This host's floor: {} (kernel {}), CPUs {}, {}{}",
        c.host,
        c.kernel,
        cpus.join(" and "),
        c.date(),
        if c.quick { ", quick" } else { "" }
    )?;
    writeln!(out)?;
    writeln!(out, "  {:<32} {:>10} {:>10}", "", "p50", "p99")?;
    for (get, label) in ROWS {
        let cell = |f: &Figures| get(f).map_or_else(|| "-".into(), cell_ns);
        writeln!(
            out,
            "  {label:<32} {:>10} {:>10}",
            cell(&c.p50),
            cell(&c.p99)
        )?;
    }
    if let Some(r) = &c.run_to_run {
        write_spread(out, r)?;
    }
    if outcome.interrupted {
        writeln!(
            out,
            "  (interrupted: the figures shown as - were not measured)"
        )?;
    } else if c.cpus.len() < 2 {
        writeln!(
            out,
            "  (one CPU: nothing across CPUs, and no busy-poll pair, can be measured)"
        )?;
    }
    writeln!(out)?;
    write_audit(out, findings)?;
    match outcome.kept {
        Some(p) => writeln!(
            out,
            "Kept in {}: runs on this host now report their p50 against it.",
            p.display()
        ),
        None if outcome.interrupted => writeln!(
            out,
            "Not kept: interrupted (a calibration in part would replace a whole one)."
        ),
        None => writeln!(out, "Not kept (--no-save, or it could not be written)."),
    }
}

/// A figure for the table; a negative cost is noise and says so.
fn cell_ns(ns: f64) -> String {
    if ns < 0.0 {
        "~0 (noise)".into()
    } else {
        format_ns(ns)
    }
}

fn write_audit(out: &mut impl Write, findings: &[Finding]) -> io::Result<()> {
    let to_change = findings.iter().filter(|f| !f.ok).count();
    writeln!(
        out,
        "Setup ({} of {} could be lower-latency; Synapse changes nothing):",
        to_change,
        findings.len()
    )?;
    for f in findings {
        let mark = if f.ok { "ok " } else { "-> " };
        writeln!(out, "  {mark}{}: {}", f.item, f.now)?;
        if let Some(fix) = &f.fix {
            writeln!(out, "       why: {}", f.why)?;
            writeln!(out, "       run: {fix}")?;
        }
    }
    writeln!(out)
}
