//! What `synapse calibrate` keeps of a host: its floor figures (medians and
//! 99th percentiles) with the host, kernel and date they belong to. The
//! report explains a run against it; the calibrate front end measures and
//! stores it.

use serde::{Deserialize, Serialize};

/// Every figure, ns (medians, or 99th percentiles: two of these make a
/// calibration). `None`: not measurable here (one CPU, say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// `CLOCK_MONOTONIC` through the vDSO.
    pub clock_read_ns: Option<f64>,
    /// `CLOCK_REALTIME` (what kernel stamps are compared with).
    pub clock_read_realtime_ns: Option<f64>,
    /// `getpid` as a syscall.
    pub syscall_ns: Option<f64>,
    /// A token handed between two threads on one CPU, per hand-over.
    pub context_switch_same_core_ns: Option<f64>,
    /// The same across two CPUs: a sleeping thread woken.
    pub wakeup_cross_core_ns: Option<f64>,
    /// Loopback ping-pong, blocking, client and reflector on two CPUs.
    pub udp_blocking_rtt_ns: Option<f64>,
    /// The same with both on one CPU.
    pub udp_blocking_rtt_same_core_ns: Option<f64>,
    /// Loopback ping-pong, both spinning, on two CPUs.
    pub udp_busy_poll_rtt_ns: Option<f64>,
    /// Loopback TCP request/response, blocking, one connection, two CPUs.
    #[serde(default)]
    pub tcp_blocking_rtt_ns: Option<f64>,
    /// The busy-poll RTT with kernel stamps less without.
    pub tx_timestamping_cost_ns: Option<f64>,
    /// How late a 100 µs sleep wakes.
    pub timer_overshoot_ns: Option<f64>,
}

/// One calibration of one host, as reported and kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The Synapse that measured it.
    pub synapse_version: String,
    /// The host name.
    pub host: String,
    /// The kernel release.
    pub kernel: String,
    /// When, RFC 3339 UTC.
    pub calibrated_at: String,
    /// Measured with `--quick`.
    pub quick: bool,
    /// The CPUs measured on (one: no cross-core figures).
    pub cpus: Vec<usize>,
    /// The medians, ns, under the fixed key names.
    #[serde(flatten)]
    pub p50: Figures,
    /// The 99th percentiles, ns.
    pub p99: Figures,
    /// How much separate runs of the loopback ping-pong differ from each
    /// other here (what one run a side of `synapse compare` cannot see),
    /// and, from the same runs, the blocking floor's lower bound; `null` in
    /// a calibration from before Synapse measured it.
    #[serde(default)]
    pub run_to_run: Option<RunToRun>,
}

/// Separate short runs of the blocking loopback ping-pong, each a fresh
/// client and reflector: how far their figures spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunToRun {
    /// The spread of ln(figure) between runs, net of their own noise.
    pub spread: synapse_stats::significance::Spread,
    /// The runs' p50s, ns, in the order measured.
    pub p50_ns: Vec<f64>,
}

impl Calibration {
    /// A calibration of host `h` on 2026-11-22 with these medians, for
    /// tests of what is drawn from one (the app's reports and display).
    #[doc(hidden)]
    pub fn fixture(p50: Figures) -> Self {
        Self {
            synapse_version: "0".into(),
            host: "h".into(),
            kernel: "k".into(),
            calibrated_at: "2026-11-22T10:00:00Z".into(),
            quick: false,
            cpus: vec![0, 1],
            p50,
            p99: Figures::default(),
            run_to_run: None,
        }
    }

    /// The date part of `calibrated_at`.
    pub fn date(&self) -> &str {
        self.calibrated_at.get(..10).unwrap_or(&self.calibrated_at)
    }
}
