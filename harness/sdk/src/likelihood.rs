//! Log-likelihoods of continuations (`model.loglikelihood`, plugin API 1.8): the Monte-Carlo
//! ELBO of a masked diffusion model. (An autoregressive model's exact answer, the chain rule, is
//! `sampler::exact_autoregressive`; a tensor model's, `sampler::device::answer_tensor_with_elbo`
//! and `answer_tensor_autoregressive`.)
//!
//! # The ELBO estimator
//!
//! LLaDA's `get_log_likelihood` (github.com/ML-GSAI/LLaDA, `get_log_likelihood.py`, commit
//! b7e6c3565f194352da44b38dd12b6970597309f3) estimates `log p(y | c)` for a context `c` and a
//! continuation `y` of `L` tokens by drawing masks: a masked count `l` uniform on `1..=L`, a
//! uniformly random set `M` of `l` continuation positions, and the term
//!
//! ```text
//! (L / l) · Σ_{i ∈ M} log p(y_i | c, y_{−M})
//! ```
//!
//! (the negative of its loss, `cross_entropy / p_mask` with `p_mask = l / L`). The estimate is
//! the mean term over `mc_num` draws. With exact conditionals its expectation *is* `log p(y | c)`:
//! `Σ_l (1/l) E_{|M|=l} Σ_{i∈M} log p(y_i | y_{−M})` is the expected chain rule over a uniformly
//! random unmasking order (at `l` masked positions the next one unmasked is uniform among them),
//! and every order's chain rule equals `log p(y | c)`. For a learned model it is a lower bound
//! in expectation. Draws are coupled as [`DrawScheme`] says; LLaDA's stratified scheme spreads
//! the counts of each group of `batch` draws evenly over `1..=L` from one random start
//! (`x_j = k + round(j·L/b)`, wrapped into `1..=L`; where LLaDA's own rounding differs and
//! why, see [`stratified_count`]).
//!
//! The standard error treats each group of coupled draws (a stratified batch, an antithetic
//! pair, a single independent draw) as one independent replicate; with a single group it falls
//! back to the spread of the draws over `√mc_num`, which overstates the error of coupled draws
//! (they vary less than independent ones), never understates it. With few groups the standard
//! error is itself noisy (a t distribution with one degree of freedom fewer than groups: at 4
//! groups about 6% of estimates lie beyond 3 of their standard errors); the harness's
//! likelihood experiment therefore measures the spread over repeated seeds.

use crate::{
    Denoiser, DrawScheme, ElboSettings, LoglikelihoodReply, LoglikelihoodRequest, LoglikelihoodRow,
    PluginError, Result,
};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// One draw of the estimator: the masked continuation positions (0-based, within the
/// continuation) and the term `(L / l) · Σ_{i∈M} log p(y_i | c, y_{−M})`.
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    /// Masked positions of the continuation.
    pub masked: Vec<usize>,
    /// The draw's ELBO term (nats); `-inf` where the model gives a masked token probability 0.
    pub value: f64,
}

/// An ELBO estimate of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct ElboEstimate {
    /// Mean of the draws' values.
    pub mean: f64,
    /// Standard error of the mean (see the module documentation).
    pub std_error: f64,
    /// Every draw, in order.
    pub draws: Vec<Draw>,
}

/// The masks of one row: `settings.mc_num` sets of masked positions of a continuation of
/// `len` tokens, grouped as the scheme couples them (each inner `Vec` is one group).
pub fn draw_masks<R: Rng + ?Sized>(
    rng: &mut R,
    len: usize,
    settings: &ElboSettings,
) -> Vec<Vec<Vec<usize>>> {
    let mut groups = Vec::new();
    let mut left = settings.mc_num;
    let random_subset = |rng: &mut R, l: usize| {
        let mut order: Vec<usize> = (0..len).collect();
        order.shuffle(rng);
        order.truncate(l);
        order
    };
    while left > 0 {
        let group = match settings.draws {
            DrawScheme::Independent => {
                let l = rng.random_range(1..=len);
                vec![random_subset(rng, l)]
            }
            DrawScheme::Antithetic => {
                let l = rng.random_range(1..=len);
                let mut order: Vec<usize> = (0..len).collect();
                order.shuffle(rng);
                let first = order[..l].to_vec();
                if left >= 2 {
                    vec![first, order[l - 1..].to_vec()]
                } else {
                    vec![first]
                }
            }
            DrawScheme::Stratified => {
                let b = settings.batch.min(left);
                let k = rng.random_range(1..=len);
                (0..b)
                    .map(|j| random_subset(rng, stratified_count(k, j, len, b)))
                    .collect()
            }
        };
        left -= group.len();
        groups.push(group);
    }
    groups
}

