//! The paced loop's receive side: every datagram waiting on the socket is
//! read with its own clock read, matched to its peer by address and to its
//! request by sequence number, and classified (fresh, late, duplicate,
//! stray) exactly as the ping-pong client does.

use super::in_flight::State;
use super::stamps::Tagged;
use super::{NO_PROBE, Pacer, Sink};
use crate::EngineError;
use crate::client::extensions::{Held, marks_of};
use crate::client::sequence::Reply as Order;
use crate::points::{PacketStatus, Points};
use crate::sys;
use crate::sys::errno::is_network_error;
use crate::sys::io::Received;
use crate::sys::timestamping::Stamps;
use crate::timestamping::tx_matcher::TxPoints;
use synapse_stats::{FarSide, Record, RecordKind, Split};

/// Copies a request's TX stamps into its points.
pub(super) fn put_tx(points: &mut Points, tx: TxPoints) {
    points.t1_sched = points.t1_sched.or(tx.sched);
    points.t1_driver = points.t1_driver.or(tx.driver);
    points.t1_hw = points.t1_hw.or(tx.hw);
    points.t1_wire = points.t1_wire.or(tx.wire);
}

impl<S: Sink> Pacer<'_, S> {
    /// Reads every datagram waiting, without blocking.
    pub(super) fn receive_all(&mut self) -> Result<(), EngineError> {
        loop {
            let received = match (&mut self.stamps, &mut self.marks) {
                (Some(s), _) => s
                    .recv(self.fd, &mut self.buf, &mut self.from)
                    .map(|m| (m.received, m.stamps, m.tos)),
                // Class of service: the reply's TOS rides in control data.
                (None, Some(control)) => sys::timestamping::recv_stamped(
                    self.fd,
                    &mut self.buf,
                    Some(&mut self.from),
                    control,
                    -1,
                )
                .map(|m| (m.received, m.stamps, m.tos)),
                (None, None) => sys::io::recv_from(self.fd, &mut self.buf, &mut self.from)
                    .map(|r| (r, Stamps::default(), None)),
            };
            let now = self.now_ns();
            match received {
                Ok((got, rx, _)) if self.tracing() && self.trace_echo(got.len, rx, now) => {}
                Ok((got, rx, tos)) => {
                    self.reply_tos = tos;
                    self.on_datagram(got, rx, now)?;
                }
                Err(e) => match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => return Ok(()),
                    // An ICMP error about one of our requests: it is lost,
                    // which its deadline will say. Before any reply, a
                    // refusal ends a single-peer run at once.
                    Some(errno) if is_network_error(errno) => {
                        self.absorb_error_queue()?;
                        self.refused_before_any_reply(0, Some(errno))?;
                    }
                    _ => return Err(EngineError::io("receive failed")(e)),
                },
            }
        }
    }

    /// Files the TX stamps (and reads past the ICMP reports) the error
    /// queue holds.
    pub(super) fn absorb_error_queue(&mut self) -> Result<(), EngineError> {
        // A trace riding the socket takes its own reports first.
        let tracing = self.tracing();
        let errno = match self.stamps.as_mut() {
            _ if tracing => self.absorb_with_trace(),
            Some(stamps) => {
                let probes = &mut self.probes;
                stamps.absorb(self.fd, |t| file_into(probes, t))
            }
            None => sys::errqueue::drain_error_queue(self.fd),
        };
        match errno {
            Some(report) => {
                self.refused_before_any_reply(0, Some(report.errno))?;
                self.path_error(Some(report), None);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// A request whose stamps the matcher gave up waiting for keeps what
    /// came.
    pub(super) fn file_tx(&mut self, t: Tagged) {
        file_into(&mut self.probes, t);
    }

    /// Classifies one datagram that arrived at `now`.
    fn on_datagram(&mut self, got: Received, rx: Stamps, now: u64) -> Result<(), EngineError> {
        let t4_user = self.wall_ns(now);
        // A reply after its request's deadline is late, however the loop
        // was woken: every deadline before now is settled first.
        self.expire(now)?;
        let p = self.probe_of_sender();
        let decoded = match self.probes.get_mut(p) {
            Some(probe) if !got.truncated => {
                let newest = probe.newest();
                probe
                    .codec
                    .decode_into(&self.buf[..got.len], newest, &mut probe.reply)
            }
            _ => false,
        };
        if !decoded {
            self.stray(p, got.len, now);
            return Ok(());
        }
        let probe = &mut self.probes[p];
        let seq = probe.reply.seq;
        let kind = match probe.tracker.on_reply(seq) {
            Order::Fresh => {
                probe.seen.replies += 1;
                if probe.in_flight.get_mut(seq).is_some() {
                    self.answered(p, rx, t4_user, now);
                    return Ok(());
                }
                // Its request was settled early (the ring was full).
                RecordKind::Late { reordered: false }
            }
            Order::Late { reordered } => {
                if probe.tallying {
                    probe.tally.reply(&probe.reply.tlv);
                }
                RecordKind::Late { reordered }
            }
            Order::Duplicate => RecordKind::Duplicate,
            Order::Stray => {
                self.stray(p, got.len, now);
                return Ok(());
            }
        };
        probe.seen.late += 1;
        let warmup = probe.is_warmup(seq);
        // Its reflector number says the request arrived (loss direction).
        let far = FarSide::numbered(probe.reply.reflector_seq);
        self.record(p, Record::event(kind, seq, now, warmup).with_far(far));
        if !warmup {
            let status = match kind {
                RecordKind::Duplicate => PacketStatus::Duplicate,
                _ => PacketStatus::Late,
            };
            let row = Points {
                seq,
                status,
                t4_driver: rx.software,
                t4_hw: rx.hardware,
                t4_user: Some(t4_user),
                ..Points::default()
            };
            self.sink.row(p, &row);
        }
        Ok(())
    }

    /// The probe whose peer sent the datagram in the buffer, or `NO_PROBE`.
    #[inline]
    fn probe_of_sender(&self) -> usize {
        match self.probes.as_slice() {
            [only] => {
                if only.raw.same_as(&self.from) {
                    0
                } else {
                    NO_PROBE
                }
            }
            _ => self
                .from
                .to_socket_addr()
                .and_then(|a| self.by_addr.get(&a).copied())
                .unwrap_or(NO_PROBE),
        }
    }

    /// A fresh reply to a request in flight (the probe's last reply): a
    /// sample.
    #[inline]
    fn answered(&mut self, p: usize, rx: Stamps, t4_user: u64, now: u64) {
        let seq = self.probes[p].reply.seq;
        // The request's TX stamps are nearly always in the queue by now.
        let needs_tx = self.probes[p]
            .in_flight
            .get_mut(seq)
            .is_some_and(|e| e.tx_sent && e.points.t1_driver.is_none());
        if needs_tx && self.stamps.is_some() {
            let _ = self.absorb_error_queue();
        }
        self.follow_up(p);
        // Only kernel stamps or STAMP's T2/T3 give a segment both its
        // ends: a plain echo with user stamps has no split, known here.
        let splitting = self.stamps.is_some() || self.probes[p].cfg.stamp;
        let (tos, probe) = (self.reply_tos, &mut self.probes[p]);
        let holding = probe.follows_up;
        let Some(e) = probe.in_flight.get_mut(seq) else {
            return;
        };
        let rtt = now.saturating_sub(e.sent_ns);
        e.state = State::Answered;
        e.answered_ns = now;
        let pts = &mut e.points;
        pts.answered(rtt, &probe.reply, rx, Some(t4_user));
        pts.marks = marks_of(&probe.reply, tos);
        pts.follow_up = holding;
        let split = if splitting { pts.split() } else { Split::NONE };
        let record = Record::sample(seq, now, rtt, e.warmup)
            .with_split(split)
            .with_far(pts.far_side())
            .with_marks(pts.marks)
            .with_send_lag(e.lag_ns);
        if holding {
            let points = *pts;
            probe.held = Some(Held {
                record,
                row: None,
                points,
            });
        } else {
            self.sink.record(p, record);
        }
    }

    /// The probe's last reply's TLVs are tallied; its Follow-Up goes to
    /// the request held for it (and to its log row, if it is still in
    /// flight), which is then recorded.
    fn follow_up(&mut self, p: usize) {
        let probe = &mut self.probes[p];
        // Nothing is held without TLVs (`follows_up` implies `tallying`).
        if !probe.tallying {
            return;
        }
        let reply = &probe.reply;
        probe.tally.reply(&reply.tlv);
        if let Some(fu) = reply.tlv.follow_up {
            let format = reply.reflector_error.format();
            let matched = probe
                .held
                .as_mut()
                .is_some_and(|h| h.follow_up(&fu, format));
            probe.tally.follow_up(&fu, matched);
            if let Some(h) = probe.held.filter(|_| matched)
                && let Some(e) = probe.in_flight.get_mut(h.points.seq)
            {
                e.points.t3_driver = h.points.t3_driver;
                e.points.t3_hw = h.points.t3_hw;
            }
        }
        self.release_held(p);
    }

    /// Not a reply to anything this run has in flight or remembers.
    fn stray(&mut self, p: usize, len: usize, now: u64) {
        let warmup = match self.probes.get_mut(p) {
            Some(probe) => {
                let datagram = &self.buf[..len];
                if probe.codec.is_echoed_stamp_request(datagram) {
                    probe.seen.echoed_requests += 1;
                } else if probe.codec.failed_authentication(datagram) {
                    probe.seen.unauthenticated += 1;
                }
                if let Some(expected) = probe.codec.truncated_echo(datagram) {
                    probe.seen.truncated = Some((len, expected));
                }
                probe.is_warmup(probe.newest())
            }
            None => self.probes.iter().any(|q| q.is_warmup(q.newest())),
        };
        self.record(p, Record::event(RecordKind::Stray, 0, now, warmup));
    }
}

/// Files completed TX stamps with their request, if it is still in flight.
pub(super) fn file_into(probes: &mut [super::probe::Probe], t: Tagged) {
    if let Some(e) = probes
        .get_mut(t.probe)
        .and_then(|p| p.in_flight.get_mut(t.seq))
    {
        put_tx(&mut e.points, t.tx);
    }
}
