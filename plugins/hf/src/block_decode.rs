//! Decoding a block-diffusion checkpoint (SDAR) with the SDK's samplers, and SDAR's one commit
//! rule the SDK lacks.
//!
//! **Blocks.** SDAR's `block_diffusion_generate` (JetAstra/SDAR `generate.py`, commit
//! c2041a8333333d685f6e15122c84f60f51f85ebd) decodes the model's own blocks, which start at
//! position 0. The SDK's samplers cut blocks of `block_length` from each prompt's end. They are
//! the same blocks when `block_length` is the model's `block_size` and the prompt (its real
//! tokens, without left padding) is a whole number of blocks; [`align_request`] makes the
//! first true (a missing `block_length` becomes `block_size`, a different one is refused) and
//! refuses the rest. The reference also decodes a prompt that ends inside a block, as a first,
//! shorter block; the SDK's block framework has no such block, so that case is refused with
//! the fix (prompts whose length is a multiple of `block_size`).
//!
//! **Commit rules.** Per block, the reference draws `x0` from `softmax(logits / T)` (always
//! with `torch.multinomial`) and commits by one of four strategies, with the quotas
//! `get_num_transfer_tokens(block_length, steps)` (the SDK's `quotas` over a fully masked
//! block):
//!
//! * `low_confidence_static` — the quota with the highest `p(x0)`: the SDK's `low_confidence`;
//! * `low_confidence_dynamic` — every position with `p(x0) > threshold`, or the quota when fewer
//!   pass: the SDK's `threshold` with `tau` (the SDK commits at `p ≥ tau`, equal only at a tie);
//!
//!   for both, the reference's `p(x0)` is the *tempered* probability, the SDK's the model's, so
//!   they agree at `T = 1` (and, at `T → 0`, where every tempered `p(x0)` is 1 and the whole
//!   block passes `low_confidence_dynamic`'s threshold, with `threshold` at `tau: 0`);
//! * `sequential` — the quota of leftmost masked positions: [`Sequential`] here;
//! * `entropy_bounded` — the SDK's `eb` is the same idea with its own bound; not compared.
//!
//! **Cost.** The reference makes `steps` block-wide calls per block plus one more that stores
//! the finished block; the SDK's `cache: dual` makes `steps` calls per block, the first a fill
//! over the whole canvas, the rest block-wide windows.

use dlm_sdk::sampler::device::{TensorDenoiser, TensorDenoiserModel};
use dlm_sdk::sampler::params::{Handle, BLOCK_LENGTH};
use dlm_sdk::sampler::{
    remask, DenoiserSampler, Param, Params, Ranking, Registry, Run, Sampler, Steps, Want, CACHE,
    REFRESH,
};
use dlm_sdk::{
    GenerateReply, GenerateRequest, LoglikelihoodReply, LoglikelihoodRequest, Model, PluginError,
    Result,
};
use std::borrow::Cow;

/// SDAR's `sequential` strategy: at each step of a block, commit the step's quota of masked
/// positions from the left (the drawn `x0` there); the others stay masked.
#[derive(Debug, Clone, Copy)]
pub struct Sequential;

