//! Random streams and the host path's categorical draws: what every sampler draws with.

use crate::{PluginError, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The random stream of one sample: depends only on the run seed and the sample's global index.
pub fn sample_rng(seed: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    rng
}

/// Draw an index from unnormalised non-negative weights, in f64 by inverse CDF.
pub fn categorical<R: Rng + ?Sized>(weights: &[f64], rng: &mut R) -> Result<usize> {
    check_weights(weights)?;
    Ok(categorical_at(weights, rng.random::<f64>()))
}

pub(crate) fn check_weights(weights: &[f64]) -> Result<()> {
    let total: f64 = weights.iter().sum();
    if !(total.is_finite() && total > 0.0) || weights.iter().any(|&w| w < 0.0 || w.is_nan()) {
        return Err(PluginError::bad_data(format!(
            "invalid distribution (sum {total}); a denoiser must return finite, non-negative probabilities with positive mass"
        )));
    }
    Ok(())
}

/// Inverse CDF at `u ∈ [0, 1)` of valid weights: the first index whose running sum exceeds
/// `u · total`. Both sampler paths draw `u` from the sample's stream, so they agree except
/// where rounding moves a category boundary across `u` (see `device`).
fn categorical_at(weights: &[f64], u: f64) -> usize {
    let total: f64 = weights.iter().sum();
    let u = u * total;
    let mut acc = 0.0;
    let mut last_positive = 0;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            acc += w;
            last_positive = i;
            if u < acc {
                return i;
            }
        }
    }
    // Rounding can leave u a hair above the running sum; the last positive entry is the answer.
    last_positive
}

/// Which per-position scores a draw returns besides the tokens: a sampler asks for what its
/// commit rule reads ([`super::DenoiserSampler::scores`]), and the path computes only those.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Want {
    /// `p(x0)` of the drawn token under the untempered distribution.
    pub confidence: bool,
    /// Entropy of the untempered distribution (nats).
    pub entropy: bool,
    /// Largest probability.
    pub max_prob: bool,
    /// Largest minus second-largest probability.
    pub margin: bool,
}

/// Tokens drawn at the requested rows, in request order, with the scores asked for (the
/// vectors of scores not asked for are empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Drawn {
    /// The drawn token of each requested row.
    pub tokens: Vec<u32>,
    /// [`Want::confidence`] of each row.
    pub confidence: Vec<f64>,
    /// [`Want::entropy`] of each row.
    pub entropy: Vec<f64>,
    /// [`Want::max_prob`] of each row.
    pub max_prob: Vec<f64>,
    /// [`Want::margin`] of each row.
    pub margin: Vec<f64>,
}

impl Drawn {
    /// Write `part`'s entries to positions `at` of `self`, which holds `total` rows (scores
    /// `part` has are allocated on first use).
    pub(crate) fn scatter(&mut self, part: &Drawn, at: &[usize], total: usize) {
        fn put<T: Copy + Default>(whole: &mut Vec<T>, part: &[T], at: &[usize], total: usize) {
            if part.is_empty() {
                return;
            }
            whole.resize(total, T::default());
            for (&i, &value) in at.iter().zip(part) {
                whole[i] = value;
            }
        }
        put(&mut self.tokens, &part.tokens, at, total);
        put(&mut self.confidence, &part.confidence, at, total);
        put(&mut self.entropy, &part.entropy, at, total);
        put(&mut self.max_prob, &part.max_prob, at, total);
        put(&mut self.margin, &part.margin, at, total);
    }
}

/// A draw that failed at request `at` (an index into the rows asked for).
#[derive(Debug)]
pub(crate) struct RowError {
    pub at: usize,
    pub message: String,
}

/// How a distribution is shaped before `x0` is drawn from it (every sampler's `temperature`,
/// `top_k` and `top_p`); both paths apply it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shaping {
    pub temperature: f64,
    pub top_k: Option<usize>,
    pub top_p: Option<f64>,
}

/// The host path's draw: rows of `probs` (`vocab` values each), shaped by the sampler's
/// parameters and drawn by inverse CDF in f64 at the given uniforms.
pub(crate) fn host_draw(
    probs: &[f64],
    vocab: usize,
    rows: &[usize],
    uniforms: &[f64],
    params: &Shaping,
    want: Want,
) -> std::result::Result<Drawn, RowError> {
    let mut scratch = Vec::with_capacity(vocab);
    let mut drawn = Drawn::default();
    for (at, (&row, &u)) in rows.iter().zip(uniforms).enumerate() {
        let p = &probs[row * vocab..(row + 1) * vocab];
        shape_distribution(p, params, &mut scratch);
        check_weights(&scratch).map_err(|e| RowError {
            at,
            message: e.message,
        })?;
        let x = categorical_at(&scratch, u);
        drawn.tokens.push(x as u32);
        if want.confidence {
            drawn.confidence.push(p[x]);
        }
        if want.entropy {
            drawn.entropy.push(entropy(p));
        }
        if want.max_prob {
            drawn.max_prob.push(p.iter().cloned().fold(0.0, f64::max));
        }
        if want.margin {
            let mut s: Vec<f64> = p.to_vec();
            s.sort_by(|a, b| b.total_cmp(a));
            drawn.margin.push(s[0] - s.get(1).copied().unwrap_or(0.0));
        }
    }
    Ok(drawn)
}

/// The distribution `x0` is drawn from: temperature, then top-k, then top-p; `temperature = 0`
/// puts all mass on the argmax (first index on ties).
pub(crate) fn shape_distribution(p: &[f64], params: &Shaping, out: &mut Vec<f64>) {
    out.clear();
    if params.temperature == 0.0 {
        let best = argmax(p);
        out.extend((0..p.len()).map(|i| if i == best { 1.0 } else { 0.0 }));
        return;
    }
    if params.temperature == 1.0 {
        out.extend_from_slice(p);
    } else {
        let inv = 1.0 / params.temperature;
        out.extend(p.iter().map(|&x| if x > 0.0 { x.powf(inv) } else { 0.0 }));
    }
    if params.top_k.is_none() && params.top_p.is_none() {
        return;
    }
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|&a, &b| out[b].total_cmp(&out[a]).then(a.cmp(&b)));
    let total: f64 = out.iter().sum();
    let mut keep = order.len();
    if let Some(k) = params.top_k {
        keep = keep.min(k);
    }
    if let Some(tp) = params.top_p {
        let mut acc = 0.0;
        for (i, &j) in order.iter().enumerate() {
            acc += out[j] / total;
            if acc >= tp {
                keep = keep.min(i + 1);
                break;
            }
        }
    }
    for &j in &order[keep..] {
        out[j] = 0.0;
    }
}

fn argmax(p: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in p.iter().enumerate() {
        if x > p[best] {
            best = i;
        }
    }
    best
}

fn entropy(p: &[f64]) -> f64 {
    let total: f64 = p.iter().sum();
    p.iter()
        .filter(|&&x| x > 0.0)
        .map(|&x| {
            let q = x / total;
            -q * q.ln()
        })
        .sum()
}