/// The masked count of draw `j` of a stratified group of `b` draws from start `k ∈ 1..=len`:
/// `k + round(j·len/b)`, wrapped into `1..=len`. LLaDA rounds `k + j·len/b` as a whole with
/// `torch.round` (half to even), which is the same except where `j·len/b` is a half-integer
/// (`b > len`, e.g. 16 draws over 8 tokens): there the rounding direction follows the parity
/// of `k`, the counts are no longer uniform (even counts three times as frequent as odd ones
/// at `len = 8, b = 16`) and the estimate is biased. Rounding the offset alone keeps every
/// draw's count uniform over `1..=len` (`k` is), so the estimator stays unbiased.
pub fn stratified_count(k: usize, j: usize, len: usize, b: usize) -> usize {
    let offset = (j as f64 * len as f64 / b as f64 + 0.5).floor() as usize;
    (k - 1 + offset) % len + 1
}

/// The ELBO terms of explicit masks (for checks against a reference given the same masks):
/// one [`Draw`] per mask, `batch` masks per forward pass. `length`: pad the sequence with mask
/// tokens up to it (a model of fixed length), or `None`.
pub fn elbo_terms<D: Denoiser + ?Sized>(
    denoiser: &mut D,
    context: &[u32],
    continuation: &[u32],
    masks: &[Vec<usize>],
    batch: usize,
    length: Option<usize>,
) -> Result<Vec<Draw>> {
    let len = continuation.len();
    let (c, v) = (context.len(), denoiser.vocab_size());
    let mask_id = v as u32;
    let total = length.unwrap_or(c + len).max(c + len);
    if let Some((m, &p)) = masks
        .iter()
        .enumerate()
        .find_map(|(m, mask)| mask.iter().find(|&&p| p >= len).map(|p| (m, p)))
    {
        return Err(PluginError::bad_config(format!(
            "mask {m} names position {p} of a continuation of {len} tokens"
        )));
    }
    // A time-conditioned network gets the draw's masked fraction as its time, so each call
    // holds draws of one count.
    let per_call = if denoiser.time_conditioned() {
        1
    } else {
        batch.max(1)
    };
    let mut draws = Vec::with_capacity(masks.len());
    let mut probs = Vec::new();
    for chunk in masks.chunks(per_call) {
        let mut tokens = Vec::with_capacity(chunk.len() * total);
        for mask in chunk {
            let start = tokens.len();
            tokens.extend_from_slice(context);
            tokens.extend_from_slice(continuation);
            tokens.resize(start + total, mask_id);
            for &p in mask {
                tokens[start + c + p] = mask_id;
            }
        }
        probs.resize(chunk.len() * total * v, 0.0);
        let t = chunk[0].len() as f64 / len as f64;
        denoiser.denoise(&tokens, chunk.len(), total, t, &mut probs)?;
        for (b, mask) in chunk.iter().enumerate() {
            let mut sum = 0.0;
            for &p in mask {
                let at = (b * total + c + p) * v;
                let row = &probs[at..at + v];
                sum += log_prob_of(row, continuation[p] as usize)
                    .map_err(|e| e.context(format!("position {} of the sequence", c + p)))?;
            }
            draws.push(Draw {
                masked: mask.clone(),
                value: sum * len as f64 / mask.len().max(1) as f64,
            });
        }
    }
    Ok(draws)
}

/// `log(row[token] / Σ row)`: the distributions need not be normalised.
pub(crate) fn log_prob_of(row: &[f64], token: usize) -> Result<f64> {
    let total: f64 = row.iter().sum();
    if !(total.is_finite() && total > 0.0) || row.iter().any(|p| p.is_nan() || *p < 0.0) {
        return Err(PluginError::bad_data(format!(
            "the model returned an invalid distribution (sum {total}); it must be finite, non-negative, with positive mass"
        )));
    }
    Ok((row[token] / total).ln())
}

