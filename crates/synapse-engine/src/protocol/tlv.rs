//! STAMP extensions (RFC 8972 §4): the TLVs that follow the base test
//! packet, how a session-sender asks for them, and what it reads back.
//!
//! ```text
//!  0               1               2               3
//! +---------------+---------------+-------------------------------+
//! |U|M|I|  flags  |     Type      |            Length             |
//! +---------------+---------------+-------------------------------+
//! ~                     Value (Length octets)                     ~
//! ```
//!
//! A sender sets U on every TLV it sends; a reflector clears it on those it
//! understood, sets M on a malformed one (a length its type does not allow,
//! or more than the packet holds) and stops there, and sets I on all of
//! them when the HMAC TLV does not verify. Everything here reads within the
//! datagram it is given and allocates nothing per packet: [`walk`] yields
//! each TLV's place, never a slice past the end.

use super::stamp::WireTime;
use super::stamp_key::StampKey;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::Range;

/// A TLV header: flags, type, 16-bit length.
pub const HEADER: usize = 4;
/// Unrecognized (RFC 8972 §4): a sender sets it, a reflector that
/// understood the TLV clears it.
pub const U: u8 = 0x80;
/// Malformed.
pub const M: u8 = 0x40;
/// Integrity (HMAC) check failed.
pub const I: u8 = 0x20;

/// TLV types (RFC 8972 §5.1).
pub mod kind {
    /// Extra Padding (§4.1).
    pub const EXTRA_PADDING: u8 = 1;
    /// Location (§4.2).
    pub const LOCATION: u8 = 2;
    /// Timestamp Information (§4.3).
    pub const TIMESTAMP_INFO: u8 = 3;
    /// Class of Service (§4.4).
    pub const COS: u8 = 4;
    /// Direct Measurement (§4.5).
    pub const DIRECT: u8 = 5;
    /// Follow-Up Telemetry (§4.7).
    pub const FOLLOW_UP: u8 = 7;
    /// HMAC (§4.8).
    pub const HMAC: u8 = 8;
}

/// Value lengths a type requires (`None`: any; Location and Timestamp
/// Information take at least their fixed part).
pub fn valid_length(kind: u8, len: usize) -> bool {
    match kind {
        kind::COS => len == 4,
        kind::DIRECT => len == 12,
        kind::FOLLOW_UP | kind::HMAC => len == 16,
        kind::TIMESTAMP_INFO | kind::LOCATION => len >= 4,
        _ => true,
    }
}

/// Location sub-TLV types (RFC 8972 §4.2.1): the generic requests a
/// sender makes, and the answers for each address family.
pub mod sub {
    /// Source MAC, generic request (8 octets).
    pub const SOURCE_MAC: u8 = 1;
    /// Source EUI-64 (8 octets).
    pub const SOURCE_EUI64: u8 = 3;
    /// Destination IP, generic request (16 octets).
    pub const DESTINATION_IP: u8 = 4;
    /// Destination IPv4 (4 octets, 12 MBZ).
    pub const DESTINATION_IPV4: u8 = 5;
    /// Destination IPv6 (16 octets).
    pub const DESTINATION_IPV6: u8 = 6;
    /// Source IP, generic request (16 octets).
    pub const SOURCE_IP: u8 = 7;
    /// Source IPv4 (4 octets, 12 MBZ).
    pub const SOURCE_IPV4: u8 = 8;
    /// Source IPv6 (16 octets).
    pub const SOURCE_IPV6: u8 = 9;

    /// The value length a known sub-TLV type requires.
    pub fn length(kind: u8) -> Option<usize> {
        match kind {
            1..=3 => Some(8),
            4..=9 => Some(16),
            _ => None,
        }
    }
}

/// Timestamping methods (RFC 8972 §4.3, Table 8).
pub mod method {
    /// Hardware-assisted.
    pub const HARDWARE: u8 = 1;
    /// Software, local.
    pub const SOFTWARE: u8 = 2;
    /// Control plane.
    pub const CONTROL_PLANE: u8 = 3;
}

/// Synchronization sources (RFC 8972 §4.3, Table 7).
pub mod sync {
    /// NTP.
    pub const NTP: u8 = 1;
    /// PTP.
    pub const PTP: u8 = 2;
    /// SSU/BITS.
    pub const SSU: u8 = 3;
    /// GPS, GLONASS, LORAN-C, BDS or Galileo.
    pub const GNSS: u8 = 4;
    /// A local, free-running clock.
    pub const LOCAL: u8 = 5;
}

/// One TLV's place in a packet's TLV area (offsets from the area's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlv {
    /// Offset of its header.
    pub at: usize,
    /// Its flags octet.
    pub flags: u8,
    /// Its type.
    pub kind: u8,
    /// Its value's length.
    pub len: usize,
}

