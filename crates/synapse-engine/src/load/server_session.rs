//! A load session on the reflector: its control connection (HELLO, then
//! PHASE, INFO, END, BYE) and, in [`serve_stream`], each of its streams.

use super::bulk::{self, RateCap, StreamEnd};
use super::line;
use super::server_state::{ActivePhase, CONTROL_IDLE, GRACE, LoadEvent, Session, Shared};
use super::wire::{FromClient, FromReflector, Grant, Hello, Info, PhaseKind, Way};
use crate::sys::tcp::tcp_info;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Serves a session's control connection from its HELLO to its end.
pub(super) fn control(
    shared: &Arc<Shared>,
    mut stream: TcpStream,
    peer: SocketAddr,
    nonce: &[u8; 16],
    hello: &Hello,
) {
    let (id, session) = match grant(shared, peer, nonce, hello) {
        Ok(granted) => granted,
        Err(why) => {
            shared.refuse(&mut stream, peer, why);
            return;
        }
    };
    let g = Grant {
        session: id,
        echo: shared.cfg.echo_port,
        stamp: shared.cfg.stamp_port,
        seconds: shared.cfg.max_seconds,
        rate_bps: shared.cfg.rate_bps,
        streams: shared.cfg.max_streams,
        cc: shared.cc_default.clone(),
    };
    shared.tell(LoadEvent::Started { peer });
    if let Ok(mut t) = shared.totals.lock() {
        t.sessions += 1;
    }
    let _ = line::send(&mut stream, &FromReflector::Granted(g).encode());
    let (phases, problem) = converse(shared, &mut stream, &session);
    end_phase(&session);
    if let Ok(mut all) = shared.sessions.lock() {
        all.remove(&id);
    }
    let (sent, received) = (
        session.sent.load(Ordering::Relaxed),
        session.received.load(Ordering::Relaxed),
    );
    if let Ok(mut t) = shared.totals.lock() {
        t.sent += sent;
        t.received += received;
    }
    shared.tell(LoadEvent::Ended {
        peer,
        phases,
        sent,
        received,
        problem,
    });
}

/// Checks a HELLO against the key and the limits, and registers the
/// session: its number, or the refusal's words.
fn grant(
    shared: &Shared,
    peer: SocketAddr,
    nonce: &[u8; 16],
    hello: &Hello,
) -> Result<(u64, Arc<Session>), String> {
    let cfg = &shared.cfg;
    if let Some(key) = &cfg.key {
        let signed = hello.signed_text();
        let ok = hello
            .mac
            .is_some_and(|m| key.message_mac_verifies(&[nonce, signed.as_bytes()], &m));
        if !ok {
            return Err(
                "the reflector needs the session signed with its key (--hmac-key-file on both ends)"
                    .into(),
            );
        }
    }
    if hello.seconds > cfg.max_seconds {
        return Err(format!(
            "the run plans {} s of load; this reflector allows {} s a session (--load-max-seconds): shorten --load-phase or load fewer phases",
            hello.seconds, cfg.max_seconds
        ));
    }
    let mut all = shared.sessions.lock().map_err(|_| "the reflector failed")?;
    if all.len() >= cfg.max_sessions {
        return Err(format!(
            "{} load sessions already running, the most this reflector serves at once (--load-max-sessions {}): try again later",
            all.len(),
            cfg.max_sessions
        ));
    }
    let id = crate::sys::random::random_u64().map_err(|e| e.to_string())?;
    let session = Arc::new(Session {
        peer: peer.ip(),
        cap_down: RateCap::new(cfg.rate_bps),
        cap_up: RateCap::new(cfg.rate_bps),
        streams_open: AtomicU32::new(0),
        phase: Mutex::new(None),
        sent: AtomicU64::new(0),
        received: AtomicU64::new(0),
        senders: Mutex::new(Vec::new()),
        seconds_left: AtomicU32::new(cfg.max_seconds),
    });
    all.insert(id, Arc::clone(&session));
    Ok((id, session))
}

/// The control connection's lines until BYE, a close, silence or the
/// server's stop: the phases it ran, and what went wrong.
fn converse(shared: &Shared, stream: &mut TcpStream, session: &Session) -> (u32, Option<String>) {
    let _ = stream.set_read_timeout(Some(bulk::POLL));
    let mut phases = 0;
    let mut heard = Instant::now();
    loop {
        if shared.stop.is_raised() {
            return (phases, Some("the reflector stopped".into()));
        }
        let text = match line::receive(stream) {
            Ok(t) => t,
            Err(e) if line::waited(&e) => {
                if heard.elapsed() > CONTROL_IDLE {
                    return (phases, Some("the client went silent".into()));
                }
                continue;
            }
            Err(e) => return (phases, Some(format!("the control connection ended: {e}"))),
        };
        heard = Instant::now();
        let answer = match FromClient::parse(&text) {
            Ok(FromClient::Phase { load, seconds }) => match begin_phase(session, load, seconds) {
                Ok(()) => {
                    phases += 1;
                    FromReflector::Go
                }
                Err(why) => FromReflector::Refused(why),
            },
            Ok(FromClient::Info) => FromReflector::Info(info(session)),
            Ok(FromClient::End) => {
                let last = info(session);
                end_phase(session);
                FromReflector::Info(last)
            }
            Ok(FromClient::Bye) => return (phases, None),
            Ok(_) => FromReflector::Refused("not a control line".into()),
            Err(e) => FromReflector::Refused(e),
        };
        if line::send(stream, &answer.encode()).is_err() {
            return (phases, Some("the control connection was lost".into()));
        }
    }
}

