//! Property tests of the RFC 8972 TLV parsers, both sides: any bytes at
//! all must not panic, never be read past the datagram, never make an
//! answer longer than its request, and every refusal must be counted.

use super::stamp::WireTime;
use super::stamp_key::StampKey;
use super::tlv::{self, I, M, StampTlvs, Step, TlvRequest, U, kind, walk};
use super::tlv_reflect::{Answered, Answering, answer_tlvs};
use proptest::prelude::*;
use std::net::SocketAddr;

fn key() -> StampKey {
    StampKey::from_hex("000102030405060708090a0b0c0d0e0f").unwrap()
}

fn answering(k: Option<&StampKey>, authenticated: bool) -> Answering<'_> {
    Answering {
        key: k,
        authenticated,
        received_tos: Some(0x2a),
        source: Some(SocketAddr::from(([192, 0, 2, 7], 40_000))),
        destination: Some(SocketAddr::from(([192, 0, 2, 1], 862))),
        clock: (
            tlv::sync::LOCAL,
            tlv::method::SOFTWARE,
            tlv::method::SOFTWARE,
        ),
        counters: Some((9, 8)),
        follow_up: Some(tlv::FollowUp {
            seq: 7,
            t3: WireTime::from_unix_ns(1_800_000_000_000_000_000),
            mode: tlv::method::SOFTWARE,
        }),
        reply_seq: 8,
        name: None,
    }
}

/// TLV-shaped bytes: headers of any type and length (often lying about
/// it), values of any content, sometimes zero padding after.
fn tlv_area() -> impl Strategy<Value = Vec<u8>> {
    let one = (any::<u8>(), 0u8..12, 0usize..40, any::<bool>(), any::<u8>()).prop_map(
        |(flags, k, len, lie, fill)| {
            let claimed = if lie { len as u16 * 7 + 1 } else { len as u16 };
            let mut v = vec![flags, k, 0, 0];
            v[2..4].copy_from_slice(&claimed.to_be_bytes());
            v.extend(std::iter::repeat_n(fill, len));
            v
        },
    );
    (prop::collection::vec(one, 0..8), 0usize..12).prop_map(|(tlvs, pad)| {
        let mut area: Vec<u8> = tlvs.concat();
        area.extend(std::iter::repeat_n(0, pad));
        area
    })
}

fn any_area() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![prop::collection::vec(any::<u8>(), 0..300), tlv_area()]
}

proptest! {
    /// The walk yields places inside the area only; an overrun is the last
    /// thing it yields.
    #[test]
    fn the_walk_never_points_past_the_datagram(area in any_area()) {
        let steps: Vec<Step> = walk(&area).collect();
        for (i, s) in steps.iter().enumerate() {
            match s {
                Step::Tlv(t) => prop_assert!(t.value().end <= area.len()),
                Step::Overrun(t) => {
                    prop_assert!(t.at + tlv::HEADER <= area.len());
                    prop_assert!(t.value().end > area.len());
                    prop_assert_eq!(i, steps.len() - 1);
                }
            }
        }
    }

    /// The reflector answers any bytes in place: same length, nothing
    /// outside a TLV header or value changed, each TLV's flags U, M or I
    /// as the rules say, and every U, M and I counted.
    #[test]
    fn the_reflector_answers_any_tlvs_in_place_and_counts_refusals(
        area in any_area(),
        authenticated in any::<bool>(),
        keyed in any::<bool>(),
    ) {
        let k = key();
        let a = answering(keyed.then_some(&k), authenticated);
        let mut out = area.clone();
        let done: Answered = answer_tlvs(&mut out, [0, 0, 0, 9], &a);
        prop_assert_eq!(out.len(), area.len());
        let steps: Vec<Step> = walk(&area).collect();
        prop_assert_eq!(done.tlvs as usize, steps.len());
        let (mut u, mut m, mut i) = (0u32, 0u32, 0u32);
        for s in walk(&out) {
            let t = match s { Step::Tlv(t) | Step::Overrun(t) => t };
            u += u32::from(t.flags & U != 0);
            m += u32::from(t.flags & M != 0);
            i += u32::from(t.flags & I != 0);
        }
        prop_assert_eq!((u, m), (done.unrecognized, done.malformed));
        prop_assert_eq!(i > 0, done.integrity_failed);
        if steps.iter().any(|s| matches!(s, Step::Overrun(_))) {
            prop_assert!(done.malformed >= 1, "an overrun is refused and counted");
        }
        if done.integrity_failed {
            // Nothing filled: the values are the request's.
            for s in &steps {
                if let Step::Tlv(t) = s {
                    prop_assert_eq!(&out[t.value()], &area[t.value()]);
                }
            }
        }
    }

    /// The sender's reader takes any reply without panicking, and counts
    /// what it saw.
    #[test]
    fn the_sender_reads_any_reply(area in any_area(), keyed in any::<bool>()) {
        let k = key();
        let r = tlv::read_reply(&area, [1, 2, 3, 4], keyed.then_some(&k));
        prop_assert_eq!(usize::from(r.count), walk(&area).count().min(255));
        prop_assert!(r.malformed <= r.count && r.unrecognized <= r.count);
    }

    /// A request Synapse builds, answered by its reflector, reads back as
    /// what the reflector was told, open and authenticated.
    #[test]
    fn a_request_answered_reads_back(
        cos in any::<bool>(), follow_up in any::<bool>(), ts in any::<bool>(),
        location in any::<bool>(), direct in any::<bool>(), padding in any::<bool>(),
        size in 44usize..300, authenticated in any::<bool>(), tos in any::<u8>(),
    ) {
        let set = StampTlvs { cos, follow_up, timestamp_info: ts, location, direct, padding, name: false };
        prop_assume!(!set.is_empty());
        let k = key();
        let base = if authenticated { 112 } else { 44 };
        let mut p = vec![0u8; base];
        p[3] = 9;
        let req = TlvRequest::build(&mut p, base, size, set, tos, authenticated);
        prop_assert!(p.len() >= size);
        req.finish(&mut p, base, 9, authenticated.then_some(&k));
        let a = answering(Some(&k), authenticated);
        let before = p.len();
        let done = answer_tlvs(&mut p[base..], [0, 0, 0, 9], &a);
        prop_assert_eq!(p.len(), before);
        prop_assert_eq!((done.unrecognized, done.malformed, done.integrity_failed), (0, 0, false));
        let r = tlv::read_reply(&p[base..], 8u32.to_be_bytes(), authenticated.then_some(&k));
        prop_assert_eq!((r.unrecognized, r.malformed, r.integrity), (0, 0, 0));
        if authenticated {
            prop_assert_eq!(r.hmac, tlv::HmacCheck::Verified);
        }
        prop_assert_eq!(r.cos.map(|c| (c.dscp2, c.ecn, c.dscp1, c.ecn1)), cos.then_some((0x2a >> 2, 2, tos >> 2, tos & 3)));
        prop_assert_eq!(done.reply_tos, cos.then_some(tos));
        prop_assert_eq!(r.direct, direct.then_some([9, 9, 8]));
        prop_assert_eq!(r.follow_up, if follow_up { a.follow_up } else { None });
        prop_assert_eq!(r.timestamp_info.is_some(), ts);
        if location {
            let l = r.location.unwrap();
            prop_assert_eq!((l.src_port, l.dst_port), (40_000, 862));
            prop_assert_eq!(l.src, Some([192, 0, 2, 7].into()));
            prop_assert_eq!(l.dst, Some([192, 0, 2, 1].into()));
        }
        // Changing a TLV octet after signing breaks the HMAC TLV.
        if authenticated && p.len() > base + 4 {
            p[base + 3] ^= 1;
            let r = tlv::read_reply(&p[base..], 8u32.to_be_bytes(), Some(&k));
            prop_assert!(r.hmac != tlv::HmacCheck::Verified || r.count == 0);
        }
    }
}

