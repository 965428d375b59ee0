//! Running without the live display: progress on stderr, a report at the
//! end. A front end over the session layer, like the live display.

use crate::console;
use crate::error::AppError;
use crate::plan::{ClientPlan, Output, ServerPlan};
use crate::report::json_stream::{self, JsonStream};
use crate::report::server_text::{self, session_line};
use crate::report::{LogSummary, Progress, Report};
use crate::session::IntervalTap;
use crate::session::far_side::{self, FarSide};
use crate::session::{ClientFeed, ClientSession, LoadSession, ServerSession};
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
    // Made before the run starts: the stream's clock is never behind the run's.
    let mut stream = (plan.output == Output::JsonStream).then(|| {
        let cut = json_stream::cut_of(plan.settings.update);
        JsonStream::new(std::io::stdout(), cut, plan.settings.timeout)
    });
    let mut session: Box<dyn ClientFeed> = if plan.settings.load.is_some() {
        Box::new(LoadSession::start(plan, stop.clone())?)
    } else {
        Box::new(ClientSession::start(
            plan,
            None,
            plan.log_opening,
            stop.clone(),
        )?)
    };
    if let Some(s) = &mut stream {
        s.start(session.server(), session.local());
    }
    tap.start_run(plan.settings.timeout);
    // A multicast run: each responder's slices, for its intervals.
    let mut responders = ResponderSlices::default();
    watch(
        plan,
        session.as_mut(),
        (&mut tap, &mut stream),
        &mut responders,
    );
    let overflow = session.ring_overflow();
    let mut finish = session.finish(&mut |r| {
        tap.record(r);
        stream.iter_mut().for_each(|s| s.record(r));
    });
    if let Some(ring) = finish.responders.as_mut() {
        while let Ok(r) = ring.pop() {
            responders.record(r.peer as usize, &r.record);
        }
    }
    tap.end_run();
    if let Some(mut s) = stream {
        s.end_run();
        if let Some(e) = s.into_failure() {
            // A reader that went away (`| head`) ends the run quietly.
            return Err(anyhow::Error::new(e).context("--json-stream").into());
        }
    }
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
    // A load run's probes may speak STAMP to another port than asked.
    let described = finish.load.as_ref().map_or(plan, |l| &l.probe_plan);
    let mut report = Report::new(
        described,
        finish.server,
        finish.local,
        &outcome,
        slices,
        calibration.as_ref(),
    );
    report.responder_intervals(&responders.finish());
    report.log = finish.log.as_ref().map(LogSummary::of);
    report.hdr_log = hdr_log;
    if let Some(load) = finish.load {
        report.attach_load(load);
    }
    Ok(report)
}

/// Follows a running client until it ends: progress (or a load run's
/// phase), the interval log, the JSON stream, and what the far side's
/// silence or errors say. A log or stream that cannot be written ends the
/// run: what it measured is reported, and the report says why it stopped.
fn watch(
    plan: &ClientPlan,
    session: &mut dyn ClientFeed,
    (tap, stream): (&mut IntervalTap, &mut Option<JsonStream<std::io::Stdout>>),
    responders: &mut ResponderSlices,
) {
    let mut progress = Progress::new(plan.packets, plan.settings.duration);
    let mut measured = 0u64;
    let mut far = FarSide::new();
    let peer = format!("reflector {}", session.server());
    let started = std::time::Instant::now();
    while !session.is_finished() {
        std::thread::sleep(POLL);
        // Counts, and the interval log; the engine keeps the real statistics.
        let mut notices = Vec::new();
        session.drain(&mut |r| {
            let resolved = matches!(r.kind, RecordKind::Sample | RecordKind::Lost);
            measured += u64::from(resolved && !r.warmup);
            tap.record(r);
            notices.extend(far.record(r));
            stream.iter_mut().for_each(|s| s.record(r));
        });
        session.drain_responders(&mut |i, r| responders.record(i, r));
        stream.iter_mut().for_each(JsonStream::tick);
        // The engine's clock starts a moment after `started`: a notice
        // after a second of silence does not feel it.
        notices.extend(far.tick(started.elapsed().as_nanos() as u64));
        if !notices.is_empty() {
            progress.finish();
        }
        for n in &notices {
            far_side::say(n, &peer);
        }
        match session.load() {
            Some(l) => progress.show(&load_line(&l)),
            None => progress.update(measured),
        }
        let stream_failed = stream.as_ref().is_some_and(|s| s.failure().is_some());
        if session.log_failure().is_some() || tap.failure().is_some() || stream_failed {
            session.stop();
        }
    }
    progress.finish();
}

/// A multicast run's slices, a recorder per responder by its index.
#[derive(Default)]
struct ResponderSlices(Vec<SliceRecorder>);

impl ResponderSlices {
    fn record(&mut self, i: usize, r: &Record) {
        if self.0.len() <= i {
            self.0.resize_with(i + 1, SliceRecorder::new);
        }
        self.0[i].record(r);
    }

    fn finish(self) -> Vec<Vec<synapse_stats::slices::Slice>> {
        self.0.into_iter().map(SliceRecorder::finish).collect()
    }
}

/// A load run's progress: its phase, streams and goodput.
fn load_line(l: &crate::session::LoadLive) -> String {
    let Some((i, n, kind, _)) = l.phase else {
        return "load: starting".into();
    };
    let mut s = format!("load: phase {i} of {n}, {}", kind.name());
    if kind.loaded() {
        let (down, up) = l.streams;
        s.push_str(&format!(", streams {down} down {up} up"));
        for (v, arrow) in [(l.goodput.down, "↓"), (l.goodput.up, "↑")] {
            if let Some(v) = v {
                s.push_str(&format!(" {arrow} {}", synapse_units::format_bps(v)));
            }
        }
        if l.stable {
            s.push_str(", goodput stable");
        }
    }
    s
}

/// Reflects until `stop`, printing a line per finished session and totals.
/// The STAMP reflector runs beside the echo one when it can bind; when it
/// cannot, one note on stderr says why and echo goes on.
pub fn run_server<W: Write>(
    plan: &ServerPlan,
    stop: &StopFlag,
    out: &mut W,
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
    // One line per finished session, reflected or loaded.
    let mut lines: Vec<String> = Vec::new();
    let mut say = |lines: &mut Vec<String>, out: &mut W| {
        for l in lines.drain(..) {
            if result.is_ok() {
                result = writeln!(out, "{l}").and_then(|()| out.flush());
            }
        }
    };
    // A reflector thread that dies (a system call failed) ends the server
    // too, with its error, instead of leaving a silent process behind.
    let mut log_failed = false;
    while !stop.is_raised() && !session.failed() {
        std::thread::sleep(POLL);
        session.drain(ended(&mut lines));
        session.drain_load(|ev| lines.push(server_text::load_line(&ev)));
        say(&mut lines, out);
        if let Some(why) = session.log_failure().filter(|_| !log_failed) {
            console::error(&format!("{why}; answering goes on without the log"));
            log_failed = true;
        }
    }
    session.drain_load(|ev| lines.push(server_text::load_line(&ev)));
    let finish = session.finish(ended(&mut lines));
    say(&mut lines, out);
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
    if let Some(Err(e)) = &finish.load {
        console::error(&format!("load server: {e}"));
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

/// A finished reflector session's line, kept in `lines` to be said.
fn ended(lines: &mut Vec<String>) -> impl FnMut(crate::session::Side, ReflectorEvent) + '_ {
    move |side, ev| {
        if let ReflectorEvent::Ended(s) = ev {
            lines.push(session_line(side, &s));
        }
    }
}
