//! Did it get slower? B against A for p50, p90, p99, p99.9, the mean and
//! the loss, each with a confidence interval and one of three verdicts:
//! *regression*, *no regression* (an equivalence test, only with a margin)
//! or *inconclusive*, and the smallest change the data could have shown.
//!
//! Two sources of noise are in a latency figure, and the method holds both
//! (docs/compare.md has the reasoning and the measurements):
//!
//! - **Within a run**, neighbouring samples are alike (a slow spell slows
//!   many requests in a row). A run's slices of consecutive requests (its
//!   JSON report's, its interval log's, or a stored baseline's) are
//!   resampled by a moving-block bootstrap, which keeps that dependence
//!   inside each block ([`run`]).
//! - **Between runs** of one configuration, figures differ by more than
//!   either run's own noise (thread placement, wake-up levels, the
//!   neighbours). Several runs on a side measure it; with one run a side it
//!   comes from this host's calibration or an assumed allowance, and a
//!   change smaller than it is inconclusive ([`spread`], [`interval`]).
//!
//! The six intervals are simultaneous: each is taken at 1 − 0.05/6
//! (Bonferroni), so that all six hold together with 95 % probability. The
//! English sentences are the reports' (the app's `report::compare_text`).

mod bootstrap;
pub mod interval;
pub mod judge;
mod run;
pub mod special;
pub mod spread;

pub use bootstrap::SplitMix;
pub use interval::{Between, Within};
pub use judge::{Margin, Verdict};
pub use run::{BEYOND, MIN_SLICES, Run, beyond, rank};
pub use spread::{Spread, SpreadSource};

use interval::Side;
use serde::Serialize;

/// A figure compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Figure {
    /// Median RTT.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Mean RTT.
    Mean,
    /// Requests without a timely reply, percent of those sent.
    Loss,
}

impl Figure {
    /// Every figure, in report order.
    pub const ALL: [Figure; 6] = [
        Figure::P50,
        Figure::P90,
        Figure::P99,
        Figure::P999,
        Figure::Mean,
        Figure::Loss,
    ];

    /// As in reports.
    pub fn name(self) -> &'static str {
        match self {
            Figure::P50 => "p50",
            Figure::P90 => "p90",
            Figure::P99 => "p99",
            Figure::P999 => "p99.9",
            Figure::Mean => "mean",
            Figure::Loss => "loss",
        }
    }

    /// The quantile, for a percentile.
    pub fn quantile(self) -> Option<f64> {
        match self {
            Figure::P50 => Some(0.5),
            Figure::P90 => Some(0.9),
            Figure::P99 => Some(0.99),
            Figure::P999 => Some(0.999),
            Figure::Mean | Figure::Loss => None,
        }
    }

    /// `ns`, or `percent` for the loss.
    pub fn unit(self) -> &'static str {
        if self == Figure::Loss {
            "percent"
        } else {
            "ns"
        }
    }
}

/// A run's six figures (`None`: not known, e.g. no replies).
pub type Figures = [Option<f64>; 6];

/// One figure, B against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureComparison {
    /// Which.
    pub figure: Figure,
    /// `ns` or `percent` (the loss, whose changes are in points).
    pub unit: &'static str,
    /// A's figure (the geometric mean over its runs; the loss: the mean).
    pub a: Option<f64>,
    /// B's.
    pub b: Option<f64>,
    /// B − A (positive: B is slower, or loses more).
    pub difference: Option<f64>,
    /// The difference in percent of A (latency only).
    pub difference_percent: Option<f64>,
    /// The interval of the difference, in the figure's unit.
    pub ci_low: Option<f64>,
    /// Its upper end.
    pub ci_high: Option<f64>,
    /// The interval in percent of A (latency only).
    pub ci_low_percent: Option<f64>,
    /// Its upper end.
    pub ci_high_percent: Option<f64>,
    /// The interval as the ratio B/A, computed on the log scale (latency
    /// only): a slowdown's lower end is a factor, never "−100 %".
    pub ci_low_ratio: Option<f64>,
    /// Its upper end.
    pub ci_high_ratio: Option<f64>,
    /// The interval spans more than [`UNBOUNDED_RATIO`] either side of its
    /// middle: the data cannot bound the change (latency only).
    pub ci_unbounded: bool,
    /// The smallest worsening this data could have called a regression:
    /// the margin plus the interval's half width, in the figure's unit.
    pub detectable: Option<f64>,
    /// The same in percent of A (latency only).
    pub detectable_percent: Option<f64>,
    /// Every run on both sides has enough samples beyond the percentile
    /// ([`BEYOND`]); an unresolved figure is inconclusive.
    pub resolved: bool,
    /// What the interval says.
    pub verdict: Verdict,
    /// Where the run-to-run part of the interval came from.
    pub between: Option<Between>,
    /// Where the within-run part came from.
    pub within: Option<Within>,
    /// Degrees of freedom of the t quantile.
    pub df: Option<f64>,
}