/// A request claiming a TLV longer than the datagram: M on it, counted,
/// and not one octet read or written past the end.
#[test]
fn an_overrunning_tlv_is_refused_and_counted() {
    let mut area = vec![
        U,
        kind::COS,
        0,
        4,
        0xb8,
        0,
        0,
        0,
        U,
        kind::DIRECT,
        0xff,
        0xff,
        1,
        2,
    ];
    let done = answer_tlvs(&mut area, [0; 4], &answering(None, false));
    assert_eq!((done.tlvs, done.malformed, done.unrecognized), (2, 1, 0));
    assert_eq!(area[0], 0, "the CoS TLV before it was answered");
    assert_eq!(area[8], M);
    assert_eq!(&area[12..], &[1, 2], "its octets untouched");
}

/// An unknown type keeps U; a known type with a length its type does not
/// allow gets M, and what follows it is left unprocessed (U).
#[test]
fn unknown_types_keep_u_and_a_bad_length_stops_the_processing() {
    let mut area = vec![U, 99, 0, 2, 7, 7];
    area.extend_from_slice(&[U, kind::FOLLOW_UP, 0, 3, 0, 0, 0]);
    area.extend_from_slice(&[U, kind::COS, 0, 4, 0, 0, 0, 0]);
    let done = answer_tlvs(&mut area, [0; 4], &answering(None, false));
    assert_eq!((done.unrecognized, done.malformed), (2, 1));
    assert_eq!((area[0], area[6], area[13]), (U, M, U));
    assert_eq!(
        &area[17..],
        &[0, 0, 0, 0],
        "the CoS TLV after it not filled"
    );
}

/// Authenticated mode: TLVs without an HMAC TLV, or with a wrong one, are
/// all answered with I and nothing filled.
#[test]
fn authenticated_tlvs_need_a_verifying_hmac_tlv() {
    let k = key();
    let mut area = vec![U, kind::DIRECT, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    let done = answer_tlvs(&mut area, [0; 4], &answering(Some(&k), true));
    assert!(done.integrity_failed);
    assert_eq!(area[0], I);
    assert_eq!(&area[8..], &[0; 8], "counters not filled");
    let mut signed = vec![U, kind::DIRECT, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    signed.extend_from_slice(&[U, kind::HMAC, 0, 16]);
    let mac = k.tlv_hmac(&[0, 0, 0, 3], &signed[..16]);
    signed.extend_from_slice(&mac);
    let mut wrong = signed.clone();
    let done = answer_tlvs(&mut signed, [0, 0, 0, 3], &answering(Some(&k), true));
    assert!(!done.integrity_failed);
    assert_eq!((signed[0], signed[16]), (0, 0));
    let done = answer_tlvs(&mut wrong, [0, 0, 0, 4], &answering(Some(&k), true));
    assert!(done.integrity_failed, "signed over another sequence number");
}

/// The first answer of a session has nothing to follow up: seq and
/// timestamp zero, which the sender reads as "none yet".
#[test]
fn a_follow_up_with_nothing_to_report_is_zero() {
    let mut area = vec![U, kind::FOLLOW_UP, 0, 16];
    area.extend_from_slice(&[0xaa; 16]);
    let a = Answering {
        follow_up: None,
        ..answering(None, false)
    };
    let done = answer_tlvs(&mut area, [0; 4], &a);
    assert!(done.follow_up);
    assert_eq!(&area[4..], &[0; 16]);
    let r = tlv::read_reply(&area, [0; 4], None);
    assert_eq!((r.follow_up, r.follow_up_empty), (None, true));
}
