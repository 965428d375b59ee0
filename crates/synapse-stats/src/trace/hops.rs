//! Each hop's figures: who answered, answered of sent, the loss with its
//! 95 % interval (Clopper-Pearson: exact, so 0 of 80 still bounds the loss
//! under 4.5 %), the round trip's median and 90th percentile, and what the
//! hop's loss means once the hops after it are known ([`HopState`]).

use super::{AnswerKind, MplsEntry, PathTally};
use crate::significance::special::clopper_pearson;
use std::net::IpAddr;

/// The confidence of every interval a trace gives.
pub const CONFIDENCE: f64 = 0.95;

/// A share with its interval, each a ratio (0 to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proportion {
    /// What was measured.
    pub ratio: f64,
    /// The interval's low end.
    pub low: f64,
    /// Its high end.
    pub high: f64,
}

impl Proportion {
    /// `k` of `n`, with its 95 % interval; `None` when `n` is 0.
    pub fn of(k: u32, n: u32) -> Option<Self> {
        (n > 0).then(|| {
            let (low, high) = clopper_pearson(u64::from(k), u64::from(n), CONFIDENCE);
            Self {
                ratio: f64::from(k) / f64::from(n),
                low,
                high,
            }
        })
    }
}

/// What a hop's loss means, given the hops after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopState {
    /// It answered, and no more than [`MIN_LOSS`] can be shown lost.
    Clean,
    /// It lost probes and so does every hop after it that answers: the
    /// loss persists to the end.
    Lossy,
    /// It lost probes but a hop after it lost fewer: its router only
    /// answered fewer (ICMP rate-limited), it dropped nothing in transit.
    RateLimited,
    /// It never answered (a router that sends no ICMP, or a filter): it
    /// says nothing either way.
    Silent,
}

/// Loss counts at a hop only when its interval's low end is at least this
/// (1 %): three or fewer of 80 lost could be chance, five cannot.
pub const MIN_LOSS: f64 = 0.01;

/// One hop's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct HopFigures {
    /// Its TTL (from 1).
    pub ttl: u8,
    /// Who answered, most answers first.
    pub addresses: Vec<IpAddr>,
    /// The main responder's kind of answer (`None`: silent).
    pub kind: Option<AnswerKind>,
    /// Probes whose fate is known.
    pub sent: u32,
    /// Answered.
    pub answered: u32,
    /// Lost (unanswered), of sent.
    pub loss: Option<Proportion>,
    /// Round trip, median, ns.
    pub rtt_p50_ns: Option<u64>,
    /// Round trip, 90th percentile, ns.
    pub rtt_p90_ns: Option<u64>,
    /// The MPLS labels its router quoted.
    pub mpls: Vec<MplsEntry>,
    /// What its loss means.
    pub state: HopState,
}

impl HopFigures {
    /// Whether its interval shows loss ([`MIN_LOSS`] at least).
    pub fn shows_loss(&self) -> bool {
        self.answered > 0 && self.loss.is_some_and(|l| l.low >= MIN_LOSS)
    }

    /// Whether it answered at all.
    pub fn answers(&self) -> bool {
        self.answered > 0
    }
}

/// The `q` quantile of `sorted` (nearest rank).
fn quantile(sorted: &[u64], q: f64) -> Option<u64> {
    let n = sorted.len();
    (n > 0).then(|| {
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        sorted[rank - 1]
    })
}

/// Every hop's figures, each hop's state judged against the hops after it.
pub fn figures(path: &PathTally) -> Vec<HopFigures> {
    let mut hops: Vec<HopFigures> = path
        .hops
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mut by_answers: Vec<_> = h.responders.iter().collect();
            by_answers.sort_by_key(|r| std::cmp::Reverse(r.answers));
            let mut rtt = h.rtt_ns.clone();
            rtt.sort_unstable();
            HopFigures {
                ttl: i as u8 + 1,
                addresses: by_answers.iter().map(|r| r.addr).collect(),
                kind: by_answers.first().map(|r| r.kind),
                sent: h.sent,
                answered: h.answered.min(h.sent),
                loss: Proportion::of(h.sent.saturating_sub(h.answered), h.sent),
                rtt_p50_ns: quantile(&rtt, 0.5),
                rtt_p90_ns: quantile(&rtt, 0.9),
                mpls: by_answers
                    .iter()
                    .find(|r| !r.mpls.is_empty())
                    .map(|r| r.mpls.clone())
                    .unwrap_or_default(),
                state: HopState::Clean,
            }
        })
        .collect();
    label(&mut hops);
    hops
}

