//! A trace as a state machine, apart from any socket: it says which probe
//! to send and when, takes the answers (ICMP reports off the error queue,
//! the destination's echoes) and times out the rest, and fills each
//! flow's [`PathTally`]. The `synapse trace` loop drives it over sockets
//! of its own; the agent's prober drives it over a path's own socket,
//! between its measurement probes. Everything it keeps is allocated when
//! it is made.

use super::identity::{MAX_PROBES, PROBE_LEN, ProbeCodec, ProbeId};
use super::mpls::{self, MAX_LABELS};
use super::schedule::Schedule;
use crate::sys::icmp_error::IcmpReport;
use std::net::IpAddr;
use synapse_stats::trace::{AnswerKind, HopTally, MplsEntry, PathTally};

/// What a trace is asked for.
#[derive(Debug, Clone)]
pub struct TracePlan {
    /// The destination.
    pub destination: IpAddr,
    /// Each flow's source port (one flow per port).
    pub ports: Vec<u16>,
    /// Probes per hop (rounds).
    pub probes: u32,
    /// The highest TTL probed.
    pub max_ttl: u8,
    /// Probes a second at most, all flows together.
    pub rate: f64,
    /// How long an answer may take.
    pub timeout_ns: u64,
}

/// One probe to send: on which flow, with which TTL, these bytes.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    /// The flow (index into the plan's ports).
    pub flow: usize,
    /// Its TTL.
    pub ttl: u8,
    /// Its bytes.
    pub bytes: [u8; PROBE_LEN],
}

/// A probe sent, waiting for its fate.
#[derive(Debug, Clone, Copy)]
struct Sent {
    flow: u16,
    ttl: u8,
    settled: bool,
    mono_ns: u64,
    wall_ns: u64,
}

/// Counts of what the trace did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceCounts {
    /// Probes sent.
    pub sent: u64,
    /// Sends that failed (the probe never left; not counted at any hop).
    pub send_failed: u64,
    /// Answers to a probe already settled (late past the timeout, or twice).
    pub late: u64,
    /// When the first and the last probe left (monotonic ns).
    pub first_send_ns: Option<u64>,
    /// When the last one left.
    pub last_send_ns: Option<u64>,
}

/// A trace under way.
#[derive(Debug)]
pub struct Tracer {
    plan: TracePlan,
    codec: ProbeCodec,
    schedule: Schedule,
    sent: Vec<Sent>,
    /// Probes before this one are all settled.
    oldest_open: usize,
    tallies: Vec<PathTally>,
    counts: TraceCounts,
}

impl Tracer {
    /// A trace of `plan`, numbered `trace` with run token `token` (so no
    /// answer to another trace or run is taken), its first probe due at
    /// `start_ns` (monotonic).
    pub fn new(plan: TracePlan, trace: u8, token: u64, start_ns: u64) -> Self {
        let interval_ns = (1e9 / plan.rate.max(1e-3)) as u64;
        let schedule = Schedule::new(
            plan.ports.len(),
            plan.probes,
            plan.max_ttl,
            interval_ns,
            start_ns,
        );
        let bound = schedule.bound().min(MAX_PROBES as usize);
        let hop = || HopTally {
            rtt_ns: Vec::with_capacity(plan.probes as usize),
            ..HopTally::default()
        };
        let tallies = plan
            .ports
            .iter()
            .map(|&port| PathTally {
                port,
                destination: plan.destination,
                hops: (0..plan.max_ttl).map(|_| hop()).collect(),
                max_ttl: 0,
            })
            .collect();
        Self {
            codec: ProbeCodec::new(trace, token),
            schedule,
            sent: Vec::with_capacity(bound),
            oldest_open: 0,
            tallies,
            counts: TraceCounts::default(),
            plan,
        }
    }

    /// The plan.
    pub fn plan(&self) -> &TracePlan {
        &self.plan
    }

    /// The probe due at `now_ns`, if one is. Call [`Tracer::sent`] or
    /// [`Tracer::send_failed`] with it once the send is tried.
    pub fn next_probe(&mut self, now_ns: u64) -> Option<Probe> {
        if self.sent.len() >= self.sent.capacity() {
            return None;
        }
        let (flow, ttl) = self.schedule.next(now_ns)?;
        let id = ProbeId {
            seq: self.sent.len() as u32,
            ttl,
        };
        Some(Probe {
            flow,
            ttl,
            bytes: self.codec.encode(id),
        })
    }

