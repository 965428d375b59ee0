//! The conductor of a load run, on a thread of its own: it runs the
//! phases in turn (idle between them), opens the load's streams as the
//! IETF rule says, reads every probe's points off the measurement
//! thread's ring, tags each with its phase, and writes the per-packet
//! log. The measurement thread only sends and receives probes.

use super::probes::{PhasedPoints, probe, sent_at};
use crate::plan::LoadSettings;
use crate::session::load_live::{LiveLoad, LivePoint, LoadLive};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use synapse_engine::load::{LoadClient, LoadSample};
use synapse_engine::{EngineError, Points, StopFlag};
use synapse_stats::load::phase::Retransmits;
use synapse_stats::load::saturation::{INTERVAL_NS, Saturation};
use synapse_stats::load::{
    Goodput, LoadFigures, LoadInterval, PhaseEnd, PhaseKind, PhaseRecord, Probe, Way, stages,
};

/// How often the conductor wakes: to read the probes' ring, to look at
/// the load and the stop flag.
const TICK: Duration = Duration::from_millis(100);

/// What a finished conductor hands back.
#[derive(Debug)]
pub struct ConductorEnd {
    /// The figures, phase by phase.
    pub figures: LoadFigures,
    /// The phases as they ran.
    pub records: Vec<PhaseRecord>,
    /// Every probe, in the order they left.
    pub probes: Vec<Probe>,
    /// The run's start on the probes' clock, ns.
    pub origin_ns: u64,
    /// What broke the load off, if something did.
    pub failure: Option<String>,
    /// The reflector refused it (a limit, a congestion control it lacks).
    pub refused: bool,
    /// Stopped by Ctrl-C or a signal.
    pub interrupted: bool,
    /// Log rows its ring had no room for.
    pub log_dropped: u64,
}

/// The realtime clock, ns: the probes' T1 are read on it.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The phases in order, an idle one before, between and after.
pub fn schedule(loads: &[PhaseKind]) -> Vec<PhaseKind> {
    let mut all = vec![PhaseKind::Idle];
    for &l in loads {
        all.extend([l, PhaseKind::Idle]);
    }
    all
}

/// Everything the conductor holds.
pub struct Conductor {
    pub client: LoadClient,
    pub settings: LoadSettings,
    pub timeout: Duration,
    pub points: rtrb::Consumer<Points>,
    pub log: Option<rtrb::Producer<PhasedPoints>>,
    pub stop: StopFlag,
    pub probe_stop: StopFlag,
    pub live: Arc<Mutex<LoadLive>>,
    pub origin_ns: u64,
    probes: Vec<Probe>,
    records: Vec<PhaseRecord>,
    current: (PhaseKind, u64),
    /// Answered probes' round trips since the last interval.
    fresh: Vec<u64>,
    log_dropped: u64,
    refused: bool,
}

/// One interval of a loaded phase as the conductor keeps it.
struct KeptInterval {
    end_ns: u64,
    secs: f64,
    down: u64,
    up: u64,
    /// The load connections' round trips read in it, ns.
    loaded: Vec<u64>,
}

/// A loaded phase's intervals as the conductor keeps them.
#[derive(Default)]
struct Kept {
    intervals: Vec<KeptInterval>,
}

