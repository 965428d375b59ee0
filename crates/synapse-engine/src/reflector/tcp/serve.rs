//! The TCP echo loop. Per request on the ordinary path: one `epoll_wait`,
//! one `recv` (fewer bytes than the buffer holds means the socket is
//! drained, so no second `recv` to hear `EAGAIN`), one `send`: what an
//! `epoll` echo server in C does.

use super::conns::{Conn, Conns, Refuse};
use super::{STALL, TcpEchoConfig, TcpEchoTotals};
use crate::reflector::admission::AllowList;
use crate::sys::epoll::{Epoll, HANGUP, READABLE, Ready, WRITABLE};
use crate::sys::tcp;
use crate::{EngineError, StopFlag};
use std::io;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// The listener's token (a connection's never has every bit set).
const LISTENER: u64 = u64::MAX;
/// How long a wait lasts when nothing happens (the stop is noticed by then).
const TICK_MS: i32 = 100;
/// Reads one connection is given per wake-up before the others' turn.
const READS_PER_TURN: usize = 16;
/// The receive buffer, shared by every connection.
const SCRATCH: usize = 64 * 1024;

/// The reflector's state, owned by its thread.
pub struct TcpEcho {
    listener: TcpListener,
    epoll: Epoll,
    conns: Conns,
    totals: TcpEchoTotals,
    allow: AllowList,
    per_source: u32,
    max_connections: usize,
    busy_poll: bool,
    scratch: Box<[u8]>,
}

/// How a connection ended.
#[derive(Clone, Copy)]
enum End {
    Closed,
    Reset,
    Stalled,
}

impl TcpEcho {
    /// Watches `listener` for new connections.
    pub fn new(listener: TcpListener, cfg: &TcpEchoConfig) -> io::Result<Self> {
        let epoll = Epoll::new()?;
        epoll.add(listener.as_raw_fd(), READABLE, LISTENER)?;
        Ok(Self {
            listener,
            epoll,
            conns: Conns::default(),
            totals: TcpEchoTotals::default(),
            allow: cfg.allow.clone(),
            per_source: cfg.per_source,
            max_connections: cfg.max_connections,
            busy_poll: cfg.thread.busy_poll,
            scratch: vec![0; SCRATCH].into_boxed_slice(),
        })
    }

    /// Its totals, with the connections open now.
    pub fn totals(&self) -> TcpEchoTotals {
        TcpEchoTotals {
            open: self.conns.open() as u64,
            ..self.totals
        }
    }

    /// Serves until `stop` is raised.
    pub fn serve(&mut self, stop: &StopFlag) -> Result<(), EngineError> {
        let mut ready = [Ready::default(); 256];
        let wait_ms = if self.busy_poll { 0 } else { TICK_MS };
        let mut checked = Instant::now();
        while !stop.is_raised() {
            let n = self
                .epoll
                .wait(&mut ready, wait_ms)
                .map_err(EngineError::io("TCP echo: epoll_wait failed"))?;
            for r in &ready[..n] {
                if r.token == LISTENER {
                    self.accept_all();
                } else {
                    self.service(r.token, r.events);
                }
            }
            if checked.elapsed() >= Duration::from_secs(1) {
                checked = Instant::now();
                self.close_stalled(checked);
            }
        }
        Ok(())
    }