/// What a comparison needs besides the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `--min-effect`, percent of A: the margin of both tests.
    pub min_effect_percent: Option<f64>,
    /// The run-to-run spread known before looking at the runs.
    pub spread: Spread,
}

impl Options {
    /// A margin, and the assumed spread.
    pub fn with_min_effect(min_effect_percent: Option<f64>) -> Self {
        Self {
            min_effect_percent,
            spread: Spread::assumed(),
        }
    }
}

/// B against A, every figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Runs on A's side.
    pub runs_a: usize,
    /// Runs on B's side.
    pub runs_b: usize,
    /// The confidence the six intervals hold with together.
    pub confidence: f64,
    /// `--min-effect`, percent of A.
    pub min_effect_percent: Option<f64>,
    /// The run-to-run spread the comparison started from.
    pub spread: Spread,
    /// Each figure.
    pub figures: Vec<FigureComparison>,
    /// All figures together: any regression is one; no regression only
    /// when every figure shows none.
    pub verdict: Verdict,
}

impl Comparison {
    /// The figures that regressed.
    pub fn regressed(&self) -> impl Iterator<Item = &FigureComparison> {
        self.figures
            .iter()
            .filter(|f| f.verdict == Verdict::Regression)
    }
}

/// The overall confidence.
pub const CONFIDENCE: f64 = 0.95;

/// A ratio interval whose ends lie more than this factor either side of
/// its middle (four decades from end to end) bounds nothing a reader can
/// use: the report calls it unbounded. A smallest detectable change past
/// this factor is none.
pub const UNBOUNDED_RATIO: f64 = 100.0;

/// The smallest factor by which a latency figure must change before one
/// run a side can call it a regression, with no margin, however quiet
/// the runs: the interval's half width at its narrowest over every
/// within-run variance w the runs could have. (With w = 0 the prior's 4
/// degrees of freedom set a wide t; a little w of many degrees of freedom
/// raises the Welch-Satterthwaite df faster than it widens the error, so
/// the narrowest lies a little above w = 0; runs' own df only widen it.)
pub fn one_run_a_side_floor(spread: &Spread, figure: Figure) -> Option<f64> {
    let k = Figure::ALL.iter().position(|f| *f == figure)?;
    let sd = *spread.log_sd.get(k)?;
    let alpha = (1.0 - CONFIDENCE) / Figure::ALL.len() as f64;
    // u = w / τ²: variance 2τ²(1 + u); df d₀(1 + u)² (the runs' part has
    // infinite df at best).
    let narrowest = (0..=400)
        .map(|i| f64::from(i) / 20.0)
        .map(|u| {
            special::t_quantile(1.0 - alpha / 2.0, spread.df * (1.0 + u).powi(2)) * (1.0 + u).sqrt()
        })
        .fold(f64::INFINITY, f64::min);
    Some((narrowest * sd * 2f64.sqrt()).exp())
}

