//! The reflector's loop: receive, check, answer, account.
//!
//! One unconnected socket serves every client at once, so no client is ever
//! locked out. Per datagram: one receive, one send of exactly the bytes
//! received (STAMP rewrites them in place first), one clock read and a
//! session counter bump. With a log, the socket also stamps in the kernel,
//! both ways, and each answer's points go to the log's ring. Bound to a
//! wildcard address, it reads where each request came to and answers from
//! there (`recvmsg`, `sendmsg`: see `sys::pktinfo`).
//!
//! A plain echo reflector (no stamps, no log) receives with one
//! `recvmmsg` that waits for the first datagram and takes, without
//! waiting, up to `BATCH` already queued beside it (`MSG_WAITFORONE`). A
//! lone ping-pong packet costs that one call and its `sendto`, as in the
//! bare C loop, and is never delayed; datagrams that queued up are
//! answered together (`sendmmsg`).

use super::admission::{Admission, Gate};
use super::answer_log::{AnswerLog, AnswerPoints};
use super::follow_up::FollowUpStamps;
use super::limits::Pace;
use super::sessions::Sessions;
use super::stamp_counters::{Counted, StampCounters};
use super::test_clock::shifted_opt;
use super::{Protocol, ReflectorEvent, ReflectorOutcome, Refusal};
use crate::affinity::Placement;
use crate::mono::Mono;
use crate::protocol::clock_state::ClockWatch;
use crate::protocol::responder_name::{self, ResponderName};
use crate::protocol::stamp::{self, Layout, Reflection, WireTime};
use crate::protocol::stamp_key::StampKey;
use crate::protocol::tlv_reflect::{self, Answered, Answering};
use crate::protocol::{self, RECV_BUFFER, tlv};
use crate::sys;
use crate::sys::addr::RawAddr;
use crate::sys::batch::{BATCH, Batch};
use crate::sys::clock::realtime_ns;
use crate::sys::cmsg::ControlBuf;
use crate::sys::errno::is_network_error;
use crate::sys::io::Received;
use crate::sys::marks::{self, Answer};
use crate::sys::pktinfo::Arrival;
use crate::sys::timestamping::{self, Stamps};
use crate::timestamping::phc_map::PhcMap;
use crate::{EngineError, StopFlag};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// How often the reflector wakes when idle, and publishes session state.
pub const TICK: Duration = Duration::from_millis(100);

/// How the socket is read and answered.
#[derive(Clone, Copy)]
pub struct Wire {
    /// What to answer.
    pub protocol: Protocol,
    /// The control-message type of RX timestamps, when the socket stamps.
    pub rx_cmsg: Option<i32>,
    /// Spin instead of blocking.
    pub busy_poll: bool,
    /// Bound to a wildcard address: each answer leaves from the address
    /// its request came to (`IP_PKTINFO`), not the one the route prefers.
    pub answer_from_arrival: bool,
    /// Joined groups' requests are answered to the group, on the sender's
    /// port (their arrival says which group).
    pub answer_to_group: bool,
    /// The bound address (its port is the one requests come to).
    pub local: SocketAddr,
    /// The NIC stamps too (its stamping is switched on).
    pub hardware: bool,
    /// STAMP: the format of the timestamps it writes (the Z bit).
    pub format: stamp::TimeFormat,
}

/// One received datagram and what the kernel said about it.
struct Datagram {
    got: Received,
    rx: Stamps,
    ttl: Option<u8>,
    arrival: Option<Arrival>,
    /// The group it was sent to (its answer goes there with
    /// `--answer-to-group`).
    group: Option<IpAddr>,
    tos: Option<u8>,
}

/// How a STAMP answer leaves: the TOS its CoS TLV asked for, and its own
/// number when its request asked for Follow-Up (its TX stamp is kept).
#[derive(Clone, Copy, Default)]
struct StampSend {
    tos: Option<u8>,
    follow_up: Option<u32>,
}

