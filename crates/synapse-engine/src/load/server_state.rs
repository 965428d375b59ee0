//! What the load server's threads share: its configuration, its log's
//! events and totals, and the sessions granted (each with its phase and
//! its streams' counters).

use super::bulk::RateCap;
use super::line;
use super::wire::{FromReflector, PhaseKind};
use crate::StopFlag;
use crate::protocol::stamp_key::StampKey;
use crate::reflector::admission::AllowList;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a load server serves, and to whom.
#[derive(Debug, Clone)]
pub struct LoadServerConfig {
    /// Where it listens (TCP).
    pub bind: SocketAddr,
    /// The sources it serves.
    pub allow: AllowList,
    /// With a key, a session's HELLO must carry its MAC.
    pub key: Option<StampKey>,
    /// Sessions at once.
    pub max_sessions: usize,
    /// Seconds of load a session may have, all its phases together.
    pub max_seconds: u32,
    /// The most a session moves each way, bits per second (0: no cap).
    pub rate_bps: u64,
    /// Streams a session may have open at once.
    pub max_streams: u32,
    /// The echo port clients are told to probe.
    pub echo_port: Option<u16>,
    /// The STAMP port clients are told to probe.
    pub stamp_port: Option<u16>,
}

/// Defaults a reflector left running can live with.
impl LoadServerConfig {
    /// Sessions at once unless told: two.
    pub const DEFAULT_SESSIONS: usize = 2;
    /// Seconds of load a session may have unless told.
    pub const DEFAULT_SECONDS: u32 = 30;
    /// The rate cap per session unless told: 1 Gbit/s each way.
    pub const DEFAULT_RATE_BPS: u64 = 1_000_000_000;
    /// Streams a session may have at once: the IETF draft's largest (16)
    /// each way of a bidirectional phase.
    pub const MAX_STREAMS: u32 = 32;

    /// Serving every source on `bind`, with the defaults.
    pub fn new(bind: SocketAddr) -> Self {
        Self {
            bind,
            allow: AllowList::default(),
            key: None,
            max_sessions: Self::DEFAULT_SESSIONS,
            max_seconds: Self::DEFAULT_SECONDS,
            rate_bps: Self::DEFAULT_RATE_BPS,
            max_streams: Self::MAX_STREAMS,
            echo_port: None,
            stamp_port: None,
        }
    }
}

/// What the load server did, for its log.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadEvent {
    /// A session was granted.
    Started {
        /// Its control connection's peer.
        peer: SocketAddr,
    },
    /// A connection was refused, and why (as the client was told).
    Refused {
        /// The peer.
        peer: SocketAddr,
        /// The line the client got.
        reason: String,
    },
    /// A session ended.
    Ended {
        /// Its control connection's peer.
        peer: SocketAddr,
        /// Its phases.
        phases: u32,
        /// Bytes it was sent, and sent to it.
        sent: u64,
        /// Bytes it sent.
        received: u64,
        /// What went wrong, if something did.
        problem: Option<String>,
    },
}

/// The server's totals, when it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadServerTotals {
    /// Sessions granted.
    pub sessions: u64,
    /// Connections refused.
    pub refused: u64,
    /// Bytes sent (download streams).
    pub sent: u64,
    /// Bytes received (upload streams).
    pub received: u64,
}

/// A session's control connection silent this long has ended.
pub(super) const CONTROL_IDLE: Duration = Duration::from_secs(60);
/// Time past a phase's cap its streams are given before they are cut.
pub const GRACE: Duration = Duration::from_secs(2);

/// Everything the connection threads share.
pub(super) struct Shared {
    pub cfg: LoadServerConfig,
    pub stop: StopFlag,
    pub events: mpsc::Sender<LoadEvent>,
    pub sessions: Mutex<HashMap<u64, Arc<Session>>>,
    /// Connection threads running: bounded, so a flood of connections
    /// cannot make threads without end.
    pub threads: AtomicU32,
    pub totals: Mutex<LoadServerTotals>,
    /// The congestion control this host's senders get unless told.
    pub cc_default: String,
}

impl Shared {
    pub fn tell(&self, ev: LoadEvent) {
        if let LoadEvent::Refused { .. } = ev
            && let Ok(mut t) = self.totals.lock()
        {
            t.refused += 1;
        }
        let _ = self.events.send(ev);
    }

    /// Refuses `stream` with `why`, to it and to the log.
    pub fn refuse(&self, stream: &mut TcpStream, peer: SocketAddr, why: String) {
        let _ = line::send(stream, &FromReflector::Refused(why.clone()).encode());
        self.tell(LoadEvent::Refused { peer, reason: why });
    }

    pub fn most_threads(&self) -> u32 {
        let per_session = self.cfg.max_streams + 1;
        (self.cfg.max_sessions as u32).saturating_mul(per_session) + 8
    }
}

/// A granted session, as its streams find it.
pub(super) struct Session {
    /// Its control connection's address: its streams come from there.
    pub peer: IpAddr,
    /// Its rate caps, each way.
    pub cap_down: RateCap,
    pub cap_up: RateCap,
    pub streams_open: AtomicU32,
    pub phase: Mutex<Option<ActivePhase>>,
    pub sent: AtomicU64,
    pub received: AtomicU64,
    /// The download streams' sockets, for their kernel's figures.
    pub senders: Mutex<Vec<Arc<TcpStream>>>,
    /// Seconds of load it may still be granted.
    pub seconds_left: AtomicU32,
}

/// The phase a session runs now.
#[derive(Clone)]
pub(super) struct ActivePhase {
    pub load: PhaseKind,
    /// Its streams end then at the latest (its cap and a grace).
    pub until: Instant,
    pub stop: Arc<AtomicBool>,
}
