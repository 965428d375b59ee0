//! `synapse agent --trace-on-loss PCT`: a UDP path whose loss over a window
//! is over PCT is traced on that path's own socket (its prober's, so its
//! exact 5-tuple and ECMP path), hop by hop, and the link where it loses is
//! named. At most one trace of a peer per `--trace-every`, at most
//! `--trace-limit` of them per `--trace-every` in all, one at a time, each
//! started at a random moment within a window of its trigger: a fleet-wide
//! event, seen by every agent at once, does not become a storm of traces.
//! A trace's report goes to the `--json` lines, the live table (key `t`)
//! and the metrics ([`super::trace_metrics`]).

use super::paths::PeerPaths;
use super::trace_metrics::TraceMetrics;
use crate::plan::agent::{PeerConfig, TracePolicy};
use crate::report::trace::json::trace_json;
use crate::report::trace::{Overall, TraceReport};
use crate::session::AgentSession;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use synapse_engine::Transport;
use synapse_engine::trace::{TraceDone, TracePlan, Tracer};
use synapse_stats::SplitMix;
use synapse_stats::trace::Verdict;

/// A triggered trace's probes per hop: as `synapse trace`'s default.
pub const PROBES: u32 = crate::cli::trace::DEFAULT_PROBES;
/// Its farthest hop.
pub const MAX_TTL: u8 = 30;
/// Its rate, probes a second.
pub const RATE: f64 = 100.0;
/// How long an answer may take.
pub const TIMEOUT: Duration = Duration::from_secs(1);

/// One trace that ended, as the front ends show it.
#[derive(Debug, Clone)]
pub struct PeerTrace {
    /// The peer traced.
    pub peer: String,
    /// The path's source port.
    pub port: u16,
    /// The window's loss on that path that asked for it, percent.
    pub loss_percent: f64,
    /// Unix time it ended, seconds.
    pub ended_s: f64,
    /// What it found.
    pub report: TraceReport,
}

impl PeerTrace {
    /// Its `--json` line: the trace's report, with who and why.
    pub fn json_line(&self, source: &str) -> String {
        let mut v = serde_json::json!({
            "time": self.ended_s,
            "source": source,
            "peer": self.peer,
            "port": self.port,
            "trigger_loss_percent": self.loss_percent,
        });
        v["trace"] = trace_json(&self.report);
        v.to_string()
    }

    /// Its text line (headless, without `--json`).
    pub fn text_line(&self) -> String {
        let verdict = self
            .report
            .main_path()
            .map(|p| crate::report::trace::text::verdict_text(&self.report, p))
            .unwrap_or_default();
        format!(
            "trace of {} from port {} (window loss {:.1} %): {verdict}",
            self.peer, self.port, self.loss_percent
        )
    }
}

/// A trace waiting for its moment.
#[derive(Debug, Clone)]
struct Queued {
    name: String,
    path: usize,
    loss: f64,
    due: Instant,
}

/// The trace under way.
#[derive(Debug, Clone)]
struct Running {
    name: String,
    path: usize,
    loss: f64,
    /// The address the path's probes leave from.
    local: std::net::IpAddr,
}

/// The agent's traces.
#[derive(Debug)]
pub struct Tracing {
    policy: TracePolicy,
    /// When each peer's last trace was asked for.
    last_asked: HashMap<String, Instant>,
    /// Traces asked for within the last `every`, all peers.
    asked: VecDeque<Instant>,
    queued: VecDeque<Queued>,
    running: Option<Running>,
    jitter: SplitMix,
    /// Each peer's last trace.
    pub last: HashMap<String, PeerTrace>,
    finished: Vec<PeerTrace>,
    metrics: TraceMetrics,
}

impl Tracing {
    /// Traces as `policy` says, counted in `metrics`.
    pub fn new(policy: TracePolicy, metrics: TraceMetrics, seed: u64) -> Self {
        Self {
            policy,
            last_asked: HashMap::new(),
            asked: VecDeque::new(),
            queued: VecDeque::new(),
            running: None,
            jitter: SplitMix::new(seed),
            last: HashMap::new(),
            finished: Vec::new(),
            metrics,
        }
    }

