//! `synapse calibrate`: its options.

use clap::Args;
use std::path::PathBuf;

/// `synapse calibrate`.
#[derive(Debug, Args)]
#[command(after_long_help = CALIBRATE_AFTER_HELP)]
pub struct CalibrateArgs {
    /// About one second instead of a few.
    #[arg(long)]
    pub quick: bool,

    /// One JSON object on standard output (figures in ns, the audit, where
    /// it was kept).
    #[arg(long)]
    pub json: bool,

    /// Measure and report, but keep nothing (runs are then not explained
    /// against it).
    #[arg(long)]
    pub no_save: bool,

    /// The two CPUs to measure on, `A,B` (cross-core figures use both)
    /// [default: the first two this process may run on].
    #[arg(long, value_name = "A,B", value_parser = parse_cpu_pair)]
    pub cpus: Option<(usize, usize)>,

    /// Where the calibration is kept [default: $XDG_STATE_HOME/synapse/calibration.json].
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
}

fn parse_cpu_pair(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("expected two CPUs as A,B, got {s:?}"))?;
    let cpu = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("{t:?} is not a CPU number"))
    };
    let (a, b) = (cpu(a)?, cpu(b)?);
    if a == b {
        return Err(format!("the two CPUs must differ (got {a} twice)"));
    }
    Ok((a, b))
}

const CALIBRATE_AFTER_HELP: &str = "\
Measures what this host's floor is: a clock read, a syscall, a context switch on one
CPU, a wake-up across two, how late a 100 µs sleep wakes, and Synapse's own loopback
ping-pong (blocking and busy-poll, with and without kernel stamps), each pinned, each as
a median and 99th percentile. Then it reads how the host is set up (CPU governor,
isolated CPUs, interrupts, idle states, clocksource, busy-poll sysctls, socket buffers,
RT throttling, interrupt coalescing) and says what to change and how. It changes
nothing.

The result is kept (with the host name and kernel), and later runs report their p50
against it: `p50 9.8 µs = 1.3 × this host's loopback busy-poll floor`.

JSON keys (ns): clock_read_ns, syscall_ns, context_switch_same_core_ns,
wakeup_cross_core_ns, udp_blocking_rtt_ns, udp_busy_poll_rtt_ns,
tx_timestamping_cost_ns, timer_overshoot_ns (medians), and the same under `p99`.

Examples:
  synapse calibrate
  synapse calibrate --quick --json";

#[cfg(test)]
mod tests {
    use super::parse_cpu_pair;

    #[test]
    fn a_cpu_pair_is_two_different_numbers() {
        assert_eq!(parse_cpu_pair("0,1"), Ok((0, 1)));
        assert_eq!(parse_cpu_pair(" 2 , 3 "), Ok((2, 3)));
        assert!(parse_cpu_pair("1,1").unwrap_err().contains("differ"));
        assert!(parse_cpu_pair("1").unwrap_err().contains("A,B"));
        assert!(parse_cpu_pair("a,1").unwrap_err().contains("not a CPU"));
    }
}
