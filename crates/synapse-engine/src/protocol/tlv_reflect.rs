//! The session-reflector's side of RFC 8972: the TLVs of a request are
//! answered in place, in the request's own octets, so the answer is never
//! longer than the request (no amplification, padding included).
//!
//! Per TLV: a known type of a valid length is filled and its U flag
//! cleared; an unknown type keeps U; a known type whose length its type
//! does not allow, or a header that claims more octets than the datagram
//! holds, gets M and ends the processing (what follows keeps U, unread).
//! When the HMAC TLV is missing (authenticated mode), misplaced, or does
//! not verify, every TLV gets I and nothing is filled (§4.8). Each of
//! these is counted. Nothing here allocates or reads past the datagram.

use super::stamp::WireTime;
use super::stamp_key::StampKey;
use super::tlv::{self, CosTlv, HEADER, I, M, Step, Tlv, U, kind, method, sub, walk};
use std::net::{IpAddr, SocketAddr};

/// What the reflector knows when it answers one request's TLVs.
#[derive(Debug, Clone, Copy)]
pub struct Answering<'k> {
    /// The STAMP key (authenticated mode): the HMAC TLV's key too.
    pub key: Option<&'k StampKey>,
    /// The base packet is authenticated: TLVs must carry an HMAC TLV.
    pub authenticated: bool,
    /// The request's TOS (Traffic Class) byte on arrival.
    pub received_tos: Option<u8>,
    /// Where the request came from, and to.
    pub source: Option<SocketAddr>,
    /// The local address it was sent to (the port is the reflector's).
    pub destination: Option<SocketAddr>,
    /// Timestamp Information: sync source, method of T2, method of T3.
    pub clock: (u8, u8, u8),
    /// Direct Measurement: requests received in this session (this one
    /// included) and answers sent (before this one); `None` when the
    /// session is not counted (answered statelessly): the TLV keeps U.
    pub counters: Option<(u32, u32)>,
    /// Follow-Up: the session's previous answer, when its TX stamp is in.
    pub follow_up: Option<tlv::FollowUp>,
    /// The answer's own sequence number (the HMAC TLV covers it).
    pub reply_seq: u32,
    /// The reflector's name (`--name`), for the responder-name TLV.
    pub name: Option<&'k super::responder_name::ResponderName>,
}

/// What answering did, for the send and the counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answered {
    /// TLVs in the request.
    pub tlvs: u32,
    /// The reply's TOS byte, when a CoS TLV asked for one.
    pub reply_tos: Option<u8>,
    /// A Follow-Up TLV asks for this answer's real send time, next time.
    pub follow_up: bool,
    /// TLVs answered with U: types this reflector does not know (or left
    /// unprocessed after a malformed one).
    pub unrecognized: u32,
    /// TLVs answered with M: a bad length, or past the datagram's end.
    pub malformed: u32,
    /// The HMAC check failed: every TLV answered with I.
    pub integrity_failed: bool,
}

/// What a first pass over the TLVs found.
#[derive(Debug, Default)]
struct Survey {
    count: u32,
    hmac: Option<Tlv>,
    /// Another HMAC TLV, or a TLV other than Extra Padding after it.
    misplaced: bool,
    only_padding: bool,
}

fn survey(area: &[u8]) -> Survey {
    let mut s = Survey {
        only_padding: true,
        ..Survey::default()
    };
    for step in walk(area) {
        s.count += 1;
        let t = match step {
            Step::Tlv(t) => t,
            Step::Overrun(_) => {
                s.only_padding = false;
                s.misplaced |= s.hmac.is_some();
                break;
            }
        };
        s.only_padding &= t.kind == kind::EXTRA_PADDING;
        match (t.kind, s.hmac) {
            (kind::HMAC, None) => s.hmac = Some(t),
            (kind::EXTRA_PADDING, _) | (_, None) => {}
            _ => s.misplaced = true,
        }
    }
    s
}

