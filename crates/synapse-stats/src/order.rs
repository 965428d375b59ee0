//! Reordering as RFC 4737 counts it: a reply is reordered when a reply to
//! a later request came before it. A late reply's flag comes from the
//! engine; a timely one is judged here, which in paced mode (many requests
//! in flight) is how reordering on the path shows.

/// The highest request number answered so far. Allocation-free.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplyOrder {
    highest: Option<u64>,
}

impl ReplyOrder {
    /// A timely reply to request `seq`: whether it came after a reply to a
    /// later request.
    #[inline]
    pub fn timely(&mut self, seq: u64) -> bool {
        let reordered = self.highest.is_some_and(|h| seq < h);
        self.answered(seq);
        reordered
    }

    /// Any reply to request `seq` (a late one too) moves the mark.
    #[inline]
    pub fn answered(&mut self, seq: u64) {
        self.highest = self.highest.max(Some(seq));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_after_a_later_ones_is_reordered() {
        let mut o = ReplyOrder::default();
        assert!(!o.timely(0));
        assert!(!o.timely(2));
        assert!(o.timely(1), "2 came first");
        assert!(!o.timely(3));
        o.answered(9); // a late reply to 9
        assert!(o.timely(4));
    }
}
