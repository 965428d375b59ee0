//! The interval of one figure's change, B against A.
//!
//! Latency figures are compared on the log scale (a change is a factor):
//! each run's figure is one observation y = ln(figure) = μ + b + e, where b
//! is the run's own draw of the run-to-run variation (variance τ²) and e
//! its within-run noise (variance w, measured by the moving-block bootstrap
//! of its slices). Then
//!
//!   ȳ_B − ȳ_A  ±  t(1 − α/2, df) · √( τ̂² (1/n_A + 1/n_B) + w̄_A/n_A + w̄_B/n_B )
//!
//! where τ̂² pools what the runs show between them (their spread within
//! each side, less their own noise) with the prior spread (this host's, or
//! the assumed one): (d₀τ₀² + d·τ_d²) / (d₀ + d), df = d₀ + d (Smyth 2004).
//! With one run a side d = 0 and the prior alone stands for τ².
//!
//! The loss is compared in percentage points, additively: its within-run
//! noise from the same bootstrap (a binomial floor with a rule-of-three
//! rate when nothing was lost), its run-to-run part from the runs when a
//! side has several. No prior is held for the loss.

use super::run::Run;
use super::spread::Spread;
use super::{Figure, Figures};
use serde::Serialize;

/// Where the run-to-run part came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Between {
    /// The runs compared (two or more on a side), pooled with the prior.
    Runs,
    /// The prior alone: one run a side.
    Prior,
    /// Not modelled (the loss, one run a side).
    None,
}

/// Where the within-run part came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Within {
    /// The moving-block bootstrap over the runs' slices.
    BlockBootstrap,
    /// A binomial variance (the loss of runs without slices).
    Binomial,
    /// Not known: runs known by their figures only.
    None,
}

/// One figure's change and its interval, on the scale it is compared on
/// (ln for latency, points for the loss).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// B's mean minus A's.
    pub estimate: f64,
    /// The interval's half width.
    pub half_width: f64,
    /// Degrees of freedom of the t quantile used.
    pub df: f64,
    /// How the run-to-run part was found.
    pub between: Between,
    /// How the within-run part was found.
    pub within: Within,
}

impl Change {
    /// The interval's lower end.
    pub fn low(&self) -> f64 {
        self.estimate - self.half_width
    }

    /// Its upper end.
    pub fn high(&self) -> f64 {
        self.estimate + self.half_width
    }
}

/// A side's runs and their bootstrap replicates.
#[derive(Debug)]
pub struct Side<'a> {
    /// The runs.
    pub runs: &'a [Run],
    /// Each run's replicates (empty: not resampled).
    pub boots: &'a [Vec<Figures>],
}

fn mean_var(v: &[f64]) -> (f64, f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let ss = v.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    (m, ss, n)
}

/// One run's figure on the comparison's scale, with its within-run
/// variance (`None`: not known) and the degrees of freedom of that.
struct Observation {
    y: f64,
    w: Option<f64>,
    df: f64,
}

/// Figure `k` of each run on the comparison's scale.
fn observations(side: &Side, k: usize) -> Vec<Observation> {
    let log = Figure::ALL[k] != Figure::Loss;
    let scale = |x: f64| if log { x.max(1.0).ln() } else { x };
    side.runs
        .iter()
        .zip(side.boots)
        .filter_map(|(r, boot)| {
            let y = scale(r.figures[k]?);
            let reps: Vec<f64> = boot.iter().filter_map(|f| f[k]).map(scale).collect();
            let mut w = (reps.len() > 1).then(|| {
                let (_, ss, n) = mean_var(&reps);
                ss / (n - 1.0)
            });
            let mut df = r.within_df();
            if !log {
                let binomial = binomial_var(r);
                if w.is_none_or(|w| w < binomial) {
                    df = f64::INFINITY;
                }
                w = Some(w.unwrap_or(0.0).max(binomial));
            }
            Some(Observation { y, w, df })
        })
        .collect()
}

/// The loss's binomial variance in points² (a run that lost nothing still
/// leaves room for some: the rule of three).
fn binomial_var(r: &Run) -> f64 {
    if r.sent == 0 {
        return 0.0;
    }
    let n = r.sent as f64;
    let p = (r.unanswered as f64 / n).max(3.0 / n).min(1.0);
    1e4 * p * (1.0 - p) / n
}

/// The interval of figure `k`'s change at two-sided level `alpha`; `None`
/// when a side has no value of it.
pub fn change(a: &Side, b: &Side, k: usize, prior: &Spread, alpha: f64) -> Option<Change> {
    let (oa, ob) = (observations(a, k), observations(b, k));
    if oa.is_empty() || ob.is_empty() {
        return None;
    }
    let ya: Vec<f64> = oa.iter().map(|o| o.y).collect();
    let yb: Vec<f64> = ob.iter().map(|o| o.y).collect();
    let ((ma, ssa, na), (mb, ssb, nb)) = (mean_var(&ya), mean_var(&yb));
    let known = |o: &[Observation]| o.iter().all(|x| x.w.is_some());
    let avg_w =
        |o: &[Observation]| o.iter().map(|x| x.w.unwrap_or(0.0)).sum::<f64>() / o.len() as f64;
    let sum_df = |o: &[Observation]| o.iter().map(|x| x.df).sum::<f64>();
    let (wa, wb) = (avg_w(&oa), avg_w(&ob));
    let within = match (known(&oa) && known(&ob), Figure::ALL[k]) {
        (true, Figure::Loss) if a.boots.iter().chain(b.boots).any(|x| !x.is_empty()) => {
            Within::BlockBootstrap
        }
        (true, Figure::Loss) => Within::Binomial,
        (true, _) => Within::BlockBootstrap,
        (false, _) => Within::None,
    };
    let d_data = (na - 1.0) + (nb - 1.0);
    let is_loss = Figure::ALL[k] == Figure::Loss;
    let (prior_var, d0) = if is_loss {
        (0.0, 0.0)
    } else {
        (prior.log_sd[k].powi(2), prior.df)
    };
    let (tau2, df, between) = if d_data > 0.0 {
        // The spread between a side's runs holds their own noise too.
        let pooled_w = (wa * (na - 1.0) + wb * (nb - 1.0)) / d_data;
        let tau_d = ((ssa + ssb) / d_data - pooled_w).max(0.0);
        let tau2 = (d0 * prior_var + d_data * tau_d) / (d0 + d_data);
        (tau2, d0 + d_data, Between::Runs)
    } else if is_loss {
        (0.0, f64::INFINITY, Between::None)
    } else {
        (prior_var, d0, Between::Prior)
    };
    // Welch-Satterthwaite: the degrees of freedom of the three parts'
    // sum, each estimated with its own.
    let parts = [
        (tau2 * (1.0 / na + 1.0 / nb), df),
        (wa / na, sum_df(&oa)),
        (wb / nb, sum_df(&ob)),
    ];
    let var: f64 = parts.iter().map(|p| p.0).sum();
    let spread: f64 = parts
        .iter()
        .filter(|p| p.0 > 0.0)
        .map(|p| p.0 * p.0 / p.1)
        .sum();
    let df = if spread > 0.0 { var * var / spread } else { df };
    let t = super::special::t_quantile(1.0 - alpha / 2.0, df.min(1e9));
    let se = var.sqrt();
    Some(Change {
        estimate: mb - ma,
        half_width: t * se,
        df,
        between,
        within,
    })
}
