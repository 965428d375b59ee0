//! Property tests over every parser that touches the wire: any bytes at
//! all must not panic, never yield an answer larger than the request, and
//! be refused (counted by the caller) rather than half-read.

use super::echo::{EchoCodec, echo_seq};
use super::stamp::{
    self, ErrorEstimate, PACKET_LEN, Reflection, ReflectorPacket, SenderPacket, StampError,
    WireTime,
};
use super::stamp_key::StampKey;
use super::{Codec, StampSender};
use crate::reflector_admission::Cidr;
use proptest::prelude::*;

fn any_datagram() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..200)
}

fn any_error() -> impl Strategy<Value = ErrorEstimate> {
    (any::<bool>(), any::<bool>(), 0u8..64, 1u8..=255).prop_map(
        |(synchronized, ptp, scale, multiplier)| ErrorEstimate {
            synchronized,
            ptp,
            scale,
            multiplier,
        },
    )
}

fn any_time() -> impl Strategy<Value = WireTime> {
    (any::<u32>(), any::<u32>()).prop_map(|(secs, frac)| WireTime { secs, frac })
}

proptest! {
    /// The reflector's one parser: whatever arrives, the answer has the
    /// request's length; a refusal leaves the bytes untouched; an answer
    /// carries the sender's fields where RFC 8762 and 8972 put them, and
    /// everything past octet 44 unchanged.
    #[test]
    fn reflecting_any_bytes_never_grows_them(
        datagram in any_datagram(),
        seq in proptest::option::of(any::<u32>()),
        ttl in any::<u8>(),
        t2 in any_time(),
        t3 in any_time(),
    ) {
        let mut buf = datagram.clone();
        let how = Reflection { t2, ttl, seq, error: ErrorEstimate::UNSYNCHRONIZED };
        match stamp::reflect_in_place(&mut buf, stamp::Layout::OPEN, how, || t3) {
            Err(StampError::TooShort(n)) => {
                prop_assert!(n < PACKET_LEN);
                prop_assert_eq!(&buf, &datagram);
            }
            Err(StampError::ZeroMultiplier) => {
                prop_assert_eq!(datagram[13], 0);
                prop_assert_eq!(&buf, &datagram);
            }
            Ok(()) => {
                prop_assert_eq!(buf.len(), datagram.len());
                prop_assert_eq!(&buf[PACKET_LEN..], &datagram[PACKET_LEN..]);
                let sent = SenderPacket::decode(&datagram).unwrap();
                let answer = ReflectorPacket::decode(&buf).unwrap();
                prop_assert_eq!(answer.sender_seq, sent.seq);
                prop_assert_eq!(answer.sender_timestamp, sent.timestamp);
                prop_assert_eq!(answer.sender_error, sent.error);
                prop_assert_eq!(answer.ssid, sent.ssid);
                prop_assert_eq!(answer.seq, seq.unwrap_or(sent.seq));
                prop_assert_eq!((answer.receive_timestamp, answer.timestamp), (t2, t3));
                prop_assert_eq!(answer.sender_ttl, ttl);
            }
        }
    }

    /// Both packet decoders accept exactly what is long enough and has a
    /// non-zero error multiplier, and never panic.
    #[test]
    fn decoders_take_any_bytes(datagram in any_datagram()) {
        let valid = datagram.len() >= PACKET_LEN && datagram[13] != 0;
        prop_assert_eq!(SenderPacket::decode(&datagram).is_ok(), valid);
        prop_assert_eq!(ReflectorPacket::decode(&datagram).is_ok(), valid);
        let _ = echo_seq(&datagram);
        let _ = stamp::sequence_of(&datagram);
    }

    /// What is encoded is decoded back, field for field.
    #[test]
    fn packets_round_trip(
        seq in any::<u32>(), ts in any_time(), error in any_error(), ssid in any::<u16>(),
        t2 in any_time(), sseq in any::<u32>(), sts in any_time(), serror in any_error(),
        ttl in any::<u8>(),
    ) {
        let sender = SenderPacket { seq, timestamp: ts, error, ssid };
        let mut out = [0u8; PACKET_LEN];
        sender.encode(&mut out);
        prop_assert_eq!(SenderPacket::decode(&out), Ok(sender));
        let reflector = ReflectorPacket {
            seq, timestamp: ts, error, ssid, receive_timestamp: t2, sender_seq: sseq,
            sender_timestamp: sts, sender_error: serror, sender_ttl: ttl,
        };
        reflector.encode(&mut out);
        prop_assert_eq!(ReflectorPacket::decode(&out), Ok(reflector));
    }

    /// The client's decoders (echo and STAMP) take any datagram as a
    /// possible reply: no panic, and an echo reply only at the exact length
    /// of the request, carrying this run's token.
    #[test]
    fn client_decoders_take_any_bytes(
        datagram in any_datagram(),
        size in 8usize..128,
        token in any::<u64>(),
        newest in any::<u64>(),
        ssid in any::<u16>(),
    ) {
        let echo = Codec::Echo(EchoCodec::new(size, token));
        if echo.decode(&datagram, newest).is_some() {
            prop_assert_eq!(datagram.len(), size);
        }
        let _ = echo.truncated_echo(&datagram);
        let stamp = Codec::Stamp(StampSender::new(size, ssid, None));
        let _ = stamp.decode(&datagram, newest);
        let _ = stamp.is_echoed_stamp_request(&datagram);
    }

    /// Authenticated mode: any bytes never verify by accident, no decoder
    /// panics, and a packet signed, encoded and decoded comes back field
    /// for field, its HMAC verifying until any octet it covers changes.
    #[test]
    fn authenticated_packets_verify_only_as_signed(
        datagram in prop::collection::vec(any::<u8>(), 0..300),
        seq in any::<u32>(), ts in any_time(), error in any_error(), ssid in any::<u16>(),
        t2 in any_time(), flip in 0usize..112,
    ) {
        let key = StampKey::from_hex("000102030405060708090a0b0c0d0e0f").unwrap();
        let at = stamp::Layout::AUTHENTICATED;
        prop_assert!(!key.verifies(&datagram));
        let _ = SenderPacket::decode_as(&datagram, at);
        let _ = ReflectorPacket::decode_as(&datagram, at);
        let client = Codec::Stamp(StampSender::new(8, ssid, Some(key.clone())));
        prop_assert!(client.decode(&datagram, 0).is_none());
        let mut out = [0u8; 112];
        SenderPacket { seq, timestamp: ts, error, ssid }.encode_as(&mut out, at);
        key.sign(&mut out);
        prop_assert!(key.verifies(&out));
        prop_assert_eq!(SenderPacket::decode_as(&out, at), Ok(SenderPacket { seq, timestamp: ts, error, ssid }));
        // The reflector's answer, in place: same length, signed anew.
        let mut answer = out;
        let how = Reflection { t2, ttl: 9, seq: None, error: ErrorEstimate::UNSYNCHRONIZED };
        stamp::reflect_in_place(&mut answer, at, how, || t2).unwrap();
        key.sign(&mut answer);
        prop_assert!(key.verifies(&answer));
        let r = ReflectorPacket::decode_as(&answer, at).unwrap();
        prop_assert_eq!((r.sender_seq, r.ssid, r.sender_ttl), (seq, ssid, 9));
        answer[flip] ^= 0x80;
        prop_assert!(!key.verifies(&answer), "octet {} is covered", flip);
    }

    /// `--allow` takes any text without panicking, and what it prints it
    /// reads back as the same network.
    #[test]
    fn networks_parse_any_text_and_round_trip(text in ".{0,60}", v4 in any::<[u8; 4]>(), prefix in 0u8..=32) {
        let _ = text.parse::<Cidr>();
        let net = Cidr { addr: std::net::IpAddr::from(v4), prefix };
        prop_assert_eq!(net.to_string().parse::<Cidr>(), Ok(net));
        prop_assert!(net.contains(std::net::IpAddr::from(v4)));
    }
}
