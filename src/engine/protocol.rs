//! The client's wire formats: plain echo (RFC 862 compatible) and STAMP
//! session-sender packets (RFC 8762).
//!
//! Plain echo:
//! A request is the 8-byte little-endian sequence number, then padding up to
//! `--size`. When there is room, bytes 8..16 carry a per-run token so that a
//! datagram which merely has the right length is not mistaken for a reply.
//! Any RFC 862 echo server returns the bytes unchanged, which is all the
//! client relies on.

/// Smallest payload: the sequence number.
pub const MIN_SIZE: usize = 8;
/// Largest UDP payload over IPv4.
pub const MAX_SIZE: usize = 65_507;
/// Receive buffers are one byte larger than any legal datagram, so a
/// truncated read is impossible to confuse with a full one.
pub const RECV_BUFFER: usize = 65_536;

const TOKEN_END: usize = 16;

use super::stamp::{self, ErrorEstimate, NtpTime, ReflectorPacket, SenderPacket};

/// What a reply said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// Which request it answers.
    pub seq: u64,
    /// STAMP: the reflector's receive time (its clock, ns since the epoch).
    pub t2: Option<u64>,
    /// STAMP: the reflector's send time.
    pub t3: Option<u64>,
}

/// The client's codec for the chosen protocol.
#[derive(Debug)]
pub enum Codec {
    /// Plain echo.
    Echo(EchoCodec),
    /// STAMP session-sender.
    Stamp(StampSender),
}

impl Codec {
    /// Writes request `seq`, sent at `t1_unix_ns` (STAMP carries it), and
    /// returns the datagram.
    #[inline]
    pub fn encode(&mut self, seq: u64, t1_unix_ns: u64) -> &[u8] {
        match self {
            Codec::Echo(c) => c.encode(seq),
            Codec::Stamp(c) => c.encode(seq, t1_unix_ns),
        }
    }

    /// Reads a reply; `newest` is the latest sequence number sent (STAMP
    /// numbers are 32 bits wide and are widened next to it).
    #[inline]
    pub fn decode(&self, reply: &[u8], newest: u64) -> Option<Reply> {
        match self {
            Codec::Echo(c) => c.decode(reply).map(|seq| Reply {
                seq,
                t2: None,
                t3: None,
            }),
            Codec::Stamp(c) => c.decode(reply, newest),
        }
    }

    /// Whether a datagram is the request just sent, unchanged: a STAMP
    /// request answered by a plain echo server.
    pub fn is_echoed_stamp_request(&self, datagram: &[u8]) -> bool {
        matches!(self, Codec::Stamp(c) if c.packet == datagram)
    }
}

/// STAMP session-sender packets: 44 octets (more with `--size`, as
/// zero padding), sequence number and T1 in NTP format.
#[derive(Debug)]
pub struct StampSender {
    packet: Vec<u8>,
}

impl StampSender {
    /// Packets of `size` octets, at least the 44 STAMP needs.
    pub fn new(size: usize) -> Self {
        Self {
            packet: vec![0; size.max(stamp::PACKET_LEN)],
        }
    }

    /// The packet length on the wire.
    pub fn size(&self) -> usize {
        self.packet.len()
    }

    #[inline]
    fn encode(&mut self, seq: u64, t1_unix_ns: u64) -> &[u8] {
        SenderPacket {
            seq: seq as u32,
            timestamp: NtpTime::from_unix_ns(t1_unix_ns),
            error: ErrorEstimate::LOCAL,
        }
        .encode(&mut self.packet);
        &self.packet
    }

    #[inline]
    fn decode(&self, reply: &[u8], newest: u64) -> Option<Reply> {
        let r = ReflectorPacket::decode(reply).ok()?;
        // A reflector always stamps T2; zero there is our own request
        // coming back from a plain echo server (those octets are MBZ).
        if r.receive_timestamp == NtpTime::default() {
            return None;
        }
        Some(Reply {
            seq: widen(r.sender_seq, newest),
            t2: Some(r.receive_timestamp.to_unix_ns()),
            t3: Some(r.timestamp.to_unix_ns()),
        })
    }
}

/// The 64-bit sequence number closest below or at `newest` whose low 32
/// bits are `low`.
fn widen(low: u32, newest: u64) -> u64 {
    let candidate = (newest & !0xFFFF_FFFF) | u64::from(low);
    if candidate > newest && candidate >= 1 << 32 {
        candidate - (1 << 32)
    } else {
        candidate
    }
}

