//! Running without the live display: progress on stderr, a report at the
//! end. A front end over the session layer, like the live display.

use crate::console;
use crate::error::AppError;
use crate::plan::{ClientPlan, ServerPlan};
use crate::report::server_text::{self, session_line};
use crate::report::{LogSummary, Progress, Report};
use crate::session::{ClientFeed, ClientSession, ServerSession};
use std::io::Write;
use std::time::Duration;
use synapse_engine::{Protocol, ReflectorEvent, StopFlag};
use synapse_stats::slices::SliceRecorder;
use synapse_stats::{Record, RecordKind};

const POLL: Duration = Duration::from_millis(100);

/// Measures as planned and returns the report. Ctrl-C (via `stop`) ends the
/// run early; what was measured is still reported.
pub fn run_client(plan: &ClientPlan, stop: &StopFlag) -> Result<Report, AppError> {
    // Created first, like the packet log: a bad path fails before anything runs.
    let mut tap = crate::session::IntervalTap::open(
        plan.hdr.hdr_log.as_deref(),
        plan.hdr.hdr_interval,
        false,
        "synapse client",
    )?
    .with_slices();
    let mut session = ClientSession::start(plan, None, plan.log_opening, stop.clone())?;
    tap.start_run(plan.settings.timeout);
    let mut progress = Progress::new(plan.packets, plan.settings.duration);
    let mut measured = 0u64;
    // A multicast run: each responder's slices, for its intervals.
    let mut responder_slices: Vec<SliceRecorder> = Vec::new();
    let mut slice = |i: usize, r: &Record| {
        if responder_slices.len() <= i {
            responder_slices.resize_with(i + 1, SliceRecorder::new);
        }
        responder_slices[i].record(r);
    };
    while !session.is_finished() {
        std::thread::sleep(POLL);
        // Counts, and the interval log; the engine keeps the real statistics.
        session.drain(|r| {
            let resolved = matches!(r.kind, RecordKind::Sample | RecordKind::Lost);
            measured += u64::from(resolved && !r.warmup);
            tap.record(r);
        });
        session.drain_responders(&mut slice);
        progress.update(measured);
        if session.log_failure().is_some() || tap.failure().is_some() {
            // A log that cannot be written ends the run: what it measured
            // is reported, and the report says why it stopped.
            session.stop();
        }
    }
    progress.finish();
    let overflow = session.ring_overflow();
    let mut finish = session.finish(|r| tap.record(r));
    if let Some(ring) = finish.responders.as_mut() {
        while let Ok(r) = ring.pop() {
            slice(r.peer as usize, &r.record);
        }
    }
    tap.end_run();
    if overflow > 0 {
        tap.comment(&format!(
            "[Incomplete: {overflow} records did not fit the ring and are not in this log]"
        ));
    }
    let slices = tap.slices();
    let (hdr_log, _) = tap.finish();
    let outcome = finish.outcome?;
    if let Some(why) = &outcome.placement.refused {
        console::warning(why);
    }
    let calibration = crate::calibrate::kept_for_this_host();
    let mut report = Report::new(
        plan,
        finish.server,
        finish.local,
        &outcome,
        slices,
        calibration.as_ref(),
    );
    let responder_slices: Vec<_> = responder_slices
        .into_iter()
        .map(SliceRecorder::finish)
        .collect();
    report.responder_intervals(&responder_slices);
    report.log = finish.log.as_ref().map(LogSummary::of);
    report.hdr_log = hdr_log;
    Ok(report)
}

/// Reflects until `stop`, printing a line per finished session and totals.
/// The STAMP reflector runs beside the echo one when it can bind; when it
/// cannot, one note on stderr says why and echo goes on.
pub fn run_server(
    plan: &ServerPlan,
    stop: &StopFlag,
    out: &mut impl Write,
) -> Result<i32, AppError> {
    let mut session = ServerSession::start(plan, plan.bind, Protocol::Echo, stop)?;
    if plan.admission.allow.is_open() && !plan.bind.ip().is_loopback() {
        console::note(&format!(
            "answering every source on {}: --allow CIDR limits who, --max-pps how much (see docs/security.md)",
            plan.bind
        ));
    }
    server_text::write_banner(out, plan, &session)?;
    if let Some(why) = &session.stamp_refused {
        console::note(why);
    }
    if let Some(why) = &session.tcp_refused {
        console::note(why);
    }
    out.flush()?;
    let mut result = Ok(());
    let mut print = |side, ev| {
        if let ReflectorEvent::Ended(s) = ev
            && result.is_ok()
        {
            result = writeln!(out, "{}", session_line(side, &s)).and_then(|()| out.flush());
        }
    };
    // A reflector thread that dies (a system call failed) ends the server
    // too, with its error, instead of leaving a silent process behind.
    let mut log_failed = false;
    while !stop.is_raised() && !session.failed() {
        std::thread::sleep(POLL);
        session.drain(&mut print);
        if let Some(why) = session.log_failure().filter(|_| !log_failed) {
            console::error(&format!("{why}; answering goes on without the log"));
            log_failed = true;
        }
    }
    let finish = session.finish(&mut print);
    result?;
    server_text::write_totals(out, &finish)?;
    if let Some(h) = &finish.hdr_log {
        writeln!(
            out,
            "interval log: {} written to {}",
            synapse_units::count_of(h.intervals, "interval"),
            h.path.display()
        )?;
    }
    out.flush()?;
    if let Some(Err(e)) = &finish.tcp {
        console::error(&format!("TCP echo: {e}"));
    }
    for o in [Some(&finish.echo), finish.stamp.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|o| o.as_ref().ok())
    {
        if let Some(why) = &o.placement.refused {
            console::warning(why);
        }
    }
    if let Some(e) = finish.hdr_log.as_ref().and_then(|h| h.error.as_ref()) {
        console::error(e);
        return Ok(crate::error::exit::RUNTIME);
    }
    let log_error = finish.log.as_ref().and_then(|l| l.error.as_ref());
    if let Some(e) = log_error.filter(|_| !log_failed) {
        console::error(&e.to_string());
    }
    finish.echo?;
    if let Some(stamp) = finish.stamp {
        stamp?;
    }
    Ok(if log_error.is_some() {
        crate::error::exit::RUNTIME
    } else {
        crate::error::exit::PASS
    })
}