    /// `probe` left at `mono_ns` (wall clock `wall_ns`).
    pub fn sent(&mut self, probe: &Probe, mono_ns: u64, wall_ns: u64) {
        self.sent.push(Sent {
            flow: probe.flow as u16,
            ttl: probe.ttl,
            settled: false,
            mono_ns,
            wall_ns,
        });
        let tally = &mut self.tallies[probe.flow];
        tally.max_ttl = tally.max_ttl.max(probe.ttl);
        self.counts.sent += 1;
        self.counts.first_send_ns.get_or_insert(mono_ns);
        self.counts.last_send_ns = Some(mono_ns);
    }

    /// `probe` could not be sent: it is not counted anywhere but here.
    pub fn send_failed(&mut self, _probe: &Probe) {
        self.counts.send_failed += 1;
    }

    /// An error-queue report that arrived on flow `flow`'s socket, with
    /// `quote` the payload read (the whole quote, for its MPLS labels),
    /// `wall_ns` the time it was read. Whether it was about one of this
    /// trace's probes (if not, it is the caller's).
    pub fn on_report(
        &mut self,
        flow: usize,
        report: &IcmpReport,
        quote: &[u8],
        wall_ns: u64,
    ) -> bool {
        let Some(id) = self.codec.from_quote(report.quoted.bytes()) else {
            return false;
        };
        let kind = if report.is_time_exceeded() {
            AnswerKind::TimeExceeded
        } else if report.is_port_unreachable() && report.offender == Some(self.plan.destination) {
            AnswerKind::PortUnreachable
        } else if report.is_unreachable() {
            AnswerKind::Unreachable(report.icmp_code)
        } else {
            // Ours, but no answer a trace counts (too big, a parameter
            // problem): the probe stays open, lost at its timeout.
            return true;
        };
        let mut labels = [MplsEntry {
            label: 0,
            tc: 0,
            bottom: false,
            ttl: 0,
        }; MAX_LABELS];
        let n = report
            .extensions_at
            .and_then(|at| quote.get(usize::from(at)..))
            .map_or(0, |ext| mpls::labels(ext, &mut labels));
        let from = report.offender.unwrap_or(self.plan.destination);
        let at = report.arrived.software.unwrap_or(wall_ns);
        self.answer(flow, id, from, kind, at, &labels[..n]);
        true
    }

    /// A datagram that arrived on flow `flow`'s socket from the
    /// destination at `wall_ns`: whether it was the echo of one of this
    /// trace's probes.
    pub fn on_echo(&mut self, flow: usize, datagram: &[u8], wall_ns: u64) -> bool {
        let Some(id) = self.codec.from_echo(datagram) else {
            return false;
        };
        let to = self.plan.destination;
        self.answer(flow, id, to, AnswerKind::Echo, wall_ns, &[]);
        true
    }

    /// Files an answer to probe `id` from `from`.
    fn answer(
        &mut self,
        flow: usize,
        id: ProbeId,
        from: IpAddr,
        kind: AnswerKind,
        wall_ns: u64,
        mpls: &[MplsEntry],
    ) {
        let Some(p) = self
            .sent
            .get_mut(id.seq as usize)
            .filter(|p| usize::from(p.flow) == flow && p.ttl == id.ttl)
        else {
            return;
        };
        if p.settled {
            self.counts.late += 1;
            return;
        }
        p.settled = true;
        let rtt = wall_ns.saturating_sub(p.wall_ns);
        let hop = &mut self.tallies[flow].hops[usize::from(id.ttl) - 1];
        hop.sent += 1;
        hop.answer(from, kind, rtt, mpls);
        self.schedule.answered(flow, id.ttl);
        if kind.ends_path() {
            self.schedule.reached(flow, id.ttl);
        }
    }

    /// Settles as lost every probe whose timeout has passed at `now_ns`.
    pub fn expire(&mut self, now_ns: u64) {
        while let Some(p) = self.sent.get(self.oldest_open) {
            if !p.settled {
                if p.mono_ns + self.plan.timeout_ns > now_ns {
                    break;
                }
                let hop = &mut self.tallies[usize::from(p.flow)].hops[usize::from(p.ttl) - 1];
                hop.sent += 1;
                self.sent[self.oldest_open].settled = true;
            }
            self.oldest_open += 1;
        }
    }

