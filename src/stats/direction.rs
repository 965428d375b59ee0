//! Which way lost packets were lost, from a stateful STAMP reflector's
//! sequence numbers.
//!
//! A stateful reflector numbers its replies per session, 0, 1, 2, … in the
//! order requests *arrive* (RFC 8762 §4.2). So when the reply to request
//! `k` carries reflector number `R`, exactly `F = k − R` of the requests
//! before it never reached the reflector. Between two replies the growth
//! of `F` is the forward loss in between (it telescopes, so reordering
//! evens out); every other loss in that span happened on the way back.
//! Losses the replies do not bracket (before the first reply, after the
//! last, across a reflector that restarted its count) are `unknown`, and
//! against a stateless reflector, which copies the sender's number (Synapse
//! numbers its STAMP requests from 1, so `R > k` gives that away), all are.

use super::{Record, RecordKind};
use serde::Serialize;

/// A drop in the reflector's count larger than reordering can explain:
/// it started a new session (it restarted, or forgot us when idle).
const RESTART_DROP: u32 = 64;

/// Loss by direction (JSON `loss_direction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LossDirection {
    /// Requests that never reached the reflector.
    pub forward: u64,
    /// Replies that never came back.
    pub backward: u64,
    /// Losses the reflector's numbers cannot place.
    pub unknown: u64,
    /// `stateful` (numbers per session) or `stateless` (copies the sender's).
    pub reflector: &'static str,
}

/// A span of replies over which the reflector's count ran unbroken.
#[derive(Debug, Clone, Copy)]
struct Epoch {
    /// Its first reply's request number and `F`.
    first_k: u64,
    first_f: u64,
    /// The highest request number answered, its `F` and its `R`.
    top_k: u64,
    top_f: u64,
    top_r: u32,
}

/// Accumulates loss direction. Allocation-free.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirectionStats {
    stateless: bool,
    replies: u64,
    epoch: Option<Epoch>,
    /// Forward losses of the epochs already closed.
    closed_forward: u64,
    unknown: u64,
    /// Losses after the highest request answered so far: placed only if a
    /// later reply brackets them.
    tail: u64,
}

impl DirectionStats {
    /// Accounts for one (post-warm-up) record.
    #[inline]
    pub fn record(&mut self, r: &Record) {
        match r.kind {
            RecordKind::Sample => {
                if let Some(reflector_seq) = r.far.reflector_seq() {
                    self.reply(r.seq, reflector_seq);
                }
            }
            // A loss past the highest request answered waits in the tail;
            // one before the span's first reply cannot be placed; one the
            // replies already bracket (its deadline passed after a later
            // request was answered) is placed by the count.
            RecordKind::Lost => match self.epoch {
                Some(e) if r.seq < e.first_k => self.unknown += 1,
                Some(e) if r.seq <= e.top_k => {}
                _ => self.tail += 1,
            },
            // A late reply was a loss that turned out not to be one; it is
            // in the tail when no later request has been answered yet.
            RecordKind::Late { .. }
                if self.epoch.is_none_or(|e| r.seq > e.top_k) && self.tail > 0 =>
            {
                self.tail -= 1;
            }
            _ => {}
        }
    }

    fn reply(&mut self, k: u64, reflector_seq: u32) {
        self.replies += 1;
        if u64::from(reflector_seq) > k {
            self.stateless = true;
            return;
        }
        let f = k - u64::from(reflector_seq);
        let fresh = Epoch {
            first_k: k,
            first_f: f,
            top_k: k,
            top_f: f,
            top_r: reflector_seq,
        };
        match &mut self.epoch {
            None => {
                self.unknown += std::mem::take(&mut self.tail);
                self.epoch = Some(fresh);
            }
            Some(e) if k > e.top_k => {
                let restarted =
                    reflector_seq == 0 || reflector_seq.saturating_add(RESTART_DROP) < e.top_r;
                if restarted {
                    self.closed_forward += e.top_f.saturating_sub(e.first_f);
                    self.unknown += std::mem::take(&mut self.tail);
                    *e = fresh;
                } else {
                    (e.top_k, e.top_f, e.top_r) = (k, f, reflector_seq);
                    self.tail = 0;
                }
            }
            // An older request's reply, overtaken: the count already
            // included it.
            Some(_) => {}
        }
    }

