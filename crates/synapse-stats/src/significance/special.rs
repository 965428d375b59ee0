//! The distributions the comparison needs, computed here rather than taken
//! from a crate: Student's t (its quantiles, by bisection on the
//! regularized incomplete beta function), the normal quantile, and the
//! Clopper-Pearson bounds of a binomial proportion.

/// The quantile `p` of Student's t with `df` degrees of freedom (`df` of
/// 1e6 or more: the normal's).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if df >= 1e6 {
        return normal_quantile(p);
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
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

/// The standard normal's quantile (Acklam's rational approximation, then
/// one Newton step on the error function: better than 1e-9).
pub fn normal_quantile(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        let q = (-2.0 * q.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < 0.02425 {
        tail(p)
    } else if p > 1.0 - 0.02425 {
        -tail(1.0 - p)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    // One Halley step against the distribution function.
    let e = normal_cdf(x) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

/// The standard normal's distribution function.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The complementary error function (Numerical Recipes' Chebyshev fit,
/// relative error below 1.2e-7), refined through the incomplete gamma
/// function where it matters (|x| < 3).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let r = if z < 3.0 {
        // erfc(z) = 1 − P(1/2, z²), P the regularized lower gamma.
        1.0 - lower_gamma_series(0.5, z * z)
    } else {
        let t = 1.0 / (1.0 + 0.5 * z);
        t * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp()
    };
    if x >= 0.0 { r } else { 2.0 - r }
}

/// The regularized lower incomplete gamma P(a, x), by its series.
fn lower_gamma_series(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let (mut sum, mut term, mut n) = (1.0 / a, 1.0 / a, a);
    for _ in 0..500 {
        n += 1.0;
        term *= x / n;
        sum += term;
        if term.abs() < sum.abs() * 1e-16 {
            break;
        }
    }
    sum * (-x + a * x.ln() - ln_gamma(a)).exp()
}

/// ln Γ(x), Lanczos (g = 7, n = 9).
pub fn ln_gamma(x: f64) -> f64 {
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
pub fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
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
    let clamp = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / clamp(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 / clamp(1.0 + num * d);
            c = clamp(1.0 + num / c);
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The quantile `p` of the Beta(a, b) distribution, by bisection.
fn beta_quantile(p: f64, a: f64, b: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if incomplete_beta(mid, a, b) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The Clopper-Pearson ("exact") interval of a proportion: `k` events in
/// `n` trials, two-sided at `confidence`. `(0, 0)` without trials.
pub fn clopper_pearson(k: u64, n: u64, confidence: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let alpha = 1.0 - confidence;
    let (k, n) = (k as f64, n as f64);
    let low = if k == 0.0 {
        0.0
    } else {
        beta_quantile(alpha / 2.0, k, n - k + 1.0)
    };
    let high = if k >= n {
        1.0
    } else {
        beta_quantile(1.0 - alpha / 2.0, k + 1.0, n - k)
    };
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        for (p, df, want) in [
            (0.975, 1.0, 12.706),
            (0.975, 4.0, 2.776),
            (0.975, 30.0, 2.042),
            (0.995, 10.0, 3.169),
            (0.95, 1000.0, 1.646),
            (0.025, 4.0, -2.776),
        ] {
            let got = t_quantile(p, df);
            assert!(
                (got - want).abs() < 0.002,
                "t({p}, {df}) = {got}, not {want}"
            );
        }
    }

    #[test]
    fn normal_quantiles_match_the_tables() {
        for (p, want) in [
            (0.5, 0.0),
            (0.975, 1.959_964),
            (0.995_833_3, 2.638_257),
            (0.001, -3.090_232),
            (0.841_344_7, 1.0),
        ] {
            let got = normal_quantile(p);
            assert!((got - want).abs() < 1e-5, "z({p}) = {got}, not {want}");
            assert!((normal_cdf(want) - p).abs() < 1e-7, "Φ({want})");
        }
        assert_eq!(t_quantile(0.975, 1e9), normal_quantile(0.975));
    }

    #[test]
    fn clopper_pearson_bounds_match_published_values() {
        // 0 of 40: the upper bound is 1 − 0.025^(1/40) = 8.8 %; 0 of 200:
        // 1.8 %; 5 of 200: 0.8 % to 5.7 %.
        let (lo, hi) = clopper_pearson(0, 40, 0.95);
        assert_eq!(lo, 0.0);
        assert!(
            (hi - (1.0 - 0.025f64.powf(1.0 / 40.0))).abs() < 1e-9,
            "{hi}"
        );
        let (_, hi) = clopper_pearson(0, 200, 0.95);
        assert!((hi - 0.018_27).abs() < 1e-4, "{hi}");
        let (lo, hi) = clopper_pearson(5, 200, 0.95);
        assert!(
            (lo - 0.008_15).abs() < 1e-4 && (hi - 0.057_38).abs() < 1e-4,
            "{lo} {hi}"
        );
        assert_eq!(clopper_pearson(3, 3, 0.95).1, 1.0);
    }
}
