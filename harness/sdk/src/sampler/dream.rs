//! `dream` — Dream's own decoder (Dream-org's `generation_utils.py`, `_sample`), one step per
//! point of the grid `t = linspace(1, eps, steps + 1)`.
//!
//! At step `i` (from `t` to `s`), with `n` positions of the sample still masked:
//! * every masked position's distribution is shaped as `sample_tokens` does — the logits divided
//!   by `temperature` (when > 0), then `top_p`, then `top_k`, then the softmax — and `x0` is its
//!   argmax (`temperature = 0`) or a draw from it;
//! * `alg = origin`: each masked position unmasks to its `x0` with probability `1 − s/t` (all at
//!   the last step);
//! * otherwise the confidence of each position is taken from that *shaped* distribution —
//!   `maskgit_plus`: `p(x0)`; `topk_margin`: `p1 − p2`; `entropy`: `Σ p ln(p + 1e-10)` (minus the
//!   entropy) — and `⌊n · (1 − s/t)⌋` positions commit (all `n` at the last step): the most
//!   confident (`alg_temp = 0`; ties to the earlier position), or a draw without replacement
//!   from `softmax(confidence / alg_temp)`.
//!
//! The grid and the count are computed in f32 as the reference computes them (torch's
//! `linspace` in float32, `int()` truncating), so the per-step counts are the reference's.
//! With `eps > 0` the first step's count is `⌊n(1 − eps)/steps⌋`, which is 0 when
//! `steps = n`: Dream commits nothing at its first step and two positions at its last.
//!
//! Two deliberate differences from the reference: each sample's count is its own (the reference
//! uses the batch's mean number of masked positions, the same for every row of a batch whose
//! rows are equally long), so a sample never depends on its batch; and the random draws
//! (`temperature > 0`, `origin`'s unmasking, `alg_temp > 0`) come from the sample's own stream
//! ([`Run::rng`]), so only argmax-determined generations equal torch's token for token.
//! Uniforms are taken per sample in this order: for `origin`, one per masked position (unmask
//! or not) and one per unmasking position's draw; otherwise one per masked position's draw
//! (when `temperature > 0`), then one per committed position (when `alg_temp > 0`).
//!
//! Cost: each step reads the masked positions' whole rows back to the host ([`Run::log_weights`],
//! masked positions × vocabulary floats) and shapes and scores them there in f64, where the
//! other samplers draw on the device and return only tokens and scores.

use super::params::{Bound, Choice, Handle, Number};
use super::{categorical, DenoiserSampler, Param, Params, Run, Sampler, Steps, Want};
use crate::{PluginError, Result};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Dream's `alg`: how the positions to commit are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DreamAlg {
    /// Each masked position unmasks with probability `1 − s/t`.
    Origin,
    /// The most probable `x0` first.
    MaskgitPlus,
    /// The largest gap between the two most probable tokens first.
    TopkMargin,
    /// The lowest entropy first.
    Entropy,
}

/// `alg`: Dream's commit rule.
pub const ALG: Choice<DreamAlg> = Choice {
    name: "alg",
    options: &[
        ("origin", DreamAlg::Origin),
        ("maskgit_plus", DreamAlg::MaskgitPlus),
        ("topk_margin", DreamAlg::TopkMargin),
        ("entropy", DreamAlg::Entropy),
    ],
    doc: "Dream's commit rule (its diffusion_generate's alg)",
};

/// `eps`: where the time grid ends.
pub const EPS: Number = Number {
    name: "eps",
    default: 1e-3,
    bound: Bound::NonNegative,
    doc: "the time grid is linspace(1, eps, steps + 1), as Dream's",
};

/// `alg_temp`: the temperature of the draw of the positions to commit (0: the most confident).
pub const ALG_TEMP: Number = Number {
    name: "alg_temp",
    default: 0.0,
    bound: Bound::NonNegative,
    doc:
        "0 commits the most confident positions; > 0 draws them from softmax(confidence / alg_temp)",
};

/// The `dream` sampler.
#[derive(Debug, Clone, Copy)]
pub struct Dream;

