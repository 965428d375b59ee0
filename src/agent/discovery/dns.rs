//! A small DNS client for discovery: A, AAAA and SRV questions to the
//! servers in `/etc/resolv.conf`, over UDP with EDNS0 (4,096 bytes), again
//! over TCP when the answer comes back truncated.
//!
//! Why not the C library, and why not a resolver crate: `getaddrinfo`
//! answers A and AAAA only (SRV needs `res_query`, C and `unsafe` outside
//! the engine's `sys` module), and says "temporary failure" for a timeout,
//! a SERVFAIL and a refusal alike, where the agent counts and reports which.
//! `hickory-resolver` would bring an async runtime's resolver, caches and
//! DNSSEC for three record types asked every 30 s on a thread of its own.
//! What this needs is a few hundred lines that read `/etc/resolv.conf`
//! (so `ip netns exec`'s per-namespace file is obeyed), ask, and parse
//! with name compression; it is tested against hand-built messages here
//! and against dnsmasq in `tests/agent_fleet.rs`.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// Record types asked for.
const A: u16 = 1;
const AAAA: u16 = 28;
const SRV: u16 = 33;
const OPT: u16 = 41;
/// The UDP answer size offered in EDNS0.
const UDP_PAYLOAD: u16 = 4096;

/// Why a name gave no records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DnsError {
    /// No `nameserver` line.
    #[error("no nameserver in {0}")]
    NoServers(String),
    /// No server answered in time.
    #[error("{0}: no answer from {1} in {2:?}")]
    Timeout(String, String, Duration),
    /// The name does not exist (NXDOMAIN).
    #[error("{0}: no such name")]
    NoSuchName(String),
    /// The name exists but has no record of the type asked.
    #[error("{0}: no {1} record")]
    NoRecords(String, &'static str),
    /// The server failed or refused (its RCODE).
    #[error("{0}: the server answered {1}")]
    Server(String, &'static str),
    /// An answer that could not be read.
    #[error("{0}: malformed answer ({1})")]
    Malformed(String, &'static str),
    /// A socket error.
    #[error("{0}: {1}")]
    Io(String, String),
}

/// One SRV record: where a peer's reflector is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srv {
    /// Lower is preferred (the agent probes every record, whatever it says).
    pub priority: u16,
    /// The port.
    pub port: u16,
    /// The host name (lower case, no trailing dot).
    pub target: String,
    /// The target's addresses, when the answer's additional section had
    /// them.
    pub addrs: Vec<IpAddr>,
}

/// What `/etc/resolv.conf` says, and how to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolver {
    servers: Vec<SocketAddr>,
    search: Vec<String>,
    ndots: usize,
    timeout: Duration,
    attempts: usize,
}

impl Resolver {
    /// The system's resolver configuration.
    pub fn system() -> Result<Self, DnsError> {
        let path = "/etc/resolv.conf";
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let r = Self::parse(&text);
        if r.servers.is_empty() {
            return Err(DnsError::NoServers(path.into()));
        }
        Ok(r)
    }

    /// One server, one try each: for tests that stand up their own.
    #[cfg(test)]
    pub fn only(server: SocketAddr, timeout: Duration) -> Self {
        Self {
            servers: vec![server],
            search: Vec::new(),
            ndots: 1,
            timeout,
            attempts: 1,
        }
    }

