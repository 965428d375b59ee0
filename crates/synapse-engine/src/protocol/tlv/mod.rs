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

//!
//! By job: this file walks the wire (headers, types, lengths, the walk);
//! `options.rs` parses `--tlv`; `request.rs` builds a sender's TLVs;
//! `reply.rs` reads what a reflector sent back.

mod options;
mod reply;
mod request;

pub use options::StampTlvs;
pub use reply::{FollowUp, HmacCheck, Location, TlvReport, read_reply};
pub use request::TlvRequest;

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
    /// The responder's name (Synapse's, in the private-use range 252-254
    /// of the IANA registry): 16 octets, UTF-8, zero-padded; a multicast
    /// client tells its responders apart by it.
    pub const RESPONDER_NAME: u8 = 252;
}

/// Value lengths a type requires (`None`: any; Location and Timestamp
/// Information take at least their fixed part).
pub fn valid_length(kind: u8, len: usize) -> bool {
    match kind {
        kind::COS => len == 4,
        kind::DIRECT => len == 12,
        kind::FOLLOW_UP | kind::HMAC | kind::RESPONDER_NAME => len == 16,
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
}
