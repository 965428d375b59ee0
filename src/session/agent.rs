//! The agent's session: its reflector (echo, and STAMP beside it), one
//! prober thread for all its UDP peers, a client per `tcp://` peer
//! ([`super::agent_tcp`]) and one per multicast group
//! ([`super::agent_group`]). A reload replaces the prober and those
//! clients; the reflector keeps answering throughout.

use super::ServerSession;
use super::agent_group::{GroupPeers, ResponderRecord};
use super::agent_tcp::TcpPeers;
use crate::error::AppError;
use crate::plan::agent::{AgentConfig, PeerConfig};
use crate::plan::{Output, ServerPlan};
use crate::session::{Opening, Side};
use std::time::Duration;
use synapse_engine::trace::{TraceDone, TraceJob, Tracer};
use synapse_engine::{
    Budget, EngineError, NO_PEER, Placement, ProbeConfig, ProberConfig, ProberRun, Protocol,
    ReflectorEvent, Role, StampingInfo, StopFlag, ThreadPlacement, Transport, choose_cpu,
    start_prober,
};
use synapse_stats::Record;

/// Records the prober can queue for the exporter: 6.5 s of 10,000
/// probes/s (the default `max_pps`) in 7 MiB, read every 50 ms.
const PROBER_RING: usize = 1 << 16;

/// Probes each peer sends before its figures count: the first one warms
/// ARP and route caches.
const WARMUP: u64 = 1;

/// The prober's wake-up tick at most: one wake-up a millisecond serves a
/// thousand peers' slots, and a millisecond's lag is nothing to a 100 ms
/// interval (what it saves was measured for issue 12: `git log -p BENCHMARKS.md`).
const MAX_TICK: Duration = Duration::from_millis(1);

/// The tick for these peers: at most a tenth of the tightest slot
/// tolerance (half an interval), so no request is late enough to count as
/// a missed slot.
fn tick_for(peers: &[ProbeConfig]) -> Duration {
    let tightest = peers
        .iter()
        .map(|p| p.schedule.tolerance_ns())
        .min()
        .unwrap_or(u64::MAX);
    MAX_TICK.min(Duration::from_nanos(tightest / 10))
}

/// Records each path's prober can queue, at the least.
const MIN_PATH_RING: usize = 1 << 12;

/// A running agent's measurement side.
#[derive(Debug)]
pub struct AgentSession {
    reflector: Option<ServerSession>,
    /// One prober per path (`--paths`): each its own socket, so its own
    /// source port and flow, probing every UDP peer in turn with the others.
    probers: Vec<ProberRun>,
    /// Each path's source port, kept across restarts so a path stays the
    /// same flow (and the same ECMP path) for as long as the agent runs.
    ports: Vec<u16>,
    /// The probers' peers: each one's index in the configuration.
    udp_peers: Vec<usize>,
    /// Their addresses, in the same order.
    peer_addrs: Vec<std::net::SocketAddr>,
    tcp: TcpPeers,
    groups: GroupPeers,
}

impl AgentSession {
    /// Starts the reflector (if asked for) and the prober (if there are
    /// peers).
    pub fn start(cfg: &AgentConfig, stop: &StopFlag) -> Result<Self, AppError> {
        let reflector = match cfg.reflect {
            Some(bind) => Some(ServerSession::start(
                &reflector_plan(cfg, bind)?,
                bind,
                Protocol::Echo,
                stop,
            )?),
            None => None,
        };
        let mut s = Self {
            reflector,
            probers: Vec::new(),
            ports: Vec::new(),
            udp_peers: Vec::new(),
            peer_addrs: Vec::new(),
            tcp: TcpPeers::default(),
            groups: GroupPeers::default(),
        };
        s.restart_prober(cfg)?;
        Ok(s)
    }