    /// Reads resolv.conf's `nameserver`, `search`/`domain` and `options
    /// ndots: timeout: attempts:` (the rest is ignored).
    pub fn parse(text: &str) -> Self {
        let mut r = Self {
            servers: Vec::new(),
            search: Vec::new(),
            ndots: 1,
            timeout: Duration::from_secs(2),
            attempts: 2,
        };
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => {
                    let ip = words.next().and_then(|w| w.split('%').next()?.parse().ok());
                    if let Some(ip) = ip {
                        r.servers.push(SocketAddr::new(ip, 53));
                    }
                }
                Some("search" | "domain") => {
                    r.search = words.map(|w| w.trim_end_matches('.').to_string()).collect();
                }
                Some("options") => {
                    for w in words {
                        let (k, v) = w.split_once(':').unwrap_or((w, ""));
                        let v: Option<u64> = v.parse().ok();
                        match (k, v) {
                            ("ndots", Some(n)) => r.ndots = n.min(15) as usize,
                            ("timeout", Some(n)) => r.timeout = Duration::from_secs(n.clamp(1, 30)),
                            ("attempts", Some(n)) => r.attempts = n.clamp(1, 5) as usize,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        r
    }

    /// Every A and AAAA address of `name` (one family may be missing; both
    /// missing is an error).
    pub fn lookup_ip(&self, name: &str) -> Result<Vec<IpAddr>, DnsError> {
        if let Ok(ip) = name.parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        let v4 = self.ask(name, A);
        let v6 = self.ask(name, AAAA);
        let mut out = Vec::new();
        for answer in [&v4, &v6].into_iter().flatten() {
            out.extend(answer.addrs.iter().copied());
        }
        match (out.is_empty(), v4) {
            (false, _) => Ok(out),
            (true, Err(e)) if !matches!(e, DnsError::NoRecords(..)) => Err(e),
            (true, _) => Err(DnsError::NoRecords(name.into(), "A or AAAA")),
        }
    }

    /// Every SRV record of `name`.
    pub fn lookup_srv(&self, name: &str) -> Result<Vec<Srv>, DnsError> {
        let answer = self.ask(name, SRV)?;
        if answer.srv.is_empty() {
            return Err(DnsError::NoRecords(name.into(), "SRV"));
        }
        Ok(answer.srv)
    }

    /// The names to try for `name`: with the search domains first when it
    /// has fewer dots than `ndots`, as the C library does.
    fn candidates(&self, name: &str) -> Vec<String> {
        if let Some(abs) = name.strip_suffix('.') {
            return vec![abs.to_string()];
        }
        let suffixed = self.search.iter().map(|d| format!("{name}.{d}"));
        if name.matches('.').count() >= self.ndots {
            std::iter::once(name.to_string()).chain(suffixed).collect()
        } else {
            suffixed.chain(std::iter::once(name.to_string())).collect()
        }
    }

    /// Asks for `qtype` records of `name` (through the search list): the
    /// first name that has them, or the most telling error.
    fn ask(&self, name: &str, qtype: u16) -> Result<Answer, DnsError> {
        let mut last = DnsError::NoSuchName(name.into());
        for candidate in self.candidates(name) {
            match self.ask_servers(&candidate, qtype) {
                Ok(a) if a.has(qtype) => return Ok(a),
                Ok(_) => last = DnsError::NoRecords(candidate, type_name(qtype)),
                Err(DnsError::NoSuchName(_)) => {}
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// One name, every server in turn, `attempts` rounds.
    fn ask_servers(&self, name: &str, qtype: u16) -> Result<Answer, DnsError> {
        let mut last = DnsError::NoServers("resolv.conf".into());
        for _ in 0..self.attempts {
            for server in &self.servers {
                match exchange(*server, name, qtype, self.timeout) {
                    Ok(a) => return Ok(a),
                    Err(e @ (DnsError::NoSuchName(_) | DnsError::Malformed(..))) => return Err(e),
                    Err(e) => last = e,
                }
            }
        }
        Err(last)
    }
}

fn type_name(qtype: u16) -> &'static str {
    match qtype {
        A => "A",
        AAAA => "AAAA",
        _ => "SRV",
    }
}

/// What an answer held.
#[derive(Debug, Default)]
struct Answer {
    addrs: Vec<IpAddr>,
    srv: Vec<Srv>,
}

impl Answer {
    fn has(&self, qtype: u16) -> bool {
        if qtype == SRV {
            !self.srv.is_empty()
        } else {
            !self.addrs.is_empty()
        }
    }
}

/// A query id nobody can predict from outside: std's per-process random
/// hash keys, stirred with the clock.
fn query_id() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish() as u16
}

/// One question to one server: UDP, then TCP if the answer was cut.
fn exchange(
    server: SocketAddr,
    name: &str,
    qtype: u16,
    timeout: Duration,
) -> Result<Answer, DnsError> {
    let id = query_id();
    let query = encode_query(id, name, qtype).map_err(|m| DnsError::Malformed(name.into(), m))?;
    let io = |e: std::io::Error| DnsError::Io(name.into(), format!("{server}: {e}"));
    let local: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local).map_err(io)?;
    socket.connect(server).map_err(io)?;
    socket.send(&query).map_err(io)?;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; usize::from(UDP_PAYLOAD)];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(DnsError::Timeout(name.into(), server.to_string(), timeout));
        }
        socket.set_read_timeout(Some(left)).map_err(io)?;
        let n = match socket.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(DnsError::Timeout(name.into(), server.to_string(), timeout));
            }
            Err(e) => return Err(io(e)),
        };
        match decode(&buf[..n], id, name) {
            Err(Decoded::NotOurs) => continue,
            Err(Decoded::Truncated) => return exchange_tcp(server, name, &query, id, timeout),
            Err(Decoded::Failed(e)) => return Err(e),
            Ok(a) => return Ok(a),
        }
    }
}

