//! Running without the live display: progress on stderr, a report at the end.

use crate::engine::{
    RecordKind, ReflectorEvent, ReflectorRun, SessionInfo, StopFlag, start_reflector,
};
use crate::error::AppError;
use crate::launch::{Measurement, RING_CAPACITY};
use crate::plan::{ClientPlan, ServerPlan};
use crate::report::{Progress, Report};
use crate::units::count_of;
use std::io::Write;
use std::time::Duration;

const POLL: Duration = Duration::from_millis(100);

/// Measures as planned and returns the report. Ctrl-C (via `stop`) ends the
/// run early; what was measured is still reported.
pub fn run_client(plan: &ClientPlan, stop: &StopFlag) -> Result<Report, AppError> {
    let mut m = Measurement::start(plan, stop.clone(), RING_CAPACITY)?;
    let mut progress = Progress::new(plan.packets, plan.duration);
    let mut measured = 0u64;
    while !m.client.is_finished() {
        std::thread::sleep(POLL);
        // Only counts are needed here; the engine keeps the real statistics.
        while let Ok(r) = m.client.records.pop() {
            let resolved = matches!(r.kind, RecordKind::Sample | RecordKind::Lost);
            measured += u64::from(resolved && !r.warmup);
        }
        progress.update(measured);
    }
    progress.finish();
    let server = m.server;
    let (outcome, local) = m.finish()?;
    Ok(Report::new(plan, server, local, &outcome))
}

fn session_line(s: &SessionInfo) -> String {
    format!(
        "session ended: {}  {}  {}",
        s.peer,
        count_of(s.packets, "packet"),
        count_of(s.bytes, "byte")
    )
}

/// Reflects until `stop`, printing a line per finished session and totals.
pub fn run_server(
    plan: &ServerPlan,
    stop: &StopFlag,
    out: &mut impl Write,
) -> Result<(), AppError> {
    let mut run = start_reflector(plan.reflector_config(plan.bind), stop.clone())?;
    writeln!(
        out,
        "Synapse server listening on {} (CPU {}{}, {})",
        run.local,
        plan.thread.cpu,
        if plan.thread.cpu_auto { " auto" } else { "" },
        if plan.thread.busy_poll {
            "busy-poll"
        } else {
            "blocking"
        }
    )?;
    writeln!(
        out,
        "Ready to echo packets... (Ctrl-C prints totals and exits)"
    )?;
    out.flush()?;
    let drain = |run: &mut ReflectorRun, out: &mut dyn Write| -> std::io::Result<()> {
        while let Ok(ev) = run.events.pop() {
            if let ReflectorEvent::Ended(s) = ev {
                writeln!(out, "{}", session_line(&s))?;
            }
        }
        out.flush()
    };
    // A reflector thread that dies (a system call failed) ends the server
    // too, with its error, instead of leaving a silent process behind.
    while !stop.is_raised() && !run.is_finished() {
        std::thread::sleep(POLL);
        drain(&mut run, out)?;
    }
    run.stop();
    let outcome = run.join()?;
    drain(&mut run, out)?;
    for s in &outcome.open_at_stop {
        writeln!(out, "{}", session_line(s))?;
    }
    let t = outcome.totals;
    writeln!(
        out,
        "totals: {}, {}, {} echoed{}",
        count_of(t.sessions, "session"),
        count_of(t.packets, "packet"),
        count_of(t.bytes, "byte"),
        if t.oversized + t.send_errors > 0 {
            format!(
                " ({} oversized dropped, {} send errors)",
                t.oversized, t.send_errors
            )
        } else {
            String::new()
        }
    )?;
    Ok(())
}
