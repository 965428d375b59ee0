//! One run as the comparison sees it: its six figures, its requests, and
//! (when it kept them) its slices of consecutive requests, which the
//! moving-block bootstrap resamples for the run's own noise.

use super::bootstrap::{SplitMix, block_length, resample};
use super::{Figure, Figures};
use crate::intervals::{Interval, empty_histogram};
use crate::slices::Slice;

/// Fewest slices a run needs for a within-run interval.
pub const MIN_SLICES: usize = 8;
/// Bootstrap resamples per run: enough for a variance (its relative error
/// is about √(2/R), 6 %).
const RESAMPLES: usize = 500;

/// A slice as indices into the run's distinct values.
#[derive(Debug, Clone, Default)]
struct Counts {
    counts: Vec<(u32, u64)>,
    unanswered: u64,
}

/// One run, as the comparison sees it.
#[derive(Debug, Clone)]
pub struct Run {
    /// Where it came from, for the report.
    pub label: String,
    /// Its figures over the whole run.
    pub figures: Figures,
    /// Requests sent.
    pub sent: u64,
    /// Requests without a timely reply.
    pub unanswered: u64,
    /// The run's distinct RTT values: (highest equivalent, median
    /// equivalent) of each histogram bucket recorded, ascending.
    values: Vec<(u64, u64)>,
    slices: Vec<Counts>,
    /// Slices per bootstrap block, chosen from the run's own dependence.
    block: usize,
}

impl Run {
    /// A run known only by its figures (a JSON report without its slices,
    /// a baseline that keeps no runs): one observation of each figure, with
    /// no within-run noise known.
    pub fn from_figures(label: &str, figures: Figures, sent: u64, unanswered: u64) -> Self {
        Self {
            label: label.into(),
            figures,
            sent,
            unanswered,
            values: Vec::new(),
            slices: Vec::new(),
            block: 1,
        }
    }

    /// A run from its slices of consecutive requests.
    pub fn from_slices(label: &str, slices: &[Slice]) -> Self {
        let buckets = empty_histogram();
        let mut values: Vec<(u64, u64)> = slices
            .iter()
            .flat_map(|s| {
                s.rtt
                    .iter()
                    .map(|&(v, _)| (v, buckets.median_equivalent(v)))
            })
            .collect();
        values.sort_unstable();
        values.dedup_by_key(|v| v.0);
        let counts = slices
            .iter()
            .map(|s| Counts {
                counts: s
                    .rtt
                    .iter()
                    .map(|&(v, n)| (values.partition_point(|x| x.0 < v) as u32, n))
                    .collect(),
                unanswered: s.unanswered,
            })
            .collect();
        let mut run = Self {
            label: label.into(),
            figures: [None; 6],
            sent: slices.iter().map(Slice::requests).sum(),
            unanswered: slices.iter().map(|s| s.unanswered).sum(),
            values,
            slices: counts,
            block: 1,
        };
        let all: Vec<usize> = (0..run.slices.len()).collect();
        run.figures = run.figures_of(&all, &mut vec![0; run.values.len()]);
        run.block = block_length(&run.slice_levels());
        run
    }

    /// Each slice's mean ln RTT (a slice without replies repeats the one
    /// before): the series whose dependence sets the block length.
    fn slice_levels(&self) -> Vec<f64> {
        let mut last = 0.0;
        self.slices
            .iter()
            .map(|s| {
                let n: u64 = s.counts.iter().map(|&(_, c)| c).sum();
                if n > 0 {
                    let sum: f64 = s
                        .counts
                        .iter()
                        .map(|&(v, c)| c as f64 * (self.values[v as usize].1.max(1) as f64).ln())
                        .sum();
                    last = sum / n as f64;
                }
                last
            })
            .collect()
    }

    /// Slices per bootstrap block.
    pub fn block(&self) -> usize {
        self.block
    }

    /// Degrees of freedom of the bootstrap's variance: about as many as
    /// there are whole blocks in the run, less one.
    pub fn within_df(&self) -> f64 {
        ((self.slices.len() / self.block.max(1)) as f64 - 1.0).max(1.0)
    }

