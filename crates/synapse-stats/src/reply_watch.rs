//! Whether replies are coming, told as it changes: replies stopped (with
//! the error the path gave, if any), the error changed, replies came back.
//! A front end feeds it the run's records, its errors and the time, and
//! says each [`Notice`] once (the headless run on stderr, the live display
//! in its banner). Pure: no clock of its own, so every notice is exact in
//! a test.

use crate::path_error::PathError;
use crate::record::{Record, RecordKind};

/// Silence this long (or an error) is said: long enough that one lost
/// datagram is not an outage to announce, short enough to be "at once" to
/// a user watching.
pub const QUIET_NS: u64 = 1_000_000_000;

/// Something to tell the user about the far side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Notice {
    /// No reply since `since_ns` (the last reply, or the start), and the
    /// path's last word on it, if it said anything.
    Stopped {
        /// When replies stopped, ns since the run began.
        since_ns: u64,
        /// The error the path gave, when it gave one.
        error: Option<PathError>,
    },
    /// Still no reply, and the path now says something else.
    Changed {
        /// When replies stopped.
        since_ns: u64,
        /// The new error.
        error: PathError,
    },
    /// Replies again, after `silent_ns` without.
    Resumed {
        /// How long there was none, ns.
        silent_ns: u64,
    },
}

/// The state behind the notices.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplyWatch {
    /// The last timely reply's time, ns since the run began.
    last_reply_ns: Option<u64>,
    /// A request went unanswered since the last reply (or the start).
    missed: bool,
    /// The latest error since the last reply.
    error: Option<PathError>,
    /// Whether `Stopped` was said for the current silence.
    said: bool,
}

impl ReplyWatch {
    /// A watch with nothing seen.
    pub fn new() -> Self {
        Self::default()
    }

    /// One of the run's records (warm-up ones too: a peer dead from the
    /// start is as dead).
    pub fn on_record(&mut self, r: &Record) -> Option<Notice> {
        match r.kind {
            RecordKind::Sample => {
                let silent_ns = r.at_ns.saturating_sub(self.since_ns());
                let resumed = self.said.then_some(Notice::Resumed { silent_ns });
                *self = Self {
                    last_reply_ns: Some(r.at_ns),
                    ..Self::default()
                };
                resumed
            }
            RecordKind::Lost => {
                self.missed = true;
                self.tick(r.at_ns)
            }
            _ => None,
        }
    }

    /// An error the path gave: said at once, when it starts a
    /// silence or changes what the path says.
    pub fn on_error(&mut self, e: PathError) -> Option<Notice> {
        let before = self.error.replace(e);
        self.missed = true;
        let since_ns = self.since_ns();
        if !self.said {
            self.said = true;
            return Some(Notice::Stopped {
                since_ns,
                error: Some(e),
            });
        }
        let changed = before.is_none_or(|b| b.kind != e.kind || b.from != e.from);
        changed.then_some(Notice::Changed { since_ns, error: e })
    }

    /// The time is `now_ns`: a silence of [`QUIET_NS`] is said once.
    pub fn tick(&mut self, now_ns: u64) -> Option<Notice> {
        let since_ns = self.since_ns();
        // Only a request that went unanswered (its deadline passed) makes a
        // silence: not a slow start, nor the gap between slow slots.
        if self.said || !self.missed || now_ns.saturating_sub(since_ns) < QUIET_NS {
            return None;
        }
        self.said = true;
        Some(Notice::Stopped {
            since_ns,
            error: self.error,
        })
    }

    /// How long replies have been missing at `now_ns`, once it was said.
    pub fn silent_for(&self, now_ns: u64) -> Option<u64> {
        self.said.then(|| now_ns.saturating_sub(self.since_ns()))
    }

    /// The path's latest error in the current silence.
    pub fn error(&self) -> Option<PathError> {
        self.error
    }

