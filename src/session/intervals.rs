//! What a front end does with the records it drains, besides showing
//! them: cut them into intervals, hand those to the `--hdr-log` writer,
//! and keep them for a baseline or a comparison. Fed by the ring's
//! consumer, never by the measurement thread.

use crate::hdr_log::{HdrLogError, HdrLogOutcome, HdrLogWriter, header};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};
use synapse_stats::Record;
use synapse_stats::intervals::{Interval, IntervalRecorder, coarsen};
use synapse_stats::slices::{Slice, SliceRecorder};

/// Intervals kept in memory at most: past this, neighbours merge (the
/// interval doubles), so a run of any length fits.
pub const MAX_KEPT: usize = 4096;

/// Intervals of one or more runs, to a log and (if asked) kept.
#[derive(Debug)]
pub struct IntervalTap {
    recorder: IntervalRecorder,
    writer: Option<HdrLogWriter>,
    keep: bool,
    kept: Vec<Interval>,
    /// Intervals kept at most before neighbours merge.
    max_kept: usize,
    /// When the log's time 0 was, on the monotonic clock.
    base: Instant,
    /// The current run's start after the log's base, ns.
    offset_ns: u64,
    /// The latest time recorded, after the log's base.
    last_ns: u64,
    timeout_ns: u64,
    /// The run cut into slices of consecutive requests, when kept.
    slices: Option<SliceRecorder>,
}

impl IntervalTap {
    /// Intervals `length` long, written to `path` when there is one (it is
    /// created now, so a bad path fails before anything runs), kept when
    /// `keep`. `what` describes the run in the log's header.
    pub fn open(
        path: Option<&Path>,
        length: Duration,
        keep: bool,
        what: &str,
    ) -> Result<Self, HdrLogError> {
        let writer = path
            .map(|p| HdrLogWriter::create(p, SystemTime::now(), &header(what)))
            .transpose()?;
        Ok(Self::with(length, writer, keep))
    }

    /// Intervals `length` long, kept in memory only (no log).
    pub fn in_memory(length: Duration) -> Self {
        Self::with(length, None, true)
    }

    fn with(length: Duration, writer: Option<HdrLogWriter>, keep: bool) -> Self {
        Self {
            recorder: IntervalRecorder::new(length),
            writer,
            keep,
            kept: Vec::new(),
            max_kept: MAX_KEPT,
            base: Instant::now(),
            offset_ns: 0,
            last_ns: 0,
            timeout_ns: 0,
            slices: None,
        }
    }

    /// Also cuts the run into slices of consecutive requests (what a
    /// report's within-run intervals and a baseline keep).
    #[must_use]
    pub fn with_slices(mut self) -> Self {
        self.slices = Some(SliceRecorder::new());
        self
    }

    /// The slices so far (none unless [`IntervalTap::with_slices`]).
    pub fn slices(&self) -> Vec<Slice> {
        self.slices
            .as_ref()
            .map(SliceRecorder::snapshot)
            .unwrap_or_default()
    }

    /// Forgets the slices so far (a cleared session starts afresh).
    pub fn clear_slices(&mut self) {
        if let Some(s) = &mut self.slices {
            *s = SliceRecorder::new();
        }
    }

    /// Keeps at most `n` intervals (at least 2): past this, neighbours
    /// merge, so memory stays bounded however long the session runs.
    pub fn bounded(mut self, n: usize) -> Self {
        self.max_kept = n.max(2);
        self
    }

    /// Whether there is anything to do (a log, or intervals to keep).
    pub fn is_active(&self) -> bool {
        self.writer.is_some() || self.keep || self.slices.is_some()
    }

    /// A run starts now; its lost requests waited `timeout`.
    pub fn start_run(&mut self, timeout: Duration) {
        self.offset_ns = self.base.elapsed().as_nanos() as u64;
        self.timeout_ns = timeout.as_nanos() as u64;
    }

    /// Accounts for a record of the current run.
    pub fn record(&mut self, r: &Record) {
        if !self.is_active() {
            return;
        }
        if let Some(s) = &mut self.slices {
            s.record(r);
        }
        let t = self.offset_ns + r.at_ns;
        self.last_ns = self.last_ns.max(t);
        self.recorder.add_record(t, r, self.timeout_ns, "");
        self.pass_on_closed();
    }

    /// Accounts for a value of series `tag` at `t` after the log's base
    /// (the server's answers, the agent's peers).
    pub fn add(&mut self, t: Duration, tag: &str, value: u64) {
        let t = t.as_nanos() as u64;
        self.last_ns = self.last_ns.max(t);
        self.recorder.add(t, tag, value);
        self.pass_on_closed();
    }

    /// Like [`IntervalTap::record`], for a record at `t` after the log's
    /// base (the agent's peers: `prefix` is the peer's name and a `/`).
    pub fn add_record_at(&mut self, t: Duration, r: &Record, timeout: Duration, prefix: &str) {
        let t = t.as_nanos() as u64;
        self.last_ns = self.last_ns.max(t);
        self.recorder
            .add_record(t, r, timeout.as_nanos() as u64, prefix);
        self.pass_on_closed();
    }

    /// The log's time 0, on the monotonic clock.
    pub fn base(&self) -> Instant {
        self.base
    }

    /// The intervals the recorder closed, and the outages it ended: both
    /// to the log; the intervals kept (an outage spans time, it is not one
    /// of the run's intervals).
    fn pass_on_closed(&mut self) {
        let closed = self.recorder.take_closed();
        self.pass_on(closed);
        let spans = self.recorder.take_spans();
        if let Some(w) = &self.writer {
            w.write_spans(spans);
        }
    }

    fn pass_on(&mut self, closed: Vec<Interval>) {
        if closed.is_empty() {
            return;
        }
        if self.keep {
            self.kept.extend(closed.iter().cloned());
            while self.kept.len() > self.max_kept {
                coarsen(&mut self.kept);
            }
        }
        if let Some(w) = &self.writer {
            w.write(closed);
        }
    }

    /// The current run has ended: its last interval is closed where its
    /// last record was.
    pub fn end_run(&mut self) {
        let closed = self.recorder.finish(self.last_ns + 1);
        self.pass_on(closed);
        self.pass_on_closed();
    }

    /// Starts afresh on the same clock: the open interval is closed where
    /// its last record was, and everything kept so far is dropped (the
    /// live display's `m`: what follows is compared with what came before).
    pub fn cut(&mut self) {
        self.end_run();
        self.kept.clear();
    }

    /// A comment line in the log, after the intervals so far.
    pub fn comment(&self, text: &str) {
        if let Some(w) = &self.writer {
            w.comment(text);
        }
    }

    /// Why the log stopped being written, as soon as it has.
    pub fn failure(&self) -> Option<String> {
        self.writer.as_ref().and_then(HdrLogWriter::failure)
    }

    /// Forgets all but the last `n` intervals kept.
    pub fn keep_last(&mut self, n: usize) {
        let old = self.kept.len().saturating_sub(n);
        self.kept.drain(..old);
    }

    /// The intervals kept so far.
    pub fn kept(&self) -> &[Interval] {
        &self.kept
    }

    /// Ends the log (its writer flushes whole lines); returns what it
    /// holds and the intervals kept. (The slices: [`IntervalTap::slices`]
    /// before.)
    pub fn finish(mut self) -> (Option<HdrLogOutcome>, Vec<Interval>) {
        self.end_run();
        let log = self.writer.take().map(HdrLogWriter::finish);
        (log, std::mem::take(&mut self.kept))
    }
}
