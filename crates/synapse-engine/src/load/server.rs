//! The reflector's load server (`synapse server --load-port`): bulk TCP
//! for clients that measure latency under load, with the admission a
//! reflector left running needs.
//!
//! One thread accepts; each connection gets a thread of its own (a
//! session's control connection, or one of its streams), none of them a
//! reflector's measurement thread. A connection is only ever answered
//! once its handshake completed (it came out of `accept`), so nothing is
//! sent to a forged address. Admission, in order: `--allow` (a source
//! outside it is told so and closed), the key (a HELLO whose MAC does
//! not verify is refused), the number of sessions at once, the seconds of
//! load a session may have in all, the streams it may have open, and a
//! rate cap per session, each way. Every refusal is one line to the
//! client and one event for the server's log.

use super::bulk::RateCap;
use super::line;
use super::server_session::{control, serve_stream};
use super::wire::{FromClient, FromReflector, Load};
use crate::protocol::stamp_key::StampKey;
use crate::reflector::admission::AllowList;
use crate::{EngineError, StopFlag};
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
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
    /// Streams a session may have at once (the IETF draft's largest).
    pub const MAX_STREAMS: u32 = 16;

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

/// A running load server.
#[derive(Debug)]
pub struct LoadServerRun {
    /// Where it listens.
    pub local: SocketAddr,
    /// What it did, as it happens.
    pub events: mpsc::Receiver<LoadEvent>,
    stop: StopFlag,
    handle: Option<JoinHandle<Result<LoadServerTotals, EngineError>>>,
}

impl LoadServerRun {
    /// Asks it to stop (its sessions end within a fraction of a second).
    pub fn stop(&self) {
        self.stop.raise();
    }

    /// Whether its thread has ended.
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for it to stop, and its totals.
    pub fn join(&mut self) -> Result<LoadServerTotals, EngineError> {
        crate::join_once(&mut self.handle, "the load server's thread panicked")
    }
}

/// Binds (so a port in use fails here) and starts accepting.
pub fn start_load_server(
    cfg: LoadServerConfig,
    stop: StopFlag,
) -> Result<LoadServerRun, EngineError> {
    let listener = crate::reflector::tcp::listen(cfg.bind)?;
    let local = listener
        .local_addr()
        .map_err(EngineError::io("cannot read the load port's address"))?;
    let (tx, events) = mpsc::channel();
    let thread_stop = stop.clone();
    let handle = std::thread::Builder::new()
        .name("synapse-load-accept".into())
        .spawn(move || Ok(accept_loop(&listener, &cfg, &thread_stop, &tx)))
        .map_err(EngineError::io("cannot start the load server's thread"))?;
    Ok(LoadServerRun {
        local,
        events,
        stop,
        handle: Some(handle),
    })
}

/// How long a new connection has to say what it is.
const FIRST_LINE: Duration = Duration::from_secs(5);
/// A session's control connection silent this long has ended.
pub(super) const CONTROL_IDLE: Duration = Duration::from_secs(60);
/// Time past a phase's cap its streams are given before they are cut.
pub const GRACE: Duration = Duration::from_secs(2);
/// How often the accepting thread looks for a connection and its flag.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

/// Everything the connection threads share.
pub(super) struct Shared {
    pub cfg: LoadServerConfig,
    pub stop: StopFlag,
    events: mpsc::Sender<LoadEvent>,
    pub sessions: Mutex<HashMap<u64, Arc<Session>>>,
    /// Connection threads running: bounded, so a flood of connections
    /// cannot make threads without end.
    threads: AtomicU32,
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

    fn most_threads(&self) -> u32 {
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
    pub load: Load,
    /// Its streams end then at the latest (its cap and a grace).
    pub until: Instant,
    pub stop: Arc<AtomicBool>,
}

fn accept_loop(
    listener: &TcpListener,
    cfg: &LoadServerConfig,
    stop: &StopFlag,
    events: &mpsc::Sender<LoadEvent>,
) -> LoadServerTotals {
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        stop: stop.clone(),
        events: events.clone(),
        sessions: Mutex::new(HashMap::new()),
        threads: AtomicU32::new(0),
        totals: Mutex::new(LoadServerTotals::default()),
        cc_default: default_cc(),
    });
    while !stop.is_raised() {
        match listener.accept() {
            Ok((stream, peer)) => admit(&shared, stream, peer),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
    }
    // Connection threads see the flag within a poll; wait for them.
    let deadline = Instant::now() + Duration::from_secs(2);
    while shared.threads.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        std::thread::sleep(ACCEPT_POLL);
    }
    shared.totals.lock().map(|t| *t).unwrap_or_default()
}

/// The congestion control a new TCP socket of this host gets.
pub fn default_cc() -> String {
    socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .and_then(|s| s.tcp_congestion())
        .map(|name| {
            String::from_utf8_lossy(&name)
                .trim_end_matches('\0')
                .to_string()
        })
        .unwrap_or_else(|_| "unknown".into())
}

/// A connection out of `accept` (its handshake completed): refused at
/// once when its source is not allowed or too many threads run, else
/// given a thread of its own.
fn admit(shared: &Arc<Shared>, mut stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nonblocking(false);
    if !shared.cfg.allow.allows_ip(peer.ip()) {
        shared.refuse(&mut stream, peer, "not allowed (--allow)".into());
        return;
    }
    if shared.threads.load(Ordering::Relaxed) >= shared.most_threads() {
        shared.refuse(
            &mut stream,
            peer,
            "too many load connections at once".into(),
        );
        return;
    }
    shared.threads.fetch_add(1, Ordering::Relaxed);
    let s = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("synapse-load".into())
        .spawn(move || {
            serve_connection(&s, stream, peer);
            s.threads.fetch_sub(1, Ordering::Relaxed);
        });
    if spawned.is_err() {
        shared.threads.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Greets a connection and serves what its first line asks: a session
/// (HELLO) or a stream (DATA).
fn serve_connection(shared: &Arc<Shared>, mut stream: TcpStream, peer: SocketAddr) {
    let nonce: [u8; 16] = {
        let a = crate::sys::random::random_u64().unwrap_or(0);
        let b = crate::sys::random::random_u64().unwrap_or(0);
        let mut n = [0u8; 16];
        n[..8].copy_from_slice(&a.to_ne_bytes());
        n[8..].copy_from_slice(&b.to_ne_bytes());
        n
    };
    if line::send(&mut stream, &FromReflector::Greeting { nonce }.encode()).is_err()
        || stream.set_read_timeout(Some(FIRST_LINE)).is_err()
    {
        return;
    }
    let first = line::receive(&mut stream).map_err(|e| e.to_string());
    match first.and_then(|l| FromClient::parse(&l)) {
        Ok(FromClient::Hello(h)) => control(shared, stream, peer, &nonce, &h),
        Ok(FromClient::Data { session, dir, cc }) => {
            serve_stream(shared, stream, peer, session, dir, cc.as_deref());
        }
        Ok(_) => shared.refuse(&mut stream, peer, "a HELLO or a DATA line first".into()),
        Err(e) => shared.refuse(&mut stream, peer, format!("not the load protocol ({e})")),
    }
}
