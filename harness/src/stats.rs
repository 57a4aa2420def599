//! Small statistics shared by summaries and comparisons: quantiles of sorted data, the
//! percentile bootstrap ([`bootstrap_ci`]), the unigram entropy of a sample, and the
//! Mann–Whitney U test that judges timings (asv's rule: a timing changed only when the ratio of
//! medians passes a threshold *and* the repeated measurements differ significantly).

mod aup_ci;
mod bootstrap;
mod paired;

pub use aup_ci::{aup_ci, DocumentPoint};
pub use bootstrap::{bootstrap_ci, Resample, BOOTSTRAP_RESAMPLES};
pub use paired::{matched_wald_ci, PairedDifference};
use serde::{Deserialize, Serialize};

/// Linear-interpolation quantile of sorted, non-empty data (`q` in 0..=1).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Median, first and third quartile of unsorted data; `None` when empty.
pub fn quartiles(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some((quantile(&v, 0.5), quantile(&v, 0.25), quantile(&v, 0.75)))
}

/// Two-sided p-value of the Mann–Whitney U test that `a` and `b` come from the same
/// distribution. Exact (the null distribution of U by counting, ties given half rank) when
/// both samples are small, else the normal approximation with tie and continuity corrections.
/// `None` when a side is empty.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    // Midranks of the pooled sample.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = pooled.len();
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for r in &mut ranks[i..=j] {
            *r = rank;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = pooled
        .iter()
        .zip(&ranks)
        .filter(|(p, _)| p.1)
        .map(|(_, r)| r)
        .sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let mean = (n1 * n2) as f64 / 2.0;
    if n1 <= 12 && n2 <= 12 && tie_term == 0.0 {
        // Exact: counts[u] = arrangements of ranks with statistic u (Mann & Whitney's recursion).
        let counts = u_distribution(n1, n2);
        let total: f64 = counts.iter().sum();
        let d = (u1 - mean).abs();
        let extreme: f64 = counts
            .iter()
            .enumerate()
            .filter(|(u, _)| (*u as f64 - mean).abs() >= d - 1e-9)
            .map(|(_, c)| c)
            .sum();
        return Some((extreme / total).min(1.0));
    }
    let nf = n as f64;
    let var = (n1 * n2) as f64 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = ((u1 - mean).abs() - 0.5).max(0.0) / var.sqrt();
    Some((2.0 * normal_upper_tail(z)).min(1.0))
}

/// Number of rank arrangements giving each value of U for sample sizes `m`, `n`.
fn u_distribution(m: usize, n: usize) -> Vec<f64> {
    // f[m][n][u] = f[m-1][n][u-n] + f[m][n-1][u]: the largest pooled value belongs to the
    // first sample (adding n to U) or to the second.
    let max_u = m * n;
    let mut table = vec![vec![vec![0.0f64; max_u + 1]; n + 1]; m + 1];
    for (i, row) in table.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            if i == 0 || j == 0 {
                cell[0] = 1.0;
            }
        }
    }
    for i in 1..=m {
        for j in 1..=n {
            for u in 0..=i * j {
                let with_first = if u >= j { table[i - 1][j][u - j] } else { 0.0 };
                let with_second = table[i][j - 1][u];
                table[i][j][u] = with_first + with_second;
            }
        }
    }
    table[m][n].clone()
}

/// `P(Z > z)` for a standard normal (Abramowitz–Stegun 7.1.26 erfc, |error| < 1.5e-7).
fn normal_upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

/// An ordinary least-squares line `y = intercept + slope·x`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearFit {
    pub slope: f64,
    /// The slope's confidence interval at `confidence` (the wider of the residual t
    /// interval and the propagated measurement interval; see `theory`'s module docs).
    pub slope_ci: (f64, f64),
    /// Its confidence level, e.g. 0.95.
    pub confidence: f64,
    pub intercept: f64,
    /// Coefficient of determination (1 for two points; `None` when every `y` is equal).
    pub r_squared: Option<f64>,
    /// Points in the fit.
    pub n: usize,
    /// Residual degrees of freedom (`n − 2`).
    pub df: usize,
    /// The slope's standard error from the residuals (`None` below three points).
    pub slope_se_residual: Option<f64>,
    /// The slope's standard error propagated from the points' own uncertainties (`None` when
    /// they are unknown).
    pub slope_se_measurement: Option<f64>,
}