/// Compares B with A.
pub fn compare(a: &[Run], b: &[Run], opts: &Options) -> Comparison {
    let alpha = (1.0 - CONFIDENCE) / Figure::ALL.len() as f64;
    let boots = |runs: &[Run], side: u64| -> Vec<Vec<Figures>> {
        runs.iter()
            .enumerate()
            .map(|(i, r)| r.replicates(0x5EED ^ (side << 32) ^ i as u64))
            .collect()
    };
    let (ba, bb) = (boots(a, 1), boots(b, 2));
    let (sa, sb) = (
        Side {
            runs: a,
            boots: &ba,
        },
        Side {
            runs: b,
            boots: &bb,
        },
    );
    let figures: Vec<FigureComparison> = Figure::ALL
        .iter()
        .enumerate()
        .map(|(k, &fig)| {
            let change = interval::change(&sa, &sb, k, &opts.spread, alpha);
            figure(fig, a, b, k, change, opts.min_effect_percent)
        })
        .collect();
    Comparison {
        runs_a: a.len(),
        runs_b: b.len(),
        confidence: CONFIDENCE,
        min_effect_percent: opts.min_effect_percent,
        spread: opts.spread.clone(),
        verdict: Verdict::all(figures.iter().map(|f| f.verdict)),
        figures,
    }
}

/// A side's figure: the geometric mean of its runs' (latency), or the mean
/// (the loss).
fn side_figure(runs: &[Run], k: usize) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(|r| r.figures[k]).collect();
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    Some(if Figure::ALL[k] == Figure::Loss {
        v.iter().sum::<f64>() / n
    } else {
        (v.iter().map(|x| x.max(1.0).ln()).sum::<f64>() / n).exp()
    })
}

fn figure(
    fig: Figure,
    a: &[Run],
    b: &[Run],
    k: usize,
    change: Option<interval::Change>,
    min_effect_percent: Option<f64>,
) -> FigureComparison {
    let (fa, fb) = (side_figure(a, k), side_figure(b, k));
    let resolved = a.iter().chain(b).all(|r| r.resolves(fig));
    let is_loss = fig == Figure::Loss;
    let m = min_effect_percent.map(|p| p / 100.0);
    // The loss's margin: m of A's loss, or of 1 % when A lost less.
    let margin = m.map(|m| {
        if is_loss {
            Margin::points(m * fa.unwrap_or(0.0).max(1.0))
        } else {
            Margin::factor(m)
        }
    });
    let verdict = match change {
        Some(c) if resolved => judge::judge(c.low(), c.high(), margin),
        _ => Verdict::Inconclusive,
    };
    let base = fa.unwrap_or(0.0);
    // Latency: a change on the log scale, shown in ns of A and in percent.
    let to_unit = |x: f64| if is_loss { x } else { base * x.exp_m1() };
    let to_pct = |x: f64| (!is_loss && base > 0.0).then(|| 100.0 * x.exp_m1());
    let need = margin.map_or(0.0, |m| m.worse);
    FigureComparison {
        figure: fig,
        unit: fig.unit(),
        a: fa,
        b: fb,
        difference: fa.zip(fb).map(|(x, y)| y - x),
        difference_percent: fa
            .zip(fb)
            .and_then(|(x, y)| (!is_loss && x > 0.0).then(|| 100.0 * (y / x - 1.0))),
        ci_low: change.map(|c| to_unit(c.low())),
        ci_high: change.map(|c| to_unit(c.high())),
        ci_low_percent: change.and_then(|c| to_pct(c.low())),
        ci_high_percent: change.and_then(|c| to_pct(c.high())),
        ci_low_ratio: change.and_then(|c| (!is_loss).then(|| c.low().exp())),
        ci_high_ratio: change.and_then(|c| (!is_loss).then(|| c.high().exp())),
        ci_unbounded: change.is_some_and(|c| !is_loss && c.half_width > UNBOUNDED_RATIO.ln()),
        detectable: change.map(|c| to_unit(need + c.half_width)),
        detectable_percent: change.and_then(|c| to_pct(need + c.half_width)),
        resolved,
        verdict,
        between: change.map(|c| c.between),
        within: change.map(|c| c.within),
        df: change.map(|c| c.df),
    }
}

#[cfg(test)]
mod tests;