impl Sampler for Dream {
    fn name(&self) -> &'static str {
        "dream"
    }
    fn params(&self) -> Vec<Param> {
        vec![ALG.param(), EPS.param(), ALG_TEMP.param()]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

impl DenoiserSampler for Dream {
    fn scores(&self, _: &Params) -> Want {
        // Its scores come from the shaped distribution, which it computes from the rows itself.
        Want::default()
    }

    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        let eps = params.get(&EPS);
        if eps >= 1.0 {
            return Err(PluginError::bad_config(format!(
                "dream: eps must be below 1 (the grid runs from t = 1 down to eps), got {eps}"
            )));
        }
        let rule = Rule {
            alg: params.get(&ALG),
            alg_temp: params.get(&ALG_TEMP),
            shaping: Shaping {
                temperature: params.shaping.temperature,
                top_p: params.shaping.top_p,
                top_k: params.shaping.top_k,
            },
        };
        let steps = run.steps();
        let grid = linspace_f32(1.0, eps as f32, steps + 1);
        let (batch, length) = (run.batch(), run.length());
        let whole = 0..length;
        for i in 0..steps {
            let masked: Vec<Vec<usize>> = (0..batch).map(|b| run.masked_in(b, &whole)).collect();
            if masked.iter().all(Vec::is_empty) {
                break;
            }
            let (t, s) = (grid[i], grid[i + 1]);
            run.forward(f64::from(t))?;
            let rows: Vec<usize> = masked
                .iter()
                .enumerate()
                .flat_map(|(b, positions)| positions.iter().map(move |&j| b * length + j))
                .collect();
            let weights = run.log_weights(&rows)?;
            let vocab = weights.len() / rows.len().max(1);
            let mut offset = 0;
            for (b, positions) in masked.iter().enumerate() {
                let n = positions.len();
                if n == 0 {
                    continue;
                }
                run.count_call(b);
                let own = &weights[offset * vocab..(offset + n) * vocab];
                offset += n;
                let last = i + 1 == steps;
                let commits = rule.step(own, vocab, n, (t, s), last, run.rng(b))?;
                for (index, token) in commits {
                    run.commit(b * length + positions[index], token);
                }
            }
        }
        Ok(())
    }
}

/// `sample_tokens`'s shaping, in its order (temperature, top-p, top-k).
#[derive(Debug, Clone, Copy)]
pub(super) struct Shaping {
    pub temperature: f64,
    pub top_p: Option<f64>,
    pub top_k: Option<usize>,
}

/// One sample's commit rule at one step (also `dream_cache`'s fixed quota).
pub(super) struct Rule {
    pub alg: DreamAlg,
    pub alg_temp: f64,
    pub shaping: Shaping,
}

impl Rule {
    /// The `(index among the n masked positions, token)` pairs to commit, from the positions'
    /// log-weights (`n × vocab`, any per-row offset).
    pub(super) fn step(
        &self,
        log_weights: &[f64],
        vocab: usize,
        n: usize,
        (t, s): (f32, f32),
        last: bool,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<(usize, u32)>> {
        let ratio = 1.0f32 - s / t;
        let row = |k: usize| &log_weights[k * vocab..(k + 1) * vocab];
        if self.alg == DreamAlg::Origin {
            let p_transfer = if last { 1.0 } else { f64::from(ratio) };
            let unmask: Vec<bool> = (0..n).map(|_| rng.random::<f64>() < p_transfer).collect();
            let mut commits = Vec::new();
            for (k, _) in unmask.iter().enumerate().filter(|(_, &u)| u) {
                let q = shaped(row(k), &self.shaping);
                commits.push((k, self.draw(&q, rng)?));
            }
            return Ok(commits);
        }
        let mut tokens = Vec::with_capacity(n);
        let mut confidence = Vec::with_capacity(n);
        for k in 0..n {
            let q = shaped(row(k), &self.shaping);
            let x0 = self.draw(&q, rng)?;
            confidence.push(match self.alg {
                DreamAlg::MaskgitPlus | DreamAlg::Origin => q[x0 as usize],
                DreamAlg::TopkMargin => top_two_gap(&q),
                DreamAlg::Entropy => q.iter().map(|&p| p * (p + 1e-10).ln()).sum(),
            });
            tokens.push(x0);
        }
        let count = if last {
            n
        } else {
            // int(num_mask_token * (1 - s / t)) in float32, truncating.
            ((n as f32) * ratio).max(0.0) as usize
        }
        .min(n);
        let chosen = if self.alg_temp == 0.0 {
            most_confident(&confidence, count)
        } else {
            draw_without_replacement(&confidence, self.alg_temp, count, rng)
        };
        Ok(chosen.into_iter().map(|k| (k, tokens[k])).collect())
    }

    /// `x0`: the argmax (first on ties) at temperature 0, else a draw from `q`.
    pub(super) fn draw(&self, q: &[f64], rng: &mut ChaCha8Rng) -> Result<u32> {
        if self.shaping.temperature == 0.0 {
            Ok(argmax(q) as u32)
        } else {
            Ok(categorical(q, rng)? as u32)
        }
    }
}

/// The distribution `sample_tokens` takes `x0` and the confidence from: `logits / temperature`
/// (temperature > 0), then top-p (the sorted tokens whose preceding mass is ≤ `top_p`; the
/// first always), then top-k (the tokens at least as likely as the k-th), then the softmax.
pub(super) fn shaped(log_weights: &[f64], shaping: &Shaping) -> Vec<f64> {
    let scale = if shaping.temperature > 0.0 {
        1.0 / shaping.temperature
    } else {
        1.0
    };
    let max = log_weights
        .iter()
        .cloned()
        .fold(f64::NEG_INFINITY, f64::max);
    let mut w: Vec<f64> = log_weights
        .iter()
        .map(|&z| ((z - max) * scale).exp())
        .collect();
    if let Some(top_p) = shaping.top_p.filter(|&p| p < 1.0) {
        let total: f64 = w.iter().sum();
        let mut order: Vec<usize> = (0..w.len()).collect();
        order.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
        let mut before = 0.0;
        let mut cut = Vec::new();
        for &j in &order {
            if before > top_p {
                cut.push(j);
            }
            before += w[j] / total;
        }
        for j in cut {
            w[j] = 0.0;
        }
    }
    if let Some(k) = shaping.top_k.filter(|&k| k > 0 && k < w.len()) {
        let mut sorted = w.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let kth = sorted[k - 1];
        for x in w.iter_mut().filter(|x| **x < kth) {
            *x = 0.0;
        }
    }
    let total: f64 = w.iter().sum();
    w.iter_mut().for_each(|x| *x /= total);
    w
}

fn argmax(q: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in q.iter().enumerate() {
        if x > q[best] {
            best = i;
        }
    }
    best
}

fn top_two_gap(q: &[f64]) -> f64 {
    let (mut first, mut second) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for &x in q {
        if x > first {
            second = first;
            first = x;
        } else if x > second {
            second = x;
        }
    }
    first - second.max(0.0)
}

/// The `count` highest confidences, ties to the earlier position.
pub(super) fn most_confident(confidence: &[f64], count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..confidence.len()).collect();
    order.sort_by(|&a, &b| confidence[b].total_cmp(&confidence[a]).then(a.cmp(&b)));
    order.truncate(count);
    order
}

