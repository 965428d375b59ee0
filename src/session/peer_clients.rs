//! Peers measured by a client thread of their own rather than the
//! prober's: a `tcp://` peer (a request holds its connection until its
//! reply) and a multicast group (its members answer from their own
//! addresses). What they share: their records, how each is stamped, a
//! client that ended by itself, stopping them all.

use synapse_engine::{ClientRun, EngineError, StampingInfo};
use synapse_stats::Record;

/// One peer's client.
#[derive(Debug)]
pub struct PeerClient {
    /// Its index in the configuration's peers.
    pub index: usize,
    pub name: String,
    pub run: ClientRun,
}

/// The running clients of one kind of peer.
#[derive(Debug, Default)]
pub struct PeerClients {
    pub list: Vec<PeerClient>,
}

impl PeerClients {
    /// How the peer at `index` is stamped, if it is one of these.
    pub fn stamping_of(&self, index: usize) -> Option<&StampingInfo> {
        self.list
            .iter()
            .find(|p| p.index == index)
            .map(|p| &p.run.stamping)
    }

    /// Hands every record since the last call to `each`, with its peer's
    /// index.
    pub fn drain(&mut self, mut each: impl FnMut(Option<usize>, &Record)) {
        for p in &mut self.list {
            while let Ok(r) = p.run.records.pop() {
                each(Some(p.index), &r);
            }
        }
    }

    /// Records missed because a ring was full, all peers told.
    pub fn ring_overflow(&self) -> u64 {
        self.list.iter().map(|p| p.run.ring_overflow()).sum()
    }

    /// A client that ended by itself (they run until stopped): its place
    /// in the list, which it leaves, and why, naming it as a `kind` peer.
    pub fn failure(&mut self, kind: &str) -> Option<(usize, String)> {
        let at = self.list.iter().position(|p| p.run.is_finished())?;
        let mut gone = self.list.swap_remove(at);
        let why = match gone.run.join() {
            Err(e) => e.to_string(),
            Ok(_) => "its client stopped".into(),
        };
        Some((at, format!("{kind} peer '{}': {why}", gone.name)))
    }

    /// Stops every client and waits for them (their last records stay in
    /// their rings). The first failure, if one failed.
    pub fn stop_and_join(&mut self) -> Result<(), EngineError> {
        for p in &self.list {
            p.run.stop();
        }
        let mut first = Ok(());
        for p in &mut self.list {
            let joined = p.run.join();
            if first.is_ok() {
                first = joined.map(|_| ());
            }
        }
        first
    }
}