    /// Replaces the probers and the TCP clients with those for `cfg`'s
    /// peers (records not drained yet are dropped). On failure there are
    /// none, and the error says why.
    pub fn restart_prober(&mut self, cfg: &AgentConfig) -> Result<(), AppError> {
        self.stop_probers()?;
        self.tcp.stop(|_, _| {})?;
        self.tcp = TcpPeers::start(cfg, WARMUP)?;
        self.groups.stop(|_, _| {}, |_| {})?;
        self.groups = GroupPeers::start(cfg, WARMUP)?;
        self.udp_peers = (0..cfg.peers.len())
            .filter(|&i| cfg.peers[i].transport == Transport::Udp && !cfg.peers[i].is_group())
            .collect();
        self.peer_addrs = self.udp_peers.iter().map(|&i| cfg.peers[i].addr).collect();
        if self.udp_peers.is_empty() {
            return Ok(());
        }
        let thread = cfg.thread.placement(Role::Client)?;
        let paths = cfg.paths.max(1);
        for path in 0..paths {
            let peers: Vec<ProbeConfig> = self
                .udp_peers
                .iter()
                .map(|&i| probe_on_path(&cfg.peers[i], path, paths))
                .collect();
            let port = self.ports.get(path).copied().unwrap_or(0);
            let bind = match (cfg.bind, paths) {
                (b, 1) => b,
                (Some(b), _) => Some(std::net::SocketAddr::new(b.ip(), port)),
                (None, _) => Some(std::net::SocketAddr::new(
                    synapse_engine::socket::wildcard_for(peers[0].addr).ip(),
                    port,
                )),
            };
            let prober = ProberConfig {
                bind,
                tick: tick_for(&peers),
                peers,
                timeout: cfg.timeout,
                thread,
                timestamps: cfg.timestamps,
                ring_capacity: (PROBER_RING / paths).max(MIN_PATH_RING),
            };
            // The port kept from before may have been taken meanwhile: a
            // new one then (that path's flow changes).
            let run = match start_prober(prober.clone(), StopFlag::new()) {
                Err(_) if port != 0 => {
                    let bind = prober.bind.map(|b| std::net::SocketAddr::new(b.ip(), 0));
                    start_prober(ProberConfig { bind, ..prober }, StopFlag::new())?
                }
                started => started?,
            };
            match self.ports.get_mut(path) {
                Some(p) => *p = run.local.port(),
                None => self.ports.push(run.local.port()),
            }
            self.probers.push(run);
        }
        Ok(())
    }

    /// Stops every prober and waits for it.
    fn stop_probers(&mut self) -> Result<(), AppError> {
        for p in &self.probers {
            p.stop();
        }
        for mut p in self.probers.drain(..) {
            p.join()?;
        }
        Ok(())
    }

    /// Each path's source port (empty: no UDP peer).
    pub fn path_ports(&self) -> Vec<u16> {
        self.probers.iter().map(|p| p.local.port()).collect()
    }

    /// How the UDP probes are stamped (`None`: no prober).
    pub fn stamping(&self) -> Option<&StampingInfo> {
        self.probers.first().map(|p| &p.stamping)
    }

    /// How peer `index`'s probes are stamped: its TCP or group client's
    /// way, or the prober's.
    pub fn stamping_of(&self, index: usize) -> Option<&StampingInfo> {
        self.tcp
            .stamping_of(index)
            .or_else(|| self.groups.stamping_of(index))
            .or_else(|| self.stamping())
    }

    /// Where the echo reflector and the STAMP one answer.
    pub fn reflector_addrs(&self) -> (Option<std::net::SocketAddr>, Option<std::net::SocketAddr>) {
        match &self.reflector {
            Some(r) => (Some(r.echo_addr()), r.stamp_addr()),
            None => (None, None),
        }
    }

    /// Why STAMP is not being answered, when its default port was refused.
    pub fn stamp_refused(&self) -> Option<&str> {
        self.reflector
            .as_ref()
            .and_then(|r| r.stamp_refused.as_deref())
    }

    /// Why TCP echo is not being answered, when its port was refused.
    pub fn tcp_refused(&self) -> Option<&str> {
        self.reflector
            .as_ref()
            .and_then(|r| r.tcp_refused.as_deref())
    }

