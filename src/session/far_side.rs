//! Whether the far side is answering, as a running client's records tell
//! it: replies stopped (and what the path said), the path's word changed,
//! replies came back. Every front end reads a run through this: the
//! headless run says each notice on stderr once, the live display shows
//! the silence while it lasts.

use std::time::Instant;
use synapse_stats::reply_watch::{Notice, ReplyWatch};
use synapse_stats::{PathError, Record, RecordKind};

/// A run's far side, watched.
#[derive(Debug, Clone, Copy)]
pub struct FarSide {
    watch: ReplyWatch,
    /// About when the run's clock started: its records' `at_ns` count
    /// from the engine's own start, a moment later, which a notice
    /// after a second of silence does not feel.
    started: Instant,
}

impl FarSide {
    /// A run started now.
    pub fn new() -> Self {
        Self {
            watch: ReplyWatch::new(),
            started: Instant::now(),
        }
    }

    /// One of the run's records: what it changes, if anything.
    pub fn record(&mut self, r: &Record) -> Option<Notice> {
        match r.kind {
            RecordKind::PathError => r.error().and_then(|e| self.watch.on_error(e)),
            _ => self.watch.on_record(r),
        }
    }

    /// The time passed: a silence long enough is said.
    pub fn tick(&mut self) -> Option<Notice> {
        self.watch.tick(self.now_ns())
    }

    /// How long replies have been missing, once that was said.
    pub fn silent_for_ns(&self) -> Option<u64> {
        self.watch.silent_for(self.now_ns())
    }

    /// The path's latest error in the current silence.
    pub fn error(&self) -> Option<PathError> {
        self.watch.error()
    }

    fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }
}

impl Default for FarSide {
    fn default() -> Self {
        Self::new()
    }
}

/// Says `n` on stderr: a silence or an error as a warning, replies back
/// as a note. `peer` names the reflector.
pub fn say(n: &Notice, peer: &str) {
    let line = n.line(peer);
    match n {
        Notice::Resumed { .. } => crate::console::note(&line),
        _ => crate::console::warning(&line),
    }
}
