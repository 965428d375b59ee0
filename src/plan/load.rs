//! A load run's plan (`--load`): its checks, the defaults a loaded path
//! needs (paced probes, a timeout as long as a full queue, warm-up kept
//! short, the verdict on what was asked), and its settings.

use super::*;
use synapse_stats::load::PhaseKind;

/// Probes every this long while loaded, unless `--interval` or `--rate`.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(10);
/// A probe's timeout unless `--timeout`: a 750 kB queue at 10 Mbit/s holds
/// 600 ms, and a shorter timeout turns that delay into loss.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Warm-up probes unless `--warmup`: the phases start after them.
pub const WARMUP: u64 = 10;

/// What a load run does, every default applied.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSettings {
    /// The phases, in order, each with an idle phase before and after.
    pub phases: Vec<PhaseKind>,
    /// The longest a load phase runs.
    pub cap: Duration,
    /// Each idle phase's length.
    pub idle: Duration,
    /// After a load phase, the probes of this first part of the idle phase
    /// are left out: the queues drain.
    pub settle: Duration,
    /// Streams each way, fixed (`--load-streams`), or added until goodput
    /// is stable.
    pub streams: Option<u32>,
    /// The senders' congestion control.
    pub cc: Option<String>,
    /// The reflector's load port.
    pub port: u16,
    /// `--max-inflation`.
    pub max_inflation: Option<Duration>,
    /// `--min-rpm`.
    pub min_rpm: Option<f64>,
}

impl LoadSettings {
    /// A load run's settings from its options (`None`: no `--load`).
    pub fn of(run: &RunArgs) -> Option<Self> {
        let l = &run.load;
        let phases = l.load.clone()?.0;
        let idle = (l.load_phase / 3).clamp(Duration::from_secs(1), Duration::from_secs(5));
        Some(Self {
            phases,
            cap: l.load_phase,
            idle,
            settle: (idle / 2).min(Duration::from_secs(1)),
            streams: l.load_streams,
            cc: l.load_cc.clone(),
            port: l.load_port,
            max_inflation: l.max_inflation,
            min_rpm: l.min_rpm,
        })
    }

    /// Seconds of load the run asks the reflector for, all phases.
    pub fn seconds(&self) -> u32 {
        let cap = self.cap.as_secs_f64().ceil() as u32;
        cap * self.phases.len() as u32
    }

    /// The most streams open at once (both ways of a bidirectional phase).
    pub fn most_streams(&self) -> u32 {
        let per_way = self
            .streams
            .unwrap_or(synapse_stats::load::saturation::MAX_STREAMS);
        let ways = self
            .phases
            .iter()
            .map(|p| p.ways().len())
            .max()
            .unwrap_or(1) as u32;
        per_way * ways
    }
}

/// Options that mean something only with `--load`.
const LOAD_ONLY: [(&str, &str); 4] = [
    ("load_streams", "--load-streams"),
    ("load_cc", "--load-cc"),
    ("max_inflation", "--max-inflation"),
    ("min_rpm", "--min-rpm"),
];

/// Checks a load run's options and applies its defaults to `p`: paced
/// probes, a long timeout, a short warm-up, STAMP to the in-process
/// reflector, and a verdict on what was asked for only (the RTT, loss and
/// outage criteria of an idle path would fail every loaded one).
pub(super) fn apply(p: &mut ClientPlan, chosen: &Settings) -> Result<(), AppError> {
    let refuse = |why: String| Err(AppError::Usage(why));
    if p.run.load.load.is_none() {
        if let Some((_, flag)) = LOAD_ONLY.iter().find(|(id, _)| chosen.get(id).is_some()) {
            return refuse(format!("{flag} is for a load run: add --load"));
        }
        return Ok(());
    }
    if p.run.transport == Transport::Tcp {
        return refuse("--load measures with UDP probes beside its TCP load: drop --tcp".into());
    }
    for (id, flag) in [("packets", "--packets"), ("duration", "--duration")] {
        if chosen.get(id).is_some() {
            return refuse(format!(
                "--load runs phase by phase: {flag} does not apply (--load-phase caps each phase)"
            ));
        }
    }
    let r = &mut p.run;
    if r.schedule().is_none() {
        r.pace.interval = Some(PROBE_INTERVAL);
    }
    if chosen.get("timeout_ms").is_none() {
        r.clock.timeout_ms = PROBE_TIMEOUT;
    }
    if chosen.get("warmup").is_none() {
        r.warmup = Some(WARMUP);
    }
    if p.target == Target::Loopback {
        // The in-process reflector answers STAMP, with its send times.
        r.packet.stamp = true;
        let mut tlvs = r.packet.tlv.unwrap_or_default();
        tlvs.follow_up = true;
        r.packet.tlv = Some(tlvs);
    }
    client::check_pacing(r)?;
    let timeout = r.clock.timeout_ms;
    if timeout < PROBE_TIMEOUT {
        p.warnings.push(format!(
            "--timeout {}: under load a full queue can hold a probe longer (a 750 kB queue at 10 Mbit/s holds 600 ms), and then its delay counts as loss",
            synapse_units::duration_text(timeout)
        ));
    }
    p.packets = None;
    p.settings = RunSettings::of(&p.run);
    let s = &mut p.settings;
    if chosen.get("threshold").is_none() {
        s.thresholds.clear();
    }
    if chosen.get("max_loss").is_none() {
        s.max_loss = None;
    }
    if chosen.get("max_outage").is_none() {
        s.max_outage = None;
    }
    Ok(())
}

