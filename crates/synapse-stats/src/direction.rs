//! Which way lost packets were lost, from a stateful STAMP reflector's
//! sequence numbers.
//!
//! A stateful reflector numbers its replies per session, 0, 1, 2, … in the
//! order requests *arrive* (RFC 8762 §4.2): every request that reaches it
//! takes a number, duplicates included, whatever order they come in. So
//! the numbers between the first reply's and the highest seen that no
//! reply ever showed belong to requests that arrived and whose answers
//! never came back: backward losses, counted exactly however the forward
//! leg reorders or duplicates (a late or duplicate reply shows its number
//! too). Every other loss between two replies happened on the way there.
//! Losses the replies do not bracket (before the first reply, after the
//! highest request answered, across a reflector that restarted its count)
//! are `unknown`. A stateless reflector copies the sender's number
//! instead (Synapse numbers its STAMP requests from 1, so request `k`
//! comes back as `k + 1`); when every reply says so, all losses are
//! `unknown`. (One overtaken request can carry `k + 1` from a stateful
//! reflector too, so a single such reply proves nothing.)

use super::{Record, RecordKind};
use serde::Serialize;

/// A drop in the reflector's count larger than reordering can explain:
/// it started a new session (it restarted, or forgot us when idle).
const RESTART_DROP: u64 = 64;

/// Reflector numbers remembered as shown or not: a number this far below
/// the highest seen is settled (a reply that late is taken as lost).
const SEEN: u64 = 1 << 16;

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
    /// Its first reply's request number.
    first_k: u64,
    /// The highest request number answered.
    top_k: u64,
    /// The first reply's reflector number: where the span's count starts.
    low_r: u64,
    /// The highest reflector number seen.
    top_r: u64,
    /// Numbers below this are settled.
    settled: u64,
    /// Settled numbers (from `low_r`) that no reply showed.
    missing: u64,
}

/// Accumulates loss direction. Allocates once, when made; recording never
/// allocates.
#[derive(Debug, Clone)]
pub struct DirectionStats {
    replies: u64,
    /// Every reply so far carried the sender's own number back.
    copied_only: bool,
    epoch: Option<Epoch>,
    /// One bit per reflector number (modulo `SEEN`): a reply showed it.
    shown: Box<[u64]>,
    /// Backward losses of the epochs already closed.
    closed_backward: u64,
    unknown: u64,
    /// Losses after the highest request answered so far: placed only if a
    /// later reply brackets them.
    tail: u64,
    /// Late or repeated replies that carried no reflector number (ping-
    /// pong): each may have shown a number that now looks missing.
    unnumbered: u64,
}

impl Default for DirectionStats {
    fn default() -> Self {
        Self {
            replies: 0,
            copied_only: true,
            epoch: None,
            shown: vec![0; (SEEN / 64) as usize].into_boxed_slice(),
            closed_backward: 0,
            unknown: 0,
            tail: 0,
            unnumbered: 0,
        }
    }
}

