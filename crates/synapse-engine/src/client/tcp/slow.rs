//! Which replies have the kernel asked whether it resent anything
//! (`TCP_INFO`, a system call the per-transaction path does not make for
//! the others). A reply is measured against the fastest so far, but only
//! once that is known to be no resend's: until the kernel has said of one
//! reply that nothing was resent, every reply is asked about. Early in a
//! run the fastest so far can itself be a reply a resend made late, and a
//! reply late by a second resend is then no slower than it.

use synapse_stats::tcp_legs::RTO_MIN_NS;

/// A reply this many times slower than the fastest (and at least a
/// millisecond) is asked about.
const SLOW_FACTOR: u64 = 4;
const SLOW_FLOOR_NS: u64 = 1_000_000;

/// The fastest round trip so far, and whether it can be trusted.
#[derive(Debug, Clone, Copy)]
pub(super) struct SlowRule {
    fastest: u64,
    /// The kernel said of a reply at least as slow as `fastest` that
    /// nothing was resent for it.
    clean_seen: bool,
}

impl Default for SlowRule {
    fn default() -> Self {
        Self {
            fastest: u64::MAX,
            clean_seen: false,
        }
    }
}

impl SlowRule {
    /// Takes reply round trip `rtt` (ns): whether to ask the kernel about
    /// it, and how much slower than the fastest (this one included) it was.
    ///
    /// - Until a reply the kernel said was not resent, every one: a
    ///   request lost first of all is resent like any other (seen in the
    ///   lab: the first of 500 replies 443 ms late, lost twice, the second
    ///   229 ms, lost once: under 4 × the fastest so far, not asked, its
    ///   resend placed on no leg).
    /// - A reply at least [`RTO_MIN_NS`] slower than the fastest: on Linux
    ///   a one-segment request is resent no sooner than that (the
    ///   tail-loss probe waits 2 × SRTT + 200 ms with one segment out, the
    ///   retransmission timer at least 200 ms), on a long path too.
    /// - A reply [`SLOW_FACTOR`] times the fastest or slower.
    pub fn take(&mut self, rtt: u64) -> (bool, u64) {
        self.fastest = self.fastest.min(rtt);
        let extra = rtt - self.fastest;
        let slow = !self.clean_seen
            || extra >= RTO_MIN_NS
            || (rtt >= SLOW_FLOOR_NS && rtt / SLOW_FACTOR >= self.fastest);
        (slow, extra)
    }

    /// What the kernel said of the reply just taken, when asked: whether
    /// it resent anything since its last reading. A reply not resent for
    /// makes the fastest (no slower than it) a measure to trust.
    pub fn told(&mut self, resent: bool) {
        self.clean_seen |= !resent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// The lab's run (tcp-loss-forward) where Synapse placed 33 of 34 late
    /// replies: request 0 lost twice, request 1 once, then none for a while.
    #[test]
    fn every_reply_is_asked_about_until_one_was_not_resent() {
        let mut rule = SlowRule::default();
        assert_eq!(rule.take(442_882_440), (true, 0), "the first");
        rule.told(true);
        assert_eq!(
            rule.take(229_090_090),
            (true, 0),
            "late by a resend, though faster than the first"
        );
        rule.told(true);
        assert_eq!(rule.take(11_860_290), (true, 0), "still no clean one");
        rule.told(false);
        assert!(!rule.take(12_700_000).0, "measured against a clean one");
        let (slow, extra) = rule.take(226_669_300);
        assert!(slow);
        assert_eq!(extra, 226_669_300 - 11_860_290);
    }

    /// On a clean link the kernel is asked once, about the first reply.
    #[test]
    fn a_clean_link_is_asked_about_once() {
        for base in [50_000, 10 * MS, 250 * MS] {
            let mut rule = SlowRule::default();
            assert!(rule.take(base).0, "the first");
            rule.told(false);
            for i in 0..1_000 {
                assert!(!rule.take(base + i % 7 * 1_000).0, "{base}, {i}");
            }
        }
    }

    #[test]
    fn then_a_reply_is_asked_about_at_four_times_the_fastest() {
        let mut rule = SlowRule::default();
        assert!(rule.take(100_000).0, "the first");
        rule.told(false);
        assert!(!rule.take(399_999).0);
        assert!(
            !rule.take(900_000).0,
            "under a millisecond, whatever the factor"
        );
        let mut rule = SlowRule::default();
        rule.take(10 * MS);
        rule.told(false);
        assert!(!rule.take(39 * MS).0);
        assert!(rule.take(40 * MS).0);
    }

    /// On a long path a resend adds less than 4 × the round trip.
    #[test]
    fn or_a_timeout_slower_than_it() {
        let mut rule = SlowRule::default();
        rule.take(100 * MS);
        rule.told(false);
        assert!(!rule.take(100 * MS + RTO_MIN_NS - 1).0);
        assert_eq!(rule.take(100 * MS + RTO_MIN_NS), (true, RTO_MIN_NS));
    }

    /// A failed or skipped reading leaves the fastest untrusted.
    #[test]
    fn a_reply_resent_for_does_not_make_the_fastest_trusted() {
        let mut rule = SlowRule::default();
        rule.take(230 * MS);
        rule.told(true);
        assert!(rule.take(12 * MS).0);
        assert!(rule.take(12 * MS).0, "not told: still asking");
        rule.told(false);
        assert!(!rule.take(12 * MS).0);
    }
}
