//! Errors the engine reports. Each says what went wrong in one line.

use std::io;
use std::net::SocketAddr;

/// Why a measurement could not start or had to end.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Binding the socket failed (port in use, address not local, …).
    #[error("cannot bind UDP {addr}: {reason}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// A short explanation.
        reason: String,
    },
    /// Listening on a TCP port failed.
    #[error("cannot listen on TCP {addr}: {reason}")]
    TcpBind {
        /// The address asked for.
        addr: SocketAddr,
        /// A short explanation.
        reason: String,
    },
    /// A host name or address could not be turned into a socket address.
    #[error("cannot resolve '{0}': {1}")]
    Resolve(String, String),
    /// The peer answered with ICMP port unreachable.
    #[error("{0} refused the datagrams (ICMP port unreachable): no echo server is listening there")]
    Refused(SocketAddr),
    /// Nothing came back at all.
    #[error(
        "no reply from {addr} to the first {packets} packets ({timeout_ms} ms timeout each): host unreachable or no echo server listening"
    )]
    NoReply {
        /// The peer.
        addr: SocketAddr,
        /// How many requests went unanswered.
        packets: u64,
        /// The per-packet timeout.
        timeout_ms: u64,
    },
    /// Nobody answered a multicast group's requests.
    #[error(
        "no answer from any member of {group} to the first {packets} requests ({timeout_ms} ms timeout each): no reflector joined it (synapse server --join), no route to it, or its hop limit is too small (--mc-ttl)"
    )]
    NoResponder {
        /// The group.
        group: SocketAddr,
        /// How many requests went unanswered.
        packets: u64,
        /// The per-request timeout.
        timeout_ms: u64,
    },
    /// Replies come back shorter than the requests.
    #[error(
        "replies from {addr} were {got} bytes, expected {expected} (the echo server truncates): lower --size"
    )]
    Truncated {
        /// The peer.
        addr: SocketAddr,
        /// Bytes in its replies.
        got: usize,
        /// Bytes sent.
        expected: usize,
    },
    /// Replies come, but only after their timeout.
    #[error("replies from {addr} arrive after the {timeout_ms} ms timeout: raise --timeout")]
    TooSlow {
        /// The peer.
        addr: SocketAddr,
        /// The per-packet timeout.
        timeout_ms: u64,
    },
    /// The kernel would not send to the peer (no route, network down, …).
    #[error("cannot send to {addr}: {source}")]
    Send {
        /// The peer.
        addr: SocketAddr,
        /// The kernel's answer.
        source: io::Error,
    },
    /// The requested CPU cannot be used.
    #[error("CPU {cpu} is not available to this process (allowed: {allowed})")]
    Cpu {
        /// The CPU asked for.
        cpu: usize,
        /// The CPUs that are allowed, as a list.
        allowed: String,
    },
    /// `--stamp` against a peer that returns the requests unchanged.
    #[error(
        "{0} echoes STAMP requests back unchanged: it is a plain echo server, not a STAMP session-reflector (drop --stamp)"
    )]
    NotStamp(SocketAddr),
    /// Authenticated STAMP: every answer failed its HMAC check.
    #[error(
        "{0} answers, but no answer carries a valid HMAC: the reflector has another key, or does not authenticate (check --hmac-key-file on both ends)"
    )]
    Unauthenticated(SocketAddr),
    /// TCP: nothing listens at the peer's port (RST to the SYN).
    #[error(
        "{0} refused the TCP connection: nothing listens there (synapse server answers TCP on its UDP port unless --tcp-port moves it or turns it off)"
    )]
    TcpRefused(SocketAddr),
    /// TCP: the connection could not be opened.
    #[error("cannot open a TCP connection to {addr}: {reason}")]
    TcpConnect {
        /// The peer.
        addr: SocketAddr,
        /// What happened (no answer to the SYN, no route, …).
        reason: String,
    },
    /// TCP: the peer closed every connection before answering anything.
    #[error(
        "{addr} closed the TCP connection {times} times before any reply ({how}): a server over its connection limit, or not an echo server"
    )]
    TcpClosed {
        /// The peer.
        addr: SocketAddr,
        /// How many connections it closed.
        times: u64,
        /// `reset` or `closed`.
        how: &'static str,
    },
    /// TCP: what comes back is not our requests.
    #[error(
        "{0} answers with bytes that are not the requests sent: it is not an echo server (RFC 862 returns every byte unchanged)"
    )]
    NotEcho(SocketAddr),
    /// Nothing accepts connections at the load port.
    #[error(
        "{0} refused the load's connection: nothing serves load there (start the reflector with `synapse server --load-port PORT`, and give the client that port with --load-port)"
    )]
    LoadUnserved(SocketAddr),
    /// The reflector's load server said no.
    #[error("the reflector at {addr} refused the load: {reason}")]
    LoadRefused {
        /// Its load port.
        addr: SocketAddr,
        /// What it said.
        reason: String,
    },
    /// The load session broke off.
    #[error("the load session with {addr} failed: {reason}")]
    LoadFailed {
        /// Its load port.
        addr: SocketAddr,
        /// What happened.
        reason: String,
    },
    /// A multicast group could not be joined.
    #[error("cannot join {group}: {reason}")]
    Join {
        /// The group (`GROUP` or `GROUP@SOURCE`).
        group: String,
        /// Why, in the user's terms.
        reason: String,
    },
    /// The timestamp source asked for cannot be had.
    #[error("{0}")]
    Timestamps(String),
    /// Any other system call failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The kernel's answer.
        source: io::Error,
    },
}

impl EngineError {
    /// Whether the error is the user's to fix (bad address, busy port, wrong
    /// CPU, nobody listening) rather than a failure during a run.
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            EngineError::Io { .. } | EngineError::LoadFailed { .. }
        )
    }

    /// Wraps an I/O error with what was being done (for `map_err`).
    pub fn io(context: &'static str) -> impl FnOnce(io::Error) -> Self {
        move |source| EngineError::Io { context, source }
    }
}
