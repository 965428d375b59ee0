//! Did it get slower? The difference between two sets of runs for p50,
//! p90, p99, p99.9, the mean and the loss, each with a confidence interval.
//!
//! Two sources of noise are in a latency figure, and the method must see
//! both (docs/compare.md has the reasoning and the measurements):
//!
//! - **Within a run**, samples are autocorrelated (a slow spell slows many
//!   packets in a row), so the spread of single packets says little. The
//!   run's interval histograms are resampled as a moving-block bootstrap:
//!   blocks of consecutive intervals keep the autocorrelation inside them.
//! - **Between runs** of the same configuration on a shared machine, the
//!   figures differ by more than either run's own noise (thread placement,
//!   caches, the neighbours). Only several runs show this part: with two
//!   or more runs on one side at least, each run is one observation of its
//!   figure, and the difference of the means gets a Student-t interval
//!   (Welch's, or pooled from the side with several runs when the other
//!   has one). Each run's figure carries its own noise, so the run-to-run
//!   spread already holds the within-run part; the within-run bootstrap
//!   only sets a floor under it.
//! - With **one run a side**, nothing measures the run-to-run part. The
//!   within-run interval is reported for what it is (`excludes_zero`), and
//!   a difference is called significant, or a regression, only when
//!   `--min-effect` says how large a change must be: on real A/A pairs the
//!   within-run interval alone excludes zero in most pairs.
//!
//! The six intervals are simultaneous: each is taken at 1 − 0.05/6 (a
//! Bonferroni correction), so that all six hold together with 95 %
//! probability, and an A/A comparison calls a difference in at most 5 %
//! of cases, not in up to 26 %.

