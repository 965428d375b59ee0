//! Plain echo (RFC 862 compatible). A request is the 8-byte little-endian
//! sequence number, then padding up to `--size`. When there is room, bytes
//! 8..16 carry a per-run token so that a datagram which merely has the right
//! length is not mistaken for a reply. Any RFC 862 echo server returns the
//! bytes unchanged, which is all the client relies on.

const TOKEN_END: usize = 16;

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

    /// The same, asking each responder for its name (a multicast run; see
    /// `responder_name`). `size` must hold [`super::responder_name::NAMED_SIZE`].
    pub fn asking_names(size: usize, token: u64) -> Self {
        let mut codec = Self::new(size, token);
        super::responder_name::ask(&mut codec.packet);
        codec
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

    /// Whether a datagram is one of this run's requests cut short: shorter
    /// than sent, its first bytes ours (sequence number and token). An echo
    /// server with a smaller buffer than the request answers this way.
    pub fn is_truncated_echo(&self, datagram: &[u8]) -> bool {
        let n = datagram.len();
        n >= TOKEN_END
            && n < self.packet.len()
            && datagram[8..TOKEN_END] == self.token.to_le_bytes()
    }

    /// Payload size in bytes.
    pub fn size(&self) -> usize {
        self.packet.len()
    }
}
