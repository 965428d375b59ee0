//! A run cut into slices while it goes, for a live stream
//! (`--json-stream`): by the time each request left (every DURATION), or
//! by requests as their fate becomes known (every N).
//!
//! A request's fate is known when its reply comes or its timeout passes,
//! so a time slice is complete only a timeout after its end. It is
//! handed out once its end is past by the timeout, or by one slice's
//! length when the timeout is longer (a stream must not fall minutes
//! behind): then its loss is provisional, and the slice is handed out
//! again, settled, once its timeout has passed. A count slice holds only
//! requests whose fate is known: it is never provisional.
//!
//! Loss follows RFC 7680: a request without a reply within the timeout
//! is lost. `lost` and `late` split those as the report does: `late` if
//! a reply came after all (and before the slice was handed out).

use super::intervals::empty_histogram;
use super::{MAX_TRACKABLE_NS, Record, RecordKind};
use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::time::Duration;

/// Where the stream is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Every this long, by when each request left.
    Time(Duration),
    /// Every this many requests, in the order their fate became known.
    Requests(u64),
}

/// One slice of the stream.
#[derive(Debug, Clone)]
pub struct StreamSlice {
    /// Its place in the stream, from 0.
    pub index: u64,
    /// When it starts, ns on the run's clock (a count slice: its first
    /// request's send time).
    pub start_ns: u64,
    /// When it ends, ns (a count slice: its last request's send time; the
    /// run's last slice: where the run ended).
    pub end_ns: u64,
    /// The timely replies' round trips, ns.
    pub rtt: Histogram<u64>,
    /// Requests sent in it whose fate is known.
    pub sent: u64,
    /// Of them, timely replies.
    pub received: u64,
    /// Of them, without a reply (RFC 7680: lost).
    pub lost: u64,
    /// Of them, without a timely reply, and answered later (lost too, by
    /// RFC 7680; the report counts them apart).
    pub late: u64,
    /// Requests sent in it may still be waiting for their timeout: its
    /// counts can still grow.
    pub provisional: bool,
}

impl StreamSlice {
    fn new(index: u64, start_ns: u64, end_ns: u64) -> Self {
        Self {
            index,
            start_ns,
            end_ns,
            rtt: empty_histogram(),
            sent: 0,
            received: 0,
            lost: 0,
            late: 0,
            provisional: false,
        }
    }

    /// Requests without a timely reply, as a percentage of those sent.
    pub fn loss_percent(&self) -> Option<f64> {
        (self.sent > 0).then(|| 100.0 * (self.lost + self.late) as f64 / self.sent as f64)
    }

    fn take(&mut self, fate: Fate) {
        match fate {
            Fate::Reply(rtt) => {
                self.sent += 1;
                self.received += 1;
                let _ = self.rtt.record(rtt.clamp(1, MAX_TRACKABLE_NS));
            }
            Fate::Lost => {
                self.sent += 1;
                self.lost += 1;
            }
            Fate::Late => {
                self.lost = self.lost.saturating_sub(1);
                self.late += 1;
            }
        }
    }
}

/// What a stream hands out.
#[derive(Debug, Clone)]
pub enum Ready {
    /// A slice, as far as is known (see [`StreamSlice::provisional`]).
    Slice(StreamSlice),
    /// A slice handed out provisionally before, now complete.
    Settled(StreamSlice),
}

#[derive(Debug, Clone, Copy)]
enum Fate {
    Reply(u64),
    Lost,
    Late,
}

/// Losses remembered so that a late reply finds its slice.
const REMEMBERED_LOSSES: usize = 4096;

/// Cuts a run's records into [`StreamSlice`]s.
#[derive(Debug)]
pub struct StreamSlicer {
    cut: Cut,
    timeout_ns: u64,
    /// The first measured request's send time: slice 0 starts there.
    origin: Option<u64>,
    /// Slices not handed out yet, the first numbered `next`.
    open: VecDeque<StreamSlice>,
    next: u64,
    /// Handed out provisionally, to settle.
    unsettled: VecDeque<StreamSlice>,
    /// Count slices filled, to hand out.
    full: Vec<StreamSlice>,
    /// Recent losses: sequence number and slice.
    losses: VecDeque<(u64, u64)>,
    /// The latest time seen on the run's clock.
    last_ns: u64,
}

