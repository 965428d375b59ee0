//! What the client makes of the RFC 8972 TLVs its STAMP replies carry:
//! each reply's class-of-service marks per leg (for the live figures),
//! Follow-Up Telemetry's measured T3 put on the packet it belongs to, and
//! a tally of the rest (Timestamp Information, Location, Direct
//! Measurement, the flags) for the final report.
//!
//! **Follow-Up.** The reflector sends an answer's real send time (its
//! kernel's TX stamp) in its *next* answer. So the client holds each
//! answered packet back, its record and its log row, until the next reply
//! comes: if that reply's Follow-Up names the held packet's reflector
//! number, the held packet takes the measured T3 (its dwell and network
//! segments are recomputed from it) before it is released. Anything else
//! that happens first (a loss, a stray, the end of the run) releases it as
//! it is: its dwell is then missing, never filled from the user-space T3
//! the packet itself carried. The first answer of a session has nothing
//! to follow up (the reflector sends zeros), and a follow-up whose own
//! reply is lost is lost with it: either way that one packet's dwell is
//! missing and counted.

use crate::points::Points;
use crate::protocol::Reply;
use crate::protocol::stamp::TimeFormat;
use crate::protocol::tlv::{FollowUp, Location, StampTlvs, TlvReport, method, sync};
use crate::protocol::wire_time::PIVOT_UNIX_NS;
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};
use synapse_stats::{Dscp, Ecn, Marks, Record};

/// The class of service a reply says its two legs carried: the request's
/// marks on arrival at the reflector and the reply's as it sent them (CoS
/// TLV), and the reply's on arrival here (`rev_tos`, read by this host).
pub fn marks_of(reply: &Reply, rev_tos: Option<u8>) -> Marks {
    let mut m = Marks::NONE;
    if let Some(c) = reply.tlv.cos {
        m = m.with_fwd_received((c.dscp2 << 2) | c.ecn);
        // RP 0: DSCP1 was used; otherwise the reflector kept what came.
        let dscp = Dscp(if c.rp == 0 { c.dscp1 } else { c.dscp2 });
        let ecn = match c.rpe {
            0b11 => Some(Ecn::from_bits(c.ecn1)),
            0b10 => Some(Ecn::NotEct),
            _ => None,
        };
        m = m.with_rev_sent(Some(dscp), ecn);
    }
    if let Some(t) = rev_tos {
        m = m.with_rev_received(t);
    }
    m
}

/// An answered packet held until the next reply says when it really left.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    /// Its sample record.
    pub record: Record,
    /// Its log row (none for warm-up packets).
    pub row: Option<Points>,
    /// Its points, to recompute the split from.
    pub points: Points,
}

impl Held {
    /// Takes `fu` if it names this packet's answer: the measured T3 goes
    /// in (read in `format`, the reflector's), the split and the one-way
    /// delays are recomputed. Returns whether it did.
    pub fn follow_up(&mut self, fu: &FollowUp, format: TimeFormat) -> bool {
        if self.points.reflector_seq != Some(fu.seq) {
            return false;
        }
        // In the era of the T3 the answer carried (RFC 5905 §6).
        let near = self.points.t3.unwrap_or(PIVOT_UNIX_NS);
        let Some(ns) = fu.t3.decode(format, near) else {
            return false;
        };
        if fu.mode == method::HARDWARE {
            self.points.t3_hw = Some(ns);
        } else {
            self.points.t3_driver = Some(ns);
        }
        if !self.record.split.is_unsampled() {
            self.record.split = self.points.split();
        }
        self.record.far = self.points.far_side();
        if let Some(row) = &mut self.row {
            row.t3_driver = self.points.t3_driver;
            row.t3_hw = self.points.t3_hw;
        }
        true
    }
}

/// What the replies' TLVs said over a run. Allocation-free.
#[derive(Debug, Clone, Copy, Default)]
pub struct TlvTally {
    replies: u64,
    unrecognized: u64,
    malformed: u64,
    integrity: u64,
    hmac_verified: u64,
    hmac_failed: u64,
    cos: u64,
    follow_up_matched: u64,
    follow_up_hardware: u64,
    follow_up_empty: u64,
    follow_up_unmatched: u64,
    timestamp_info: Option<[u8; 4]>,
    timestamp_info_changed: u64,
    location: Option<Location>,
    location_replies: u64,
    location_changed: u64,
    /// Direct Measurement: the counters of the first and the latest reply
    /// (by S_TxC), with the replies that had arrived when each did.
    direct_first: Option<([u32; 3], u64)>,
    direct_last: Option<([u32; 3], u64)>,
    direct_replies: u64,
}

