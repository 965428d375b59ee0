//! The statistics the lab judges Synapse's figures by: what netem's delay
//! tables make of a delay (exactly as the kernel computes it), that delay
//! added to a reference measured beside it, confidence intervals for
//! percentiles and for counts, and the normal quantile they need.

use std::path::PathBuf;

/// netem's table scale (`NETEM_DIST_SCALE` in net/sched/sch_netem.c).
const SCALE: i64 = 8192;

/// How confident the lab is, as a whole, that a failed statistical check
/// is Synapse's fault and not chance: every interval is Bonferroni-widened
/// so that all `FAMILY` of them hold together with this probability.
pub const FAMILY_CONFIDENCE: f64 = 0.99;
/// The statistical checks in the whole lab (an upper bound; more would
/// narrow each interval).
pub const FAMILY: f64 = 64.0;

/// The two-sided normal quantile for one check of the family.
pub fn z() -> f64 {
    inverse_normal(1.0 - (1.0 - FAMILY_CONFIDENCE) / (2.0 * FAMILY))
}

/// The confidence of one check, as a percentage, for the report.
pub fn per_check_confidence() -> f64 {
    100.0 * (1.0 - (1.0 - FAMILY_CONFIDENCE) / FAMILY)
}

/// A delay distribution netem was told: `tc qdisc … delay MU SIGMA
/// distribution NAME` (or none: uniform).
#[derive(Debug, Clone)]
pub struct Netem {
    /// Every delay netem can draw, ns, each equally likely, sorted.
    pub delays: Vec<i64>,
}

impl Netem {
    /// `distribution NAME`: netem draws a table entry `t` uniformly (the
    /// table has 4096 entries, which divide 2^32) and delays by
    /// `tabledist(mu, sigma, t)` (the kernel's integer arithmetic, below).
    pub fn table(name: &str, mu: i64, sigma: i64) -> Netem {
        let table = load_table(name);
        let mut delays: Vec<i64> = table.iter().map(|&t| tabledist(mu, sigma, t)).collect();
        delays.sort_unstable();
        Netem { delays }
    }

    /// No table: `((rnd % (2 sigma)) + mu) - sigma`, uniform on
    /// [mu − sigma, mu + sigma) (4096 evenly spaced points stand for it).
    pub fn uniform(mu: i64, sigma: i64) -> Netem {
        let n = 4096;
        let delays = (0..n).map(|i| mu - sigma + 2 * sigma * i / n).collect();
        Netem { delays }
    }
}

/// `tabledist()` of net/sched/sch_netem.c for a table entry `t`, with C's
/// truncating division.
pub fn tabledist(mu: i64, sigma: i64, t: i64) -> i64 {
    let mut x = (sigma % SCALE) * t;
    if x >= 0 {
        x += SCALE / 2;
    } else {
        x -= SCALE / 2;
    }
    x / SCALE + (sigma / SCALE) * t + mu
}

/// iproute2's copy of netem's tables, wherever this system keeps them.
pub fn table_path(name: &str) -> PathBuf {
    let dirs = [
        "/usr/lib/x86_64-linux-gnu/tc",
        "/usr/lib/aarch64-linux-gnu/tc",
        "/usr/lib64/tc",
        "/usr/lib/tc",
        "/lib/tc",
    ];
    dirs.iter()
        .map(|d| PathBuf::from(d).join(format!("{name}.dist")))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no {name}.dist in {dirs:?} (iproute2 ships them)"))
}

fn load_table(name: &str) -> Vec<i64> {
    let text = std::fs::read_to_string(table_path(name)).unwrap();
    let t: Vec<i64> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(str::split_whitespace)
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(
        t.len(),
        4096,
        "{name}.dist: netem's tables have 4096 entries"
    );
    t
}

/// A reference flow's per-packet values with a netem delay added to each:
/// the distribution an impaired flow measured beside it should show.
pub struct Convolved {
    base: Vec<i64>,
    add: Vec<i64>,
}

