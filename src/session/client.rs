//! A client session: the client thread, the in-process reflector it
//! measures when the target is loopback, and the per-packet log.

use super::loopback::Loopback;
use super::{LogOutcome, Opening, RING_CAPACITY, open_log};
use crate::error::AppError;
use crate::packet_log::RunningLog;
use crate::plan::{ClientPlan, Target};
use std::net::SocketAddr;
use synapse_engine::{
    ClientOutcome, ClientRun, EngineError, PeerRecord, ResponderEntry, StampingInfo, StopFlag,
    start_client,
};
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
    /// A load run's outcome (`--load`).
    pub load: Option<super::load_outcome::LoadOutcome>,
    /// A multicast run: what its responders' ring still holds.
    pub responders: Option<rtrb::Consumer<PeerRecord>>,
}

/// What a front end reads of a running client: the engine's
/// ([`ClientSession`]), or in tests a recorded one, so a display can be
/// driven by scripted records with no thread, socket or sleep.
pub trait ClientFeed: std::fmt::Debug {
    /// The address measured.
    fn server(&self) -> SocketAddr;
    /// The client's own address.
    fn local(&self) -> SocketAddr;
    /// How the run stamps its packets.
    fn stamping(&self) -> &StampingInfo;
    /// What the run's statistics hold.
    fn shape(&self) -> Shape;
    /// Hands every record that arrived since the last call to `each`.
    fn drain(&mut self, each: &mut dyn FnMut(&Record));
    /// Records the live view missed because its ring was full.
    fn ring_overflow(&self) -> u64;
    /// A multicast run: each responder's records that arrived since the
    /// last call, with its index (a unicast run has none).
    fn drain_responders(&mut self, _each: &mut dyn FnMut(usize, &Record)) {}
    /// A multicast run: who each responder first heard since the last call
    /// is (a unicast run has none).
    fn responder_entries(&mut self, _each: &mut dyn FnMut(ResponderEntry)) {}
    /// Whether the run has ended (budget spent, stopped, or failed).
    fn is_finished(&self) -> bool;
    /// Why the per-packet log stopped being written, as soon as it has.
    fn log_failure(&self) -> Option<String>;
    /// Asks the run to end after its current packet.
    fn stop(&self);
    /// Waits for the run to end and hands the last records to `each`.
    fn finish(self: Box<Self>, each: &mut dyn FnMut(&Record)) -> ClientFinish;
    /// A load run's state as it stands (`None`: not a load run).
    fn load(&self) -> Option<super::load_live::LoadLive> {
        None
    }
}

impl ClientFeed for ClientSession {
    fn server(&self) -> SocketAddr {
        self.server
    }

    fn local(&self) -> SocketAddr {
        self.run.local
    }

    fn stamping(&self) -> &StampingInfo {
        &self.run.stamping
    }

    fn shape(&self) -> Shape {
        self.run.shape
    }

    fn drain(&mut self, each: &mut dyn FnMut(&Record)) {
        ClientSession::drain(self, each);
    }

    fn ring_overflow(&self) -> u64 {
        self.run.ring_overflow()
    }

    fn drain_responders(&mut self, each: &mut dyn FnMut(usize, &Record)) {
        ClientSession::drain_responders(self, each);
    }

    fn responder_entries(&mut self, each: &mut dyn FnMut(ResponderEntry)) {
        if let Some(ring) = self.run.responder_directory.as_mut() {
            while let Ok(e) = ring.pop() {
                each(e);
            }
        }
    }

    fn is_finished(&self) -> bool {
        self.run.is_finished()
    }

    fn log_failure(&self) -> Option<String> {
        self.log.as_ref().and_then(RunningLog::failure)
    }

    fn stop(&self) {
        self.run.stop();
    }

    fn finish(self: Box<Self>, each: &mut dyn FnMut(&Record)) -> ClientFinish {
        ClientSession::finish(*self, each)
    }
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
        // Without a file the points stay for whoever reads them (a load
        // run's conductor).
        let log = match (file, run.points.take(), run.responder_points.take()) {
            (Some(file), _, Some(group)) => Some(file.start(vec![group])?),
            (Some(file), Some(points), None) => Some(file.start(vec![points])?),
            (_, points, _) => {
                run.points = points;
                None
            }
        };
        Ok(Self {
            run,
            reflector,
            log,
            server,
        })
    }

    /// The ring of every probe's points, when the session kept one and
    /// wrote no log of its own (a load run reads it).
    pub fn take_points(&mut self) -> Option<rtrb::Consumer<synapse_engine::Points>> {
        self.run.points.take()
    }

    /// Hands every record that arrived since the last call to `each`.
    pub fn drain(&mut self, mut each: impl FnMut(&Record)) {
        while let Ok(r) = self.run.records.pop() {
            each(&r);
        }
    }

    /// A multicast run: hands each responder's records that arrived since
    /// the last call to `each`, with the responder's index.
    pub fn drain_responders(&mut self, mut each: impl FnMut(usize, &Record)) {
        if let Some(ring) = self.run.responders.as_mut() {
            while let Ok(r) = ring.pop() {
                each(r.peer as usize, &r.record);
            }
        }
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
            load: None,
            responders: self.run.responders.take(),
        }
    }
}