impl TlvTally {
    /// A reply (fresh or late; not a duplicate) and its TLVs.
    pub fn reply(&mut self, r: &TlvReport) {
        self.replies += 1;
        self.unrecognized += u64::from(r.unrecognized);
        self.malformed += u64::from(r.malformed);
        self.integrity += u64::from(r.integrity);
        match r.hmac {
            crate::protocol::tlv::HmacCheck::Verified => self.hmac_verified += 1,
            crate::protocol::tlv::HmacCheck::Failed => self.hmac_failed += 1,
            crate::protocol::tlv::HmacCheck::NotAsked => {}
        }
        self.cos += u64::from(r.cos.is_some());
        self.follow_up_empty += u64::from(r.follow_up_empty);
        if let Some(t) = r.timestamp_info {
            self.timestamp_info_changed +=
                u64::from(self.timestamp_info.is_some_and(|old| old != t));
            self.timestamp_info = Some(t);
        }
        if let Some(l) = r.location {
            self.location_replies += 1;
            self.location_changed += u64::from(self.location.is_some_and(|old| old != l));
            self.location = Some(l);
        }
        if let Some(d) = r.direct {
            self.direct_replies += 1;
            let at = (d, self.direct_replies);
            self.direct_first = self.direct_first.or(Some(at));
            if self.direct_last.is_none_or(|(last, _)| d[0] >= last[0]) {
                self.direct_last = Some(at);
            }
        }
    }

    /// A follow-up found its packet (`matched`), or named one no longer
    /// held (its reply lost or late).
    pub fn follow_up(&mut self, fu: &FollowUp, matched: bool) {
        if matched {
            self.follow_up_matched += 1;
            self.follow_up_hardware += u64::from(fu.mode == method::HARDWARE);
        } else {
            self.follow_up_unmatched += 1;
        }
    }

    /// The report, for a run that asked for `asked`, sent from `local` to
    /// `server`.
    pub fn summary(&self, asked: StampTlvs, local: SocketAddr, server: SocketAddr) -> TlvSummary {
        TlvSummary {
            asked: asked.to_string(),
            replies: self.replies,
            unrecognized: self.unrecognized,
            malformed: self.malformed,
            integrity_failed: self.integrity,
            hmac_verified: self.hmac_verified,
            hmac_failed: self.hmac_failed,
            cos_replies: asked.cos.then_some(self.cos),
            follow_up: asked.follow_up.then_some(FollowUpFigures {
                matched: self.follow_up_matched,
                hardware: self.follow_up_hardware,
                none_yet: self.follow_up_empty,
                unmatched: self.follow_up_unmatched,
            }),
            timestamp_info: self.timestamp_info.map(|t| ClockFigures {
                t2_sync: sync_name(t[0]),
                t2_method: method_name(t[1]),
                t3_sync: sync_name(t[2]),
                t3_method: method_name(t[3]),
                synchronised: t[0] != sync::LOCAL && t[2] != sync::LOCAL && t[0] != 0,
                changed: self.timestamp_info_changed,
            }),
            location: self
                .location
                .map(|l| location_figures(l, self, local, server)),
            direct: self.direct_figures(),
        }
    }

    /// Loss by direction from the reflector's counters, between the first
    /// reply that carried them and the latest: requests sent that never
    /// reached it, and answers it sent that never came back.
    fn direct_figures(&self) -> Option<DirectFigures> {
        let ((a, got_a), (b, got_b)) = (self.direct_first?, self.direct_last?);
        let sent = u64::from(b[0].wrapping_sub(a[0]));
        let received = u64::from(b[1].wrapping_sub(a[1]));
        let answered = u64::from(b[2].wrapping_sub(a[2]));
        let came_back = got_b - got_a;
        Some(DirectFigures {
            sender_transmitted: b[0],
            reflector_received: b[1],
            reflector_transmitted: b[2],
            forward_lost: sent.saturating_sub(received),
            backward_lost: answered.saturating_sub(came_back),
            replies: self.direct_replies,
        })
    }
}