impl DirectionStats {
    /// Accounts for one record. Warm-up replies only show their numbers
    /// (a warm-up request can arrive after a measured one). Always inlined
    /// into `Stats::record`: on a run without reflector numbers it does
    /// nothing but look, and the call cost more than that.
    #[inline(always)]
    pub fn record(&mut self, r: &Record) {
        let number = r.far.reflector_seq().map(u64::from);
        if r.warmup {
            if let Some(n) = number {
                self.show(n);
            }
            return;
        }
        match r.kind {
            RecordKind::Sample => {
                if let Some(n) = number {
                    self.reply(r.seq, n);
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
            RecordKind::Late { .. } | RecordKind::Duplicate => {
                match number {
                    Some(n) => self.show(n),
                    None if self.replies > 0 => self.unnumbered += 1,
                    None => {}
                }
                // A late reply was a loss that turned out not to be one; it
                // is in the tail when no later request has been answered.
                let in_tail = self.epoch.is_none_or(|e| r.seq > e.top_k);
                if matches!(r.kind, RecordKind::Late { .. }) && in_tail && self.tail > 0 {
                    self.tail -= 1;
                }
            }
            _ => {}
        }
    }

    fn reply(&mut self, k: u64, n: u64) {
        self.replies += 1;
        self.copied_only &= n == k + 1;
        let fresh = Epoch {
            first_k: k,
            top_k: k,
            low_r: n,
            top_r: n,
            settled: n,
            missing: 0,
        };
        match self.epoch {
            None => {
                self.unknown += std::mem::take(&mut self.tail);
                self.epoch = Some(fresh);
            }
            Some(e) if k > e.top_k => {
                if n == 0 || n + RESTART_DROP < e.top_r {
                    self.closed_backward += self.backward_of(&e);
                    self.unknown += std::mem::take(&mut self.tail);
                    self.shown.fill(0);
                    self.epoch = Some(fresh);
                } else {
                    self.epoch = Some(Epoch { top_k: k, ..e });
                    self.tail = 0;
                }
            }
            // An older request's reply, overtaken: it only shows a number.
            Some(_) => {}
        }
        self.show(n);
    }

    /// Marks reflector number `n` as shown by a reply, settling the
    /// numbers that fall out of the window. Before the first measured reply
    /// there is no span to place anything in.
    fn show(&mut self, n: u64) {
        let Some(mut e) = self.epoch else {
            return;
        };
        if n < e.settled {
            return;
        }
        e.top_r = e.top_r.max(n);
        let floor = (n + 1).saturating_sub(SEEN);
        if floor > e.settled {
            // A jump of more than the window skips numbers nothing showed.
            let skipped = (floor - e.settled).saturating_sub(SEEN);
            e.missing += skipped;
            for m in e.settled + skipped..floor {
                e.missing += u64::from(!bit(&self.shown, m));
                set(&mut self.shown, m, false);
            }
            e.settled = floor;
        }
        self.epoch = Some(e);
        set(&mut self.shown, n, true);
    }

    /// The numbers of an epoch's span no reply showed.
    fn backward_of(&self, e: &Epoch) -> u64 {
        let from = e.settled.max(e.low_r);
        if from > e.top_r {
            return e.missing;
        }
        e.missing + (e.top_r + 1 - from) - count_shown(&self.shown, from, e.top_r)
    }

    /// The split of `lost` (the run's lost counter), once a STAMP reply
    /// came back.
    pub fn figures(&self, lost: u64) -> Option<LossDirection> {
        if self.replies == 0 {
            return None;
        }
        if self.copied_only {
            return Some(LossDirection {
                forward: 0,
                backward: 0,
                unknown: lost,
                reflector: "stateless",
            });
        }
        let open = self.epoch.as_ref().map_or(0, |e| self.backward_of(e));
        let unknown = (self.unknown + self.tail).min(lost);
        let backward = (self.closed_backward + open)
            .saturating_sub(self.unnumbered)
            .min(lost - unknown);
        Some(LossDirection {
            forward: lost - unknown - backward,
            backward,
            unknown,
            reflector: "stateful",
        })
    }
}

fn bit(bits: &[u64], n: u64) -> bool {
    let i = n % SEEN;
    bits[(i / 64) as usize] & (1 << (i % 64)) != 0
}

/// How many numbers in `from..=to` (less than a window apart) are shown.
fn count_shown(bits: &[u64], from: u64, to: u64) -> u64 {
    let (mut count, mut m) = (0, from);
    while m <= to {
        let i = m % SEEN;
        let start = i % 64;
        let len = (64 - start).min(to - m + 1);
        let mask = if len == 64 {
            u64::MAX
        } else {
            ((1u64 << len) - 1) << start
        };
        count += u64::from((bits[(i / 64) as usize] & mask).count_ones());
        m += len;
    }
    count
}

fn set(bits: &mut [u64], n: u64, on: bool) {
    let i = n % SEEN;
    let word = &mut bits[(i / 64) as usize];
    if on {
        *word |= 1 << (i % 64);
    } else {
        *word &= !(1 << (i % 64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FarSide;

    fn reply(k: u64, r: u32) -> Record {
        Record::sample(k, 0, 1_000, false).with_far(FarSide::new(r))
    }

    fn lost(k: u64) -> Record {
        Record::event(RecordKind::Lost, k, 0, false)
    }

    /// A late or repeated reply showing reflector number `r` (paced mode).
    fn again(kind: RecordKind, k: u64, r: u32) -> Record {
        Record::event(kind, k, 0, false).with_far(FarSide::numbered(Some(r)))
    }

    fn split(d: &DirectionStats, lost: u64) -> (u64, u64, u64, &'static str) {
        let f = d.figures(lost).unwrap();
        (f.forward, f.backward, f.unknown, f.reflector)
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

    #[test]
    fn forward_reordering_is_not_a_stateless_reflector() {
        // 2 overtakes 1 on the way there: 1 is the reflector's third
        // arrival, so its reply carries 2 = k + 1, as a stateless copy would.
        let mut d = DirectionStats::default();
        for (k, r) in [(0, 0), (2, 1), (1, 2), (3, 3)] {
            d.record(&reply(k, r));
        }
        assert_eq!(split(&d, 0), (0, 0, 0, "stateful"));
        // Lost on the way there while others overtake: still forward.
        let mut d = DirectionStats::default();
        for (k, r) in [(0, 0), (3, 1), (1, 2), (4, 3)] {
            d.record(&reply(k, r));
        }
        d.record(&lost(2));
        assert_eq!(split(&d, 1), (1, 0, 0, "stateful"));
    }

    #[test]
    fn duplicated_requests_take_numbers_their_replies_show() {
        // Request 1 arrives twice (numbers 1 and 2), 3 arrives (number 4)
        // but its reply is lost, 2 never arrives.
        let mut d = DirectionStats::default();
        d.record(&reply(0, 0));
        d.record(&reply(1, 1));
        d.record(&again(RecordKind::Duplicate, 1, 2));
        d.record(&lost(2));
        d.record(&lost(3));
        d.record(&reply(4, 4));
        assert_eq!(split(&d, 2), (1, 1, 0, "stateful"));
        // A reply duplicated on the way back shows a number already shown.
        let mut d = DirectionStats::default();
        d.record(&reply(0, 0));
        d.record(&again(RecordKind::Duplicate, 0, 0));
        d.record(&lost(1));
        d.record(&reply(2, 2));
        assert_eq!(split(&d, 1), (0, 1, 0, "stateful"));
    }

    #[test]
    fn a_late_reply_shows_that_its_request_arrived() {
        let mut d = DirectionStats::default();
        d.record(&reply(0, 0));
        d.record(&lost(1));
        d.record(&reply(2, 2));
        d.record(&again(RecordKind::Late { reordered: true }, 1, 1));
        d.record(&lost(3));
        d.record(&reply(4, 4));
        assert_eq!(split(&d, 1), (0, 1, 0, "stateful"));
    }

    #[test]
    fn a_warm_up_request_overtaken_by_a_measured_one_is_no_loss() {
        let mut d = DirectionStats::default();
        d.record(&reply(5, 4)); // the first measured; warm-up 4 came after it
        d.record(&Record::sample(4, 0, 1_000, true).with_far(FarSide::numbered(Some(5))));
        d.record(&reply(6, 6));
        assert_eq!(split(&d, 0), (0, 0, 0, "stateful"));
    }

    #[test]
    fn numbers_settled_out_of_the_window_still_count() {
        let mut d = DirectionStats::default();
        let n = 3 * SEEN;
        let mut lost_count = 0;
        for k in 0..n {
            if k % 1000 == 7 {
                d.record(&lost(k)); // arrived as number k, reply lost
                lost_count += 1;
            } else {
                d.record(&reply(k, k as u32));
            }
        }
        assert_eq!(split(&d, lost_count), (0, lost_count, 0, "stateful"));
    }
}