use super::SplitMix;
use super::intervals::{Interval, RTT, UNANSWERED};
use hdrhistogram::Histogram;
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

    fn quantile(self) -> Option<f64> {
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

/// What one interval contributes to a resample: its RTT histogram as
/// (index into the run's values, count), and its requests.
#[derive(Debug, Clone, Default)]
struct Slice {
    counts: Vec<(u32, u64)>,
    sent: u64,
    unanswered: u64,
}

/// One run, as the comparison sees it.
#[derive(Debug, Clone)]
pub struct Run {
    /// Where it came from, for the report.
    pub label: String,
    /// Its figures over the whole run.
    pub figures: Figures,
    /// Requests sent and unanswered (for the loss's binomial noise).
    pub sent: u64,
    /// Requests without a timely reply.
    pub unanswered: u64,
    /// The run's distinct RTT values: (highest equivalent, median
    /// equivalent) of each histogram bucket recorded, ascending.
    values: Vec<(u64, u64)>,
    slices: Vec<Slice>,
}

/// Figures of a histogram plus its requests, as the report computes them.
fn figures_of(h: &Histogram<u64>, sent: u64, unanswered: u64) -> Figures {
    let mut f = [None; 6];
    for (i, fig) in Figure::ALL.iter().enumerate() {
        f[i] = match fig.quantile() {
            _ if *fig == Figure::Loss => {
                (sent > 0).then(|| 100.0 * unanswered as f64 / sent as f64)
            }
            _ if h.is_empty() => None,
            Some(q) => Some(h.value_at_quantile(q) as f64),
            None => Some(h.mean()),
        };
    }
    f
}

impl Run {
    /// A run known only by its figures (a JSON report, or a baseline that
    /// keeps no histograms): it counts as one observation, and has no
    /// within-run interval.
    pub fn from_figures(label: &str, figures: Figures, sent: u64, unanswered: u64) -> Self {
        Self {
            label: label.into(),
            figures,
            sent,
            unanswered,
            values: Vec::new(),
            slices: Vec::new(),
        }
    }

    /// A run from its interval histograms, series `prefix` + `rtt` and
    /// `unanswered` (the agent's peers have a prefix).
    pub fn from_intervals(label: &str, intervals: &[Interval], prefix: &str) -> Self {
        let (rtt_tag, lost_tag) = (format!("{prefix}{RTT}"), format!("{prefix}{UNANSWERED}"));
        let mut whole = super::intervals::empty_histogram();
        let (mut sent, mut unanswered) = (0, 0);
        // Per interval: (highest equivalent, median equivalent, count) of
        // each value, then requests sent and unanswered.
        type Raw = (Vec<(u64, u64, u64)>, u64, u64);
        let mut raw: Vec<Raw> = Vec::new();
        for i in intervals {
            let lost = i.get(&lost_tag).map_or(0, Histogram::len);
            let mut counts = Vec::new();
            let mut answered = 0;
            if let Some(h) = i.get(&rtt_tag) {
                let _ = whole.add(h);
                answered = h.len();
                for v in h.iter_recorded() {
                    let at = v.value_iterated_to();
                    counts.push((at, h.median_equivalent(at), v.count_at_value()));
                }
            }
            sent += answered + lost;
            unanswered += lost;
            raw.push((counts, answered + lost, lost));
        }
        let mut values: Vec<(u64, u64)> = raw
            .iter()
            .flat_map(|(c, _, _)| c.iter().map(|&(hi, mid, _)| (hi, mid)))
            .collect();
        values.sort_unstable();
        values.dedup_by_key(|v| v.0);
        let slices = raw
            .into_iter()
            .map(|(counts, sent, unanswered)| Slice {
                counts: counts
                    .into_iter()
                    .map(|(hi, _, n)| {
                        let i = values.partition_point(|v| v.0 < hi);
                        (i as u32, n)
                    })
                    .collect(),
                sent,
                unanswered,
            })
            .collect();
        Self {
            label: label.into(),
            figures: figures_of(&whole, sent, unanswered),
            sent,
            unanswered,
            values,
            slices,
        }
    }

    /// Intervals it can be resampled by.
    pub fn intervals(&self) -> usize {
        self.slices.len()
    }
}

/// Fewest intervals a run needs for a within-run interval.
pub const MIN_INTERVALS: usize = 8;
/// Bootstrap resamples per run.
const RESAMPLES: usize = 2000;

/// The block length for `n` intervals: n^(1/3), the rate that balances a
/// block bootstrap's bias and variance (Hall, Horowitz and Jing, 1995).
fn block_length(n: usize) -> usize {
    ((n as f64).cbrt().round() as usize).clamp(1, n.max(1))
}

impl Run {
    /// The figures of the intervals `pick` names, merged.
    fn figures_of_slices(&self, pick: &[usize], acc: &mut [u64]) -> Figures {
        acc.iter_mut().for_each(|c| *c = 0);
        let (mut sent, mut unanswered) = (0, 0);
        for &i in pick {
            let s = &self.slices[i];
            for &(v, n) in &s.counts {
                acc[v as usize] += n;
            }
            sent += s.sent;
            unanswered += s.unanswered;
        }
        let total: u64 = acc.iter().sum();
        let mut f = [None; 6];
        f[5] = (sent > 0).then(|| 100.0 * unanswered as f64 / sent as f64);
        if total == 0 {
            return f;
        }
        let ranks = [0.5, 0.9, 0.99, 0.999].map(|q: f64| ((q * total as f64).ceil() as u64).max(1));
        let (mut seen, mut next, mut sum) = (0u64, 0usize, 0f64);
        for (i, &c) in acc.iter().enumerate() {
            seen += c;
            sum += c as f64 * self.values[i].1 as f64;
            while next < 4 && seen >= ranks[next] {
                f[next] = Some(self.values[i].0 as f64);
                next += 1;
            }
        }
        f[4] = Some(sum / total as f64);
        f
    }

    /// Moving-block bootstrap replicates of the figures, or none when the
    /// run has too few intervals.
    fn bootstrap(&self, seed: u64) -> Vec<Figures> {
        let n = self.slices.len();
        if n < MIN_INTERVALS {
            return Vec::new();
        }
        let len = block_length(n);
        let starts = n - len + 1;
        let blocks = n.div_ceil(len);
        let mut rng = SplitMix::new(seed);
        let mut acc = vec![0u64; self.values.len()];
        let mut pick = Vec::with_capacity(blocks * len);
        (0..RESAMPLES)
            .map(|_| {
                pick.clear();
                for _ in 0..blocks {
                    let s = rng.below(starts);
                    pick.extend(s..s + len);
                }
                pick.truncate(n);
                self.figures_of_slices(&pick, &mut acc)
            })
            .collect()
    }
}

/// How a figure's interval was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Several runs on a side: Student t over the runs' figures.
    RunToRun,
    /// One run a side: the block bootstrap within the two runs. It cannot
    /// see run-to-run variation.
    WithinRun,
    /// One run a side, too few intervals to resample: no interval.
    None,
}