/// The same question over TCP (a two-byte length before each message).
fn exchange_tcp(
    server: SocketAddr,
    name: &str,
    query: &[u8],
    id: u16,
    timeout: Duration,
) -> Result<Answer, DnsError> {
    let io = |e: std::io::Error| DnsError::Io(name.into(), format!("{server} (TCP): {e}"));
    let mut s = TcpStream::connect_timeout(&server, timeout).map_err(io)?;
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    s.set_write_timeout(Some(timeout)).map_err(io)?;
    let len = u16::try_from(query.len()).unwrap_or(u16::MAX).to_be_bytes();
    s.write_all(&len).map_err(io)?;
    s.write_all(query).map_err(io)?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(io)?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut buf).map_err(io)?;
    match decode(&buf, id, name) {
        Ok(a) => Ok(a),
        Err(Decoded::Failed(e)) => Err(e),
        Err(_) => Err(DnsError::Malformed(
            name.into(),
            "truncated or foreign TCP answer",
        )),
    }
}

/// A query: header (recursion desired), one question, an EDNS0 OPT record.
fn encode_query(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>, &'static str> {
    let mut m = Vec::with_capacity(32 + name.len());
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1]);
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("a label of the name is empty or over 63 characters");
        }
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    if m.len() > 12 + 255 {
        return Err("the name is over 255 characters");
    }
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    // OPT: root name, type 41, class = UDP payload size, TTL 0, no data.
    m.push(0);
    m.extend_from_slice(&OPT.to_be_bytes());
    m.extend_from_slice(&UDP_PAYLOAD.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    Ok(m)
}

/// Why an answer was not used.
#[derive(Debug)]
enum Decoded {
    /// Another query's (a late answer to an earlier try): read on.
    NotOurs,
    /// Cut short: ask again over TCP.
    Truncated,
    Failed(DnsError),
}

/// Reads an answer to query `id` about `name`.
fn decode(m: &[u8], id: u16, name: &str) -> Result<Answer, Decoded> {
    let bad = |why| Decoded::Failed(DnsError::Malformed(name.into(), why));
    if m.len() < 12 {
        return Err(bad("shorter than a header"));
    }
    let word = |i: usize| u16::from_be_bytes([m[i], m[i + 1]]);
    let flags = word(2);
    if word(0) != id || flags & 0x8000 == 0 {
        return Err(Decoded::NotOurs);
    }
    if flags & 0x0200 != 0 {
        return Err(Decoded::Truncated);
    }
    match flags & 0x000f {
        0 => {}
        3 => return Err(Decoded::Failed(DnsError::NoSuchName(name.into()))),
        2 => return Err(Decoded::Failed(DnsError::Server(name.into(), "SERVFAIL"))),
        5 => return Err(Decoded::Failed(DnsError::Server(name.into(), "REFUSED"))),
        _ => return Err(Decoded::Failed(DnsError::Server(name.into(), "an error"))),
    }
    let (qd, an, ns, ar) = (word(4), word(6), word(8), word(10));
    let mut at = 12;
    for _ in 0..qd {
        at = skip_name(m, at).ok_or_else(|| bad("question"))? + 4;
    }
    let mut answer = Answer::default();
    let mut extra: Vec<(String, IpAddr)> = Vec::new();
    let total = usize::from(an) + usize::from(ns) + usize::from(ar);
    for n in 0..total {
        let (owner, rtype, data) = record(m, &mut at).ok_or_else(|| bad("record"))?;
        let ip = match (rtype, data.len()) {
            (A, 4) => Some(IpAddr::from(<[u8; 4]>::try_from(data).unwrap_or_default())),
            (AAAA, 16) => Some(IpAddr::from(<[u8; 16]>::try_from(data).unwrap_or_default())),
            _ => None,
        };
        let in_answer = n < usize::from(an);
        match (rtype, ip) {
            (_, Some(ip)) if in_answer => answer.addrs.push(ip),
            (_, Some(ip)) => extra.push((owner, ip)),
            (SRV, None) if in_answer => answer.srv.push(srv(m, data).ok_or_else(|| bad("SRV"))?),
            _ => {}
        }
    }
    for s in &mut answer.srv {
        s.addrs = extra
            .iter()
            .filter(|(o, _)| *o == s.target)
            .map(|(_, ip)| *ip)
            .collect();
    }
    Ok(answer)
}

