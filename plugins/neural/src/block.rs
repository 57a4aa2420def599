//! Block diffusion (BD3-LM, Arriola et al., ICLR 2025): the `mdm` model with `block_size`.
//!
//! The sequence is cut into blocks of `block_size` positions (the last one may be shorter).
//! Attention is **block-causal**: a position attends to every position of its own block and of
//! earlier blocks, none later. Block size 1 is an AR model that predicts each token from the
//! clean ones before it; a block over the whole sequence is today's MDM.
//!
//! * The mask enters the network in one place, [`crate::block_mask::mask_later_blocks`], which
//!   `Block::attention_bias` applies to every bias it builds (full pass, padded pass, the
//!   cache's fill and window), so every forward path of the model is block-causal.
//! * Training ([`bd3_loss_prompted`]) is BD3-LM's objective: each block of each sequence is
//!   noised at its own time `t` (MDLM's log-linear schedule, antithetic over the batch's
//!   blocks), and the network runs once over `x_t ⊕ x_0` (2L positions, both halves at their
//!   true positions) with [`bd3_training_sees`]'s mask: noisy block `b` sees noisy block `b`
//!   and clean blocks `< b`, clean block `b` sees clean blocks `≤ b`. The x_t half's logits are
//!   then those of a plain block-causal pass over `x_t` whose earlier blocks are clean (what
//!   decoding block by block sees), for every block at once. The loss is MDLM's `1/t`-weighted
//!   cross-entropy at the masked positions of `x_t`, averaged over the counted positions as for
//!   the MDM.
//! * Decoding: any SDK denoiser sampler that takes `block_length`, inside a block, with the
//!   sampler's blocks equal to the model's ([`align_request`]: `block_length` defaults to
//!   `block_size`, and a request whose `block_length` differs is refused).
//!
//! Reference: github.com/kuleshov-group/bd3lms at 1c3e8f43d88dfbcee5ff2aa6932a9e74b31ae1d7 —
//! `models/dit.py` (`block_diff_mask`: the 2L mask; the x_0 copy reuses the x_t half's rotary
//! positions; sampling indexes the x_0 quadrant, the block-causal mask) and `diffusion.py`
//! (`_sample_t`: one time per block, antithetic along blocks and batch; `_forward_pass_diffusion`
//! and `_loss`: `x_t ⊕ x_0` through the network, the loss summed and divided by the token count).

