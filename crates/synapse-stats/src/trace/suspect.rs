//! The rule that names a suspect link, or says why it cannot.
//!
//! Loss at a hop means something only if it persists: a router that drops
//! nothing but answers few of its probes (ICMP errors are rate-limited,
//! on Linux about one a second per destination after a burst of six) shows
//! "loss" that the next hop, answering every probe, contradicts. So the
//! suspect link is the one into the first hop of the run of answering hops
//! that all show loss to the end of the path ([`HopState::Lossy`]). That
//! run can still be rate limiting alone (trippy#1466: a rate-limited last
//! hop "confirms" nothing), so the suspect is named only when the run has
//! at least two hops, or holds an answer no one rate-limits: the
//! destination's echo. Otherwise the verdict is inconclusive, and says why.

use super::hops::{HopFigures, HopState, Proportion};
use super::{AnswerKind, PathTally};
use std::net::IpAddr;

/// Without shown loss, the loss at the end must be bounded under this
/// (15 %) for "no suspect": fewer probes cannot say.
pub const MAX_UNRESOLVED: f64 = 0.15;

/// A hop a verdict names: its TTL and the address that answered it most
/// (`ttl` 0 with no address: this host, where the path starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopRef {
    /// Its TTL (0: this host).
    pub ttl: u8,
    /// Its address (`None` for this host).
    pub addr: Option<IpAddr>,
}

/// The link after which loss persists to the destination.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Suspect {
    /// The last hop before the loss (this host when the loss starts at
    /// the first hop).
    pub from: HopRef,
    /// The first hop that shows it.
    pub to: HopRef,
    /// The loss that persists: the destination's echo's when it is among
    /// the hops that show it, else the least any of them shows.
    pub loss: Proportion,
    /// How many answering hops from `to` to the end show the loss.
    pub hops_showing: usize,
}

/// Why no verdict can be given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Inconclusive {
    /// Loss persists from `candidate.to` on, but only through answers that
    /// may be rate limiting alone (one hop, not an echo).
    Unconfirmed(Suspect),
    /// The destination never answered: loss to it cannot be told.
    NeverAnswered,
    /// No loss shown, but too few answers to bound it under
    /// [`MAX_UNRESOLVED`] at the end of the path: the bound reached.
    TooFewProbes(f64),
}

/// What the trace of one path says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// No loss that persists to the destination.
    NoSuspect,
    /// Loss persists from a link on.
    Suspect(Suspect),
    /// Neither can be said.
    Inconclusive(Inconclusive),
    /// The path ends before the destination: the hop that said so (a
    /// router's, or the destination's host) and the ICMP code it gave.
    Unreachable(HopRef, u8),
}

/// The verdict on `path`, whose hops' figures are `hops`
/// ([`super::figures`]).
pub fn judge(path: &PathTally, hops: &[HopFigures]) -> Verdict {
    let Some((end_ttl, kind, by)) = path.end() else {
        return Verdict::Inconclusive(Inconclusive::NeverAnswered);
    };
    if let AnswerKind::Unreachable(code) = kind {
        let at = HopRef {
            ttl: end_ttl,
            addr: Some(by),
        };
        return Verdict::Unreachable(at, code);
    }
    let hops = &hops[..hops.len().min(usize::from(end_ttl))];
    let answering: Vec<&HopFigures> = hops.iter().filter(|h| h.answers()).collect();
    let run = answering
        .iter()
        .rev()
        .take_while(|h| h.state == HopState::Lossy)
        .count();
    let Some(&last) = answering.last() else {
        return Verdict::Inconclusive(Inconclusive::NeverAnswered);
    };
    if run == 0 {
        let high = last.loss.map_or(1.0, |l| l.high);
        return if high > MAX_UNRESOLVED {
            Verdict::Inconclusive(Inconclusive::TooFewProbes(high))
        } else {
            Verdict::NoSuspect
        };
    }
    let showing = &answering[answering.len() - run..];
    let before = answering.len() - run;
    let at = |h: &HopFigures| HopRef {
        ttl: h.ttl,
        addr: h.addresses.first().copied(),
    };
    let from = before
        .checked_sub(1)
        .map_or(HopRef { ttl: 0, addr: None }, |i| at(answering[i]));
    let echo = showing
        .iter()
        .find(|h| h.kind == Some(AnswerKind::Echo) && h.ttl == end_ttl && kind == AnswerKind::Echo);
    let least = showing
        .iter()
        .filter_map(|h| h.loss)
        .min_by(|a, b| a.ratio.total_cmp(&b.ratio));
    let Some(loss) = echo.and_then(|h| h.loss).or(least) else {
        return Verdict::Inconclusive(Inconclusive::NeverAnswered);
    };
    let suspect = Suspect {
        from,
        to: at(showing[0]),
        loss,
        hops_showing: run,
    };
    if run >= 2 || echo.is_some() {
        Verdict::Suspect(suspect)
    } else {
        Verdict::Inconclusive(Inconclusive::Unconfirmed(suspect))
    }
}

#[cfg(test)]
mod tests {
    use super::super::hops::figures;
    use super::super::hops::tests::{hop, path};
    use super::*;
    use AnswerKind::*;
    use proptest::prelude::*;

    fn verdict(hops: Vec<super::super::HopTally>) -> Verdict {
        let p = path(hops);
        judge(&p, &figures(&p))
    }

