//! The TCP client: request/response over one connection (`pingpong`), or
//! over a new one per transaction (`crr`, `--connect-each`), on the same
//! pinned thread, with the same warm-up, counts, records and rings as the
//! UDP client. The first connection is opened before the thread starts,
//! so a peer that refuses fails at once, like a bad address.
//!
//! - `conn`: opening one connection; sending a request whole.
//! - `frame`: one reply, read in however many pieces the stream gives.
//! - `wait`: waiting for it (blocking in the receive, or spinning).
//! - `settle`: what becomes of each request and reply.
//! - `slow`: which replies have the kernel asked whether it resent.
//! - `stamps`: SCHED, SND and ACK stamps numbered by byte; RX stamps.
//! - `kernel`: `TCP_INFO`, off the per-transaction path.
//! - `link`: losing the connection and opening it again, with backoff.

mod conn;
mod crr;
mod frame;
mod kernel;
mod link;
mod pingpong;
mod settle;
mod slow;
mod stamps;
mod wait;

pub(crate) use conn::Opener;

use super::output::Output;
use super::recv_timeout::kernel_tick;
use super::run_loop;
use super::run_token::run_token;
use super::{ClientConfig, ClientRun, StampingInfo};
use crate::affinity::place_current_thread;
use crate::mono::Mono;
use crate::socket::wildcard_for;
use crate::timestamping::{self, TimestampMode, capabilities::Source};
use crate::{EngineError, StopFlag};
use conn::{Conn, OpenError};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use synapse_stats::tcp::ConnectFailure;
use synapse_stats::{SegmentSet, Shape, Stats, TcpLive};

/// Why the first connection could not be opened, as the user is told.
fn open_error(server: SocketAddr, timeout: Duration, (why, e): OpenError) -> EngineError {
    match why {
        ConnectFailure::Refused => EngineError::TcpRefused(server),
        ConnectFailure::TimedOut => EngineError::TcpConnect {
            addr: server,
            reason: format!(
                "no answer within {} (host unreachable, or a firewall drops it)",
                synapse_units::duration_text(timeout)
            ),
        },
        ConnectFailure::Other => EngineError::TcpConnect {
            addr: server,
            reason: e.to_string(),
        },
    }
}

/// The stamps a TCP run can have: kernel software stamps (the ACK stamp
/// is a software one; a NIC's clock is never switched on for TCP), or
/// user space only.
fn choose_stamps(cfg: &ClientConfig, local: SocketAddr) -> Result<StampingInfo, EngineError> {
    let (mode, note) = match cfg.timestamps {
        TimestampMode::User => (TimestampMode::User, None),
        TimestampMode::Hardware => (
            TimestampMode::Software,
            Some("TCP: no NIC stamps (the ACK stamp is the kernel's): using software".into()),
        ),
        _ => (TimestampMode::Software, None),
    };
    let chosen = timestamping::choose(mode, local.ip())?;
    let kernel = chosen.source != Source::User;
    Ok(StampingInfo {
        source: chosen.source,
        interface: chosen.interface,
        note: note.or(chosen.note),
        hardware_enabled_here: false,
        stamp: false,
        segments: SegmentSet::for_run(kernel, false, false).with_tcp(),
        tx_every: if kernel { cfg.tx_stamp_every.max(1) } else { 1 },
        follow_up: false,
        follow_up_hardware: false,
    })
}

/// The source address the route to `peer` takes (port 0): connecting a
/// throwaway UDP socket sends nothing but asks the kernel.
fn route_source(bind: Option<SocketAddr>, peer: SocketAddr) -> SocketAddr {
    let from = bind.unwrap_or_else(|| wildcard_for(peer));
    std::net::UdpSocket::bind(SocketAddr::new(from.ip(), 0))
        .and_then(|s| s.connect(peer).and_then(|()| s.local_addr()))
        .map_or(from, |a| SocketAddr::new(a.ip(), from.port()))
}

/// What the thread is given.
enum Work {
    /// The first connection (`None`: the thread opens it).
    PingPong(Option<Box<Conn>>),
    ConnectEach(Duration),
}

