//! The wire formats: plain echo (RFC 862 compatible, `echo`), STAMP test
//! packets (RFC 8762, `stamp`) and the client's STAMP session-sender
//! (`sender`), behind one [`Codec`] the client loop calls.

/// Smallest payload: the sequence number.
pub const MIN_SIZE: usize = 8;
/// Largest UDP payload over IPv4.
pub const MAX_SIZE: usize = 65_507;
/// Checks a payload size given as text (command line or configuration).
pub fn payload_size(s: &str) -> Result<usize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of bytes"))?;
    if (MIN_SIZE..=MAX_SIZE).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is outside {MIN_SIZE}..={MAX_SIZE}"))
    }
}

/// Receive buffers are one byte larger than any legal datagram, so a
/// truncated read is impossible to confuse with a full one.
pub const RECV_BUFFER: usize = 65_536;

pub mod clock_state;
mod echo;
pub mod error_estimate;
pub mod responder_name;
mod sender;
pub mod stamp;
pub mod stamp_key;
pub mod tlv;
#[cfg(test)]
mod tlv_props;
pub mod tlv_reflect;
#[cfg(test)]
mod wire_props;
pub mod wire_time;

pub use echo::{EchoCodec, echo_seq};
pub use sender::StampSender;

/// What a reply said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// Which request it answers.
    pub seq: u64,
    /// STAMP: the reflector's receive time (its clock, ns since the epoch).
    pub t2: Option<u64>,
    /// STAMP: the reflector's send time.
    pub t3: Option<u64>,
    /// STAMP: the reflector's own sequence number.
    pub reflector_seq: Option<u32>,
    /// STAMP: the reflector's error estimate (its S bit, its error, and
    /// the Z bit its T2 and T3 were read by).
    pub reflector_error: stamp::ErrorEstimate,
    /// STAMP: this host's error estimate as the request carried it,
    /// echoed.
    pub client_error: stamp::ErrorEstimate,
    /// STAMP: what the reply's RFC 8972 TLVs said.
    pub tlv: tlv::TlvReport,
}

impl Reply {
    /// A plain echo reply to `seq`: nothing but its number.
    pub fn plain(seq: u64) -> Self {
        Self {
            seq,
            t2: None,
            t3: None,
            reflector_seq: None,
            reflector_error: stamp::ErrorEstimate::UNSYNCHRONIZED,
            client_error: stamp::ErrorEstimate::UNSYNCHRONIZED,
            tlv: tlv::TlvReport::default(),
        }
    }
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

    /// The request a quote of one of this run's own datagrams names (an
    /// ICMP error quotes the start of the datagram it is about): its
    /// sequence number, when the quote holds it and it is one sent so far
    /// (`newest` is the latest).
    pub fn quoted_seq(&self, quoted: &[u8], newest: u64) -> Option<u64> {
        let seq = match self {
            Codec::Echo(_) => u64::from_le_bytes(quoted.get(..8)?.try_into().ok()?),
            Codec::Stamp(_) => {
                // The wire numbers from 1, in 32 bits: widened next to `newest`.
                let wire = u32::from_be_bytes(quoted.get(..4)?.try_into().ok()?);
                sender::widen(wire.wrapping_sub(1), newest)
            }
        };
        (seq <= newest).then_some(seq)
    }

    /// Reads a reply; `newest` is the latest sequence number sent (STAMP
    /// numbers are 32 bits wide and are widened next to it).
    pub fn decode(&self, reply: &[u8], newest: u64) -> Option<Reply> {
        let mut out = Reply::plain(0);
        self.decode_into(reply, newest, &mut out).then_some(out)
    }

