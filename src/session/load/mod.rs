//! A load run's session (`--load`): the reflector's load session asked
//! for first (its grant says which port answers STAMP), then the paced
//! probes (a [`ClientSession`] like any other), and the conductor that
//! runs the phases on a thread of its own. On loopback it brings its own
//! reflector and load server.
//!
//! To a front end it is a [`ClientFeed`] like any client: records drain
//! as they come, and its [`ClientFinish`] carries the load's outcome.

mod conductor;
mod probes;

pub use conductor::now_ns;
pub use probes::PhasedPoints;

use super::client::{ClientFeed, ClientFinish, ClientSession};
use super::load_live::LoadLive;
use super::load_outcome::LoadOutcome;
use super::loopback::Loopback;
use super::{LogOutcome, Opening, open_log};
use crate::error::AppError;
use crate::packet_log::RunningLog;
use crate::plan::{ClientPlan, LoadSettings, Target};
use conductor::{Conductor, ConductorEnd};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use synapse_engine::load::{
    Grant, LoadClient, LoadClientConfig, LoadServerConfig, LoadServerRun, start_load_server,
};
use synapse_engine::{StampingInfo, StopFlag};
use synapse_stats::{Record, Shape};

/// Rows the phased log's ring holds (over ten minutes of probes at 10 ms).
const LOG_RING: usize = 1 << 16;

/// The in-process reflector and load server of `synapse --load`.
#[derive(Debug)]
struct Local {
    reflector: Loopback,
    load: LoadServerRun,
}

/// A running load run.
#[derive(Debug)]
pub struct LoadSession {
    probes: ClientSession,
    conductor: Option<JoinHandle<ConductorEnd>>,
    live: Arc<Mutex<LoadLive>>,
    local: Option<Local>,
    log: Option<RunningLog>,
    grant: Grant,
    load_port: SocketAddr,
    stop: StopFlag,
    probe_plan: ClientPlan,
}

/// Starts this host's reflector (STAMP) and load server on loopback.
fn start_local(plan: &ClientPlan) -> Result<Local, AppError> {
    let reflector = Loopback::start(plan)?;
    let mut cfg = LoadServerConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    cfg.stamp_port = Some(reflector.local().port());
    cfg.key = plan.stamp_key.clone();
    let load = match start_load_server(cfg, StopFlag::new()) {
        Ok(l) => l,
        Err(e) => {
            reflector.stop();
            return Err(e.into());
        }
    };
    Ok(Local { reflector, load })
}

impl Local {
    fn stop(self) {
        self.load.stop();
        let mut load = self.load;
        let _ = load.join();
        self.reflector.stop();
    }
}

/// Asks the reflector's load server for a session.
fn connect(
    plan: &ClientPlan,
    load: &LoadSettings,
    port: SocketAddr,
) -> Result<LoadClient, AppError> {
    Ok(LoadClient::connect(LoadClientConfig {
        server: port,
        bind: plan.bind.map(|b| b.ip()),
        key: plan.stamp_key.clone(),
        seconds: load.seconds(),
        streams: load.most_streams(),
        cc: load.cc.clone(),
        avoid_cpu: Some(plan.thread.cpu),
    })?)
}

impl LoadSession {
    /// Starts the load run `plan` asks for. `stop` (Ctrl-C) ends it with
    /// the phases so far.
    pub fn start(plan: &ClientPlan, stop: StopFlag) -> Result<Self, AppError> {
        let Some(load) = plan.settings.load.clone() else {
            return Err(AppError::Usage("not a load run".into()));
        };
        // Opened first: a bad path fails before anything runs.
        let file = open_log(plan.log.as_deref(), plan.log_opening)?;
        let local = match plan.target {
            Target::Loopback => Some(start_local(plan)?),
            Target::Remote(_) => None,
        };
        let port = match (&local, plan.target) {
            (Some(l), _) => l.load.local,
            (None, Target::Remote(a)) => SocketAddr::new(a.ip(), load.port),
            (None, Target::Loopback) => unreachable!("loopback starts its own"),
        };
        let started = Self::start_with(plan, &load, port, local.as_ref(), file, stop);
        match started {
            Ok(mut s) => {
                s.local = local;
                Ok(s)
            }
            Err(e) => {
                if let Some(l) = local {
                    l.stop();
                }
                Err(e)
            }
        }
    }

