//! Opening one of the client's TCP connections: the wait for it bounded
//! by the timeout, Nagle off, the receive set up for blocking (the
//! receive is the wait, `SO_RCVTIMEO` armed once) or busy-polling, and,
//! once it is established, the kernel stamps.

use super::stamps::TcpStamps;
use crate::client::recv_timeout::RecvTimeout;
use crate::client::stop::STOP_CHECK;
use crate::mono::Mono;
use crate::sys::marks;
use crate::sys::tcp as sys_tcp;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;
use synapse_stats::tcp::{Break, ConnectFailure};

/// How the run's connections are opened.
#[derive(Debug, Clone)]
pub(crate) struct Opener {
    /// The peer.
    pub server: SocketAddr,
    /// Local address to open from, when given.
    pub bind: Option<SocketAddr>,
    /// How long opening may take, and each reply.
    pub timeout: Duration,
    /// Spin instead of sleeping in the kernel.
    pub busy_poll: bool,
    /// Kernel stamps: TX stamps on one request in this many (`None`: off).
    pub stamp_every: Option<u32>,
    /// `--dscp`: the TOS byte every segment carries (its ECN bits are the
    /// kernel's).
    pub tos: Option<u8>,
}

/// One open connection.
#[derive(Debug)]
pub(crate) struct Conn {
    /// The socket: owns the descriptor, closed when the connection is
    /// dropped.
    _socket: Socket,
    /// Its descriptor.
    pub fd: RawFd,
    /// Where it was opened from.
    pub local: SocketAddr,
    /// Blocking: how long one receive may block on its own.
    pub armed: Option<Duration>,
    /// Kernel stamps, when on.
    pub stamps: Option<TcpStamps>,
}

/// Why a connection could not be opened: the kind, and what the kernel said.
pub(crate) type OpenError = (ConnectFailure, io::Error);

impl Opener {
    /// A fresh socket of the peer's family, bound when asked.
    pub fn socket(&self) -> io::Result<Socket> {
        let socket = Socket::new(
            Domain::for_address(self.server),
            Type::STREAM,
            Some(Protocol::TCP),
        )?;
        if let Some(bind) = self.bind {
            // A fixed local port must be reusable at once after a lost
            // connection (its old one may linger in TIME_WAIT).
            if bind.port() != 0 {
                socket.set_reuse_address(true)?;
            }
            socket.bind(&bind.into())?;
        }
        self.mark(&socket)?;
        Ok(socket)
    }

    /// `--dscp` on a socket not yet connected, so the handshake is marked
    /// too.
    pub fn mark(&self, socket: &Socket) -> io::Result<()> {
        match self.tos {
            Some(tos) => marks::set_tos(socket.as_raw_fd(), self.server.is_ipv6(), tos),
            None => Ok(()),
        }
    }

    /// Opens a connection, waiting at most the timeout.
    pub fn open(&self) -> Result<Conn, OpenError> {
        let other = |e: io::Error| (ConnectFailure::Other, e);
        let socket = self.socket().map_err(other)?;
        socket
            .connect_timeout(&SockAddr::from(self.server), self.timeout)
            .map_err(|e| (failure_of(&e), e))?;
        let fd = socket.as_raw_fd();
        sys_tcp::set_nodelay(fd).map_err(other)?;
        let armed = if self.busy_poll {
            socket.set_nonblocking(true).map_err(other)?;
            None
        } else {
            RecvTimeout::arm(&socket, self.timeout.min(STOP_CHECK))
                .map_err(other)?
                .armed
        };
        let stamps = self
            .stamp_every
            .map(|every| TcpStamps::enable(fd, every))
            .transpose()
            .map_err(other)?;
        let local = socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .unwrap_or(self.server);
        Ok(Conn {
            _socket: socket,
            fd,
            local,
            armed,
            stamps,
        })
    }
}

/// What kind of failure an error from `connect` is.
pub(crate) fn failure_of(e: &io::Error) -> ConnectFailure {
    match (e.raw_os_error(), e.kind()) {
        (Some(libc::ECONNREFUSED), _) => ConnectFailure::Refused,
        (Some(libc::ETIMEDOUT | libc::EINPROGRESS), _) | (_, io::ErrorKind::TimedOut) => {
            ConnectFailure::TimedOut
        }
        _ => ConnectFailure::Other,
    }
}

/// What kind of loss an error on an open connection is.
pub(crate) fn break_of(errno: i32) -> Break {
    match errno {
        libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED | libc::ECONNREFUSED => Break::Reset,
        _ => Break::Failed,
    }
}

