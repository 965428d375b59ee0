//! A server session: the echo reflector, the STAMP reflector beside it, and
//! the log of every answer they give.

use super::{LogOutcome, open_log};
use crate::error::AppError;
use crate::hdr_log::HdrLogOutcome;
use crate::packet_log::{PacketLog, RunningLog, Tee};
use crate::plan::ServerPlan;
use crate::session::IntervalTap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use synapse_engine::AnswerPoints;
use synapse_engine::capabilities::Source;
use synapse_engine::load::{
    LoadEvent, LoadServerConfig, LoadServerRun, LoadServerTotals, start_load_server,
};
use synapse_engine::timestamping::Timestamping;
use synapse_engine::{
    EngineError, Membership, NicStamping, Protocol, ReflectorConfig, ReflectorEvent,
    ReflectorOutcome, ReflectorRun, StopFlag, TcpEchoOutcome, TcpEchoRun, start_reflector,
    start_tcp_echo,
};
use synapse_stats::intervals::{DWELL, RESPONSE};

/// Which reflector an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The echo reflector (or the in-process one a loopback client measures).
    Echo,
    /// The STAMP reflector on the STAMP port.
    Stamp,
}

/// Running reflectors and their log.
#[derive(Debug)]
pub struct ServerSession {
    echo: ReflectorRun,
    stamp: Option<ReflectorRun>,
    /// Why the STAMP reflector is not running, when it was asked for.
    pub stamp_refused: Option<String>,
    tcp: Option<TcpEchoRun>,
    /// Why the TCP echo reflector is not running, when it was asked for.
    pub tcp_refused: Option<String>,
    /// `--user`: who the server became once its ports were bound.
    pub became: Option<String>,
    log: Option<RunningLog>,
    /// `--hdr-log` without `--log`: a writer that only feeds the tee.
    tee_only: Option<RunningLog>,
    /// What the interval log came to, once its tee is dropped.
    hdr: Option<Arc<Mutex<Option<HdrLogOutcome>>>>,
    /// How the UDP reflectors stamp; holds the NIC's setting until the
    /// session is dropped.
    pub stamping: Timestamping,
    /// The load server (`--load-port`).
    load: Option<LoadServerRun>,
}

/// What a finished server session hands back.
#[derive(Debug)]
pub struct ServerFinish {
    /// The echo reflector's outcome.
    pub echo: Result<ReflectorOutcome, EngineError>,
    /// The STAMP reflector's, when it ran.
    pub stamp: Option<Result<ReflectorOutcome, EngineError>>,
    /// The TCP echo reflector's, when it ran.
    pub tcp: Option<Result<TcpEchoOutcome, EngineError>>,
    /// The answer log, if one was written.
    pub log: Option<LogOutcome>,
    /// The interval log (`--hdr-log`), if one was written.
    pub hdr_log: Option<HdrLogOutcome>,
    /// The load server's totals, when it ran.
    pub load: Option<Result<LoadServerTotals, EngineError>>,
}

impl ServerSession {
    /// Starts the reflectors `plan` asks for, the echo one on `bind`
    /// speaking `protocol`. A STAMP port that cannot be bound is not an
    /// error: `stamp_refused` says why, and echo goes on.
    pub fn start(
        plan: &ServerPlan,
        bind: SocketAddr,
        protocol: Protocol,
        stop: &StopFlag,
    ) -> Result<Self, AppError> {
        // Opened first: a bad path fails before anything binds.
        let file = open_log(plan.log.as_deref(), plan.log_opening)?;
        let tap = plan
            .hdr
            .hdr_log
            .as_deref()
            .map(|p| IntervalTap::open(Some(p), plan.hdr.hdr_interval, false, "synapse server"))
            .transpose()?;
        let bind = shared_port(plan, bind);
        let stamping = plan
            .timestamps
            .resolve_for(bind.ip(), plan.timestamps_option)?;
        let nic = |cfg: ReflectorConfig| ReflectorConfig {
            hardware: (stamping.source == Source::Hardware).then(|| NicStamping {
                clock: stamping.clock.clone(),
            }),
            ..cfg
        };
        let mut echo = start_reflector(nic(plan.reflector_config(bind, protocol)), stop.clone())?;
        let (mut stamp, stamp_refused) = match plan.stamp_config() {
            None => (None, None),
            Some(cfg) => match start_reflector(nic(cfg), stop.clone()) {
                Ok(run) => (Some(run), None),
                // A port the user named must be had; the default is a bonus.
                Err(e) if plan.stamp_required => {
                    echo.stop();
                    let _ = echo.join();
                    return Err(AppError::Usage(format!("--stamp-port: {e}")));
                }
                Err(e) => (
                    None,
                    Some(format!("STAMP not served ({e}); plain echo goes on")),
                ),
            },
        };
        let (tcp, tcp_refused) = match start_tcp(plan, echo.local, stop) {
            Ok(started) => started,
            Err(e) => {
                stop_started(&mut echo, stamp.as_mut(), None);
                return Err(e);
            }
        };
        let load = match start_load(plan, &echo, stamp.as_ref(), stop) {
            Ok(l) => l,
            Err(e) => {
                stop_started(&mut echo, stamp.as_mut(), tcp.as_ref());
                return Err(e);
            }
        };
        let rings: Vec<_> = [echo.responses.take()]
            .into_iter()
            .chain(stamp.as_mut().map(|s| s.responses.take()))
            .flatten()
            .collect();
        let hdr = tap.as_ref().map(|_| Arc::new(Mutex::new(None)));
        let tee = tap.zip(hdr.clone()).map(|(t, done)| answer_tee(t, done));
        let (log, tee_only) = match (file, tee) {
            (Some(file), tee) => (Some(file.start_teed(rings, tee)?), None),
            (None, Some(tee)) => (
                None,
                Some(PacketLog::discard().start_teed(rings, Some(tee))?),
            ),
            (None, None) => (None, None),
        };
        let mut session = Self {
            echo,
            stamp,
            stamp_refused,
            tcp,
            tcp_refused,
            became: None,
            log,
            tee_only,
            hdr,
            stamping,
            load,
        };
        if let Some(user) = &plan.user {
            match synapse_engine::become_user(user) {
                Ok((uid, gid)) => session.became = Some(format!("{user} (uid {uid}, gid {gid})")),
                Err(e) => {
                    stop.raise();
                    let _ = session.finish(|_, _| {});
                    return Err(AppError::Usage(format!("--user {user}: {e}")));
                }
            }
        }
        Ok(session)
    }

