//! The other role, for the live display's role switch: the reflector a
//! client becomes, the client a server becomes.

use super::client::client_plan;
use super::*;

/// An address a client can send to: the wildcard becomes loopback.
fn connectable(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

/// The reflector the live display runs when a client switches role: it
/// listens on the client's `--bind` address (or the wildcard) at the port
/// the client was measuring, so two hosts can swap roles. For loopback it
/// is the in-process reflector itself (port 0: keep whatever it has).
pub fn counterpart_server(c: &ClientPlan) -> ServerPlan {
    let bind = match c.target {
        Target::Loopback => SocketAddr::from(([127, 0, 0, 1], 0)),
        Target::Remote(peer) => {
            let ip = c.bind.map(|b| b.ip()).unwrap_or(if peer.is_ipv4() {
                IpAddr::V4(Ipv4Addr::UNSPECIFIED)
            } else {
                IpAddr::V6(Ipv6Addr::UNSPECIFIED)
            });
            SocketAddr::new(ip, peer.port())
        }
    };
    ServerPlan {
        bind,
        session_idle: DEFAULT_SESSION_IDLE,
        thread: c.reflector_thread,
        output: c.output,
        fps: c.run.fps,
        // A client switching roles reflects plain echo only.
        stamp_port: None,
        stamp_required: false,
        log: None,
        log_opening: Opening::New,
        hdr: HdrLogArgs::default(),
        admission: Admission::default(),
        // The in-process reflector of `synapse --stamp --hmac-key-file`
        // authenticates with the client's key.
        stamp_key: c.stamp_key.clone(),
        stamp_format: c.run.packet.stamp_format.stamp_format,
        user: None,
        // A TCP client's own reflector answers TCP echo on its UDP port's
        // number (the kernel's choice on loopback).
        tcp_port: (c.run.transport == Transport::Tcp).then_some(0),
        tcp_required: false,
        tcp_per_source: 1024,
        timestamps: ReflectorStamping::default(),
        groups: Default::default(),
        echo_joins: false,
        name: None,
        timestamps_option: "--timestamps",
        load: None,
    }
}

/// The client the live display runs when a server switches role: it
/// measures this very reflector, with the default run options.
pub fn counterpart_client(s: &ServerPlan) -> Result<ClientPlan, AppError> {
    let mut run = RunArgs::defaults();
    run.fps = s.fps;
    run.thread.busy_poll = s.thread.busy_poll;
    run.thread.rt = s.thread.rt;
    let output = OutputArgs {
        log: LogArgs::default(),
        hdr: HdrLogArgs::default(),
        no_ui: s.output != Output::Ui,
        json: false,
        json_stream: false,
        config: None,
    };
    let mut c = client_plan(Target::Remote(connectable(s.bind)), None, run, &output)?;
    c.output = s.output;
    c.packets = None;
    c.reflector_thread = s.thread;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wildcard_becomes_loopback_of_its_family() {
        let c = |s: &str| connectable(s.parse().expect("an address")).to_string();
        assert_eq!(c("0.0.0.0:862"), "127.0.0.1:862");
        assert_eq!(c("[::]:9"), "[::1]:9");
        assert_eq!(c("10.1.2.3:7"), "10.1.2.3:7", "a real address stays");
    }
}