    /// The lab's path through B: R rate-limited, B clean, the echo 30 %
    /// short: the link B → S, its loss the echo's; R never blamed.
    #[test]
    fn loss_after_a_clean_hop_confirmed_by_the_echo_names_the_link() {
        let v = verdict(vec![
            hop("10.0.0.1", TimeExceeded, 80, 9),
            hop("10.0.0.2", TimeExceeded, 80, 80),
            hop("10.0.0.9", Echo, 80, 56),
        ]);
        let Verdict::Suspect(s) = v else {
            panic!("{v:?}")
        };
        assert_eq!(s.from.ttl, 2);
        assert_eq!(s.from.addr.unwrap().to_string(), "10.0.0.2");
        assert_eq!(s.to.ttl, 3);
        assert!((s.loss.ratio - 0.3).abs() < 1e-9);
        assert!(s.loss.low < 0.3 && s.loss.high > 0.3);
    }

    /// The same with the destination's port unreachable in place of an
    /// echo: one rate-limited answer confirms nothing.
    #[test]
    fn a_rate_limited_last_hop_alone_is_inconclusive() {
        let v = verdict(vec![
            hop("10.0.0.1", TimeExceeded, 80, 9),
            hop("10.0.0.2", TimeExceeded, 80, 80),
            hop("10.0.0.9", PortUnreachable, 80, 12),
        ]);
        let Verdict::Inconclusive(Inconclusive::Unconfirmed(s)) = v else {
            panic!("{v:?}")
        };
        assert_eq!((s.from.ttl, s.to.ttl), (2, 3));
        // A second later hop that shows it confirms it.
        let v = verdict(vec![
            hop("10.0.0.1", TimeExceeded, 80, 80),
            hop("10.0.0.2", TimeExceeded, 80, 55),
            hop("10.0.0.9", PortUnreachable, 80, 12),
        ]);
        assert!(
            matches!(v, Verdict::Suspect(s) if s.from.ttl == 1 && s.hops_showing == 2),
            "{v:?}"
        );
    }

    #[test]
    fn a_clean_end_is_no_suspect_and_too_few_probes_say_so() {
        let v = verdict(vec![
            hop("10.0.0.1", TimeExceeded, 80, 7),
            hop("10.0.0.9", Echo, 80, 80),
        ]);
        assert_eq!(v, Verdict::NoSuspect);
        let v = verdict(vec![hop("10.0.0.9", Echo, 10, 10)]);
        assert!(
            matches!(v, Verdict::Inconclusive(Inconclusive::TooFewProbes(h)) if h > 0.15),
            "{v:?}"
        );
        let v = verdict(vec![
            hop("10.0.0.1", TimeExceeded, 80, 80),
            hop("10.0.0.2", TimeExceeded, 80, 0),
        ]);
        assert_eq!(v, Verdict::Inconclusive(Inconclusive::NeverAnswered));
        let v = verdict(vec![
            hop("10.0.0.1", TimeExceeded, 80, 80),
            hop("10.0.0.1", Unreachable(1), 80, 80),
        ]);
        let at = HopRef {
            ttl: 2,
            addr: Some("10.0.0.1".parse().unwrap()),
        };
        assert_eq!(v, Verdict::Unreachable(at, 1), "host unreachable");
    }

    /// Loss from the first hop on: the link from this host.
    #[test]
    fn loss_from_the_start_blames_the_first_link() {
        let v = verdict(vec![
            hop("10.0.0.1", TimeExceeded, 80, 50),
            hop("10.0.0.9", Echo, 80, 52),
        ]);
        let Verdict::Suspect(s) = v else {
            panic!("{v:?}")
        };
        assert_eq!(s.from, HopRef { ttl: 0, addr: None });
        assert_eq!(s.to.ttl, 1);
    }

    proptest! {
        /// Whatever the counts: a rate-limited hop is never blamed (the
        /// suspect's `to` shows loss and so does every answering hop after
        /// it), a silent hop is never named, and a path whose end answers
        /// everything of enough probes has no suspect.
        #[test]
        fn the_rule_never_blames_what_a_later_hop_contradicts(
            answers in proptest::collection::vec(0u32..=80, 1..8),
            echo in any::<bool>(),
        ) {
            let n = answers.len();
            let hops: Vec<_> = answers.iter().enumerate().map(|(i, &a)| {
                let kind = if i + 1 < n { TimeExceeded } else if echo { Echo } else { PortUnreachable };
                hop(&format!("10.0.0.{}", i + 1), kind, 80, a)
            }).collect();
            let p = path(hops);
            let f = figures(&p);
            match judge(&p, &f) {
                Verdict::Suspect(s) | Verdict::Inconclusive(Inconclusive::Unconfirmed(s)) => {
                    let to = usize::from(s.to.ttl) - 1;
                    prop_assert!(f[to].answers());
                    for h in &f[to..] {
                        prop_assert!(!h.answers() || h.shows_loss(), "{:?}", h);
                    }
                    // `from` is the nearest answering hop before, and clean.
                    match f[..to].iter().rev().find(|h| h.answers()) {
                        Some(h) => prop_assert!(h.ttl == s.from.ttl && !h.shows_loss()),
                        None => prop_assert_eq!(s.from.ttl, 0),
                    }
                }
                Verdict::NoSuspect => {
                    let last = f.iter().rev().find(|h| h.answers()).unwrap();
                    prop_assert!(!last.shows_loss());
                }
                Verdict::Inconclusive(_) | Verdict::Unreachable(..) => {}
            }
            if answers[n - 1] == 80 {
                prop_assert_eq!(judge(&p, &f), Verdict::NoSuspect);
            }
        }
    }
}
