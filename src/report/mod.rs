//! Report writers: the text and JSON reports of a client run (both read a
//! [`Report`], built from the same [`Summary`] the live display uses), the
//! round-trip breakdown, progress on stderr and the server's text output;
//! and [`runs`], the same runs read back for `compare` and `plot`.

mod breakdown;
pub mod compare_text;
mod extensions_text;
mod floor;
mod jitter_text;
mod json;
pub mod json_stream;
pub mod load;
pub mod load_runs;
mod load_text;
mod one_way_text;
mod path_text;
pub mod percentiles;
mod progress;
mod regression;
pub mod responders;
mod responders_text;
pub mod runs;
pub mod server_text;
pub mod slices_json;
mod tcp_text;
mod text;
mod timing_text;
pub mod trace;
pub mod verdict;

pub use breakdown::{BreakdownReport, PointSource, point_sources};
pub use floor::{FloorComparison, FloorKind, Placement, RunMode};
pub use json::write_json;
pub use progress::Progress;
pub use text::write_text;
pub use verdict::{Criterion, Verdict};

use crate::config::BaselineComparison;
use crate::plan::{ClientPlan, RunSettings, Target};
use serde::Serialize;
use std::net::SocketAddr;
use synapse_engine::ClientOutcome;
use synapse_stats::Summary;
use synapse_stats::intervals::Interval;
use synapse_stats::slices::Slice;

/// The settings a run actually used, after every default was applied. The
/// JSON `config` holds every run option (as the plan resolved them,
/// [`RunSettings::options`]) and, over them, these facts about the run.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveConfig {
    /// What the run did, as the plan resolved its options.
    #[serde(skip)]
    pub settings: RunSettings,
    /// `loopback` (in-process reflector) or `client`.
    pub mode: &'static str,
    /// The reflector measured.
    pub server: SocketAddr,
    /// The client's own address.
    pub local: SocketAddr,
    /// The local address asked for (`--bind`), if any.
    pub bind: Option<SocketAddr>,
    /// Packet budget (null when bounded by time or unbounded).
    pub packets: Option<u64>,
    /// Payload bytes.
    pub size: usize,
    /// CPU the measurement thread ran on.
    pub cpu: usize,
    /// The in-process reflector's CPU (`null`: the reflector is another
    /// process or host).
    pub reflector_cpu: Option<usize>,
    /// The CPU was chosen automatically.
    pub cpu_auto: bool,
    /// Busy-polling was on.
    pub busy_poll: bool,
    /// The timestamp source in use.
    pub timestamps: &'static str,
    /// Why it is not the one asked for (`auto` falling back), if so.
    pub timestamps_note: Option<String>,
    /// `echo` or `stamp`.
    pub protocol: &'static str,
    /// `ping-pong`, `periodic` or `poisson`.
    pub pattern: &'static str,
    /// The paced interval (or mean gap) in effect, ns; `null` in ping-pong.
    pub interval_ns: Option<u64>,
    /// Warm-up packets in effect.
    pub warmup: u64,
    /// `--rt` was asked for.
    pub rt_requested: bool,
    /// SCHED_FIFO was actually in effect.
    pub realtime: bool,
    /// CPUs were kept out of idle states (`--keep-awake` in effect).
    pub kept_awake: bool,
    /// The profile used, if any.
    pub profile: Option<String>,
    /// The configuration file read, `null` when there is none.
    pub config_file: Option<String>,
}

impl EffectiveConfig {
    /// The JSON `config` object: the options, then the facts over them.
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = self.settings.options.clone();
        if let Ok(serde_json::Value::Object(facts)) = serde_json::to_value(self) {
            map.extend(facts);
        }
        serde_json::Value::Object(map)
    }
}

