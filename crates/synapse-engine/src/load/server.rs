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

use super::line;
use super::server_session::{control, serve_stream};
use super::server_state::Shared;
pub use super::server_state::{LoadEvent, LoadServerConfig, LoadServerTotals};
use super::wire::{FromClient, FromReflector};
use crate::{EngineError, StopFlag};
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
/// How often the accepting thread looks for a connection and its flag.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

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
