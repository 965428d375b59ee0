//! Who probes this host: the source addresses the agent's reflector
//! answered, from its session reports. With a fanout, each host should be
//! probed by about N others; a host nobody measures shows 0.
//!
//! A source is its IP address, not its port: an agent probing with
//! `--paths 8` is 8 sessions and one source.

use std::collections::HashMap;
use std::net::IpAddr;
use synapse_engine::SessionInfo;

/// Each source's last datagram, on the reflector's clock (ns since it
/// started).
#[derive(Debug, Default)]
pub struct Inbound {
    last_seen: HashMap<IpAddr, u64>,
    /// The reflector's clock at its latest report.
    now_ns: u64,
}

impl Inbound {
    /// A session's report (active or ended).
    pub fn saw(&mut self, s: &SessionInfo) {
        let t = self.last_seen.entry(s.peer.ip()).or_insert(0);
        *t = (*t).max(s.last_seen_ns);
    }

    /// The reflector's clock when it reported.
    pub fn at(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
    }

    /// Sources heard from in the last `window_ns`; older ones are
    /// forgotten.
    pub fn sources(&mut self, window_ns: u64) -> usize {
        let since = self.now_ns.saturating_sub(window_ns);
        self.last_seen.retain(|_, t| *t >= since);
        self.last_seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(addr: &str, last_seen_ns: u64) -> SessionInfo {
        SessionInfo {
            peer: addr.parse().unwrap(),
            packets: 1,
            bytes: 8,
            last_seen_ns,
            refused: Default::default(),
        }
    }

    #[test]
    fn a_source_is_an_address_and_old_ones_drop_out() {
        let mut i = Inbound::default();
        i.saw(&session("127.0.1.2:40001", 5_000));
        i.saw(&session("127.0.1.2:40002", 6_000)); // another path
        i.saw(&session("127.0.1.3:40001", 1_000));
        i.at(10_000);
        assert_eq!(i.sources(10_000), 2);
        assert_eq!(i.sources(5_000), 1, "127.0.1.3 last seen before the window");
        assert_eq!(i.sources(10_000), 1, "and forgotten");
    }
}
