//! Matching replies to requests by sequence number.
//!
//! The client has one request outstanding at a time, but a misbehaving path
//! can still deliver replies late, twice, out of order or not at all. The
//! tracker remembers the fate of the last `WINDOW` sequence numbers in a fixed
//! array, so classifying a reply is O(1) and allocation-free.

/// How many recent sequence numbers are remembered. Replies older than this
/// are treated as strays: nothing can be said about them any more.
pub const WINDOW: u64 = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Fate {
    Unsent,
    Pending,
    Answered,
    TimedOut,
    AnsweredLate,
}

/// What a received datagram turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// The first reply to a request still within its timeout: a sample.
    Fresh,
    /// The first reply to a request whose timeout had already expired.
    Late {
        /// It also arrived after a reply to a later request.
        reordered: bool,
    },
    /// A second (or further) reply to the same request.
    Duplicate,
    /// Not a reply to anything this run sent recently.
    Stray,
}

/// Remembers what happened to each recent request.
#[derive(Debug)]
pub struct SequenceTracker {
    fates: Box<[Fate]>,
    /// How many sequence numbers are remembered (a power of two).
    window: u64,
    next: u64,
    /// One past the highest sequence number answered (0: none yet): a
    /// plain maximum, cheaper per reply than an `Option`'s.
    answered_below: u64,
}

impl Default for SequenceTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl SequenceTracker {
    /// An empty tracker remembering [`WINDOW`] requests; allocates once.
    pub fn new() -> Self {
        Self::with_window(WINDOW)
    }

    /// An empty tracker remembering at least `window` requests (rounded up
    /// to a power of two, at most [`WINDOW`]): a slow peer of a fleet
    /// agent needs far fewer than a fast ping-pong.
    pub fn with_window(window: u64) -> Self {
        let window = window.clamp(2, WINDOW).next_power_of_two();
        Self {
            fates: vec![Fate::Unsent; window as usize].into_boxed_slice(),
            window,
            next: 0,
            answered_below: 0,
        }
    }

    /// An empty tracker remembering at least `window` requests, whose
    /// first request is `first` (a multicast responder first heard from
    /// mid-run: nothing before it was ever asked of it).
    pub fn starting_at(window: u64, first: u64) -> Self {
        Self {
            next: first,
            ..Self::with_window(window)
        }
    }

    #[inline]
    fn slot(&self, seq: u64) -> usize {
        (seq & (self.window - 1)) as usize
    }

    /// Records that `seq` was sent. Sequence numbers must be sent in order.
    #[inline]
    pub fn sent(&mut self, seq: u64) {
        debug_assert_eq!(seq, self.next);
        self.fates[self.slot(seq)] = Fate::Pending;
        self.next = seq + 1;
    }

    /// Records that `seq` got no reply within its timeout.
    #[inline]
    pub fn timed_out(&mut self, seq: u64) {
        if self.in_window(seq) && self.fates[self.slot(seq)] == Fate::Pending {
            self.fates[self.slot(seq)] = Fate::TimedOut;
        }
    }

    #[inline]
    fn in_window(&self, seq: u64) -> bool {
        seq < self.next && self.next - seq <= self.window
    }

    /// Classifies a reply carrying `seq`.
    #[inline]
    pub fn on_reply(&mut self, seq: u64) -> Reply {
        if !self.in_window(seq) {
            return Reply::Stray;
        }
        let slot = self.slot(seq);
        let reply = match self.fates[slot] {
            Fate::Pending => {
                self.fates[slot] = Fate::Answered;
                Reply::Fresh
            }
            Fate::TimedOut => {
                self.fates[slot] = Fate::AnsweredLate;
                Reply::Late {
                    reordered: seq + 1 < self.answered_below,
                }
            }
            Fate::Answered | Fate::AnsweredLate => return Reply::Duplicate,
            Fate::Unsent => return Reply::Stray,
        };
        self.answered_below = self.answered_below.max(seq + 1);
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_reply_in_time_is_fresh_and_a_second_is_duplicate() {
        let mut t = SequenceTracker::new();
        t.sent(0);
        assert_eq!(t.on_reply(0), Reply::Fresh);
        assert_eq!(t.on_reply(0), Reply::Duplicate);
    }

    #[test]
    fn reply_after_timeout_is_late_and_then_duplicate() {
        let mut t = SequenceTracker::new();
        t.sent(0);
        t.timed_out(0);
        assert_eq!(t.on_reply(0), Reply::Late { reordered: false });
        assert_eq!(t.on_reply(0), Reply::Duplicate);
    }

    #[test]
    fn late_reply_overtaken_by_a_later_one_is_reordered() {
        let mut t = SequenceTracker::new();
        t.sent(0);
        t.timed_out(0);
        t.sent(1);
        assert_eq!(t.on_reply(1), Reply::Fresh);
        assert_eq!(t.on_reply(0), Reply::Late { reordered: true });
    }

    #[test]
    fn unsent_future_and_forgotten_sequences_are_strays() {
        let mut t = SequenceTracker::new();
        assert_eq!(t.on_reply(0), Reply::Stray);
        for s in 0..=WINDOW {
            t.sent(s);
        }
        assert_eq!(t.on_reply(WINDOW + 1), Reply::Stray, "not sent yet");
        assert_eq!(t.on_reply(0), Reply::Stray, "fell out of the window");
        assert_eq!(t.on_reply(1), Reply::Fresh, "oldest remembered");
    }

    #[test]
    fn a_small_window_forgets_sooner() {
        let mut t = SequenceTracker::with_window(1000);
        for s in 0..=1024 {
            t.sent(s);
        }
        assert_eq!(t.on_reply(0), Reply::Stray, "1024 remembered: 0 is gone");
        assert_eq!(t.on_reply(1), Reply::Fresh);
    }

    #[test]
    fn a_tracker_started_mid_run_knows_nothing_before_its_start() {
        let mut t = SequenceTracker::starting_at(64, 1000);
        assert_eq!(t.on_reply(999), Reply::Stray);
        t.sent(1000);
        assert_eq!(t.on_reply(1000), Reply::Fresh);
    }

    #[test]
    fn timing_out_an_answered_request_changes_nothing() {
        let mut t = SequenceTracker::new();
        t.sent(0);
        assert_eq!(t.on_reply(0), Reply::Fresh);
        t.timed_out(0);
        assert_eq!(t.on_reply(0), Reply::Duplicate);
    }
}