/// The serving state. Everything is allocated in `new`.
pub struct Reflector {
    fd: RawFd,
    wire: Wire,
    log: Option<AnswerLog>,
    sessions: Sessions,
    /// STAMP: each sender's sequence numbers.
    counters: StampCounters,
    /// STAMP: how good this host's clock is, as the replies say: read
    /// again about once a second, at the loop's tick.
    clock_state: ClockWatch,
    /// STAMP without a log: the TX stamps Follow-Up answers asked for.
    follow_ups: Option<FollowUpStamps>,
    buf: Vec<u8>,
    from: RawAddr,
    control: ControlBuf,
    epoch: Mono,
    /// Who is answered, and how much.
    gate: Gate,
    /// STAMP authenticated mode's key.
    key: Option<StampKey>,
    /// Plain echo only: the slots it receives into, one datagram or many.
    batch: Option<Box<Batch>>,
    /// The NIC's clock on the system clock: a Follow-Up carries the
    /// answer's NIC stamp placed there (else the kernel's).
    clock: Option<PhcMap>,
    /// The name an answer carries when its request asks (plain echo: in
    /// its payload; STAMP: in its responder-name TLV).
    name: Option<ResponderName>,
}

impl Reflector {
    /// Serves `socket`, which must outlive the reflector.
    pub fn new(
        socket: &socket2::Socket,
        wire: Wire,
        log: Option<AnswerLog>,
        idle: Duration,
        admission: Admission,
    ) -> Self {
        let limits = admission.limits;
        let epoch = Mono::now();
        let follow_ups = match (wire.protocol, wire.rx_cmsg, &log) {
            (Protocol::Stamp, Some(kind), None) => {
                Some(FollowUpStamps::new(kind, wire.hardware, wire.format))
            }
            _ => None,
        };
        Self {
            fd: socket.as_raw_fd(),
            wire,
            log,
            sessions: Sessions::new(idle, &limits),
            counters: StampCounters::default(),
            clock_state: ClockWatch::new(wire.format),
            follow_ups,
            buf: vec![0u8; RECV_BUFFER],
            from: RawAddr::empty(),
            control: ControlBuf::default(),
            epoch,
            gate: Gate {
                allow: admission.allow,
                total: Pace::new(limits.total_pps, limits.burst),
                total_tat: 0,
                epoch,
            },
            key: None,
            batch: (wire.protocol == Protocol::Echo && wire.rx_cmsg.is_none())
                .then(|| Box::new(Batch::new(RECV_BUFFER, wire.answer_from_arrival))),
            clock: None,
            name: None,
        }
    }

    /// STAMP: answers only requests signed with `key` (authenticated
    /// mode), and signs the answers.
    pub fn authenticate_with(&mut self, key: Option<StampKey>) {
        self.key = key;
    }

    /// Follow-Up carries NIC stamps, placed on the system clock by `clock`.
    pub fn stamp_wire_with(&mut self, clock: Option<PhcMap>) {
        self.clock = clock;
    }

    /// Answers that ask carry `name` (see `responder_name`).
    pub fn name_answers(&mut self, name: Option<ResponderName>) {
        self.name = name;
    }

    /// Serves until stopped.
    pub fn serve(
        &mut self,
        stop: &StopFlag,
        events: &mut rtrb::Producer<ReflectorEvent>,
    ) -> Result<(), EngineError> {
        let mut next_tick = 0u64;
        // Read after each datagram is answered, so none waits for a clock
        // read: what admission sees is a moment old (see `admit`).
        let mut now_ns = self.clock();
        loop {
            let answered_at = if self.batch.is_some() {
                self.serve_batch(now_ns)?
            } else {
                self.serve_one(now_ns)?
            };
            // The clock read to account an answer is the one after it.
            now_ns = answered_at.unwrap_or_else(|| self.clock());
            if now_ns >= next_tick {
                next_tick = now_ns + TICK.as_nanos() as u64;
                self.clock_state.tick(now_ns);
                self.collect_follow_ups();
                self.sessions.tick(now_ns, events);
                self.counters.prune(now_ns);
                if stop.is_raised() {
                    break;
                }
            } else if self.wire.busy_poll && stop.is_raised() {
                break;
            }
        }
        if let Some(log) = self.log.as_mut() {
            log.collect(self.fd);
            log.finish();
        }
        self.sessions.flush_backlog(events);
        Ok(())
    }