/// Everything a headless report prints.
#[derive(Debug, Clone)]
pub struct Report {
    /// The run's slices of consecutive requests: what its within-run
    /// intervals resample, what a baseline keeps, what the JSON carries.
    pub slices: Vec<Slice>,
    /// The numbers.
    pub summary: Summary,
    /// The percentiles, each with what it rests on.
    pub percentiles: Vec<percentiles::Percentile>,
    /// PASS, FAIL or INCONCLUSIVE, criterion by criterion.
    pub verdict: Verdict,
    /// The settings.
    pub config: EffectiveConfig,
    /// Stopped early by Ctrl-C or a signal.
    pub interrupted: bool,
    /// The signal that stopped it, when one did.
    pub signal: Option<i32>,
    /// An inconclusive comparison counts as a failure
    /// (`--fail-on-inconclusive`).
    pub inconclusive_fails: bool,
    /// The run against the profile's baseline.
    pub baseline: Option<BaselineComparison>,
    /// Where the round trip's time went (kernel stamps or STAMP only).
    pub breakdown: Option<BreakdownReport>,
    /// The per-packet log, if one was written.
    pub log: Option<LogSummary>,
    /// The interval log (`--hdr-log`), if one was written.
    pub hdr_log: Option<crate::hdr_log::HdrLogOutcome>,
    /// The p50 against this host's calibrated floor, when there is one.
    pub floor: Option<FloorComparison>,
    /// Authenticated STAMP: datagrams refused as replies because their
    /// HMAC did not verify (`None`: not authenticated).
    pub unauthenticated_replies: Option<u64>,
    /// TCP: connections, handshakes, ACKs and the kernel's view.
    pub tcp: Option<synapse_stats::TcpFigures>,
    /// STAMP: what the replies' RFC 8972 TLVs said (`None`: none asked).
    pub extensions: Option<synapse_engine::extensions::TlvSummary>,
    /// What the one-way figures rest on that the reader must know.
    pub extension_warnings: Vec<String>,
    /// What the path said beyond silence: ICMP errors, a TCP peer's end.
    pub path_errors: synapse_stats::PathErrors,
    /// The run gave up on a silent peer after this long without a reply.
    pub gave_up: Option<std::time::Duration>,
    /// Latency under load (`--load`): its phases.
    pub load: Option<load::LoadReport>,
    /// A multicast run: each responder's figures, and the fan-out.
    pub group: Option<responders::GroupReport>,
}

/// What `--log` wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogSummary {
    /// The file.
    pub path: String,
    /// Rows written (one per measured packet).
    pub rows: u64,
    /// Rows that are not in the file: the writer could not keep up, or
    /// writing had failed.
    pub dropped: u64,
    /// Why writing stopped, if it did (the run then ended, exit 1).
    pub error: Option<String>,
    /// The log went to a pipe whose reader closed it (`--log - | head`):
    /// the normal end of a filter, not a failure.
    #[serde(skip)]
    pub reader_closed: bool,
}

/// Where a client sent from: `10.77.0.1:40312`, or with `--connect-each`
/// (a new connection, so a new port, per transaction) the address alone.
pub fn local_text(local: SocketAddr, connect_each: bool) -> String {
    if connect_each {
        format!("{} (a new port per connection)", local.ip())
    } else {
        local.to_string()
    }
}

impl LogSummary {
    /// What a session's log came to.
    pub fn of(log: &crate::session::LogOutcome) -> Self {
        Self {
            path: log.path.display().to_string(),
            rows: log.rows,
            dropped: log.dropped,
            error: log.error.as_ref().map(ToString::to_string),
            reader_closed: log.error.as_ref().is_some_and(|e| e.is_reader_closed()),
        }
    }
}

impl Report {
    /// Stopped before a measured request left: there are no figures.
    pub fn nothing_measured(&self) -> bool {
        self.interrupted && self.summary.packets.sent == 0
    }