impl Convolved {
    /// `base`: the reference's values; `add`: what netem adds on top of
    /// what it gave the reference (equally likely, any order).
    pub fn new(mut base: Vec<i64>, mut add: Vec<i64>) -> Self {
        assert!(!base.is_empty() && !add.is_empty());
        base.sort_unstable();
        add.sort_unstable();
        Self { base, add }
    }

    /// P(value ≤ v).
    pub fn cdf(&self, v: i64) -> f64 {
        let below: usize = self
            .base
            .iter()
            .map(|b| self.add.partition_point(|&a| a <= v - b))
            .sum();
        below as f64 / (self.base.len() * self.add.len()) as f64
    }

    /// The smallest v with P(value ≤ v) ≥ p.
    pub fn quantile(&self, p: f64) -> i64 {
        let (mut lo, mut hi) = (
            self.base[0] + self.add[0] - 1,
            self.base[self.base.len() - 1] + self.add[self.add.len() - 1],
        );
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.cdf(mid) >= p {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// The interval the `p` quantile of `n` samples falls in, for `m`
    /// reference samples: the quantiles at p ± z·√(p(1−p)(1/n + 1/m)) (the
    /// order statistic's spread, and the reference's own).
    pub fn interval(&self, p: f64, n: usize, m: usize) -> (i64, i64) {
        let s = (p * (1.0 - p) * (1.0 / n as f64 + 1.0 / m as f64)).sqrt();
        let w = z() * s;
        (
            self.quantile((p - w).max(1e-9)),
            self.quantile((p + w).min(1.0)),
        )
    }
}

/// The values a reported percentile `q` can stand for: HdrHistogram with
/// three significant digits reports the top of a bucket at most 1/1024 of
/// its value wide.
pub fn hdr_bucket(q: i64) -> (i64, i64) {
    (q - q.abs() / 1024 - 1, q)
}

/// A count's interval: `n` trials of probability `p`, the normal
/// approximation widened by `inflate` (the variance ratio of correlated
/// trials), as (low, high) counts.
pub fn count_interval(n: u64, p: f64, inflate: f64) -> (f64, f64) {
    let mean = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p) * inflate).sqrt();
    let w = z() * sd + 0.5;
    ((mean - w).max(0.0), mean + w)
}

/// The variance inflation of a two-state Markov chain's time in the bad
/// state (Gilbert-Elliott with p good→bad and r bad→good): the lag-one
/// correlation is ρ = 1 − p − r, and the sum's variance grows (1+ρ)/(1−ρ).
pub fn markov_inflation(p: f64, r: f64) -> f64 {
    let rho = 1.0 - p - r;
    (1.0 + rho) / (1.0 - rho)
}

/// The standard normal quantile: the one `synapse compare` uses (Acklam's
/// rational approximation and a Newton step), so the lab and compare agree.
pub fn inverse_normal(p: f64) -> f64 {
    synapse_stats::significance::special::normal_quantile(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_quantile_matches_known_values() {
        for (p, want) in [(0.975, 1.959_964), (0.995, 2.575_829), (0.5, 0.0)] {
            assert!((inverse_normal(p) - want).abs() < 1e-5, "{p}");
        }
        assert!((inverse_normal(0.001) + 3.090_232).abs() < 1e-5);
    }

    #[test]
    fn tabledist_scales_a_table_entry_by_sigma() {
        // One standard deviation of the table (8192) is sigma.
        assert_eq!(tabledist(40_000_000, 10_000_000, 8192), 50_000_000);
        assert_eq!(tabledist(40_000_000, 10_000_000, -8192), 30_000_000);
        assert_eq!(tabledist(5, 0, 1234), 5);
    }

    #[test]
    fn a_convolution_adds_the_distributions() {
        let c = Convolved::new(vec![0, 10], vec![0, 100]);
        assert_eq!(c.cdf(-1), 0.0);
        assert_eq!(c.cdf(10), 0.5);
        assert_eq!(c.cdf(100), 0.75);
        assert_eq!(c.quantile(0.5), 10);
        assert_eq!(c.quantile(1.0), 110);
    }
}
