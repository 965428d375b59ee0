//! Sessions: one way to start, watch and end measurements, shared by every
//! front end (the headless runner, the live display, the agent).
//!
//! - [`ClientSession`]: a client run, the in-process reflector it measures
//!   (loopback), and its per-packet log.
//! - [`ServerSession`]: the echo reflector, the STAMP reflector beside it
//!   (when its port can be bound), and their answer log.
//!
//! A session opens its log before anything binds, so a bad path fails
//! first; it drains everything at the end, so nothing measured is lost.

mod client;
mod server;

pub use client::{ClientFinish, ClientSession};
pub use server::{ServerFinish, ServerSession, Side};

use crate::report::packet_log::{LogError, PacketLog, RunningLog};
use std::path::{Path, PathBuf};

/// Records the ring holds for a live consumer: over half a second at 100 k
/// packets/s (a UI frame is 33 ms, the headless poll 100 ms), in 4.5 MiB
/// of 72-byte records, so memory stays flat.
pub const RING_CAPACITY: usize = 1 << 16;

/// How a log file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStart {
    /// A new file (an existing one is replaced).
    Create,
    /// After the rows of earlier runs (the live display logs each run it
    /// starts into one file).
    Append,
}

/// What became of a log.
#[derive(Debug)]
pub struct LogOutcome {
    /// The file.
    pub path: PathBuf,
    /// Rows written, or why writing failed.
    pub rows: Result<u64, LogError>,
    /// Rows the writer could not keep up with.
    pub dropped: u64,
}

impl LogOutcome {
    /// Waits for the writer of `log` to drain and flush.
    fn of(log: RunningLog, dropped: u64) -> Self {
        Self {
            path: log.path().to_path_buf(),
            rows: log.finish(),
            dropped,
        }
    }
}

fn open_log(path: Option<&Path>, how: LogStart) -> Result<Option<PacketLog>, LogError> {
    path.map(|p| match how {
        LogStart::Create => PacketLog::create(p),
        LogStart::Append => PacketLog::append(p),
    })
    .transpose()
}
