//! `synapse trace`'s loop: one UDP socket per source port (so each probe
//! has its flow's exact 5-tuple), TTL set per datagram, ICMP errors read
//! off each socket's error queue (unprivileged: no raw socket), echoes off
//! the socket itself, all paced by the [`Tracer`].
//!
//! The sockets are not connected, as the agent's probers are not: Linux
//! gives a connected socket a random flow hash that travels with its
//! packets, and a router in the same host (a namespace lab) may hash on it
//! (`fib_multipath_hash_policy=1` takes an L4 hash the packet already
//! has) rather than on the 5-tuple; the probes must take the path the
//! 5-tuple takes.

use super::tracer::{Probe, TraceCounts, TracePlan, Tracer};
use crate::mono::Mono;
use crate::socket::paced_socket;
use crate::sys::addr::RawAddr;
use crate::sys::cmsg::ControlBuf;
use crate::sys::errqueue::{ErrQueue, read_error_queue_into};
use crate::sys::poll::{Readiness, WAIT_ANY_MAX, wait_any};
use crate::sys::{clock::realtime_ns, errno, hop_limit, sockopt, timestamping};
use crate::{EngineError, StopFlag};
use socket2::Socket;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;
use synapse_stats::trace::PathTally;

/// Source ports a trace may use at once.
pub const MAX_PATHS: usize = WAIT_ANY_MAX;

/// Room for a whole quote: Linux routers quote up to 576 bytes of the
/// datagram, and RFC 4884 extensions follow.
const QUOTE_ROOM: usize = 1024;

/// What `synapse trace` asks the engine for.
#[derive(Debug, Clone)]
pub struct TraceConfig {
    /// The destination and its port.
    pub destination: SocketAddr,
    /// The local address to send from (`None`: the route's).
    pub bind: Option<IpAddr>,
    /// The source ports (0: any free one), one flow each.
    pub ports: Vec<u16>,
    /// Probes per hop.
    pub probes: u32,
    /// The highest TTL.
    pub max_ttl: u8,
    /// Probes a second at most, all ports together.
    pub rate: f64,
    /// How long an answer may take.
    pub timeout: Duration,
}

/// What a trace found.
#[derive(Debug, Clone)]
pub struct TraceOutcome {
    /// Each flow's tally, in the order of the ports.
    pub paths: Vec<PathTally>,
    /// The local address the probes left from (its port: the first flow's).
    pub local: SocketAddr,
    /// What it did.
    pub counts: TraceCounts,
    /// Stopped before it was complete.
    pub interrupted: bool,
}

/// One flow's socket.
struct Flow {
    socket: Socket,
    ipv6: bool,
    to: RawAddr,
}

/// Runs a trace to its end (or `stop`), in this thread.
pub fn run_trace(cfg: &TraceConfig, stop: &StopFlag) -> Result<TraceOutcome, EngineError> {
    let (flows, ports, local) = open(cfg)?;
    // Answers are timed by the kernel's receive stamps when it gives them.
    let mut stamp_type = 0;
    for f in &flows {
        use timestamping::flags;
        let wanted = flags::RX_SOFTWARE | flags::REPORT_SOFTWARE;
        stamp_type = timestamping::enable(f.socket.as_raw_fd(), wanted).unwrap_or(stamp_type);
    }
    let plan = TracePlan {
        destination: cfg.destination.ip(),
        ports,
        probes: cfg.probes,
        max_ttl: cfg.max_ttl,
        rate: cfg.rate,
        timeout_ns: cfg.timeout.as_nanos() as u64,
    };
    let token = super::identity::random_token();
    let epoch = Mono::now();
    let mut tracer = Tracer::new(plan, token as u8, token, 0);
    let mut reader = Reader::new(stamp_type);
    let fds: Vec<RawFd> = flows.iter().map(|f| f.socket.as_raw_fd()).collect();
    let mut ready = vec![Readiness::TimedOut; fds.len()];
    loop {
        let now = epoch.elapsed_ns();
        if let Some(p) = tracer.next_probe(now) {
            send(&flows[p.flow], &p, &mut tracer, &mut reader, epoch)?;
            continue;
        }
        tracer.expire(now);
        if tracer.finished() || stop.is_raised() {
            break;
        }
        let wait = tracer
            .due_ns()
            .map_or(Duration::from_millis(50), |d| {
                Duration::from_nanos(d.saturating_sub(now))
            })
            .min(Duration::from_millis(50));
        wait_any(&fds, &mut ready, wait).map_err(EngineError::io("cannot wait for the sockets"))?;
        for (flow, r) in ready.iter().enumerate() {
            if *r != Readiness::TimedOut {
                reader.drain(flow, fds[flow], &flows[flow].to, &mut tracer);
            }
        }
    }
    let interrupted = !tracer.finished();
    let counts = tracer.counts();
    Ok(TraceOutcome {
        paths: tracer.into_tallies(),
        local,
        counts,
        interrupted,
    })
}

