//! STAMP, the Simple Two-way Active Measurement Protocol (RFC 8762): the
//! byte layout of session-sender and session-reflector test packets, in
//! unauthenticated and authenticated mode (the same fields at other
//! offsets, see [`Layout`]). The timestamps (NTP or PTP) are in
//! `wire_time.rs`, the error estimates beside them in `error_estimate.rs`.
//!
//! Everything here is pure and allocation-free: encoders write into caller
//! buffers, decoders read from received bytes.
//!
//! ```text
//! sender (44 octets)              reflector (44 octets)
//!  0..4   sequence number          0..4   sequence number
//!  4..12  timestamp (T1)           4..12  timestamp (T3)
//! 12..14  error estimate          12..14  error estimate
//! 14..16  SSID (RFC 8972)         14..16  SSID, the sender's, copied
//! 16..44  MBZ
//!                                 16..24  receive timestamp (T2)
//!                                 24..28  session-sender sequence number
//!                                 28..36  session-sender timestamp (T1)
//!                                 36..38  session-sender error estimate
//!                                 38..40  MBZ
//!                                 40      session-sender TTL
//!                                 41..44  MBZ
//! ```

/// Length of an unauthenticated test packet, in both directions.
pub const PACKET_LEN: usize = 44;

/// Where each field sits. Both modes start with the sequence number; the
/// authenticated packets (RFC 8762 §4.2.2, §4.3.2) spread the same fields
/// over 112 octets, MBZ between them and the HMAC in the last 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Packet length.
    pub len: usize,
    timestamp: usize,
    error: usize,
    ssid: usize,
    receive_timestamp: usize,
    sender_seq: usize,
    sender_timestamp: usize,
    sender_error: usize,
    sender_ttl: usize,
}

impl Layout {
    /// Unauthenticated mode: 44 octets (the table above).
    pub const OPEN: Self = Self {
        len: PACKET_LEN,
        timestamp: 4,
        error: 12,
        ssid: 14,
        receive_timestamp: 16,
        sender_seq: 24,
        sender_timestamp: 28,
        sender_error: 36,
        sender_ttl: 40,
    };

    /// Authenticated mode: 112 octets, the HMAC at 96..112.
    pub const AUTHENTICATED: Self = Self {
        len: 112,
        timestamp: 16,
        error: 24,
        ssid: 26,
        receive_timestamp: 32,
        sender_seq: 48,
        sender_timestamp: 64,
        sender_error: 72,
        sender_ttl: 80,
    };
}
/// The well-known STAMP port (RFC 8762, section 4.1).
pub const DEFAULT_PORT: u16 = 862;

pub use super::error_estimate::ErrorEstimate;
pub use super::wire_time::{TimeFormat, WireTime};

/// A session-sender test packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderPacket {
    /// Sequence number.
    pub seq: u32,
    /// When it was sent (T1).
    pub timestamp: WireTime,
    /// How good T1 is.
    pub error: ErrorEstimate,
    /// Session-Sender Identifier (RFC 8972 §3; 0 from an RFC 8762-only
    /// sender, whose octets 14–15 are MBZ).
    pub ssid: u16,
}

/// A session-reflector test packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReflectorPacket {
    /// The reflector's sequence number.
    pub seq: u32,
    /// When the reply was sent (T3).
    pub timestamp: WireTime,
    /// How good T2 and T3 are.
    pub error: ErrorEstimate,
    /// The sender's SSID, copied (RFC 8972 §3).
    pub ssid: u16,
    /// When the request was received (T2).
    pub receive_timestamp: WireTime,
    /// The sender's sequence number, echoed.
    pub sender_seq: u32,
    /// The sender's T1, echoed.
    pub sender_timestamp: WireTime,
    /// The sender's error estimate, echoed.
    pub sender_error: ErrorEstimate,
    /// TTL (or hop limit) of the request as it arrived.
    pub sender_ttl: u8,
}

/// Why a datagram is not a STAMP test packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StampError {
    /// Shorter than a test packet (44 octets, or 112 authenticated).
    #[error("{0} bytes is shorter than a STAMP test packet")]
    TooShort(usize),
    /// An error estimate with a zero multiplier, which RFC 4656 forbids.
    #[error("error estimate multiplier is zero")]
    ZeroMultiplier,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn check(error: ErrorEstimate) -> Result<(), StampError> {
    if error.multiplier == 0 {
        Err(StampError::ZeroMultiplier)
    } else {
        Ok(())
    }
}

/// The packet's octets, if `b` is long enough to hold one.
fn whole(b: &[u8], at: Layout) -> Result<&[u8], StampError> {
    b.get(..at.len).ok_or(StampError::TooShort(b.len()))
}

