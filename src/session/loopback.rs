//! The in-process reflector a loopback client measures (`synapse` with no
//! server address): UDP echo or STAMP, or TCP echo for `--tcp`, on
//! 127.0.0.1 at a port of the kernel's choosing. It speaks what the
//! client speaks, and lives as long as the client session.

use crate::error::AppError;
use crate::plan::{ClientPlan, counterpart_server};
use std::net::SocketAddr;
use synapse_engine::{
    Protocol, ReflectorRun, StopFlag, TcpEchoRun, Transport, start_reflector, start_tcp_echo,
};

/// The running loopback reflector.
#[derive(Debug)]
pub(super) enum Loopback {
    /// UDP echo, or STAMP.
    Udp(ReflectorRun),
    /// TCP echo.
    Tcp(TcpEchoRun),
}

impl Loopback {
    /// Starts the reflector `plan`'s client measures.
    pub fn start(plan: &ClientPlan) -> Result<Self, AppError> {
        let server = counterpart_server(plan);
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        if plan.settings.transport == Transport::Tcp {
            // Its port is the kernel's choice (the UDP echo's number, 0).
            let cfg = server
                .tcp_config(0)
                .ok_or_else(|| AppError::Usage("--tcp: no TCP echo to measure".into()))?;
            return Ok(Self::Tcp(start_tcp_echo(cfg, StopFlag::new())?));
        }
        let protocol = if plan.settings.stamp {
            Protocol::Stamp
        } else {
            Protocol::Echo
        };
        let cfg = server.reflector_config(any, protocol);
        Ok(Self::Udp(start_reflector(cfg, StopFlag::new())?))
    }

    /// Where it answers.
    pub fn local(&self) -> SocketAddr {
        match self {
            Self::Udp(r) => r.local,
            Self::Tcp(r) => r.local,
        }
    }

    /// Stops it and waits for its thread.
    pub fn stop(self) {
        match self {
            Self::Udp(mut r) => {
                r.stop();
                let _ = r.join();
            }
            Self::Tcp(mut r) => {
                r.stop();
                let _ = r.join();
            }
        }
    }
}