/// Binds one socket per port: ports in use are refused here.
fn open(cfg: &TraceConfig) -> Result<(Vec<Flow>, Vec<u16>, SocketAddr), EngineError> {
    let to = cfg.destination;
    let ipv6 = to.is_ipv6();
    let ip = cfg
        .bind
        .unwrap_or_else(|| crate::socket::wildcard_for(to).ip());
    let mut flows = Vec::new();
    let mut ports = Vec::new();
    let mut local = None;
    for &port in cfg.ports.iter().take(MAX_PATHS) {
        let (socket, here) = paced_socket(SocketAddr::new(ip, port), to)?;
        // Where the extensions of a quote begin (MPLS labels); an old
        // kernel refuses and the labels are simply not read.
        let _ = sockopt::enable_recverr_rfc4884(socket.as_raw_fd(), ipv6);
        local.get_or_insert(here);
        ports.push(here.port());
        flows.push(Flow {
            socket,
            ipv6,
            to: RawAddr::from_socket_addr(to),
        });
    }
    let none = || EngineError::io("no source port")(std::io::Error::other("none"));
    Ok((flows, ports, local.ok_or_else(none)?))
}

/// Sends one probe. An error an earlier probe's ICMP left pending fails a
/// send without sending: the queue is read and the probe sent again. A
/// send that fails on its own (no route here, a local firewall) is
/// counted; before any probe has left, it ends the trace with its reason.
fn send(
    flow: &Flow,
    p: &Probe,
    tracer: &mut Tracer,
    reader: &mut Reader,
    epoch: Mono,
) -> Result<(), EngineError> {
    let fd = flow.socket.as_raw_fd();
    // Timed before the send: on loopback the answer can come within it.
    let mut at = (epoch.elapsed_ns(), realtime_ns());
    let mut result = hop_limit::send_with_ttl(fd, &p.bytes, Some(&flow.to), flow.ipv6, p.ttl);
    if result
        .as_ref()
        .is_err_and(|e| e.raw_os_error().is_some_and(errno::is_pending_icmp))
    {
        reader.drain(p.flow, fd, &flow.to, tracer);
        at = (epoch.elapsed_ns(), realtime_ns());
        result = hop_limit::send_with_ttl(fd, &p.bytes, Some(&flow.to), flow.ipv6, p.ttl);
    }
    match result {
        Ok(_) => {
            tracer.sent(p, at.0, at.1);
            Ok(())
        }
        Err(e) if tracer.counts().sent == 0 => Err(EngineError::Send {
            addr: flow
                .to
                .to_socket_addr()
                .unwrap_or(SocketAddr::new(tracer.plan().destination, 0)),
            source: e,
        }),
        Err(_) => {
            tracer.send_failed(p);
            Ok(())
        }
    }
}

/// Reads what a socket holds (error queue, then datagrams) into the trace.
struct Reader {
    control: ControlBuf,
    quote: Box<[u8; QUOTE_ROOM]>,
    datagram: [u8; 64],
    stamp_type: i32,
}

impl Reader {
    fn new(stamp_type: i32) -> Self {
        Self {
            control: ControlBuf::default(),
            quote: Box::new([0; QUOTE_ROOM]),
            datagram: [0; 64],
            stamp_type,
        }
    }