// ---------------------------------------------------------------------------------------------
// Statistics.

/// The normal 97.5% quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Ordinary least squares of `y` on `x` (module docs, "Statistics"); `se` are the points' own
/// standard errors, when known. `None` with fewer than two points or a constant `x`.
pub fn fit_line(x: &[f64], y: &[f64], se: Option<&[f64]>, confidence: f64) -> Option<LinearFit> {
    let n = x.len();
    if n < 2 || y.len() != n || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let syy: f64 = y.iter().map(|v| (v - my).powi(2)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let sse: f64 = x
        .iter()
        .zip(y)
        .map(|(a, b)| (b - intercept - slope * a).powi(2))
        .sum();
    let r_squared = (syy > 0.0).then(|| (1.0 - sse / syy).clamp(0.0, 1.0));
    let df = n - 2;
    let tail = 0.5 + confidence / 2.0;
    let se_resid = (df > 0).then(|| (sse / df as f64 / sxx).sqrt());
    let se_meas = se
        .filter(|s| s.len() == n && s.iter().all(|v| v.is_finite()))
        .map(|s| {
            x.iter()
                .zip(s)
                .map(|(a, e)| ((a - mx) / sxx * e).powi(2))
                .sum::<f64>()
                .sqrt()
        });
    let half_resid = se_resid.map(|s| t_quantile(tail, df as f64) * s);
    let half_meas = se_meas.map(|s| normal_quantile(tail) * s);
    let half = match (half_resid, half_meas) {
        (Some(a), Some(b)) => a.max(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => 0.0,
    };
    Some(LinearFit {
        slope,
        slope_ci: (slope - half, slope + half),
        confidence,
        intercept,
        r_squared: if n == 2 { Some(1.0) } else { r_squared },
        n,
        df,
        slope_se_residual: se_resid,
        slope_se_measurement: se_meas,
    })
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, 9 terms; relative error below 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
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
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function `I_x(a, b)`.
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Student's t CDF with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The regularized upper incomplete gamma function `Q(a, x)`.
fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        // Series for P.
        let (mut ap, mut sum) = (a, 1.0 / a);
        let mut del = sum;
        for _ in 0..10_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        1.0 - sum * ln_front.exp()
    } else {
        // Continued fraction for Q (modified Lentz).
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        ln_front.exp() * h
    }
}

/// The standard normal CDF, `½·erfc(−z/√2)`.
pub fn normal_cdf(z: f64) -> f64 {
    let erfc = |x: f64| {
        if x >= 0.0 {
            gamma_q(0.5, x * x)
        } else {
            2.0 - gamma_q(0.5, x * x)
        }
    };
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Inverts an increasing CDF by bracketing and bisection.
fn invert(cdf: impl Fn(f64) -> f64, p: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    let (sign, p) = if p < 0.5 { (-1.0, 1.0 - p) } else { (1.0, p) };
    let mut hi = 1.0;
    while cdf(hi) < p && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-15 * hi {
            break;
        }
    }
    sign * 0.5 * (lo + hi)
}

/// The `p` quantile of Student's t with `df` degrees of freedom (`0 < p < 1`, `df > 0`).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    invert(|t| t_cdf(t, df), p)
}

/// The `p` quantile of the standard normal distribution (`0 < p < 1`).
pub fn normal_quantile(p: f64) -> f64 {
    invert(normal_cdf, p)
}

/// Penalty factor of [`aup`]'s quality weight (d3LLM's default).
pub const AUP_ALPHA: f64 = 3.0;
/// Accuracy points (in percent) below the least-parallel point's accuracy that [`aup`] still
/// counts (d3LLM's default).
pub const AUP_FLOOR_OFFSET: f64 = 5.0;