/// Starts a phase within the session's seconds: its streams may connect
/// until its cap (and a grace) has passed.
fn begin_phase(session: &Session, load: PhaseKind, seconds: u32) -> Result<(), String> {
    let left = session.seconds_left.load(Ordering::Relaxed);
    if seconds == 0 || seconds > left {
        return Err(format!(
            "a {seconds} s phase, with {left} s of this session's load left (--load-max-seconds)"
        ));
    }
    end_phase(session);
    session.seconds_left.fetch_sub(seconds, Ordering::Relaxed);
    let phase = ActivePhase {
        load,
        until: Instant::now() + Duration::from_secs(u64::from(seconds)) + GRACE,
        stop: Arc::new(AtomicBool::new(false)),
    };
    if let Ok(mut p) = session.phase.lock() {
        *p = Some(phase);
    }
    Ok(())
}

/// Stops the phase's streams (they close within a poll).
fn end_phase(session: &Session) {
    if let Ok(mut p) = session.phase.lock()
        && let Some(old) = p.take()
    {
        old.stop.store(true, Ordering::Relaxed);
    }
    if let Ok(mut s) = session.senders.lock() {
        s.clear();
    }
}

/// The session's side of the phase: bytes, and its senders' kernel.
fn info(session: &Session) -> Info {
    let mut i = Info {
        streams: session.streams_open.load(Ordering::Relaxed),
        sent: session.sent.load(Ordering::Relaxed),
        received: session.received.load(Ordering::Relaxed),
        ..Info::default()
    };
    if let Ok(senders) = session.senders.lock() {
        for s in senders.iter() {
            if let Ok(t) = tcp_info(s.as_raw_fd()) {
                i.acked += t.bytes_acked;
                i.retrans += u64::from(t.total_retrans);
                i.bytes_retrans += t.bytes_retrans;
                i.rtt_us.push(t.rtt_us);
            }
        }
    }
    i
}

/// Serves one stream of a session: checks it belongs (its number, the
/// control connection's address, a phase that carries its direction, room
/// among the session's streams), then moves bytes until the phase ends.
pub(super) fn serve_stream(
    shared: &Shared,
    mut stream: TcpStream,
    peer: SocketAddr,
    id: u64,
    dir: Way,
    cc: Option<&str>,
) {
    let session = shared
        .sessions
        .lock()
        .ok()
        .and_then(|all| all.get(&id).cloned());
    let phase = session
        .as_ref()
        .and_then(|s| s.phase.lock().ok().and_then(|p| p.clone()));
    let (session, phase) = match (session, phase) {
        (Some(s), Some(p)) if s.peer == peer.ip() && p.load.carries(dir) => (s, p),
        (Some(s), None) if s.peer == peer.ip() => {
            shared.refuse(&mut stream, peer, "no phase is running".into());
            return;
        }
        _ => {
            shared.refuse(&mut stream, peer, "no such load session".into());
            return;
        }
    };
    if session.streams_open.fetch_add(1, Ordering::Relaxed) >= shared.cfg.max_streams {
        session.streams_open.fetch_sub(1, Ordering::Relaxed);
        let why = format!("{} streams already open", shared.cfg.max_streams);
        shared.refuse(&mut stream, peer, why);
        return;
    }
    if let Some(cc) = cc
        && let Err(e) = socket2::SockRef::from(&stream).set_tcp_congestion(cc.as_bytes())
    {
        session.streams_open.fetch_sub(1, Ordering::Relaxed);
        let why = format!("congestion control {cc} is not available here ({e})");
        shared.refuse(&mut stream, peer, why);
        return;
    }
    let _ = line::send(&mut stream, &FromReflector::Go.encode());
    let _ = bulk::arm(&stream);
    let end = flow(shared, &session, &phase, stream, dir);
    session.streams_open.fetch_sub(1, Ordering::Relaxed);
    let _ = end;
}

/// Moves the stream's bytes: sends for a download, reads for an upload,
/// until its phase ends or the server stops.
fn flow(
    shared: &Shared,
    session: &Session,
    phase: &ActivePhase,
    stream: TcpStream,
    dir: Way,
) -> StreamEnd {
    let stop = || phase.stop.load(Ordering::Relaxed) || shared.stop.is_raised();
    match dir {
        Way::Down => {
            let stream = Arc::new(stream);
            if let Ok(mut s) = session.senders.lock() {
                s.push(Arc::clone(&stream));
            }
            let until = Some(phase.until);
            bulk::send(&stream, &session.cap_down, &stop, until, &session.sent)
        }
        Way::Up => {
            let until = Some(phase.until);
            bulk::receive(&stream, &session.cap_up, &stop, until, &session.received)
        }
    }
}