impl ClientPlan {
    /// The plan of a load run's probes once the reflector's load session
    /// said what it answers: STAMP on its STAMP port (with Follow-Up, so
    /// its own egress queue is measured) when it has one and the run
    /// asked for nothing else, else echo on the port given.
    pub fn probing(&self, stamp_port: Option<u16>) -> ClientPlan {
        let mut p = self.clone();
        let (Target::Remote(addr), Some(port)) = (p.target, stamp_port) else {
            return p;
        };
        if p.run.packet.stamp {
            return p;
        }
        p.target = Target::Remote(SocketAddr::new(addr.ip(), port));
        p.run.packet.stamp = true;
        let mut tlvs = p.run.packet.tlv.unwrap_or_default();
        tlvs.follow_up = true;
        p.run.packet.tlv = Some(tlvs);
        let (thresholds, loss, outage) = (
            p.settings.thresholds.clone(),
            p.settings.max_loss,
            p.settings.max_outage,
        );
        p.settings = RunSettings::of(&p.run);
        p.settings.thresholds = thresholds;
        p.settings.max_loss = loss;
        p.settings.max_outage = outage;
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Result<ClientPlan, AppError> {
        let mut argv = vec!["synapse", "client", "192.0.2.1", "--no-ui"];
        argv.extend(args);
        let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(&argv).unwrap();
        let m = <crate::cli::Cli as clap::CommandFactory>::command().get_matches_from(&argv);
        match super::super::plan(cli, &m)? {
            Plan::Client(p) => Ok(p),
            Plan::Server(_) => unreachable!(),
        }
    }

    #[test]
    fn a_load_run_paces_its_probes_and_judges_only_what_was_asked() {
        let p = plan(&["--load", "download", "--load-phase", "6s"]).unwrap();
        let l = p.settings.load.clone().unwrap();
        assert_eq!(l.phases, vec![PhaseKind::Download]);
        assert_eq!(
            (l.idle, l.settle),
            (Duration::from_secs(2), Duration::from_secs(1))
        );
        assert_eq!(l.seconds(), 6);
        assert_eq!(p.settings.schedule.unwrap().interval, PROBE_INTERVAL);
        assert_eq!(p.settings.timeout, PROBE_TIMEOUT);
        assert_eq!((p.settings.warmup, p.packets), (WARMUP, None));
        assert!(p.settings.thresholds.is_empty());
        assert_eq!((p.settings.max_loss, p.settings.max_outage), (None, None));
        let p = plan(&["--load", "--threshold", "p99=300ms", "--timeout", "1s"]).unwrap();
        assert_eq!(p.settings.thresholds.len(), 1, "typed, so judged");
        assert_eq!(p.settings.timeout, Duration::from_secs(1));
        assert_eq!(p.settings.load.unwrap().most_streams(), 32);
    }

    #[test]
    fn load_options_without_load_and_load_with_what_it_cannot_use_are_refused() {
        let e = |args: &[&str]| plan(args).unwrap_err().to_string();
        assert!(e(&["--max-inflation", "30ms"]).contains("--max-inflation is for a load run"));
        assert!(e(&["--load", "--tcp"]).contains("drop --tcp"));
        assert!(e(&["--load", "--packets", "100"]).contains("--packets does not apply"));
        let p = plan(&["--load", "--timeout", "100ms"]).unwrap();
        assert!(p.warnings[0].contains("counts as loss"), "{:?}", p.warnings);
    }

    #[test]
    fn the_probes_follow_the_reflectors_stamp_port() {
        let p = plan(&["--load"]).unwrap();
        let q = p.probing(Some(862));
        assert!(q.settings.stamp);
        assert_eq!(q.target, Target::Remote("192.0.2.1:862".parse().unwrap()));
        assert!(q.settings.thresholds.is_empty(), "the load's verdict kept");
        let echo = p.probing(None);
        assert!(!echo.settings.stamp);
        assert_eq!(
            echo.target,
            Target::Remote("192.0.2.1:8080".parse().unwrap())
        );
    }
}
