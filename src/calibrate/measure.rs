//! The figures `synapse calibrate` reports, measured one after another on
//! the CPUs chosen, each in a thread of its own (pinning is per thread).

use synapse_engine::floor::{self, Effort, Figure, LoopbackFloor};
use synapse_engine::floor::{Figures, RunToRun};
use synapse_engine::{EngineError, StopFlag, TimestampMode};

/// Medians and 99th percentiles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// Medians.
    pub p50: Figures,
    /// 99th percentiles.
    pub p99: Figures,
    /// How separate runs differ here.
    pub run_to_run: Option<RunToRun>,
    /// Stopped (Ctrl-C) before every figure was measured.
    pub interrupted: bool,
}

impl Measured {
    fn cut(self) -> Result<Self, EngineError> {
        Ok(Self {
            interrupted: true,
            ..self
        })
    }

    fn put(&mut self, slot: fn(&mut Figures) -> &mut Option<f64>, f: Figure) {
        *slot(&mut self.p50) = Some(f.p50_ns);
        *slot(&mut self.p99) = Some(f.p99_ns);
    }
}

/// Runs of one configuration (the blocking loopback ping-pong), each with a
/// fresh client and reflector, as separate runs would: how far their
/// figures spread is what one run a side of `synapse compare` cannot see.
const SPREAD_RUNS: usize = 10;

/// The spread between [`SPREAD_RUNS`] runs of 10,000 round trips (half as
/// many runs of 3,000 when quick), `None` when stopped before three.
fn run_to_run(
    effort: Effort,
    run: LoopbackFloor,
    stop: &StopFlag,
) -> Result<Option<RunToRun>, EngineError> {
    let (runs, packets) = match effort {
        Effort::Full => (SPREAD_RUNS, 10_000),
        Effort::Quick => (SPREAD_RUNS / 2, 3_000),
    };
    let mut figures = Vec::with_capacity(runs);
    for _ in 0..runs {
        if stop.is_raised() {
            break;
        }
        figures.push(floor::udp_run_figures(LoopbackFloor { packets, ..run })?);
    }
    let at = crate::config::rfc3339_utc(std::time::SystemTime::now());
    // Each run's own noise is left in the spread (a wider spread, on the
    // safe side: the comparison adds the runs' own noise again).
    Ok(
        synapse_stats::significance::Spread::measured(&at, &figures, [0.0; 5]).map(|spread| {
            RunToRun {
                spread,
                p50_ns: figures.iter().map(|f| f[0]).collect(),
            }
        }),
    )
}

/// Runs `f` on a thread of its own (it pins itself).
fn apart<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Measures everything on CPUs `a` and `b` (`b` = `a`: one CPU, and the
/// cross-core figures stay `None`), telling `progress` what comes next.
/// Once `stop` is raised, what is measured so far is returned (the figure
/// under way is finished first: none takes more than a second or two).
pub fn measure(
    a: usize,
    b: Option<usize>,
    effort: Effort,
    mut progress: impl FnMut(&str),
    stop: &StopFlag,
) -> Result<Measured, EngineError> {
    let mut next = |what: &str| {
        let go = !stop.is_raised();
        if go {
            progress(what);
        }
        go
    };
    let mut m = Measured::default();
    let io = EngineError::io;
    if !next("clock reads") {
        return m.cut();
    }
    let (mono, real) = apart(|| floor::clock_read(a, effort)).map_err(io("clock reads"))?;
    m.put(|f| &mut f.clock_read_ns, mono);
    m.put(|f| &mut f.clock_read_realtime_ns, real);
    if !next("syscall") {
        return m.cut();
    }
    m.put(
        |f| &mut f.syscall_ns,
        apart(|| floor::syscall(a, effort)).map_err(io("syscall"))?,
    );
    if !next("context switch on one CPU") {
        return m.cut();
    }
    let same = apart(|| floor::context_switch(a, a, effort)).map_err(io("context switch"))?;
    m.put(|f| &mut f.context_switch_same_core_ns, same);
    if !next("timer overshoot") {
        return m.cut();
    }
    let timer = apart(|| floor::timer_overshoot(a, effort)).map_err(io("timer"))?;
    m.put(|f| &mut f.timer_overshoot_ns, timer);
    let udp = |reflector_cpu, busy_poll, timestamps, packets| LoopbackFloor {
        client_cpu: a,
        reflector_cpu,
        busy_poll,
        timestamps,
        packets: effort.scale(packets) as u64,
    };
    if !next("loopback ping-pong, blocking, one CPU") {
        return m.cut();
    }
    let one = floor::udp_round_trip(udp(a, false, TimestampMode::User, 20_000))?;
    m.put(|f| &mut f.udp_blocking_rtt_same_core_ns, one);
    let Some(b) = b else {
        return Ok(m);
    };
    if !next("wake-up across CPUs") {
        return m.cut();
    }
    let cross = apart(|| floor::context_switch(a, b, effort)).map_err(io("wake-up"))?;
    m.put(|f| &mut f.wakeup_cross_core_ns, cross);
    if !next("loopback ping-pong, blocking") {
        return m.cut();
    }
    let blocking = floor::udp_round_trip(udp(b, false, TimestampMode::User, 20_000))?;
    m.put(|f| &mut f.udp_blocking_rtt_ns, blocking);
    if !next("run-to-run spread (separate loopback runs)") {
        return m.cut();
    }
    m.run_to_run = run_to_run(effort, udp(b, false, TimestampMode::User, 0), stop)?;
    if !next("loopback TCP ping-pong, blocking") {
        return m.cut();
    }
    let tcp = floor::tcp_round_trip(udp(b, false, TimestampMode::User, 20_000))?;
    m.put(|f| &mut f.tcp_blocking_rtt_ns, tcp);
    if !next("loopback ping-pong, busy-poll") {
        return m.cut();
    }
    let busy = floor::udp_round_trip(udp(b, true, TimestampMode::User, 100_000))?;
    m.put(|f| &mut f.udp_busy_poll_rtt_ns, busy);
    if !next("loopback ping-pong, busy-poll, kernel stamps") {
        return m.cut();
    }
    let stamped = floor::udp_round_trip(udp(b, true, TimestampMode::Software, 100_000))?;
    m.p50.tx_timestamping_cost_ns = Some(stamped.p50_ns - busy.p50_ns);
    m.p99.tx_timestamping_cost_ns = Some(stamped.p99_ns - busy.p99_ns);
    Ok(m)
}