    /// [`Codec::decode`] into `out`, the client's one reply, kept between
    /// datagrams: a plain echo reply writes its sequence number alone (the
    /// rest of a plain echo reply is always [`Reply::plain`]'s, and a
    /// codec never changes protocol), so the hot path neither builds nor
    /// moves the whole `Reply` (its TLV report is most of it). Whether
    /// `reply` was one; `out` is unchanged when it was not.
    #[inline(always)]
    pub fn decode_into(&self, reply: &[u8], newest: u64, out: &mut Reply) -> bool {
        match self {
            Codec::Echo(c) => match c.decode(reply) {
                Some(seq) => {
                    out.seq = seq;
                    true
                }
                None => false,
            },
            Codec::Stamp(c) => match c.decode(reply, newest) {
                Some(r) => {
                    *out = r;
                    true
                }
                None => false,
            },
        }
    }

    /// The payload size requested of the echo server, when `datagram` is
    /// one of this run's echo requests cut short.
    pub fn truncated_echo(&self, datagram: &[u8]) -> Option<usize> {
        match self {
            Codec::Echo(c) if c.is_truncated_echo(datagram) => Some(c.size()),
            _ => None,
        }
    }

    /// Whether a datagram is the request just sent, unchanged: a STAMP
    /// request answered by a plain echo server.
    pub fn is_echoed_stamp_request(&self, datagram: &[u8]) -> bool {
        matches!(self, Codec::Stamp(c) if c.packet == datagram)
    }

    /// Whether a datagram was refused as a reply for want of a valid HMAC
    /// (authenticated STAMP only).
    pub fn failed_authentication(&self, datagram: &[u8]) -> bool {
        matches!(self, Codec::Stamp(c) if c.failed_authentication(datagram))
    }
}

#[cfg(test)]
mod tests {
    use super::sender::widen;
    use super::stamp::{SenderPacket, WireTime};
    use super::*;

    /// `request` (sent at `t1`) answered as a reflector numbering it
    /// `reflector_seq` would: received 10 µs after `t1`, sent `dwell_ns` later.
    fn reflected(request: &[u8], t1: u64, reflector_seq: u32, dwell_ns: u64) -> Vec<u8> {
        let mut reply = request.to_vec();
        let how = stamp::Reflection {
            t2: WireTime::from_unix_ns(t1 + 10_000),
            ttl: 64,
            seq: Some(reflector_seq),
            error: stamp::ErrorEstimate::UNSYNCHRONIZED,
        };
        stamp::reflect_in_place(&mut reply, stamp::Layout::OPEN, how, || {
            WireTime::from_unix_ns(t1 + 10_000 + dwell_ns)
        })
        .unwrap();
        reply
    }

    #[test]
    fn a_quoted_request_names_its_sequence_number() {
        let mut echo = Codec::Echo(EchoCodec::new(64, 7));
        let req = echo.encode(41, 0).to_vec();
        assert_eq!(echo.quoted_seq(&req[..16], 50), Some(41));
        assert_eq!(echo.quoted_seq(&req[..16], 40), None, "not sent yet");
        assert_eq!(echo.quoted_seq(&req[..4], 50), None, "too short a quote");
        let mut stamp = Codec::Stamp(StampSender::new(8, 0, None));
        let req = stamp.encode(9, 1).to_vec();
        assert_eq!(stamp.quoted_seq(&req[..8], 12), Some(9));
    }

