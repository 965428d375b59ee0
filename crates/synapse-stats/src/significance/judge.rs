//! Three verdicts from an interval and a margin.
//!
//! - *regression*: the whole interval lies beyond the margin on the worse
//!   side (beyond zero when there is no margin);
//! - *no regression*: an equivalence test (two one-sided tests, TOST): the
//!   whole interval inside ±margin, or wholly better than −margin; never
//!   claimed without a margin, since no interval rules out every change;
//! - *inconclusive*: anything else, and any figure whose percentile has too
//!   few samples beyond it on either side to be resolved.

use serde::Serialize;

/// What the data says about a change.
/// Serialized as the words the text uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Worse, beyond the margin, with the stated confidence.
    #[serde(rename = "regression")]
    Regression,
    /// Within the margin (or better beyond it), with the stated confidence.
    #[serde(rename = "no regression")]
    NoRegression,
    /// Neither could be shown.
    #[serde(rename = "inconclusive")]
    Inconclusive,
}

impl Verdict {
    /// The words reports use: `regression`, `no regression`,
    /// `inconclusive`.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::NoRegression => "no regression",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// Several figures' verdicts as one: any regression is a regression;
    /// no regression only when every figure shows none.
    pub fn all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let mut out = Verdict::NoRegression;
        let mut any = false;
        for v in verdicts {
            any = true;
            match v {
                Verdict::Regression => return Verdict::Regression,
                Verdict::Inconclusive => out = Verdict::Inconclusive,
                Verdict::NoRegression => {}
            }
        }
        if any { out } else { Verdict::Inconclusive }
    }
}

/// The margin on the compared scale: `(worse, better)`, the change beyond
/// which B is worse, and below which it is better. Latency: ln(1 + m) and
/// ln(1 − m) (−∞ for m ≥ 1); the loss: ±m points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Margin {
    /// A change above this is worse than the margin allows.
    pub worse: f64,
    /// A change below this is better than the margin.
    pub better: f64,
}

impl Margin {
    /// For a latency figure, `--min-effect` as a fraction (0.1 for 10 %).
    pub fn factor(m: f64) -> Self {
        Self {
            worse: m.ln_1p(),
            better: if m >= 1.0 {
                f64::NEG_INFINITY
            } else {
                (-m).ln_1p()
            },
        }
    }

    /// Additive, ±`m`.
    pub fn points(m: f64) -> Self {
        Self {
            worse: m,
            better: -m,
        }
    }
}

/// The verdict of an interval `[low, high]` against `margin` (`None`:
/// no `--min-effect`, so the margin is zero and no regression cannot be
/// shown).
pub fn judge(low: f64, high: f64, margin: Option<Margin>) -> Verdict {
    match margin {
        None if low > 0.0 => Verdict::Regression,
        None => Verdict::Inconclusive,
        Some(m) if low > m.worse => Verdict::Regression,
        Some(m) if high < m.worse && (low > m.better || high < m.better) => Verdict::NoRegression,
        Some(_) => Verdict::Inconclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_verdicts_from_an_interval_and_a_margin() {
        let m = Some(Margin::points(1.0));
        assert_eq!(judge(1.5, 3.0, m), Verdict::Regression);
        assert_eq!(
            judge(0.5, 3.0, m),
            Verdict::Inconclusive,
            "spans the margin"
        );
        assert_eq!(judge(-0.5, 0.5, m), Verdict::NoRegression, "inside ±1");
        assert_eq!(
            judge(-3.0, -2.0, m),
            Verdict::NoRegression,
            "better beyond it"
        );
        assert_eq!(judge(-3.0, 0.5, m), Verdict::Inconclusive, "spans −1");
        assert_eq!(judge(0.1, 0.2, None), Verdict::Regression);
        assert_eq!(judge(-0.1, 0.1, None), Verdict::Inconclusive);
        assert_eq!(
            judge(-0.2, -0.1, None),
            Verdict::Inconclusive,
            "without a margin, never no regression"
        );
    }

    #[test]
    fn a_factor_margin_is_symmetric_in_percent() {
        let m = Margin::factor(0.1);
        assert!((m.worse.exp() - 1.1).abs() < 1e-12);
        assert!((m.better.exp() - 0.9).abs() < 1e-12);
        assert_eq!(Margin::factor(1.5).better, f64::NEG_INFINITY);
    }

    #[test]
    fn the_figures_together() {
        use Verdict::*;
        assert_eq!(Verdict::all([NoRegression, Inconclusive]), Inconclusive);
        assert_eq!(Verdict::all([Inconclusive, Regression]), Regression);
        assert_eq!(Verdict::all([NoRegression, NoRegression]), NoRegression);
        assert_eq!(Verdict::all([]), Inconclusive);
    }
}
