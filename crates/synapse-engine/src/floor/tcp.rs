//! The loopback TCP round trip: Synapse's own TCP client and TCP echo,
//! pinned, over one connection on 127.0.0.1, as `synapse client --tcp` and
//! `synapse server` would run. Beside the UDP floor it shows what TCP's
//! stack adds to a request/response on this host.

use super::udp::{figure_of, placement};
use super::{Figure, LoopbackFloor};
use crate::reflector_admission::AllowList;
use crate::{
    ClientConfig, EngineError, StopFlag, TcpEchoConfig, Transport, start_client, start_tcp_echo,
};
use std::net::SocketAddr;
use std::time::Duration;

/// The round trip's median and 99th percentile, ns.
pub fn tcp_round_trip(f: LoopbackFloor) -> Result<Figure, EngineError> {
    let echo_stop = StopFlag::new();
    let mut echo = start_tcp_echo(
        TcpEchoConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            thread: placement(f.reflector_cpu, f.busy_poll),
            allow: AllowList::default(),
            per_source: 4,
            max_connections: 4,
        },
        echo_stop,
    )?;
    let mut cfg = ClientConfig::new(echo.local);
    cfg.transport = Transport::Tcp;
    cfg.packets = Some(f.packets);
    cfg.warmup = 1_000.min(f.packets);
    cfg.timeout = Duration::from_millis(200);
    cfg.thread = placement(f.client_cpu, f.busy_poll);
    cfg.timestamps = f.timestamps;
    cfg.ring_capacity = 1024;
    let outcome = start_client(cfg, StopFlag::new()).and_then(|mut c| c.join());
    echo.stop();
    let _ = echo.join();
    figure_of(&outcome?)
}