    /// What the stopped reflector hands back.
    pub fn finish(mut self, placement: Placement) -> ReflectorOutcome {
        let (log_overflow, stale_stamps) = self
            .log
            .as_ref()
            .map_or((0, 0), |l| (l.overflow, l.stale()));
        ReflectorOutcome {
            totals: self.sessions.totals,
            placement,
            open_at_stop: self.sessions.unreported(),
            log_overflow,
            stale_stamps,
            groups_left: 0,
        }
    }

    /// Receives one datagram (waiting or spinning for it) and answers it.
    /// Returns the clock read after the answer, when one was sent.
    #[inline]
    fn serve_one(&mut self, now_ns: u64) -> Result<Option<u64>, EngineError> {
        match self.receive() {
            Ok(d) if d.got.truncated => self.sessions.totals.oversized += 1,
            Ok(d) => {
                let answered = self
                    .gate
                    .admit(&mut self.sessions, &self.from, now_ns)
                    .and_then(|i| self.answer(&d, i, now_ns));
                match answered {
                    Ok(at) => return Ok(Some(at)),
                    Err(why) => self.sessions.totals.refused.count(why),
                }
            }
            Err(e) => return self.receive_failed(e).map(|()| None),
        }
        Ok(None)
    }

    /// Plain echo: waits for a datagram and answers it with whatever else
    /// is already queued, up to `BATCH` (one `recvmmsg`; one `sendto` for
    /// one, one `sendmmsg` for more). Returns the clock read after the
    /// answers, when any was sent.
    #[inline]
    fn serve_batch(&mut self, now_ns: u64) -> Result<Option<u64>, EngineError> {
        // Out of `self` while it is served, so admission can borrow `self`.
        let Some(mut batch) = self.batch.take() else {
            return Ok(None);
        };
        let served = match batch.recv_waiting(self.fd) {
            Ok(1) => Ok(self.answer_lone(&mut batch, now_ns)),
            Ok(_) => Ok(self.answer_batch(&mut batch, now_ns)),
            Err(e) => self.receive_failed(e).map(|()| None),
        };
        self.batch = Some(batch);
        served
    }

    /// Answers a batch of one: the ping-pong case, a `sendto` (no
    /// `sendmmsg` header to build). Returns the clock read after it.
    #[inline]
    fn answer_lone(&mut self, batch: &mut Batch, now_ns: u64) -> Option<u64> {
        let (bytes, got, from) = batch.datagram(0);
        if got.truncated {
            self.sessions.totals.oversized += 1;
            return None;
        }
        let len = bytes.len() as u64;
        match self.gate.admit(&mut self.sessions, from, now_ns) {
            Ok(idx) => {
                if let Some(name) = &self.name {
                    responder_name::tell(batch.datagram_mut(0), name);
                }
                if self.wire.answer_to_group {
                    batch.answer_to_groups(&[0]);
                }
                if batch.send_one(self.fd, 0).is_err() {
                    self.sessions.totals.send_errors += 1;
                }
                let now_ns = self.clock();
                self.sessions.account(idx, len, now_ns);
                Some(now_ns)
            }
            Err(why) => {
                self.sessions.totals.refused.count(why);
                None
            }
        }
    }

