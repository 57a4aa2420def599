//! The forward (noising) processes of the diffusion objectives: MDLM's, one time per
//! sequence, and BD3-LM's, one time per block ([`crate::block`]). Apart from the losses so that
//! the MDM's and the block model's objectives share them without importing each other.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Smallest diffusion time drawn (MDLM's `sampling_eps` for training).
pub const T_EPS: f64 = 1e-3;

/// A batch prepared for the MDM loss: the noisy input and per-token loss weights.
#[derive(Debug, Clone)]
pub struct MdmNoise {
    /// `x_t`, `batch × length`, masked positions hold `vocab`.
    pub xt: Vec<u32>,
    /// `1/t` at masked positions, 0 elsewhere.
    pub weights: Vec<f32>,
    /// The diffusion time of every sequence (of every block, for BD3-LM's [`block_noise`]).
    pub t: Vec<f64>,
    /// Positions the loss is averaged over: all of them, less the prompts.
    pub counted: usize,
}

/// MDLM forward noising for the log-linear schedule: antithetic times
/// `u_i = (u/n + i/n) mod 1`, `t_i = (1 − ε) u_i + ε`; every token is masked independently with
/// probability `1 − exp(−σ(t)) = (1 − ε) t` and weighted by `σ'(t)/expm1(σ(t)) = 1/t`.
pub fn mdm_noise(x0: &[u32], batch: usize, vocab: usize, rng: &mut ChaCha8Rng) -> MdmNoise {
    mdm_noise_batch(x0, batch, &[], vocab, rng)
}

/// [`mdm_noise`] with prompts kept (see [`mdm_noise_prompted`]).
pub fn mdm_noise_batch(
    x0: &[u32],
    batch: usize,
    prompts: &[usize],
    vocab: usize,
    rng: &mut ChaCha8Rng,
) -> MdmNoise {
    let u: f64 = rng.random();
    let times: Vec<f64> = (0..batch)
        .map(|i| {
            let ui = (u / batch as f64 + i as f64 / batch as f64).fract();
            (1.0 - T_EPS) * ui + T_EPS
        })
        .collect();
    mdm_noise_prompted(x0, &times, prompts, vocab, rng)
}

/// MDLM forward noising of sequence `i` at the given time `times[i]` (in `[ε, 1]`).
pub fn mdm_noise_at(x0: &[u32], times: &[f64], vocab: usize, rng: &mut ChaCha8Rng) -> MdmNoise {
    mdm_noise_prompted(x0, times, &[], vocab, rng)
}

/// [`mdm_noise_at`] for sequences whose first `prompts[i]` tokens are a prompt (text tasks):
/// those are never masked and not counted. An empty `prompts` means none; so does 0, and then
/// the random draws are exactly those of [`mdm_noise_at`].
pub fn mdm_noise_prompted(
    x0: &[u32],
    times: &[f64],
    prompts: &[usize],
    vocab: usize,
    rng: &mut ChaCha8Rng,
) -> MdmNoise {
    let length = x0.len() / times.len().max(1);
    let mut xt = x0.to_vec();
    let mut weights = vec![0f32; x0.len()];
    let mut counted = 0;
    for (i, &t) in times.iter().enumerate() {
        let move_chance = (1.0 - T_EPS) * t;
        let prompt = prompts.get(i).copied().unwrap_or(0).min(length);
        counted += length - prompt;
        for j in i * length + prompt..(i + 1) * length {
            if rng.random::<f64>() < move_chance {
                xt[j] = vocab as u32;
                weights[j] = (1.0 / t) as f32;
            }
        }
    }
    MdmNoise {
        xt,
        weights,
        t: times.to_vec(),
        counted,
    }
}

/// One antithetic time per block of every sequence (`batch × blocks`, row-major): MDLM's
/// `t_i = (1 − ε)((u + i)/n mod 1) + ε` over all `n = batch · blocks` draws (bd3lms'
/// `_sample_t`). With one block per sequence the draws are [`mdm_noise_batch`]'s.
pub fn antithetic_block_times(batch: usize, blocks: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let n = (batch * blocks).max(1);
    let u: f64 = rng.random();
    (0..batch * blocks)
        .map(|i| (1.0 - T_EPS) * ((u / n as f64 + i as f64 / n as f64).fract()) + T_EPS)
        .collect()
}

/// BD3-LM's forward noising of `batch` sequences (`x0`: `batch × length`): position `j` of
/// sequence `i` is masked with probability `(1 − ε) t` and weighted `1/t`, where
/// `t = times[i · blocks + j / block_size]` is its block's time; the first `prompts[i]`
/// positions are a prompt, never masked and not counted (empty: none). The result's `t` holds
/// the per-block times.
pub fn block_noise(
    x0: &[u32],
    batch: usize,
    times: &[f64],
    block_size: usize,
    prompts: &[usize],
    vocab: usize,
    rng: &mut ChaCha8Rng,
) -> MdmNoise {
    let length = x0.len() / batch.max(1);
    let blocks = length.div_ceil(block_size);
    debug_assert_eq!(times.len(), batch * blocks);
    let mut xt = x0.to_vec();
    let mut weights = vec![0f32; x0.len()];
    let mut counted = 0;
    for i in 0..batch {
        let prompt = prompts.get(i).copied().unwrap_or(0).min(length);
        counted += length - prompt;
        for j in prompt..length {
            let t = times[i * blocks + j / block_size];
            if rng.random::<f64>() < (1.0 - T_EPS) * t {
                xt[i * length + j] = vocab as u32;
                weights[i * length + j] = (1.0 / t) as f32;
            }
        }
    }
    MdmNoise {
        xt,
        weights,
        t: times.to_vec(),
        counted,
    }
}