    /// The split of `lost` (the run's lost counter), once a STAMP reply
    /// came back.
    pub fn figures(&self, lost: u64) -> Option<LossDirection> {
        if self.replies == 0 {
            return None;
        }
        if self.stateless {
            return Some(LossDirection {
                forward: 0,
                backward: 0,
                unknown: lost,
                reflector: "stateless",
            });
        }
        let open = self.epoch.map_or(0, |e| e.top_f.saturating_sub(e.first_f));
        let unknown = (self.unknown + self.tail).min(lost);
        let forward = (self.closed_forward + open).min(lost - unknown);
        Some(LossDirection {
            forward,
            backward: lost - unknown - forward,
            unknown,
            reflector: "stateful",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::FarSide;

    fn reply(k: u64, r: u32) -> Record {
        Record::sample(k, 0, 1_000, false).with_far(FarSide::new(0, 0, r, false))
    }

    fn lost(k: u64) -> Record {
        Record::event(RecordKind::Lost, k, 0, false)
    }

    /// Feeds requests 0..n: `fate(k)` is 'f' (lost forward), 'b' (lost
    /// backward) or 'o' (answered); a stateful reflector counts arrivals.
    /// A loss is declared `delay` requests later, as a paced run's timeout
    /// does (0: at once, as in ping-pong).
    fn run_with(n: u64, delay: u64, fate: impl Fn(u64) -> char) -> (DirectionStats, u64) {
        let mut d = DirectionStats::default();
        let (mut arrived, mut lost_count) = (0u32, 0);
        let mut pending = std::collections::VecDeque::new();
        for k in 0..n {
            while pending.front().is_some_and(|&l| l + delay <= k) {
                d.record(&lost(pending.pop_front().unwrap()));
            }
            match fate(k) {
                'f' | 'b' => {
                    arrived += u32::from(fate(k) == 'b');
                    pending.push_back(k);
                    lost_count += 1;
                }
                _ => {
                    d.record(&reply(k, arrived));
                    arrived += 1;
                }
            }
        }
        for l in pending {
            d.record(&lost(l));
        }
        (d, lost_count)
    }

    fn run(n: u64, fate: impl Fn(u64) -> char) -> (DirectionStats, u64) {
        run_with(n, 0, fate)
    }

    #[test]
    fn forward_and_backward_losses_are_told_apart() {
        let (d, lost) = run(1_000, |k| match k % 10 {
            3 => 'f',
            7 if k % 20 == 7 => 'b',
            _ => 'o',
        });
        let f = d.figures(lost).unwrap();
        assert_eq!((f.forward, f.backward, f.unknown), (100, 50, 0), "{f:?}");
        assert_eq!(f.reflector, "stateful");
    }

    #[test]
    fn losses_declared_after_later_replies_are_still_placed() {
        // Paced: a loss is declared a timeout (here 50 requests) later.
        for delay in [0, 1, 50] {
            let (d, lost) = run_with(1_000, delay, |k| match k % 20 {
                0 => 'f',
                10 if k % 40 == 10 => 'b',
                _ => 'o',
            });
            let f = d.figures(lost).unwrap();
            assert_eq!(
                (f.forward, f.backward, f.unknown),
                (49, 25, 1),
                "delay {delay}: {f:?}"
            );
        }
    }

    #[test]
    fn losses_no_reply_brackets_are_unknown() {
        // Two lost before the first reply, three after the last.
        let (d, lost) = run(20, |k| match k {
            0 => 'f',
            1 => 'b',
            5 => 'f',
            17..=19 => 'f',
            _ => 'o',
        });
        let f = d.figures(lost).unwrap();
        assert_eq!((f.forward, f.backward, f.unknown), (1, 0, 5), "{f:?}");
    }

    #[test]
    fn a_stateless_reflector_places_nothing() {
        let mut d = DirectionStats::default();
        d.record(&reply(0, 1));
        d.record(&lost(1));
        d.record(&reply(2, 3));
        let f = d.figures(1).unwrap();
        assert_eq!((f.forward, f.backward, f.unknown), (0, 0, 1));
        assert_eq!(f.reflector, "stateless");
        assert_eq!(
            DirectionStats::default().figures(3),
            None,
            "echo: no figures"
        );
    }

    #[test]
    fn a_restarted_count_closes_the_span_and_keeps_what_it_knew() {
        let mut d = DirectionStats::default();
        d.record(&reply(0, 0));
        d.record(&lost(1)); // forward: the reflector's next is 1, not 2
        d.record(&reply(2, 1));
        d.record(&lost(3)); // unknown: across the restart
        d.record(&reply(4, 0)); // the reflector forgot the session
        d.record(&lost(5)); // backward: 6 comes back as 2
        d.record(&reply(6, 2));
        let f = d.figures(3).unwrap();
        assert_eq!((f.forward, f.backward, f.unknown), (1, 1, 1), "{f:?}");
    }

    #[test]
    fn a_late_reply_leaves_the_tail_and_reordering_evens_out() {
        let mut d = DirectionStats::default();
        d.record(&reply(0, 0));
        // Request 2 reached the reflector before 1: F jumps, then the
        // overtaken reply changes nothing, and 3 brings F back.
        d.record(&reply(2, 1));
        d.record(&reply(1, 2));
        d.record(&reply(3, 3));
        d.record(&lost(4));
        d.record(&Record::event(
            RecordKind::Late { reordered: false },
            4,
            0,
            false,
        ));
        let f = d.figures(0).unwrap();
        assert_eq!((f.forward, f.backward, f.unknown), (0, 0, 0), "{f:?}");
    }
}
