//! Whether the far side is answering, as a running client's records tell
//! it: replies stopped (and what the path said), the path's word changed,
//! replies came back. Every front end reads a run through this: the
//! headless run says each notice on stderr once, the live display shows
//! the silence while it lasts. The time is the front end's to give (ns
//! since the run started, as its records count), so a display driven by a
//! scripted clock stays reproducible.

use synapse_stats::reply_watch::{Notice, ReplyWatch};
use synapse_stats::{PathError, Record, RecordKind};

/// A run's far side, watched.
#[derive(Debug, Clone, Copy, Default)]
pub struct FarSide {
    watch: ReplyWatch,
}

/// A silence while it lasts, as the live display shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Silence {
    /// How long without a reply, ns.
    pub for_ns: u64,
    /// What the path last said, if anything.
    pub error: Option<PathError>,
}

impl FarSide {
    /// A run with nothing seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One of the run's records: what it changes, if anything.
    pub fn record(&mut self, r: &Record) -> Option<Notice> {
        match r.kind {
            RecordKind::PathError => r.error().and_then(|e| self.watch.on_error(e)),
            _ => self.watch.on_record(r),
        }
    }

    /// It is `now_ns` into the run: a silence long enough is said.
    pub fn tick(&mut self, now_ns: u64) -> Option<Notice> {
        self.watch.tick(now_ns)
    }

    /// The silence at `now_ns`, once it was said.
    pub fn silence(&self, now_ns: u64) -> Option<Silence> {
        self.watch.silent_for(now_ns).map(|for_ns| Silence {
            for_ns,
            error: self.watch.error(),
        })
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