impl Conductor {
    /// A conductor for a granted session and a running probe client.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: LoadClient,
        settings: LoadSettings,
        timeout: Duration,
        points: rtrb::Consumer<Points>,
        log: Option<rtrb::Producer<PhasedPoints>>,
        stop: StopFlag,
        probe_stop: StopFlag,
        live: Arc<Mutex<LoadLive>>,
    ) -> Self {
        let origin_ns = now_ns();
        Self {
            client,
            settings,
            timeout,
            points,
            log,
            stop,
            probe_stop,
            live,
            origin_ns,
            probes: Vec::new(),
            records: Vec::new(),
            current: (PhaseKind::Idle, origin_ns),
            fresh: Vec::new(),
            log_dropped: 0,
            refused: false,
        }
    }

    /// Runs every phase, then ends the probes: the figures.
    pub fn run(mut self) -> ConductorEnd {
        let plan = schedule(&self.settings.phases);
        let (mut failure, mut interrupted) = (None, false);
        for (i, &kind) in plan.iter().enumerate() {
            if self.stop.is_raised() {
                interrupted = true;
                break;
            }
            self.show_phase(i, plan.len(), kind);
            let after_load = i > 0 && plan[i - 1].loaded();
            let rec = if kind.loaded() {
                self.loaded(kind)
            } else {
                self.idle(after_load)
            };
            let end = rec.end.clone();
            self.records.push(rec);
            match end {
                PhaseEnd::Interrupted => {
                    interrupted = true;
                    break;
                }
                PhaseEnd::Failed(why) => {
                    failure = Some(format!("{} phase: {why}", kind.name()));
                    break;
                }
                _ => {}
            }
        }
        self.client.close();
        self.finish_probes(interrupted);
        self.probes.sort_by_key(|p| p.at_ns);
        let figures = LoadFigures::of(&self.probes, &self.records, self.origin_ns);
        if let Ok(mut l) = self.live.lock() {
            l.done = true;
            l.failure.clone_from(&failure);
        }
        ConductorEnd {
            figures,
            records: self.records,
            probes: self.probes,
            origin_ns: self.origin_ns,
            failure,
            refused: self.refused,
            interrupted,
            log_dropped: self.log_dropped,
        }
    }

    fn show_phase(&mut self, i: usize, total: usize, kind: PhaseKind) {
        let now = now_ns();
        self.current = (kind, now);
        if let Ok(mut l) = self.live.lock() {
            l.phase = Some((i + 1, total, kind, self.secs(now)));
            l.stages.clear();
            l.stable = false;
            if !kind.loaded() {
                l.streams = (0, 0);
                l.goodput = Goodput::default();
            }
        }
    }

    fn secs(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.origin_ns) as f64 / 1e9
    }

    /// The phase a probe sent at `at_ns` left in.
    fn phase_at(&self, at_ns: u64) -> PhaseKind {
        self.records
            .iter()
            .rev()
            .find(|r| r.holds(at_ns))
            .map_or(self.current.0, |r| r.kind)
    }

    /// Reads the probes' ring: each probe kept, logged with its phase, and
    /// shown.
    fn drain(&mut self) {
        let mut shown = Vec::new();
        while let Ok(p) = self.points.pop() {
            let at = sent_at(&p).unwrap_or(0);
            let phase = self.phase_at(at);
            if let Some(log) = self.log.as_mut()
                && log.push(PhasedPoints { points: p, phase }).is_err()
            {
                self.log_dropped += 1;
            }
            let Some(pr) = probe(&p) else { continue };
            if let Some(rtt) = pr.rtt_ns {
                self.fresh.push(rtt);
            }
            shown.push(LivePoint {
                t_s: self.secs(pr.at_ns),
                rtt_ns: pr.rtt_ns,
                phase,
            });
            self.probes.push(pr);
        }
        if let Ok(mut l) = self.live.lock() {
            shown.into_iter().for_each(|p| l.push(p));
        }
    }

    /// One tick: a wait, and the ring read.
    fn tick(&mut self) {
        std::thread::sleep(TICK);
        self.drain();
    }

    /// An idle phase: its length, its first part left out after a load
    /// (the queues drain).
    fn idle(&mut self, after_load: bool) -> PhaseRecord {
        let start = now_ns();
        let until = start + self.settings.idle.as_nanos() as u64;
        let mut end = PhaseEnd::Time;
        while now_ns() < until {
            if self.stop.is_raised() {
                end = PhaseEnd::Interrupted;
                break;
            }
            self.tick();
        }
        let mut rec = PhaseRecord::new(PhaseKind::Idle, start, now_ns());
        if after_load {
            rec.measured_from_ns = start + self.settings.settle.as_nanos() as u64;
        }
        rec.end = end;
        rec
    }

    /// The congestion control of a phase's senders: the one asked for,
    /// else the reflector's own (downloads) and this host's (uploads).
    fn congestion_control(&self, kind: PhaseKind) -> String {
        if let Some(cc) = &self.settings.cc {
            return cc.clone();
        }
        let (theirs, ours) = (&self.client.grant.cc, synapse_engine::load::default_cc());
        match kind {
            PhaseKind::Upload => ours,
            PhaseKind::Bidirectional if *theirs != ours => format!("{theirs} down, {ours} up"),
            _ => theirs.clone(),
        }
    }

    /// Notes an engine error as a phase's end: a refusal is the
    /// reflector's word (the run's exit says so), anything else a failure.
    fn failed(&mut self, e: &EngineError) -> PhaseEnd {
        if matches!(e, EngineError::LoadRefused { .. }) {
            self.refused = true;
        }
        PhaseEnd::Failed(e.to_string())
    }

    /// Opens one stream each of `ways`.
    fn open(&mut self, ways: &[Way]) -> Result<(), PhaseEnd> {
        for &w in ways {
            if let Err(e) = self.client.add_stream(w) {
                return Err(self.failed(&e));
            }
        }
        Ok(())
    }

    /// A loaded phase: streams added by the IETF rule (or fixed), until
    /// goodput and latency are stable or the cap is reached.
    fn loaded(&mut self, kind: PhaseKind) -> PhaseRecord {
        let start = now_ns();
        let mut rec = PhaseRecord::new(kind, start, start);
        rec.cc = Some(self.congestion_control(kind));
        let cap = self.settings.cap;
        let mut sat = Saturation::new(kind, self.settings.streams);
        let begun = match self.client.begin(kind, cap.as_secs_f64().ceil() as u32) {
            Ok(()) => self.open(&sat.opening()),
            Err(e) => Err(self.failed(&e)),
        };
        self.fresh.clear();
        let mut kept = Kept::default();
        let (end, last) = match begun {
            Err(end) => (end, LoadSample::default()),
            Ok(()) => self.drive(kind, &mut sat, &mut kept, &mut rec, start),
        };
        let info = self.client.end();
        rec.end_ns = now_ns();
        if kind.ways().contains(&Way::Down) {
            rec.retransmits_down = info.ok().map(|i| Retransmits {
                segments: i.retrans,
                bytes: i.bytes_retrans,
            });
        }
        if kind.ways().contains(&Way::Up) {
            rec.retransmits_up = Some(Retransmits {
                segments: last.up_retrans,
                bytes: last.up_bytes_retrans,
            });
        }
        settle_measured(&mut rec, &sat, &kept);
        rec.end = end;
        rec
    }

    /// A loaded phase's intervals, until it ends: how, and the load's
    /// last sample.
    fn drive(
        &mut self,
        kind: PhaseKind,
        sat: &mut Saturation,
        kept: &mut Kept,
        rec: &mut PhaseRecord,
        start: u64,
    ) -> (PhaseEnd, LoadSample) {
        let cap_ns = self.settings.cap.as_nanos() as u64;
        let (mut mark, mut before) = (start, LoadSample::default());
        loop {
            self.tick();
            let sample = self.client.sample();
            if self.stop.is_raised() {
                return (PhaseEnd::Interrupted, sample);
            }
            if let Some(why) = &sample.problem {
                self.refused |= sample.refused;
                return (PhaseEnd::Failed(why.clone()), sample);
            }
            let now = now_ns();
            if now.saturating_sub(mark) >= INTERVAL_NS {
                match self.interval(kind, sat, (mark, now), (&before, &sample), kept, rec) {
                    Ok(true) => return (PhaseEnd::Stable, sample),
                    Ok(false) => {}
                    Err(end) => return (end, sample),
                }
                mark = now;
                before = sample.clone();
            }
            if now.saturating_sub(start) >= cap_ns {
                return (PhaseEnd::Cap, sample);
            }
        }
    }

    /// One interval of a loaded phase: goodput each way, the probes and
    /// the load connections' round trips in it, fed to the rule; streams
    /// added as it says. `Ok(true)`: the phase is done.
    fn interval(
        &mut self,
        kind: PhaseKind,
        sat: &mut Saturation,
        (from, to): (u64, u64),
        (before, now): (&LoadSample, &LoadSample),
        kept: &mut Kept,
        rec: &mut PhaseRecord,
    ) -> Result<bool, PhaseEnd> {
        let secs = (to - from) as f64 / 1e9;
        let down = now.down_bytes.saturating_sub(before.down_bytes);
        let up = now.up_bytes.saturating_sub(before.up_bytes);
        let mut loaded: Vec<u64> = now
            .up_rtt_us
            .iter()
            .map(|&us| u64::from(us) * 1_000)
            .collect();
        // The reflector's senders, as it last said (asked on a thread of
        // the load's own: under a full queue its answer can take seconds).
        if kind.ways().contains(&Way::Down)
            && let Some(info) = self.client.remote()
        {
            loaded.extend(info.rtt_us.iter().map(|&us| u64::from(us) * 1_000));
        }
        let per_interval = |b: u64| (b as f64 / secs) as u64;
        let foreign = std::mem::take(&mut self.fresh);
        let step = sat.interval(
            &[(Way::Down, per_interval(down)), (Way::Up, per_interval(up))],
            foreign,
            loaded.clone(),
        );
        self.open(&step.add)?;
        let has = |w| kind.ways().contains(&w);
        let goodput = Goodput {
            down: has(Way::Down).then(|| down as f64 * 8.0 / secs),
            up: has(Way::Up).then(|| up as f64 * 8.0 / secs),
        };
        let streams = (sat.streams(Way::Down), sat.streams(Way::Up));
        rec.intervals.push(LoadInterval {
            end_ns: to,
            goodput_bps: goodput,
            streams_down: streams.0,
            streams_up: streams.1,
        });
        kept.intervals.push(KeptInterval {
            end_ns: to,
            secs,
            down,
            up,
            loaded,
        });
        self.show_interval(kind, goodput, streams, step.goodput_stable, rec.start_ns);
        Ok(step.done)
    }

    /// The live view after an interval: the load, and the phase's stage
    /// split so far over the last idle phase.
    fn show_interval(
        &mut self,
        kind: PhaseKind,
        goodput: Goodput,
        streams: (u32, u32),
        stable: bool,
        start: u64,
    ) {
        let so_far = PhaseRecord::new(kind, start, now_ns());
        let idle = self
            .records
            .iter()
            .rev()
            .find(|r| r.kind == PhaseKind::Idle);
        let shown = stages::shown(&self.probes, &so_far, false);
        let split = stages::inflation(&self.probes, &so_far, idle, None, &shown);
        let t_s = self.secs(now_ns());
        if let Ok(mut l) = self.live.lock() {
            l.goodput = goodput;
            l.streams = streams;
            l.stable = stable;
            l.stages = split;
            l.load.push(LiveLoad {
                t_s,
                goodput,
                phase: kind,
            });
        }
    }

    /// After the last phase: the probes still in flight are given their
    /// timeout (unless stopped), then the probe client is stopped and its
    /// ring read to the end.
    fn finish_probes(&mut self, interrupted: bool) {
        let until = now_ns() + self.timeout.min(Duration::from_secs(3)).as_nanos() as u64;
        while !interrupted && !self.stop.is_raised() && now_ns() < until {
            self.tick();
        }
        self.probe_stop.raise();
        let deadline = now_ns() + 5_000_000_000;
        while !self.points.is_abandoned() && now_ns() < deadline {
            self.tick();
        }
        self.drain();
    }
}

