//! The client's side of a load session: its control connection to the
//! reflector's load port, and the bulk streams of each phase, each on a
//! thread of its own (never the measurement thread, and away from its
//! CPU when there is another).

use super::bulk::{self, RateCap, StreamEnd};
use super::line;
use super::wire::{Direction, FromClient, FromReflector, Grant, Hello, Info, Load};
use crate::EngineError;
use crate::protocol::stamp_key::StampKey;
use crate::sys::tcp::tcp_info;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the reflector has to answer a control line, or to accept.
const ANSWER: Duration = Duration::from_secs(5);

/// What a load session asks for.
#[derive(Debug, Clone)]
pub struct LoadClientConfig {
    /// The reflector's load port.
    pub server: SocketAddr,
    /// The local address to connect from (its port the kernel's).
    pub bind: Option<IpAddr>,
    /// Signs the session with this key (the reflector's `--hmac-key-file`).
    pub key: Option<StampKey>,
    /// Seconds of load the run plans, all phases together.
    pub seconds: u32,
    /// The most streams it opens at once.
    pub streams: u32,
    /// The senders' congestion control (`None`: each host's default).
    pub cc: Option<String>,
    /// The measurement thread's CPU, which the streams keep off.
    pub avoid_cpu: Option<usize>,
}

/// A phase's streams so far, as the client sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadSample {
    /// Bytes the download streams received.
    pub down_bytes: u64,
    /// Bytes of the upload streams the reflector's kernel acknowledged.
    pub up_bytes: u64,
    /// Streams opened, each way.
    pub streams_down: u32,
    /// Upload streams opened.
    pub streams_up: u32,
    /// Each upload stream's smoothed RTT (`tcpi_rtt`), µs.
    pub up_rtt_us: Vec<u32>,
    /// Segments the upload streams resent.
    pub up_retrans: u64,
    /// Bytes they resent.
    pub up_bytes_retrans: u64,
    /// What went wrong with a stream, if something did.
    pub problem: Option<String>,
}

/// A running phase's streams.
struct Streams {
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
    cap: Arc<RateCap>,
    uploads: Vec<Arc<TcpStream>>,
    threads: Vec<JoinHandle<()>>,
    problem: Arc<Mutex<Option<String>>>,
    down: u32,
    until: Instant,
}

/// A granted load session.
pub struct LoadClient {
    control: TcpStream,
    /// What the reflector granted.
    pub grant: Grant,
    cfg: LoadClientConfig,
    streams: Option<Streams>,
}

impl std::fmt::Debug for LoadClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadClient")
            .field("server", &self.cfg.server)
            .field("grant", &self.grant)
            .finish_non_exhaustive()
    }
}

/// Opens a connection to the load port and reads its greeting.
fn open(cfg: &LoadClientConfig) -> Result<(TcpStream, [u8; 16]), EngineError> {
    let addr = cfg.server;
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )
    .map_err(EngineError::io("cannot create a TCP socket"))?;
    if let Some(ip) = cfg.bind {
        sock.bind(&SocketAddr::new(ip, 0).into())
            .map_err(|e| failed(addr, &format!("cannot bind {ip}: {e}")))?;
    }
    sock.connect_timeout(&addr.into(), ANSWER)
        .map_err(|e| match e.kind() {
            io::ErrorKind::ConnectionRefused => EngineError::LoadUnserved(addr),
            _ => EngineError::TcpConnect {
                addr,
                reason: e.to_string(),
            },
        })?;
    let mut stream: TcpStream = sock.into();
    let _ = stream.set_nodelay(true);
    stream
        .set_read_timeout(Some(ANSWER))
        .map_err(EngineError::io("cannot set a read timeout"))?;
    match read(&mut stream, addr)? {
        FromReflector::Greeting { nonce } => Ok((stream, nonce)),
        FromReflector::Refused(why) => Err(EngineError::LoadRefused { addr, reason: why }),
        other => Err(failed(addr, &format!("it greeted with {}", other.encode()))),
    }
}

fn failed(addr: SocketAddr, reason: &str) -> EngineError {
    EngineError::LoadFailed {
        addr,
        reason: reason.into(),
    }
}

