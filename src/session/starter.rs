//! What starts a front end's client runs: the engine's (a client
//! session, or a load run's for `--load`), or a recording in tests.

use super::client::{ClientFeed, ClientSession};
use super::load::LoadSession;
use crate::error::AppError;
use crate::packet_log::Opening;
use crate::plan::ClientPlan;
use std::net::SocketAddr;
use synapse_engine::StopFlag;

/// What starts a client's run in an engine: a plan, the reflector already
/// running (if any), how its log is opened.
type StartFn =
    dyn FnMut(&ClientPlan, Option<SocketAddr>, Opening) -> Result<Box<dyn ClientFeed>, AppError>;

/// Starts a front end's client runs: [`ClientSession::start`] in the
/// program ([`ClientStarter::engine`]); a recording in tests.
pub struct ClientStarter(Box<StartFn>);

impl ClientStarter {
    /// The engine's client, stopped by its own flag.
    pub fn engine() -> Self {
        Self::new(|plan, against, log| {
            if plan.settings.load.is_some() {
                let session = LoadSession::start(plan, StopFlag::new())?;
                return Ok(Box::new(session) as Box<dyn ClientFeed>);
            }
            let session = ClientSession::start(plan, against, log, StopFlag::new())?;
            Ok(Box::new(session) as Box<dyn ClientFeed>)
        })
    }

    /// Client runs started by `start`.
    pub fn new(
        start: impl FnMut(
            &ClientPlan,
            Option<SocketAddr>,
            Opening,
        ) -> Result<Box<dyn ClientFeed>, AppError>
        + 'static,
    ) -> Self {
        Self(Box::new(start))
    }

    /// Starts a run for `plan`.
    pub fn start(
        &mut self,
        plan: &ClientPlan,
        against: Option<SocketAddr>,
        log: Opening,
    ) -> Result<Box<dyn ClientFeed>, AppError> {
        (self.0)(plan, against, log)
    }
}

impl std::fmt::Debug for ClientStarter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientStarter")
    }
}