    /// What the reflector answers, as the banner and the table say it.
    pub fn answers(&self) -> String {
        match &self.reflector {
            Some(r) if r.serves_tcp() => format!("answers on {} (UDP and TCP)", r.echo_addr()),
            Some(r) => format!("answers on {} (UDP)", r.echo_addr()),
            None => "answers nothing".into(),
        }
    }

    /// Hands every prober record since the last call to `each`, with its
    /// peer's index (`None`: a datagram from no peer) and its path (0 for
    /// a TCP peer).
    pub fn drain(&mut self, mut each: impl FnMut(Option<usize>, usize, &Record)) {
        for (path, p) in self.probers.iter_mut().enumerate() {
            while let Ok(r) = p.records.pop() {
                let peer = (r.peer != NO_PEER)
                    .then(|| self.udp_peers.get(r.peer as usize).copied())
                    .flatten();
                each(peer, path, &r.record);
            }
        }
        self.tcp.drain(|peer, r| each(peer, 0, r));
        self.groups.drain(|peer, r| each(peer, 0, r));
    }

    /// Hands each group's responders' records since the last call to
    /// `each`.
    pub fn drain_responders(&mut self, each: impl FnMut(ResponderRecord)) {
        self.groups.drain_responders(each);
    }

    /// Asks path `path`'s prober to trace the way to UDP peer `peer` (its
    /// index in the configuration) with the tracer `make` plans for the
    /// path's source port and the peer's address. Whether it was taken (a
    /// TCP peer, or a path or peer that is gone, is not): the address the
    /// path's probes leave from, when it was.
    pub fn start_trace(
        &mut self,
        peer: usize,
        path: usize,
        make: impl FnOnce(u16, std::net::SocketAddr) -> Box<Tracer>,
    ) -> Option<std::net::IpAddr> {
        let probe = self.udp_peers.iter().position(|&i| i == peer)?;
        let run = self.probers.get_mut(path)?;
        let addr = self.peer_addrs.get(probe).copied()?;
        let tracer = make(run.local.port(), addr);
        run.traces.start(TraceJob { probe, tracer }).ok()?;
        Some(run.local.ip())
    }

    /// A trace path `path`'s prober has handed back, with the
    /// configuration index of the peer it traced.
    pub fn finished_trace(&mut self, path: usize) -> Option<(usize, TraceDone)> {
        let done = self.probers.get_mut(path)?.traces.finished()?;
        let peer = self.udp_peers.get(done.probe).copied()?;
        Some((peer, done))
    }

    /// Hands the reflectors' events since the last call to `each`.
    pub fn drain_reflector(&mut self, each: impl FnMut(Side, ReflectorEvent)) {
        if let Some(r) = self.reflector.as_mut() {
            r.drain(each);
        }
    }

    /// Records the exporter missed (its ring was full).
    pub fn ring_overflow(&self) -> u64 {
        self.probers
            .iter()
            .map(ProberRun::ring_overflow)
            .sum::<u64>()
            + self.tcp.ring_overflow()
            + self.groups.ring_overflow()
    }

    /// Why the agent cannot go on: a measurement thread ended by itself.
    pub fn failure(&mut self) -> Option<String> {
        if let Some(i) = self.probers.iter().position(ProberRun::is_finished) {
            let why = match self.probers[i].join() {
                Err(e) => e.to_string(),
                Ok(_) => "the prober stopped".into(),
            };
            self.probers.remove(i);
            return Some(why);
        }
        if let Some(why) = self.tcp.failure().or_else(|| self.groups.failure()) {
            return Some(why);
        }
        self.reflector
            .as_ref()
            .filter(|r| r.failed())
            .map(|_| "the reflector stopped".into())
    }

