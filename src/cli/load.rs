//! Latency under load: the client's options (a part of every run's
//! options, so profiles keep them) and the reflector's.

use clap::Args;
use serde::Serialize;
use std::time::Duration;
use synapse_stats::load::PhaseKind;

/// The load port a client asks for unless told.
pub const DEFAULT_LOAD_PORT: u16 = 8863;

/// The phases a load run loads, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPhases(pub Vec<PhaseKind>);

impl LoadPhases {
    /// All three, in the order Crusader and the IETF draft run them.
    pub const ALL: &'static str = "download,upload,bidirectional";
}

impl std::str::FromStr for LoadPhases {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let phases: Vec<PhaseKind> = s
            .split(',')
            .map(|p| p.trim().parse())
            .collect::<Result<_, _>>()?;
        if phases.is_empty() {
            return Err("name at least one phase: download, upload, bidirectional".into());
        }
        Ok(Self(phases))
    }
}

impl std::fmt::Display for LoadPhases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|p| p.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// A client's load: what it loads, how long, how hard, and its verdict.
#[derive(Debug, Args, Clone, Serialize)]
pub struct LoadArgs {
    /// Latency under load: load the path with bulk TCP to and from the
    /// reflector (its --load-port) and measure the round trip beside it,
    /// phase by phase, each with idle before and after: download, upload,
    /// bidirectional (comma-separated; given bare, all three). Reports
    /// each phase's round trip, its inflation over idle with 95 %
    /// intervals, goodput each way, round trips per minute, and where the
    /// added delay sits (docs/load.md). Probes are paced (every 10 ms
    /// unless --interval) with a 2 s timeout unless --timeout.
    #[arg(long, value_name = "PHASES", num_args = 0..=1,
          default_missing_value = LoadPhases::ALL, value_parser = clap::value_parser!(LoadPhases))]
    #[serde(serialize_with = "synapse_units::serde_opt_display")]
    pub load: Option<LoadPhases>,

    /// The longest a load phase runs (1s to 10min): streams are added one
    /// a second until goodput is stable, then latency is measured until it
    /// is stable too (the IETF responsiveness draft's rule); a phase this
    /// cap cuts short says with what confidence.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = load_phase)]
    #[serde(rename = "load_phase_s", serialize_with = "serde_secs")]
    pub load_phase: Duration,

    /// Load with exactly N streams each way (1..=16) instead of adding
    /// them until goodput is stable.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub load_streams: Option<u32>,

    /// The load's congestion control (e.g. cubic, bbr, reno), on both
    /// ends' senders [default: each host's own]. BBR fills a queue far
    /// less than CUBIC.
    #[arg(long, value_name = "NAME", value_parser = congestion_control)]
    pub load_cc: Option<String>,

    /// The reflector's load port (its `synapse server --load-port`).
    #[arg(long, value_name = "PORT", default_value_t = DEFAULT_LOAD_PORT)]
    pub load_port: u16,

    /// FAIL (exit 3) when the worst load phase's median round trip is
    /// inflated beyond this over idle; INCONCLUSIVE (exit 4) when its 95 %
    /// interval spans it (e.g. 30ms).
    #[arg(long, value_name = "DURATION", value_parser = synapse_units::millis)]
    #[serde(rename = "max_inflation_ms", serialize_with = "serde_opt_ms")]
    pub max_inflation: Option<Duration>,

    /// FAIL (exit 3) when the worst load phase's round trips per minute
    /// (probe-based) are fewer than N.
    #[arg(long, value_name = "N", value_parser = min_rpm)]
    pub min_rpm: Option<f64>,
}

/// The reflector's load server: off unless --load-port is given.
#[derive(Debug, Args, Clone)]
pub struct LoadServerArgs {
    /// Serve load sessions (bulk TCP for clients' --load) on this TCP port,
    /// same address. Off unless given. On any address but loopback it
    /// needs --allow or --hmac-key-file: bulk TCP for anyone is refused.
    #[arg(long, value_name = "PORT")]
    pub load_port: Option<u16>,

    /// Load sessions served at once; more are refused until one ends.
    #[arg(long, value_name = "N", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub load_max_sessions: u32,

    /// Seconds of load one session may have, all its phases together.
    #[arg(long, value_name = "SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub load_max_seconds: u32,

    /// The most one load session moves each way (e.g. 100mbit, 1gbit).
    #[arg(long, value_name = "RATE", default_value = "1gbit", value_parser = synapse_units::bitrate)]
    pub load_max_rate: u64,
}

fn load_phase(s: &str) -> Result<Duration, String> {
    let (lo, hi) = (Duration::from_secs(1), Duration::from_secs(600));
    synapse_units::duration_within(s, synapse_units::DefaultUnit::Seconds, lo, Some(hi))
}

fn congestion_control(s: &str) -> Result<String, String> {
    if synapse_engine::load::wire::valid_cc(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}' is not a congestion control's name (e.g. cubic, bbr, reno)"
        ))
    }
}

fn min_rpm(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!(
            "'{s}' is not a number of round trips per minute above zero"
        )),
    }
}

fn serde_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn serde_opt_ms<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => synapse_units::serde_ms(d, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn load(args: &[&str]) -> Result<LoadArgs, String> {
        let mut all = vec!["synapse", "client", "192.0.2.1"];
        all.extend_from_slice(args);
        match Cli::try_parse_from(all).map_err(|e| e.to_string())?.command {
            Some(crate::cli::Command::Client(c)) => Ok(c.run.load),
            _ => unreachable!("a client"),
        }
    }

    #[test]
    fn load_bare_is_all_three_phases_and_a_list_keeps_its_order() {
        assert_eq!(load(&[]).unwrap().load, None);
        let all = load(&["--load"]).unwrap().load.unwrap();
        assert_eq!(all.to_string(), "download,upload,bidirectional");
        let two = load(&["--load", "upload,download"]).unwrap().load.unwrap();
        assert_eq!(two.0, vec![PhaseKind::Upload, PhaseKind::Download]);
        let e = load(&["--load", "sideways"]).unwrap_err();
        assert!(e.contains("'sideways' is not a load phase"), "{e}");
    }

    #[test]
    fn load_options_are_checked_where_they_are_read() {
        let l = load(&["--load", "--load-phase", "4s", "--load-streams", "2"]).unwrap();
        assert_eq!(
            (l.load_phase, l.load_streams),
            (Duration::from_secs(4), Some(2))
        );
        assert_eq!(l.load_port, DEFAULT_LOAD_PORT);
        assert!(load(&["--load-streams", "17"]).is_err());
        assert!(load(&["--load-phase", "0.5s"]).is_err());
        assert!(
            load(&["--load-cc", "a b"])
                .unwrap_err()
                .contains("congestion control")
        );
        assert!(load(&["--min-rpm", "0"]).is_err());
        let l = load(&["--max-inflation", "30ms", "--min-rpm", "500"]).unwrap();
        assert_eq!(l.max_inflation, Some(Duration::from_millis(30)));
        assert_eq!(l.min_rpm, Some(500.0));
    }
}