/// Zeroes the packet's octets and writes the fields both packets start
/// with: sequence number, timestamp, error estimate and SSID.
fn write_head(out: &mut [u8], at: Layout, seq: u32, t: WireTime, e: ErrorEstimate, ssid: u16) {
    out[..at.len].fill(0);
    out[..4].copy_from_slice(&seq.to_be_bytes());
    t.write(&mut out[at.timestamp..at.timestamp + 8]);
    out[at.error..at.error + 2].copy_from_slice(&e.to_bits().to_be_bytes());
    out[at.ssid..at.ssid + 2].copy_from_slice(&ssid.to_be_bytes());
}

impl SenderPacket {
    /// Writes the unauthenticated packet (MBZ zeroed) into `out[..44]`;
    /// anything after that is left as is (padding).
    pub fn encode(&self, out: &mut [u8]) {
        self.encode_as(out, Layout::OPEN);
    }

    /// Writes the packet in layout `at` into `out[..at.len]` (an
    /// authenticated packet's HMAC is left zero, for the key to sign).
    pub fn encode_as(&self, out: &mut [u8], at: Layout) {
        write_head(out, at, self.seq, self.timestamp, self.error, self.ssid);
    }

    /// Reads an unauthenticated sender packet. Longer datagrams are
    /// accepted (padding, or RFC 8972 TLVs, follow the 44 octets).
    pub fn decode(b: &[u8]) -> Result<Self, StampError> {
        Self::decode_as(b, Layout::OPEN)
    }

    /// Reads a sender packet in layout `at` (an HMAC is not checked here).
    pub fn decode_as(b: &[u8], at: Layout) -> Result<Self, StampError> {
        let b = whole(b, at)?;
        let p = Self {
            seq: be32(&b[..4]),
            timestamp: WireTime::read(&b[at.timestamp..]),
            error: ErrorEstimate::from_bits(be16(&b[at.error..])),
            ssid: be16(&b[at.ssid..]),
        };
        check(p.error).map(|()| p)
    }
}

impl ReflectorPacket {
    /// Writes the unauthenticated packet (MBZ zeroed) into `out[..44]`.
    pub fn encode(&self, out: &mut [u8]) {
        self.encode_as(out, Layout::OPEN);
    }

    /// Writes the packet in layout `at` into `out[..at.len]` (an
    /// authenticated packet's HMAC is left zero, for the key to sign).
    pub fn encode_as(&self, out: &mut [u8], at: Layout) {
        write_head(out, at, self.seq, self.timestamp, self.error, self.ssid);
        let rx = at.receive_timestamp;
        self.receive_timestamp.write(&mut out[rx..rx + 8]);
        out[at.sender_seq..at.sender_seq + 4].copy_from_slice(&self.sender_seq.to_be_bytes());
        let t1 = at.sender_timestamp;
        self.sender_timestamp.write(&mut out[t1..t1 + 8]);
        let e = self.sender_error.to_bits().to_be_bytes();
        out[at.sender_error..at.sender_error + 2].copy_from_slice(&e);
        out[at.sender_ttl] = self.sender_ttl;
    }

    /// Reads an unauthenticated reflector packet.
    pub fn decode(b: &[u8]) -> Result<Self, StampError> {
        Self::decode_as(b, Layout::OPEN)
    }

    /// Reads a reflector packet in layout `at` (an HMAC is not checked
    /// here).
    pub fn decode_as(b: &[u8], at: Layout) -> Result<Self, StampError> {
        // Both packets start with the same four fields, read and checked
        // (length, error estimate) as the sender's.
        let head = SenderPacket::decode_as(b, at)?;
        Ok(Self {
            seq: head.seq,
            timestamp: head.timestamp,
            error: head.error,
            ssid: head.ssid,
            receive_timestamp: WireTime::read(&b[at.receive_timestamp..]),
            sender_seq: be32(&b[at.sender_seq..]),
            sender_timestamp: WireTime::read(&b[at.sender_timestamp..]),
            sender_error: ErrorEstimate::from_bits(be16(&b[at.sender_error..])),
            sender_ttl: b[at.sender_ttl],
        })
    }
}

/// The sequence number of a STAMP test packet (sender's or reflector's:
/// both start with it).
pub fn sequence_of(packet: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(packet.get(..4)?.try_into().ok()?))
}

/// What the reflector knows of a request as it answers it.
#[derive(Debug, Clone, Copy)]
pub struct Reflection {
    /// When it arrived (T2).
    pub t2: WireTime,
    /// Its TTL or hop limit on arrival.
    pub ttl: u8,
    /// The reflector's own sequence number for the session (stateful,
    /// RFC 8762 §4.2.1); `None` copies the sender's (stateless, §4.2.2).
    pub seq: Option<u32>,
    /// How good the reflector's clock is.
    pub error: ErrorEstimate,
}

