//! One reply, as the stream gives it: `size` bytes, read in however many
//! pieces the stream splits them into. A reply that comes whole costs one
//! receive and nothing else; one that comes in pieces also notes when its
//! first piece came, so a stall between pieces can be seen.

use crate::mono::Mono;

/// The reply being read.
#[derive(Debug)]
pub(crate) struct Frame {
    /// Room for one reply.
    pub buf: Vec<u8>,
    /// Bytes of it read so far.
    pub have: usize,
    /// Receives that returned some of it.
    pub pieces: u32,
    /// When its first piece came, if that piece was not the whole reply.
    pub first_at: Option<Mono>,
    /// The RX stamp of the first read (the last segment it took).
    pub rx_first: Option<u64>,
    /// The RX stamp of the last read.
    pub rx_last: Option<u64>,
}

impl Frame {
    /// Room for replies of `size` bytes; allocates here only.
    pub fn new(size: usize) -> Self {
        Self {
            buf: vec![0; size],
            have: 0,
            pieces: 0,
            first_at: None,
            rx_first: None,
            rx_last: None,
        }
    }

    /// What is left to read of it.
    #[inline]
    pub fn rest(&mut self) -> &mut [u8] {
        &mut self.buf[self.have..]
    }

    /// `n` more bytes came, with the RX stamp of their last segment.
    #[inline]
    pub fn took(&mut self, n: usize, rx: Option<u64>) {
        self.pieces += 1;
        if self.pieces == 1 {
            self.rx_first = rx;
            if self.have + n < self.buf.len() {
                // Split: only then is the clock read for it.
                self.first_at = Some(Mono::now());
            }
        }
        self.rx_last = rx.or(self.rx_last);
        self.have += n;
    }

    /// Whether the whole reply is in.
    #[inline]
    pub fn complete(&self) -> bool {
        self.have == self.buf.len()
    }

    /// How long after its first piece the reply was complete at `now`
    /// (0 when it came whole).
    #[inline]
    pub fn spread_ns(&self, now: Mono) -> u64 {
        self.first_at.map_or(0, |f| now.ns_since(f))
    }

    /// Ready for the next reply.
    #[inline]
    pub fn reset(&mut self) {
        self.have = 0;
        self.pieces = 0;
        self.first_at = None;
        self.rx_first = None;
        self.rx_last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_reply_reads_no_clock_and_a_split_one_does() {
        let mut f = Frame::new(16);
        f.rest().copy_from_slice(&[1; 16]);
        f.took(16, Some(5));
        assert!(f.complete());
        assert_eq!((f.pieces, f.first_at, f.rx_first), (1, None, Some(5)));
        assert_eq!(f.spread_ns(Mono::now()), 0);
        f.reset();
        f.took(10, Some(7));
        assert!(!f.complete() && f.first_at.is_some());
        assert_eq!(f.rest().len(), 6);
        std::thread::sleep(std::time::Duration::from_millis(2));
        f.took(6, None);
        assert!(f.complete());
        assert_eq!((f.pieces, f.rx_first, f.rx_last), (2, Some(7), Some(7)));
        assert!(f.spread_ns(Mono::now()) >= 2_000_000);
    }
}
