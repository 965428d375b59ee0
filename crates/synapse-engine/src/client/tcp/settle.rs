//! What becomes of each request and each reply of the TCP ping-pong:
//! answered in time (a sample, split when it is one of the stamped
//! sample), lost at its timeout, late, lost with its connection, or never
//! sent for want of one. Everything here runs after the round trip is
//! taken.

use super::pingpong::{TcpPinger, Wait};
use crate::client::sequence::Reply;
use crate::mono::Mono;
use crate::points::{PacketStatus, Points};
use crate::sys::tcp as sys_tcp;
use std::sync::atomic::Ordering;
use synapse_stats::tcp::Break;
use synapse_stats::tcp_legs::{AckSeen, SlowReply};
use synapse_stats::{PathError, PathErrorKind, Record, RecordKind, Split, TcpFigures};

impl TcpPinger<'_> {
    /// Classifies the whole reply in the frame, which arrived at `now`
    /// while `seq` (sent at `t1`) was awaited. Returns whether it was
    /// `seq`'s reply in time (then recorded as a sample).
    pub(super) fn on_frame(
        &mut self,
        seq: u64,
        t1: Mono,
        now: Mono,
        t4_user: u64,
        warmup: bool,
    ) -> bool {
        let at_ns = self.at_ns(now);
        let (pieces, spread) = (self.frame.pieces, self.frame.spread_ns(now));
        let (rx_first, rx_last) = (self.frame.rx_first, self.frame.rx_last);
        let decoded = self.codec.decode(&self.frame.buf);
        self.frame.reset();
        let (kind, about) = match decoded.map(|s| (s, self.tracker.on_reply(s))) {
            Some((_, Reply::Fresh)) => {
                self.seen.replies += 1;
                self.replied_on_conn = true;
                self.unanswered = self.unanswered.saturating_sub(1);
                let rtt = now.ns_since(t1);
                if !warmup {
                    self.tcp.reply_pieces(pieces, spread);
                }
                self.points.rtt_ns = Some(rtt);
                self.points.t4_driver = rx_last;
                self.points.t4_user = self.sampled.then_some(t4_user);
                let split = self.settle(true, rx_first, warmup);
                self.emit(Record::sample(seq, at_ns, rtt, warmup).with_split(split));
                self.answered_at(seq, at_ns, warmup);
                self.ask_if_slow(rtt, warmup);
                return true;
            }
            Some((s, Reply::Late { reordered })) => (RecordKind::Late { reordered }, s),
            Some((s, Reply::Duplicate)) => (RecordKind::Duplicate, s),
            Some((_, Reply::Stray)) | None => {
                self.strays += 1;
                (RecordKind::Stray, seq)
            }
        };
        let about_warmup = if kind == RecordKind::Stray {
            warmup
        } else {
            self.seen.late += 1;
            self.unanswered = self.unanswered.saturating_sub(1);
            about < self.cfg.warmup
        };
        self.emit(Record::event(kind, about, at_ns, about_warmup));
        if matches!(kind, RecordKind::Late { .. }) {
            if let Some(fd) = self.link.conn.as_ref().map(|c| c.fd) {
                let facts = SlowReply {
                    extra_ns: self.cfg.timeout.as_nanos() as u64,
                    ..SlowReply::default()
                };
                self.kernel
                    .explain_slow(fd, &self.live, facts, !about_warmup);
            }
            if !about_warmup {
                let row = Points {
                    seq: about,
                    status: PacketStatus::Late,
                    t4_driver: rx_last,
                    ..Points::default()
                };
                self.log_overflow += u64::from(self.out.log_row(&row));
            }
        }
        false
    }

    /// A timely reply at `at_ns` ends any outage.
    fn answered_at(&mut self, seq: u64, at_ns: u64, warmup: bool) {
        if warmup {
            return;
        }
        let forced = self.broken_since.take();
        match (self.outages.answered(at_ns), forced) {
            (Some(o), _) => self.emit_outage(o.seq, o.packets, o.length_ns),
            (None, Some((first, since))) => {
                self.emit_outage(
                    first,
                    seq.saturating_sub(first).max(1),
                    at_ns.saturating_sub(since),
                );
            }
            (None, None) => {}
        }
    }

    /// A reply slow enough to have been resent (see `slow.rs`): did the
    /// kernel resend? (The reply after one that was resent for settles
    /// that resend.)
    fn ask_if_slow(&mut self, rtt: u64, warmup: bool) {
        let (slow, extra_ns) = self.slow.take(rtt);
        let Some(fd) = self.link.conn.as_ref().map(|c| c.fd) else {
            return;
        };
        if slow {
            let p = &self.points;
            let ack_after = p
                .t1_ack
                .zip(p.t1_driver.or(p.t1_user))
                .map(|(ack, sent)| ack.saturating_sub(sent));
            let facts = SlowReply {
                extra_ns,
                ack: AckSeen::of(p.ack_with_reply, ack_after),
                ..SlowReply::default()
            };
            if let Some(resent) = self.kernel.explain_slow(fd, &self.live, facts, !warmup) {
                self.slow.told(resent > 0);
            }
        } else if self.kernel.awaiting_dsack() {
            self.kernel.confirm(fd, &self.live);
        }
    }

    /// The request in flight is settled (`answered`, or not): its stamps
    /// are fetched and the ACK's way back told, its row logged, its split
    /// returned.
    pub(super) fn settle(&mut self, answered: bool, rx_first: Option<u64>, warmup: bool) -> Split {
        let sampled = self.sampled;
        if sampled && let Some(conn) = self.link.conn.as_mut() {
            let fd = conn.fd;
            if let Some(stamps) = conn.stamps.as_mut() {
                if answered {
                    let tx = stamps.collect(fd);
                    self.points.t1_sched = tx.sched;
                    self.points.t1_driver = tx.driver;
                    self.points.t1_ack = tx.ack;
                    self.points.ack_with_reply = self.ack_rode(fd, tx.ack, rx_first);
                    if !warmup {
                        let acks = &mut self.tcp.acks;
                        match self.points.ack_with_reply {
                            Some(true) => acks.piggybacked += 1,
                            Some(false) => acks.separate += 1,
                            None => acks.missing += 1,
                        }
                    }
                } else {
                    stamps.forget();
                }
            }
        }
        self.points.status = if answered {
            PacketStatus::Ok
        } else {
            PacketStatus::Lost
        };
        if !warmup {
            self.log_overflow += u64::from(self.out.log_row(&self.points));
        }
        if sampled {
            self.points.split()
        } else {
            Split::UNSAMPLED
        }
    }

    /// Whether the far kernel's ACK of the request rode on the reply. It
    /// came on its own only if a segment without data arrived during the
    /// transaction (`TCP_INFO`'s segment counters, read before and after)
    /// and its stamp is earlier than the reply's first read. A reply read
    /// in one go after several of its segments had queued still shows the
    /// ACK riding on its first one: no segment without data came.
    fn ack_rode(&self, fd: i32, ack: Option<u64>, rx_first: Option<u64>) -> Option<bool> {
        let ack = ack?;
        let (segs, data) = self.segs_before?;
        let after = sys_tcp::tcp_info(fd).ok()?;
        let pure = after
            .segs_in
            .wrapping_sub(segs)
            .saturating_sub(after.data_segs_in.wrapping_sub(data));
        if pure == 0 {
            return Some(true);
        }
        rx_first.map(|rx| ack >= rx)
    }

    /// Request `seq`, sent at `t1`, got no reply by its deadline: lost
    /// (until a late reply says otherwise). The next request goes out on
    /// the same connection, behind it.
    pub(super) fn time_out(&mut self, seq: u64, t1: Mono, warmup: bool) -> Wait {
        self.settle(false, None, warmup);
        self.tracker.timed_out(seq);
        let at_ns = self.at_ns(t1 + self.cfg.timeout);
        self.emit(Record::event(RecordKind::Lost, seq, at_ns, warmup));
        if !warmup {
            self.outages.missed(seq, self.at_ns(t1));
            self.give_up.lost(&self.outages, at_ns);
        }
        Wait::TimedOut
    }

    /// The connection was lost (`why`) while `seq`, sent at `t1`, waited:
    /// it and every request still unanswered on it are lost with it.
    pub(super) fn broke(&mut self, why: Break, seq: u64, t1: Mono, warmup: bool) -> Wait {
        // The peer's own word on it (its FIN or RST), as an ICMP error is
        // a UDP peer's: recorded, and on the request's row.
        let said = match why {
            Break::Reset => Some(PathErrorKind::PeerReset),
            Break::Closed => Some(PathErrorKind::PeerClosed),
            Break::Stalled | Break::Failed => None,
        };
        let at_ns = self.at_ns(Mono::now());
        if let Some(kind) = said {
            let e = PathError {
                kind,
                from: Some(self.cfg.server.ip()),
                mtu: None,
            };
            self.points.path_error = Some(e);
            self.emit(Record::path_error(seq, at_ns, e, warmup));
        }
        self.settle(false, None, warmup);
        self.tracker.timed_out(seq);
        self.emit(Record::event(RecordKind::Lost, seq, at_ns, warmup));
        if !warmup {
            self.tcp.lost_with_connection += self.unanswered;
            let sent = self.at_ns(t1);
            self.outages.missed(seq, sent);
            self.give_up.lost(&self.outages, at_ns);
            self.broken_since.get_or_insert((seq, sent));
        }
        self.unanswered = 0;
        self.frame.reset();
        let replied = std::mem::take(&mut self.replied_on_conn);
        self.link
            .lose(why, replied, &mut self.tcp, &mut self.kernel, &self.live);
        Wait::Broken(why)
    }

    /// No connection could be had for request `seq` by its timeout (its
    /// slot began at `slot`): lost without being sent.
    pub(super) fn unsent(&mut self, seq: u64, slot: Mono, warmup: bool) -> Wait {
        self.tracker.sent(seq);
        self.points = Points {
            seq,
            ..Points::default()
        };
        self.sampled = false;
        if !warmup {
            self.tcp.unsent += 1;
        }
        self.time_out(seq, slot, warmup);
        Wait::Unsent
    }

    /// The run's TCP figures.
    pub(super) fn figures(&self) -> TcpFigures {
        let mut tcp = self.tcp.clone();
        tcp.kernel = self.kernel.view();
        tcp.resends = self.kernel.resends;
        tcp.figures()
    }

    pub(super) fn emit_outage(&mut self, seq: u64, packets: u64, length_ns: u64) {
        let packets = u32::try_from(packets).unwrap_or(u32::MAX);
        let at_ns = self.at_ns(Mono::now());
        self.emit(Record::outage(seq, packets, at_ns, length_ns));
    }

    /// Into the authoritative statistics, then to the live consumer.
    #[inline]
    pub(super) fn emit(&mut self, record: Record) {
        self.stats.record(&record);
        if self.out.ring.push(record).is_err() {
            self.out.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }
}