fn location_figures(
    l: Location,
    t: &TlvTally,
    local: SocketAddr,
    server: SocketAddr,
) -> LocationFigures {
    let unmap = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let source = l.src.map(|ip| SocketAddr::new(ip, l.src_port));
    let destination = l.dst.map(|ip| SocketAddr::new(ip, l.dst_port));
    let ours = SocketAddr::new(unmap(local.ip()), local.port());
    let theirs = SocketAddr::new(unmap(server.ip()), server.port());
    // Ports alone when the addresses were not reported.
    let src_changed = match source {
        Some(s) => s != ours,
        None => l.src_port != local.port(),
    };
    let dst_changed = match destination {
        Some(d) => d != theirs,
        None => l.dst_port != server.port(),
    };
    LocationFigures {
        source_seen: source.map_or_else(|| format!("port {}", l.src_port), |s| s.to_string()),
        destination_seen: destination
            .map_or_else(|| format!("port {}", l.dst_port), |d| d.to_string()),
        source_sent: ours.to_string(),
        destination_sent: theirs.to_string(),
        source_translated: src_changed,
        destination_translated: dst_changed,
        replies: t.location_replies,
        changed: t.location_changed,
    }
}

fn sync_name(b: u8) -> &'static str {
    match b {
        sync::NTP => "ntp",
        sync::PTP => "ptp",
        sync::SSU => "ssu",
        sync::GNSS => "gnss",
        sync::LOCAL => "local",
        _ => "unknown",
    }
}

fn method_name(b: u8) -> &'static str {
    match b {
        method::HARDWARE => "hardware",
        method::SOFTWARE => "software",
        method::CONTROL_PLANE => "control-plane",
        _ => "unknown",
    }
}

/// Follow-Up Telemetry over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FollowUpFigures {
    /// Packets that took the measured T3 a later reply carried.
    pub matched: u64,
    /// Of those, stamped by the reflector's NIC.
    pub hardware: u64,
    /// Replies whose follow-up was empty: the session's first answer, or
    /// its previous answer's stamp not in yet.
    pub none_yet: u64,
    /// Follow-ups naming a packet no longer held (its reply lost or late).
    pub unmatched: u64,
}

/// The reflector's clock, as Timestamp Information says (the latest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClockFigures {
    /// What synchronises the clock of T2 (`ntp`, `ptp`, `local`…).
    pub t2_sync: &'static str,
    /// How T2 was taken (`software`, `hardware`, `control-plane`).
    pub t2_method: &'static str,
    /// The same for T3.
    pub t3_sync: &'static str,
    /// How T3 was taken.
    pub t3_method: &'static str,
    /// Both say an external source keeps them.
    pub synchronised: bool,
    /// Replies that said something else than the one before.
    pub changed: u64,
}

/// Where the reflector saw the requests come from and go to (Location).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocationFigures {
    /// The source address and port it saw.
    pub source_seen: String,
    /// The destination it saw.
    pub destination_seen: String,
    /// What this host sent from.
    pub source_sent: String,
    /// What it sent to.
    pub destination_sent: String,
    /// The source changed on the way: a NAT (or proxy) on the path.
    pub source_translated: bool,
    /// The destination changed on the way.
    pub destination_translated: bool,
    /// Replies that carried it.
    pub replies: u64,
    /// Replies that said something else than the one before.
    pub changed: u64,
}

/// Loss by direction from the reflector's own counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DirectFigures {
    /// S_TxC of the latest reply: requests this sender had sent.
    pub sender_transmitted: u32,
    /// R_RxC: requests the reflector had received.
    pub reflector_received: u32,
    /// R_TxC: answers it had sent before that one.
    pub reflector_transmitted: u32,
    /// Requests that never reached it, between the first and the latest
    /// reply that carried the counters.
    pub forward_lost: u64,
    /// Answers that never came back, over the same span.
    pub backward_lost: u64,
    /// Replies that carried the counters.
    pub replies: u64,
}