    /// Accepts every connection waiting, or refuses it.
    fn accept_all(&mut self) {
        loop {
            let (fd, peer) = match tcp::accept(self.listener.as_raw_fd()) {
                Ok(got) => got,
                // EAGAIN: none left. Anything else (out of descriptors, a
                // connection reset while queued): try again on the next
                // wake-up rather than spin here.
                Err(_) => return,
            };
            let admitted = if self.allow.allows_ip(peer.ip()) {
                self.conns
                    .admits(peer.ip(), self.per_source, self.max_connections)
            } else {
                Err(Refuse::NotAllowed)
            };
            match admitted {
                Err(Refuse::NotAllowed) => self.totals.refused_not_allowed += 1,
                Err(Refuse::PerSource) => self.totals.refused_per_source += 1,
                Err(Refuse::Total) => self.totals.refused_total += 1,
                Ok(()) => {
                    // Answers leave at once, whatever is unacknowledged.
                    let _ = tcp::set_nodelay(fd.as_raw_fd());
                    let raw = fd.as_raw_fd();
                    let token = self.conns.insert(Conn {
                        fd,
                        peer,
                        pending: Vec::new(),
                        blocked_since: None,
                    });
                    if self.epoll.add(raw, READABLE, token).is_err() {
                        self.conns.remove(token);
                        self.totals.refused_total += 1;
                    } else {
                        self.totals.connections += 1;
                    }
                }
            }
        }
    }

    /// Whatever `events` say of one connection.
    fn service(&mut self, token: u64, events: u32) {
        let Some(conn) = self.conns.get(token) else {
            return;
        };
        let outcome = if conn.pending.is_empty() {
            echo(conn, &mut self.scratch, &mut self.totals.bytes)
        } else if events & (WRITABLE | HANGUP) != 0 {
            flush(conn, &mut self.totals.bytes)
        } else {
            Ok(Flow::Same)
        };
        let fd = conn.fd.as_raw_fd();
        match outcome {
            Ok(Flow::Same) => {}
            Ok(Flow::Blocked) => {
                conn.blocked_since = Some(Instant::now());
                if self.epoll.modify(fd, WRITABLE, token).is_err() {
                    self.end(token, End::Reset);
                }
            }
            Ok(Flow::Drained) => {
                conn.blocked_since = None;
                if self.epoll.modify(fd, READABLE, token).is_err() {
                    self.end(token, End::Reset);
                }
            }
            Err(end) => self.end(token, end),
        }
    }

    /// Closes connections whose client has not read for `STALL`.
    fn close_stalled(&mut self, now: Instant) {
        if let Some(limit) = now.checked_sub(STALL) {
            for token in self.conns.stalled(limit) {
                self.end(token, End::Stalled);
            }
        }
    }

    fn end(&mut self, token: u64, how: End) {
        if let Some(conn) = self.conns.remove(token) {
            let _ = self.epoll.delete(conn.fd.as_raw_fd());
            *match how {
                End::Closed => &mut self.totals.closed,
                End::Reset => &mut self.totals.reset,
                End::Stalled => &mut self.totals.stalled,
            } += 1;
        }
    }
}

/// What a connection waits for next.
enum Flow {
    /// As before.
    Same,
    /// Its echo did not all fit: wait for room, read no more.
    Blocked,
    /// What was held back has all gone: read again.
    Drained,
}

/// Reads what the client sent and sends it straight back.
fn echo(conn: &mut Conn, scratch: &mut [u8], bytes: &mut u64) -> Result<Flow, End> {
    let fd = conn.fd.as_raw_fd();
    for _ in 0..READS_PER_TURN {
        let n = match tcp::recv_now(fd, scratch) {
            Ok(0) => return Err(End::Closed),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flow::Same),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(End::Reset),
        };
        let sent = match tcp::send_now(fd, &scratch[..n]) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(_) => return Err(End::Reset),
        };
        *bytes += sent as u64;
        if sent < n {
            conn.pending.extend_from_slice(&scratch[sent..n]);
            return Ok(Flow::Blocked);
        }
        if n < scratch.len() {
            return Ok(Flow::Same);
        }
    }
    Ok(Flow::Same)
}

/// Sends what was held back.
fn flush(conn: &mut Conn, bytes: &mut u64) -> Result<Flow, End> {
    match tcp::send_now(conn.fd.as_raw_fd(), &conn.pending) {
        Ok(m) => {
            *bytes += m as u64;
            conn.pending.drain(..m);
            Ok(if conn.pending.is_empty() {
                Flow::Drained
            } else {
                Flow::Same
            })
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Flow::Same),
        Err(_) => Err(End::Reset),
    }
}