    /// Builds the report of a finished client run; `calibration`: this
    /// host's, when one is kept (its floor, and the spread between runs a
    /// regression test starts from).
    pub fn new(
        plan: &ClientPlan,
        server: SocketAddr,
        local: SocketAddr,
        outcome: &ClientOutcome,
        slices: Vec<Slice>,
        calibration: Option<&synapse_engine::floor::Calibration>,
    ) -> Self {
        let summary = Summary::from_stats(&outcome.stats, outcome.measured);
        let spread = synapse_stats::significance::Spread::for_comparison(
            calibration
                .and_then(|c| c.run_to_run.as_ref())
                .map(|r| &r.spread),
        );
        let baseline = regression::judge(
            plan,
            &summary,
            &slices,
            spread,
            outcome.stamping.source.name(),
        );
        let extension_warnings = extensions_text::warnings(
            &summary,
            outcome.extensions.as_ref(),
            synapse_engine::socket::is_this_host(server.ip()),
        );
        let limits = verdict::Limits {
            loss_percent: plan.settings.max_loss,
            outage: plan.settings.max_outage,
            timeout: plan.settings.timeout,
        };
        let thresholds = &plan.settings.thresholds;
        let group = outcome
            .group
            .as_ref()
            .map(|g| responders::GroupReport::of(g, &[], outcome.measured));
        let mut verdict = Verdict::judge(
            &outcome.stats,
            &summary,
            thresholds,
            limits,
            baseline.as_ref(),
        );
        if let (Some(g), Some(report)) = (&outcome.group, &group) {
            let each = report.responders.iter();
            verdict = verdict.with_responders(
                each.map(|row| (row.label(), &g.responders[row.index].stats, &row.summary)),
                thresholds,
                limits,
            );
        }
        let mut report = Self {
            verdict,
            group,
            baseline,
            percentiles: percentiles::of(&summary, &slices),
            summary,
            breakdown: BreakdownReport::from_outcome(outcome),
            log: None,
            hdr_log: None,
            floor: None,
            unauthenticated_replies: plan.stamp_key.as_ref().map(|_| outcome.unauthenticated),
            extension_warnings,
            extensions: outcome.extensions.clone(),
            config: EffectiveConfig::new(plan, server, local, outcome),
            interrupted: outcome.interrupted,
            signal: None,
            inconclusive_fails: plan.profile.fail_on_inconclusive,
            tcp: outcome.tcp.clone(),
            slices,
            path_errors: *outcome.stats.path_errors(),
            gave_up: outcome.gave_up,
            load: None,
        };
        if let (Some(silent), Some(limit)) = (outcome.gave_up, plan.settings.give_up_after) {
            let last = report.path_errors.last().map(|(_, e)| e);
            report.verdict.gave_up(silent, limit, last);
        }
        report.compare_with_floor(calibration);
        report
    }

    /// A multicast run's responders' percentiles given their intervals,
    /// and their slices kept for `compare`, from each one's own slices
    /// (`slices[i]`: responder `i`'s).
    pub fn responder_intervals(&mut self, slices: &[Vec<Slice>]) {
        let Some(g) = self.group.as_mut() else {
            return;
        };
        for r in &mut g.responders {
            if let Some(own) = slices.get(r.index) {
                r.percentiles = percentiles::of(&r.summary, own);
                r.slices = (!own.is_empty()).then(|| slices_json::SlicesJson::of(own));
            }
        }
    }

    /// The slices as intervals (series `rtt` and `unanswered`, the latter
    /// at the run's timeout), for a baseline's interval log.
    pub fn slices_as_intervals(&self) -> Vec<Interval> {
        let timeout = self.config.settings.timeout.as_nanos() as u64;
        self.slices.iter().map(|s| s.to_interval(timeout)).collect()
    }

    /// Why the run failed to complete, if it did: a log that could not be
    /// written, or a load broken off.
    pub fn run_failure(&self) -> Option<&str> {
        let log = self.log.as_ref().and_then(|l| l.error.as_deref());
        log.or_else(|| self.hdr_log.as_ref().and_then(|h| h.error.as_deref()))
            .or_else(|| {
                self.load
                    .as_ref()
                    .and_then(|l| l.outcome.failure.as_deref())
            })
    }

    /// A load run's outcome joins the report: its criteria join the
    /// verdict, and it says whether the run was stopped (its probes always
    /// are, when the phases are done).
    pub fn attach_load(&mut self, outcome: crate::session::LoadOutcome) {
        let l = load::LoadReport::of(outcome);
        if let Some(s) = &self.config.settings.load {
            self.verdict.extend(l.criteria(s));
        }
        self.interrupted = l.outcome.interrupted;
        self.load = Some(l);
    }

