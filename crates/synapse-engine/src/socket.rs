//! Socket creation and address resolution, done once before a run starts so
//! that configuration errors surface before any thread is spawned.

use super::EngineError;
use super::sys;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Checks that text has the form of an address: `HOST`, `HOST:PORT`,
/// `[IPv6]`, `[IPv6]:PORT` or a bare IPv6 address, with a port in range.
/// Nothing is looked up; [`resolve`] does that when the address is used.
pub fn address_text(s: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("'{s}' is not an address ({why})"));
    let form = "HOST, HOST:PORT or [IPv6]:PORT";
    if s.parse::<SocketAddr>().is_ok() || s.parse::<std::net::Ipv6Addr>().is_ok() {
        return Ok(s.to_string());
    }
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return bad("'[' without ']'");
        };
        if inside.parse::<std::net::Ipv6Addr>().is_err() {
            return bad("not an IPv6 address between [ and ]");
        }
        match after {
            "" => return Ok(s.to_string()),
            p => match p.strip_prefix(':') {
                Some(p) => (None, p),
                None => return bad(form),
            },
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (Some(h), p),
            None => (Some(s), ""),
        }
    };
    if let Some(host) = host {
        let ok = !host.is_empty()
            && host.len() <= 253
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            && !host.starts_with(['-', '.']);
        if !ok {
            return bad(form);
        }
    }
    if port.is_empty() && s.contains(':') {
        return bad(form);
    }
    if !port.is_empty() {
        if !port.chars().all(|c| c.is_ascii_digit()) {
            return bad(form);
        }
        if port.parse::<u16>().is_err() {
            return bad(&format!("port {port} out of range 0-65535"));
        }
    }
    Ok(s.to_string())
}

/// Addresses a client elsewhere could send to, to reach a socket bound to
/// `bind`: itself, or, for the wildcard, this host's own addresses of that
/// family (loopback last, link-local IPv6 left out).
pub fn reachable_at(bind: SocketAddr) -> Vec<SocketAddr> {
    if !bind.ip().is_unspecified() {
        return vec![bind];
    }
    let mut found: Vec<SocketAddr> = super::sys::interfaces::interface_addresses()
        .unwrap_or_default()
        .into_iter()
        .map(|(_, ip)| ip)
        .filter(|ip| ip.is_ipv4() == bind.is_ipv4())
        .filter(|ip| !matches!(ip, std::net::IpAddr::V6(v6) if v6.is_unicast_link_local()))
        .map(|ip| SocketAddr::new(ip, bind.port()))
        .collect();
    found.sort_by_key(|a| a.ip().is_loopback());
    found
}

/// Resolves `HOST:PORT`, `HOST` (then `default_port`), `[v6]:PORT` or a bare
/// IPv6 address into one socket address (the first the resolver gives).
pub fn resolve(text: &str, default_port: u16) -> Result<SocketAddr, EngineError> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = text.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, default_port));
    }
    let with_port = if text
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        text.to_string()
    } else {
        format!("{text}:{default_port}")
    };
    let fail = |why: String| EngineError::Resolve(text.to_string(), why);
    with_port
        .to_socket_addrs()
        .map_err(|e| fail(e.to_string()))?
        .next()
        .ok_or_else(|| fail("no address found".into()))
}