impl StreamSlicer {
    /// A stream cut by `cut`, whose requests wait `timeout` for a reply.
    pub fn new(cut: Cut, timeout: Duration) -> Self {
        let cut = match cut {
            Cut::Time(d) => Cut::Time(d.max(Duration::from_millis(1))),
            Cut::Requests(n) => Cut::Requests(n.max(1)),
        };
        Self {
            cut,
            timeout_ns: timeout.as_nanos() as u64,
            origin: None,
            open: VecDeque::new(),
            next: 0,
            unsettled: VecDeque::new(),
            full: Vec::new(),
            losses: VecDeque::new(),
            last_ns: 0,
        }
    }

    /// Accounts for one record (warm-up and events that are not a
    /// request's fate are left out).
    pub fn record(&mut self, r: &Record) {
        self.last_ns = self.last_ns.max(r.at_ns);
        if r.warmup {
            return;
        }
        let (fate, send_ns) = match r.kind {
            RecordKind::Sample => (Fate::Reply(r.rtt_ns), r.at_ns.saturating_sub(r.rtt_ns)),
            RecordKind::Lost => (Fate::Lost, r.at_ns.saturating_sub(self.timeout_ns)),
            RecordKind::Late { .. } => return self.late(r.seq),
            _ => return,
        };
        let origin = *self.origin.get_or_insert(send_ns);
        let index = match self.cut {
            Cut::Time(d) => send_ns.saturating_sub(origin) / d.as_nanos() as u64,
            Cut::Requests(_) => self.next,
        };
        if let Fate::Lost = fate {
            if self.losses.len() == REMEMBERED_LOSSES {
                self.losses.pop_front();
            }
            self.losses.push_back((r.seq, index));
        }
        let cut = self.cut;
        let Some(slice) = self.slice(index) else {
            return;
        };
        slice.take(fate);
        if let Cut::Requests(n) = cut {
            slice.start_ns = send_ns.min(slice.start_ns);
            slice.end_ns = send_ns.max(slice.end_ns);
            if slice.sent >= n {
                self.next += 1;
                self.full.extend(self.open.pop_front());
            }
        }
    }

    /// A late reply: its request counted as lost moves to late, in its
    /// slice if that is still open or unsettled. A slice handed out final
    /// said it lost, and a line cannot be taken back: the request stays
    /// lost there (RFC 7680 calls it so), and is counted nowhere else, so
    /// the slices' losses add up to the report's lost and late.
    fn late(&mut self, seq: u64) {
        let Some(&(_, index)) = self.losses.iter().rev().find(|(s, _)| *s == seq) else {
            return;
        };
        let final_already = index < self.next && !self.unsettled.iter().any(|s| s.index == index);
        if final_already {
            return;
        }
        if let Some(slice) = self.slice(index) {
            slice.take(Fate::Late);
        }
    }

    /// Slice `index`, open (made, with those before it) or unsettled; a
    /// time slice already complete takes a straggler into the first
    /// open one, so nothing goes uncounted.
    fn slice(&mut self, index: u64) -> Option<&mut StreamSlice> {
        if index < self.next {
            if let Some(at) = self.unsettled.iter().position(|s| s.index == index) {
                return self.unsettled.get_mut(at);
            }
            if matches!(self.cut, Cut::Requests(_)) {
                return None;
            }
            return self.slice(self.next);
        }
        let origin = self.origin.unwrap_or(0);
        while self.next + self.open.len() as u64 <= index {
            let k = self.next + self.open.len() as u64;
            self.open.push_back(match self.cut {
                Cut::Time(d) => {
                    let len = d.as_nanos() as u64;
                    StreamSlice::new(k, origin + k * len, origin + (k + 1) * len)
                }
                Cut::Requests(_) => StreamSlice::new(k, u64::MAX, 0),
            });
        }
        self.open.get_mut((index - self.next) as usize)
    }

