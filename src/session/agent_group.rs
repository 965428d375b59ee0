//! The agent's multicast peers: each a group probed by a paced client of
//! its own (one thread, one unconnected socket), never giving up. Every
//! member answers from its own address, so a group cannot share the
//! prober, which matches a reply to its peer by address. A group's own
//! records are each request's slowest answer (the group's figures); each
//! responder's come apart, tagged with its index, and its name or address
//! as it is first heard.

use super::peer_clients::{PeerClient, PeerClients};
use crate::error::AppError;
use crate::plan::agent::{AgentConfig, PeerConfig};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use synapse_engine::{ClientConfig, EngineError, MulticastOptions, Role, StopFlag};
use synapse_stats::Record;

/// Records one group's rings hold: 6.5 s at 10,000 probes/s, read every
/// 50 ms.
const GROUP_RING: usize = 1 << 16;

/// The running group peers.
#[derive(Debug, Default)]
pub struct GroupPeers {
    clients: PeerClients,
    /// Each client's responders as heard so far, by their index: name,
    /// else address (in the clients' order).
    responders: Vec<Vec<String>>,
}

/// A responder's record, as handed out: its group's index in the
/// configuration, its own name (else address), what happened.
#[derive(Debug)]
pub struct ResponderRecord<'a> {
    pub peer: usize,
    pub responder: &'a str,
    pub record: &'a Record,
}

impl GroupPeers {
    /// Starts a client for each of `cfg`'s group peers. A group nobody
    /// answers yet is no error: only a thread or socket that cannot be had.
    pub fn start(cfg: &AgentConfig, warmup: u64) -> Result<Self, AppError> {
        let mut out = Self::default();
        for (index, p) in cfg.peers.iter().enumerate() {
            if !p.is_group() {
                continue;
            }
            let run = synapse_engine::start_client(client_of(cfg, p, warmup)?, StopFlag::new())?;
            out.clients.list.push(PeerClient {
                index,
                name: p.name.clone(),
                run,
            });
            out.responders.push(Vec::new());
        }
        Ok(out)
    }

    /// How the group at `index` is stamped, if it is a group peer.
    pub fn stamping_of(&self, index: usize) -> Option<&synapse_engine::StampingInfo> {
        self.clients.stamping_of(index)
    }

    /// Hands every group's own record since the last call to `each`, with
    /// the peer's index: each request's slowest answer.
    pub fn drain(&mut self, each: impl FnMut(Option<usize>, &Record)) {
        self.clients.drain(each);
    }

    /// Hands every responder's record since the last call to `each`.
    pub fn drain_responders(&mut self, mut each: impl FnMut(ResponderRecord)) {
        for (p, names) in self.clients.list.iter_mut().zip(&mut self.responders) {
            // Who they are first: a responder is in the directory before
            // its first record is in the ring.
            if let Some(dir) = p.run.responder_directory.as_mut() {
                while let Ok(e) = dir.pop() {
                    let shown = e
                        .name
                        .map_or_else(|| e.address.to_string(), |n| n.to_string());
                    let at = e.index as usize;
                    if names.len() <= at {
                        names.resize(at + 1, String::new());
                    }
                    names[at] = shown;
                }
            }
            let Some(ring) = p.run.responders.as_mut() else {
                continue;
            };
            while let Ok(r) = ring.pop() {
                let Some(responder) = names.get(r.peer as usize) else {
                    continue;
                };
                each(ResponderRecord {
                    peer: p.index,
                    responder,
                    record: &r.record,
                });
            }
        }
    }

    /// Records missed because a ring was full, all groups told.
    pub fn ring_overflow(&self) -> u64 {
        let responders: u64 = self
            .clients
            .list
            .iter()
            .map(|p| p.run.responder_overflow.load(Ordering::Relaxed))
            .sum();
        self.clients.ring_overflow() + responders
    }

    /// Why a group's client ended by itself (they run until stopped).
    pub fn failure(&mut self) -> Option<String> {
        let (at, why) = self.clients.failure("group")?;
        self.responders.swap_remove(at);
        Some(why)
    }

    /// Stops every client and waits for them; `each` and `each_responder`
    /// get their last records. The first failure, if one failed.
    pub fn stop(
        &mut self,
        each: impl FnMut(Option<usize>, &Record),
        each_responder: impl FnMut(ResponderRecord),
    ) -> Result<(), EngineError> {
        let first = self.clients.stop_and_join();
        self.drain_responders(each_responder);
        self.drain(each);
        self.clients.list.clear();
        self.responders.clear();
        first
    }
}

/// The engine's request for one group: a request on the peer's schedule,
/// its answers awaited until the next slot at the latest (as `synapse
/// client` does to a group), until stopped.
fn client_of(cfg: &AgentConfig, p: &PeerConfig, warmup: u64) -> Result<ClientConfig, AppError> {
    Ok(ClientConfig {
        bind: cfg.bind.map(|b| SocketAddr::new(b.ip(), 0)),
        warmup,
        timeout: cfg.timeout.min(p.schedule.interval),
        size: p.size,
        thread: cfg.thread.placement(Role::Client)?,
        ring_capacity: GROUP_RING,
        timestamps: cfg.timestamps,
        stamp: p.stamp,
        ssid: p.ssid,
        stamp_key: p.key.clone(),
        stamp_format: p.stamp_format,
        marks: p.marks,
        tlvs: p.tlvs,
        tx_stamp_every: 1,
        schedule: Some(p.schedule),
        phase: p.phase,
        keep_trying: true,
        multicast: MulticastOptions::default(),
        ..ClientConfig::new(p.addr)
    })
}
