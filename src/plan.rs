//! Turns the parsed command line into a validated plan: every default
//! resolved, every address resolved, every CPU checked. Nothing starts until
//! this succeeds, so bad input fails fast with one clear line.

use crate::cli::{Cli, ClientArgs, Command, RunArgs, ServerArgs};
use crate::engine::{Role, choose_cpu, resolve};
use crate::error::AppError;
use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// The seed's default packet count for a bounded run.
pub const DEFAULT_PACKETS: u64 = 10_000;
/// The port `synapse server` listens on by default.
pub const DEFAULT_PORT: u16 = 8080;

/// How results are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The full-screen live display.
    Ui,
    /// The text report on stdout.
    Text,
    /// One JSON object on stdout.
    Json,
}

/// Who the client measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An in-process reflector on 127.0.0.1, started for the run.
    Loopback,
    /// A reflector elsewhere.
    Remote(SocketAddr),
}

/// A measurement thread's placement request, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPlan {
    /// CPU to pin to.
    pub cpu: usize,
    /// Picked by Synapse.
    pub cpu_auto: bool,
    /// Spin instead of blocking.
    pub busy_poll: bool,
    /// Ask for SCHED_FIFO.
    pub rt: bool,
}

/// A validated client run.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// Who to measure.
    pub target: Target,
    /// Local address, if given.
    pub bind: Option<SocketAddr>,
    /// Packet count (`None` with a duration, or unbounded in the live display).
    pub packets: Option<u64>,
    /// Measuring time.
    pub duration: Option<Duration>,
    /// Warm-up packets.
    pub warmup: u64,
    /// Per-reply timeout.
    pub timeout: Duration,
    /// Payload size.
    pub size: usize,
    /// Animation sampling, in packets.
    pub update: u64,
    /// Verdict threshold on the mean.
    pub threshold: Duration,
    /// Client thread placement.
    pub thread: ThreadPlan,
    /// Placement of the in-process reflector (loopback only).
    pub reflector_thread: ThreadPlan,
    /// How to show results.
    pub output: Output,
    /// Live display frame rate.
    pub fps: u32,
}

/// A validated reflector run.
#[derive(Debug, Clone)]
pub struct ServerPlan {
    /// Listen address.
    pub bind: SocketAddr,
    /// Idle time that ends a session.
    pub session_idle: Duration,
    /// Thread placement.
    pub thread: ThreadPlan,
    /// How to show results.
    pub output: Output,
    /// Live display frame rate.
    pub fps: u32,
}

/// What to do.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Measure.
    Client(ClientPlan),
    /// Reflect.
    Server(ServerPlan),
}

/// Whether the live display can be used at all.
pub fn ui_possible() -> bool {
    std::io::stdout().is_terminal()
}

/// Validates the command line into a plan.
pub fn plan(cli: Cli) -> Result<Plan, AppError> {
    match cli.command {
        None => client_plan(Target::Loopback, None, &cli.run),
        Some(Command::Client(ClientArgs {
            addr,
            server,
            bind,
            run,
        })) => {
            let text = addr
                .or(server)
                .unwrap_or_else(|| format!("127.0.0.1:{DEFAULT_PORT}"));
            let target = Target::Remote(resolve(&text, DEFAULT_PORT)?);
            let bind = bind.map(|b| resolve(&b, 0)).transpose()?;
            client_plan(target, bind, &run)
        }
        Some(Command::Server(s)) => server_plan(&s),
    }
}

fn output_for(no_ui: bool, json: bool) -> Output {
    if json {
        Output::Json
    } else if no_ui || !ui_possible() {
        Output::Text
    } else {
        Output::Ui
    }
}

fn client_plan(target: Target, bind: Option<SocketAddr>, run: &RunArgs) -> Result<Plan, AppError> {
    if let (Some(b), Target::Remote(peer)) = (bind, target)
        && b.is_ipv4() != peer.is_ipv4()
    {
        return Err(AppError::Usage(format!(
            "--bind {b} and server {peer} are of different IP versions"
        )));
    }
    let output = output_for(run.no_ui, run.json);
    let (cpu, cpu_auto) = choose_cpu(run.thread.cpu, Role::Client)?;
    let (mut rcpu, rauto) = choose_cpu(None, Role::Reflector)?;
    if rcpu == cpu {
        // A user-chosen client CPU may collide with the reflector's default.
        if let Ok((other, _)) = choose_cpu(None, Role::Client) {
            rcpu = other;
        }
    }
    // The live display runs until stopped unless a count or time was given;
    // headless runs keep the seed's default of 10000 packets.
    let packets = match (run.packets, run.duration, output) {
        (Some(n), _, _) => Some(n),
        (None, Some(_), _) | (None, None, Output::Ui) => None,
        (None, None, _) => Some(DEFAULT_PACKETS),
    };
    if packets == Some(0) {
        return Err(AppError::Usage("--packets must be at least 1".into()));
    }
    if run.duration == Some(Duration::ZERO) {
        return Err(AppError::Usage(
            "--duration must be longer than zero".into(),
        ));
    }
    Ok(Plan::Client(ClientPlan {
        target,
        bind,
        packets,
        duration: run.duration,
        warmup: run.warmup,
        timeout: Duration::from_millis(run.timeout),
        size: run.size,
        update: run.update,
        threshold: run.threshold,
        thread: ThreadPlan {
            cpu,
            cpu_auto,
            busy_poll: run.thread.busy_poll,
            rt: run.thread.rt,
        },
        reflector_thread: ThreadPlan {
            cpu: rcpu,
            cpu_auto: rauto,
            busy_poll: run.thread.busy_poll,
            rt: run.thread.rt,
        },
        output,
        fps: run.fps,
    }))
}

fn server_plan(s: &ServerArgs) -> Result<Plan, AppError> {
    let bind = resolve(&s.bind, DEFAULT_PORT)?;
    let (cpu, cpu_auto) = choose_cpu(s.thread.cpu, Role::Reflector)?;
    if s.session_idle.is_zero() {
        return Err(AppError::Usage(
            "--session-idle must be longer than zero".into(),
        ));
    }
    Ok(Plan::Server(ServerPlan {
        bind,
        session_idle: s.session_idle,
        thread: ThreadPlan {
            cpu,
            cpu_auto,
            busy_poll: s.thread.busy_poll,
            rt: s.thread.rt,
        },
        output: output_for(s.no_ui, false),
        fps: s.fps,
    }))
}

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
        session_idle: Duration::from_secs(1),
        thread: c.reflector_thread,
        output: c.output,
        fps: c.fps,
    }
}

/// The client the live display runs when a server switches role: it
/// measures this very reflector, with the default run options.
pub fn counterpart_client(s: &ServerPlan) -> Result<ClientPlan, AppError> {
    let mut run = RunArgs::defaults();
    run.fps = s.fps;
    run.thread.busy_poll = s.thread.busy_poll;
    run.thread.rt = s.thread.rt;
    match client_plan(Target::Remote(connectable(s.bind)), None, &run)? {
        Plan::Client(mut c) => {
            c.output = s.output;
            c.packets = None;
            c.reflector_thread = s.thread;
            Ok(c)
        }
        Plan::Server(_) => unreachable!("client_plan builds client plans"),
    }
}