    /// What is due at `now_ns` on the run's clock: time slices whose end
    /// is past by the timeout (or by a slice's length, then provisional),
    /// count slices filled, and provisional slices now settled.
    pub fn due(&mut self, now_ns: u64) -> Vec<Ready> {
        let now = now_ns.max(self.last_ns);
        let mut out: Vec<Ready> = self.full.drain(..).map(Ready::Slice).collect();
        if let Cut::Time(d) = self.cut {
            let wait = self.timeout_ns.min(d.as_nanos() as u64);
            if self.origin.is_some() {
                // Slices with nothing in them are handed out too: a gap
                // in the stream is a slice with nothing sent.
                let _ = self.slice(self.index_at(now.saturating_sub(wait), d));
            }
            while self.open.len() > 1 && self.open[0].end_ns + wait <= now {
                let mut s = self.open.pop_front().unwrap_or_else(|| unreachable!());
                self.next += 1;
                s.provisional = now < s.end_ns + self.timeout_ns;
                if s.provisional {
                    self.unsettled.push_back(s.clone());
                }
                out.push(Ready::Slice(s));
            }
        }
        while let Some(s) = self.unsettled.front()
            && s.end_ns + self.timeout_ns <= now
        {
            let mut s = self.unsettled.pop_front().unwrap_or_else(|| unreachable!());
            s.provisional = false;
            out.push(Ready::Settled(s));
        }
        out
    }

    fn index_at(&self, t_ns: u64, d: Duration) -> u64 {
        t_ns.saturating_sub(self.origin.unwrap_or(0)) / d.as_nanos() as u64
    }