/// One line from the reflector.
fn read(stream: &mut TcpStream, addr: SocketAddr) -> Result<FromReflector, EngineError> {
    let text = line::receive(stream).map_err(|e| {
        let what = if line::waited(&e) {
            "no answer in time".to_string()
        } else {
            e.to_string()
        };
        failed(addr, &what)
    })?;
    FromReflector::parse(&text).map_err(|e| failed(addr, &e))
}

fn write(stream: &mut TcpStream, addr: SocketAddr, msg: &FromClient) -> Result<(), EngineError> {
    line::send(stream, &msg.encode()).map_err(|e| failed(addr, &e.to_string()))
}

impl LoadClient {
    /// Asks the reflector for a session: its grant, or why not.
    pub fn connect(cfg: LoadClientConfig) -> Result<Self, EngineError> {
        let addr = cfg.server;
        let (mut control, nonce) = open(&cfg)?;
        let mut hello = Hello {
            seconds: cfg.seconds,
            streams: cfg.streams,
            mac: None,
        };
        hello.mac = cfg
            .key
            .as_ref()
            .map(|k| k.message_mac(&[&nonce, hello.signed_text().as_bytes()]));
        write(&mut control, addr, &FromClient::Hello(hello))?;
        match read(&mut control, addr)? {
            FromReflector::Granted(grant) => Ok(Self {
                control,
                grant,
                cfg,
                streams: None,
            }),
            FromReflector::Refused(why) => Err(EngineError::LoadRefused { addr, reason: why }),
            other => Err(failed(addr, &format!("it answered {}", other.encode()))),
        }
    }

    /// One control exchange.
    fn ask(&mut self, msg: &FromClient) -> Result<FromReflector, EngineError> {
        let addr = self.cfg.server;
        write(&mut self.control, addr, msg)?;
        read(&mut self.control, addr)
    }

    /// Starts a phase of at most `seconds` (no stream yet).
    pub fn begin(&mut self, load: Load, seconds: u32) -> Result<(), EngineError> {
        self.end_streams();
        match self.ask(&FromClient::Phase { load, seconds })? {
            FromReflector::Go => {
                self.streams = Some(Streams {
                    stop: Arc::new(AtomicBool::new(false)),
                    received: Arc::new(AtomicU64::new(0)),
                    written: Arc::new(AtomicU64::new(0)),
                    cap: Arc::new(RateCap::new(self.grant.rate_bps)),
                    uploads: Vec::new(),
                    threads: Vec::new(),
                    problem: Arc::new(Mutex::new(None)),
                    down: 0,
                    until: Instant::now()
                        + Duration::from_secs(u64::from(seconds))
                        + super::server_state::GRACE,
                });
                Ok(())
            }
            FromReflector::Refused(why) => Err(EngineError::LoadRefused {
                addr: self.cfg.server,
                reason: why,
            }),
            other => Err(failed(
                self.cfg.server,
                &format!("it answered {}", other.encode()),
            )),
        }
    }

    /// Opens one more stream of the phase, `dir` its direction.
    pub fn add_stream(&mut self, dir: Direction) -> Result<(), EngineError> {
        let addr = self.cfg.server;
        let session = self.grant.session;
        let Some(streams) = self.streams.as_mut() else {
            return Err(failed(addr, "a stream outside a phase"));
        };
        let (mut stream, _) = open(&self.cfg)?;
        let cc = self.cfg.cc.clone();
        if dir == Direction::Up
            && let Some(cc) = &cc
        {
            socket2::SockRef::from(&stream)
                .set_tcp_congestion(cc.as_bytes())
                .map_err(|e| EngineError::LoadRefused {
                    addr,
                    reason: format!("congestion control {cc} is not available on this host ({e})"),
                })?;
        }
        let msg = FromClient::Data { session, dir, cc };
        write(&mut stream, addr, &msg)?;
        match read(&mut stream, addr)? {
            FromReflector::Go => {}
            FromReflector::Refused(why) => {
                return Err(EngineError::LoadRefused { addr, reason: why });
            }
            other => return Err(failed(addr, &format!("it answered {}", other.encode()))),
        }
        bulk::arm(&stream).map_err(EngineError::io("cannot set a stream's timeouts"))?;
        let stream = Arc::new(stream);
        if dir == Direction::Up {
            streams.uploads.push(Arc::clone(&stream));
        } else {
            streams.down += 1;
        }
        let handle = spawn_stream(streams, stream, dir, self.cfg.avoid_cpu)
            .map_err(EngineError::io("cannot start a load stream's thread"))?;
        streams.threads.push(handle);
        Ok(())
    }

