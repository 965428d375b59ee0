//! The loopback round trip: Synapse's own client and reflector, pinned,
//! over 127.0.0.1, as `synapse client` and `synapse server` would run.

use super::Figure;
use crate::{
    ClientConfig, ClientOutcome, EngineError, Protocol, ReflectorConfig, StopFlag, ThreadPlacement,
    TimestampMode, start_client, start_reflector,
};
use std::time::Duration;

/// One loopback ping-pong to measure (UDP, or TCP's twin in `tcp.rs`).
#[derive(Debug, Clone, Copy)]
pub struct LoopbackFloor {
    /// The client's CPU.
    pub client_cpu: usize,
    /// The reflector's CPU (the same one: both on one core).
    pub reflector_cpu: usize,
    /// Both sides spin instead of sleeping.
    pub busy_poll: bool,
    /// The client's stamps (kernel ones cost what `tx_timestamping_cost`
    /// measures).
    pub timestamps: TimestampMode,
    /// Packets measured after the warm-up.
    pub packets: u64,
}

/// The round trip's median and 99th percentile, ns.
pub fn udp_round_trip(f: LoopbackFloor) -> Result<Figure, EngineError> {
    figure_of(&udp_run(f)?)
}

/// One run's figures as a comparison reads them: p50, p90, p99, p99.9 and
/// the mean, ns (what `synapse calibrate` measures the spread between runs
/// of).
pub fn udp_run_figures(f: LoopbackFloor) -> Result<[f64; 5], EngineError> {
    let outcome = udp_run(f)?;
    figure_of(&outcome)?;
    let h = outcome.stats.histogram();
    let q = |q: f64| h.value_at_quantile(q) as f64;
    Ok([q(0.5), q(0.9), q(0.99), q(0.999), h.mean()])
}

/// A fresh reflector and client, pinned, for `f.packets` round trips.
fn udp_run(f: LoopbackFloor) -> Result<ClientOutcome, EngineError> {
    let placement = |cpu| placement(cpu, f.busy_poll);
    let reflector_stop = StopFlag::new();
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let mut reflector_cfg = ReflectorConfig::new(loopback, Protocol::Echo);
    reflector_cfg.thread = placement(f.reflector_cpu);
    let mut reflector = start_reflector(reflector_cfg, reflector_stop.clone())?;
    let mut client_cfg = ClientConfig::new(reflector.local);
    client_cfg.packets = Some(f.packets);
    client_cfg.warmup = 1_000.min(f.packets);
    client_cfg.timeout = Duration::from_millis(200);
    client_cfg.thread = placement(f.client_cpu);
    client_cfg.timestamps = f.timestamps;
    client_cfg.ring_capacity = 1024;
    let outcome = start_client(client_cfg, StopFlag::new()).and_then(|mut c| c.join());
    reflector.stop();
    let _ = reflector.join();
    outcome
}

/// A pinned thread of the floor's (never real-time, never keeping the CPUs
/// awake: the floor is the host as it is).
pub(super) fn placement(cpu: usize, busy_poll: bool) -> ThreadPlacement {
    ThreadPlacement {
        cpu,
        cpu_auto: false,
        busy_poll,
        rt: false,
        keep_awake: false,
    }
}

/// The client's round trips: median and 99th percentile.
pub(super) fn figure_of(outcome: &ClientOutcome) -> Result<Figure, EngineError> {
    let h = outcome.stats.histogram();
    if h.is_empty() {
        return Err(EngineError::io("loopback ping-pong")(
            std::io::Error::other("no replies over loopback"),
        ));
    }
    Ok(Figure {
        p50_ns: h.value_at_quantile(0.5) as f64,
        p99_ns: h.value_at_quantile(0.99) as f64,
    })
}