    /// A run from its interval histograms, series `prefix` + `rtt` and
    /// `unanswered` (an agent's peers have a prefix): each interval is a
    /// slice.
    pub fn from_intervals(label: &str, intervals: &[Interval], prefix: &str) -> Self {
        let slices: Vec<Slice> = intervals
            .iter()
            .map(|i| Slice::of_interval(i, prefix))
            .collect();
        Self::from_slices(label, &slices)
    }

    /// Slices it can be resampled by.
    pub fn slices(&self) -> usize {
        self.slices.len()
    }

    /// Replies: the samples its RTT figures rest on.
    pub fn replies(&self) -> u64 {
        self.sent.saturating_sub(self.unanswered)
    }

    /// Whether figure `f` rests on enough samples: for a percentile, at
    /// least [`BEYOND`] of them beyond it (p99.9 of 2,000 is the maximum).
    pub fn resolves(&self, f: Figure) -> bool {
        let n = self.replies();
        match f.quantile() {
            Some(q) => beyond(n, q) >= BEYOND,
            None if f == Figure::Loss => self.sent > 0,
            None => n >= BEYOND,
        }
    }

    /// The figures of the slices `pick` names, merged.
    fn figures_of(&self, pick: &[usize], acc: &mut [u64]) -> Figures {
        acc.iter_mut().for_each(|c| *c = 0);
        let mut unanswered = 0;
        for &i in pick {
            let s = &self.slices[i];
            for &(v, n) in &s.counts {
                acc[v as usize] += n;
            }
            unanswered += s.unanswered;
        }
        let total: u64 = acc.iter().sum();
        let sent = total + unanswered;
        let mut f = [None; 6];
        f[5] = (sent > 0).then(|| 100.0 * unanswered as f64 / sent as f64);
        if total == 0 {
            return f;
        }
        let quantiles = [0.5, 0.9, 0.99, 0.999];
        let ranks = quantiles.map(|q: f64| rank(total, q));
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

    /// Moving-block bootstrap replicates of the figures; none when the run
    /// has fewer than [`MIN_SLICES`] slices.
    pub fn replicates(&self, seed: u64) -> Vec<Figures> {
        let n = self.slices.len();
        if n < MIN_SLICES {
            return Vec::new();
        }
        let mut rng = SplitMix::new(seed);
        let mut acc = vec![0u64; self.values.len()];
        let mut pick = Vec::with_capacity(n);
        (0..RESAMPLES)
            .map(|_| {
                resample(n, self.block, &mut rng, &mut pick);
                self.figures_of(&pick, &mut acc)
            })
            .collect()
    }

    /// The value at quantile `q` of the whole run, and the moving-block
    /// bootstrap's replicates of it (none with too few slices).
    pub fn quantile_replicates(&self, q: f64, seed: u64) -> Vec<f64> {
        let n = self.slices.len();
        if n < MIN_SLICES || self.values.is_empty() {
            return Vec::new();
        }
        let mut rng = SplitMix::new(seed);
        let mut acc = vec![0u64; self.values.len()];
        let mut pick = Vec::with_capacity(n);
        let mut out = Vec::with_capacity(RESAMPLES);
        for _ in 0..RESAMPLES {
            resample(n, self.block, &mut rng, &mut pick);
            acc.iter_mut().for_each(|c| *c = 0);
            for &i in &pick {
                for &(v, c) in &self.slices[i].counts {
                    acc[v as usize] += c;
                }
            }
            let total: u64 = acc.iter().sum();
            if total == 0 {
                continue;
            }
            let want = rank(total, q);
            let mut seen = 0;
            for (i, &c) in acc.iter().enumerate() {
                seen += c;
                if seen >= want {
                    out.push(self.values[i].0 as f64);
                    break;
                }
            }
        }
        out
    }
}

/// Samples a percentile must have beyond it to be resolved.
pub const BEYOND: u64 = 10;

/// The rank (1-based) of quantile `q` among `n` samples.
pub fn rank(n: u64, q: f64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// Samples beyond quantile `q` of `n`.
pub fn beyond(n: u64, q: f64) -> u64 {
    if n == 0 {
        return 0;
    }
    n - rank(n, q)
}
