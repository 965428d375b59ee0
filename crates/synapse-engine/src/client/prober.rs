//! The prober: one pinned thread measuring many peers, each on its own
//! schedule, on the paced engine (no thread per peer). A fleet agent runs
//! one. Results leave through one lock-free ring of records tagged with
//! their peer, for the agent's exporter to read as the live display reads
//! a client's.

use super::paced::{NO_PROBE, PacedStamps, Pacer, PacerConfig, ProbeConfig, Sink, SlotWake};
use super::{StampingInfo, wildcard_for};
use crate::affinity::{Placement, ThreadPlacement, place_current_thread};
use crate::points::Points;
use crate::socket::paced_socket;
use crate::timestamping::{self, TimestampMode, capabilities::Source};
use crate::trace::{TraceHandle, trace_channel};
use crate::{EngineError, StopFlag};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use synapse_stats::{Record, SegmentSet};

/// A record about one peer (`peer` indexes the config's peers; `u32::MAX`:
/// a datagram from none of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerRecord {
    /// Which peer.
    pub peer: u32,
    /// What happened.
    pub record: Record,
}

/// The peer index of a datagram from no peer.
pub const NO_PEER: u32 = u32::MAX;

/// What the prober is asked for.
#[derive(Debug, Clone)]
pub struct ProberConfig {
    /// Local address (its family is the peers').
    pub bind: Option<SocketAddr>,
    /// The peers, each with its schedule.
    pub peers: Vec<ProbeConfig>,
    /// How long a request may wait for its reply (one for all peers).
    pub timeout: Duration,
    /// Where the thread runs and how it waits.
    pub thread: ThreadPlacement,
    /// Which clock stamps the packets.
    pub timestamps: TimestampMode,
    /// Room for records on their way to the exporter.
    pub ring_capacity: usize,
    /// The thread wakes on multiples of this (zero: for every event), and
    /// sends every slot due by then: see [`SlotWake::Ticks`].
    pub tick: Duration,
}

/// A running prober.
#[derive(Debug)]
pub struct ProberRun {
    /// Records as they happen, tagged by peer.
    pub records: rtrb::Consumer<PeerRecord>,
    /// The local address the probes leave from.
    pub local: SocketAddr,
    /// How the probes are stamped.
    pub stamping: StampingInfo,
    /// Traces of a peer's path, run on this prober's socket.
    pub traces: TraceHandle,
    stop: StopFlag,
    overflow: Arc<AtomicU64>,
    handle: Option<JoinHandle<Result<Placement, EngineError>>>,
}

impl ProberRun {
    /// Asks the thread to stop.
    pub fn stop(&self) {
        self.stop.raise();
    }

    /// Records the exporter missed because its ring was full.
    pub fn ring_overflow(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
    }

    /// Whether the thread has ended (stopped, or failed).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the thread: where it ran, or why it failed.
    pub fn join(&mut self) -> Result<Placement, EngineError> {
        crate::join_once(
            &mut self.handle,
            "prober thread panicked or was already joined",
        )
    }
}

/// The prober's sink: every record into the ring, tagged.
struct RingSink {
    ring: rtrb::Producer<PeerRecord>,
    overflow: Arc<AtomicU64>,
}