/// One figure, B against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureComparison {
    /// Which.
    pub figure: Figure,
    /// `ns` or `percent`.
    pub unit: &'static str,
    /// A's figure (the mean over its runs).
    pub a: Option<f64>,
    /// B's.
    pub b: Option<f64>,
    /// B − A (positive: B is slower, or loses more).
    pub difference: Option<f64>,
    /// The difference in percent of A.
    pub difference_percent: Option<f64>,
    /// The interval's ends, when there is one.
    pub ci_low: Option<f64>,
    /// Its upper end.
    pub ci_high: Option<f64>,
    /// How the interval was found.
    pub method: Method,
    /// The interval excludes zero: a difference beyond the noise the
    /// method sees (one run a side: only the noise within the two runs).
    pub excludes_zero: bool,
    /// A difference the method can call: with several runs a side, the
    /// interval excludes zero; with one run a side, it excludes zero and
    /// the change is beyond `--min-effect` (without it, never: an A/A pair
    /// of runs differs beyond its own noise in most pairs, BENCHMARKS.md).
    pub significant: bool,
    /// Significant, worse, and larger than `--min-effect`: what the exit
    /// status and `--fail-on-regression` act on.
    pub regression: bool,
    /// The plain sentence.
    pub sentence: String,
}

/// B against A, every figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Runs on A's side, and B's.
    pub runs_a: usize,
    /// Runs on B's side.
    pub runs_b: usize,
    /// The confidence the six intervals hold with together.
    pub confidence: f64,
    /// `--min-effect`, percent of A.
    pub min_effect_percent: Option<f64>,
    /// Each figure.
    pub figures: Vec<FigureComparison>,
    /// Any figure regressed.
    pub regression: bool,
    /// What the method can and cannot say about these inputs.
    pub note: String,
}

/// The overall confidence.
pub const CONFIDENCE: f64 = 0.95;

/// Compares B with A: several runs a side if there are, else the two runs'
/// intervals. `min_effect_percent`: the smallest worsening called a
/// regression.
pub fn compare(a: &[Run], b: &[Run], min_effect_percent: Option<f64>) -> Comparison {
    let alpha = (1.0 - CONFIDENCE) / Figure::ALL.len() as f64;
    let several = a.len() + b.len() >= 3 && !a.is_empty() && !b.is_empty();
    let boots = |runs: &[Run], side: u64| -> Vec<Vec<Figures>> {
        runs.iter()
            .enumerate()
            .map(|(i, r)| r.bootstrap(0x5EED ^ (side << 32) ^ i as u64))
            .collect()
    };
    let (ba, bb) = (boots(a, 1), boots(b, 2));
    let figures: Vec<FigureComparison> = Figure::ALL
        .iter()
        .enumerate()
        .map(|(k, &fig)| {
            let (lo_hi, method) = if several {
                run_to_run(a, b, &ba, &bb, k, alpha)
            } else {
                within_run(&ba, &bb, k, alpha)
            };
            finish_figure(fig, a, b, k, lo_hi, method, min_effect_percent)
        })
        .collect();
    let note = if several {
        "several runs a side: the intervals hold run-to-run variation (Student t over the runs' figures)".to_string()
    } else if figures.iter().any(|f| f.method == Method::WithinRun) {
        "one run a side: the intervals hold only the noise within these two runs (a block bootstrap over their intervals); one run a side cannot separate a difference from run-to-run variation, so nothing is called significant, nor a regression, without --min-effect; several runs a side (A1 A2 A3 -- B1 B2 B3) measure that variation".to_string()
    } else {
        format!(
            "one run a side, without {MIN_INTERVALS} or more intervals each: no interval; a regression is judged by --min-effect alone"
        )
    };
    Comparison {
        runs_a: a.len(),
        runs_b: b.len(),
        confidence: CONFIDENCE,
        min_effect_percent,
        regression: figures.iter().any(|f| f.regression),
        figures,
        note,
    }
}

