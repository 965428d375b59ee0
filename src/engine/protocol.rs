//! The plain echo wire format (RFC 862 compatible).
//!
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
        let seq: [u8; 8] = reply[..8].try_into().ok()?;
        Some(u64::from_le_bytes(seq))
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
