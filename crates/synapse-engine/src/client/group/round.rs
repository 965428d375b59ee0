//! One request to a group and the answers it has drawn so far: who
//! answered in time, each answer's points, fastest and slowest. Held in a
//! fixed array, one slot per responder at most, allocated once.

use super::responders::MAX_RESPONDERS;
use crate::mono::Mono;
use crate::points::Points;

/// One timely answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Answer {
    /// Its responder's index in the table.
    pub responder: usize,
    /// When it arrived (the clock read for its round trip).
    pub at: Option<Mono>,
    /// Its points: the request's, and its own.
    pub points: Points,
}

/// The request in flight.
#[derive(Debug)]
pub struct Round {
    /// Its sequence number.
    pub seq: u64,
    /// When it left.
    pub t1: Mono,
    /// Part of the warm-up.
    pub warmup: bool,
    /// Its answers are recorded: what comes after is late.
    pub settled: bool,
    answers: Box<[Answer; MAX_RESPONDERS]>,
    n: usize,
    /// Who answered in time, one bit per responder index.
    heard: u64,
}

impl Default for Round {
    fn default() -> Self {
        Self {
            seq: 0,
            t1: Mono::now(),
            warmup: true,
            settled: true,
            answers: Box::new([Answer::default(); MAX_RESPONDERS]),
            n: 0,
            heard: 0,
        }
    }
}

impl Round {
    /// Request `seq`, sent at `t1`, draws its answers from now.
    pub fn start(&mut self, seq: u64, t1: Mono, warmup: bool) {
        self.seq = seq;
        self.t1 = t1;
        self.warmup = warmup;
        self.settled = false;
        self.n = 0;
        self.heard = 0;
    }

    /// Files responder `responder`'s timely answer, arrived `at` with
    /// `points`.
    pub fn answered(&mut self, responder: usize, at: Mono, points: Points) {
        if self.n < MAX_RESPONDERS && !self.heard_from(responder) {
            self.answers[self.n] = Answer {
                responder,
                at: Some(at),
                points,
            };
            self.n += 1;
            self.heard |= 1 << responder;
        }
    }

    /// Whether `responder` answered in time.
    pub fn heard_from(&self, responder: usize) -> bool {
        responder < MAX_RESPONDERS && self.heard & (1 << responder) != 0
    }

    /// Timely answers so far.
    pub fn count(&self) -> usize {
        self.n
    }

    /// The timely answers, in the order they came (the last is the slowest).
    pub fn answers(&self) -> &[Answer] {
        &self.answers[..self.n]
    }

    /// The timely answers, to add the request's TX stamps to.
    pub fn answers_mut(&mut self) -> &mut [Answer] {
        &mut self.answers[..self.n]
    }

    /// The slowest answer's round trip less the fastest's, with two
    /// answers or more.
    pub fn spread_ns(&self) -> Option<u64> {
        let rtt = |a: &Answer| a.points.rtt_ns;
        let fastest = self.answers().first().and_then(rtt)?;
        let slowest = self.answers().last().and_then(rtt)?;
        (self.n >= 2).then(|| slowest.saturating_sub(fastest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(rtt: u64) -> Points {
        Points {
            rtt_ns: Some(rtt),
            ..Points::default()
        }
    }

    #[test]
    fn a_round_keeps_each_responders_first_timely_answer() {
        let mut r = Round::default();
        r.start(5, Mono::now(), false);
        let at = Mono::now();
        r.answered(2, at, points(10_000));
        r.answered(0, at, points(14_000));
        r.answered(2, at, points(99_000));
        assert_eq!(r.count(), 2);
        assert!(r.heard_from(0) && r.heard_from(2) && !r.heard_from(1));
        assert_eq!(r.spread_ns(), Some(4_000));
        r.start(6, Mono::now(), false);
        assert_eq!((r.count(), r.spread_ns()), (0, None));
        r.answered(1, at, points(3_000));
        assert_eq!(r.spread_ns(), None, "one answer has no spread");
    }
}
