//! The TCP echo reflector (RFC 862 over TCP): every byte of every
//! connection back, unchanged, many connections at once on one thread
//! (`epoll`), with no thread per connection. It listens on the UDP echo
//! reflector's port number unless told otherwise.
//!
//! - `conns`: the open connections, by token, and how many each source holds.
//! - `serve`: the loop: accept, read, echo, close.
//!
//! A connection from outside `--allow`, or beyond the per-source or total
//! cap, is closed at once and counted. One whose client stops reading its
//! echo (the send buffer full) is read no more; still full after `STALL`,
//! it is closed and counted, and never blocks the others.

mod conns;
mod serve;

use crate::affinity::{ThreadPlacement, place_current_thread};
use crate::reflector::admission::AllowList;
use crate::{EngineError, Placement, StopFlag};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::thread::JoinHandle;
use std::time::Duration;

/// A connection whose client has not read its echo for this long is closed.
pub const STALL: Duration = Duration::from_secs(5);

/// TCP echo reflector settings.
#[derive(Debug, Clone)]
pub struct TcpEchoConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// Where the thread runs and how it waits.
    pub thread: ThreadPlacement,
    /// Who is answered.
    pub allow: AllowList,
    /// Connections one source address may hold at once.
    pub per_source: u32,
    /// Connections open at once, in all.
    pub max_connections: usize,
}

/// What the TCP echo reflector did over its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpEchoTotals {
    /// Connections accepted and served.
    pub connections: u64,
    /// Still open when it stopped.
    pub open: u64,
    /// Bytes echoed.
    pub bytes: u64,
    /// Closed by their client (FIN).
    pub closed: u64,
    /// Ended by an error (reset, timed out by the kernel).
    pub reset: u64,
    /// Closed because their client stopped reading its echo.
    pub stalled: u64,
    /// Refused: source outside `--allow`.
    pub refused_not_allowed: u64,
    /// Refused: its source already held the per-source cap.
    pub refused_per_source: u64,
    /// Refused: the total cap was reached.
    pub refused_total: u64,
}

impl TcpEchoTotals {
    /// Connections refused, for any reason.
    pub fn refused(&self) -> u64 {
        self.refused_not_allowed + self.refused_per_source + self.refused_total
    }
}

/// What a stopped TCP echo reflector hands back.
#[derive(Debug, Clone)]
pub struct TcpEchoOutcome {
    /// Life totals.
    pub totals: TcpEchoTotals,
    /// Where the thread ran.
    pub placement: Placement,
}

/// A running TCP echo reflector.
#[derive(Debug)]
pub struct TcpEchoRun {
    /// The address it listens on (the real port when 0 was asked for).
    pub local: SocketAddr,
    stop: StopFlag,
    handle: Option<JoinHandle<Result<TcpEchoOutcome, EngineError>>>,
}

impl TcpEchoRun {
    /// Whether the thread has ended (stopped, or failed).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Asks the thread to stop (within one tick).
    pub fn stop(&self) {
        self.stop.raise();
    }

    /// Waits for the thread.
    pub fn join(&mut self) -> Result<TcpEchoOutcome, EngineError> {
        crate::join_once(&mut self.handle, "TCP echo thread panicked or was joined")
    }
}

/// Listens on `addr`, non-blocking: a port that cannot be had is said
/// plainly (the load server listens the same way).
pub(crate) fn listen(addr: SocketAddr) -> Result<TcpListener, EngineError> {
    let reason = |e: io::Error| match e.kind() {
        io::ErrorKind::AddrInUse => "address already in use".to_string(),
        io::ErrorKind::AddrNotAvailable => "address is not local to this host".into(),
        io::ErrorKind::PermissionDenied => {
            "permission denied (ports below 1024 need privilege)".into()
        }
        _ => e.to_string(),
    };
    let fail = |e| EngineError::TcpBind {
        addr,
        reason: reason(e),
    };
    let listener = TcpListener::bind(addr).map_err(fail)?;
    listener.set_nonblocking(true).map_err(fail)?;
    Ok(listener)
}

/// Listens and starts the TCP echo thread.
pub fn start_tcp_echo(cfg: TcpEchoConfig, stop: StopFlag) -> Result<TcpEchoRun, EngineError> {
    let listener = listen(cfg.bind)?;
    let local = listener.local_addr().unwrap_or(cfg.bind);
    // Thousands of connections need more descriptors than the usual 1,024.
    let _ = crate::sys::epoll::raise_fd_limit();
    let mut echo = serve::TcpEcho::new(listener, &cfg)
        .map_err(EngineError::io("cannot set up epoll for TCP echo"))?;
    let thread_stop = stop.clone();
    let handle = std::thread::Builder::new()
        .name("synapse-tcp-echo".into())
        .spawn(move || {
            let placement = place_current_thread(cfg.thread).placement;
            echo.serve(&thread_stop)?;
            Ok(TcpEchoOutcome {
                totals: echo.totals(),
                placement,
            })
        })
        .map_err(EngineError::io("cannot start the TCP echo thread"))?;
    Ok(TcpEchoRun {
        local,
        stop,
        handle: Some(handle),
    })
}