    /// The phase's streams as they are now.
    pub fn sample(&self) -> LoadSample {
        let Some(s) = &self.streams else {
            return LoadSample::default();
        };
        let mut out = LoadSample {
            down_bytes: s.received.load(Ordering::Relaxed),
            streams_down: s.down,
            streams_up: s.uploads.len() as u32,
            problem: s.problem.lock().ok().and_then(|p| p.clone()),
            ..LoadSample::default()
        };
        for up in &s.uploads {
            if let Ok(t) = tcp_info(up.as_raw_fd()) {
                out.up_bytes += t.bytes_acked;
                out.up_rtt_us.push(t.rtt_us);
                out.up_retrans += u64::from(t.total_retrans);
                out.up_bytes_retrans += t.bytes_retrans;
            }
        }
        out
    }

    /// The reflector's side of the phase so far.
    pub fn remote(&mut self) -> Result<Info, EngineError> {
        match self.ask(&FromClient::Info)? {
            FromReflector::Info(i) => Ok(i),
            other => Err(failed(
                self.cfg.server,
                &format!("it answered {}", other.encode()),
            )),
        }
    }

    /// Ends the phase: the reflector's last word on it, then its streams
    /// are stopped and closed.
    pub fn end(&mut self) -> Result<Info, EngineError> {
        let last = match self.ask(&FromClient::End)? {
            FromReflector::Info(i) => i,
            other => {
                return Err(failed(
                    self.cfg.server,
                    &format!("it answered {}", other.encode()),
                ));
            }
        };
        self.end_streams();
        Ok(last)
    }

    /// Stops the phase's streams and waits for their threads.
    fn end_streams(&mut self) {
        if let Some(s) = self.streams.take() {
            s.stop.store(true, Ordering::Relaxed);
            for t in s.threads {
                let _ = t.join();
            }
        }
    }

    /// Ends the session (streams first); the reflector logs it at once.
    pub fn close(&mut self) {
        self.end_streams();
        let _ = write(&mut self.control, self.cfg.server, &FromClient::Bye);
    }
}

impl Drop for LoadClient {
    fn drop(&mut self) {
        self.end_streams();
    }
}

/// A stream's thread: it moves bytes until the phase stops it, and says
/// what went wrong when something else ends it.
fn spawn_stream(
    streams: &Streams,
    stream: Arc<TcpStream>,
    dir: Direction,
    avoid_cpu: Option<usize>,
) -> io::Result<JoinHandle<()>> {
    let stop = Arc::clone(&streams.stop);
    let (received, written) = (Arc::clone(&streams.received), Arc::clone(&streams.written));
    let cap = Arc::clone(&streams.cap);
    let problem = Arc::clone(&streams.problem);
    let until = streams.until;
    std::thread::Builder::new()
        .name(format!("synapse-load-{}", dir.name()))
        .spawn(move || {
            keep_off(avoid_cpu);
            let halt = || stop.load(Ordering::Relaxed);
            let end = match dir {
                Direction::Down => bulk::receive(&stream, &cap, &halt, Some(until), &received),
                Direction::Up => bulk::send(&stream, &cap, &halt, Some(until), &written),
            };
            // A stream that ended on its own while the phase ran.
            if let (false, Some(why)) = (halt(), end.problem())
                && let Ok(mut p) = problem.lock()
            {
                p.get_or_insert(format!("{why} ({} stream)", dir.name()));
            }
            let _: StreamEnd = end;
        })
}

/// Keeps the calling thread off `cpu` when another CPU is allowed.
fn keep_off(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    if let Ok(all) = crate::sys::affinity::allowed_cpus() {
        let others: Vec<usize> = all.into_iter().filter(|&c| c != cpu).collect();
        if !others.is_empty() {
            let _ = crate::sys::affinity::allow_current_thread(&others);
        }
    }
}
