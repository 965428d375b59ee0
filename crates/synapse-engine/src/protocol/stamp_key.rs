//! STAMP authenticated mode's integrity (RFC 8762 §4.4): HMAC-SHA-256
//! over the packet's first 96 octets, truncated to 128 bits, in octets
//! 96..112. The key is a secret both ends share; the keyed state is built
//! once, so each packet costs one clone and one pass over 96 octets.

use super::stamp::Layout;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Where the HMAC sits, and what it covers before it.
const HMAC_AT: usize = 96;
/// The HMAC's length: SHA-256 truncated to 128 bits.
const HMAC_LEN: usize = 16;
/// The shortest key accepted (RFC 8762 §4.4 asks for at least 128 bits).
pub const MIN_KEY_LEN: usize = 16;

/// A shared STAMP key, ready to sign and verify. The keyed state is boxed
/// (it is a few hundred bytes) so that codecs holding a key stay small.
#[derive(Clone)]
pub struct StampKey(Box<Hmac<Sha256>>);

impl std::fmt::Debug for StampKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StampKey(redacted)")
    }
}

impl StampKey {
    /// A key of at least [`MIN_KEY_LEN`] bytes.
    pub fn new(key: &[u8]) -> Result<Self, String> {
        if key.len() < MIN_KEY_LEN {
            return Err(format!(
                "the key is {} bytes; STAMP asks for at least {MIN_KEY_LEN}",
                key.len()
            ));
        }
        Hmac::<Sha256>::new_from_slice(key)
            .map(|mac| Self(Box::new(mac)))
            .map_err(|_| "the key cannot key HMAC-SHA-256".to_string())
    }

    /// A key written as hexadecimal text (surrounding white space ignored).
    pub fn from_hex(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("the key must be hexadecimal digits, two per byte".into());
        }
        let bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
            .collect();
        Self::new(&bytes)
    }

    fn tag(&self, packet: &[u8]) -> Hmac<Sha256> {
        // A copy of the keyed state on the stack: no allocation per packet.
        let mut mac = Hmac::clone(&self.0);
        mac.update(&packet[..HMAC_AT]);
        mac
    }

    /// Signs an authenticated packet in place (`packet` holds at least
    /// [`Layout::AUTHENTICATED`]'s 112 octets).
    #[inline]
    pub fn sign(&self, packet: &mut [u8]) {
        debug_assert!(packet.len() >= Layout::AUTHENTICATED.len);
        let full = self.tag(packet).finalize().into_bytes();
        packet[HMAC_AT..HMAC_AT + HMAC_LEN].copy_from_slice(&full[..HMAC_LEN]);
    }

    /// The HMAC TLV's value (RFC 8972 §4.8): HMAC-SHA-256 over the base
    /// packet's sequence number and the TLVs before the HMAC TLV, truncated
    /// to 128 bits.
    #[inline]
    pub fn tlv_hmac(&self, seq: &[u8; 4], tlvs: &[u8]) -> [u8; HMAC_LEN] {
        let mut mac = Hmac::clone(&self.0);
        mac.update(seq);
        mac.update(tlvs);
        let full = mac.finalize().into_bytes();
        let mut out = [0u8; HMAC_LEN];
        out.copy_from_slice(&full[..HMAC_LEN]);
        out
    }

    /// Whether `want` is the HMAC TLV value of `seq` and `tlvs`, compared
    /// in constant time.
    #[inline]
    pub fn tlv_hmac_verifies(&self, seq: &[u8; 4], tlvs: &[u8], want: &[u8]) -> bool {
        let mut mac = Hmac::clone(&self.0);
        mac.update(seq);
        mac.update(tlvs);
        want.len() == HMAC_LEN && mac.verify_truncated_left(want).is_ok()
    }

    /// HMAC-SHA-256 over `parts` in order, in full (32 octets): what a
    /// load session's control message carries (`load::wire`).
    pub fn message_mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = Hmac::clone(&self.0);
        for p in parts {
            mac.update(p);
        }
        mac.finalize().into_bytes().into()
    }

    /// Whether `want` is [`StampKey::message_mac`] of `parts`, compared
    /// in constant time.
    pub fn message_mac_verifies(&self, parts: &[&[u8]], want: &[u8]) -> bool {
        let mut mac = Hmac::clone(&self.0);
        for p in parts {
            mac.update(p);
        }
        mac.verify_slice(want).is_ok()
    }

    /// Whether `packet` is an authenticated packet whose HMAC this key
    /// made, compared in constant time.
    #[inline]
    pub fn verifies(&self, packet: &[u8]) -> bool {
        packet.len() >= Layout::AUTHENTICATED.len
            && self
                .tag(packet)
                .verify_truncated_left(&packet[HMAC_AT..HMAC_AT + HMAC_LEN])
                .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> StampKey {
        StampKey::from_hex("000102030405060708090a0b0c0d0e0f").unwrap()
    }

    #[test]
    fn a_signed_packet_verifies_and_any_change_breaks_it() {
        let mut p = [7u8; 112];
        key().sign(&mut p);
        assert!(key().verifies(&p));
        for i in [0, 50, 95, 96, 111] {
            let mut bad = p;
            bad[i] ^= 1;
            assert!(!key().verifies(&bad), "octet {i} changed");
        }
        let other = StampKey::from_hex("ff0102030405060708090a0b0c0d0e0f").unwrap();
        assert!(!other.verifies(&p), "another key");
        assert!(!key().verifies(&p[..111]), "too short to hold an HMAC");
        // Octets past the packet (padding) are not covered.
        let mut long = [7u8; 150];
        key().sign(&mut long);
        long[140] = 0;
        assert!(key().verifies(&long));
    }

    /// Checked against an HMAC computed independently (Python's hmac
    /// module) over the octets 0, 1, …, 95 with the key 0x00..0x0f.
    #[test]
    fn the_hmac_is_sha256_over_96_octets_truncated_to_16() {
        let mut p: Vec<u8> = (0..112u8).collect();
        key().sign(&mut p);
        assert_eq!(
            hex(&p[96..]),
            "dab3f79a7873ef81b8ad4f70836374f4",
            "HMAC-SHA-256(key, octets 0..96)[..16]"
        );
    }

    #[test]
    fn a_message_mac_covers_every_part_in_order() {
        let m = key().message_mac(&[b"abc", b"def"]);
        assert!(key().message_mac_verifies(&[b"abc", b"def"], &m));
        assert!(key().message_mac_verifies(&[b"abcdef"], &m), "parts join");
        assert!(!key().message_mac_verifies(&[b"abc", b"deg"], &m));
        assert!(!key().message_mac_verifies(&[b"abc", b"def"], &m[..31]));
        // Python: hmac.new(bytes(range(16)), b"abcdef", "sha256").hexdigest()[:8]
        assert_eq!(&hex(&m)[..8], "77f3587c");
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn keys_must_be_hex_and_long_enough() {
        assert!(StampKey::from_hex(" 000102030405060708090a0b0c0d0e0f\n").is_ok());
        assert!(
            StampKey::from_hex("0001020304050607")
                .unwrap_err()
                .contains("at least 16")
        );
        assert!(
            StampKey::from_hex("zz0102030405060708090a0b0c0d0e0f")
                .unwrap_err()
                .contains("hexadecimal")
        );
        assert!(StampKey::from_hex("0").is_err());
        assert_eq!(format!("{:?}", key()), "StampKey(redacted)");
    }
}