    /// The run has ended and every record is in: all that is left, final
    /// (the last slice ends where the run did).
    pub fn finish(&mut self) -> Vec<Ready> {
        let mut out: Vec<Ready> = self.full.drain(..).map(Ready::Slice).collect();
        let end = self.last_ns;
        while let Some(mut s) = self.open.pop_front() {
            self.next += 1;
            if s.sent == 0 && matches!(self.cut, Cut::Requests(_)) {
                continue;
            }
            if self.open.is_empty() && matches!(self.cut, Cut::Time(_)) {
                s.end_ns = s.end_ns.min(end.max(s.start_ns));
            }
            out.push(Ready::Slice(s));
        }
        out.extend(self.unsettled.drain(..).map(|mut s| {
            s.provisional = false;
            Ready::Settled(s)
        }));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn slices(out: &[Ready]) -> Vec<(u64, u64, u64, u64, bool)> {
        out.iter()
            .filter_map(|r| match r {
                Ready::Slice(s) => Some((s.index, s.sent, s.received, s.lost, s.provisional)),
                Ready::Settled(_) => None,
            })
            .collect()
    }

    /// Ping-pong every 10 ms, 100 ms slices, a 20 ms timeout: request k
    /// leaves at 10k ms; requests 12 and 13 are lost, 13's reply comes late.
    #[test]
    fn time_slices_go_by_send_time_and_wait_for_the_timeout() {
        let mut s = StreamSlicer::new(
            Cut::Time(Duration::from_millis(100)),
            Duration::from_millis(20),
        );
        let mut out = Vec::new();
        for k in 0..30u64 {
            let sent = 10 * k * MS;
            let r = if k == 12 || k == 13 {
                Record::event(RecordKind::Lost, k, sent + 20 * MS, false)
            } else {
                Record::sample(k, sent + MS, MS, false)
            };
            s.record(&r);
            if k == 14 {
                s.record(&Record::event(
                    RecordKind::Late { reordered: true },
                    13,
                    sent,
                    false,
                ));
            }
            out.extend(s.due(sent + MS));
        }
        // Slice 0 (0-100 ms) is due at 120 ms, slice 1 at 220 ms.
        assert_eq!(slices(&out), [(0, 10, 10, 0, false), (1, 10, 8, 1, false)]);
        let Ready::Slice(one) = &out[1] else { panic!() };
        assert_eq!((one.late, one.loss_percent()), (1, Some(20.0)));
        assert_eq!((one.start_ns, one.end_ns), (100 * MS, 200 * MS));
        assert_eq!(one.rtt.len(), 8);
        let rest = s.finish();
        assert_eq!(slices(&rest), [(2, 10, 10, 0, false)]);
        let Ready::Slice(last) = &rest[0] else {
            panic!()
        };
        assert_eq!(
            last.end_ns,
            291 * MS,
            "the last slice ends where the run did"
        );
    }

    /// A timeout longer than a slice: the slice is handed out after one
    /// slice's length, provisional, and settled when its timeout passed.
    #[test]
    fn a_long_timeout_makes_a_slice_provisional_then_settled() {
        let mut s = StreamSlicer::new(
            Cut::Time(Duration::from_millis(100)),
            Duration::from_millis(300),
        );
        s.record(&Record::sample(0, MS, MS, false));
        s.record(&Record::sample(1, 50 * MS, MS, false));
        assert!(
            s.due(150 * MS).is_empty(),
            "not before end + a slice's length"
        );
        let out = s.due(200 * MS);
        assert_eq!(slices(&out), [(0, 2, 2, 0, true)]);
        // Request 2 left at 90 ms and timed out at 390 ms.
        s.record(&Record::event(RecordKind::Lost, 2, 390 * MS, false));
        let out = s.due(400 * MS);
        let settled: Vec<_> = out
            .iter()
            .filter_map(|r| match r {
                Ready::Settled(x) => Some((x.index, x.sent, x.lost, x.provisional)),
                Ready::Slice(_) => None,
            })
            .collect();
        assert_eq!(settled, [(0, 3, 1, false)]);
        assert_eq!(
            slices(&out),
            [(1, 0, 0, 0, true), (2, 0, 0, 0, true)],
            "gaps are slices too"
        );
    }

    /// A reply that comes after its slice was handed out final moves
    /// nothing: that slice said lost, and another slice must not count
    /// it again (a straggler's late reply once did, in the open slice).
    #[test]
    fn a_late_reply_after_its_slice_was_final_is_counted_once() {
        let mut s = StreamSlicer::new(
            Cut::Time(Duration::from_millis(100)),
            Duration::from_millis(20),
        );
        s.record(&Record::sample(0, MS, MS, false));
        // Request 1 left at 90 ms, timed out at 110 ms.
        s.record(&Record::event(RecordKind::Lost, 1, 110 * MS, false));
        s.record(&Record::sample(2, 131 * MS, MS, false));
        let out = s.due(125 * MS);
        assert_eq!(slices(&out), [(0, 2, 1, 1, false)]);
        // Its reply at 150 ms: slice 0 is out, final.
        s.record(&Record::event(
            RecordKind::Late { reordered: false },
            1,
            150 * MS,
            false,
        ));
        let rest = s.finish();
        assert_eq!(slices(&rest), [(1, 1, 1, 0, false)]);
        let Ready::Slice(one) = &rest[0] else {
            panic!()
        };
        assert_eq!(one.late, 0, "counted once, in slice 0, as lost");
    }

    #[test]
    fn count_slices_are_never_provisional() {
        let mut s = StreamSlicer::new(Cut::Requests(3), Duration::from_millis(100));
        for k in 0..7u64 {
            let r = if k == 4 {
                Record::event(RecordKind::Lost, k, k * MS + 100 * MS, false)
            } else {
                Record::sample(k, k * MS + 10_000, 10_000, false)
            };
            s.record(&r);
        }
        s.record(&Record::sample(99, 0, 5, true));
        assert_eq!(
            slices(&s.due(0)),
            [(0, 3, 3, 0, false), (1, 3, 2, 1, false)]
        );
        assert_eq!(slices(&s.finish()), [(2, 1, 1, 0, false)]);
    }
}