    /// Stops everything; `each` gets the last records. Where the prober ran.
    pub fn finish(
        mut self,
        each: impl FnMut(Option<usize>, usize, &Record),
    ) -> Option<Result<Placement, EngineError>> {
        for p in &self.probers {
            p.stop();
        }
        let mut placed = None;
        for p in &mut self.probers {
            let joined = p.join();
            if placed.as_ref().is_none_or(Result::is_ok) {
                placed = Some(joined);
            }
        }
        let mut each = each;
        self.drain(&mut each);
        let tcp = self
            .tcp
            .stop(|peer, r| each(peer, 0, r))
            .and(self.groups.stop(|peer, r| each(peer, 0, r), |_| {}));
        if let Some(r) = self.reflector.take() {
            r.finish(|_, _| {});
        }
        match (placed, tcp) {
            (Some(Err(e)), _) => Some(Err(e)),
            (_, Err(e)) => Some(Err(e)),
            (placed, Ok(())) => placed,
        }
    }
}

/// The engine's request for one peer on path `path` of `paths`: every
/// `paths`th slot of the peer's schedule, so the paths take turns and the
/// peer's rate is what it was asked to be.
fn probe_on_path(p: &PeerConfig, path: usize, paths: usize) -> ProbeConfig {
    let interval = p.schedule.interval;
    ProbeConfig {
        addr: p.addr,
        schedule: synapse_engine::Schedule {
            interval: interval * paths as u32,
            ..p.schedule
        },
        phase: p.phase + interval * path as u32,
        warmup: WARMUP,
        budget: Budget::Unbounded,
        size: p.size,
        stamp: p.stamp,
        ssid: p.ssid,
        key: p.key.clone(),
        marks: p.marks,
        tlvs: p.tlvs,
        stamp_format: p.stamp_format,
    }
}

/// The reflector side as a server run: blocking, on a CPU of its own
/// choosing (the prober has the one asked for), no log.
fn reflector_plan(cfg: &AgentConfig, bind: std::net::SocketAddr) -> Result<ServerPlan, AppError> {
    let (cpu, cpu_auto) = choose_cpu(None, Role::Reflector)?;
    Ok(ServerPlan {
        bind,
        session_idle: Duration::from_secs(1),
        thread: ThreadPlacement {
            cpu,
            cpu_auto,
            busy_poll: false,
            rt: false,
            keep_awake: false,
        },
        output: Output::Text,
        fps: 1,
        stamp_port: cfg.stamp_port,
        stamp_required: cfg.stamp_required,
        log: None,
        log_opening: Opening::New,
        hdr: crate::cli::HdrLogArgs::default(),
        admission: cfg.admission.clone(),
        stamp_key: None,
        stamp_format: synapse_engine::stamp::TimeFormat::Ntp,
        user: None,
        tcp_port: cfg.tcp_port,
        tcp_required: cfg.tcp_required,
        tcp_per_source: 1024,
        timestamps: cfg.reflect_timestamps.clone(),
        groups: Default::default(),
        echo_joins: false,
        name: None,
        timestamps_option: "--reflect-timestamps",
        load: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_engine::Schedule;
    use synapse_stats::Pattern;

    fn every(interval: Duration) -> ProbeConfig {
        ProbeConfig {
            addr: "127.0.0.1:7".parse().unwrap(),
            schedule: Schedule {
                pattern: Pattern::Periodic,
                interval,
            },
            phase: Duration::ZERO,
            warmup: WARMUP,
            budget: Budget::Unbounded,
            size: 64,
            stamp: false,
            ssid: 0,
            key: None,
            marks: None,
            tlvs: Default::default(),
            stamp_format: synapse_engine::stamp::TimeFormat::Ntp,
        }
    }

    #[test]
    fn the_tick_is_a_millisecond_unless_a_peer_is_faster() {
        let slow = [
            every(Duration::from_millis(100)),
            every(Duration::from_secs(1)),
        ];
        assert_eq!(tick_for(&slow), MAX_TICK);
        // 2 ms interval: 1 ms tolerance, so a 100 µs tick.
        let fast = [
            every(Duration::from_millis(100)),
            every(Duration::from_millis(2)),
        ];
        assert_eq!(tick_for(&fast), Duration::from_micros(100));
        assert_eq!(tick_for(&[]), MAX_TICK);
    }
}