    /// What the run came to, all told.
    pub fn outcome(&self) -> Outcome {
        if self.run_failure().is_some() {
            Outcome::RunFailed
        } else if self.interrupted {
            Outcome::Interrupted
        } else if self.verdict.failed().next().is_some() || self.summary.packets.received == 0 {
            Outcome::Fail
        } else if self.verdict.inconclusive {
            Outcome::Inconclusive
        } else {
            Outcome::Pass
        }
    }

    /// The exit status: 0 PASS, 3 FAIL, 4 INCONCLUSIVE (3 with
    /// `--fail-on-inconclusive`), 128 + the signal INTERRUPTED (130 without
    /// one known), 1 a run that failed.
    pub fn exit_status(&self) -> i32 {
        use crate::error::exit;
        match self.outcome() {
            Outcome::Pass => exit::PASS,
            Outcome::Fail => exit::FAIL,
            Outcome::Inconclusive if self.inconclusive_fails => exit::FAIL,
            Outcome::Inconclusive => exit::INCONCLUSIVE,
            Outcome::Interrupted => self.signal.map_or(exit::INTERRUPTED, exit::interrupted_by),
            // The reflector's refusal mid-run is the user's to fix.
            Outcome::RunFailed if self.load.as_ref().is_some_and(|l| l.outcome.refused) => {
                exit::USAGE
            }
            Outcome::RunFailed => exit::RUNTIME,
        }
    }
}

/// What a run came to: the report's last line and its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Complete, and every criterion held.
    Pass,
    /// Complete, and a criterion did not hold.
    Fail,
    /// Complete, nothing failed, but a comparison could show neither a
    /// regression nor its absence.
    Inconclusive,
    /// Stopped by a signal before its budget: not judged.
    Interrupted,
    /// A log could not be written, so the run was ended: not judged.
    #[serde(rename = "run failed")]
    RunFailed,
}

/// A signal's name: `SIGINT`.
pub fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

impl Report {
    /// Puts the p50 against this host's floor, from a calibration (no
    /// replies, no p50: nothing to compare).
    fn compare_with_floor(&mut self, c: Option<&synapse_engine::floor::Calibration>) {
        let kind = self.floor_kind();
        self.floor = c
            .zip(self.summary.rtt_ns.as_ref())
            .and_then(|(c, rtt)| FloorComparison::of(c, rtt.p50, kind));
    }

    /// Which floor this run is held against.
    fn floor_kind(&self) -> FloorKind {
        let c = &self.config;
        let o = &c.settings;
        let tcp = o.transport == synapse_engine::Transport::Tcp;
        FloorKind::of(
            RunMode::of(tcp, c.busy_poll, o.connect_each),
            c.interval_ns.is_some(),
            c.cpu,
            c.reflector_cpu,
            !synapse_engine::socket::is_this_host(c.server.ip()),
        )
    }
}

impl EffectiveConfig {
    fn new(plan: &ClientPlan, server: SocketAddr, local: SocketAddr, o: &ClientOutcome) -> Self {
        let p = &o.placement;
        Self {
            settings: plan.settings.clone(),
            mode: match plan.target {
                Target::Loopback => "loopback",
                Target::Remote(_) => "client",
            },
            server,
            local,
            bind: plan.bind,
            packets: plan.packets,
            size: plan.wire_size(),
            cpu: p.cpu,
            reflector_cpu: (plan.target == Target::Loopback).then_some(plan.reflector_thread.cpu),
            cpu_auto: p.cpu_auto,
            busy_poll: plan.thread.busy_poll,
            timestamps: o.stamping.source.name(),
            timestamps_note: o.stamping.note.clone(),
            protocol: if plan.settings.stamp { "stamp" } else { "echo" },
            pattern: plan.settings.pattern.name(),
            interval_ns: plan.settings.schedule.map(|s| s.interval_ns()),
            warmup: plan.settings.warmup,
            rt_requested: plan.thread.rt,
            realtime: p.realtime,
            kept_awake: p.kept_awake,
            profile: plan.profile.name.clone(),
            config_file: plan
                .profile
                .config_path
                .exists()
                .then(|| plan.profile.config_path.display().to_string()),
        }
    }
}