/// A loaded phase's measured part (its stable intervals, or its last MAD),
/// the goodput and the load connections' round trips over it, and the
/// rule's confidence.
fn settle_measured(rec: &mut PhaseRecord, sat: &Saturation, kept: &Kept) {
    let k = sat.measured_from().min(kept.intervals.len());
    rec.measured_from_ns = match k {
        0 => rec.start_ns,
        k => kept.intervals[k - 1].end_ns,
    };
    let part = &kept.intervals[k..];
    let secs: f64 = part.iter().map(|i| i.secs).sum();
    let has = |w| rec.kind.ways().contains(&w);
    if secs > 0.0 {
        let bits =
            |f: fn(&KeptInterval) -> u64| part.iter().map(f).sum::<u64>() as f64 * 8.0 / secs;
        rec.goodput_bps = Goodput {
            down: has(Way::Down).then(|| bits(|i| i.down)),
            up: has(Way::Up).then(|| bits(|i| i.up)),
        };
    }
    rec.loaded_rtt_ns = part.iter().flat_map(|i| i.loaded.iter().copied()).collect();
    rec.confidence = Some((sat.goodput_confidence(), sat.latency_confidence()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_load_phase_has_idle_either_side() {
        use PhaseKind::*;
        assert_eq!(
            schedule(&[Download, Upload]),
            vec![Idle, Download, Idle, Upload, Idle]
        );
        assert_eq!(schedule(&[]), vec![Idle]);
    }
}