/// The sequence number of a datagram laid out like a Synapse client's (the
/// first 8 bytes, little-endian), for the server's log. Any other client's
/// datagram gives whatever its first 8 bytes hold.
#[inline]
pub fn echo_seq(datagram: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(datagram.get(..8)?.try_into().ok()?))
}

/// Builds and recognises the client's datagrams. Holds the one reusable
/// send buffer, so encoding a packet allocates nothing.
#[derive(Debug)]
pub struct EchoCodec {
    packet: Vec<u8>,
    token: u64,
}

impl EchoCodec {
    /// `size` must already be validated to lie in `MIN_SIZE..=MAX_SIZE`.
    pub fn new(size: usize, token: u64) -> Self {
        let mut packet = vec![0u8; size];
        if size >= TOKEN_END {
            packet[8..TOKEN_END].copy_from_slice(&token.to_le_bytes());
        }
        Self { packet, token }
    }

    /// Writes `seq` into the send buffer and returns the whole datagram.
    #[inline]
    pub fn encode(&mut self, seq: u64) -> &[u8] {
        self.packet[..8].copy_from_slice(&seq.to_le_bytes());
        &self.packet
    }

    /// The sequence number of a reply, or `None` when the datagram does not
    /// have the form of one of this run's packets (wrong length or token).
    #[inline]
    pub fn decode(&self, reply: &[u8]) -> Option<u64> {
        if reply.len() != self.packet.len() {
            return None;
        }
        if reply.len() >= TOKEN_END && reply[8..TOKEN_END] != self.token.to_le_bytes() {
            return None;
        }
        echo_seq(reply)
    }

    /// Payload size in bytes.
    pub fn size(&self) -> usize {
        self.packet.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_requests_carry_seq_and_t1_and_replies_widen_the_seq() {
        let mut c = Codec::Stamp(StampSender::new(8));
        let t1 = 1_700_000_000_123_456_789;
        let req = c.encode(5, t1).to_vec();
        assert_eq!(req.len(), 44, "never shorter than STAMP's 44 octets");
        let sent = SenderPacket::decode(&req).unwrap();
        assert_eq!(sent.seq, 5);
        assert!(sent.timestamp.to_unix_ns().abs_diff(t1) <= 1);
        let mut reply = req.clone();
        let t2 = NtpTime::from_unix_ns(t1 + 10_000);
        stamp::reflect_in_place(&mut reply, t2, 64, || NtpTime::from_unix_ns(t1 + 13_000)).unwrap();
        let got = c.decode(&reply, 5).unwrap();
        assert_eq!(got.seq, 5);
        assert_eq!(got.t3.unwrap() - got.t2.unwrap(), 3_000);
        assert_eq!(
            c.decode(&reply[..43], 5),
            None,
            "short packets are not replies"
        );
        assert_eq!(c.decode(&req, 5), None, "an echoed request is not a reply");
        assert!(c.is_echoed_stamp_request(&req));
        assert!(!c.is_echoed_stamp_request(&reply));
        assert_eq!(widen(3, (1 << 32) + 10), (1 << 32) + 3);
        assert_eq!(widen(u32::MAX, (1 << 32) + 1), u64::from(u32::MAX));
        assert_eq!(
            widen(9, 4),
            9,
            "ahead of anything sent: left to the tracker"
        );
    }

    #[test]
    fn sequence_is_little_endian_at_the_front() {
        let mut c = EchoCodec::new(8, 0);
        assert_eq!(c.encode(0x0102_0304_0506_0708), &[8, 7, 6, 5, 4, 3, 2, 1]);
    }

    #[test]
    fn padding_reaches_the_requested_size() {
        let mut c = EchoCodec::new(100, 7);
        assert_eq!(c.encode(1).len(), 100);
        assert_eq!(c.size(), 100);
    }

    #[test]
    fn decode_accepts_an_exact_echo() {
        let mut c = EchoCodec::new(64, 0xfeed);
        let sent = c.encode(42).to_vec();
        assert_eq!(c.decode(&sent), Some(42));
    }

    #[test]
    fn decode_rejects_wrong_length_and_wrong_token() {
        let mut c = EchoCodec::new(64, 0xfeed);
        let sent = c.encode(42).to_vec();
        assert_eq!(c.decode(&sent[..63]), None);
        let mut other = EchoCodec::new(64, 0xbeef);
        assert_eq!(c.decode(other.encode(42)), None);
        assert_eq!(c.decode(&[]), None);
    }
}