/// Accuracy under parallelism (AUP, d3LLM, Qian et al. 2026): the area under a series'
/// accuracy–parallelism curve, each accuracy weighted by `W(y) = min(exp(−α(1 − y/y_max)), 1)`
/// so that speed bought with accuracy counts little.
///
/// `points` are (tokens per forward, accuracy in percent). Sorted by parallelism, points whose
/// accuracy is more than [`AUP_FLOOR_OFFSET`] points below the least-parallel point's are left
/// out, and `AUP = ρ₁·y₁·W(y₁) + Σᵢ ½(ρᵢ − ρᵢ₋₁)(yᵢW(yᵢ) + yᵢ₋₁W(yᵢ₋₁))` (trapezoids). `y_max`
/// is the best accuracy of the comparison pool, so AUP moves when the pool changes: state it
/// with the figure. `None` without a point of positive parallelism, or with `y_max` below a
/// point's accuracy; 0 when `y_max` is 0 (every accuracy is 0, and so is the area, whatever
/// the weight).
pub fn aup(points: &[(f64, f64)], y_max: f64, alpha: f64) -> Option<f64> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(r, y)| *r > 0.0 && r.is_finite() && y.is_finite())
        .collect();
    if pts.is_empty() || y_max.is_nan() || pts.iter().any(|p| p.1 > y_max) {
        return None;
    }
    if y_max <= 0.0 {
        return Some(0.0);
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let floor = pts[0].1 - AUP_FLOOR_OFFSET;
    pts.retain(|p| p.1 >= floor);
    let weighted = |y: f64| y * (-alpha * (1.0 - y / y_max)).exp().min(1.0);
    let mut area = pts[0].0 * weighted(pts[0].1);
    for w in pts.windows(2) {
        area += 0.5 * (w[1].0 - w[0].0) * (weighted(w[1].1) + weighted(w[0].1));
    }
    Some(area)
}

/// Entropy (nats) of the token histogram of one sequence.
pub fn unigram_entropy(tokens: &[u32]) -> f64 {
    if tokens.is_empty() {
        return 0.0;
    }
    // Ordered map: a fixed summation order keeps the result bit-for-bit reproducible.
    let mut counts: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    for &t in tokens {
        *counts.entry(t).or_default() += 1;
    }
    let n = tokens.len() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.ln()
        })
        .sum()
}

