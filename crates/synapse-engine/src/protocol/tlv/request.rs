//! A session-sender's TLVs: built once per run after the base packet,
//! their per-packet fields filled in at each send.

use super::*;

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
        if set.name {
            put(packet, kind::RESPONDER_NAME, &[0; 16]);
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

#[cfg(test)]
mod tests {
    use super::*;

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