/// Answers the TLVs of `area` (the request's octets after its base
/// packet) in place. `request_seq` is the request's sequence number as
/// received (its HMAC TLV covers it); call this before the base packet is
/// turned into the answer.
pub fn answer_tlvs(area: &mut [u8], request_seq: [u8; 4], a: &Answering) -> Answered {
    let s = survey(area);
    let mut out = Answered {
        tlvs: s.count,
        ..Answered::default()
    };
    if s.count == 0 {
        return out;
    }
    let verified = match s.hmac {
        _ if s.misplaced => false,
        Some(h) => a
            .key
            .is_some_and(|k| k.tlv_hmac_verifies(&request_seq, &area[..h.at], &area[h.value()])),
        // Authenticated mode needs the HMAC TLV unless padding is all.
        None => !a.authenticated || s.only_padding,
    };
    if !verified {
        out.integrity_failed = true;
        mark_all(area, &mut out);
        return out;
    }
    fill_all(area, a, &mut out);
    if let Some(h) = s.hmac {
        area[h.at] = 0;
        if let Some(k) = a.key {
            let mac = k.tlv_hmac(&a.reply_seq.to_be_bytes(), &area[..h.at]);
            area[h.value()].copy_from_slice(&mac);
        }
    }
    out
}

/// Integrity failed: I on every TLV (with U and M where they apply),
/// nothing filled.
fn mark_all(area: &mut [u8], out: &mut Answered) {
    each_header(area, |area, t, overrun| {
        let bad = overrun || !tlv::valid_length(t.kind, t.len);
        let unknown = !known(t.kind);
        area[t.at] = I | if bad { M } else { 0 } | if unknown { U } else { 0 };
        out.malformed += u32::from(bad);
        out.unrecognized += u32::from(unknown);
        true
    });
}

/// Calls `f` on each TLV header of `area` in order (with whether it runs
/// past the end), letting it write the area; stops after an overrun, at
/// zero padding, or when `f` says so. One pass: the padding's start is
/// found once.
fn each_header(area: &mut [u8], mut f: impl FnMut(&mut [u8], Tlv, bool) -> bool) {
    let data_end = area.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let mut at = 0usize;
    while at < data_end && area.len() - at >= HEADER {
        let t = Tlv {
            at,
            flags: area[at],
            kind: area[at + 1],
            len: usize::from(u16::from_be_bytes([area[at + 2], area[at + 3]])),
        };
        let overrun = at + HEADER + t.len > area.len();
        if !f(area, t, overrun) || overrun {
            break;
        }
        at += HEADER + t.len;
    }
}

/// The types this reflector answers.
fn known(k: u8) -> bool {
    matches!(
        k,
        kind::EXTRA_PADDING
            | kind::LOCATION
            | kind::TIMESTAMP_INFO
            | kind::COS
            | kind::DIRECT
            | kind::FOLLOW_UP
            | kind::HMAC
            | kind::RESPONDER_NAME
    )
}

/// Fills every TLV up to the first malformed one; those after it keep U.
fn fill_all(area: &mut [u8], a: &Answering, out: &mut Answered) {
    let mut stopped = false;
    each_header(area, |area, t, overrun| {
        let flags = if stopped && t.kind != kind::HMAC {
            U
        } else if overrun || !tlv::valid_length(t.kind, t.len) {
            stopped = true;
            M
        } else if known(t.kind) && fill(t.kind, &mut area[t.value()], a, out) {
            0
        } else {
            U
        };
        area[t.at] = flags;
        out.unrecognized += u32::from(flags == U);
        out.malformed += u32::from(flags == M);
        true
    });
}

/// Fills one known TLV's value; false when it cannot be answered (a CoS
/// TLV when the request's TOS could not be read): it then keeps U.
fn fill(k: u8, v: &mut [u8], a: &Answering, out: &mut Answered) -> bool {
    match k {
        kind::COS => {
            let Some(got) = a.received_tos else {
                return false;
            };
            let mut c = CosTlv::read(&[v[0], v[1], v[2], v[3]]);
            c.dscp2 = got >> 2;
            c.ecn = got & 3;
            // The reply is marked as asked: DSCP1, and EC1 (RPE 0b11).
            c.rp = 0;
            c.rpe = 0b11;
            c.write(v);
            out.reply_tos = Some((c.dscp1 << 2) | c.ecn1);
        }
        kind::TIMESTAMP_INFO => {
            let (sync, t2, t3) = a.clock;
            v[..4].copy_from_slice(&[sync, t2, sync, t3]);
        }
        kind::DIRECT => {
            let Some((received, sent)) = a.counters else {
                return false;
            };
            v[4..8].copy_from_slice(&received.to_be_bytes());
            v[8..12].copy_from_slice(&sent.to_be_bytes());
        }
        kind::FOLLOW_UP => {
            out.follow_up = true;
            v.fill(0);
            if let Some(f) = a.follow_up {
                v[..4].copy_from_slice(&f.seq.to_be_bytes());
                v[4..8].copy_from_slice(&f.t3.secs.to_be_bytes());
                v[8..12].copy_from_slice(&f.t3.frac.to_be_bytes());
                v[12] = f.mode;
            }
        }
        kind::LOCATION => fill_location(v, a),
        // Its name, or zeros: a reflector without one is known by address.
        kind::RESPONDER_NAME => match a.name {
            Some(n) => v.copy_from_slice(n.octets()),
            None => v.fill(0),
        },
        // Extra Padding comes back as it came; the HMAC TLV is signed last.
        _ => {}
    }
    true
}