impl Sampler for Sequential {
    fn name(&self) -> &'static str {
        "sequential"
    }
    fn params(&self) -> Vec<Param> {
        vec![BLOCK_LENGTH.param(), CACHE.param(), REFRESH.param()]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

impl DenoiserSampler for Sequential {
    fn scores(&self, _: &Params) -> Want {
        Want::default()
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        // Equal scores: the ranking's ties go to the earlier position, so the quota is the
        // leftmost masked positions.
        remask(run, params.get(&BLOCK_LENGTH), &|_, span, _| Ranking {
            score: vec![0.0; span.len()],
            accepted: 0,
        })
    }
}

/// The samplers a block-diffusion checkpoint answers: the SDK's and [`Sequential`].
pub fn registry() -> Registry {
    Registry::built_in().with(&Sequential)
}

/// The request a model with blocks of `block_size` runs (see the module documentation):
/// `block_length` defaults to `block_size`, and a different one, a sampler without blocks, or
/// a prompt whose real tokens (`left_padding[b]` of prompt `b` are padding) end inside a block
/// is refused.
pub fn align_request<'a>(
    block_size: usize,
    request: &'a GenerateRequest,
    left_padding: &[usize],
) -> Result<Cow<'a, GenerateRequest>> {
    let sampler = &request.sampler;
    let takes_blocks = registry()
        .get(&sampler.name)
        .is_some_and(|s| s.params().iter().any(|p| p.name == "block_length"));
    if !takes_blocks {
        return Err(PluginError::bad_config(format!(
            "sampler `{}` does not decode in blocks, but the checkpoint is block diffusion with \
             `block_size: {block_size}` (config.json): use a sampler that takes `block_length` \
             (low_confidence, threshold, sequential, …)",
            sampler.name
        )));
    }
    let given = match sampler.params.get("block_length") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            PluginError::bad_config(format!(
                "sampler `{}`: `block_length` must be a positive integer, got {v}",
                sampler.name
            ))
        })? as usize),
    };
    if let Some(b) = given.filter(|&b| b != block_size) {
        return Err(PluginError::bad_config(format!(
            "sampler `{}` has `block_length: {b}`, but the checkpoint decodes blocks of \
             `block_size: {block_size}` (config.json); set `block_length: {block_size}` or \
             leave it out",
            sampler.name
        )));
    }
    for (b, prompt) in request.prompts.iter().flatten().enumerate() {
        let real = prompt.len() - left_padding.get(b).copied().unwrap_or(0).min(prompt.len());
        if !real.is_multiple_of(block_size) {
            return Err(PluginError::unsupported(format!(
                "prompt {b} has {real} tokens, which ends inside one of the checkpoint's blocks \
                 of {block_size}: the SDK's blocks start at the prompt's end, so they would not \
                 be the model's; use prompts whose length is a multiple of {block_size}"
            )));
        }
    }
    if given.is_some() {
        return Ok(Cow::Borrowed(request));
    }
    let mut aligned = request.clone();
    aligned
        .sampler
        .params
        .insert("block_length".into(), block_size.into());
    Ok(Cow::Owned(aligned))
}

/// A block-diffusion checkpoint as a [`Model`]: every request aligned to its blocks
/// ([`align_request`]), the SDK's samplers on the device, and [`Sequential`].
pub struct BlockDiffusionModel<D: TensorDenoiser> {
    /// The SDK's device-path model over the checkpoint.
    pub model: TensorDenoiserModel<D>,
    /// The checkpoint's `block_size`.
    pub block_size: usize,
}

impl<D: TensorDenoiser> Model for BlockDiffusionModel<D> {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let request = align_request(self.block_size, request, &[])?;
        if request.sampler.name == Sequential.name() {
            return registry().generate_on_device(&mut self.model.denoiser, &request);
        }
        self.model.generate(&request)
    }

    fn generate_left_padded(
        &mut self,
        request: &GenerateRequest,
        left_padding: &[usize],
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let request = align_request(self.block_size, request, left_padding)?;
        if request.sampler.name == Sequential.name() {
            if left_padding.iter().any(|&p| p > 0) {
                return Err(PluginError::unsupported(
                    "sampler `sequential` runs without left padding (the SDK runs a plugin's own \
                     samplers on the device only over unpadded batches): use `batch_size: 1` or \
                     drop `generation_length`",
                ));
            }
            return registry().generate_on_device(&mut self.model.denoiser, &request);
        }
        self.model.generate_left_padded(&request, left_padding)
    }

    fn loglikelihood(
        &mut self,
        _: &LoglikelihoodRequest,
        _: &[(Vec<u32>, Vec<u32>)],
    ) -> Result<LoglikelihoodReply> {
        // The SDK's ELBO masks positions over the whole sequence; a block-diffusion model's
        // bound is per block with clean predecessors, which is not implemented here.
        Err(PluginError::unsupported(
            "a block-diffusion checkpoint (SDAR) answers no log-likelihood requests: its ELBO \
             is per block over clean earlier blocks, which dlm-hf does not compute",
        ))
    }
}