/// Chen et al.'s unbiased pass@k of one problem with `n` samples, `c` of them correct:
/// `1 − C(n−c, k)/C(n, k)`, as the numerically stable product `1 − Π_{i=n−c+1}^{n} (1 − k/i)`.
/// `None` when `n < k`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if n < k || c > n || k == 0 {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    Some(
        1.0 - (n - c + 1..=n)
            .map(|i| 1.0 - k as f64 / i as f64)
            .product::<f64>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b} (tolerance {tol})");
    }

    #[test]
    fn quartiles_of_known_data() {
        assert_eq!(quartiles(&[4.0, 1.0, 3.0, 2.0, 5.0]), Some((3.0, 2.0, 4.0)));
        assert_eq!(quartiles(&[]), None);
    }

    #[test]
    fn exact_p_of_complete_separation() {
        // 3 vs 3, all of a below all of b: 2 of C(6,3) = 20 arrangements are this extreme.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        // 5 vs 5: 2 / C(10,5) = 2/252.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
    }

    #[test]
    fn exact_distribution_sums_to_binomial_and_is_symmetric() {
        let d = u_distribution(4, 6);
        assert_eq!(d.iter().sum::<f64>(), 210.0); // C(10, 4)
        for u in 0..d.len() {
            assert_eq!(d[u], d[d.len() - 1 - u]);
        }
    }

    #[test]
    fn interleaved_samples_are_not_significant() {
        let p = mann_whitney_p(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]).unwrap();
        assert!(p > 0.5, "{p}");
    }

    #[test]
    fn normal_approximation_matches_a_known_value() {
        // Large samples: a shifted by one standard deviation of 30 values each is clearly
        // different; identical samples (all ties) are not.
        let a: Vec<f64> = (0..30).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..30).map(|i| i as f64 + 15.0).collect();
        let p = mann_whitney_p(&a, &b).unwrap();
        assert!(p < 0.001, "{p}");
        assert_eq!(mann_whitney_p(&[1.0; 20], &[1.0; 20]), Some(1.0));
        // P(Z > 1.959964) = 0.025.
        assert!((normal_upper_tail(1.959_964) - 0.025).abs() < 1e-6);
    }

    #[test]
    fn t_quantiles_match_published_tables() {
        // Two-sided 95% (p = 0.975) and 99% (p = 0.995) critical values.
        for (df, q975, q995) in [
            (1.0, 12.706_204_736, 63.656_741_163),
            (2.0, 4.302_652_730, 9.924_843_201),
            (3.0, 3.182_446_305, 5.840_909_310),
            (5.0, 2.570_581_836, 4.032_142_984),
            (10.0, 2.228_138_852, 3.169_272_673),
            (30.0, 2.042_272_456, 2.749_995_652),
            (120.0, 1.979_930_405, 2.617_421_145),
        ] {
            close(t_quantile(0.975, df), q975, 1e-7 * q975);
            close(t_quantile(0.995, df), q995, 1e-7 * q995);
            close(t_quantile(0.025, df), -q975, 1e-7 * q975);
        }
        // Closed forms: df = 1 is Cauchy (tan), df = 2 is t = (2p−1)·sqrt(2/(4p(1−p))).
        for p in [0.6, 0.9, 0.99, 0.9995] {
            close(
                t_quantile(p, 1.0),
                (std::f64::consts::PI * (p - 0.5)).tan(),
                1e-9 * (std::f64::consts::PI * (p - 0.5)).tan(),
            );
            let t2 = (2.0 * p - 1.0) * (2.0 / (4.0 * p * (1.0 - p))).sqrt();
            close(t_quantile(p, 2.0), t2, 1e-9 * t2);
        }
        close(t_quantile(0.5, 7.0), 0.0, 0.0);
    }

    #[test]
    fn normal_quantiles_match_published_values() {
        close(normal_quantile(0.975), Z95, 1e-12);
        close(normal_quantile(0.995), 2.575_829_303_549, 1e-10);
        close(normal_quantile(0.9995), 3.290_526_731_492, 1e-10);
        close(normal_quantile(0.841_344_746_068_543), 1.0, 1e-10);
        close(normal_cdf(-1.0), 0.158_655_253_931_457, 1e-14);
        // Student's t approaches the normal.
        close(t_quantile(0.975, 1e6), Z95, 1e-5);
    }

    #[test]
    fn incomplete_beta_closed_forms() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 − (1−x)^b.
        for x in [0.01, 0.3, 0.5, 0.77, 0.999] {
            close(incomplete_beta(1.0, 1.0, x), x, 1e-14);
            close(incomplete_beta(3.5, 1.0, x), x.powf(3.5), 1e-13);
            close(
                incomplete_beta(1.0, 2.5, x),
                1.0 - (1.0 - x).powf(2.5),
                1e-13,
            );
        }
        // Gamma function: Γ(5) = 24, Γ(1/2) = √π.
        close(ln_gamma(5.0), 24f64.ln(), 1e-13);
        close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-13);
    }

    #[test]
    fn least_squares_matches_hand_computation() {
        // y = 1 + 2x exactly: slope 2, intercept 1, R² 1, zero-width residual interval.
        let x = [1.0, 2.0, 3.0, 4.0];
        let y = [3.0, 5.0, 7.0, 9.0];
        let f = fit_line(&x, &y, None, 0.95).unwrap();
        close(f.slope, 2.0, 1e-12);
        close(f.intercept, 1.0, 1e-12);
        close(f.r_squared.unwrap(), 1.0, 1e-12);
        close(f.slope_ci.1 - f.slope_ci.0, 0.0, 1e-12);
        // A textbook case: x = 1..5, y = (2, 4, 5, 4, 5): slope 0.6, intercept 2.2,
        // SSE = 2.4, se(slope) = sqrt(2.4/3/10) = 0.28284, R² = 3.6/6 = 0.6,
        // 95% CI 0.6 ± 3.182446·0.28284.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [2.0, 4.0, 5.0, 4.0, 5.0];
        let f = fit_line(&x, &y, None, 0.95).unwrap();
        close(f.slope, 0.6, 1e-12);
        close(f.intercept, 2.2, 1e-12);
        close(f.r_squared.unwrap(), 0.6, 1e-12);
        assert_eq!((f.n, f.df), (5, 3));
        let se = (2.4f64 / 3.0 / 10.0).sqrt();
        close(f.slope_se_residual.unwrap(), se, 1e-12);
        close(f.slope_ci.0, 0.6 - 3.182_446_305 * se, 1e-8);
        close(f.slope_ci.1, 0.6 + 3.182_446_305 * se, 1e-8);
        // The measurement interval wins when it is wider: two points with known errors.
        let f = fit_line(&[0.0, 2.0], &[1.0, 2.0], Some(&[0.3, 0.4]), 0.95).unwrap();
        close(f.slope, 0.5, 1e-12);
        close(f.slope_se_measurement.unwrap(), 0.25, 1e-12); // sqrt(0.3² + 0.4²) / 2
        close(f.slope_ci.0, 0.5 - Z95 * 0.25, 1e-12);
        assert_eq!(f.df, 0);
        assert!(fit_line(&[1.0], &[1.0], None, 0.95).is_none());
        assert!(fit_line(&[1.0, 1.0], &[1.0, 2.0], None, 0.95).is_none());
    }

    #[test]
    fn aup_matches_hand_computation() {
        // One point at the best accuracy: ρ·y.
        close(aup(&[(2.0, 80.0)], 80.0, AUP_ALPHA).unwrap(), 160.0, 1e-12);
        // Two points, no degradation: a rectangle plus a trapezoid of height y.
        close(
            aup(&[(1.0, 80.0), (3.0, 80.0)], 80.0, AUP_ALPHA).unwrap(),
            80.0 + 2.0 * 80.0,
            1e-9,
        );
        // Degraded second point: weighted by exp(−3(1 − 76/80)).
        let w = 76.0 * (-3.0f64 * (1.0 - 76.0 / 80.0)).exp();
        close(
            aup(&[(3.0, 76.0), (1.0, 80.0)], 80.0, AUP_ALPHA).unwrap(),
            80.0 + 0.5 * 2.0 * (80.0 + w),
            1e-9,
        );
        // More than 5 points below the least-parallel accuracy: left out.
        close(
            aup(&[(1.0, 80.0), (4.0, 60.0)], 80.0, AUP_ALPHA).unwrap(),
            80.0,
            1e-12,
        );
        // A pool with a better model lowers everyone's weight.
        assert!(aup(&[(1.0, 80.0)], 90.0, AUP_ALPHA).unwrap() < 80.0);
        assert_eq!(aup(&[], 80.0, AUP_ALPHA), None);
        assert_eq!(aup(&[(0.0, 80.0)], 80.0, AUP_ALPHA), None);
        // A pool where nothing is right: the curve is 0, so is its area.
        assert_eq!(aup(&[(1.0, 0.0), (3.0, 0.0)], 0.0, AUP_ALPHA), Some(0.0));
        // y_max below a point's accuracy is not a pool's best: refused.
        assert_eq!(aup(&[(1.0, 80.0)], 70.0, AUP_ALPHA), None);
    }

    #[test]
    fn pass_at_k_matches_brute_force_over_subsets() {
        // 1 − C(n−c, k)/C(n, k) by counting k-subsets with no correct sample.
        fn brute(n: u64, c: u64, k: u64) -> f64 {
            let (mut all, mut none) = (0u64, 0u64);
            for mask in 0u64..(1 << n) {
                if mask.count_ones() as u64 != k {
                    continue;
                }
                all += 1;
                // Samples 0..c are the correct ones.
                if mask & ((1 << c) - 1) == 0 {
                    none += 1;
                }
            }
            1.0 - none as f64 / all as f64
        }
        for n in 1..=10 {
            for c in 0..=n {
                for k in 1..=n {
                    close(pass_at_k(n, c, k).unwrap(), brute(n, c, k), 1e-12);
                }
            }
        }
        assert_eq!(pass_at_k(3, 1, 5), None, "n < k has no estimate");
        close(pass_at_k(10, 3, 1).unwrap(), 0.3, 1e-12);
    }
}