/// A port on `ip` where both a UDP socket and a TCP listener can bind, for a
/// server asked for port 0 whose TCP echo shares the UDP port's number: the
/// kernel's choice for one protocol may be held by a socket of the other
/// (both draw from the same ephemeral range). Probed, then released: the
/// caller binds it at once.
pub fn port_free_for_udp_and_tcp(ip: std::net::IpAddr) -> io::Result<u16> {
    let mut last = io::Error::from(io::ErrorKind::AddrInUse);
    for _ in 0..64 {
        let tcp = std::net::TcpListener::bind(SocketAddr::new(ip, 0))?;
        let port = tcp.local_addr()?.port();
        match std::net::UdpSocket::bind(SocketAddr::new(ip, port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Creates a UDP socket bound to `addr`, with `IP_RECVERR` so ICMP errors
/// are reported.
pub fn bind_udp(addr: SocketAddr) -> Result<Socket, EngineError> {
    bind_udp_with(addr, false)
}

/// The client's pair of sockets sharing one port (`SO_REUSEPORT`): `fast`
/// gets connected to the peer, so the hot path pays no per-packet route
/// lookup; the kernel prefers it for the peer's datagrams and hands anything
/// from other sources to `catcher`, which is unconnected and non-blocking
/// and drained off the hot path so strays are still counted.
#[derive(Debug)]
pub struct ClientSockets {
    /// Connected to the peer.
    pub fast: Socket,
    /// Everything else sent to our port.
    pub catcher: Socket,
    /// The local address both share.
    pub local: SocketAddr,
}

/// Binds the client's sockets and connects the fast one to `peer`.
pub fn client_sockets(bind: SocketAddr, peer: SocketAddr) -> Result<ClientSockets, EngineError> {
    // Bound alone first, so a port another process holds (another client
    // asked for the same --bind) is refused as in use, and an ephemeral
    // port is one nobody has; only then is it opened to the catcher.
    let fast = bind_udp_with(bind, false)?;
    fast.set_reuse_port(true)
        .map_err(EngineError::io("cannot set SO_REUSEPORT"))?;
    let local = fast
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .ok_or_else(|| {
            EngineError::io("cannot read local address")(io::Error::other("not an IP socket"))
        })?;
    let catcher = bind_udp_with(local, true)?;
    catcher
        .set_nonblocking(true)
        .map_err(EngineError::io("cannot configure socket"))?;
    fast.connect(&peer.into()).map_err(|e| EngineError::Send {
        addr: peer,
        source: e,
    })?;
    // Connected, the socket knows the source address the route picked.
    let local = fast
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .unwrap_or(local);
    Ok(ClientSockets {
        fast,
        catcher,
        local,
    })
}

/// The paced client's socket: one, unconnected (it may serve many peers),
/// non-blocking, with the local address the route to `peer` would use.
pub fn paced_socket(
    bind: SocketAddr,
    peer: SocketAddr,
) -> Result<(Socket, SocketAddr), EngineError> {
    let socket = bind_udp_with(bind, false)?;
    socket
        .set_nonblocking(true)
        .map_err(EngineError::io("cannot configure socket"))?;
    // Many requests are in flight, and their replies can come back in a
    // burst (a batching reflector, a tick's worth of peers): a reply the
    // default buffer drops would be counted as the network's loss. The
    // kernel caps this at net.core.rmem_max; failure is harmless.
    let _ = socket.set_recv_buffer_size(4 << 20);
    let local = local_toward(&socket, bind, peer, None);
    Ok((socket, local))
}

/// Where `socket` (bound to `bind`) sends from toward `peer`: its bound
/// address, or on a wildcard the source the route to `peer` picks (by
/// interface `ifindex` for a group, when given). Connecting a throwaway
/// UDP socket sends nothing, but it asks the kernel; with no route the
/// wildcard stays, and the first send says why.
fn local_toward(
    socket: &Socket,
    bind: SocketAddr,
    peer: SocketAddr,
    ifindex: Option<u32>,
) -> SocketAddr {
    let mut local = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .unwrap_or(bind);
    if local.ip().is_unspecified()
        && let Ok(probe) = std::net::UdpSocket::bind(wildcard_for(peer))
    {
        if let Some(index) = ifindex {
            let _ = sys::multicast::set_interface(probe.as_raw_fd(), peer.is_ipv6(), index);
        }
        if probe.connect(peer).is_ok()
            && let Ok(a) = probe.local_addr()
        {
            local.set_ip(a.ip());
        }
    }
    local
}

/// How a multicast client's socket sends to its group, and whether it
/// hears the group too.
#[derive(Debug, Clone, Copy)]
pub struct GroupSocketOptions {
    /// The requests' hop limit (TTL).
    pub hops: u8,
    /// Send by this interface (its index) instead of the route's.
    pub interface: Option<u32>,
    /// Deliver the requests to this host's own members too.
    pub loopback: bool,
    /// Join the group itself (it alone), so answers sent to it arrive.
    pub join: bool,
}

/// A multicast client's socket: unconnected (the answers come from every
/// member's own address), bound to `bind`, its group datagrams sent with
/// `m.hops`, by interface `m.interface` when given, and looped back to
/// this host's own members only when `m.loopback`; with `m.join` a member
/// of the group itself (of it alone), so answers sent to the group reach
/// it. Returns it with the local address the route to `group` picks.
pub fn group_socket(
    bind: SocketAddr,
    group: SocketAddr,
    m: &GroupSocketOptions,
) -> Result<(Socket, SocketAddr), EngineError> {
    let socket = bind_udp_with(bind, false)?;
    let fd = socket.as_raw_fd();
    let v6 = group.is_ipv6();
    let cannot = |what: &'static str| EngineError::io(what);
    sys::multicast::set_hops(fd, v6, m.hops)
        .map_err(cannot("cannot set the multicast hop limit"))?;
    sys::multicast::set_loopback(fd, v6, m.loopback)
        .map_err(cannot("cannot set IP_MULTICAST_LOOP"))?;
    if let Some(index) = m.interface {
        sys::multicast::set_interface(fd, v6, index)
            .map_err(cannot("cannot set the multicast interface"))?;
    }
    if m.join {
        sys::multicast::receive_joined_only(fd, v6)
            .map_err(cannot("cannot turn IP_MULTICAST_ALL off"))?;
        sys::multicast::join(fd, group.ip(), None, m.interface.unwrap_or(0)).map_err(|e| {
            EngineError::Join {
                group: group.ip().to_string(),
                reason: match e.raw_os_error() {
                    Some(libc::ENODEV) => "--mc-join: no route to the group: add one (ip route \
                         add 224.0.0.0/4 dev IFACE, or ff00::/8) or name the interface with --mc-if"
                        .into(),
                    _ => format!("--mc-join: {e}"),
                },
            }
        })?;
    }
    // Every member answers at once: a burst the default buffer may drop.
    let _ = socket.set_recv_buffer_size(4 << 20);
    let local = local_toward(&socket, bind, group, m.interface);
    Ok((socket, local))
}

/// Whether `ip` belongs to this host (loopback, or one of its interfaces):
/// a reflector there reads the same clock as the client.
pub fn is_this_host(ip: std::net::IpAddr) -> bool {
    ip.is_loopback()
        || super::sys::interfaces::interface_addresses()
            .map(|all| all.iter().any(|(_, a)| *a == ip))
            .unwrap_or(false)
}

fn bind_udp_with(addr: SocketAddr, reuse_port: bool) -> Result<Socket, EngineError> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(EngineError::io("cannot create UDP socket"))?;
    if reuse_port {
        socket
            .set_reuse_port(true)
            .map_err(EngineError::io("cannot set SO_REUSEPORT"))?;
    }
    if addr.is_ipv6() {
        // Accept IPv4-mapped peers too when bound to [::].
        let _ = socket.set_only_v6(false);
    }
    socket.bind(&addr.into()).map_err(|e| EngineError::Bind {
        addr,
        reason: match e.kind() {
            io::ErrorKind::AddrInUse => "address already in use".into(),
            io::ErrorKind::AddrNotAvailable => "address is not local to this host".into(),
            io::ErrorKind::PermissionDenied => {
                "permission denied (ports below 1024 need privilege)".into()
            }
            _ => e.to_string(),
        },
    })?;
    sys::sockopt::enable_recverr(socket.as_raw_fd(), addr.is_ipv6())
        .map_err(EngineError::io("cannot enable IP_RECVERR"))?;
    Ok(socket)
}

/// Blocking with a receive timeout, or non-blocking for busy-polling.
pub fn set_wait_mode(
    socket: &Socket,
    busy_poll: bool,
    timeout: Duration,
) -> Result<(), EngineError> {
    if busy_poll {
        socket.set_nonblocking(true)
    } else {
        socket.set_read_timeout(Some(timeout.max(Duration::from_micros(1))))
    }
    .map_err(EngineError::io("cannot configure socket"))
}

/// The wildcard address of the same family as `peer`, any port.
pub fn wildcard_for(peer: SocketAddr) -> SocketAddr {
    if peer.is_ipv6() {
        "[::]:0".parse().unwrap_or(peer)
    } else {
        SocketAddr::from(([0, 0, 0, 0], 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_free_for_both_protocols_binds_both() {
        let ip = std::net::IpAddr::from([127, 0, 0, 1]);
        for _ in 0..20 {
            let port = port_free_for_udp_and_tcp(ip).unwrap();
            assert_ne!(port, 0);
            let _udp = std::net::UdpSocket::bind(SocketAddr::new(ip, port)).unwrap();
            let _tcp = std::net::TcpListener::bind(SocketAddr::new(ip, port)).unwrap();
        }
    }

    #[test]
    fn resolve_accepts_the_usual_spellings() {
        assert_eq!(
            resolve("127.0.0.1:9", 8080).unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(
            resolve("127.0.0.1", 8080).unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(resolve("::1", 8080).unwrap(), "[::1]:8080".parse().unwrap());
        assert_eq!(resolve("[::1]", 7).unwrap(), "[::1]:7".parse().unwrap());
        assert_eq!(resolve("localhost:5", 8080).unwrap().port(), 5);
    }

    #[test]
    fn address_forms_are_checked_without_a_lookup() {
        for ok in [
            "10.0.0.1",
            "10.0.0.1:80",
            "[::1]:80",
            "[::1]",
            "::1",
            "host.example",
            "host-1:8080",
            "1.2.3.4.5",
        ] {
            assert_eq!(address_text(ok), Ok(ok.to_string()), "{ok}");
        }
        let why = |s: &str| address_text(s).unwrap_err();
        assert_eq!(
            why("127.0.0.1:99999"),
            "'127.0.0.1:99999' is not an address (port 99999 out of range 0-65535)"
        );
        assert_eq!(why("[::1"), "'[::1' is not an address ('[' without ']')");
        for bad in [
            "",
            "10.0.0.1:x",
            "a b",
            "-host",
            "host:",
            "[::1]x",
            "[nope]:1",
        ] {
            assert!(address_text(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_wildcard_is_reached_at_the_hosts_own_addresses() {
        let all = reachable_at("0.0.0.0:8080".parse().unwrap());
        assert!(!all.is_empty());
        assert!(all.iter().all(|a| a.is_ipv4() && a.port() == 8080));
        assert!(all.iter().all(|a| !a.ip().is_unspecified()));
        assert!(
            all.last().unwrap().ip().is_loopback(),
            "loopback last: {all:?}"
        );
        let one: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert_eq!(reachable_at(one), [one]);
    }

    #[test]
    fn resolve_names_what_it_could_not_resolve() {
        let e = resolve("no-such-host.invalid", 1).unwrap_err().to_string();
        assert!(
            e.starts_with("cannot resolve 'no-such-host.invalid'"),
            "{e}"
        );
    }

    #[test]
    fn binding_a_busy_port_says_so() {
        let first = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
        let taken = first.local_addr().unwrap().as_socket().unwrap();
        let e = bind_udp(taken).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("cannot bind UDP {taken}: address already in use")
        );
    }
}
