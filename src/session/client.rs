//! A client session: the client thread, the in-process reflector it
//! measures when the target is loopback, and the per-packet log.

use super::loopback::Loopback;
use super::{LogOutcome, Opening, RING_CAPACITY, open_log};
use crate::error::AppError;
use crate::packet_log::RunningLog;
use crate::plan::{ClientPlan, Target};
use std::net::SocketAddr;
use synapse_engine::{ClientOutcome, ClientRun, EngineError, StampingInfo, StopFlag, start_client};
use synapse_stats::{Record, Shape};

/// A running client and what it brought along.
#[derive(Debug)]
pub struct ClientSession {
    run: ClientRun,
    /// The in-process reflector, when this session started one.
    reflector: Option<Loopback>,
    log: Option<RunningLog>,
    server: SocketAddr,
}

/// What a finished client session hands back.
#[derive(Debug)]
pub struct ClientFinish {
    /// The run's outcome, or why it failed.
    pub outcome: Result<ClientOutcome, EngineError>,
    /// The address measured.
    pub server: SocketAddr,
    /// The client's own address.
    pub local: SocketAddr,
    /// The per-packet log, if one was written.
    pub log: Option<LogOutcome>,
}

impl ClientSession {
    /// Starts what `plan` asks for. `against` is a reflector that is
    /// already running (the live display keeps its own across role
    /// switches); without one, a loopback plan starts its own.
    pub fn start(
        plan: &ClientPlan,
        against: Option<SocketAddr>,
        log: Opening,
        stop: StopFlag,
    ) -> Result<Self, AppError> {
        // Opened first: a bad path fails before anything runs.
        let file = open_log(plan.log.as_deref(), log)?;
        let reflector = match (against, plan.target) {
            (None, Target::Loopback) => Some(Loopback::start(plan)?),
            _ => None,
        };
        let server = match (against, &reflector, plan.target) {
            (Some(a), _, _) => a,
            (None, Some(r), _) => r.local(),
            (None, None, Target::Remote(a)) => a,
            (None, None, Target::Loopback) => unreachable!("loopback starts a reflector"),
        };
        let mut run = match start_client(plan.client_config(server, RING_CAPACITY), stop) {
            Ok(run) => run,
            Err(e) => {
                if let Some(r) = reflector {
                    r.stop();
                }
                return Err(e.into());
            }
        };
        let log = match (file, run.points.take()) {
            (Some(file), Some(points)) => Some(file.start(vec![points])?),
            _ => None,
        };
        Ok(Self {
            run,
            reflector,
            log,
            server,
        })
    }

    /// The address measured.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// The client's own address.
    pub fn local(&self) -> SocketAddr {
        self.run.local
    }

    /// How the run stamps its packets.
    pub fn stamping(&self) -> &StampingInfo {
        &self.run.stamping
    }

    /// What the run's statistics hold.
    pub fn shape(&self) -> Shape {
        self.run.shape
    }

    /// Hands every record that arrived since the last call to `each`.
    pub fn drain(&mut self, mut each: impl FnMut(&Record)) {
        while let Ok(r) = self.run.records.pop() {
            each(&r);
        }
    }

    /// Records the live view missed because its ring was full.
    pub fn ring_overflow(&self) -> u64 {
        self.run.ring_overflow()
    }

    /// Whether the run has ended (budget spent, stopped, or failed).
    pub fn is_finished(&self) -> bool {
        self.run.is_finished()
    }

    /// Why the per-packet log stopped being written, as soon as it has.
    pub fn log_failure(&self) -> Option<String> {
        self.log.as_ref().and_then(RunningLog::failure)
    }

    /// Asks the run to end after its current packet.
    pub fn stop(&self) {
        self.run.stop();
    }

    /// Waits for the run to end, hands the last records to `each`, stops
    /// the reflector it brought, and lets the log writer drain and flush.
    pub fn finish(mut self, each: impl FnMut(&Record)) -> ClientFinish {
        let outcome = self.run.join();
        self.drain(each);
        if let Some(r) = self.reflector.take() {
            r.stop();
        }
        let dropped = outcome.as_ref().map_or(0, |o| o.log_overflow);
        let log = self.log.take().map(|l| LogOutcome::of(l, dropped));
        ClientFinish {
            outcome,
            server: self.server,
            local: self.run.local,
            log,
        }
    }
}
