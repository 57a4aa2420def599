//! Shared samplers, step accounting and timing.
//!
//! Every sample owns a random stream derived from `(seed, sample index)` alone
//! ([`sample_rng`]); every draw a sampler makes for a sample comes from that stream in a fixed
//! order (positions left to right), so a sample's tokens do not depend on the batch size or on
//! sharding. Categorical draws are made in f64 by inverse CDF ([`categorical`]).
//!
//! # The meaning of `steps`
//! `steps` is the **total number of denoising steps across the whole sequence**, all blocks
//! included. With semi-autoregressive blocks (`block_length` < L) the steps are split over the
//! blocks as evenly as possible (earlier blocks get the remainder); every block needs at least
//! one step. Inside a block of `M` masked positions and `S` steps, step `k` has the quota
//! `⌊M/S⌋ + [k < M mod S]` (LLaDA's `get_num_transfer_tokens`), so the quotas always sum to `M`
//! and no mask survives the last step — no separate noise-removal pass is ever needed.
//! * Fixed-quota rules (`low_confidence`, `random`) commit exactly the quota.
//! * Adaptive rules (`threshold`, `factor`, `eb`) commit what their rule accepts, but never fewer
//!   than the quota: `steps` is their step budget, and they may finish a block early. With
//!   `steps = L` the quota is one token, which is the anchors' "at least one token per step".
//! * `ddpm`/`ddpm_cache` use `steps` as the time grid of each block (positions unmask at random,
//!   Binomially); the grid ends at `t = 0` where every remaining position unmasks.
//! * `left_to_right` takes exactly `L` steps (one position per step).
//! * `ar` (autoregressive models) takes exactly `L` steps.
//!
//! # Samplers
//! * `ddpm` — MDLM ancestral: from `t` to `s` each masked position unmasks with probability
//!   `(α_s − α_t)/(1 − α_t)` and then draws its token from the denoiser's distribution.
//! * `ddpm_cache` — the same draws; the network is called again only after some token of the
//!   batch changed (valid only for time-independent denoisers; refused otherwise). Identical
//!   tokens to `ddpm` for the same seed, NFE ≤ min(steps, L).
//! * `low_confidence` / `random` — LLaDA remasking: draw `x0` at every masked position of the
//!   block, commit the quota with the highest confidence `p(x0)` (untempered) or with the
//!   highest uniform score; the rest stay masked.
//! * `threshold` — Fast-dLLM: commit the top-1 and every position with `p(x0) ≥ tau`.
//! * `factor` — Fast-dLLM's factor rule: sort confidences `c(1) ≥ c(2) ≥ …`, commit the longest
//!   prefix with `c(k) ≥ 1 − factor/(k+1)` for every `k` in it (rank 1 always). We implement
//!   the stated rule; the anchors' code also accepts everything when only the last rank fails.
//! * `eb` — entropy-bounded unmasking: order the masked positions by an error proxy
//!   (`entropy`, `confidence` = −max p, `margin` = −(p1 − p2)), commit the longest prefix whose
//!   entropies satisfy `Σ H − max H ≤ gamma`. As in the anchors, `gamma = 0` commits every
//!   zero-entropy position plus one more, so one token per step on full-support distributions.
//! * `left_to_right` — one position per step, in order, from the denoiser's conditional given
//!   the prefix (the "AR-style MDM" baseline).
//! * `ar` — ancestral sampling of an [`Autoregressive`] model, one token per call; the model's
//!   `next` receives only the newly appended tokens, which is the hook for a KV cache.
//!
//! Parameters (`params:` in a suite): `temperature` (default 1; 0 = argmax), `top_k`, `top_p`
//! (applied to the distribution `x0` is drawn from), `block_length` (default L), `tau`
//! (`threshold`, default 0.9), `factor` (`factor`, default 1.0), `gamma` and `proxy` (`eb`,
//! defaults 0.1 and `entropy`). Schedules (`ddpm*` only): `loglinear` (default, `α = 1 − t`),
//! `linear` (MDLM: `α = exp(−(σmin + t(σmax − σmin)))`, σ 1e-4…20), `cosine` (`α = cos(πt/2)`).
//!
//! # Accounting
//! `batch_nfe` counts network calls actually made for the batch. A sample's `nfe` counts the
//! calls that sample needed on its own: calls made while it still had masked positions, and for
//! `ddpm_cache` only the first one plus one after each step that changed one of *its* tokens —
//! so it does not depend on who shared its batch.

