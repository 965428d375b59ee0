//! The client's side of a load session: its control connection to the
//! reflector's load port, and the bulk streams of each phase, each on a
//! thread of its own (never the measurement thread, and away from its
//! CPU when there is another).

use super::bulk::{self, RateCap, StreamEnd};
use super::line;
use super::wire::{FromClient, FromReflector, Grant, Hello, Info, PhaseKind, Way};
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
/// How often a phase asks the reflector for its side (its senders' round
/// trips and resends), on a thread of its own: under a full queue an
/// answer can take seconds (a drop-tail queue drops it, TCP resends), and
/// nothing else may wait for it.
const ASK_EVERY: Duration = Duration::from_millis(500);

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
    /// It was the reflector's (or this host's) refusal: a limit, a
    /// congestion control it lacks.
    pub refused: bool,
}

/// A running phase's streams.
struct Streams {
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
    cap: Arc<RateCap>,
    /// The upload streams' sockets once open, for their kernel's figures.
    uploads: Arc<Mutex<Vec<Arc<TcpStream>>>>,
    threads: Vec<JoinHandle<()>>,
    problem: Arc<Mutex<Option<String>>>,
    refused: Arc<AtomicBool>,
    down: u32,
    up: u32,
    until: Instant,
    /// The reflector's side, as last told.
    remote: Arc<Mutex<Option<Info>>>,
}

/// A granted load session.
pub struct LoadClient {
    /// Shared with the phase's thread that asks for the reflector's side.
    control: Arc<Mutex<TcpStream>>,
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
                control: Arc::new(Mutex::new(control)),
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
        exchange(&self.control, self.cfg.server, msg)
    }

    /// Starts a phase of at most `seconds` (no stream yet).
    pub fn begin(&mut self, load: PhaseKind, seconds: u32) -> Result<(), EngineError> {
        self.end_streams();
        match self.ask(&FromClient::Phase { load, seconds })? {
            FromReflector::Go => {
                let mut streams = Streams {
                    stop: Arc::new(AtomicBool::new(false)),
                    received: Arc::new(AtomicU64::new(0)),
                    written: Arc::new(AtomicU64::new(0)),
                    cap: Arc::new(RateCap::new(self.grant.rate_bps)),
                    uploads: Arc::new(Mutex::new(Vec::new())),
                    threads: Vec::new(),
                    problem: Arc::new(Mutex::new(None)),
                    refused: Arc::new(AtomicBool::new(false)),
                    down: 0,
                    up: 0,
                    until: Instant::now()
                        + Duration::from_secs(u64::from(seconds))
                        + super::server_state::GRACE,
                    remote: Arc::new(Mutex::new(None)),
                };
                let asking = spawn_asking(&streams, Arc::clone(&self.control), self.cfg.server)
                    .map_err(EngineError::io("cannot start a load phase's thread"))?;
                streams.threads.push(asking);
                self.streams = Some(streams);
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

    /// Opens one more stream of the phase, `dir` its direction, on a
    /// thread of its own: its handshake under a full queue can take as
    /// long as the queue holds, and nothing else waits for it. What goes
    /// wrong is the phase's problem ([`LoadSample::problem`]).
    pub fn add_stream(&mut self, dir: Way) -> Result<(), EngineError> {
        let addr = self.cfg.server;
        let Some(streams) = self.streams.as_mut() else {
            return Err(failed(addr, "a stream outside a phase"));
        };
        match dir {
            Way::Up => streams.up += 1,
            Way::Down => streams.down += 1,
        }
        let handle = spawn_stream(streams, self.cfg.clone(), self.grant.session, dir)
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
            streams_up: s.up,
            problem: s.problem.lock().ok().and_then(|p| p.clone()),
            refused: s.refused.load(Ordering::Relaxed),
            ..LoadSample::default()
        };
        let uploads = s.uploads.lock().map(|u| u.clone()).unwrap_or_default();
        for up in &uploads {
            if let Ok(t) = tcp_info(up.as_raw_fd()) {
                out.up_bytes += t.bytes_acked;
                out.up_rtt_us.push(t.rtt_us);
                out.up_retrans += u64::from(t.total_retrans);
                out.up_bytes_retrans += t.bytes_retrans;
            }
        }
        out
    }

    /// The reflector's side of the phase as it last said (asked twice a
    /// second, never waited for).
    pub fn remote(&self) -> Option<Info> {
        self.streams
            .as_ref()
            .and_then(|s| s.remote.lock().ok().and_then(|r| r.clone()))
    }

    /// Ends the phase: its streams are stopped and closed first (so the
    /// queues they filled drain), then the reflector's last word on it.
    pub fn end(&mut self) -> Result<Info, EngineError> {
        self.end_streams();
        match self.ask(&FromClient::End)? {
            FromReflector::Info(i) => Ok(i),
            other => Err(failed(
                self.cfg.server,
                &format!("it answered {}", other.encode()),
            )),
        }
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
        if let Ok(mut c) = self.control.lock() {
            let _ = write(&mut c, self.cfg.server, &FromClient::Bye);
        }
    }
}

impl Drop for LoadClient {
    fn drop(&mut self) {
        self.end_streams();
    }
}

/// Keeps the first problem a phase had.
fn note(problem: &Mutex<Option<String>>, why: String) {
    if let Ok(mut p) = problem.lock() {
        p.get_or_insert(why);
    }
}

/// One exchange on the control connection, holding it for the while.
fn exchange(
    control: &Mutex<TcpStream>,
    addr: SocketAddr,
    msg: &FromClient,
) -> Result<FromReflector, EngineError> {
    let mut c = control
        .lock()
        .map_err(|_| failed(addr, "the control connection's holder failed"))?;
    write(&mut c, addr, msg)?;
    read(&mut c, addr)
}

/// A phase's thread that asks the reflector for its side every
/// [`ASK_EVERY`], keeping the latest answer; a control connection that
/// fails is the phase's problem.
fn spawn_asking(
    streams: &Streams,
    control: Arc<Mutex<TcpStream>>,
    addr: SocketAddr,
) -> io::Result<JoinHandle<()>> {
    let stop = Arc::clone(&streams.stop);
    let (remote, problem) = (Arc::clone(&streams.remote), Arc::clone(&streams.problem));
    std::thread::Builder::new()
        .name("synapse-load-ask".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match exchange(&control, addr, &FromClient::Info) {
                    Ok(FromReflector::Info(i)) => {
                        if let Ok(mut r) = remote.lock() {
                            *r = Some(i);
                        }
                    }
                    Ok(other) => {
                        let why = format!("the reflector answered {}", other.encode());
                        note(&problem, why);
                        return;
                    }
                    Err(e) if !stop.load(Ordering::Relaxed) => {
                        note(&problem, e.to_string());
                        return;
                    }
                    Err(_) => return,
                }
                let until = Instant::now() + ASK_EVERY;
                while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(bulk::POLL / 4);
                }
            }
        })
}