impl Tlv {
    /// Where its value is.
    pub fn value(&self) -> Range<usize> {
        self.at + HEADER..self.at + HEADER + self.len
    }
}

/// What walking a TLV area finds next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A TLV that fits in the packet.
    Tlv(Tlv),
    /// A header whose length claims more octets than the packet holds:
    /// malformed, and the end of the walk (nothing is read past it).
    Overrun(Tlv),
}

/// Walks a TLV area. A remainder of zeros is padding (RFC 8762 senders
/// zero-fill), not TLVs of type 0; a remainder shorter than a header is
/// ignored.
#[derive(Debug, Clone)]
pub struct Walk<'a> {
    area: &'a [u8],
    at: usize,
    data_end: usize,
    done: bool,
}

/// The TLVs of `area` (the octets after the base packet).
pub fn walk(area: &[u8]) -> Walk<'_> {
    let data_end = area.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    Walk {
        area,
        at: 0,
        data_end,
        done: false,
    }
}

impl Iterator for Walk<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if self.done || self.at >= self.data_end {
            return None;
        }
        let header = self.area.get(self.at..self.at + HEADER)?;
        let tlv = Tlv {
            at: self.at,
            flags: header[0],
            kind: header[1],
            len: usize::from(u16::from_be_bytes([header[2], header[3]])),
        };
        let end = self.at + HEADER + tlv.len;
        if end > self.area.len() {
            self.done = true;
            return Some(Step::Overrun(tlv));
        }
        self.at = end;
        Some(Step::Tlv(tlv))
    }
}

/// The TLVs a session-sender asks for (`--tlv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StampTlvs {
    /// Class of Service.
    pub cos: bool,
    /// Follow-Up Telemetry.
    pub follow_up: bool,
    /// Timestamp Information.
    pub timestamp_info: bool,
    /// Location.
    pub location: bool,
    /// Direct Measurement.
    pub direct: bool,
    /// Extra Padding, up to `--size`.
    pub padding: bool,
}

const TLV_NAMES: [&str; 6] = [
    "cos",
    "follow-up",
    "timestamp-info",
    "location",
    "direct-measurement",
    "padding",
];

impl StampTlvs {
    /// Every TLV Synapse knows.
    pub const ALL: Self = Self {
        cos: true,
        follow_up: true,
        timestamp_info: true,
        location: true,
        direct: true,
        padding: true,
    };

    fn flags(&self) -> [bool; 6] {
        [
            self.cos,
            self.follow_up,
            self.timestamp_info,
            self.location,
            self.direct,
            self.padding,
        ]
    }

    fn flag_mut(&mut self, i: usize) -> &mut bool {
        match i {
            0 => &mut self.cos,
            1 => &mut self.follow_up,
            2 => &mut self.timestamp_info,
            3 => &mut self.location,
            4 => &mut self.direct,
            _ => &mut self.padding,
        }
    }

    /// Whether none is asked for.
    pub fn is_empty(&self) -> bool {
        !self.flags().iter().any(|&f| f)
    }

    /// The same, and one more set.
    #[must_use]
    pub fn union(mut self, other: Self) -> Self {
        for (i, f) in other.flags().iter().enumerate() {
            *self.flag_mut(i) |= f;
        }
        self
    }
}

impl std::fmt::Display for StampTlvs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = TLV_NAMES
            .iter()
            .zip(self.flags())
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        f.write_str(&names.join(","))
    }
}

impl std::str::FromStr for StampTlvs {
    type Err = String;

    /// A comma-separated list of `cos`, `follow-up`, `timestamp-info`,
    /// `location`, `direct-measurement`, `padding`, or `all`.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut set = Self::default();
        for word in s.split(',').map(str::trim) {
            if word.eq_ignore_ascii_case("all") {
                set = set.union(Self::ALL);
                continue;
            }
            let i = TLV_NAMES
                .iter()
                .position(|n| {
                    n.eq_ignore_ascii_case(word)
                        || (*n == "direct-measurement" && word.eq_ignore_ascii_case("direct"))
                })
                .ok_or_else(|| {
                    format!(
                        "'{word}' is not a STAMP TLV Synapse asks for ({}, or all)",
                        TLV_NAMES.join(", ")
                    )
                })?;
            *set.flag_mut(i) = true;
        }
        Ok(set)
    }
}

/// What a session-sender's requests carry after the base packet, and
/// where the per-packet fields are. Built once per run.
#[derive(Debug, Clone)]
pub struct TlvRequest {
    /// Offset of the Direct Measurement value (S_TxC), if asked for.
    direct: Option<usize>,
    /// Offset of the HMAC TLV's header, in authenticated mode.
    hmac: Option<usize>,
    /// Offset of the Follow-Up TLV's value.
    pub follow_up: bool,
}

