//! Running without the live display: progress on stderr, a report at the end.

use crate::engine::{ReflectorEvent, ReflectorRun, SessionInfo, StopFlag, start_reflector};
use crate::error::AppError;
use crate::launch::{Measurement, RING_CAPACITY};
use crate::plan::{ClientPlan, ServerPlan};
use crate::report::packet_log::PacketLog;
use crate::report::{LogSummary, Progress, Report};
use crate::stats::RecordKind;
use crate::units::count_of;
use std::io::Write;
use std::time::Duration;

const POLL: Duration = Duration::from_millis(100);

/// Measures as planned and returns the report. Ctrl-C (via `stop`) ends the
/// run early; what was measured is still reported.
pub fn run_client(plan: &ClientPlan, stop: &StopFlag) -> Result<Report, AppError> {
    // Opened first: a bad path fails before anything is measured.
    let log = open_log(plan.log.as_deref())?;
    let mut m = Measurement::start(plan, stop.clone(), RING_CAPACITY)?;
    let log = match (log, m.client.points.take()) {
        (Some(log), Some(points)) => Some(log.start(vec![points])?),
        _ => None,
    };
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
    let finished = m.finish();
    // The client is done (or failed): the writer drains what it logged.
    let log = log.map(|l| {
        let path = l.path().display().to_string();
        (path, l.finish())
    });
    let (outcome, local) = finished?;
    let mut report = Report::new(plan, server, local, &outcome);
    match log {
        Some((path, Ok(rows))) => {
            report.log = Some(LogSummary {
                path,
                rows,
                dropped: outcome.log_overflow,
            });
        }
        // What was measured is still reported; the log's failure is said.
        Some((_, Err(e))) => eprintln!("synapse: error: {e}"),
        None => {}
    }
    Ok(report)
}

/// Creates the `--log` file, if one was asked for.
fn open_log(path: Option<&std::path::Path>) -> Result<Option<PacketLog>, AppError> {
    path.map(PacketLog::create)
        .transpose()
        .map_err(AppError::Usage)
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
/// The STAMP reflector runs beside the echo one when it can bind; when it
/// cannot, one note on stderr says why and echo goes on.
pub fn run_server(
    plan: &ServerPlan,
    stop: &StopFlag,
    out: &mut impl Write,
) -> Result<(), AppError> {
    // Opened first: a bad path fails before anything is bound.
    let log = open_log(plan.log.as_deref())?;
    let mut echo = start_reflector(plan.reflector_config(plan.bind), stop.clone())?;
    let mode = format!(
        "CPU {}{}, {}",
        plan.thread.cpu,
        if plan.thread.cpu_auto { " auto" } else { "" },
        if plan.thread.busy_poll {
            "busy-poll"
        } else {
            "blocking"
        }
    );
    writeln!(out, "Synapse server listening on {} ({mode})", echo.local)?;
    let mut stamp = match plan
        .stamp_config()
        .map(|cfg| start_reflector(cfg, stop.clone()))
    {
        Some(Ok(run)) => {
            writeln!(out, "STAMP (RFC 8762) reflector on {}", run.local)?;
            Some(run)
        }
        Some(Err(e)) => {
            let line = format!("synapse: note: STAMP not served ({e}); plain echo goes on\n");
            let _ = std::io::stderr().write_all(line.as_bytes());
            None
        }
        None => None,
    };
    let rings: Vec<_> = [echo.responses.take()]
        .into_iter()
        .chain(stamp.as_mut().map(|s| s.responses.take()))
        .flatten()
        .collect();
    let log = match log {
        Some(log) => {
            let running = log.start(rings)?;
            writeln!(out, "Logging every answer to {}", running.path().display())?;
            Some(running)
        }
        None => None,
    };
    writeln!(
        out,
        "Ready to echo packets... (Ctrl-C prints totals and exits)"
    )?;
    out.flush()?;
    let drain = |run: &mut ReflectorRun, label: &str, out: &mut dyn Write| -> std::io::Result<()> {
        while let Ok(ev) = run.events.pop() {
            if let ReflectorEvent::Ended(s) = ev {
                writeln!(out, "{label}{}", session_line(&s))?;
            }
        }
        out.flush()
    };
    // A reflector thread that dies (a system call failed) ends the server
    // too, with its error, instead of leaving a silent process behind.
    while !stop.is_raised()
        && !echo.is_finished()
        && !stamp.as_ref().is_some_and(ReflectorRun::is_finished)
    {
        std::thread::sleep(POLL);
        drain(&mut echo, "", out)?;
        if let Some(s) = stamp.as_mut() {
            drain(s, "STAMP ", out)?;
        }
    }
    echo.stop();
    let outcome = match echo.join() {
        Ok(o) => o,
        Err(e) => {
            // The error ends the server, but what was logged is kept.
            if let Some(s) = stamp.as_mut() {
                s.stop();
                let _ = s.join();
            }
            if let Some(log) = log {
                let _ = log.finish();
            }
            return Err(e.into());
        }
    };
    drain(&mut echo, "", out)?;
    for s in &outcome.open_at_stop {
        writeln!(out, "{}", session_line(s))?;
    }
    // Joined now, reported after the echo totals: a failed STAMP thread
    // must not hide what echo did.
    let stamp_outcome = stamp.as_mut().map(|s| {
        s.stop();
        let joined = s.join();
        (joined, s)
    });
    let t = outcome.totals;
    writeln!(
        out,
        "totals: {}, {}, {} echoed{}",
        count_of(t.sessions, "session"),
        count_of(t.packets, "packet"),
        count_of(t.bytes, "byte"),
        if t.oversized + t.send_errors + t.refused > 0 {
            format!(
                " ({} oversized dropped, {} send errors, {} from service ports refused)",
                t.oversized, t.send_errors, t.refused
            )
        } else {
            String::new()
        }
    )?;
    // Both reflectors have stopped: the writer drains what they logged,
    // and is waited for before anything can return early.
    let stamp_ok = stamp_outcome.as_ref().and_then(|(o, _)| o.as_ref().ok());
    let dropped = outcome.log_overflow + stamp_ok.map_or(0, |o| o.log_overflow);
    let stale = outcome.stale_stamps + stamp_ok.map_or(0, |o| o.stale_stamps);
    let logged = log.map(|l| (l.path().display().to_string(), l.finish()));
    if let Some((joined, s)) = stamp_outcome {
        let o = joined?;
        drain(s, "STAMP ", out)?;
        for info in &o.open_at_stop {
            writeln!(out, "STAMP {}", session_line(info))?;
        }
        let st = o.totals;
        writeln!(
            out,
            "STAMP totals: {}, {} reflected, {} malformed dropped{}",
            count_of(st.sessions, "session"),
            count_of(st.packets, "packet"),
            st.malformed,
            if st.t2_from_user > 0 {
                format!(
                    ", {} with T2 from user space (no kernel RX stamp)",
                    st.t2_from_user
                )
            } else {
                String::new()
            }
        )?;
    }
    match logged {
        Some((path, Ok(rows))) => writeln!(
            out,
            "log: {} written to {path}{}{}",
            count_of(rows, "answer"),
            if dropped > 0 {
                format!(" ({dropped} dropped: the writer fell behind)")
            } else {
                String::new()
            },
            if stale > 0 {
                format!("; {stale} TX stamps came after their row was written")
            } else {
                String::new()
            }
        )?,
        // What the reflectors did is still reported.
        Some((_, Err(e))) => eprintln!("synapse: error: {e}"),
        None => {}
    }
    Ok(())
}