/// `count` positions drawn without replacement with weights `softmax(confidence / alg_temp)`
/// (what `torch.multinomial(…, count)` draws), one uniform per position drawn.
fn draw_without_replacement(
    confidence: &[f64],
    alg_temp: f64,
    count: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<usize> {
    let max = confidence.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut weights: Vec<f64> = confidence
        .iter()
        .map(|&c| ((c - max) / alg_temp).exp())
        .collect();
    let mut chosen = Vec::with_capacity(count);
    for _ in 0..count {
        let total: f64 = weights.iter().sum();
        let u = rng.random::<f64>() * total;
        let mut acc = 0.0;
        let mut pick = weights.iter().rposition(|&w| w > 0.0).unwrap_or(0);
        for (k, &w) in weights.iter().enumerate() {
            acc += w;
            if w > 0.0 && u < acc {
                pick = k;
                break;
            }
        }
        chosen.push(pick);
        weights[pick] = 0.0;
    }
    chosen
}

/// torch's `linspace(start, end, n)` in float32 (its CPU kernel: the first half counted up
/// from `start`, the second down from `end`).
pub(crate) fn linspace_f32(start: f32, end: f32, n: usize) -> Vec<f32> {
    if n == 1 {
        return vec![start];
    }
    let step = (end - start) / (n - 1) as f32;
    let halfway = n / 2;
    (0..n)
        .map(|i| {
            if i < halfway {
                start + step * i as f32
            } else {
                end - step * (n - i - 1) as f32
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_and_counts_follow_the_reference_rule() {
        // Dream with steps = n = 16 and eps = 1e-3 commits 0 first, then 1 a step, 2 at the end
        // (counts recorded from the reference's _sample in plugins/hf's generations.json).
        let grid = linspace_f32(1.0, 1e-3, 17);
        assert_eq!(grid[0], 1.0);
        assert_eq!(grid[16], 1e-3);
        let mut n = 16usize;
        let mut counts = Vec::new();
        for i in 0..16 {
            let k = if i == 15 {
                n
            } else {
                ((n as f32) * (1.0 - grid[i + 1] / grid[i])) as usize
            };
            counts.push(k);
            n -= k;
        }
        assert_eq!(counts, [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]);
    }

    #[test]
    fn top_p_keeps_the_token_that_crosses_the_mass() {
        let logw: Vec<f64> = [0.5f64, 0.3, 0.2].iter().map(|p| p.ln()).collect();
        let shaping = Shaping {
            temperature: 0.0,
            top_p: Some(0.6),
            top_k: None,
        };
        // 0.5 < 0.6 keeps the second token (preceding mass 0.5 ≤ 0.6); the third goes.
        let q = shaped(&logw, &shaping);
        assert!((q[0] - 0.625).abs() < 1e-12 && (q[1] - 0.375).abs() < 1e-12 && q[2] == 0.0);
        let q = shaped(
            &logw,
            &Shaping {
                top_p: None,
                top_k: Some(1),
                ..shaping
            },
        );
        assert_eq!(q, vec![1.0, 0.0, 0.0]);
    }
}