/// Labels each hop: silent, clean, lossy when every answering hop from it
/// to the end shows loss, rate-limited when a later one does not.
fn label(hops: &mut [HopFigures]) {
    let mut clean_after = false;
    for h in hops.iter_mut().rev() {
        h.state = if !h.answers() {
            HopState::Silent
        } else if !h.shows_loss() {
            clean_after = true;
            HopState::Clean
        } else if clean_after {
            HopState::RateLimited
        } else {
            HopState::Lossy
        };
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::{HopTally, Responder};
    use super::*;

    pub(crate) fn hop(addr: &str, kind: AnswerKind, sent: u32, answered: u32) -> HopTally {
        HopTally {
            sent,
            answered,
            responders: (answered > 0)
                .then(|| Responder {
                    addr: addr.parse().unwrap(),
                    kind,
                    answers: answered,
                    mpls: Vec::new(),
                })
                .into_iter()
                .collect(),
            rtt_ns: (1..=u64::from(answered)).map(|i| i * 1000).collect(),
        }
    }

    pub(crate) fn path(hops: Vec<HopTally>) -> PathTally {
        PathTally {
            port: 40_000,
            destination: "10.0.0.9".parse().unwrap(),
            max_ttl: hops.len() as u8,
            hops,
        }
    }

    #[test]
    fn a_proportion_has_the_exact_interval() {
        let p = Proportion::of(0, 80).unwrap();
        assert_eq!((p.ratio, p.low), (0.0, 0.0));
        assert!((p.high - 0.045).abs() < 0.001, "{}", p.high);
        let p = Proportion::of(24, 80).unwrap();
        assert!((p.ratio - 0.3).abs() < 1e-12);
        assert!(
            p.low > 0.19 && p.low < 0.21 && p.high > 0.40 && p.high < 0.42,
            "{p:?}"
        );
        assert_eq!(Proportion::of(0, 0), None);
    }

    #[test]
    fn figures_count_rank_and_time_each_hop() {
        let mut two = hop("10.0.0.2", AnswerKind::TimeExceeded, 80, 60);
        two.answer(
            "10.0.0.3".parse().unwrap(),
            AnswerKind::TimeExceeded,
            99_000,
            &[],
        );
        two.sent += 1;
        let f = figures(&path(vec![
            hop("10.0.0.1", AnswerKind::TimeExceeded, 80, 80),
            two,
        ]));
        assert_eq!(f[0].ttl, 1);
        assert_eq!(f[0].rtt_p50_ns, Some(40_000));
        assert_eq!(f[0].rtt_p90_ns, Some(72_000));
        assert_eq!(f[1].addresses.len(), 2);
        assert_eq!(
            f[1].addresses[0].to_string(),
            "10.0.0.2",
            "most answers first"
        );
        assert_eq!((f[1].sent, f[1].answered), (81, 61));
        assert_eq!(f[1].rtt_p90_ns, Some(55_000));
    }

    /// A router that answered 9 of 80 before a hop that answered all is
    /// rate-limited; the loss that reaches the end is lossy; a hop that
    /// never answered is silent and breaks neither.
    #[test]
    fn states_follow_from_the_hops_after() {
        use AnswerKind::*;
        let f = figures(&path(vec![
            hop("10.0.0.1", TimeExceeded, 80, 9),
            hop("10.0.0.2", TimeExceeded, 80, 80),
            hop("10.0.0.3", TimeExceeded, 80, 0),
            hop("10.0.0.4", TimeExceeded, 80, 50),
            hop("10.0.0.9", Echo, 80, 56),
        ]));
        let states: Vec<HopState> = f.iter().map(|h| h.state).collect();
        assert_eq!(
            states,
            [
                HopState::RateLimited,
                HopState::Clean,
                HopState::Silent,
                HopState::Lossy,
                HopState::Lossy
            ]
        );
        // Three of 80 lost is not shown loss; five is.
        let f = figures(&path(vec![hop("10.0.0.9", Echo, 80, 77)]));
        assert_eq!(f[0].state, HopState::Clean);
        let f = figures(&path(vec![hop("10.0.0.9", Echo, 80, 75)]));
        assert_eq!(f[0].state, HopState::Lossy);
    }
}