    fn start_with(
        plan: &ClientPlan,
        load: &LoadSettings,
        port: SocketAddr,
        local: Option<&Local>,
        file: Option<crate::packet_log::PacketLog>,
        stop: StopFlag,
    ) -> Result<Self, AppError> {
        let client = connect(plan, load, port)?;
        let grant = client.grant.clone();
        let mut probe_plan = plan.probing(grant.stamp);
        probe_plan.log = None;
        let probe_stop = StopFlag::new();
        let against = local.map(|l| l.reflector.local());
        let mut probes =
            ClientSession::start(&probe_plan, against, Opening::New, probe_stop.clone())?;
        let points = probes
            .take_points()
            .ok_or_else(|| AppError::Usage("a load run needs its probes' points".into()))?;
        let (log_ring, log) = match file {
            Some(f) => {
                let (tx, rx) = rtrb::RingBuffer::new(LOG_RING);
                (Some(tx), Some(f.start(vec![rx])?))
            }
            None => (None, None),
        };
        let live = Arc::new(Mutex::new(LoadLive::default()));
        let c = Conductor::new(
            client,
            load.clone(),
            plan.settings.timeout,
            points,
            log_ring,
            stop.clone(),
            probe_stop,
            Arc::clone(&live),
        );
        let conductor = std::thread::Builder::new()
            .name("synapse-load-conductor".into())
            .spawn(move || c.run())?;
        Ok(Self {
            probes,
            conductor: Some(conductor),
            live,
            local: None,
            log,
            grant,
            load_port: port,
            stop,
            probe_plan,
        })
    }

    /// The run as it stands, for the live display and the progress line.
    pub fn live(&self) -> LoadLive {
        self.live.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Waits for the conductor and the probes, stops what the session
    /// started, and flushes the log.
    pub fn finish(mut self, each: &mut dyn FnMut(&Record)) -> ClientFinish {
        let end = self.conductor.take().and_then(|c| c.join().ok());
        let mut finish = self.probes.finish(each);
        if let Some(l) = self.local.take() {
            l.stop();
        }
        let dropped = end.as_ref().map_or(0, |e| e.log_dropped);
        finish.log = self.log.take().map(|l| LogOutcome::of(l, dropped));
        finish.load = end.map(|e| LoadOutcome {
            figures: e.figures,
            records: e.records,
            probes: e.probes,
            origin_ns: e.origin_ns,
            grant: self.grant.clone(),
            load_port: self.load_port,
            failure: e.failure,
            refused: e.refused,
            interrupted: e.interrupted,
            probe_plan: self.probe_plan.clone(),
        });
        finish
    }
}

impl ClientFeed for LoadSession {
    fn server(&self) -> SocketAddr {
        self.probes.server()
    }

    fn local(&self) -> SocketAddr {
        self.probes.local()
    }

    fn stamping(&self) -> &StampingInfo {
        self.probes.stamping()
    }

    fn shape(&self) -> Shape {
        self.probes.shape()
    }

    fn drain(&mut self, each: &mut dyn FnMut(&Record)) {
        ClientSession::drain(&mut self.probes, each);
    }

    fn ring_overflow(&self) -> u64 {
        self.probes.ring_overflow()
    }

    fn is_finished(&self) -> bool {
        self.conductor.as_ref().is_none_or(JoinHandle::is_finished) && self.probes.is_finished()
    }

    fn log_failure(&self) -> Option<String> {
        self.log.as_ref().and_then(RunningLog::failure)
    }

    fn stop(&self) {
        self.stop.raise();
    }

    fn finish(self: Box<Self>, each: &mut dyn FnMut(&Record)) -> ClientFinish {
        LoadSession::finish(*self, each)
    }

    fn load(&self) -> Option<LoadLive> {
        Some(self.live())
    }
}
