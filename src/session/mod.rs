//! Sessions: one way to start, watch and end measurements, shared by every
//! front end (the headless runner, the live display, the agent).
//!
//! - [`ClientSession`]: a client run, the in-process reflector it measures
//!   (loopback), and its per-packet log.
//! - [`ServerSession`]: the echo reflector, the STAMP reflector beside it
//!   (when its port can be bound), and their answer log.
//! - [`AgentSession`]: a reflector like the server's, and one prober
//!   thread pacing all of an agent's peers.
//!
//! A session opens its log before anything binds, so a bad path fails
//! first; it drains everything at the end, so nothing measured is lost.

mod agent;
mod agent_group;
mod agent_tcp;
mod client;
pub mod far_side;
pub mod intervals;
pub mod load;
pub mod load_live;
mod load_outcome;
mod loopback;
mod peer_clients;
mod server;
mod starter;

pub use crate::packet_log::Opening;
pub use agent::AgentSession;
pub use agent_group::ResponderRecord;
pub use client::{ClientFeed, ClientFinish, ClientSession};
pub use intervals::IntervalTap;
pub use load::LoadSession;
pub use load_live::LoadLive;
pub use load_outcome::LoadOutcome;
pub use server::{ServerFinish, ServerSession, Side};
pub use starter::ClientStarter;

use crate::packet_log::{LogError, PacketLog, RunningLog};
use std::path::{Path, PathBuf};

/// Records the ring holds for a live consumer: over half a second at 100 k
/// packets/s (a UI frame is 33 ms, the headless poll 100 ms), in 10 MiB
/// of 160-byte records (the size `synapse_stats::Record` asserts), so
/// memory stays flat.
pub const RING_CAPACITY: usize = 1 << 16;

/// What became of a log.
#[derive(Debug)]
pub struct LogOutcome {
    /// The file.
    pub path: PathBuf,
    /// Whole rows written.
    pub rows: u64,
    /// Rows that are not in the file: the writer fell behind, or writing
    /// had failed.
    pub dropped: u64,
    /// Why writing stopped, if it did.
    pub error: Option<LogError>,
}

impl LogOutcome {
    /// Waits for the writer of `log` to drain and flush; `overflow` rows
    /// never reached it.
    fn of(log: RunningLog, overflow: u64) -> Self {
        let path = log.path().to_path_buf();
        let done = log.finish();
        Self {
            path,
            rows: done.rows,
            dropped: overflow + done.unwritten,
            error: done.error,
        }
    }
}

fn open_log(path: Option<&Path>, how: Opening) -> Result<Option<PacketLog>, LogError> {
    path.map(|p| PacketLog::open(p, how)).transpose()
}
