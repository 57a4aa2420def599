//! Small numeric helpers shared by the n-gram and HMM engines: scaled vectors with an underflow
//! guard, log-sum-exp, categorical draws, entropies.

use rand::Rng;

/// After a scaled vector is divided by its maximum, every nonzero entry must be at least this
/// large. Products of two guarded entries (`>= 1e-200`) and of a guarded entry with two model
/// parameters (`>= 1e-100 · pmin²`, see [`Guard`]) are then normal `f64` numbers, so no
/// mathematically positive quantity can underflow to zero in the next step.
pub(crate) const FLOOR: f64 = 1e-100;

/// Whether the scaled (fast) recursions are safe for a model at all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Guard {
    /// `true` when the smallest positive parameter is so small (`pmin² < 1e-180`) that the
    /// floor argument above does not hold: every computation then runs in log space.
    pub(crate) always_log: bool,
}

impl Guard {
    pub(crate) fn new(tables: &[&[f64]]) -> Self {
        let pmin = tables
            .iter()
            .flat_map(|t| t.iter().copied())
            .filter(|&p| p > 0.0)
            .fold(f64::INFINITY, f64::min);
        Self {
            always_log: pmin * pmin < 1e-180,
        }
    }
}

/// Result of dividing a nonnegative vector by its maximum.
pub(crate) enum Norm {
    /// The vector was divided by this (positive) maximum; every nonzero entry is `>= FLOOR`.
    Scaled(f64),
    /// Every entry is zero.
    Zero,
    /// Some nonzero entry fell below [`FLOOR`] (or something was not finite): the caller must
    /// redo the computation in log space.
    Flagged,
}

pub(crate) fn normalize_max(v: &mut [f64]) -> Norm {
    let max = v.iter().fold(0.0f64, |m, &x| m.max(x));
    if max == 0.0 {
        return Norm::Zero;
    }
    if !max.is_finite() {
        return Norm::Flagged;
    }
    let inv = 1.0 / max;
    if !inv.is_finite() {
        return Norm::Flagged;
    }
    let mut flagged = false;
    for x in v.iter_mut() {
        *x *= inv;
        if *x != 0.0 && *x < FLOOR {
            flagged = true;
        }
    }
    if flagged {
        Norm::Flagged
    } else {
        Norm::Scaled(max)
    }
}

/// `ln(p)`, with `ln(0) = -inf` spelled out.
pub(crate) fn ln0(p: f64) -> f64 {
    if p > 0.0 {
        p.ln()
    } else {
        f64::NEG_INFINITY
    }
}

/// `ln Σ exp(x)` over a slice; `-inf` when every entry is `-inf` (or the slice is empty).
pub(crate) fn lse(xs: &[f64]) -> f64 {
    let max = xs.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
    if max == f64::NEG_INFINITY {
        return max;
    }
    let sum: f64 = xs.iter().map(|&x| (x - max).exp()).sum();
    max + sum.ln()
}

/// Draws an index from the (not necessarily exactly normalised) nonnegative weights `p`.
/// Never returns an index of weight zero; `p` must have a positive entry.
pub(crate) fn draw<R: Rng + ?Sized>(p: &[f64], rng: &mut R) -> usize {
    let total: f64 = p.iter().sum();
    let u = rng.random::<f64>() * total;
    let mut acc = 0.0;
    let mut last = 0;
    for (i, &pi) in p.iter().enumerate() {
        if pi > 0.0 {
            acc += pi;
            last = i;
            if u < acc {
                return i;
            }
        }
    }
    // Rounding can leave `u` just above the running sum: take the last positive entry.
    last
}

/// Shannon entropy in nats of a distribution that sums to one (`0 ln 0 = 0`).
pub(crate) fn entropy(p: &[f64]) -> f64 {
    -p.iter()
        .filter(|&&x| x > 0.0)
        .map(|&x| x * x.ln())
        .sum::<f64>()
}

/// How one sequence of a batch came out of a forward–backward pass.
pub(crate) enum Outcome {
    Done,
    /// The unmasked tokens have probability zero.
    Inconsistent,
    /// The scaled pass could not guarantee exact zeros: redo it in log space.
    Flagged,
}