/// One resource record at `*at`: (owner, type, data); `*at` moves past it.
fn record<'m>(m: &'m [u8], at: &mut usize) -> Option<(String, u16, &'m [u8])> {
    let owner = read_name(m, *at)?;
    let fixed = skip_name(m, *at)?;
    let head = m.get(fixed..fixed + 10)?;
    let rtype = u16::from_be_bytes([head[0], head[1]]);
    let len = usize::from(u16::from_be_bytes([head[8], head[9]]));
    let data = m.get(fixed + 10..fixed + 10 + len)?;
    *at = fixed + 10 + len;
    Some((owner, rtype, data))
}

/// An SRV record's data: priority, weight, port, target.
fn srv(m: &[u8], data: &[u8]) -> Option<Srv> {
    if data.len() < 7 {
        return None;
    }
    // The target may point back into the message: read it where it lies.
    let start = data.as_ptr() as usize - m.as_ptr() as usize;
    Some(Srv {
        priority: u16::from_be_bytes([data[0], data[1]]),
        port: u16::from_be_bytes([data[4], data[5]]),
        target: read_name(m, start + 6)?,
        addrs: Vec::new(),
    })
}

/// Where the name at `at` ends (a pointer ends it).
fn skip_name(m: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *m.get(at)?;
        match len & 0xc0 {
            0xc0 => return Some(at + 2),
            0 if len == 0 => return Some(at + 1),
            0 => at += 1 + usize::from(len),
            _ => return None,
        }
    }
}

