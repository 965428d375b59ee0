//! The measurement engine: sockets, the client loop, the reflector, the wire
//! protocol and CPU placement. Nothing here knows about terminals or reports;
//! results leave through [`Record`](crate::stats::Record)s on a lock-free
//! ring and through the [`Stats`](crate::stats::Stats) each thread returns
//! when it ends. It depends on `stats` (a leaf) and on nothing above it.

mod affinity;
pub mod capabilities;
mod client;
mod error;
mod hardware;
mod points;
pub mod protocol;
mod reflector;
mod response;
pub mod sequence;
mod socket;
pub mod stamp;
pub(crate) mod sys;
pub mod timestamps;
mod tx_stamps;

pub use affinity::{Placement, Role, choose_cpu, pin_thread};
pub use client::{ClientConfig, ClientOutcome, ClientRun, StampingInfo, start_client};
pub use error::EngineError;
pub use points::Points;
pub use reflector::{
    Protocol, ReflectorConfig, ReflectorEvent, ReflectorOutcome, ReflectorRun, ReflectorTotals,
    SessionInfo, start_reflector,
};
pub use response::ResponsePoints;
pub use socket::resolve;
pub use timestamps::{TimestampMode, Timestamping};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared "please stop" flag, checked by the measurement threads between
/// packets (and set by signal handlers or the UI).
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// A flag that is not raised.
    pub fn new() -> Self {
        Self::default()
    }
    /// Asks the threads watching this flag to stop.
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    /// Whether stopping was requested.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    /// The underlying atomic, for signal handlers.
    pub fn as_atomic(&self) -> &Arc<AtomicBool> {
        &self.0
    }
}
