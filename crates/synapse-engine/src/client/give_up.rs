//! The stop rule for a silent peer (`ClientConfig::give_up_after`): a run
//! gives up once its measured requests have had no timely reply for that
//! long. Checked where a request is found lost, never on an answered one,
//! so the measured path pays nothing for it.

use std::time::Duration;
use synapse_stats::OutageDetector;

/// The rule, and whether it fired.
#[derive(Debug, Clone, Copy)]
pub(super) struct GiveUp {
    after_ns: u64,
    /// How long the silence had lasted when the run gave up.
    pub gave_up: Option<Duration>,
}

impl GiveUp {
    /// The rule for a run that gives up after `after` (`None`: never).
    pub fn new(after: Option<Duration>) -> Self {
        Self {
            after_ns: after.map_or(u64::MAX, |d| d.as_nanos() as u64),
            gave_up: None,
        }
    }

    /// A measured request was found lost at `now_ns` (the run's clock),
    /// `outages` holding the silence it belongs to: whether the run gives
    /// up now.
    #[cold]
    pub fn lost(&mut self, outages: &OutageDetector, now_ns: u64) -> bool {
        let Some(since) = outages.since_ns() else {
            return false;
        };
        let silent = now_ns.saturating_sub(since);
        if silent >= self.after_ns {
            self.gave_up = Some(Duration::from_nanos(silent));
        }
        self.gave_up.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silence_as_long_as_the_rule_gives_up_and_says_how_long() {
        let mut o = OutageDetector::default();
        let mut g = GiveUp::new(Some(Duration::from_secs(3)));
        o.missed(10, 1_000_000_000);
        assert!(!g.lost(&o, 2_000_000_000));
        assert!(g.lost(&o, 4_500_000_000));
        assert_eq!(g.gave_up, Some(Duration::from_millis(3_500)));
        let mut never = GiveUp::new(None);
        assert!(!never.lost(&o, u64::MAX / 2));
    }
}