/// Opens the first connection (ping-pong) and starts the pinned thread.
pub(crate) fn start(cfg: ClientConfig, stop: StopFlag) -> Result<ClientRun, EngineError> {
    let mut opener = Opener {
        server: cfg.server,
        bind: cfg.bind,
        timeout: cfg.timeout,
        busy_poll: cfg.thread.busy_poll,
        stamp_every: None,
        // The DSCP only: a connection's ECN bits are its kernel's.
        tos: cfg.marks.map(|tos| tos & !0b11),
    };
    let (work, local, stamping) = if cfg.connect_each {
        let socket = opener
            .socket()
            .map_err(EngineError::io("cannot create a TCP socket"))?;
        let tick = kernel_tick(&socket).map_err(EngineError::io("cannot configure socket"))?;
        let stamping = StampingInfo {
            note: (cfg.timestamps != TimestampMode::User).then(|| {
                "--connect-each: the handshake is timed apart (connect, first byte); no kernel stamps".into()
            }),
            ..StampingInfo::default()
        };
        (
            Work::ConnectEach(tick),
            route_source(cfg.bind, cfg.server),
            stamping,
        )
    } else {
        // Kept trying: a peer down at the start is counted like one lost
        // later, and the first connection is opened by the thread.
        let mut first = match opener.open() {
            Ok(conn) => Some(conn),
            Err(_) if cfg.keep_trying => None,
            Err(e) => return Err(open_error(cfg.server, cfg.timeout, e)),
        };
        let local = first
            .as_ref()
            .map_or_else(|| route_source(cfg.bind, cfg.server), |c| c.local);
        let stamping = choose_stamps(&cfg, local)?;
        if stamping.source != Source::User {
            let every = stamping.tx_every;
            if let Some(first) = first.as_mut() {
                first.stamps = Some(
                    stamps::TcpStamps::enable(first.fd, every)
                        .map_err(EngineError::io("cannot enable SO_TIMESTAMPING"))?,
                );
            }
            crate::sys::timestamping::wait_for_rx_stamping(Duration::from_millis(500));
            opener.stamp_every = Some(every);
        }
        (Work::PingPong(first.map(Box::new)), local, stamping)
    };
    spawn(cfg, stop, opener, work, local, stamping)
}

/// Starts the measurement thread.
fn spawn(
    cfg: ClientConfig,
    stop: StopFlag,
    opener: Opener,
    work: Work,
    local: SocketAddr,
    stamping: StampingInfo,
) -> Result<ClientRun, EngineError> {
    let (output, rings) = Output::with_rings(cfg.ring_capacity, cfg.log_capacity);
    let shape = Shape {
        segments: stamping.segments,
        schedule: None,
        one_way: None,
        cos: None,
    };
    let live = Arc::new(TcpLive::default());
    let (thread_live, thread_stop, thread_info) =
        (Arc::clone(&live), stop.clone(), stamping.clone());
    let handle = std::thread::Builder::new()
        .name("synapse-client".into())
        .spawn(move || {
            let placement = place_current_thread(cfg.thread).placement;
            let stats = Stats::shaped(shape);
            let token = run_token(Mono::now());
            let outcome = match work {
                Work::PingPong(first) => {
                    let link = link::Link::new(opener, first.map(|c| *c));
                    let mut pinger =
                        pingpong::TcpPinger::new(&cfg, link, output, stats, thread_live, token);
                    run_loop::run(&mut pinger, &cfg, &thread_stop, placement)
                }
                Work::ConnectEach(tick) => {
                    let mut crr = crr::TcpCrr::new(&cfg, opener, output, stats, token, tick);
                    run_loop::run(&mut crr, &cfg, &thread_stop, placement)
                }
            };
            outcome.map(|o| super::ClientOutcome {
                stamping: thread_info,
                ..o
            })
        })
        .map_err(EngineError::io("cannot start the measurement thread"))?;
    Ok(ClientRun {
        records: rings.records,
        points: rings.points,
        local,
        stamping,
        shape,
        tcp_live: Some(live),
        responders: None,
        responder_overflow: Default::default(),
        responder_directory: None,
        responder_points: None,
        stop,
        overflow: rings.overflow,
        handle: Some(handle),
    })
}
