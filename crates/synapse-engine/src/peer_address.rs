//! A peer's address with its transport: `HOST[:PORT]` or `udp://HOST[:PORT]`
//! (UDP), `tcp://HOST:PORT` (request and response over TCP). The port of
//! a TCP peer is never guessed: no TCP echo port is more usual than
//! another, so it must be written.

use super::Transport;
use super::socket::address_text;
use std::net::SocketAddr;

/// A checked peer address: its transport and the `HOST[:PORT]` part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddress<'a> {
    /// UDP datagrams, or request and response over TCP.
    pub transport: Transport,
    /// What follows the scheme, a checked address.
    pub host: &'a str,
}

/// The forms a peer's address takes, for messages.
pub const FORMS: &str = "HOST[:PORT], udp://HOST[:PORT] or tcp://HOST:PORT";

/// Reads `s`: a known scheme or none, then an address; a TCP one with its
/// port.
pub fn parse(s: &str) -> Result<PeerAddress<'_>, String> {
    let (transport, host) = match s.split_once("://") {
        None => (Transport::Udp, s),
        Some(("udp", rest)) => (Transport::Udp, rest),
        Some(("tcp", rest)) => (Transport::Tcp, rest),
        Some((scheme, _)) => {
            return Err(format!(
                "'{s}': unknown scheme '{scheme}://' (a peer is {FORMS})"
            ));
        }
    };
    address_text(host).map_err(|e| format!("'{s}': {e}"))?;
    if transport == Transport::Tcp && !has_port(host) {
        return Err(format!(
            "'{s}': a TCP peer needs its port (tcp://HOST:PORT)"
        ));
    }
    Ok(PeerAddress { transport, host })
}

/// `address_text`'s checker for clap: the text itself when it parses.
pub fn peer_address_text(s: &str) -> Result<String, String> {
    parse(s).map(|_| s.to_string())
}

/// Whether a checked address names its port.
fn has_port(host: &str) -> bool {
    if host.parse::<SocketAddr>().is_ok() {
        return true;
    }
    match host.strip_prefix('[') {
        Some(rest) => rest.split_once("]:").is_some(),
        // An IPv6 address without brackets has colons but no port.
        None => host.parse::<std::net::Ipv6Addr>().is_err() && host.contains(':'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheme_says_the_transport_and_tcp_needs_a_port() {
        let p = parse("tcp://127.0.0.1:7").unwrap();
        assert_eq!((p.transport, p.host), (Transport::Tcp, "127.0.0.1:7"));
        assert_eq!(
            parse("tcp://db.example:5432").unwrap().host,
            "db.example:5432"
        );
        assert_eq!(parse("tcp://[::1]:7").unwrap().transport, Transport::Tcp);
        assert_eq!(parse("udp://10.0.0.2").unwrap().transport, Transport::Udp);
        assert_eq!(parse("10.0.0.2:9").unwrap().transport, Transport::Udp);
        let e = parse("tcp://db.example").unwrap_err();
        assert!(e.contains("a TCP peer needs its port"), "{e}");
        assert!(parse("tcp://::1").unwrap_err().contains("needs its port"));
        assert!(parse("tcp://[::1]").unwrap_err().contains("needs its port"));
        let e = parse("ftp://x").unwrap_err();
        assert!(e.contains("unknown scheme 'ftp://'"), "{e}");
        assert!(parse("tcp://").is_err());
        assert!(parse("tcp://not an address:7").is_err());
    }
}