    fn since_ns(&self) -> u64 {
        self.last_reply_ns.unwrap_or(0)
    }
}

impl Notice {
    /// The notice as a line, with `reflector` naming the peer (times in
    /// seconds since the run began).
    pub fn line(&self, reflector: &str) -> String {
        let secs = |ns: u64| ns as f64 / 1e9;
        match self {
            Notice::Stopped {
                since_ns,
                error: Some(e),
            }
            | Notice::Changed { since_ns, error: e } => format!(
                "{reflector} unreachable ({}) since {:.2} s",
                e.phrase(),
                secs(*since_ns)
            ),
            Notice::Stopped {
                since_ns,
                error: None,
            } => format!("no reply from {reflector} since {:.2} s", secs(*since_ns)),
            Notice::Resumed { silent_ns } => format!(
                "replies from {reflector} again, after {:.2} s without",
                secs(*silent_ns)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path_error::PathErrorKind;

    const S: u64 = 1_000_000_000;

    fn sample(at_ns: u64) -> Record {
        Record::sample(0, at_ns, 50_000, false)
    }

    fn lost(at_ns: u64) -> Record {
        Record::event(RecordKind::Lost, 0, at_ns, false)
    }

    fn port(from: &str) -> PathError {
        PathError {
            kind: PathErrorKind::PortUnreachable,
            from: from.parse().ok(),
            mtu: None,
        }
    }

    #[test]
    fn an_error_is_said_at_once_and_once() {
        let mut w = ReplyWatch::new();
        assert_eq!(w.on_record(&sample(3 * S)), None);
        let n = w.on_error(port("10.0.1.2"));
        assert_eq!(
            n.map(|n| n.line("the reflector")).as_deref(),
            Some("the reflector unreachable (port unreachable from 10.0.1.2) since 3.00 s")
        );
        assert_eq!(w.on_error(port("10.0.1.2")), None, "the same again");
        assert_eq!(w.on_record(&lost(5 * S)), None, "already said");
        let changed = w.on_error(port("10.0.0.1"));
        assert!(
            matches!(changed, Some(Notice::Changed { .. })),
            "{changed:?}"
        );
        let back = w.on_record(&sample(9 * S + S / 2));
        assert_eq!(
            back.map(|n| n.line("the reflector")).as_deref(),
            Some("replies from the reflector again, after 6.50 s without")
        );
    }

    #[test]
    fn a_silence_is_said_after_a_second() {
        let mut w = ReplyWatch::new();
        w.on_record(&sample(2 * S));
        assert_eq!(w.on_record(&lost(2 * S + S / 2)), None, "half a second");
        assert_eq!(w.tick(2 * S + S / 2 + 1), None);
        let n = w.tick(3 * S + 1);
        assert_eq!(
            n,
            Some(Notice::Stopped {
                since_ns: 2 * S,
                error: None
            })
        );
        assert_eq!(w.tick(10 * S), None, "once");
        assert_eq!(w.silent_for(10 * S), Some(8 * S));
    }

    #[test]
    fn a_slow_start_is_no_silence_but_a_first_loss_is() {
        let mut w = ReplyWatch::new();
        assert_eq!(w.tick(5 * S), None, "nothing asked yet");
        assert!(
            w.on_record(&lost(6 * S)).is_some(),
            "the first request lost"
        );
    }

    #[test]
    fn a_long_gap_between_answered_requests_is_no_silence() {
        let mut w = ReplyWatch::new();
        w.on_record(&sample(S));
        assert_eq!(w.tick(9 * S), None, "the next slot is ten seconds on");
    }

    #[test]
    fn one_lost_request_between_replies_says_nothing() {
        let mut w = ReplyWatch::new();
        w.on_record(&sample(S));
        assert_eq!(w.on_record(&lost(S + 100_000_000)), None);
        assert_eq!(
            w.on_record(&sample(S + 200_000_000)),
            None,
            "never said stopped"
        );
    }
}
