//! What a session-sender reads in a reflected packet's TLVs: Class of
//! Service, Direct Measurement, Follow-Up, Location, the HMAC's verdict.

use super::*;

/// The reflector's previous answer, as a Follow-Up Telemetry TLV says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowUp {
    /// The reflector's sequence number of that answer.
    pub seq: u32,
    /// When it really left.
    pub t3: WireTime,
    /// How it was stamped ([`method`]).
    pub mode: u8,
}

/// What a reflector saw of a request (Location TLV): the ports always,
/// the addresses when it answered the sub-TLVs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// The request's source port, as seen.
    pub src_port: u16,
    /// Its destination port.
    pub dst_port: u16,
    /// Its source address.
    pub src: Option<IpAddr>,
    /// Its destination address.
    pub dst: Option<IpAddr>,
}

/// Whether a reply's TLVs carried a verifying HMAC TLV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HmacCheck {
    /// No key, or no TLVs: nothing to check.
    #[default]
    NotAsked,
    /// It verified.
    Verified,
    /// Missing, misplaced, flagged or wrong: the values are not used.
    Failed,
}

/// What a reply's TLVs said, each field only when its TLV came back
/// processed (U, M and I clear). Small and `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TlvReport {
    /// TLVs in the reply.
    pub count: u8,
    /// Of those, flagged U (not understood, or not processed after a
    /// malformed one), M and I.
    pub unrecognized: u8,
    /// Flagged M, or running past the datagram.
    pub malformed: u8,
    /// Flagged I.
    pub integrity: u8,
    /// The HMAC TLV.
    pub hmac: HmacCheck,
    /// Class of Service.
    pub cos: Option<CosTlv>,
    /// Timestamp Information: sync source and method in, then out.
    pub timestamp_info: Option<[u8; 4]>,
    /// Location.
    pub location: Option<Location>,
    /// Direct Measurement: S_TxC, R_RxC, R_TxC.
    pub direct: Option<[u32; 3]>,
    /// Follow-Up Telemetry (`None` too when the reflector had nothing to
    /// follow up yet: a zero timestamp).
    pub follow_up: Option<FollowUp>,
    /// A Follow-Up TLV came back processed but empty (the reflector's first
    /// answer in the session, or its TX stamp not in yet).
    pub follow_up_empty: bool,
    /// The responder's name, when it told one.
    pub name: Option<crate::protocol::responder_name::ResponderName>,
}

/// Reads the TLVs of `area` (a reply's octets after its base packet),
/// whose base packet starts with `seq` (the reply's sequence number, which
/// the HMAC TLV covers). Values count only from TLVs the reflector
/// processed; with a `key`, only when the HMAC TLV verifies.
pub fn read_reply(area: &[u8], seq: [u8; 4], key: Option<&StampKey>) -> TlvReport {
    let mut r = TlvReport::default();
    let mut hmac_at = None;
    let mut stopped = false;
    for step in walk(area) {
        let (t, overrun) = match step {
            Step::Tlv(t) => (t, false),
            Step::Overrun(t) => (t, true),
        };
        r.count = r.count.saturating_add(1);
        let bad = overrun || t.flags & M != 0 || !valid_length(t.kind, t.len);
        r.malformed += u8::from(bad && r.malformed < u8::MAX);
        r.unrecognized += u8::from(t.flags & U != 0 && r.unrecognized < u8::MAX);
        r.integrity += u8::from(t.flags & I != 0 && r.integrity < u8::MAX);
        if t.kind == kind::HMAC && hmac_at.is_none() && !bad {
            hmac_at = Some(t);
        }
        stopped |= bad;
        if stopped || t.flags & (U | M | I) != 0 || overrun {
            continue;
        }
        read_value(&mut r, t, &area[t.value()]);
    }
    r.hmac = match (key, hmac_at) {
        (None, _) => HmacCheck::NotAsked,
        (Some(_), _) if r.count == 0 => HmacCheck::NotAsked,
        (Some(k), Some(h)) if h.flags & (U | M | I) == 0 => {
            let want = &area[h.value()];
            if k.tlv_hmac_verifies(&seq, &area[..h.at], want) {
                HmacCheck::Verified
            } else {
                HmacCheck::Failed
            }
        }
        (Some(_), _) => HmacCheck::Failed,
    };
    if r.hmac == HmacCheck::Failed || r.integrity > 0 {
        // Nothing the TLVs said can be trusted.
        r = TlvReport {
            cos: None,
            timestamp_info: None,
            location: None,
            direct: None,
            follow_up: None,
            follow_up_empty: false,
            name: None,
            ..r
        };
    }
    r
}

fn be32(v: &[u8]) -> u32 {
    u32::from_be_bytes([v[0], v[1], v[2], v[3]])
}

/// Takes one processed TLV's value into the report (the first of a type).
fn read_value(r: &mut TlvReport, t: Tlv, v: &[u8]) {
    match t.kind {
        kind::COS if r.cos.is_none() => {
            r.cos = Some(CosTlv::read(&[v[0], v[1], v[2], v[3]]));
        }
        kind::TIMESTAMP_INFO if r.timestamp_info.is_none() => {
            r.timestamp_info = Some([v[0], v[1], v[2], v[3]]);
        }
        kind::DIRECT if r.direct.is_none() => {
            r.direct = Some([be32(&v[..4]), be32(&v[4..8]), be32(&v[8..12])]);
        }
        kind::FOLLOW_UP if r.follow_up.is_none() => {
            let t3 = WireTime {
                secs: be32(&v[4..8]),
                frac: be32(&v[8..12]),
            };
            let known = matches!(
                v[12],
                method::HARDWARE | method::SOFTWARE | method::CONTROL_PLANE
            );
            if t3 == WireTime::default() || !known {
                r.follow_up_empty = true;
            } else {
                r.follow_up = Some(FollowUp {
                    seq: be32(&v[..4]),
                    t3,
                    mode: v[12],
                });
            }
        }
        kind::LOCATION if r.location.is_none() => r.location = Some(read_location(v)),
        kind::RESPONDER_NAME if r.name.is_none() => {
            r.name = crate::protocol::responder_name::ResponderName::from_octets(v);
        }
        _ => {}
    }
}

/// A Location value: the ports, and the addresses its answered sub-TLVs
/// give.
fn read_location(v: &[u8]) -> Location {
    let mut loc = Location {
        dst_port: u16::from_be_bytes([v[0], v[1]]),
        src_port: u16::from_be_bytes([v[2], v[3]]),
        src: None,
        dst: None,
    };
    for step in walk_all(&v[4..]) {
        let Step::Tlv(s) = step else { break };
        let val = &v[4..][s.value()];
        if s.flags & (U | M | I) != 0 || sub::length(s.kind) != Some(s.len) {
            continue;
        }
        let v4 = || IpAddr::V4(Ipv4Addr::new(val[0], val[1], val[2], val[3]));
        let v6 = || {
            let mut o = [0u8; 16];
            o.copy_from_slice(val);
            IpAddr::V6(Ipv6Addr::from(o))
        };
        match s.kind {
            sub::SOURCE_IPV4 => loc.src = Some(v4()),
            sub::SOURCE_IPV6 => loc.src = Some(v6()),
            sub::DESTINATION_IPV4 => loc.dst = Some(v4()),
            sub::DESTINATION_IPV6 => loc.dst = Some(v6()),
            _ => {}
        }
    }
    loc
}