/// How a send on an open connection ended.
#[derive(Debug)]
pub(crate) enum Sent {
    /// Every byte was taken.
    Whole,
    /// The connection is gone.
    Lost(Break),
}

impl Conn {
    /// Sends `payload` whole: one `send` (or `sendmsg`, when `sampled`),
    /// and only when the kernel takes part of it (the peer stopped
    /// reading) waits for room, until `deadline`.
    #[inline]
    pub fn send(&mut self, payload: &[u8], sampled: bool, deadline: Mono) -> io::Result<Sent> {
        let first = match &mut self.stamps {
            Some(s) => s.send(self.fd, payload, sampled),
            None => sys_tcp::send_now(self.fd, payload),
        };
        let taken = match first {
            Ok(n) if n == payload.len() => return Ok(Sent::Whole),
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => 0,
            Err(e) => return lost_or(e),
        };
        self.send_rest(&payload[taken..], deadline)
    }

    /// The rest of a request the kernel did not take at once.
    #[cold]
    fn send_rest(&mut self, mut rest: &[u8], deadline: Mono) -> io::Result<Sent> {
        while !rest.is_empty() {
            let now = Mono::now();
            if now >= deadline {
                return Ok(Sent::Lost(Break::Stalled));
            }
            crate::sys::poll::wait_writable(self.fd, deadline - now)?;
            match sys_tcp::send_now(self.fd, rest) {
                Ok(n) => {
                    if let Some(s) = &mut self.stamps {
                        s.wrote(n);
                    }
                    rest = &rest[n..];
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
                Err(e) => return lost_or(e),
            }
        }
        Ok(Sent::Whole)
    }

    /// Receives what the stream holds, up to `buf.len()` bytes, with the
    /// RX stamp of the last segment read when `stamped`; `now`: never wait.
    #[inline]
    pub fn recv(
        &mut self,
        buf: &mut [u8],
        stamped: bool,
        now: bool,
    ) -> io::Result<(usize, Option<u64>)> {
        match &mut self.stamps {
            Some(s) if stamped => s.recv(self.fd, buf, now),
            _ if now => sys_tcp::recv_now(self.fd, buf).map(|n| (n, None)),
            _ => sys_tcp::recv(self.fd, buf).map(|n| (n, None)),
        }
    }
}

/// A send error: the connection's loss, or a failure of its own.
fn lost_or(e: io::Error) -> io::Result<Sent> {
    match e.raw_os_error() {
        Some(errno) if crate::sys::errno::is_connection_lost(errno) => {
            Ok(Sent::Lost(break_of(errno)))
        }
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn opener(server: SocketAddr) -> Opener {
        Opener {
            server,
            bind: None,
            timeout: Duration::from_millis(500),
            busy_poll: false,
            stamp_every: None,
            tos: None,
        }
    }

    #[test]
    fn a_closed_port_is_refused_and_an_open_one_connects() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let c = opener(addr).open().unwrap();
        assert_eq!(c.local.ip(), addr.ip());
        assert!(c.armed.is_some(), "blocking: the receive is the wait");
        drop(l);
        let (why, _) = opener(addr).open().unwrap_err();
        assert_eq!(why, ConnectFailure::Refused);
    }

    #[test]
    fn a_request_is_sent_whole_and_a_lost_peer_is_a_reset() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = opener(l.local_addr().unwrap()).open().unwrap();
        let (s, _) = l.accept().unwrap();
        let deadline = Mono::now() + Duration::from_millis(200);
        assert!(matches!(
            c.send(b"0123456789abcdef", false, deadline).unwrap(),
            Sent::Whole
        ));
        // Closed with unread data: the kernel resets the connection.
        drop(s);
        std::thread::sleep(Duration::from_millis(20));
        let mut outcome = None;
        for _ in 0..3 {
            match c.send(b"0123456789abcdef", false, deadline) {
                Ok(Sent::Lost(why)) => {
                    outcome = Some(why);
                    break;
                }
                Ok(Sent::Whole) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(outcome, Some(Break::Reset));
    }

    #[test]
    fn errors_are_told_apart() {
        let e = |n| io::Error::from_raw_os_error(n);
        assert_eq!(failure_of(&e(libc::ECONNREFUSED)), ConnectFailure::Refused);
        assert_eq!(failure_of(&e(libc::ETIMEDOUT)), ConnectFailure::TimedOut);
        assert_eq!(failure_of(&e(libc::ENETUNREACH)), ConnectFailure::Other);
        assert_eq!(break_of(libc::ECONNRESET), Break::Reset);
        assert_eq!(break_of(libc::ETIMEDOUT), Break::Failed);
    }
}