    /// Whether the TCP echo reflector is running.
    pub fn serves_tcp(&self) -> bool {
        self.tcp.is_some()
    }

    /// Where the echo reflector listens.
    pub fn echo_addr(&self) -> SocketAddr {
        self.echo.local
    }

    /// Where the STAMP reflector listens, when it runs.
    pub fn stamp_addr(&self) -> Option<SocketAddr> {
        self.stamp.as_ref().map(|s| s.local)
    }

    /// The multicast groups joined, the interface they were joined on
    /// (`None`: the route's), and which reflectors joined them.
    pub fn joined(&self) -> Option<(Vec<Membership>, Option<String>, Vec<Side>)> {
        let runs = [
            (Side::Echo, Some(&self.echo)),
            (Side::Stamp, self.stamp.as_ref()),
        ];
        let joined: Vec<_> = runs
            .into_iter()
            .filter_map(|(side, run)| run.filter(|r| !r.joined.is_empty()).map(|r| (side, r)))
            .collect();
        let (_, first) = joined.first()?;
        let sides = joined.iter().map(|(side, _)| *side).collect();
        Some((first.joined.clone(), first.join_interface.clone(), sides))
    }

    /// Where the TCP echo reflector listens, when it runs.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp.as_ref().map(|t| t.local)
    }

    /// Where the load server listens, when it runs.
    pub fn load_addr(&self) -> Option<SocketAddr> {
        self.load.as_ref().map(|l| l.local)
    }

    /// Hands every load event since the last call to `each`.
    pub fn drain_load(&mut self, mut each: impl FnMut(LoadEvent)) {
        if let Some(l) = &self.load {
            l.events.try_iter().for_each(&mut each);
        }
    }

    /// The answer log's file, when there is one.
    pub fn log_path(&self) -> Option<&std::path::Path> {
        self.log.as_ref().map(RunningLog::path)
    }

    /// Why the answer log stopped being written, as soon as it has.
    pub fn log_failure(&self) -> Option<String> {
        self.log.as_ref().and_then(RunningLog::failure)
    }

    /// Hands every event since the last call to `each`.
    pub fn drain(&mut self, mut each: impl FnMut(Side, ReflectorEvent)) {
        while let Ok(ev) = self.echo.events.pop() {
            each(Side::Echo, ev);
        }
        if let Some(s) = self.stamp.as_mut() {
            while let Ok(ev) = s.events.pop() {
                each(Side::Stamp, ev);
            }
        }
    }

    /// Whether a reflector thread has ended (a system call failed): the
    /// front end should end too, with its error, rather than sit silent.
    pub fn failed(&self) -> bool {
        self.echo.is_finished()
            || self.stamp.as_ref().is_some_and(ReflectorRun::is_finished)
            || self.tcp.as_ref().is_some_and(TcpEchoRun::is_finished)
            || self.load.as_ref().is_some_and(LoadServerRun::is_finished)
    }

    /// Stops both reflectors, hands their last events to `each`, and lets
    /// the log writer drain and flush.
    pub fn finish(mut self, mut each: impl FnMut(Side, ReflectorEvent)) -> ServerFinish {
        self.echo.stop();
        if let Some(s) = &self.stamp {
            s.stop();
        }
        if let Some(t) = &self.tcp {
            t.stop();
        }
        if let Some(l) = &self.load {
            l.stop();
        }
        let echo = self.echo.join();
        let stamp = self.stamp.as_mut().map(ReflectorRun::join);
        let tcp = self.tcp.as_mut().map(TcpEchoRun::join);
        let load = self.load.as_mut().map(LoadServerRun::join);
        self.drain(&mut each);
        let dropped = [Some(&echo), stamp.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|o| o.as_ref().ok())
            .map(|o| o.log_overflow)
            .sum();
        let log = self.log.take().map(|l| LogOutcome::of(l, dropped));
        if let Some(t) = self.tee_only.take() {
            let _ = t.finish();
        }
        let hdr_log = self
            .hdr
            .take()
            .and_then(|h| h.lock().ok().and_then(|mut o| o.take()));
        ServerFinish {
            echo,
            stamp,
            tcp,
            log,
            hdr_log,
            load,
        }
    }
}

