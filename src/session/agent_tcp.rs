//! The agent's `tcp://` peers: each a paced TCP client of its own (one
//! thread, one connection kept open), never giving up. A peer that
//! refuses, resets or closes loses the requests waiting on it; its client
//! opens the connection again with backoff (10 ms doubling to 1 s), and
//! each request it could not send counts lost at its timeout, as a UDP
//! peer's unanswered probe does.
//!
//! UDP peers share the prober's one thread; a TCP request blocks its
//! connection until its reply or its timeout, so TCP peers cannot share
//! one without delaying each other.

use super::peer_clients::{PeerClient, PeerClients};
use crate::error::AppError;
use crate::plan::agent::{AgentConfig, PeerConfig};
use std::net::SocketAddr;
use synapse_engine::{
    ClientConfig, EngineError, Role, StampingInfo, StopFlag, Transport, start_client,
};
use synapse_stats::Record;

/// Records one TCP peer's ring holds: 6.5 s at 10,000 probes/s, read
/// every 50 ms.
const TCP_RING: usize = 1 << 16;

/// The running TCP peers.
#[derive(Debug, Default)]
pub struct TcpPeers {
    clients: PeerClients,
}

impl TcpPeers {
    /// Starts a client for each of `cfg`'s TCP peers. A peer that is down
    /// is no error: only a thread or socket that cannot be had is.
    pub fn start(cfg: &AgentConfig, warmup: u64) -> Result<Self, AppError> {
        let mut out = Self::default();
        for (index, p) in cfg.peers.iter().enumerate() {
            if p.transport != Transport::Tcp {
                continue;
            }
            let run = start_client(client_of(cfg, p, warmup)?, StopFlag::new())?;
            out.clients.list.push(PeerClient {
                index,
                name: p.name.clone(),
                run,
            });
        }
        Ok(out)
    }

    /// How the peer at `index` is stamped, if it is a TCP one.
    pub fn stamping_of(&self, index: usize) -> Option<&StampingInfo> {
        self.clients.stamping_of(index)
    }

    /// Hands every record since the last call to `each`, with its peer's
    /// index.
    pub fn drain(&mut self, each: impl FnMut(Option<usize>, &Record)) {
        self.clients.drain(each);
    }

    /// Records missed because a ring was full, all peers told.
    pub fn ring_overflow(&self) -> u64 {
        self.clients.ring_overflow()
    }

    /// Why a peer's client ended by itself (they run until stopped).
    pub fn failure(&mut self) -> Option<String> {
        self.clients.failure("TCP").map(|(_, why)| why)
    }

    /// Stops every client and waits for them; `each` gets their last
    /// records. The first failure, if one failed.
    pub fn stop(&mut self, each: impl FnMut(Option<usize>, &Record)) -> Result<(), EngineError> {
        let first = self.clients.stop_and_join();
        self.clients.drain(each);
        self.clients.list.clear();
        first
    }
}

/// The engine's request for one TCP peer: request and response on its
/// schedule, every request stamped, until stopped.
fn client_of(cfg: &AgentConfig, p: &PeerConfig, warmup: u64) -> Result<ClientConfig, AppError> {
    Ok(ClientConfig {
        // The address the probes leave from, on a port of the kernel's
        // choosing: one connection per peer.
        bind: cfg.bind.map(|b| SocketAddr::new(b.ip(), 0)),
        warmup,
        timeout: cfg.timeout,
        size: p.size,
        thread: cfg.thread.placement(Role::Client)?,
        ring_capacity: TCP_RING,
        timestamps: cfg.timestamps,
        tx_stamp_every: 1,
        schedule: Some(p.schedule),
        transport: Transport::Tcp,
        phase: p.phase,
        keep_trying: true,
        ..ClientConfig::new(p.addr)
    })
}