/// The Location TLV (§4.2): the ports the request carried, and each
/// generic sub-TLV request answered with what was seen, in place.
fn fill_location(v: &mut [u8], a: &Answering) {
    let src_port = a.source.map_or(0, |s| s.port());
    let dst_port = a.destination.map_or(0, |d| d.port());
    v[..2].copy_from_slice(&dst_port.to_be_bytes());
    v[2..4].copy_from_slice(&src_port.to_be_bytes());
    let subs = &mut v[4..];
    let mut at = 0usize;
    while subs.len().saturating_sub(at) >= HEADER {
        let len = usize::from(u16::from_be_bytes([subs[at + 2], subs[at + 3]]));
        let end = at + HEADER + len;
        if end > subs.len() {
            subs[at] = M;
            break;
        }
        let kind = subs[at + 1];
        if let Some(want) = sub::length(kind)
            && want != len
        {
            subs[at] = M;
            break;
        }
        let (head, value) = subs[at..end].split_at_mut(HEADER);
        answer_sub(head, value, a);
        at = end;
    }
}

/// One Location sub-TLV.
fn answer_sub(head: &mut [u8], value: &mut [u8], a: &Answering) {
    let ip = |addr: Option<SocketAddr>| addr.map(|s| unmapped(s.ip()));
    let (answer, addr) = match head[1] {
        sub::SOURCE_IP => (true, ip(a.source)),
        sub::DESTINATION_IP => (false, ip(a.destination)),
        sub::SOURCE_MAC => {
            // No link layer here: the answer is an EUI-64 of zeros.
            head[0] = 0;
            head[1] = sub::SOURCE_EUI64;
            value.fill(0);
            return;
        }
        _ => {
            head[0] = U;
            return;
        }
    };
    head[0] = 0;
    value.fill(0);
    match addr {
        Some(IpAddr::V4(v4)) => {
            head[1] = if answer {
                sub::SOURCE_IPV4
            } else {
                sub::DESTINATION_IPV4
            };
            value[..4].copy_from_slice(&v4.octets());
        }
        Some(IpAddr::V6(v6)) => {
            head[1] = if answer {
                sub::SOURCE_IPV6
            } else {
                sub::DESTINATION_IPV6
            };
            value.copy_from_slice(&v6.octets());
        }
        // Not known: the generic request stays, zeroed (§4.2.2 allows
        // leaving a field unreported).
        None => {}
    }
}

/// An IPv4-mapped IPv6 address (a dual-stack socket's) as the IPv4
/// address it is.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The timestamping method of a T2 or T3 stamp.
pub fn method_of(hardware: bool) -> u8 {
    if hardware {
        method::HARDWARE
    } else {
        method::SOFTWARE
    }
}

/// A Follow-Up TLV's content from a TX stamp: the NIC's when it stamped,
/// else the kernel's software one, in the reflector's timestamp `format`.
pub fn follow_up_of(
    seq: u32,
    software: Option<u64>,
    hardware: Option<u64>,
    format: super::stamp::TimeFormat,
) -> Option<tlv::FollowUp> {
    let (ns, mode) = match (hardware, software) {
        (Some(hw), _) => (hw, method::HARDWARE),
        (None, Some(sw)) => (sw, method::SOFTWARE),
        (None, None) => return None,
    };
    Some(tlv::FollowUp {
        seq,
        t3: WireTime::encode(ns, format),
        mode,
    })
}
