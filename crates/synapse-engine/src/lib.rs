//! Synapse's measurement engine: sockets (`socket`, `sys`), kernel and NIC
//! timestamps (`timestamping`), the wire formats (`protocol`: RFC 862
//! echo, RFC 8762 STAMP, RFC 8972 TLVs), the pinned client loops (UDP
//! ping-pong, paced, TCP ping-pong and connect-each, the agent's prober),
//! the reflector loops (UDP echo and STAMP, TCP echo), the host's floor
//! (`floor`) and CPU placement (`affinity`).
//!
//! Nothing here knows about terminals, reports or the command line: results
//! leave through [`Record`](synapse_stats::Record)s on a lock-free ring and
//! through the [`Stats`](synapse_stats::Stats) each thread returns when it
//! ends. It depends on `synapse-stats` and `synapse-units` and on nothing
//! above them. The only `unsafe` code of Synapse is in `sys`, each block
//! with its SAFETY line.
//!
//! A reflector and a client on loopback, a thousand round trips:
//!
//! ```
//! use synapse_engine::{ClientConfig, Protocol, ReflectorConfig, StopFlag};
//!
//! # fn main() -> Result<(), synapse_engine::EngineError> {
//! let reflector_stop = StopFlag::new();
//! let bind = "127.0.0.1:0".parse().expect("an address");
//! let mut reflector = synapse_engine::start_reflector(
//!     ReflectorConfig::new(bind, Protocol::Echo),
//!     reflector_stop.clone(),
//! )?;
//!
//! let mut config = ClientConfig::new(reflector.local);
//! config.packets = Some(1000);
//! let mut client = synapse_engine::start_client(config, StopFlag::new())?;
//! let outcome = client.join()?;
//! reflector_stop.raise();
//! reflector.join()?;
//!
//! let counters = outcome.stats.counters();
//! assert_eq!(counters.sent, 1000);
//! println!(
//!     "{} replies, p50 {} ns",
//!     counters.received,
//!     outcome.stats.histogram().value_at_quantile(0.5)
//! );
//! # Ok(())
//! # }
//! ```

mod affinity;
mod client;
mod error;
pub mod floor;
pub mod load;
mod mono;
pub mod peer_address;
mod points;
pub mod protocol;
mod reflector;
pub mod socket;
pub(crate) mod sys;
pub mod timestamping;
pub mod trace;
mod transport;
mod wall_clock;

pub use affinity::{Placement, Role, ThreadPlacement, choose_cpu, pin_thread};
pub use client::extensions;
pub use client::group::{
    DISCOVERY_ROUNDS, GroupOutcome, MAX_RESPONDERS, MulticastOptions, ResponderEntry,
    ResponderOutcome, ResponderPoints,
};
pub use client::paced::schedule::Schedule;
pub use client::paced::{Budget, MAX_IN_FLIGHT, ProbeConfig, in_flight_bound};
pub use client::prober::{NO_PEER, PeerRecord, ProberConfig, ProberRun, start_prober};
pub use client::sequence;
pub use client::{ClientConfig, ClientOutcome, ClientRun, StampingInfo, start_client};
pub use error::EngineError;
pub use points::{PacketStatus, Points};
pub use protocol::stamp;
pub use protocol::stamp_key;
pub use reflector::admission as reflector_admission;
pub use reflector::groups::{GroupJoins, Membership};
pub use reflector::limits as reflector_limits;
pub use reflector::tcp::{
    TcpEchoConfig, TcpEchoOutcome, TcpEchoRun, TcpEchoTotals, start_tcp_echo,
};
pub use reflector::{
    AnswerPoints, NicStamping, Protocol, ReflectorConfig, ReflectorEvent, ReflectorOutcome,
    ReflectorRun, ReflectorTotals, Refusal, Refusals, SessionInfo, TlvTotals, start_reflector,
};
pub use socket::resolve;
/// The CPUs this process may run on (`synapse calibrate` measures on them).
pub use sys::affinity::allowed_cpus;
/// A NIC's interrupt coalescing, as `ethtool -c` shows it (`synapse
/// calibrate`'s audit of this host).
pub use sys::ethtool::{Coalesce, coalesce};
/// The index of a network interface, by name (`--mc-if`).
pub use sys::interfaces::index_of as interface_index;
/// An address's name (`synapse trace --resolve`).
pub use sys::names::name_of;
/// Waiting for keys without crossterm's reader, which spins on a terminal
/// that hung up (the agent's live table).
pub use sys::terminal::terminal_input;
/// `synapse server --user`: giving up root once the ports are bound.
pub use sys::user::become_user;
pub use timestamping::ReflectorStamping;
pub use timestamping::capabilities;
pub use timestamping::{TimestampMode, Timestamping};
pub use transport::Transport;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// Waits for an engine thread, once: a second call, or a thread that
/// panicked, is an error that says which thread.
fn join_once<T>(
    handle: &mut Option<JoinHandle<Result<T, EngineError>>>,
    context: &'static str,
) -> Result<T, EngineError> {
    let lost = || EngineError::Io {
        context,
        source: std::io::Error::other("thread gone"),
    };
    handle
        .take()
        .ok_or_else(lost)?
        .join()
        .unwrap_or_else(|_| Err(lost()))
}

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
