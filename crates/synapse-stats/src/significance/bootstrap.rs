//! The moving-block bootstrap's draws: blocks of consecutive slices,
//! chosen with replacement, so that a slow spell (many slow requests in a
//! row) stays together in a resample as it was in the run.
//!
//! How long a block must be depends on how long the run's spells last, so
//! it is chosen from the run itself: Politis and White's automatic block
//! length (2004, with the correction of Patton, Politis and White 2009),
//! from the autocorrelation of the slices' mean log RTT.

pub use crate::SplitMix;

/// The block length for a series (one value per slice): Politis and
/// White's estimate of the optimal length for the moving-block (circular)
/// bootstrap of a mean, doubled (for an interval, a block too short to hold
/// a spell biases the variance low, which costs coverage; the fewer blocks
/// are paid for in degrees of freedom), at least n^(1/3) and at most a
/// third of the series.
pub fn block_length(series: &[f64]) -> usize {
    let n = series.len();
    if n < 4 {
        return n.max(1);
    }
    let floor = ((n as f64).cbrt().round() as usize).max(1);
    let cap = (n / 3).max(1);
    let estimate = politis_white(series).map_or(floor, |b| (2.0 * b).round() as usize);
    estimate.clamp(floor.min(cap), cap)
}

/// Autocovariances of `x` at lags `0..=max_lag`.
fn autocovariances(x: &[f64], max_lag: usize) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    (0..=max_lag)
        .map(|k| {
            x.iter()
                .zip(&x[k..])
                .map(|(a, b)| (a - mean) * (b - mean))
                .sum::<f64>()
                / n
        })
        .collect()
}

/// b_opt = (2 G² / D)^(1/3) n^(1/3), D = (4/3) ĝ(0)² for the circular /
/// moving-block bootstrap; `None` for a constant series.
fn politis_white(x: &[f64]) -> Option<f64> {
    let n = x.len();
    let max_lag = (n / 2).min(2 * (n as f64).sqrt().ceil() as usize + 10);
    let r = autocovariances(x, max_lag);
    if r[0] <= 0.0 {
        return None;
    }
    let rho = |k: usize| r[k] / r[0];
    // The first lag after which K_n correlations in a row are all small.
    let kn = ((n as f64).log10().sqrt().ceil() as usize).max(5);
    let bound = 2.0 * ((n as f64).log10() / n as f64).sqrt();
    let m_hat = (0..max_lag)
        .find(|&m| (1..=kn).all(|k| m + k > max_lag || rho(m + k).abs() < bound))
        .unwrap_or(max_lag);
    let big_m = (2 * m_hat).clamp(1, max_lag);
    let flat_top = |t: f64| {
        let t = t.abs();
        if t <= 0.5 {
            1.0
        } else if t <= 1.0 {
            2.0 * (1.0 - t)
        } else {
            0.0
        }
    };
    let (mut g, mut spectral) = (0.0, r[0]);
    for (k, &rk) in r.iter().enumerate().take(big_m + 1).skip(1) {
        let w = flat_top(k as f64 / big_m as f64);
        g += 2.0 * w * k as f64 * rk;
        spectral += 2.0 * w * rk;
    }
    let d = 4.0 / 3.0 * spectral * spectral;
    (d > 0.0).then(|| (2.0 * g * g / d).cbrt() * (n as f64).cbrt())
}

/// Fills `pick` with one resample of `n` slice indices: blocks of `len`
/// consecutive slices, starting anywhere, until there are `n`.
pub fn resample(n: usize, len: usize, rng: &mut SplitMix, pick: &mut Vec<usize>) {
    pick.clear();
    if n == 0 {
        return;
    }
    let len = len.clamp(1, n);
    let starts = n - len + 1;
    while pick.len() < n {
        let s = rng.below(starts);
        pick.extend(s..s + len);
    }
    pick.truncate(n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resample_is_whole_blocks_of_neighbours() {
        let mut rng = SplitMix::new(7);
        let mut pick = Vec::new();
        resample(64, 4, &mut rng, &mut pick);
        assert_eq!(pick.len(), 64);
        for block in pick.chunks(4) {
            assert!(block.windows(2).all(|w| w[1] == w[0] + 1), "{block:?}");
            assert!(block[3] < 64);
        }
        let mut again = Vec::new();
        resample(64, 4, &mut SplitMix::new(7), &mut again);
        assert_eq!(pick, again, "seeded");
    }

    #[test]
    fn blocks_grow_with_the_series_own_dependence() {
        let mut rng = SplitMix::new(3);
        let white: Vec<f64> = (0..128).map(|_| rng.unit()).collect();
        let mut level = 0.0;
        let ar: Vec<f64> = (0..128)
            .map(|_| {
                level = 0.9 * level + rng.unit() - 0.5;
                level
            })
            .collect();
        let (b_white, b_ar) = (block_length(&white), block_length(&ar));
        assert_eq!(b_white, 5, "independent slices: n^(1/3)");
        assert!(b_ar > 2 * b_white, "AR(0.9): {b_ar}");
        assert!(b_ar <= 128 / 3);
        assert_eq!(block_length(&[1.0; 20]), 3, "constant: n^(1/3)");
    }
}
