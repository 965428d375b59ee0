//! What a client run does, resolved from its options: the plain settings
//! the sessions, the reports and the live display read. The options
//! themselves (clap's `RunArgs`, each declared once in `cli/`) stop at the
//! plan: a front end sees an option only as the setting it resolves to.

use crate::cli::RunArgs;
use std::time::Duration;
use synapse_engine::{Schedule, Transport};
use synapse_stats::Pattern;
use synapse_stats::Threshold;

/// A client run's settings, every default applied.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// UDP or TCP.
    pub transport: Transport,
    /// TCP: a new connection for every transaction.
    pub connect_each: bool,
    /// STAMP, not plain echo.
    pub stamp: bool,
    /// The payload bytes asked for (the wire size is the plan's).
    pub size: usize,
    /// How long a request waits for its reply.
    pub timeout: Duration,
    /// The time budget, if the run has one.
    pub duration: Option<Duration>,
    /// Packets sent first and left out of the statistics.
    pub warmup: u64,
    /// Paced: when each request leaves; `None` in ping-pong.
    pub schedule: Option<Schedule>,
    /// Ping-pong, periodic or Poisson.
    pub pattern: Pattern,
    /// The RTT figures a PASS needs below their limits.
    pub thresholds: Vec<Threshold>,
    /// A FAIL above this share of requests unanswered in time, percent
    /// (`None`: not judged, a load run that was not asked to).
    pub max_loss: Option<f64>,
    /// A FAIL on replies stopping for longer than this (`None`: not judged).
    pub max_outage: Option<Duration>,
    /// The run ends (FAIL) once no reply has come for this long.
    pub give_up_after: Option<Duration>,
    /// CPUs kept out of idle states was asked for.
    pub keep_awake: bool,
    /// `--update`: how often the live display's animation advances and
    /// the JSON stream writes; `None`: each its own default.
    pub update: Option<synapse_units::Every>,
    /// Live display: frames per second.
    pub fps: u32,
    /// Latency under load (`--load`), when asked for.
    pub load: Option<super::LoadSettings>,
    /// Every run option as resolved, by its JSON name: the JSON report's
    /// `config` echoes them.
    pub options: serde_json::Map<String, serde_json::Value>,
}

impl RunSettings {
    /// The settings `run`'s options resolve to.
    pub fn of(run: &RunArgs) -> Self {
        let options = match serde_json::to_value(run) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        Self {
            transport: run.transport,
            connect_each: run.connect_each,
            stamp: run.packet.stamp,
            size: run.packet.size,
            timeout: run.clock.timeout_ms,
            duration: run.duration,
            warmup: run.warmup_packets(),
            schedule: run.schedule(),
            pattern: run.pattern(),
            thresholds: run.threshold.clone(),
            max_loss: Some(run.max_loss),
            max_outage: Some(run.max_outage),
            give_up_after: (!run.give_up_after.is_zero()).then_some(run.give_up_after),
            keep_awake: run.thread.keep_awake,
            update: run.update,
            fps: run.fps,
            load: super::LoadSettings::of(run),
            options,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn settings(args: &[&str]) -> RunSettings {
        let mut argv = vec!["synapse"];
        argv.extend(args);
        RunSettings::of(&crate::cli::Cli::try_parse_from(argv).unwrap().run)
    }

    #[test]
    fn defaults_resolve_as_the_options_say() {
        let s = settings(&[]);
        assert_eq!(s.transport, Transport::Udp);
        assert_eq!(s.pattern, Pattern::PingPong);
        assert_eq!((s.warmup, s.size, s.update, s.fps), (200, 8, None, 30));
        assert!(s.schedule.is_none() && !s.stamp && !s.connect_each);
        assert_eq!(s.max_outage, Some(Duration::from_secs(1)));
        assert_eq!(s.options["max_loss_percent"], serde_json::json!(1.0));
    }

    #[test]
    fn a_paced_run_resolves_its_schedule_and_warm_up() {
        let s = settings(&["--rate", "100", "--poisson", "--tcp", "--timeout", "50ms"]);
        assert_eq!(s.pattern, Pattern::Poisson);
        assert_eq!(s.schedule.unwrap().interval_ns(), 10_000_000);
        assert_eq!(s.warmup, 100, "one second's worth");
        assert_eq!(s.transport, Transport::Tcp);
        assert_eq!(s.timeout, Duration::from_millis(50));
        assert_eq!(s.options["rate_pps"], serde_json::json!(100.0));
    }
}
