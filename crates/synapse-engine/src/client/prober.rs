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

    fn row(&mut self, _probe: usize, _p: &Points) {}
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
            let mut pacer = Pacer::new(&socket, cfg.peers, pacer_cfg, stamps, sink);
            pacer.run(&thread_stop)?;
            Ok(placed.placement)
        })
        .map_err(EngineError::io("cannot start the prober thread"))?;
    Ok(ProberRun {
        records,
        local,
        stamping,
        stop,
        overflow,
        handle: Some(handle),
    })
}