/// The interval log's side of the answer log's writer: each answer's
/// response and dwell, at its receive time. When the writer is done the
/// tap is finished and says what the file holds.
struct AnswerTap {
    tap: Option<IntervalTap>,
    base_ns: u64,
    done: Arc<Mutex<Option<HdrLogOutcome>>>,
}

impl AnswerTap {
    fn see(&mut self, a: &AnswerPoints) {
        let (Some(tap), Some(t2)) = (self.tap.as_mut(), a.t2_driver) else {
            return;
        };
        let at = Duration::from_nanos(t2.saturating_sub(self.base_ns));
        if let Some(r) = a.response_ns() {
            tap.add(at, RESPONSE, r.max(1));
        }
        if let Some(t3) = a.t3_user {
            tap.add(at, DWELL, t3.saturating_sub(t2).max(1));
        }
    }
}

impl Drop for AnswerTap {
    fn drop(&mut self) {
        if let Some(tap) = self.tap.take() {
            let (outcome, _) = tap.finish();
            if let Ok(mut d) = self.done.lock() {
                *d = outcome;
            }
        }
    }
}

fn answer_tee(tap: IntervalTap, done: Arc<Mutex<Option<HdrLogOutcome>>>) -> Tee<AnswerPoints> {
    let base_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        .saturating_sub(tap.base().elapsed().as_nanos() as u64);
    let mut t = AnswerTap {
        tap: Some(tap),
        base_ns,
        done,
    };
    Box::new(move |a: &AnswerPoints| t.see(a))
}

/// Port 0 with TCP on the UDP port's number: a number both can have, so a
/// kernel's choice for UDP already held by some TCP socket does not leave
/// the server without TCP. When no probe succeeds, binding reports why.
fn shared_port(plan: &ServerPlan, bind: SocketAddr) -> SocketAddr {
    if bind.port() != 0 || plan.tcp_port != Some(0) {
        return bind;
    }
    synapse_engine::socket::port_free_for_udp_and_tcp(bind.ip())
        .map_or(bind, |port| SocketAddr::new(bind.ip(), port))
}

/// Starts the TCP echo reflector when the plan has one. A port the user
/// named must be had; the default (the UDP echo port's number) is a bonus.
fn start_tcp(
    plan: &ServerPlan,
    echo: SocketAddr,
    stop: &StopFlag,
) -> Result<(Option<TcpEchoRun>, Option<String>), AppError> {
    let Some(cfg) = plan.tcp_config(echo.port()) else {
        return Ok((None, None));
    };
    match start_tcp_echo(cfg, stop.clone()) {
        Ok(run) => Ok((Some(run), None)),
        Err(e) if plan.tcp_required => Err(AppError::Usage(format!("--tcp-port: {e}"))),
        Err(e) => Ok((
            None,
            Some(format!("TCP echo not served ({e}); UDP goes on")),
        )),
    }
}

/// Starts the load server when the plan has one: its clients are told the
/// echo and STAMP ports that answer beside it. A port that cannot be had
/// is an error: it was asked for.
fn start_load(
    plan: &ServerPlan,
    echo: &ReflectorRun,
    stamp: Option<&ReflectorRun>,
    stop: &StopFlag,
) -> Result<Option<LoadServerRun>, AppError> {
    let Some(cfg) = plan.load.clone() else {
        return Ok(None);
    };
    let cfg = LoadServerConfig {
        echo_port: Some(echo.local.port()),
        stamp_port: stamp.map(|s| s.local.port()),
        ..cfg
    };
    start_load_server(cfg, stop.clone())
        .map(Some)
        .map_err(|e| AppError::Usage(format!("--load-port: {e}")))
}

/// Stops the reflectors that started before a later one failed to.
fn stop_started(
    echo: &mut ReflectorRun,
    stamp: Option<&mut ReflectorRun>,
    tcp: Option<&TcpEchoRun>,
) {
    for r in [Some(echo), stamp].into_iter().flatten() {
        r.stop();
        let _ = r.join();
    }
    if let Some(t) = tcp {
        t.stop();
    }
}