    /// Everything `fd` holds: its error queue, then its datagrams (those
    /// from the destination, `to`, may be echoes).
    fn drain(&mut self, flow: usize, fd: RawFd, to: &RawAddr, tracer: &mut Tracer) {
        self.drain_errors(flow, fd, tracer);
        let mut from = RawAddr::empty();
        loop {
            let got = timestamping::recv_stamped(
                fd,
                &mut self.datagram,
                Some(&mut from),
                &mut self.control,
                self.stamp_type,
            );
            match got {
                Ok(got) if !got.received.truncated && from.same_as(to) => {
                    let at = got.stamps.software.unwrap_or_else(realtime_ns);
                    tracer.on_echo(flow, &self.datagram[..got.received.len], at);
                }
                Ok(_) => {}
                // An ICMP error pending on the socket fails the receive:
                // its report is on the queue.
                Err(e) if e.raw_os_error().is_some_and(errno::is_network_error) => {
                    self.drain_errors(flow, fd, tracer);
                }
                Err(_) => break,
            }
        }
    }

    /// Every report on `fd`'s error queue, into the trace.
    fn drain_errors(&mut self, flow: usize, fd: RawFd, tracer: &mut Tracer) {
        let quote = &mut self.quote[..];
        while let Ok(m) = read_error_queue_into(fd, &mut self.control, self.stamp_type, quote) {
            match m {
                ErrQueue::Error(report) => {
                    let read = report.quoted.read_len().min(QUOTE_ROOM);
                    tracer.on_report(flow, &report, &quote[..read], realtime_ns());
                }
                ErrQueue::Empty => break,
                ErrQueue::Stamp { .. } | ErrQueue::Other => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::trace::AnswerKind;

    fn config(to: SocketAddr, probes: u32) -> TraceConfig {
        TraceConfig {
            destination: to,
            bind: None,
            ports: vec![0, 0],
            probes,
            max_ttl: 4,
            rate: 2000.0,
            timeout: Duration::from_millis(300),
        }
    }

    /// On loopback the destination is the first hop: an echo server
    /// answers every probe of both ports with its echo; a closed port
    /// answers each with a port unreachable, read off the error queue.
    #[test]
    fn loopback_ends_at_ttl_one_by_echo_or_port_unreachable() {
        let echo = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = echo.local_addr().unwrap();
        echo.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let server = std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            while let Ok((n, from)) = echo.recv_from(&mut buf) {
                let _ = echo.send_to(&buf[..n], from);
            }
        });
        let out = run_trace(&config(to, 20), &StopFlag::new()).unwrap();
        server.join().unwrap();
        assert!(!out.interrupted);
        assert_eq!(out.paths.len(), 2);
        assert_ne!(out.paths[0].port, out.paths[1].port);
        for p in &out.paths {
            assert_eq!(p.hops.len(), 1, "{p:?}");
            assert_eq!((p.hops[0].sent, p.hops[0].answered), (20, 20));
            assert_eq!(p.hops[0].responders[0].kind, AnswerKind::Echo);
        }
        let closed = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let out = run_trace(&config(closed, 10), &StopFlag::new()).unwrap();
        for p in &out.paths {
            assert_eq!((p.hops[0].sent, p.hops[0].answered), (10, 10), "{p:?}");
            assert_eq!(p.hops[0].responders[0].kind, AnswerKind::PortUnreachable);
            assert_eq!(p.hops[0].responders[0].addr, closed.ip());
        }
        assert_eq!(out.counts.sent, 20);
    }

    /// A raised flag ends a trace that would run for minutes at once,
    /// with what was settled.
    #[test]
    fn a_stop_ends_it_at_once() {
        let closed = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut cfg = config(closed, 1000);
        cfg.rate = 10.0;
        let stop = StopFlag::new();
        let raise = stop.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            raise.raise();
        });
        let out = run_trace(&cfg, &stop).unwrap();
        t.join().unwrap();
        assert!(out.interrupted);
        // 2,000 probes at 10 a second would take minutes.
        assert!(
            out.counts.sent >= 1 && out.counts.sent < 100,
            "{:?}",
            out.counts
        );
    }
}