    /// When something is next due: a probe, or an open probe's timeout.
    pub fn due_ns(&self) -> Option<u64> {
        let timeout = self.sent[self.oldest_open.min(self.sent.len())..]
            .iter()
            .find(|p| !p.settled)
            .map(|p| p.mono_ns + self.plan.timeout_ns);
        match (self.schedule.due_ns(), timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether every probe is sent and settled.
    pub fn finished(&self) -> bool {
        (self.schedule.sent_all() || self.sent.len() >= self.sent.capacity())
            && self.sent[self.oldest_open.min(self.sent.len())..]
                .iter()
                .all(|p| p.settled)
    }

    /// What the trace did so far.
    pub fn counts(&self) -> TraceCounts {
        self.counts
    }

    /// Each flow's tally, cut at the path's end (probes past it reached the
    /// destination too and say nothing more) or at the highest TTL sent.
    pub fn into_tallies(self) -> Vec<PathTally> {
        self.tallies
            .into_iter()
            .map(|mut t| {
                let end = t.end().map_or(t.max_ttl, |(ttl, ..)| ttl);
                t.hops.truncate(usize::from(end));
                t.max_ttl = end.max(t.max_ttl);
                t
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(ports: usize, probes: u32) -> TracePlan {
        TracePlan {
            destination: "10.9.0.9".parse().unwrap(),
            ports: (0..ports as u16).map(|p| 40_000 + p).collect(),
            probes,
            max_ttl: 8,
            rate: 1000.0,
            timeout_ns: 50_000_000,
        }
    }

    /// A scripted path of two routers and an echo server that drops every
    /// third echo: counts per hop, the path cut at the destination, every
    /// probe settled, none sent faster than the rate.
    #[test]
    fn a_scripted_path_is_tallied_hop_by_hop() {
        let mut t = Tracer::new(plan(1, 9), 7, 42, 0);
        let mut now = 0;
        let mut sends = Vec::new();
        let mut echoes = 0;
        while !t.finished() {
            let due = t.due_ns().unwrap();
            now = now.max(due);
            if let Some(p) = t.next_probe(now) {
                t.sent(&p, now, now);
                sends.push(now);
                match p.ttl {
                    1 | 2 => {
                        let router: IpAddr = format!("10.9.0.{}", p.ttl).parse().unwrap();
                        let id = t.codec.from_quote(&p.bytes[..8]).unwrap();
                        t.answer(0, id, router, AnswerKind::TimeExceeded, now + 1000, &[]);
                    }
                    _ => {
                        echoes += 1;
                        if echoes % 3 != 0 {
                            assert!(t.on_echo(0, &p.bytes, now + 3000));
                        }
                    }
                }
            }
            t.expire(now);
        }
        assert!(
            sends.windows(2).all(|w| w[1] - w[0] >= 1_000_000),
            "1000/s at most"
        );
        let counts = t.counts();
        let tallies = t.into_tallies();
        let hops = &tallies[0].hops;
        assert_eq!(hops.len(), 3, "cut at the destination");
        assert_eq!((hops[0].sent, hops[0].answered), (9, 9));
        assert_eq!(hops[0].rtt_ns[0], 1000);
        assert_eq!(hops[2].responders[0].kind, AnswerKind::Echo);
        // Round 0 climbed past TTL 3 only if the echo was late: here it
        // was not, so 27 probes in all, each hop's 9 settled.
        assert_eq!(counts.sent, 27);
        assert_eq!(hops[2].sent, 9);
        assert_eq!(hops[2].answered, 6, "every third echo dropped");
    }

    #[test]
    fn answers_of_another_flow_or_trace_are_not_taken() {
        let mut t = Tracer::new(plan(2, 1), 1, 5, 0);
        let p = t.next_probe(0).unwrap();
        t.sent(&p, 0, 0);
        assert!(!t.on_echo(
            0,
            &ProbeCodec::new(2, 5).encode(ProbeId { seq: 0, ttl: 1 }),
            10
        ));
        assert!(
            t.on_echo(1, &p.bytes, 10),
            "ours, on the wrong flow: taken, not filed"
        );
        assert_eq!(t.tallies[0].hops[0].answered, 0);
        assert!(t.on_echo(0, &p.bytes, 10));
        assert!(t.on_echo(0, &p.bytes, 11));
        assert_eq!(t.counts().late, 1, "the second is late");
        assert_eq!(t.tallies[0].hops[0].answered, 1);
    }
}
