//! Starting a measurement from a plan: the in-process reflector when the
//! target is loopback, then the client. Shared by the headless runner and
//! the live display so both measure the same way.

use crate::engine::{
    ClientOutcome, ClientRun, Protocol, ReflectorRun, StopFlag, start_client, start_reflector,
};
use crate::error::AppError;
use crate::plan::{ClientPlan, Target, counterpart_server};
use std::net::SocketAddr;

/// Records the ring holds for a live consumer: over half a second at 100 k
/// packets/s (a UI frame is 33 ms, the headless poll 100 ms), in 4.5 MiB
/// of 72-byte records, so memory stays flat.
pub const RING_CAPACITY: usize = 1 << 16;

/// A client run and, for loopback, the reflector it measures.
#[derive(Debug)]
pub struct Measurement {
    /// The client thread.
    pub client: ClientRun,
    /// The in-process reflector, if any.
    pub reflector: Option<ReflectorRun>,
    /// The address being measured.
    pub server: SocketAddr,
}

impl Measurement {
    /// Starts everything the plan asks for. `stop` ends the client.
    pub fn start(
        plan: &ClientPlan,
        stop: StopFlag,
        ring_capacity: usize,
    ) -> Result<Self, AppError> {
        let reflector = match plan.target {
            Target::Loopback => {
                let mut cfg = counterpart_server(plan)
                    .reflector_config(SocketAddr::from(([127, 0, 0, 1], 0)));
                if plan.stamp {
                    cfg.protocol = Protocol::Stamp;
                }
                Some(start_reflector(cfg, StopFlag::new())?)
            }
            Target::Remote(_) => None,
        };
        let server = match (&reflector, plan.target) {
            (Some(r), _) => r.local,
            (None, Target::Remote(addr)) => addr,
            (None, Target::Loopback) => unreachable!("loopback always starts a reflector"),
        };
        let client = start_client(plan.client_config(server, ring_capacity), stop);
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                if let Some(mut r) = reflector {
                    r.stop();
                    let _ = r.join();
                }
                return Err(e.into());
            }
        };
        Ok(Self {
            client,
            reflector,
            server,
        })
    }

    /// Waits for the client to end, then stops the reflector.
    pub fn finish(mut self) -> Result<(ClientOutcome, SocketAddr), AppError> {
        let local = self.client.local;
        let outcome = self.client.join();
        if let Some(mut r) = self.reflector {
            r.stop();
            let _ = r.join();
        }
        Ok((outcome?, local))
    }
}