    /// Whether traces are on.
    pub fn on(&self) -> bool {
        self.policy.on_loss.is_some()
    }

    /// A window of `window` ended at `now`: each UDP peer whose worst path
    /// lost more than the threshold is queued for a trace of that path
    /// (within the limits), at a random moment before the next window
    /// ends; a peer whose paths all lose less has its suspect cleared.
    pub fn window_ended(
        &mut self,
        peers: &[PeerConfig],
        paths: &[PeerPaths],
        now: Instant,
        window: Duration,
    ) {
        let Some(threshold) = self.policy.on_loss else {
            return;
        };
        for (peer, p) in peers.iter().zip(paths) {
            let worst = p
                .last
                .iter()
                .enumerate()
                .filter_map(|(i, f)| Some((i, f.loss_percent?)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match worst {
                Some((path, loss)) if loss > threshold && peer.transport == Transport::Udp => {
                    self.want(&peer.name, path, loss, now, window);
                }
                _ => self.metrics.clear(&peer.name),
            }
        }
    }

    /// A trace of `name`'s path `path` is wanted: queued, or refused by
    /// the limits (and counted).
    fn want(&mut self, name: &str, path: usize, loss: f64, now: Instant, window: Duration) {
        let every = self.policy.every;
        let busy = self.queued.iter().any(|q| q.name == name)
            || self.running.as_ref().is_some_and(|r| r.name == name);
        if busy {
            return;
        }
        while self
            .asked
            .front()
            .is_some_and(|t| now.duration_since(*t) >= every)
        {
            self.asked.pop_front();
        }
        let recent = self
            .last_asked
            .get(name)
            .is_some_and(|t| now.duration_since(*t) < every);
        if recent || self.asked.len() >= self.policy.limit as usize {
            self.metrics.limited();
            return;
        }
        self.asked.push_back(now);
        self.last_asked.insert(name.into(), now);
        let due = now + window.mul_f64(self.jitter.unit());
        self.queued.push_back(Queued {
            name: name.into(),
            path,
            loss,
            due,
        });
    }

    /// One turn: a trace that ended is filed, the next one due is started
    /// (one at a time).
    pub fn poll(&mut self, session: &mut AgentSession, peers: &[PeerConfig], now: Instant) {
        if let Some(r) = self.running.clone()
            && let Some((peer, done)) = session.finished_trace(r.path)
        {
            self.running = None;
            if let Some(p) = peers.get(peer) {
                self.file(p, &r, done);
            }
        }
        if self.running.is_some() {
            return;
        }
        let Some(at) = self.queued.iter().position(|q| q.due <= now) else {
            return;
        };
        let Some(q) = self.queued.remove(at) else {
            return;
        };
        let Some(index) = peers.iter().position(|p| p.name == q.name) else {
            return;
        };
        let started = session.start_trace(index, q.path, |port, addr| {
            let plan = TracePlan {
                destination: addr.ip(),
                ports: vec![port],
                probes: PROBES,
                max_ttl: MAX_TTL,
                rate: RATE,
                timeout_ns: TIMEOUT.as_nanos() as u64,
            };
            let token = synapse_engine::trace::identity::random_token();
            Box::new(Tracer::new(plan, token as u8, token, 0))
        });
        if let Some(local) = started {
            self.running = Some(Running {
                name: q.name,
                path: q.path,
                loss: q.loss,
                local,
            });
        }
    }

    /// The probers were started again (a reload, with `policy` now): a
    /// trace under way went with them.
    pub fn probers_restarted(&mut self, policy: TracePolicy) {
        self.running = None;
        self.policy = policy;
    }

    /// Files an ended trace: the metrics, the last trace of its peer, and
    /// the lines to print.
    fn file(&mut self, peer: &PeerConfig, r: &Running, done: TraceDone) {
        let counts = done.tracer.counts();
        let port = done.tracer.plan().ports.first().copied().unwrap_or(0);
        let paths = done.tracer.into_tallies();
        let local = std::net::SocketAddr::new(r.local, port);
        let report = TraceReport::new(peer.addr, local, &paths, counts, done.interrupted)
            .asked(PROBES, MAX_TTL, RATE);
        let verdict = match report.overall() {
            Overall::NoSuspect => "no_suspect",
            Overall::Suspect => "suspect",
            Overall::Inconclusive => "inconclusive",
            Overall::Unreachable => "unreachable",
        };
        // The hop after which the loss persists ("local": from this host on).
        let suspect = report.main_path().and_then(|p| match p.verdict {
            Verdict::Suspect(s) => {
                let hop = s
                    .from
                    .addr
                    .map_or_else(|| "local".into(), |a| a.to_string());
                Some((hop, s.from.ttl, s.loss.ratio))
            }
            _ => None,
        });
        self.metrics
            .traced(&peer.name, verdict, counts.sent, suspect);
        let t = PeerTrace {
            peer: peer.name.clone(),
            port,
            loss_percent: r.loss,
            ended_s: unix_now(),
            report,
        };
        self.last.insert(peer.name.clone(), t.clone());
        self.finished.push(t);
    }

    /// The traces that ended since the last call.
    pub fn take_finished(&mut self) -> Vec<PeerTrace> {
        std::mem::take(&mut self.finished)
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::paths::PathFigures;
    use prometheus_client::registry::Registry;

    fn losing(percents: &[f64]) -> PeerPaths {
        let mut p = PeerPaths::default();
        p.last = percents
            .iter()
            .enumerate()
            .map(|(i, &p)| PathFigures {
                port: 40_000 + i as u16,
                sent: 100,
                lost: p as u64,
                loss_percent: Some(p),
                rtt_p50_ns: Some(1_000),
            })
            .collect();
        p
    }

    fn tracing(limit: u32) -> Tracing {
        let policy = TracePolicy {
            on_loss: Some(10.0),
            every: Duration::from_secs(300),
            limit,
        };
        Tracing::new(policy, TraceMetrics::new(&mut Registry::default(), "a"), 7)
    }

    fn peers(names: &[&str]) -> Vec<PeerConfig> {
        names
            .iter()
            .map(|n| PeerConfig::for_test(n, "10.0.0.2:8080".parse().unwrap()))
            .collect()
    }

    /// A peer whose worst path lost over the threshold is queued for a
    /// trace of that path, at a moment within the next window; one under
    /// it is not.
    #[test]
    fn the_worst_path_over_the_threshold_is_queued_within_a_window() {
        let mut t = tracing(4);
        let now = Instant::now();
        let window = Duration::from_secs(10);
        let p = peers(&["b", "c"]);
        t.window_ended(
            &p,
            &[losing(&[0.0, 30.0, 12.0]), losing(&[5.0])],
            now,
            window,
        );
        assert_eq!(t.queued.len(), 1);
        let q = &t.queued[0];
        assert_eq!((q.name.as_str(), q.path, q.loss), ("b", 1, 30.0));
        assert!(q.due >= now && q.due <= now + window);
    }

    /// Once a peer is traced, not again within --trace-every; and no more
    /// than --trace-limit traces in all within it.
    #[test]
    fn the_limits_hold_per_peer_and_in_all() {
        let mut t = tracing(2);
        let p = peers(&["b", "c", "d"]);
        let all = [losing(&[30.0]), losing(&[30.0]), losing(&[30.0])];
        let window = Duration::from_secs(10);
        let start = Instant::now();
        t.window_ended(&p, &all, start, window);
        assert_eq!(t.queued.len(), 2, "two of three: the limit");
        t.queued.clear();
        let later = start + Duration::from_secs(60);
        t.window_ended(&p, &all, later, window);
        assert!(
            t.queued.is_empty(),
            "b and c were traced a minute ago, and two is the limit"
        );
        let after = start + Duration::from_secs(301);
        t.window_ended(&p, &all, after, window);
        assert_eq!(t.queued.len(), 2, "--trace-every later, again");
    }
}
