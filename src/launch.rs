//! Starting a measurement from a plan: the in-process reflector when the
//! target is loopback, then the client. Shared by the headless runner and
//! the live display so both measure the same way.

use crate::engine::{
    ClientConfig, ClientOutcome, ClientRun, ReflectorConfig, ReflectorRun, StopFlag, start_client,
    start_reflector,
};
use crate::error::AppError;
use crate::plan::{ClientPlan, Target};
use std::net::SocketAddr;
use std::time::Duration;

/// Records the ring holds for a live consumer: over a second at 100 k
/// packets/s (a UI frame is 33 ms), in 4 MiB, so memory stays flat.
pub const RING_CAPACITY: usize = 1 << 17;

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
            Target::Loopback => Some(start_reflector(
                ReflectorConfig {
                    bind: SocketAddr::from(([127, 0, 0, 1], 0)),
                    cpu: plan.reflector_thread.cpu,
                    cpu_auto: plan.reflector_thread.cpu_auto,
                    busy_poll: plan.reflector_thread.busy_poll,
                    rt: plan.reflector_thread.rt,
                    session_idle: Duration::from_secs(1),
                    ring_capacity: 1024,
                },
                StopFlag::new(),
            )?),
            Target::Remote(_) => None,
        };
        let server = match (&reflector, plan.target) {
            (Some(r), _) => r.local,
            (None, Target::Remote(addr)) => addr,
            (None, Target::Loopback) => unreachable!("loopback always starts a reflector"),
        };
        let client = start_client(
            ClientConfig {
                server,
                bind: plan.bind,
                packets: plan.packets,
                duration: plan.duration,
                warmup: plan.warmup,
                timeout: plan.timeout,
                size: plan.size,
                cpu: plan.thread.cpu,
                cpu_auto: plan.thread.cpu_auto,
                busy_poll: plan.thread.busy_poll,
                rt: plan.thread.rt,
                ring_capacity,
            },
            stop,
        );
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