/// The name at `at`, following compression pointers (backwards only, so
/// a loop cannot be built), lower case, without the root's dot.
fn read_name(m: &[u8], mut at: usize) -> Option<String> {
    let mut out = String::new();
    let mut jumps = 0;
    loop {
        let len = *m.get(at)?;
        match len & 0xc0 {
            0xc0 => {
                let to = usize::from(u16::from_be_bytes([len & 0x3f, *m.get(at + 1)?]));
                jumps += 1;
                if to >= at || jumps > 64 {
                    return None;
                }
                at = to;
            }
            0 if len == 0 => return Some(out),
            0 => {
                let label = m.get(at + 1..at + 1 + usize::from(len))?;
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&String::from_utf8_lossy(label).to_ascii_lowercase());
                if out.len() > 255 {
                    return None;
                }
                at += 1 + usize::from(len);
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer as a server would write it: the question, then records
    /// whose names point back at the question's (compression).
    fn answer(
        id: u16,
        flags: u16,
        qtype: u16,
        records: &[(u16, Vec<u8>)],
        extra: &[(&str, [u8; 4])],
    ) -> Vec<u8> {
        let mut m = encode_query(id, "_s._udp.fleet.test", qtype).unwrap();
        m.truncate(m.len() - 11); // without the OPT record
        m[2..4].copy_from_slice(&flags.to_be_bytes());
        m[6..8].copy_from_slice(&(records.len() as u16).to_be_bytes());
        m[10..12].copy_from_slice(&(extra.len() as u16).to_be_bytes());
        for (rtype, data) in records {
            m.extend_from_slice(&[0xc0, 12]);
            m.extend_from_slice(&rtype.to_be_bytes());
            m.extend_from_slice(&[0, 1, 0, 0, 0, 30]);
            m.extend_from_slice(&(data.len() as u16).to_be_bytes());
            m.extend_from_slice(data);
        }
        for (name, ip) in extra {
            for l in name.split('.') {
                m.push(l.len() as u8);
                m.extend_from_slice(l.as_bytes());
            }
            m.push(0);
            m.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 30, 0, 4]);
            m.extend_from_slice(ip);
        }
        m
    }

    fn srv_data(port: u16, target: &str) -> Vec<u8> {
        let mut d = vec![0, 10, 0, 5];
        d.extend_from_slice(&port.to_be_bytes());
        for l in target.split('.') {
            d.push(l.len() as u8);
            d.extend_from_slice(l.as_bytes());
        }
        d.push(0);
        d
    }

    #[test]
    fn resolv_conf_gives_servers_search_and_options() {
        let r = Resolver::parse(
            "# comment\nnameserver 127.0.0.53\nnameserver fe80::1%eth0\nsearch a.test b.test.\noptions ndots:5 timeout:1 attempts:3 rotate\n",
        );
        assert_eq!(
            r.servers,
            [
                "127.0.0.53:53".parse().unwrap(),
                "[fe80::1]:53".parse().unwrap()
            ]
        );
        assert_eq!(r.search, ["a.test", "b.test"]);
        assert_eq!(
            (r.ndots, r.timeout, r.attempts),
            (5, Duration::from_secs(1), 3)
        );
        // Fewer dots than ndots: the search list first; a final dot: as is.
        assert_eq!(r.candidates("h1"), ["h1.a.test", "h1.b.test", "h1"]);
        assert_eq!(r.candidates("x.y."), ["x.y"]);
        let r = Resolver::parse("nameserver 10.0.0.1\n");
        assert_eq!(r.candidates("h1.fleet.test"), ["h1.fleet.test"]);
    }

    #[test]
    fn a_query_is_a_header_a_question_and_an_opt_record() {
        let q = encode_query(0x1234, "h1.fleet.test", A).unwrap();
        assert_eq!(&q[..12], &[0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&q[12..27], b"\x02h1\x05fleet\x04test\x00");
        assert_eq!(&q[27..31], &[0, 1, 0, 1]);
        assert_eq!(&q[31..], &[0, 0, 41, 16, 0, 0, 0, 0, 0, 0, 0]);
        assert!(encode_query(1, "a..b", A).is_err());
        assert!(encode_query(1, &"x".repeat(64), A).is_err());
    }

    #[test]
    fn srv_answers_give_targets_ports_and_their_additional_addresses() {
        let m = answer(
            7,
            0x8180,
            SRV,
            &[
                (SRV, srv_data(8080, "h1.fleet.test")),
                (SRV, srv_data(9000, "H2.Fleet.Test")),
            ],
            &[("h1.fleet.test", [127, 0, 1, 1])],
        );
        let a = decode(&m, 7, "x").unwrap();
        assert_eq!(a.srv.len(), 2);
        assert_eq!(
            (a.srv[0].target.as_str(), a.srv[0].port, a.srv[0].priority),
            ("h1.fleet.test", 8080, 10)
        );
        assert_eq!(a.srv[0].addrs, [IpAddr::from([127, 0, 1, 1])]);
        assert_eq!(
            (a.srv[1].target.as_str(), a.srv[1].addrs.len()),
            ("h2.fleet.test", 0)
        );
    }

    #[test]
    fn address_answers_and_every_failure_are_told_apart() {
        let m = answer(
            9,
            0x8180,
            A,
            &[(A, vec![10, 0, 0, 1]), (A, vec![10, 0, 0, 2])],
            &[],
        );
        let a = decode(&m, 9, "x").unwrap();
        assert_eq!(
            a.addrs,
            [IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2])]
        );
        let six = answer(9, 0x8180, AAAA, &[(AAAA, vec![0; 16])], &[]);
        assert_eq!(
            decode(&six, 9, "x").unwrap().addrs,
            [IpAddr::from([0u8; 16])]
        );
        assert!(matches!(decode(&m, 10, "x"), Err(Decoded::NotOurs)));
        assert!(matches!(
            decode(&answer(9, 0x8380, A, &[], &[]), 9, "x"),
            Err(Decoded::Truncated)
        ));
        let fail = |flags| match decode(&answer(9, flags, A, &[], &[]), 9, "x") {
            Err(Decoded::Failed(e)) => e.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(fail(0x8183), "x: no such name");
        assert_eq!(fail(0x8182), "x: the server answered SERVFAIL");
        assert_eq!(fail(0x8185), "x: the server answered REFUSED");
    }

    #[test]
    fn malformed_answers_are_refused_not_followed() {
        let m = answer(9, 0x8180, SRV, &[(SRV, srv_data(1, "a.b"))], &[]);
        for cut in [5, 20, m.len() - 3] {
            assert!(
                matches!(decode(&m[..cut], 9, "x"), Err(Decoded::Failed(_))),
                "cut at {cut}"
            );
        }
        // A pointer to itself (a loop) and one forwards are refused.
        let mut looped = m.clone();
        let at = looped.len() - 7; // the target's first label
        looped[at] = 0xc0;
        looped[at + 1] = at as u8;
        assert!(read_name(&looped, at).is_none());
        assert!(read_name(&[0xc0, 0x05, 0, 0, 0, 1, b'a', 0], 0).is_none());
    }

    #[test]
    fn an_ip_address_needs_no_question() {
        let r = Resolver::parse("");
        assert_eq!(
            r.lookup_ip("127.0.1.5").unwrap(),
            [IpAddr::from([127, 0, 1, 5])]
        );
    }

    /// A server that never answers: a timeout, said as one.
    #[test]
    fn a_silent_server_is_a_timeout() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let at = silent.local_addr().unwrap();
        let r = Resolver {
            servers: vec![at],
            search: Vec::new(),
            ndots: 1,
            timeout: Duration::from_secs(1),
            attempts: 1,
        };
        let e = r.lookup_srv("_s._udp.fleet.test").unwrap_err();
        assert!(matches!(e, DnsError::Timeout(..)), "{e}");
        assert_eq!(
            e.to_string(),
            format!("_s._udp.fleet.test: no answer from {at} in 1s")
        );
    }
}