    /// Admits each datagram of `batch`, sends the admitted back at once,
    /// then accounts for them. Returns the clock read after the send, when
    /// anything was sent.
    fn answer_batch(&mut self, batch: &mut Batch, now_ns: u64) -> Option<u64> {
        let mut slots = [0u8; BATCH];
        let mut sessions = [0usize; BATCH];
        let mut admitted = 0;
        for i in 0..batch.len() {
            let (_, got, from) = batch.datagram(i);
            if got.truncated {
                self.sessions.totals.oversized += 1;
                continue;
            }
            match self.gate.admit(&mut self.sessions, from, now_ns) {
                Ok(idx) => {
                    slots[admitted] = i as u8;
                    sessions[admitted] = idx;
                    admitted += 1;
                }
                Err(why) => self.sessions.totals.refused.count(why),
            }
        }
        if admitted == 0 {
            return None;
        }
        if let Some(name) = &self.name {
            for &slot in &slots[..admitted] {
                responder_name::tell(batch.datagram_mut(usize::from(slot)), name);
            }
        }
        if self.wire.answer_to_group {
            batch.answer_to_groups(&slots[..admitted]);
        }
        self.sessions.totals.send_errors += batch.send_back(self.fd, &slots[..admitted]);
        let now_ns = self.clock();
        for (&slot, &idx) in slots.iter().zip(&sessions).take(admitted) {
            let (bytes, _, _) = batch.datagram(usize::from(slot));
            self.sessions.account(idx, bytes.len() as u64, now_ns);
        }
        Some(now_ns)
    }