impl TlvRequest {
    /// Writes the TLVs of `set` after `base` octets of `packet` (grown as
    /// needed): the CoS TLV asks for `cos_tos` back. The packet reaches
    /// `size` with an Extra Padding TLV when TLVs are sent (zeros for a
    /// gap under a TLV header). With `authenticated`, an HMAC TLV closes
    /// the list (RFC 8972 §4.8).
    pub fn build(
        packet: &mut Vec<u8>,
        base: usize,
        size: usize,
        set: StampTlvs,
        cos_tos: u8,
        authenticated: bool,
    ) -> Self {
        packet.truncate(base);
        packet.resize(base, 0);
        let put = |packet: &mut Vec<u8>, kind: u8, value: &[u8]| {
            let at = packet.len();
            packet.extend_from_slice(&[U, kind]);
            packet.extend_from_slice(&(value.len() as u16).to_be_bytes());
            packet.extend_from_slice(value);
            at
        };
        if set.cos {
            // DSCP1 and EC1 (draft-ietf-ippm-stamp-cos-ecn) ask the reflector
            // to mark its reply so; DSCP2, ECN, RP and RPE are its to fill.
            put(
                packet,
                kind::COS,
                &[cos_tos & 0xfc, 0, (cos_tos & 3) << 6, 0],
            );
        }
        if set.timestamp_info {
            put(packet, kind::TIMESTAMP_INFO, &[0; 4]);
        }
        if set.location {
            // The ports, then the generic Source IP and Destination IP
            // requests the reflector answers with the addresses it saw.
            let mut v = [0u8; 4 + 2 * (HEADER + 16)];
            v[4..8].copy_from_slice(&[U, sub::SOURCE_IP, 0, 16]);
            v[24..28].copy_from_slice(&[U, sub::DESTINATION_IP, 0, 16]);
            put(packet, kind::LOCATION, &v);
        }
        let direct = set
            .direct
            .then(|| put(packet, kind::DIRECT, &[0; 12]) + HEADER);
        if set.follow_up {
            put(packet, kind::FOLLOW_UP, &[0; 16]);
        }
        let tail = if authenticated { HEADER + 16 } else { 0 };
        let gap = size.saturating_sub(packet.len() + tail);
        if gap >= HEADER {
            let mut filler = vec![0u8; gap - HEADER];
            fill_pseudorandom(&mut filler);
            put(packet, kind::EXTRA_PADDING, &filler);
        } else if set.padding {
            put(packet, kind::EXTRA_PADDING, &[]);
        }
        let hmac = authenticated.then(|| put(packet, kind::HMAC, &[0; 16]));
        if packet.len() < size {
            packet.resize(size, 0);
        }
        Self {
            direct,
            hmac,
            follow_up: set.follow_up,
        }
    }

    /// Fills the per-packet fields of a request whose base packet is
    /// written: S_TxC (`transmitted`, this one included) and the HMAC TLV.
    #[inline]
    pub fn finish(&self, packet: &mut [u8], base: usize, transmitted: u32, key: Option<&StampKey>) {
        if let Some(at) = self.direct {
            packet[at..at + 4].copy_from_slice(&transmitted.to_be_bytes());
        }
        if let (Some(at), Some(key)) = (self.hmac, key) {
            let seq = [packet[0], packet[1], packet[2], packet[3]];
            let mac = key.tlv_hmac(&seq, &packet[base..at]);
            packet[at + HEADER..at + HEADER + 16].copy_from_slice(&mac);
        }
    }
}

/// RFC 8972 §4.1 asks for pseudorandom padding: a xorshift stream seeded
/// from the clock (not key material; it only has to be incompressible).
fn fill_pseudorandom(out: &mut [u8]) {
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64)
        | 1;
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = chunk.len();
        chunk.copy_from_slice(&x.to_le_bytes()[..n]);
    }
}

/// A Class of Service TLV as reflected (RFC 8972 §4.4 with erratum 8199;
/// EC1 and RPE from draft-ietf-ippm-stamp-cos-ecn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CosTlv {
    /// DSCP asked for the reply.
    pub dscp1: u8,
    /// DSCP of the request on arrival at the reflector.
    pub dscp2: u8,
    /// ECN of the request on arrival.
    pub ecn: u8,
    /// RP: 0 when the reply was marked DSCP1, 1 when policy kept DSCP2.
    pub rp: u8,
    /// ECN asked for the reply.
    pub ecn1: u8,
    /// RPE: 0b11 reply marked EC1, 0b10 not (Not-ECT), 0b00 not said.
    pub rpe: u8,
}

impl CosTlv {
    /// Reads the four value octets.
    pub fn read(v: &[u8; 4]) -> Self {
        Self {
            dscp1: v[0] >> 2,
            dscp2: ((v[0] & 3) << 4) | (v[1] >> 4),
            ecn: (v[1] >> 2) & 3,
            rp: v[1] & 3,
            ecn1: v[2] >> 6,
            rpe: (v[2] >> 4) & 3,
        }
    }