/// The reflector's answer to `request` (in layout `at`), written over it
/// in place: the reply has the request's length (RFC 8762 symmetric size),
/// octets past the packet come back unchanged, and a malformed request
/// gets no answer at all. `t3` is read as late as possible, just before
/// the caller signs (authenticated) and sends.
pub fn reflect_in_place(
    request: &mut [u8],
    at: Layout,
    how: Reflection,
    t3: impl FnOnce() -> WireTime,
) -> Result<(), StampError> {
    let sender = SenderPacket::decode_as(request, at)?;
    reflect_decoded(request, at, &sender, how, t3)
}

/// [`reflect_in_place`] for a request the caller has already decoded as
/// `sender` (and not changed since): the reflector checks each request
/// before it answers, and decoding it twice was a tenth of an answer.
/// A `request` shorter than its layout is refused, as there.
pub fn reflect_decoded(
    request: &mut [u8],
    at: Layout,
    sender: &SenderPacket,
    how: Reflection,
    t3: impl FnOnce() -> WireTime,
) -> Result<(), StampError> {
    whole(request, at)?;
    let (t2, ttl) = (how.t2, how.ttl);
    let reply = ReflectorPacket {
        seq: how.seq.unwrap_or(sender.seq),
        timestamp: t3(),
        error: how.error,
        ssid: sender.ssid,
        receive_timestamp: t2,
        sender_seq: sender.seq,
        sender_timestamp: sender.timestamp,
        sender_error: sender.error,
        sender_ttl: ttl,
    };
    reply.encode_as(request, at);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sender packet written out octet by octet from RFC 8762 figure 3:
    /// sequence 0x00000007; timestamp 0xEB0A1B2C.80000000 (a time in 2024,
    /// plus half a second); error estimate S=1 Z=0 scale=1 multiplier=2
    /// (0b1_0_000001_00000010 = 0x8102); 30 MBZ octets.
    const SENDER: [u8; 44] = [
        0x00, 0x00, 0x00, 0x07, // sequence number
        0xEB, 0x0A, 0x1B, 0x2C, 0x80, 0x00, 0x00, 0x00, // timestamp
        0x81, 0x02, // error estimate
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, // MBZ
    ];

    /// The stateless reflector's answer to SENDER per RFC 8762 figure 4:
    /// sequence 7; T3 0xEB0A1B2C.C0000000; error S=0 Z=0 scale=12
    /// multiplier=1 (0x0C01); MBZ; T2 0xEB0A1B2C.A0000000; sender sequence
    /// 7; sender timestamp and error copied; MBZ; TTL 64; MBZ.
    const REFLECTOR: [u8; 44] = [
        0x00, 0x00, 0x00, 0x07, // sequence number
        0xEB, 0x0A, 0x1B, 0x2C, 0xC0, 0x00, 0x00, 0x00, // timestamp (T3)
        0x0C, 0x01, // error estimate
        0x00, 0x00, // MBZ
        0xEB, 0x0A, 0x1B, 0x2C, 0xA0, 0x00, 0x00, 0x00, // receive timestamp (T2)
        0x00, 0x00, 0x00, 0x07, // session-sender sequence number
        0xEB, 0x0A, 0x1B, 0x2C, 0x80, 0x00, 0x00, 0x00, // session-sender timestamp
        0x81, 0x02, // session-sender error estimate
        0x00, 0x00, // MBZ
        0x40, // session-sender TTL
        0x00, 0x00, 0x00, // MBZ
    ];

    /// The reflector's error estimate in the example: S=0 Z=0 scale=12
    /// multiplier=1 (0x0C01).
    const EXAMPLE_ERROR: ErrorEstimate = ErrorEstimate {
        synchronized: false,
        ptp: false,
        scale: 12,
        multiplier: 1,
    };

    fn stateless(t2: WireTime, ttl: u8) -> Reflection {
        Reflection {
            t2,
            ttl,
            seq: None,
            error: EXAMPLE_ERROR,
        }
    }

    #[test]
    fn a_stateful_reflector_writes_its_own_number_and_keeps_the_senders() {
        let mut buf = SENDER;
        let how = Reflection {
            seq: Some(3),
            ..stateless(t(0xA000_0000), 64)
        };
        reflect_in_place(&mut buf, Layout::OPEN, how, || t(0xC000_0000)).unwrap();
        let p = ReflectorPacket::decode(&buf).unwrap();
        assert_eq!((p.seq, p.sender_seq), (3, 7));
    }

    fn t(frac: u32) -> WireTime {
        WireTime {
            secs: 0xEB0A_1B2C,
            frac,
        }
    }

    #[test]
    fn sender_packet_matches_the_rfc_layout_both_ways() {
        let p = SenderPacket::decode(&SENDER).unwrap();
        assert_eq!(p.seq, 7);
        assert_eq!(p.timestamp, t(0x8000_0000));
        assert_eq!(
            p.error,
            ErrorEstimate {
                synchronized: true,
                ptp: false,
                scale: 1,
                multiplier: 2
            }
        );
        let mut out = [0xffu8; 44];
        p.encode(&mut out);
        assert_eq!(out, SENDER);
    }

    #[test]
    fn reflector_packet_matches_the_rfc_layout_both_ways() {
        let p = ReflectorPacket::decode(&REFLECTOR).unwrap();
        assert_eq!((p.seq, p.sender_seq, p.sender_ttl), (7, 7, 64));
        assert_eq!(
            (p.timestamp, p.receive_timestamp, p.sender_timestamp),
            (t(0xC000_0000), t(0xA000_0000), t(0x8000_0000))
        );
        assert_eq!(p.error, EXAMPLE_ERROR);
        let mut out = [0xffu8; 44];
        p.encode(&mut out);
        assert_eq!(out, REFLECTOR);
    }

    /// Reflects `buf` statelessly as the RFC example does: T2 0xA000_0000,
    /// TTL 64, T3 0xC000_0000.
    fn reflect_rfc_example(buf: &mut [u8]) {
        reflect_in_place(buf, Layout::OPEN, stateless(t(0xA000_0000), 64), || {
            t(0xC000_0000)
        })
        .unwrap();
    }

    #[test]
    fn reflecting_the_rfc_sender_packet_gives_the_rfc_reflector_packet() {
        let mut buf = SENDER;
        reflect_rfc_example(&mut buf);
        assert_eq!(buf, REFLECTOR);
    }

    /// RFC 8972 §3: the sender's SSID (octets 14–15) comes back in the
    /// same octets of the answer; the rest of the layout is unchanged.
    #[test]
    fn the_reflector_copies_the_session_sender_identifier() {
        let mut buf = SENDER;
        buf[14..16].copy_from_slice(&0xBEEFu16.to_be_bytes());
        assert_eq!(SenderPacket::decode(&buf).unwrap().ssid, 0xBEEF);
        reflect_rfc_example(&mut buf);
        let mut want = REFLECTOR;
        want[14..16].copy_from_slice(&[0xBE, 0xEF]);
        assert_eq!(buf, want);
        assert_eq!(ReflectorPacket::decode(&buf).unwrap().ssid, 0xBEEF);
        // Written by the sender too.
        let mut p = SenderPacket::decode(&SENDER).unwrap();
        p.ssid = 0x0102;
        let mut out = [0u8; 44];
        p.encode(&mut out);
        assert_eq!(out[14..16], [1, 2]);
    }

    #[test]
    fn longer_requests_keep_their_tail_and_length() {
        let mut buf = [0u8; 60];
        buf[..44].copy_from_slice(&SENDER);
        buf[44..].copy_from_slice(&[0xAB; 16]);
        reflect_rfc_example(&mut buf);
        assert_eq!(buf[..44], REFLECTOR);
        assert_eq!(buf[44..], [0xAB; 16]);
    }

    #[test]
    fn malformed_packets_are_refused_and_left_untouched() {
        let mut short = [1u8; 43];
        assert_eq!(
            reflect_in_place(&mut short, Layout::OPEN, stateless(t(0), 0), || t(0)),
            Err(StampError::TooShort(43))
        );
        assert_eq!(short, [1u8; 43]);
        let mut zero = SENDER;
        zero[13] = 0; // multiplier 0
        assert_eq!(
            reflect_in_place(&mut zero, Layout::OPEN, stateless(t(0), 0), || t(0)),
            Err(StampError::ZeroMultiplier)
        );
        assert_eq!(SenderPacket::decode(&[]), Err(StampError::TooShort(0)));
    }

    /// The reflector's path, the request decoded once by the caller, gives
    /// the RFC example's answer too, and refuses a short buffer untouched.
    #[test]
    fn a_request_decoded_beforehand_is_reflected_the_same() {
        let mut buf = SENDER;
        let sender = SenderPacket::decode(&buf).unwrap();
        let how = stateless(t(0xA000_0000), 64);
        reflect_decoded(&mut buf, Layout::OPEN, &sender, how, || t(0xC000_0000)).unwrap();
        assert_eq!(buf, REFLECTOR);
        let mut short = [1u8; 43];
        assert_eq!(
            reflect_decoded(&mut short, Layout::OPEN, &sender, how, || t(0)),
            Err(StampError::TooShort(43))
        );
        assert_eq!(short, [1u8; 43]);
    }
}
