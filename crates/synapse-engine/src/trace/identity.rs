//! A trace probe's bytes, and finding which probe an answer is about.
//!
//! A router may quote as little as the first 8 bytes of the probe's
//! payload in its ICMP error, so the probe's identity is all there: a
//! 24-bit mark (so no measurement datagram sharing the socket, whose first
//! bytes are a small sequence number, is taken for one), the trace's own
//! number, the TTL it was sent with and its sequence number. The next 8
//! bytes are the run's token: an echo must carry it back, and a quote long
//! enough to hold it must hold it too.

/// Bytes of a probe.
pub const PROBE_LEN: usize = 16;
/// Bytes that identify a probe.
const ID_LEN: usize = 8;
/// "SYT" in the top three bytes of the identity (little-endian u64).
const MARK: u64 = 0x53_59_54 << 40;
const MARK_MASK: u64 = 0xff_ffff << 40;
/// Sequence numbers a trace can give (24 bits).
pub const MAX_PROBES: u32 = 1 << 24;

/// A run token: random, or the clock when the system has no randomness.
pub fn random_token() -> u64 {
    crate::sys::random::random_u64().unwrap_or_else(|_| crate::sys::clock::realtime_ns())
}

/// Which probe: its sequence number in the trace and the TTL it left with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeId {
    /// Its sequence number (from 0).
    pub seq: u32,
    /// Its TTL (hop limit).
    pub ttl: u8,
}

/// Writes and reads one trace's probes.
#[derive(Debug, Clone, Copy)]
pub struct ProbeCodec {
    trace: u8,
    token: u64,
}

impl ProbeCodec {
    /// The codec of trace number `trace` with run token `token`.
    pub fn new(trace: u8, token: u64) -> Self {
        Self { trace, token }
    }

    /// The bytes of probe `id`.
    pub fn encode(&self, id: ProbeId) -> [u8; PROBE_LEN] {
        let word = MARK
            | u64::from(self.trace) << 32
            | u64::from(id.ttl) << 24
            | u64::from(id.seq & (MAX_PROBES - 1));
        let mut out = [0u8; PROBE_LEN];
        out[..ID_LEN].copy_from_slice(&word.to_le_bytes());
        out[ID_LEN..].copy_from_slice(&self.token.to_le_bytes());
        out
    }

    /// The probe a router's or host's quote is about: its first 8 bytes
    /// must name one of this trace's probes, and the token must follow
    /// when the quote reaches that far.
    pub fn from_quote(&self, quote: &[u8]) -> Option<ProbeId> {
        let id = self.id_of(quote.get(..ID_LEN)?)?;
        match quote.get(ID_LEN..PROBE_LEN) {
            Some(token) if token != self.token.to_le_bytes() => None,
            _ => Some(id),
        }
    }

    /// The probe an echo carries back: the whole probe, token and all.
    pub fn from_echo(&self, echo: &[u8]) -> Option<ProbeId> {
        (echo.len() == PROBE_LEN && echo[ID_LEN..] == self.token.to_le_bytes())
            .then(|| self.id_of(&echo[..ID_LEN]))
            .flatten()
    }

    fn id_of(&self, bytes: &[u8]) -> Option<ProbeId> {
        let word = u64::from_le_bytes(bytes.try_into().ok()?);
        (word & MARK_MASK == MARK && (word >> 32) as u8 == self.trace).then_some(ProbeId {
            seq: (word & u64::from(MAX_PROBES - 1)) as u32,
            ttl: (word >> 24) as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every probe is found again from its echo, from a full quote and
        /// from its first 8 bytes alone; another trace's, another token's,
        /// or a measurement datagram's (a small sequence number first) never.
        #[test]
        fn a_probe_is_known_by_its_first_eight_bytes(
            seq in 0u32..MAX_PROBES, ttl in 1u8..=255, trace in any::<u8>(),
            token in any::<u64>(), other_seq in 0u64..(1 << 40),
        ) {
            let c = ProbeCodec::new(trace, token);
            let id = ProbeId { seq, ttl };
            let bytes = c.encode(id);
            prop_assert_eq!(c.from_echo(&bytes), Some(id));
            prop_assert_eq!(c.from_quote(&bytes), Some(id));
            prop_assert_eq!(c.from_quote(&bytes[..8]), Some(id));
            prop_assert_eq!(c.from_quote(&bytes[..7]), None);
            prop_assert_eq!(ProbeCodec::new(trace.wrapping_add(1), token).from_quote(&bytes), None);
            prop_assert_eq!(ProbeCodec::new(trace, !token).from_echo(&bytes), None);
            prop_assert_eq!(ProbeCodec::new(trace, !token).from_quote(&bytes), None);
            let mut measured = [0u8; 16];
            measured[..8].copy_from_slice(&other_seq.to_le_bytes());
            prop_assert_eq!(c.from_quote(&measured), None);
            prop_assert_eq!(c.from_echo(&bytes[..15]), None);
        }
    }
}