/// What a run's STAMP extensions said (JSON `stamp_extensions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlvSummary {
    /// The TLVs asked for.
    pub asked: String,
    /// Replies whose TLVs were read.
    pub replies: u64,
    /// TLVs that came back U: the reflector did not understand them.
    pub unrecognized: u64,
    /// TLVs that came back M, or ran past the datagram.
    pub malformed: u64,
    /// TLVs that came back I: the reflector's HMAC check failed.
    pub integrity_failed: u64,
    /// Replies whose HMAC TLV verified (authenticated mode).
    pub hmac_verified: u64,
    /// Replies whose HMAC TLV was missing or wrong: their TLVs not used.
    pub hmac_failed: u64,
    /// Replies with a processed CoS TLV.
    pub cos_replies: Option<u64>,
    /// Follow-Up Telemetry.
    pub follow_up: Option<FollowUpFigures>,
    /// Timestamp Information.
    pub timestamp_info: Option<ClockFigures>,
    /// Location.
    pub location: Option<LocationFigures>,
    /// Direct Measurement.
    pub direct: Option<DirectFigures>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::stamp::WireTime;
    use crate::protocol::tlv::CosTlv;
    use synapse_stats::Segment;

    fn reply_with(tlv: TlvReport) -> Reply {
        Reply {
            seq: 0,
            t2: None,
            t3: None,
            reflector_seq: None,
            reflector_error: crate::protocol::stamp::ErrorEstimate::UNSYNCHRONIZED,
            client_error: crate::protocol::stamp::ErrorEstimate::UNSYNCHRONIZED,
            tlv,
        }
    }

    #[test]
    fn each_leg_gets_its_own_marks() {
        let cos = CosTlv {
            dscp1: 46,
            dscp2: 10,
            ecn: 2,
            rp: 0,
            ecn1: 2,
            rpe: 0b11,
        };
        let r = reply_with(TlvReport {
            cos: Some(cos),
            ..TlvReport::default()
        });
        let m = marks_of(&r, Some(0xbb));
        assert_eq!(
            m.fwd_received(),
            Some(0x2a),
            "AF11, ECT(0) at the reflector"
        );
        assert_eq!(m.rev_sent_dscp(), Some(Dscp(46)));
        assert_eq!(m.rev_sent_ecn(), Some(Ecn::Ect0));
        assert_eq!(m.rev_received(), Some(0xbb), "EF, CE here");
        let plain = marks_of(&reply_with(TlvReport::default()), None);
        assert!(plain.is_empty(), "nothing reported is nothing");
    }

    #[test]
    fn a_follow_up_for_the_held_packet_gives_it_the_measured_t3() {
        let points = Points {
            reflector_seq: Some(4),
            follow_up: true,
            t1_user: Some(1_000),
            t1_driver: Some(2_000),
            t2: Some(50_000),
            t3: Some(52_000),
            t4_driver: Some(9_000),
            t4_user: Some(10_000),
            ..Points::default()
        };
        let mut held = Held {
            record: Record::sample(0, 0, 9_000, false).with_split(points.split()),
            row: Some(points),
            points,
        };
        assert_eq!(held.record.split.get(Segment::Dwell), None, "waiting");
        let t3 = |ns| WireTime::from_unix_ns(ns);
        let other = FollowUp {
            seq: 3,
            t3: t3(53_000),
            mode: method::SOFTWARE,
        };
        assert!(!held.follow_up(&other, TimeFormat::Ntp));
        let fu = FollowUp {
            seq: 4,
            t3: t3(52_500),
            mode: method::SOFTWARE,
        };
        assert!(held.follow_up(&fu, TimeFormat::Ntp));
        let d = held.record.split.get(Segment::Dwell).unwrap();
        assert!(d.abs_diff(2_500) <= 1, "{d}");
        let (_, back) = held.record.far.kernel().unwrap();
        assert!(
            back.abs_diff(9_000 - 52_500) <= 1,
            "T4 driver − measured T3: {back}"
        );
        let ptp = FollowUp {
            t3: WireTime::encode(52_700, TimeFormat::Ptp),
            ..fu
        };
        assert!(
            held.follow_up(&ptp, TimeFormat::Ptp),
            "read by the reply's Z bit"
        );
        assert_eq!(held.points.t3_driver, Some(52_700));
        assert_eq!(held.row.unwrap().t3_driver, held.points.t3_driver);
    }

    #[test]
    fn direct_measurement_splits_loss_by_direction() {
        let mut t = TlvTally::default();
        let dm = |s, rr, rt| TlvReport {
            direct: Some([s, rr, rt]),
            ..TlvReport::default()
        };
        t.reply(&dm(1, 1, 0));
        // Requests 2 and 3 never arrived; the answer to 5 was lost.
        t.reply(&dm(4, 2, 1));
        t.reply(&dm(6, 4, 3));
        let d = t.direct_figures().unwrap();
        assert_eq!((d.forward_lost, d.backward_lost), (2, 1));
        assert_eq!((d.sender_transmitted, d.reflector_received), (6, 4));
    }
}