/// The Monte-Carlo ELBO of one row: masks from `settings` drawn from the stream `(seed, row)`.
pub fn elbo<D: Denoiser + ?Sized>(
    denoiser: &mut D,
    context: &[u32],
    continuation: &[u32],
    settings: &ElboSettings,
    row: u64,
    length: Option<usize>,
) -> Result<ElboEstimate> {
    if continuation.is_empty() || settings.mc_num == 0 || settings.batch == 0 {
        return Err(PluginError::bad_config(
            "an ELBO needs a continuation of at least one token, `mc_num` ≥ 1 and `batch` ≥ 1",
        ));
    }
    let mut rng = row_rng(settings.seed, row);
    let groups = draw_masks(&mut rng, continuation.len(), settings);
    let masks: Vec<Vec<usize>> = groups.iter().flatten().cloned().collect();
    let draws = elbo_terms(
        denoiser,
        context,
        continuation,
        &masks,
        settings.batch,
        length,
    )?;
    let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
    let values: Vec<f64> = draws.iter().map(|d| d.value).collect();
    let (mean, std_error) = mean_and_std_error(&values, &sizes);
    Ok(ElboEstimate {
        mean,
        std_error,
        draws,
    })
}

/// The masks' random stream of row `row`: built as the samplers' `sampler::sample_rng`.
fn row_rng(seed: u64, row: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(row);
    rng
}

/// Mean of `values` and its standard error with `values` in consecutive groups of `sizes`
/// (one replicate per group; one group: the plain spread over `√n`).
pub fn mean_and_std_error(values: &[f64], sizes: &[usize]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if !mean.is_finite() || values.len() < 2 {
        return (mean, f64::NAN);
    }
    if sizes.len() >= 2 {
        // Cluster (ratio) form: Σ n_g² (m_g − m)² / n² · G / (G − 1).
        let g = sizes.len() as f64;
        let mut at = 0;
        let mut acc = 0.0;
        for &size in sizes {
            let group = &values[at..at + size];
            let m_g = group.iter().sum::<f64>() / size as f64;
            acc += (size as f64 * (m_g - mean)).powi(2);
            at += size;
        }
        return (mean, (acc / (n * n) * g / (g - 1.0)).sqrt());
    }
    let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Answer a `model.loglikelihood` request with a denoiser's Monte-Carlo ELBO.
pub fn answer_with_elbo<D: Denoiser + ?Sized>(
    denoiser: &mut D,
    request: &LoglikelihoodRequest,
    rows: &[(Vec<u32>, Vec<u32>)],
) -> Result<LoglikelihoodReply> {
    let settings = request.elbo.unwrap_or_default();
    let started = Instant::now();
    let mut answers = Vec::with_capacity(rows.len());
    for (i, (context, continuation)) in rows.iter().enumerate() {
        let e = elbo(
            denoiser,
            context,
            continuation,
            &settings,
            i as u64,
            request.length,
        )
        .map_err(|e| e.context(format!("row {i}")))?;
        let draws = settings
            .per_draw
            .then(|| e.draws.iter().map(|d| d.value).collect());
        answers.push(LoglikelihoodRow::estimate(e.mean, e.std_error, draws));
    }
    denoiser.synchronize();
    let calls_per_row = if denoiser.time_conditioned() {
        settings.mc_num
    } else {
        settings.mc_num.div_ceil(settings.batch)
    };
    let mut reply = LoglikelihoodReply::new(answers, "elbo");
    reply.nfe = (calls_per_row * rows.len()) as u64;
    reply.wall_seconds = started.elapsed().as_secs_f64();
    reply.settings = Some(serde_json::json!({ "elbo": settings }));
    Ok(reply)
}

/// Exact answers (a task's ground truth) as a reply.
pub fn exact_reply(values: Vec<f64>) -> LoglikelihoodReply {
    LoglikelihoodReply::new(
        values.into_iter().map(LoglikelihoodRow::exact).collect(),
        "exact",
    )
}

#[cfg(test)]
mod tests;