    /// Writes the four value octets (reserved bits zero).
    pub fn write(&self, v: &mut [u8]) {
        v[0] = (self.dscp1 << 2) | ((self.dscp2 >> 4) & 3);
        v[1] = ((self.dscp2 & 0xf) << 4) | ((self.ecn & 3) << 2) | (self.rp & 3);
        v[2] = ((self.ecn1 & 3) << 6) | ((self.rpe & 3) << 4);
        v[3] = 0;
    }
}

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

/// A walk that does not treat zeros as padding: inside a TLV's value,
/// sub-TLVs with zeroed values are still sub-TLVs.
pub fn walk_all(area: &[u8]) -> Walk<'_> {
    Walk {
        area,
        at: 0,
        data_end: area.len(),
        done: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_stops_at_an_overrun_and_at_zero_padding() {
        // CoS, then a TLV claiming 200 octets in a 20-octet area.
        let mut area = vec![0x80, 4, 0, 4, 0xb8, 0, 0x80, 0];
        area.extend_from_slice(&[0x80, 99, 0, 200, 1, 2, 3, 4]);
        area.extend_from_slice(&[9; 4]);
        let steps: Vec<Step> = walk(&area).collect();
        assert_eq!(steps.len(), 2);
        assert!(matches!(
            steps[0],
            Step::Tlv(Tlv {
                kind: 4,
                len: 4,
                ..
            })
        ));
        assert!(matches!(
            steps[1],
            Step::Overrun(Tlv {
                at: 8,
                len: 200,
                ..
            })
        ));
        // Zeros after a TLV are padding; a zero value inside one is not.
        let padded = [
            0x80, 5, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        let steps: Vec<Step> = walk(&padded).collect();
        assert_eq!(
            steps,
            [Step::Tlv(Tlv {
                at: 0,
                flags: 0x80,
                kind: 5,
                len: 12
            })]
        );
        assert_eq!(walk(&[0u8; 40]).count(), 0);
        assert_eq!(walk(&[1, 2, 3]).count(), 0, "shorter than a header");
    }

    #[test]
    fn cos_fields_sit_where_rfc_8972_and_its_erratum_put_them() {
        // As stamp-suite's reflector answered a request for EF/ECT(0) that
        // arrived EF/CE: DSCP1 46, DSCP2 46, ECN 3, RP 0, EC1 2, RPE 3.
        let v = [0xba, 0xec, 0xb0, 0x00];
        let c = CosTlv::read(&v);
        assert_eq!(
            (c.dscp1, c.dscp2, c.ecn, c.rp, c.ecn1, c.rpe),
            (46, 46, 3, 0, 2, 3)
        );
        let mut out = [0xffu8; 4];
        c.write(&mut out);
        assert_eq!(out, v);
    }

    #[test]
    fn tlv_lists_parse_and_print() {
        let all: StampTlvs = "all".parse().unwrap();
        assert_eq!(all, StampTlvs::ALL);
        assert_eq!(all.to_string().parse::<StampTlvs>(), Ok(all));
        let some: StampTlvs = "cos, direct".parse().unwrap();
        assert!(some.cos && some.direct && !some.follow_up);
        assert_eq!(some.to_string(), "cos,direct-measurement");
        assert!(
            "cos,bogus"
                .parse::<StampTlvs>()
                .unwrap_err()
                .contains("'bogus'")
        );
    }

    #[test]
    fn a_request_holds_its_tlvs_and_reaches_the_size_asked() {
        let mut p = vec![0u8; 44];
        let set: StampTlvs = "cos,follow-up,direct".parse().unwrap();
        let req = TlvRequest::build(&mut p, 44, 200, set, 0xba, false);
        assert_eq!(p.len(), 200);
        let kinds: Vec<(u8, u8, usize)> = walk(&p[44..])
            .map(|s| match s {
                Step::Tlv(t) => (t.flags, t.kind, t.len),
                Step::Overrun(_) => panic!("overrun"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (U, 4, 4),
                (U, 5, 12),
                (U, 7, 16),
                (U, 1, 200 - 44 - 8 - 16 - 20 - 4)
            ]
        );
        req.finish(&mut p, 44, 7, None);
        assert_eq!(p[44 + 8 + 4..44 + 8 + 8], [0, 0, 0, 7], "S_TxC");
        assert_eq!(
            p[44 + 4..44 + 8],
            [0xb8, 0, 0x80, 0],
            "DSCP1 EF, EC1 ECT(0)"
        );
        // Nothing asked: the packet stays as it was.
        let mut q = vec![0u8; 44];
        TlvRequest::build(&mut q, 44, 44, StampTlvs::default(), 0, false);
        assert_eq!(q.len(), 44);
    }
}