/// Opens a stream of session `session`: the reflector's greeting, DATA,
/// its GO.
fn attach(cfg: &LoadClientConfig, session: u64, dir: Way) -> Result<TcpStream, EngineError> {
    let addr = cfg.server;
    let (mut stream, _) = open(cfg)?;
    let cc = cfg.cc.clone();
    if dir == Way::Up
        && let Some(cc) = &cc
    {
        socket2::SockRef::from(&stream)
            .set_tcp_congestion(cc.as_bytes())
            .map_err(|e| EngineError::LoadRefused {
                addr,
                reason: format!("congestion control {cc} is not available on this host ({e})"),
            })?;
    }
    write(&mut stream, addr, &FromClient::Data { session, dir, cc })?;
    match read(&mut stream, addr)? {
        FromReflector::Go => {}
        FromReflector::Refused(why) => return Err(EngineError::LoadRefused { addr, reason: why }),
        other => return Err(failed(addr, &format!("it answered {}", other.encode()))),
    }
    bulk::arm(&stream).map_err(EngineError::io("cannot set a stream's timeouts"))?;
    Ok(stream)
}

/// A stream's thread: it opens its connection, moves bytes until the
/// phase stops it, and says what went wrong when something else ends it.
fn spawn_stream(
    streams: &Streams,
    cfg: LoadClientConfig,
    session: u64,
    dir: Way,
) -> io::Result<JoinHandle<()>> {
    let stop = Arc::clone(&streams.stop);
    let (received, written) = (Arc::clone(&streams.received), Arc::clone(&streams.written));
    let (cap, uploads) = (Arc::clone(&streams.cap), Arc::clone(&streams.uploads));
    let (problem, refused) = (Arc::clone(&streams.problem), Arc::clone(&streams.refused));
    let until = streams.until;
    std::thread::Builder::new()
        .name(format!("synapse-load-{}", dir.name()))
        .spawn(move || {
            keep_off(cfg.avoid_cpu);
            let halt = || stop.load(Ordering::Relaxed);
            let stream = match attach(&cfg, session, dir) {
                Ok(s) => Arc::new(s),
                Err(e) => {
                    if !halt() {
                        refused.fetch_or(
                            matches!(e, EngineError::LoadRefused { .. }),
                            Ordering::Relaxed,
                        );
                        note(&problem, e.to_string());
                    }
                    return;
                }
            };
            if dir == Way::Up
                && let Ok(mut u) = uploads.lock()
            {
                u.push(Arc::clone(&stream));
            }
            let end = match dir {
                Way::Down => bulk::receive(&stream, &cap, &halt, Some(until), &received),
                Way::Up => bulk::send(&stream, &cap, &halt, Some(until), &written),
            };
            // A stream that ended on its own while the phase ran.
            if let (false, Some(why)) = (halt(), end.problem()) {
                note(&problem, format!("{why} ({} stream)", dir.name()));
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