    /// A receive that got no datagram: fine when nothing was there or an
    /// ICMP error came back; fatal otherwise.
    fn receive_failed(&mut self, e: io::Error) -> Result<(), EngineError> {
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EINTR) => {}
            // An ICMP error about some client (gone, too big, no route):
            // other clients must not suffer for it. The log reads the
            // queue itself, so TX stamps are kept.
            Some(errno) if is_network_error(errno) => {
                if self.log.is_none() && self.follow_ups.is_none() {
                    let _ = sys::errqueue::drain_error_queue(self.fd);
                } else {
                    self.collect_follow_ups();
                }
            }
            _ => return Err(EngineError::io("receive failed")(e)),
        }
        Ok(())
    }

    #[inline]
    fn receive(&mut self) -> io::Result<Datagram> {
        match (self.wire.rx_cmsg, self.wire.answer_from_arrival) {
            (None, false) => {
                sys::io::recv_from(self.fd, &mut self.buf, &mut self.from).map(|got| Datagram {
                    got,
                    rx: Stamps::default(),
                    ttl: None,
                    arrival: None,
                    group: None,
                    tos: None,
                })
            }
            // Control data: stamps, the TTL, where it came to.
            (kind, _) => timestamping::recv_stamped(
                self.fd,
                &mut self.buf,
                Some(&mut self.from),
                &mut self.control,
                kind.unwrap_or(-1),
            )
            .map(|m| Datagram {
                got: m.received,
                rx: m.stamps,
                ttl: m.ttl,
                arrival: m.arrival,
                group: m.group,
                tos: m.tos,
            }),
        }
    }

    /// Nanoseconds since the reflector started.
    #[inline]
    fn clock(&self) -> u64 {
        self.epoch.elapsed_ns()
    }

    /// Answers one admitted datagram of session `idx` and accounts for it
    /// (returning the clock read after the send), or says why it got no
    /// answer (a STAMP request that is malformed or not authenticated).
    #[inline]
    fn answer(&mut self, d: &Datagram, idx: usize, now_ns: u64) -> Result<u64, Refusal> {
        let logging = self.log.is_some();
        let mut logged_seq = None;
        let t2_user = logging.then(realtime_ns);
        let mut send = StampSend::default();
        // The user-space T3, if one was read.
        let t3_user = match self.wire.protocol {
            Protocol::Echo => logging.then(realtime_ns),
            Protocol::Stamp => {
                // Logged as the sender numbered it, like an echo's.
                logged_seq = stamp::sequence_of(&self.buf[..d.got.len]).map(u64::from);
                match self.stamp_reply(d, now_ns) {
                    Ok((t3, how)) => {
                        send = how;
                        Some(t3)
                    }
                    Err(why) => return Err(self.sessions.refuse(idx, why)),
                }
            }
        };
        if let Some(name) = self
            .name
            .as_ref()
            .filter(|_| self.wire.protocol == Protocol::Echo)
        {
            responder_name::tell(&mut self.buf[..d.got.len], name);
        }
        let packet = &self.buf[..d.got.len];
        let ask_stamp = send.follow_up.is_some() && self.follow_ups.is_some();
        let how = Answer {
            from: d.arrival,
            tos: send.tos,
            tx_stamps: match &self.follow_ups {
                Some(f) if ask_stamp => f.ask(),
                _ => 0,
            },
        };
        let to_group;
        let to = match d.group.filter(|_| self.wire.answer_to_group) {
            Some(group) => {
                to_group = RawAddr::from_socket_addr(SocketAddr::new(group, self.from.port()));
                &to_group
            }
            None => &self.from,
        };
        let sent = marks::send_answer(self.fd, packet, to, &how);
        if sent.is_err() {
            self.sessions.totals.send_errors += 1;
        }
        self.after_stamp_send(&send, sent.is_ok(), ask_stamp);
        let answered_at = self.clock();
        self.sessions.account(idx, d.got.len as u64, answered_at);
        if let (Some(log), Some(peer)) = (self.log.as_mut(), self.from.to_socket_addr()) {
            let packet = &self.buf[..d.got.len];
            let p = AnswerPoints {
                seq: match self.wire.protocol {
                    Protocol::Echo => protocol::echo_seq(packet),
                    Protocol::Stamp => logged_seq,
                },
                t2_user,
                t3_user,
                follow_up: send.follow_up.filter(|_| sent.is_ok()),
                ..AnswerPoints::received(self.wire.protocol, peer, d.rx)
            };
            match sent {
                Ok(_) => log.sent(self.fd, p),
                Err(_) => log.send_failed(p),
            }
            if send.follow_up.is_some() {
                self.take_logged_follow_ups();
            }
        }
        Ok(answered_at)
    }

    /// A STAMP answer went out (or not): its Follow-Up stamp is awaited,
    /// and a failed send is not counted as sent (Direct Measurement).
    #[inline]
    fn after_stamp_send(&mut self, send: &StampSend, ok: bool, asked_stamp: bool) {
        let stamp = self.wire.protocol == Protocol::Stamp;
        if !stamp || (ok && send.follow_up.is_none()) {
            return;
        }
        let Some(peer) = self.from.to_socket_addr() else {
            return;
        };
        if !ok {
            self.counters.send_failed(&peer);
        } else if send.follow_up.is_some() {
            self.counters.await_stamp(&peer);
        }
        if let (Some(seq), Some(f)) = (send.follow_up, self.follow_ups.as_mut())
            && asked_stamp
        {
            if ok {
                if let Some((pushed_out, its_seq)) = f.sent(peer, seq) {
                    self.counters.stamp_lost(&pushed_out, its_seq);
                }
            } else {
                f.send_failed();
            }
        }
    }

    /// Files the TX stamps of Follow-Up answers with their sessions, read
    /// off the error queue (never blocking), by the log when there is one.
    fn collect_follow_ups(&mut self) {
        if let Some(f) = self.follow_ups.as_mut() {
            let _ = f.collect(self.fd, &mut self.counters, self.clock.as_ref());
        }
        if let Some(log) = self.log.as_mut() {
            log.collect(self.fd);
        }
        self.take_logged_follow_ups();
    }

    /// The log's Follow-Up answers whose stamps are in, to their sessions.
    fn take_logged_follow_ups(&mut self) {
        let Some(log) = self.log.as_mut() else {
            return;
        };
        let (counters, clock) = (&mut self.counters, self.clock.as_ref());
        let format = self.wire.format;
        log.take_follow_ups(|p| {
            let wire = p.t3.mapped(clock).wire;
            if let Some(f) = p.follow_up.and_then(|seq| {
                let (driver, wire) = (shifted_opt(p.t3.driver), shifted_opt(wire));
                tlv_reflect::follow_up_of(seq, driver, wire, format)
            }) {
                counters.stamped(&p.peer, f);
            }
        });
    }

    /// Turns the STAMP request in the buffer into its answer in place and
    /// returns the T3 it carries and how it is to be sent, or why it gets
    /// no answer.
    fn stamp_reply(&mut self, d: &Datagram, now_ns: u64) -> Result<(u64, StampSend), Refusal> {
        let len = d.got.len;
        let layout = match &self.key {
            Some(key) if key.verifies(&self.buf[..len]) => Layout::AUTHENTICATED,
            Some(_) => return Err(Refusal::Unauthenticated),
            None => Layout::OPEN,
        };
        // A malformed request gets no answer, so it takes no number.
        let sender = stamp::SenderPacket::decode_as(&self.buf[..len], layout)
            .map_err(|_| Refusal::Malformed)?;
        let tlvs = len > layout.len;
        let mut counted = self.counters.count(&self.from, now_ns);
        if let Some(c) = counted.as_mut().filter(|c| tlvs && c.awaiting) {
            // The session's previous answer asked for its TX stamp: it is
            // read off the queue now (with every other one waiting there).
            self.collect_follow_ups();
            if let Some(peer) = self.from.to_socket_addr() {
                c.follow_up = self.counters.follow_up_for(&peer, c.seq);
            }
        }
        let mut send = StampSend::default();
        if tlvs {
            let reply_seq = counted.map_or(sender.seq, |c| c.seq);
            let done = self.answer_tlvs(d, layout, counted, reply_seq);
            send.tos = done.reply_tos;
            send.follow_up = (done.follow_up && counted.is_some()).then_some(reply_seq);
        }
        let totals = &mut self.sessions.totals;
        let t2 = super::test_clock::shifted(d.rx.software.unwrap_or_else(|| {
            totals.t2_from_user += 1;
            realtime_ns()
        }));
        let mut t3 = 0;
        let format = self.wire.format;
        let read_t3 = || {
            t3 = super::test_clock::shifted(realtime_ns());
            WireTime::encode(t3, format)
        };
        let packet = &mut self.buf[..len];
        let how = Reflection {
            t2: WireTime::encode(t2, format),
            ttl: d.ttl.unwrap_or(0),
            seq: counted.map(|c| c.seq),
            error: self.clock_state.estimate(),
        };
        stamp::reflect_decoded(packet, layout, &sender, how, read_t3)
            .map_err(|_| Refusal::Malformed)?;
        if let Some(key) = &self.key {
            key.sign(packet);
        }
        Ok((t3, send))
    }

    /// Answers the RFC 8972 TLVs after the base packet, in place, and
    /// counts what it refused.
    fn answer_tlvs(
        &mut self,
        d: &Datagram,
        layout: Layout,
        counted: Option<Counted>,
        reply_seq: u32,
    ) -> Answered {
        let sync = if self.clock_state.estimate().synchronized {
            tlv::sync::NTP
        } else {
            tlv::sync::LOCAL
        };
        let a = Answering {
            key: self.key.as_ref(),
            authenticated: layout == Layout::AUTHENTICATED,
            received_tos: d.tos,
            source: self.from.to_socket_addr(),
            destination: Some(self.destination(d.arrival)),
            clock: (
                sync,
                tlv_reflect::method_of(d.rx.hardware.is_some()),
                tlv::method::SOFTWARE,
            ),
            counters: counted.map(|c| (c.received, c.sent)),
            follow_up: counted.and_then(|c| c.follow_up),
            reply_seq,
            name: self.name.as_ref(),
        };
        let (head, area) = self.buf[..d.got.len].split_at_mut(layout.len);
        let request_seq = [head[0], head[1], head[2], head[3]];
        let done = tlv_reflect::answer_tlvs(area, request_seq, &a);
        let t = &mut self.sessions.totals.tlv;
        t.requests += 1;
        t.unrecognized += u64::from(done.unrecognized);
        t.malformed += u64::from(done.malformed);
        t.integrity_failed += u64::from(done.integrity_failed);
        t.follow_ups += u64::from(done.follow_up && a.follow_up.is_some());
        done
    }

    /// The local address a request came to: where it arrived (wildcard
    /// bind), else the bound address.
    fn destination(&self, arrival: Option<Arrival>) -> SocketAddr {
        let port = self.wire.local.port();
        match arrival {
            Some(Arrival::V4(a)) => SocketAddr::new(IpAddr::from(a), port),
            Some(Arrival::V6(a, _)) => SocketAddr::new(IpAddr::from(a), port),
            None => self.wire.local,
        }
    }
}