fn mean_of(runs: &[Run], k: usize) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(|r| r.figures[k]).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn finish_figure(
    fig: Figure,
    a: &[Run],
    b: &[Run],
    k: usize,
    lo_hi: Option<(f64, f64)>,
    method: Method,
    min_effect: Option<f64>,
) -> FigureComparison {
    let (ma, mb) = (mean_of(a, k), mean_of(b, k));
    let difference = ma.zip(mb).map(|(x, y)| y - x);
    let difference_percent = difference
        .zip(ma)
        .and_then(|(d, x)| (x != 0.0).then(|| 100.0 * d / x));
    let method = if lo_hi.is_none() && method != Method::RunToRun {
        Method::None
    } else {
        method
    };
    let excludes_zero = lo_hi.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0);
    let big_enough = |need: f64| difference_percent.is_some_and(|p| p > need);
    let significant = excludes_zero
        && (method == Method::RunToRun
            || min_effect.is_some_and(|m| difference_percent.is_some_and(|p| p.abs() > m)));
    let worse = difference.is_some_and(|d| d > 0.0);
    let regression = worse
        && match (method, min_effect) {
            (Method::RunToRun, m) => significant && big_enough(m.unwrap_or(0.0)),
            (Method::WithinRun, Some(m)) => significant && big_enough(m),
            (Method::None, Some(m)) => big_enough(m),
            (_, None) => false,
        };
    let mut c = FigureComparison {
        figure: fig,
        unit: fig.unit(),
        a: ma,
        b: mb,
        difference,
        difference_percent,
        ci_low: lo_hi.map(|x| x.0),
        ci_high: lo_hi.map(|x| x.1),
        method,
        excludes_zero,
        significant,
        regression,
        sentence: String::new(),
    };
    c.sentence = sentence(&c);
    c
}

/// Sample mean and variance.
fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var)
}

/// The variance of a run's figure within it: from its bootstrap, or (the
/// loss, with no intervals) binomial.
fn within_var(run: &Run, boot: &[Figures], k: usize) -> f64 {
    let v: Vec<f64> = boot.iter().filter_map(|f| f[k]).collect();
    if v.len() > 1 {
        return mean_var(&v).1;
    }
    if Figure::ALL[k] == Figure::Loss && run.sent > 0 {
        let p = run.unanswered as f64 / run.sent as f64;
        // A run with no loss still leaves room for some (rule of three).
        let p = p.max(3.0 / run.sent as f64);
        return (100.0 * 100.0) * p * (1.0 - p) / run.sent as f64;
    }
    0.0
}

