//! What a peer has shown of itself before its first reply, and the one
//! error that explains the silence when the client gives up on it.

use crate::EngineError;
use std::net::SocketAddr;
use std::time::Duration;

/// After this many unanswered requests with not a single reply, the peer is
/// declared unreachable instead of waiting out the whole run.
pub const GIVE_UP_AFTER: u64 = 10;

/// What the peer has shown of itself so far.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    /// Fresh replies.
    pub replies: u64,
    /// Late or duplicate replies: proof the peer answers, slowly.
    pub late: u64,
    /// STAMP requests that came back unchanged: a plain echo server.
    pub echoed_requests: u64,
    /// Our echo requests, cut short: (bytes that came back, bytes sent).
    pub truncated: Option<(usize, usize)>,
    /// Authenticated STAMP: datagrams refused as replies because their
    /// HMAC did not verify.
    pub unauthenticated: u64,
}

impl Seen {
    /// Whether what came instead of replies names the peer's fault: a
    /// plain echo of STAMP requests, echoes cut short, refused signatures
    /// (not slowness: late replies are measured, and reported).
    pub fn names_a_fault(&self) -> bool {
        self.truncated.is_some() || self.echoed_requests > 0 || self.unauthenticated > 0
    }

    /// Why `packets` requests to `addr` got no timely reply at all.
    pub fn silence(&self, addr: SocketAddr, packets: u64, timeout: Duration) -> EngineError {
        let timeout_ms = timeout.as_millis() as u64;
        if let Some((got, expected)) = self.truncated {
            EngineError::Truncated {
                addr,
                got,
                expected,
            }
        } else if self.echoed_requests > 0 {
            EngineError::NotStamp(addr)
        } else if self.unauthenticated > 0 {
            EngineError::Unauthenticated(addr)
        } else if self.late > 0 {
            EngineError::TooSlow { addr, timeout_ms }
        } else {
            EngineError::NoReply {
                addr,
                packets,
                timeout_ms,
            }
        }
    }
}