impl Sink for RingSink {
    #[inline]
    fn record(&mut self, probe: usize, record: Record) {
        let peer = if probe == NO_PROBE {
            NO_PEER
        } else {
            probe as u32
        };
        if self.ring.push(PeerRecord { peer, record }).is_err() {
            self.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn row(&mut self, _probe: usize, _p: &Points) {
        // The prober keeps no per-packet log.
    }
}

/// Binds the socket (so a bad address fails here) and starts the prober.
pub fn start_prober(cfg: ProberConfig, stop: StopFlag) -> Result<ProberRun, EngineError> {
    let first = cfg
        .peers
        .first()
        .map(|p| p.addr)
        .ok_or_else(|| EngineError::io("no peers to probe")(std::io::Error::other("empty")))?;
    let bind = cfg.bind.unwrap_or_else(|| wildcard_for(first));
    let (socket, local) = paced_socket(bind, first)?;
    let chosen = timestamping::choose(cfg.timestamps, local.ip())?;
    let kernel = chosen.source != Source::User;
    let hardware = chosen.source == Source::Hardware;
    let stamps = kernel
        .then(|| {
            PacedStamps::enable(socket.as_raw_fd(), hardware)
                .map(|s| s.with_clock(chosen.clock.clone()))
        })
        .transpose()
        .map_err(EngineError::io("cannot enable SO_TIMESTAMPING"))?;
    let any_stamp = cfg.peers.iter().any(|p| p.stamp);
    let stamping = StampingInfo {
        source: chosen.source,
        interface: chosen.interface.clone(),
        note: chosen.note.clone(),
        hardware_enabled_here: chosen.hardware.as_ref().is_some_and(|g| g.changed()),
        stamp: any_stamp,
        segments: SegmentSet::for_run(kernel, any_stamp, hardware)
            .with_wire(chosen.clock.is_some()),
        tx_every: 1,
        follow_up: false,
        follow_up_hardware: false,
    };
    let (ring, records) = rtrb::RingBuffer::new(cfg.ring_capacity.max(1));
    let overflow = Arc::new(AtomicU64::new(0));
    let sink = RingSink {
        ring,
        overflow: Arc::clone(&overflow),
    };
    let (traces, slot) = trace_channel();
    let thread_stop = stop.clone();
    let handle = std::thread::Builder::new()
        .name("synapse-prober".into())
        .spawn(move || {
            let _hardware = chosen.hardware;
            let placed = place_current_thread(cfg.thread);
            let pacer_cfg = PacerConfig {
                timeout: cfg.timeout,
                busy_poll: cfg.thread.busy_poll,
                give_up: false,
                give_up_after: None,
                wake: SlotWake::Ticks(cfg.tick.as_nanos() as u64),
            };
            let mut pacer =
                Pacer::new(&socket, cfg.peers, pacer_cfg, stamps, sink).with_traces(slot);
            pacer.run(&thread_stop)?;
            Ok(placed.placement)
        })
        .map_err(EngineError::io("cannot start the prober thread"))?;
    Ok(ProberRun {
        records,
        local,
        stamping,
        traces,
        stop,
        overflow,
        handle: Some(handle),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::paced::schedule::Schedule;
    use crate::trace::{TraceJob, TracePlan, Tracer};
    use synapse_stats::trace::AnswerKind;
    use synapse_stats::{Pattern, RecordKind};

    fn prober_to(peer: SocketAddr) -> ProberRun {
        let probe = ProbeConfig {
            addr: peer,
            schedule: Schedule {
                pattern: Pattern::Periodic,
                interval: Duration::from_millis(5),
            },
            phase: Duration::ZERO,
            warmup: 0,
            budget: crate::Budget::Unbounded,
            size: 64,
            stamp: false,
            ssid: 0,
            key: None,
            marks: None,
            tlvs: Default::default(),
            stamp_format: Default::default(),
        };
        let cfg = ProberConfig {
            bind: None,
            peers: vec![probe],
            timeout: Duration::from_millis(200),
            thread: ThreadPlacement {
                cpu: 0,
                cpu_auto: true,
                busy_poll: false,
                rt: false,
                keep_awake: false,
            },
            timestamps: TimestampMode::Software,
            ring_capacity: 1 << 14,
            tick: Duration::from_millis(1),
        };
        start_prober(cfg, StopFlag::new()).unwrap()
    }

    /// Runs a trace of `probes` probes on `run`'s socket to its peer `to`.
    fn trace_on(run: &mut ProberRun, to: SocketAddr, probes: u32) -> Box<Tracer> {
        let plan = TracePlan {
            destination: to.ip(),
            ports: vec![run.local.port()],
            probes,
            max_ttl: 4,
            rate: 500.0,
            timeout_ns: 200_000_000,
        };
        let tracer = Box::new(Tracer::new(plan, 3, 0x5eed, 0));
        run.traces.start(TraceJob { probe: 0, tracer }).unwrap();
        for _ in 0..500 {
            if let Some(done) = run.traces.finished() {
                assert!(!done.interrupted);
                return done.tracer;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the trace never ended");
    }

    /// Records of kind `k` so far.
    fn count(run: &mut ProberRun, k: fn(&RecordKind) -> bool) -> usize {
        let mut n = 0;
        while let Ok(r) = run.records.pop() {
            n += usize::from(k(&r.record.kind));
        }
        n
    }

    /// A trace on a prober's own socket to its echo peer: every probe
    /// echoed and taken by the trace, none of its echoes a stray to the
    /// prober, and the prober's own requests all answered meanwhile.
    #[test]
    fn a_trace_rides_the_probers_socket_and_leaves_its_measurement_alone() {
        let echo = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = echo.local_addr().unwrap();
        echo.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let server = std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while let Ok((n, from)) = echo.recv_from(&mut buf) {
                let _ = echo.send_to(&buf[..n], from);
            }
        });
        let mut run = prober_to(to);
        let tracer = trace_on(&mut run, to, 30);
        let counts = tracer.counts();
        let paths = tracer.into_tallies();
        let hop = &paths[0].hops[0];
        assert_eq!((hop.sent, hop.answered), (30, 30), "{hop:?}");
        assert_eq!(hop.responders[0].kind, AnswerKind::Echo);
        // Every probe sent is settled at its hop: the 30 at TTL 1, none
        // lost. A probe the schedule sent ahead before TTL 1's echo came
        // (a busy machine delays it) went past the path's end, which the
        // tally cuts off by design (`max_ttl` still shows it went): only
        // then may more have been sent than the hops hold (seen in CI
        // beside stress-ng: 31 sent, TTL 2 the highest, 30 at hop 1).
        let settled: u64 = paths
            .iter()
            .flat_map(|p| &p.hops)
            .map(|h| u64::from(h.sent))
            .sum();
        let past_the_end = paths.iter().any(|p| usize::from(p.max_ttl) > p.hops.len());
        if past_the_end {
            assert!(counts.sent >= settled, "{paths:?}");
        } else {
            assert_eq!(counts.sent, settled, "{paths:?}");
        }
        assert!(counts.sent >= 30);
        run.stop();
        run.join().unwrap();
        let strays = count(&mut run, |k| *k == RecordKind::Stray);
        server.join().unwrap();
        assert_eq!(strays, 0, "no echo of the trace reached the prober");
    }

    /// To a closed port: the trace's port-unreachables go to the trace,
    /// every one.
    #[test]
    fn a_traces_icmp_goes_to_the_trace() {
        let closed = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut run = prober_to(closed);
        let tracer = trace_on(&mut run, closed, 20);
        let paths = tracer.into_tallies();
        let hop = &paths[0].hops[0];
        assert_eq!((hop.sent, hop.answered), (20, 20), "{hop:?}");
        assert_eq!(hop.responders[0].kind, AnswerKind::PortUnreachable);
        run.stop();
        run.join().unwrap();
    }
}