pub use crate::block_mask::{
    bd3_training_bias, bd3_training_sees, block_causal_bias, block_causal_sees,
};
use crate::checkpoint::Checkpoint;
use crate::model::{tokens_tensor, ModelKind, Transformer};
use crate::noise::{antithetic_block_times, block_noise, MdmNoise, T_EPS};
use burn::tensor::activation::log_softmax;
use burn::tensor::module::embedding;
use burn::tensor::{Device, Int, Tensor, TensorData};
use dlm_sdk::settings::WithSettings;
use dlm_sdk::{
    EvaluateReply, GenerateReply, GenerateRequest, Model, PluginError, Result, SaveReply,
    TrainStepReply,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::borrow::Cow;

impl Transformer {
    /// This network with block-causal attention in blocks of `block_size` positions (`None`:
    /// bidirectional, the MDM). Only the attention mask changes; the weights do not.
    pub fn with_block_size(mut self, block_size: Option<usize>) -> Self {
        for block in &mut self.blocks {
            block.block_size = block_size;
        }
        self
    }

    /// Positions per attention block (`None`: one block over the whole sequence).
    pub fn block_size(&self) -> Option<usize> {
        self.blocks.first().and_then(|b| b.block_size)
    }

    /// BD3-LM's training pass: the real tokens' logits `[batch, length, vocab]` at the
    /// positions of `xt` (`[batch, length]`), computed over `xt ⊕ x0` where every noisy block
    /// sees its clean predecessors ([`bd3_training_sees`]). Without a block size it is the
    /// bidirectional pass over `xt` alone.
    pub fn forward_bd3(&self, xt: Tensor<2, Int>, x0: Tensor<2, Int>) -> Tensor<3> {
        let length = xt.dims()[1];
        let Some(block_size) = self.block_size() else {
            return self.forward_real(xt);
        };
        let device = xt.device();
        let positions = self.position_embedding.val().narrow(0, 0, length);
        let positions = Tensor::cat(vec![positions.clone(), positions], 0).unsqueeze_dim::<3>(0);
        let tokens = Tensor::cat(vec![xt, x0], 1);
        let mut x = embedding(self.token_embedding.val(), tokens) + positions;
        let mask = Tensor::<4>::from_data(
            TensorData::new(
                bd3_training_bias(length, block_size),
                [1, 1, 2 * length, 2 * length],
            ),
            &device,
        );
        for block in &self.blocks {
            // Both halves sit at positions 0..length, so every quadrant's bias is the
            // length × length one, which already carries the model's block-causal mask. Every
            // pair BD3 shows is block-causal in true positions, so that mask hides none of them
            // and the sum hides exactly what BD3 hides.
            let relative = block.attention_bias(0..length, length, None);
            let row = Tensor::cat(vec![relative.clone(), relative], 3);
            let bias = Tensor::cat(vec![row.clone(), row], 2);
            let heads = bias.dims()[1];
            let bias = bias + mask.clone().expand([1, heads, 2 * length, 2 * length]);
            x = block.forward_biased(x, false, bias);
        }
        self.real_logits(x.narrow(1, 0, length))
    }
}

/// The block size a network trains and evaluates with BD3-LM's objective at `length`: its own,
/// when it cuts the sequence into more than one block (one block is the MDM's objective exactly).
pub fn bd3_block_size(net: &Transformer, length: usize) -> Option<usize> {
    net.block_size().filter(|&b| b < length)
}

/// BD3-LM's loss of one batch (`x0`: `batch × length` real tokens) for a given noise draw:
/// `Σ_masked −log p(x0 | x_t, clean earlier blocks) / t`, divided by the counted positions.
pub fn bd3_loss_given(
    net: &Transformer,
    x0: &[u32],
    noise: &MdmNoise,
    batch: usize,
    length: usize,
    device: &Device,
) -> Tensor<1> {
    let xt = tokens_tensor(&noise.xt, batch, length, device);
    let clean = tokens_tensor(x0, batch, length, device);
    let target = clean.clone().reshape([batch, length, 1]);
    let weights = Tensor::<2>::from_data(
        TensorData::new(noise.weights.clone(), [batch, length]),
        device,
    );
    // SUBS at a masked position is the softmax over the real tokens; elsewhere the weight is 0
    // (and the log-softmax finite, so 0 · it is 0).
    let logp = log_softmax(net.forward_bd3(xt, clean), 2);
    let nll = logp.gather(2, target).reshape([batch, length]).neg();
    (nll * weights)
        .sum()
        .div_scalar(noise.counted.max(1) as f64)
}

/// BD3-LM's training loss of one batch with blocks of `block_size` (prompts as for the MDM).
pub fn bd3_loss_prompted(
    net: &Transformer,
    x0: &[u32],
    batch: usize,
    block_size: usize,
    prompts: &[usize],
    rng: &mut ChaCha8Rng,
    device: &Device,
) -> Tensor<1> {
    let length = x0.len() / batch;
    let times = antithetic_block_times(batch, length.div_ceil(block_size), rng);
    let noise = block_noise(x0, batch, &times, block_size, prompts, net.vocab, rng);
    bd3_loss_given(net, x0, &noise, batch, length, device)
}

/// BD3-LM's ELBO of one batch (nats per token, no gradients) from `draws` noise draws, each
/// block's time stratified over the draws as [`crate::train::mdm_elbo`] stratifies a
/// sequence's.
#[allow(clippy::too_many_arguments)]
pub fn bd3_elbo_prompted(
    net: &Transformer,
    x0: &[u32],
    batch: usize,
    block_size: usize,
    prompts: &[usize],
    draws: usize,
    rng: &mut ChaCha8Rng,
    device: &Device,
) -> f64 {
    let length = x0.len() / batch;
    let draws = draws.max(1);
    let blocks = length.div_ceil(block_size);
    let offsets: Vec<f64> = (0..batch * blocks).map(|_| rng.random()).collect();
    let mut total = 0.0;
    for k in 0..draws {
        let times: Vec<f64> = offsets
            .iter()
            .map(|u| (1.0 - T_EPS) * ((u + k as f64) / draws as f64) + T_EPS)
            .collect();
        let noise = block_noise(x0, batch, &times, block_size, prompts, net.vocab, rng);
        let loss = bd3_loss_given(net, x0, &noise, batch, length, device);
        total += loss.into_scalar::<f32>() as f64;
    }
    total / draws as f64
}

/// Check a suite's `block_size` for a model of `kind` at `length`, before anything is built.
pub fn check_block_size(
    kind: ModelKind,
    block_size: Option<usize>,
    length: usize,
    has_tokenizer: bool,
) -> Result<()> {
    let Some(block_size) = block_size else {
        return Ok(());
    };
    if kind != ModelKind::Mdm {
        return Err(PluginError::bad_config(format!(
            "model config: `block_size` applies to the `mdm` model (block diffusion), not `{}`; \
             remove it",
            kind.as_str()
        )));
    }
    if has_tokenizer {
        return Err(PluginError::unsupported(
            "model config: `block_size` with a `tokenizer` is not supported (a left-padded \
             batch shifts every row's blocks); remove one of them",
        ));
    }
    if block_size == 0 || block_size > length {
        return Err(PluginError::bad_config(format!(
            "model config: `block_size: {block_size}` must be between 1 (AR-like) and the \
             length {length} (one block: the MDM)"
        )));
    }
    Ok(())
}

/// Refuse a checkpoint trained with another block size than the suite's `block_size` (its
/// attention mask, hence its logits, differ).
pub fn check_checkpoint_block_size(wanted: Option<usize>, ckpt: &Checkpoint) -> Result<()> {
    let trained = ckpt.header.identity.block_size;
    if wanted == trained {
        return Ok(());
    }
    let describe = |b: Option<usize>| match b {
        Some(b) => format!("block_size {b}"),
        None => "no block_size (bidirectional MDM)".to_string(),
    };
    Err(PluginError::bad_config(format!(
        "the checkpoint was trained with {}, the model config asks for {}; set `block_size` to \
         the checkpoint's or train a model with this one",
        describe(trained),
        describe(wanted)
    )))
}

/// The request a block-diffusion model with `block_size` runs: the sampler's blocks must be
/// the model's (with block-causal attention a sampler block that straddles two model blocks
/// decodes the later part beside a still-masked earlier one, which training never shows).
/// With more than one block per sequence, a sampler that takes `block_length` gets
/// `block_size` when the suite gives none (so the reply records it); a different
/// `block_length`, a sampler without blocks (one block over the whole sequence) or a prompt
/// that ends inside a block (the sampler's blocks start at the prompt's end) is refused.
pub fn align_request(
    block_size: usize,
    request: &GenerateRequest,
) -> Result<Cow<'_, GenerateRequest>> {
    if block_size >= request.length {
        return Ok(Cow::Borrowed(request));
    }
    let sampler = &request.sampler;
    let fix = format!("set `params: {{block_length: {block_size}}}` or leave it out");
    let takes_blocks = dlm_sdk::sampler::info(&sampler.name)
        .params
        .iter()
        .any(|p| p == "block_length");
    if !takes_blocks {
        return Err(PluginError::bad_config(format!(
            "sampler `{}` decodes the whole sequence as one block, but the model's attention              is block-causal with `block_size: {block_size}`: the sampler's blocks must be the              model's; use a sampler that takes `block_length`",
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
    if let Some(block_length) = given.filter(|&b| b != block_size) {
        return Err(PluginError::bad_config(format!(
            "sampler `{}` has `block_length: {block_length}`, but the model's attention is              block-causal with `block_size: {block_size}`: the sampler's blocks must be the              model's; {fix}",
            sampler.name
        )));
    }
    if let Some(prompts) = &request.prompts {
        if let Some(p) = prompts.iter().find(|p| !p.len().is_multiple_of(block_size)) {
            return Err(PluginError::bad_config(format!(
                "a prompt of {} tokens ends inside a block of the model's `block_size: \
                 {block_size}`, so the sampler's blocks (which start at the prompt's end) are \
                 not the model's; use prompts whose lengths are multiples of {block_size}",
                p.len()
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

/// `model` as the plugin hands it out: its replies carry `settings` (with `block_size` when
/// set), and with a block size it refuses requests whose blocks are not its own.
pub fn with_settings(
    model: Box<dyn Model>,
    mut settings: serde_json::Value,
    block_size: Option<usize>,
) -> Box<dyn Model> {
    if let Some(block_size) = block_size {
        settings["block_size"] = block_size.into();
    }
    Box::new(WithSettings::new(
        BlockAligned::wrap(model, block_size),
        settings,
    ))
}

/// A block-diffusion model: runs every request with the model's blocks ([`align_request`]);
/// everything else passes through.
pub struct BlockAligned {
    model: Box<dyn Model>,
    block_size: usize,
}

impl BlockAligned {
    /// `model` itself without a block size, else `model` behind the check.
    pub fn wrap(model: Box<dyn Model>, block_size: Option<usize>) -> Box<dyn Model> {
        match block_size {
            None => model,
            Some(block_size) => Box::new(BlockAligned { model, block_size }),
        }
    }
}

impl Model for BlockAligned {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let request = align_request(self.block_size, request)?;
        self.model.generate(&request)
    }
    fn generate_left_padded(
        &mut self,
        request: &GenerateRequest,
        left_padding: &[usize],
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let request = align_request(self.block_size, request)?;
        self.model.generate_left_padded(&request, left_padding)
    }
    fn train_step(
        &mut self,
        step: usize,
        batch: &[Vec<u32>],
        prompt_lengths: &[usize],
    ) -> Result<TrainStepReply> {
        self.model.train_step(step, batch, prompt_lengths)
    }
    fn evaluate(&mut self, batch: &[Vec<u32>], prompt_lengths: &[usize]) -> Result<EvaluateReply> {
        self.model.evaluate(batch, prompt_lengths)
    }
    fn save(&mut self, path: &std::path::Path) -> Result<SaveReply> {
        self.model.save(path)
    }
    fn prompt_ids(&mut self) -> Result<Option<Vec<String>>> {
        self.model.prompt_ids()
    }
}