use crate::{
    Denoiser, GenerateReply, GenerateRequest, PluginError, Result, SampleStats, SamplerInfo,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Instant;

/// Sampler names for denoisers.
pub const SAMPLERS: &[&str] = &[
    "ddpm",
    "ddpm_cache",
    "low_confidence",
    "random",
    "threshold",
    "factor",
    "eb",
    "left_to_right",
];

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

fn check_weights(weights: &[f64]) -> Result<()> {
    let total: f64 = weights.iter().sum();
    if !(total.is_finite() && total > 0.0) || weights.iter().any(|&w| w < 0.0 || w.is_nan()) {
        return Err(PluginError(format!(
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

/// Which per-position scores a draw returns besides the tokens (only what the rule reads).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Want {
    /// `p(x0)` of the drawn token under the untempered distribution.
    pub confidence: bool,
    /// Entropy of the untempered distribution (nats).
    pub entropy: bool,
    /// Largest probability.
    pub max_prob: bool,
    /// Largest minus second-largest probability.
    pub margin: bool,
}

impl Want {
    fn for_rule(rule: &str, params: &Params) -> Want {
        match rule {
            "low_confidence" | "threshold" | "factor" => Want {
                confidence: true,
                ..Want::default()
            },
            "eb" => Want {
                entropy: true,
                max_prob: params.proxy == Proxy::Confidence,
                margin: params.proxy == Proxy::Margin,
                ..Want::default()
            },
            _ => Want::default(),
        }
    }
}

/// Tokens drawn at the requested rows, in request order, with the scores asked for (the
/// vectors of scores not asked for are empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Drawn {
    pub tokens: Vec<u32>,
    pub confidence: Vec<f64>,
    pub entropy: Vec<f64>,
    pub max_prob: Vec<f64>,
    pub margin: Vec<f64>,
}

/// A draw that failed at request `at` (an index into the rows asked for).
#[derive(Debug)]
pub(crate) struct RowError {
    pub at: usize,
    pub message: String,
}

/// The host path's draw: rows of `probs` (`vocab` values each), shaped by the sampler's
/// parameters and drawn by inverse CDF in f64 at the given uniforms.
pub(crate) fn host_draw(
    probs: &[f64],
    vocab: usize,
    rows: &[usize],
    uniforms: &[f64],
    params: &Params,
    want: Want,
) -> std::result::Result<Drawn, RowError> {
    let mut scratch = Vec::with_capacity(vocab);
    let mut drawn = Drawn::default();
    for (at, (&row, &u)) in rows.iter().zip(uniforms).enumerate() {
        let p = &probs[row * vocab..(row + 1) * vocab];
        shape_distribution(p, params, &mut scratch);
        check_weights(&scratch).map_err(|e| RowError { at, message: e.0 })?;
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

/// A noise schedule as the clean-token probability `α(t)`, `α(0) = 1`, `α(1) ≈ 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    /// `loglinear` (the default): `α(t) = 1 − t`.
    LogLinear,
    /// `linear` (MDLM's linear σ): `α(t) = exp(−(σmin + t(σmax − σmin)))`, σ from 1e-4 to 20.
    Linear,
    /// `cosine`: `α(t) = cos(πt/2)`.
    Cosine,
}

impl Schedule {
    /// The schedule called `name` (`None` means `loglinear`); an unknown name is an error
    /// listing the known ones.
    pub fn parse(name: Option<&str>) -> Result<Schedule> {
        match name.unwrap_or("loglinear") {
            "loglinear" => Ok(Schedule::LogLinear),
            "linear" => Ok(Schedule::Linear),
            "cosine" => Ok(Schedule::Cosine),
            other => Err(PluginError(format!(
                "unknown schedule `{other}`; known schedules: loglinear, linear, cosine"
            ))),
        }
    }

    /// Probability `α(t)` that a position is still clean at diffusion time `t ∈ [0, 1]`.
    pub fn alpha(self, t: f64) -> f64 {
        const SIGMA_MIN: f64 = 1e-4;
        const SIGMA_MAX: f64 = 20.0;
        match self {
            Schedule::LogLinear => 1.0 - t,
            Schedule::Linear if t <= 0.0 => 1.0,
            Schedule::Linear => (-(SIGMA_MIN + t * (SIGMA_MAX - SIGMA_MIN))).exp(),
            Schedule::Cosine => (std::f64::consts::FRAC_PI_2 * t).cos(),
        }
    }

    /// Probability that a position masked at time `t` is unmasked by time `s < t`.
    pub fn unmask_probability(self, t: f64, s: f64) -> f64 {
        if s <= 0.0 {
            return 1.0;
        }
        let (at, as_) = (self.alpha(t), self.alpha(s));
        ((as_ - at) / (1.0 - at)).clamp(0.0, 1.0)
    }
}

/// LLaDA's per-step quotas: `m` tokens over `steps` steps, summing to `m`.
pub fn quotas(m: usize, steps: usize) -> Vec<usize> {
    let steps = steps.max(1);
    (0..steps)
        .map(|k| m / steps + usize::from(k < m % steps))
        .collect()
}

/// Split `steps` over `blocks` blocks (earlier blocks take the remainder); each needs ≥ 1.
pub fn split_steps(steps: usize, blocks: usize) -> Result<Vec<usize>> {
    if steps < blocks {
        return Err(PluginError(format!(
            "{steps} steps cannot cover {blocks} blocks: every block needs at least one step (steps is the total across blocks); raise steps or block_length"
        )));
    }
    Ok(quotas(steps, blocks))
}

/// Consecutive blocks of `block_length` positions covering `start..length`.
pub fn blocks(start: usize, length: usize, block_length: usize) -> Vec<Range<usize>> {
    let bl = block_length.max(1);
    (start..length)
        .step_by(bl)
        .map(|b| b..(b + bl).min(length))
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Proxy {
    Entropy,
    Confidence,
    Margin,
}

/// Sampler parameters with their defaults.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    pub temperature: f64,
    pub top_k: Option<usize>,
    pub top_p: Option<f64>,
    pub block_length: Option<usize>,
    pub tau: f64,
    pub factor: f64,
    pub gamma: f64,
    pub proxy: Proxy,
}

fn known_params(sampler: &str) -> &'static [&'static str] {
    match sampler {
        "ddpm" | "ddpm_cache" | "low_confidence" | "random" => {
            &["temperature", "top_k", "top_p", "block_length"]
        }
        "threshold" => &["temperature", "top_k", "top_p", "block_length", "tau"],
        "factor" => &["temperature", "top_k", "top_p", "block_length", "factor"],
        "eb" => &[
            "temperature",
            "top_k",
            "top_p",
            "block_length",
            "gamma",
            "proxy",
        ],
        "left_to_right" | "ar" => &["temperature", "top_k", "top_p"],
        _ => &[],
    }
}

/// What the harness needs to know about the SDK's sampler `name` (`ar` included): whether it
/// takes one step per token, and its parameters. The harness reads this from plugin
/// descriptors and never interprets sampler names itself.
pub fn info(name: &str) -> SamplerInfo {
    SamplerInfo {
        name: name.to_string(),
        one_step_per_token: matches!(name, "left_to_right" | "ar"),
        params: known_params(name).iter().map(|p| p.to_string()).collect(),
        steps_optional: false,
    }
}

fn parse_params(sampler: &str, raw: &BTreeMap<String, Value>) -> Result<Params> {
    let known = known_params(sampler);
    for k in raw.keys() {
        if !known.contains(&k.as_str()) {
            return Err(PluginError(format!(
                "sampler `{sampler}` has no parameter `{k}`; its parameters: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
    }
    let num = |k: &str, default: f64| -> Result<f64> {
        match raw.get(k) {
            None => Ok(default),
            Some(v) => v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
                PluginError(format!("sampler parameter `{k}` must be a number, got {v}"))
            }),
        }
    };
    let count = |k: &str| -> Result<Option<usize>> {
        match raw.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .filter(|&x| x > 0)
                .map(|x| Some(x as usize))
                .ok_or_else(|| {
                    PluginError(format!(
                        "sampler parameter `{k}` must be a positive integer, got {v}"
                    ))
                }),
        }
    };
    let temperature = num("temperature", 1.0)?;
    if temperature < 0.0 {
        return Err(PluginError(
            "temperature must be ≥ 0 (0 means argmax)".into(),
        ));
    }
    let top_p = match raw.get("top_p") {
        None => None,
        Some(_) => {
            let p = num("top_p", 1.0)?;
            if !(p > 0.0 && p <= 1.0) {
                return Err(PluginError(format!("top_p must be in (0, 1], got {p}")));
            }
            Some(p)
        }
    };
    let gamma = num("gamma", 0.1)?;
    if gamma < 0.0 {
        return Err(PluginError(format!("gamma must be ≥ 0, got {gamma}")));
    }
    let proxy = match raw.get("proxy").map(|v| v.as_str()) {
        None => Proxy::Entropy,
        Some(Some("entropy")) => Proxy::Entropy,
        Some(Some("confidence")) => Proxy::Confidence,
        Some(Some("margin")) => Proxy::Margin,
        Some(_) => {
            return Err(PluginError(
                "proxy must be one of: entropy, confidence, margin".into(),
            ))
        }
    };
    Ok(Params {
        temperature,
        top_k: count("top_k")?,
        top_p,
        block_length: count("block_length")?,
        tau: num("tau", 0.9)?,
        factor: num("factor", 1.0)?,
        gamma,
        proxy,
    })
}

/// The distribution `x0` is drawn from: temperature, then top-k, then top-p; `temperature = 0`
/// puts all mass on the argmax (first index on ties).
fn shape_distribution(p: &[f64], params: &Params, out: &mut Vec<f64>) {
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

/// What the samplers need from a denoising network, wherever its output lives: one forward
/// pass over the canvas, then draws (and scores) at chosen positions of that output. The host
/// path keeps the output as f64 probabilities ([`Denoiser`]); the device path keeps logits as a
/// Burn tensor on the model's device (`device::TensorDenoiser`, feature `burn`).
pub(crate) trait DenoiseNet {
    fn vocab_size(&self) -> usize;
    fn time_conditioned(&self) -> bool;
    fn device(&self) -> String;
    /// Run the network on `tokens` (`batch × length`); later draws read this output.
    fn forward(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<()>;
    /// Draw at output rows `rows` (`b · length + j`), `uniforms[i]` being row `i`'s draw.
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Params,
        want: Want,
    ) -> std::result::Result<Drawn, RowError>;
    fn synchronize(&mut self);
}

/// The host path: a [`Denoiser`] writing f64 probabilities into a buffer.
struct HostNet<'a, D: Denoiser + ?Sized> {
    denoiser: &'a mut D,
    probs: Vec<f64>,
}

impl<D: Denoiser + ?Sized> DenoiseNet for HostNet<'_, D> {
    fn vocab_size(&self) -> usize {
        self.denoiser.vocab_size()
    }
    fn time_conditioned(&self) -> bool {
        self.denoiser.time_conditioned()
    }
    fn device(&self) -> String {
        self.denoiser.device()
    }
    fn forward(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<()> {
        self.probs
            .resize(batch * length * self.denoiser.vocab_size(), 0.0);
        self.denoiser
            .denoise(tokens, batch, length, t, &mut self.probs)
    }
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Params,
        want: Want,
    ) -> std::result::Result<Drawn, RowError> {
        host_draw(
            &self.probs,
            self.denoiser.vocab_size(),
            rows,
            uniforms,
            params,
            want,
        )
    }
    fn synchronize(&mut self) {
        self.denoiser.synchronize()
    }
}

/// Generate a batch with the sampler the request names (host path: f64 distributions).
pub fn generate<D: Denoiser + ?Sized>(
    denoiser: &mut D,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_with(
        &mut HostNet {
            denoiser,
            probs: Vec::new(),
        },
        request,
    )
}

/// Every denoiser sampler, over either path.
pub(crate) fn generate_with<N: DenoiseNet>(
    net: &mut N,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    let (batch, length) = (request.batch_size, request.length);
    if batch == 0 || length == 0 {
        return Err(PluginError(format!(
            "batch size and length must be positive (got batch {batch}, length {length})"
        )));
    }
    let spec = &request.sampler;
    if !SAMPLERS.contains(&spec.name.as_str()) {
        return Err(PluginError(format!(
            "unknown sampler `{}` for a denoiser; this SDK provides: {}",
            spec.name,
            SAMPLERS.join(", ")
        )));
    }
    let params = parse_params(&spec.name, &spec.params)?;
    let vocab = net.vocab_size();
    let mut canvas = Canvas::new(batch, length, vocab as u32, request.prompts.as_deref())?;
    let mut rngs: Vec<ChaCha8Rng> = (0..batch as u64)
        .map(|i| sample_rng(request.seed, request.first_index + i))
        .collect();
    let start = Instant::now();
    let mut run = Run {
        net,
        batch_nfe: 0,
        sample_nfe: vec![0; batch],
    };
    match spec.name.as_str() {
        "left_to_right" => {
            if spec.steps != length {
                return Err(PluginError(format!(
                    "left_to_right decodes one position per step, so steps must equal the length ({length}); got {}",
                    spec.steps
                )));
            }
            run.left_to_right(&mut canvas, &mut rngs, &params)?;
        }
        name => {
            if spec.steps == 0 {
                return Err(PluginError(format!("{name} needs steps ≥ 1")));
            }
            let first = canvas.prompt_len.iter().copied().min().unwrap_or(0);
            let block_list = blocks(first, length, params.block_length.unwrap_or(length));
            let steps = split_steps(spec.steps, block_list.len())?;
            match name {
                "ddpm" | "ddpm_cache" => {
                    let cache = name == "ddpm_cache";
                    if cache && run.net.time_conditioned() {
                        return Err(PluginError(
                            "ddpm_cache reuses network outputs across time steps, which is only valid for a time-independent denoiser; this model is time-conditioned: use `ddpm`".into(),
                        ));
                    }
                    let schedule = Schedule::parse(spec.schedule.as_deref())?;
                    for (range, s) in block_list.iter().zip(steps) {
                        run.masked_diffusion(
                            &mut canvas,
                            &mut rngs,
                            range.clone(),
                            s,
                            schedule,
                            cache,
                            &params,
                        )?;
                    }
                }
                rule => {
                    if spec.schedule.is_some() {
                        return Err(PluginError(format!(
                            "sampler `{rule}` uses fixed per-step quotas; `schedule` applies only to ddpm and ddpm_cache"
                        )));
                    }
                    for (range, s) in block_list.iter().zip(steps) {
                        run.remasking(&mut canvas, &mut rngs, range.clone(), s, rule, &params)?;
                    }
                }
            }
        }
    }
    run.net.synchronize();
    let wall_seconds = start.elapsed().as_secs_f64();
    if canvas.tokens.contains(&canvas.mask) {
        return Err(PluginError(format!(
            "sampler `{}` left masked positions in its output (a bug in the sampler)",
            spec.name
        )));
    }
    let samples = (0..batch)
        .map(|b| SampleStats {
            nfe: run.sample_nfe[b],
            generated_tokens: (length - canvas.prompt_len[b]) as u64,
        })
        .collect();
    let sequences = canvas.tokens.chunks(length).map(<[u32]>::to_vec).collect();
    Ok((
        sequences,
        GenerateReply {
            lengths: vec![length; batch],
            samples,
            batch_nfe: run.batch_nfe,
            wall_seconds,
            device: run.net.device(),
            texts: None,
        },
    ))
}

/// The batch being generated, row-major `batch × length`.
struct Canvas {
    tokens: Vec<u32>,
    batch: usize,
    length: usize,
    mask: u32,
    prompt_len: Vec<usize>,
}

impl Canvas {
    fn new(batch: usize, length: usize, mask: u32, prompts: Option<&[Vec<u32>]>) -> Result<Canvas> {
        let mut tokens = vec![mask; batch * length];
        let mut prompt_len = vec![0; batch];
        if let Some(prompts) = prompts {
            if prompts.len() != batch {
                return Err(PluginError(format!(
                    "{} prompts given for a batch of {batch}",
                    prompts.len()
                )));
            }
            for (b, p) in prompts.iter().enumerate() {
                if p.len() > length {
                    return Err(PluginError(format!(
                        "prompt {b} has {} tokens, longer than the length {length}",
                        p.len()
                    )));
                }
                if let Some(&bad) = p.iter().find(|&&t| t >= mask) {
                    return Err(PluginError(format!(
                        "prompt {b} holds token id {bad}, outside the vocabulary 0..{mask}"
                    )));
                }
                tokens[b * length..b * length + p.len()].copy_from_slice(p);
                prompt_len[b] = p.len();
            }
        }
        Ok(Canvas {
            tokens,
            batch,
            length,
            mask,
            prompt_len,
        })
    }

    fn masked_in(&self, b: usize, range: &Range<usize>) -> Vec<usize> {
        range
            .clone()
            .filter(|&j| self.tokens[b * self.length + j] == self.mask)
            .collect()
    }
}

/// One generate call's state: the network and the NFE counters.
struct Run<'a, N: DenoiseNet> {
    net: &'a mut N,
    batch_nfe: u64,
    sample_nfe: Vec<u64>,
}

impl<N: DenoiseNet> Run<'_, N> {
    fn call(&mut self, canvas: &Canvas, t: f64) -> Result<()> {
        self.net
            .forward(&canvas.tokens, canvas.batch, canvas.length, t)?;
        self.batch_nfe += 1;
        Ok(())
    }

    /// Draw at canvas positions `rows` (`b · length + j`) of the last forward's output.
    fn draw(
        &mut self,
        canvas: &Canvas,
        rows: &[usize],
        uniforms: &[f64],
        params: &Params,
        want: Want,
    ) -> Result<Drawn> {
        self.net.draw(rows, uniforms, params, want).map_err(|e| {
            let row = rows[e.at];
            PluginError(format!(
                "sample {}, position {}: {}",
                row / canvas.length,
                row % canvas.length,
                e.message
            ))
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn masked_diffusion(
        &mut self,
        canvas: &mut Canvas,
        rngs: &mut [ChaCha8Rng],
        range: Range<usize>,
        steps: usize,
        schedule: Schedule,
        cache: bool,
        params: &Params,
    ) -> Result<()> {
        let (batch, length) = (canvas.batch, canvas.length);
        // Whether a sample's tokens changed since the network last saw them.
        let mut stale = vec![true; batch];
        let mut have_output = false;
        for i in 0..steps {
            let t = 1.0 - i as f64 / steps as f64;
            let s = 1.0 - (i + 1) as f64 / steps as f64;
            let masked: Vec<Vec<usize>> = (0..batch).map(|b| canvas.masked_in(b, &range)).collect();
            let active: Vec<bool> = masked.iter().map(|m| !m.is_empty()).collect();
            if !active.iter().any(|&a| a) {
                break;
            }
            if !cache || !have_output || (0..batch).any(|b| active[b] && stale[b]) {
                self.call(canvas, t)?;
                have_output = true;
                for b in 0..batch {
                    if active[b] && (!cache || stale[b]) {
                        self.sample_nfe[b] += 1;
                    }
                    stale[b] = false;
                }
            }
            // Per sample, positions left to right: the unmask coin, then (if heads) the token's
            // uniform — the stream order of one sample, whatever path draws the token.
            let p_unmask = schedule.unmask_probability(t, s);
            let (mut rows, mut uniforms) = (Vec::new(), Vec::new());
            for (b, positions) in masked.iter().enumerate() {
                for &j in positions {
                    if rngs[b].random::<f64>() < p_unmask {
                        rows.push(b * length + j);
                        uniforms.push(rngs[b].random::<f64>());
                    }
                }
            }
            if rows.is_empty() {
                continue;
            }
            let drawn = self.draw(canvas, &rows, &uniforms, params, Want::default())?;
            for (&row, &token) in rows.iter().zip(&drawn.tokens) {
                canvas.tokens[row] = token;
                stale[row / length] = true;
            }
        }
        Ok(())
    }

    fn remasking(
        &mut self,
        canvas: &mut Canvas,
        rngs: &mut [ChaCha8Rng],
        range: Range<usize>,
        steps: usize,
        rule: &str,
        params: &Params,
    ) -> Result<()> {
        let (batch, length) = (canvas.batch, canvas.length);
        // Per-step quotas of every row, transposed to step-major: step_quotas[k][b].
        let row_quotas: Vec<Vec<usize>> = (0..batch)
            .map(|b| quotas(canvas.masked_in(b, &range).len(), steps))
            .collect();
        let step_quotas: Vec<Vec<usize>> = (0..steps)
            .map(|k| row_quotas.iter().map(|q| q[k]).collect())
            .collect();
        let want = Want::for_rule(rule, params);
        for (k, quota_k) in step_quotas.iter().enumerate() {
            let masked: Vec<Vec<usize>> = (0..batch).map(|b| canvas.masked_in(b, &range)).collect();
            if masked.iter().all(Vec::is_empty) {
                break;
            }
            let t = 1.0 - k as f64 / steps as f64;
            self.call(canvas, t)?;
            // Draw x0 at every masked position of the block (fixed order), then score and select.
            let (mut rows, mut uniforms) = (Vec::new(), Vec::new());
            for (b, positions) in masked.iter().enumerate() {
                for &j in positions {
                    rows.push(b * length + j);
                    uniforms.push(rngs[b].random::<f64>());
                }
            }
            let drawn = self.draw(canvas, &rows, &uniforms, params, want)?;
            let mut offset = 0;
            for (b, positions) in masked.iter().enumerate() {
                let n = positions.len();
                if n == 0 {
                    continue;
                }
                self.sample_nfe[b] += 1;
                let span = offset..offset + n;
                offset += n;
                let quota = quota_k[b].min(n);
                let chosen = select(&drawn, span.clone(), quota, rule, params, &mut rngs[b]);
                for i in chosen {
                    canvas.tokens[b * length + positions[i]] = drawn.tokens[span.start + i];
                }
            }
        }
        Ok(())
    }

    fn left_to_right(
        &mut self,
        canvas: &mut Canvas,
        rngs: &mut [ChaCha8Rng],
        params: &Params,
    ) -> Result<()> {
        let (batch, length) = (canvas.batch, canvas.length);
        for j in 0..length {
            let needs: Vec<usize> = (0..batch)
                .filter(|&b| canvas.tokens[b * length + j] == canvas.mask)
                .collect();
            if needs.is_empty() {
                continue; // a prompt position in every row
            }
            self.call(canvas, (length - j) as f64 / length as f64)?;
            let rows: Vec<usize> = needs.iter().map(|&b| b * length + j).collect();
            let uniforms: Vec<f64> = needs.iter().map(|&b| rngs[b].random::<f64>()).collect();
            let drawn = self.draw(canvas, &rows, &uniforms, params, Want::default())?;
            for (&row, &token) in rows.iter().zip(&drawn.tokens) {
                canvas.tokens[row] = token;
                self.sample_nfe[row / length] += 1;
            }
        }
        Ok(())
    }
}

/// Indices (into the sample's masked positions, `drawn[span]`) to commit this step.
fn select(
    drawn: &Drawn,
    span: Range<usize>,
    quota: usize,
    rule: &str,
    params: &Params,
    rng: &mut ChaCha8Rng,
) -> Vec<usize> {
    let n = span.len();
    // Ranking score (higher first) and how many the rule accepts beyond the quota.
    let (score, accepted): (Vec<f64>, usize) = match rule {
        "random" => ((0..n).map(|_| rng.random::<f64>()).collect(), 0),
        "low_confidence" => (drawn.confidence[span].to_vec(), 0),
        "threshold" => {
            let c = drawn.confidence[span].to_vec();
            let above = c.iter().filter(|&&x| x >= params.tau).count();
            (c, above.max(1))
        }
        "factor" => {
            let c = drawn.confidence[span].to_vec();
            let mut sorted = c.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            let mut accept = 1;
            for (k, &ck) in sorted.iter().enumerate().skip(1) {
                if ck >= 1.0 - params.factor / (k as f64 + 2.0) {
                    accept = k + 1;
                } else {
                    break;
                }
            }
            (c, accept)
        }
        "eb" => {
            let h = &drawn.entropy[span.clone()];
            let err: Vec<f64> = match params.proxy {
                Proxy::Entropy => h.to_vec(),
                Proxy::Confidence => drawn.max_prob[span].iter().map(|m| -m).collect(),
                Proxy::Margin => drawn.margin[span].iter().map(|m| -m).collect(),
            };
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| err[a].total_cmp(&err[b]).then(a.cmp(&b)));
            let (mut sum, mut max, mut accept) = (0.0, 0.0f64, 0);
            for &i in &order {
                sum += h[i];
                max = max.max(h[i]);
                if sum - max <= params.gamma {
                    accept += 1;
                } else {
                    break;
                }
            }
            // Rank by ascending error proxy.
            (err.iter().map(|e| -e).collect(), accept.max(1))
        }
        _ => unreachable!("checked against SAMPLERS"),
    };
    let take = quota.max(accepted).min(n);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| score[b].total_cmp(&score[a]).then(a.cmp(&b)));
    order.truncate(take);
    order
}

/// An autoregressive model: next-token distributions given the prefix.
///
/// `begin` starts a batch; each `next` call appends one token per row (`None` before the first
/// position) and writes the next-token distribution of every row into `out` (`batch × vocab`).
/// Because only the new tokens are passed, a model can keep a KV cache and make each call cost
/// O(prefix) instead of re-running the whole prefix.
pub trait Autoregressive: Send {
    /// Number of real tokens; `next` writes `vocab_size()` probabilities per row.
    fn vocab_size(&self) -> usize;
    /// Device label recorded with every timing, e.g. `cpu` or `cuda:0`.
    fn device(&self) -> String {
        "cpu".to_string()
    }
    /// Start a batch of `batch` sequences of `length` tokens: drop any cache of the previous
    /// batch. Exactly `length` calls of `next` follow.
    fn begin(&mut self, batch: usize, length: usize) -> Result<()>;
    /// Append `appended` (one token per row; `None` on the first call, before any token) and
    /// write into `out` (`batch × vocab_size()`) each row's distribution over the next token:
    /// finite, non-negative, with positive mass (it need not be normalised).
    fn next(&mut self, appended: Option<&[u32]>, out: &mut [f64]) -> Result<()>;
    /// Block until queued device work is done, so timings are honest. CPU models need nothing.
    fn synchronize(&mut self) {}
}

/// Turns an [`Autoregressive`] model into a [`crate::Model`] with the `ar` sampler.
pub struct AutoregressiveModel<A: Autoregressive> {
    /// The wrapped model; every `generate` runs [`generate_ar`] over it.
    pub model: A,
}

impl<A: Autoregressive> crate::Model for AutoregressiveModel<A> {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        generate_ar(&mut self.model, request)
    }
}

/// What `ar` needs from an autoregressive network, wherever its output lives (as
/// [`DenoiseNet`] for denoisers): the next-token output of every row, then draws from it.
pub(crate) trait NextNet {
    fn vocab_size(&self) -> usize;
    fn device(&self) -> String;
    fn begin(&mut self, batch: usize, length: usize) -> Result<()>;
    fn next(&mut self, appended: Option<&[u32]>) -> Result<()>;
    /// Draw at rows `rows` (batch rows) of the last `next` output.
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Params,
    ) -> std::result::Result<Drawn, RowError>;
    fn synchronize(&mut self);
}

/// The host path: an [`Autoregressive`] model writing f64 probabilities.
struct HostNext<'a, A: Autoregressive + ?Sized> {
    model: &'a mut A,
    out: Vec<f64>,
}