    #[test]
    fn stamp_requests_carry_seq_and_t1_and_replies_widen_the_seq() {
        let mut c = Codec::Stamp(StampSender::new(8, 0, None));
        let t1 = 1_700_000_000_123_456_789;
        let req = c.encode(5, t1).to_vec();
        assert_eq!(req.len(), 44, "never shorter than STAMP's 44 octets");
        let sent = SenderPacket::decode(&req).unwrap();
        assert_eq!(sent.seq, 6, "numbered from 1 on the wire");
        assert!(sent.timestamp.to_unix_ns().abs_diff(t1) <= 1);
        let reply = reflected(&req, t1, 4, 3_000);
        let got = c.decode(&reply, 5).unwrap();
        assert_eq!(got.seq, 5);
        assert_eq!(got.reflector_seq, Some(4));
        assert!(!got.reflector_error.synchronized);
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
    fn a_sender_with_an_ssid_takes_only_its_own_answers_and_legacy_zeros() {
        let how = stamp::Reflection {
            t2: WireTime::from_unix_ns(1_700_000_000_000_000_000),
            ttl: 64,
            seq: None,
            error: stamp::ErrorEstimate::UNSYNCHRONIZED,
        };
        let t3 = || WireTime::from_unix_ns(1_700_000_000_000_001_000);
        let mut c = Codec::Stamp(StampSender::new(44, 0x1234, None));
        let req = c.encode(0, 1_700_000_000_000_000_000).to_vec();
        assert_eq!(req[14..16], [0x12, 0x34], "RFC 8972 octets 14-15");
        let mut reply = req.clone();
        stamp::reflect_in_place(&mut reply, stamp::Layout::OPEN, how, t3).unwrap();
        assert_eq!(reply[14..16], [0x12, 0x34], "copied back");
        assert!(c.decode(&reply, 0).is_some());
        // An RFC 8762-only reflector zeroes them: still ours.
        let mut legacy = reply.clone();
        legacy[14..16].fill(0);
        assert!(c.decode(&legacy, 0).is_some());
        // Another session's SSID: not ours.
        let mut other = reply.clone();
        other[14..16].copy_from_slice(&[0x43, 0x21]);
        assert_eq!(c.decode(&other, 0), None);
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
    fn decoding_in_place_gives_what_decode_gives_and_keeps_out_on_a_miss() {
        let mut echo = Codec::Echo(EchoCodec::new(64, 0xfeed));
        let first = echo.encode(7, 0).to_vec();
        let second = echo.encode(8, 0).to_vec();
        let mut out = Reply::plain(0);
        assert!(echo.decode_into(&first, 8, &mut out));
        assert_eq!(out, Reply::plain(7));
        assert!(echo.decode_into(&second, 8, &mut out));
        assert_eq!(Some(out), echo.decode(&second, 8));
        assert!(!echo.decode_into(&second[..63], 8, &mut out), "cut short");
        assert_eq!(out, Reply::plain(8), "a miss leaves the last reply");

        // STAMP writes every field: a reply after a reply holds its own.
        let mut stamp = Codec::Stamp(StampSender::new(8, 0, None));
        let t1 = 1_700_000_000_000_000_000;
        let reply = reflected(stamp.encode(3, t1), t1, 9, 2_000);
        let mut out = Reply::plain(99);
        assert!(stamp.decode_into(&reply, 3, &mut out));
        assert_eq!(Some(out), stamp.decode(&reply, 3));
        assert_eq!((out.seq, out.reflector_seq), (3, Some(9)));
        assert!(!stamp.decode_into(&first, 3, &mut out), "not STAMP");
        assert_eq!(out.reflector_seq, Some(9), "a miss leaves the last reply");
    }

    #[test]
    fn decode_accepts_an_exact_echo() {
        let mut c = EchoCodec::new(64, 0xfeed);
        let sent = c.encode(42).to_vec();
        assert_eq!(c.decode(&sent), Some(42));
    }

    #[test]
    fn a_truncated_echo_is_recognised_as_ours() {
        let mut c = EchoCodec::new(9_000, 0xfeed);
        let sent = c.encode(7).to_vec();
        assert_eq!(c.decode(&sent[..8_192]), None, "not a reply");
        assert!(c.is_truncated_echo(&sent[..8_192]));
        assert!(!c.is_truncated_echo(&sent), "whole is not truncated");
        let mut other = EchoCodec::new(9_000, 0xbeef);
        assert!(
            !c.is_truncated_echo(&other.encode(7)[..8_192]),
            "another run's"
        );
        assert!(!c.is_truncated_echo(&sent[..15]), "too short to tell");
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