fn run_to_run(
    a: &[Run],
    b: &[Run],
    ba: &[Vec<Figures>],
    bb: &[Vec<Figures>],
    k: usize,
    alpha: f64,
) -> (Option<(f64, f64)>, Method) {
    let xa: Vec<f64> = a.iter().filter_map(|r| r.figures[k]).collect();
    let xb: Vec<f64> = b.iter().filter_map(|r| r.figures[k]).collect();
    if xa.is_empty() || xb.is_empty() || xa.len() + xb.len() < 3 {
        return (None, Method::RunToRun);
    }
    let ((ma, va), (mb, vb)) = (mean_var(&xa), mean_var(&xb));
    let (na, nb) = (xa.len() as f64, xb.len() as f64);
    let (se2, df) = if xa.len() >= 2 && xb.len() >= 2 {
        let (ga, gb) = (va / na, vb / nb);
        let se2 = ga + gb;
        let den = ga * ga / (na - 1.0) + gb * gb / (nb - 1.0);
        let df = if den > 0.0 {
            se2 * se2 / den
        } else {
            na + nb - 2.0
        };
        (se2, df)
    } else {
        // One side has a single run: the other side's spread stands for
        // both (a prediction interval for the single run).
        let (v, n) = if xa.len() >= 2 { (va, na) } else { (vb, nb) };
        (v * (1.0 / na + 1.0 / nb), n - 1.0)
    };
    let within = |runs: &[Run], boots: &[Vec<Figures>]| -> f64 {
        let v: Vec<f64> = runs
            .iter()
            .zip(boots)
            .map(|(r, bt)| within_var(r, bt, k))
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let floor = within(a, ba) / na + within(b, bb) / nb;
    let se = se2.max(floor).sqrt();
    let d = mb - ma;
    let t = t_quantile(1.0 - alpha / 2.0, df.max(1.0));
    (Some((d - t * se, d + t * se)), Method::RunToRun)
}

fn within_run(
    ba: &[Vec<Figures>],
    bb: &[Vec<Figures>],
    k: usize,
    alpha: f64,
) -> (Option<(f64, f64)>, Method) {
    let (Some(ra), Some(rb)) = (ba.first(), bb.first()) else {
        return (None, Method::WithinRun);
    };
    let mut d: Vec<f64> = ra
        .iter()
        .zip(rb)
        .filter_map(|(x, y)| Some(y[k]? - x[k]?))
        .collect();
    if d.len() < RESAMPLES / 2 {
        return (None, Method::WithinRun);
    }
    d.sort_by(f64::total_cmp);
    let at = |p: f64| d[((p * (d.len() - 1) as f64).round() as usize).min(d.len() - 1)];
    (
        Some((at(alpha / 2.0), at(1.0 - alpha / 2.0))),
        Method::WithinRun,
    )
}

/// A time of either sign: `−2.0 µs`, `3.1 µs` (no plus: a bound, not a
/// change).
fn signed_ns(v: f64) -> String {
    let text = synapse_units::signed_ns(v);
    text.strip_prefix('+').map_or(text.clone(), str::to_string)
}

/// `12.0 µs`, or `0.50 points` for the loss.
fn amount(fig: Figure, v: f64) -> String {
    if fig == Figure::Loss {
        format!("{v:.2} points")
    } else {
        signed_ns(v)
    }
}

fn interval_text(c: &FigureComparison) -> Option<String> {
    let (lo, hi) = c.ci_low.zip(c.ci_high)?;
    let pct = (CONFIDENCE * 100.0).round();
    Some(if c.figure == Figure::Loss {
        let bound = |v: f64| {
            let text = synapse_units::signed(v, 2);
            text.strip_prefix('+').map_or(text.clone(), str::to_string)
        };
        format!("{pct} % CI {} to {} points", bound(lo), bound(hi))
    } else {
        format!("{pct} % CI {} to {}", signed_ns(lo), signed_ns(hi))
    })
}

/// "p99 is 12.0 µs slower, 95 % CI 8.0 µs to 16.0 µs", or "p99: no
/// significant difference (…)".
fn sentence(c: &FigureComparison) -> String {
    let name = c.figure.name();
    let Some(d) = c.difference else {
        return format!("{name}: not measured on both sides");
    };
    let (worse, better) = if c.figure == Figure::Loss {
        ("higher", "lower")
    } else {
        ("slower", "faster")
    };
    let way = if d > 0.0 { worse } else { better };
    let ci = interval_text(c);
    match (c.method, ci) {
        (_, Some(ci)) if !c.excludes_zero => {
            format!(
                "{name}: no significant difference ({}{}, {ci})",
                if d > 0.0 { "+" } else { "" },
                amount(c.figure, d)
            )
        }
        (Method::WithinRun, Some(ci)) if !c.significant => format!(
            "{name} is {} {way}, {ci} within these two runs; one run a side cannot separate this from run-to-run variation",
            amount(c.figure, d.abs())
        ),
        (Method::WithinRun, Some(ci)) => format!(
            "{name} is {} {way}, {ci} within these two runs, beyond --min-effect",
            amount(c.figure, d.abs())
        ),
        (_, Some(ci)) => format!("{name} is {} {way}, {ci}", amount(c.figure, d.abs())),
        (_, None) if d == 0.0 => format!("{name}: no difference (no interval)"),
        (_, None) => format!(
            "{name} is {} {way} (no interval: too few intervals or runs to tell noise from change)",
            amount(c.figure, d.abs())
        ),
    }
}

/// The quantile `p` of Student's t with `df` degrees of freedom, by
/// bisection on its distribution function.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_cdf(hi, df) < p && hi < 1e12 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Student's t distribution function at `t ≥ 0`.
fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    1.0 - 0.5 * incomplete_beta(x, df / 2.0, 0.5)
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos, g = 7, n = 9.
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b).
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

/// Lentz's continued fraction for the incomplete beta function.
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
    d = if d.abs() < TINY { TINY } else { d };
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            d = if d.abs() < TINY { TINY } else { d };
            c = 1.0 + num / c;
            c = if c.abs() < TINY { TINY } else { c };
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
#[path = "significance_tests.rs"]
mod tests;