impl<A: Autoregressive + ?Sized> NextNet for HostNext<'_, A> {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }
    fn device(&self) -> String {
        self.model.device()
    }
    fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
        self.out = vec![0.0; batch * self.model.vocab_size()];
        self.model.begin(batch, length)
    }
    fn next(&mut self, appended: Option<&[u32]>) -> Result<()> {
        self.model.next(appended, &mut self.out)
    }
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Params,
    ) -> std::result::Result<Drawn, RowError> {
        let vocab = self.model.vocab_size();
        host_draw(&self.out, vocab, rows, uniforms, params, Want::default())
    }
    fn synchronize(&mut self) {
        self.model.synchronize()
    }
}

/// Ancestral sampling of an autoregressive model (`ar`; `steps` must equal the length).
pub fn generate_ar<A: Autoregressive + ?Sized>(
    model: &mut A,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_ar_with(
        &mut HostNext {
            model,
            out: Vec::new(),
        },
        request,
    )
}

/// `ar` over either path.
pub(crate) fn generate_ar_with<N: NextNet>(
    model: &mut N,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    let (batch, length) = (request.batch_size, request.length);
    let spec = &request.sampler;
    if spec.name != "ar" {
        return Err(PluginError(format!(
            "an autoregressive model samples with `ar`, not `{}`",
            spec.name
        )));
    }
    if spec.steps != length {
        return Err(PluginError(format!(
            "ar takes one step per token: steps must equal the length ({length}); got {}",
            spec.steps
        )));
    }
    if batch == 0 || length == 0 {
        return Err(PluginError("batch size and length must be positive".into()));
    }
    let params = parse_params("ar", &spec.params)?;
    let vocab = model.vocab_size();
    let mut canvas = Canvas::new(batch, length, vocab as u32, request.prompts.as_deref())?;
    let mut rngs: Vec<ChaCha8Rng> = (0..batch as u64)
        .map(|i| sample_rng(request.seed, request.first_index + i))
        .collect();
    let start = Instant::now();
    model.begin(batch, length)?;
    let mut nfe = vec![0u64; batch];
    let mut batch_nfe = 0;
    for j in 0..length {
        let appended: Option<Vec<u32>> = (j > 0).then(|| {
            (0..batch)
                .map(|b| canvas.tokens[b * length + j - 1])
                .collect()
        });
        model.next(appended.as_deref())?;
        batch_nfe += 1;
        // Prompt tokens are fed, not sampled.
        let rows: Vec<usize> = (0..batch)
            .filter(|&b| canvas.tokens[b * length + j] == canvas.mask)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let uniforms: Vec<f64> = rows.iter().map(|&b| rngs[b].random::<f64>()).collect();
        let drawn = model.draw(&rows, &uniforms, &params).map_err(|e| {
            PluginError(format!(
                "sample {}, position {j}: {}",
                rows[e.at], e.message
            ))
        })?;
        for (&b, &token) in rows.iter().zip(&drawn.tokens) {
            canvas.tokens[b * length + j] = token;
            nfe[b] += 1;
        }
    }
    model.synchronize();
    let wall_seconds = start.elapsed().as_secs_f64();
    let samples = (0..batch)
        .map(|b| SampleStats {
            nfe: nfe[b],
            generated_tokens: (length - canvas.prompt_len[b]) as u64,
        })
        .collect();
    Ok((
        canvas.tokens.chunks(length).map(<[u32]>::to_vec).collect(),
        GenerateReply {
            lengths: vec![length; batch],
            samples,
            batch_nfe,
            wall_seconds,
            device: model.device(),
            texts: None,
        },
    ))
}

#[cfg(feature = "burn")]
pub mod device;

#[cfg(test)]
mod tests;
