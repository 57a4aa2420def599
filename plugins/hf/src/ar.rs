//! An autoregressive checkpoint (LLaMA, Qwen2) as the SDK's
//! [`Autoregressive`](dlm_sdk::sampler::Autoregressive) model, with a KV cache: each `next` call
//! feeds one token per row and costs one incremental forward pass.
//!
//! The first call predicts position 0. LLaMA checkpoints condition it on their BOS token
//! (`bos_token_id` in config.json: their tokenizers prepend it), fed at an extra position before
//! the sequence; Qwen2 checkpoints use no BOS, so the first call returns a uniform
//! distribution without running the network (on text tasks position 0 is a prompt token, which
//! is fed, never sampled). Ids are the tokenizer's, as for the diffusion models; the logits are
//! cut to them.

use crate::error::{HfError, Result};
use crate::model::{KvCache, Network};
use burn::tensor::{FloatDType, Int, Tensor, TensorData};
use dlm_sdk::sampler::device::TensorAutoregressive;
use dlm_sdk::PluginError;

/// A causal checkpoint answering the SDK's `ar` sampler.
pub struct CheckpointGenerator {
    pub net: Network,
    /// Real token ids `0..vocab` (the tokenizer's size).
    vocab: usize,
    /// The token fed before the sequence, if the architecture uses one.
    bos: Option<u32>,
    label: String,
    cache: Option<KvCache>,
    batch: usize,
    length: usize,
    started: bool,
}

impl CheckpointGenerator {
    /// Wrap `net` for a tokenizer of `vocab` ids; `bos` is fed before every sequence.
    pub fn new(net: Network, vocab: usize, bos: Option<u32>, label: String) -> Result<Self> {
        let rows = net.config.vocab_rows;
        if vocab > rows {
            return Err(HfError::Input(format!(
                "the tokenizer has {vocab} ids but the checkpoint's embedding only {rows} rows: \
                 tokenizer.json and the weights are of different models"
            )));
        }
        if bos.is_some_and(|b| b as usize >= rows) {
            return Err(HfError::Input(format!(
                "bos_token_id {bos:?} is outside the checkpoint's {rows} embedding rows"
            )));
        }
        Ok(CheckpointGenerator {
            net,
            vocab,
            bos,
            label,
            cache: None,
            batch: 0,
            length: 0,
            started: false,
        })
    }

    /// Feed one token per row; the next-token logits `[batch, vocab]` over the tokenizer's ids.
    fn feed(&mut self, tokens: &[u32]) -> Result<Tensor<2>> {
        let cache = self
            .cache
            .as_mut()
            .ok_or_else(|| HfError::Input("`next` before `begin`".into()))?;
        let ids: Vec<i64> = tokens.iter().map(|&t| t as i64).collect();
        let ids =
            Tensor::<2, Int>::from_data(TensorData::new(ids, [self.batch, 1]), self.net.device());
        let logits = self.net.forward_cached(ids, cache)?;
        Ok(logits
            .narrow(2, 0, self.vocab)
            .reshape([self.batch, self.vocab]))
    }
}

impl CheckpointGenerator {
    /// Append `appended` and return every row's next-token logits over the tokenizer's ids,
    /// `[batch, vocab]`, in f32 on the device (the protocol of
    /// [`Autoregressive::next`](dlm_sdk::sampler::Autoregressive::next); a checkpoint without a
    /// beginning-of-sequence token starts from the uniform distribution).
    pub fn next_logits(&mut self, appended: Option<&[u32]>) -> dlm_sdk::Result<Tensor<2>> {
        let (batch, vocab) = (self.batch, self.vocab);
        let started = std::mem::replace(&mut self.started, true);
        let logits = match (appended, started) {
            (None, false) => match self.bos {
                Some(bos) => self.feed(&vec![bos; batch])?,
                None => {
                    let device = self.net.device();
                    return Ok(Tensor::<2>::zeros([batch, vocab], device).cast(FloatDType::F32));
                }
            },
            (None, true) => {
                return Err(PluginError::internal(
                    "`next(None)` is only valid right after `begin`",
                ))
            }
            (Some(_), false) => {
                return Err(PluginError::internal(
                    "the first `next` after `begin` appends nothing (`None`)",
                ))
            }
            (Some(tokens), true) => {
                if tokens.len() != batch {
                    return Err(PluginError::internal(format!(
                        "{} appended tokens for a batch of {batch}",
                        tokens.len()
                    )));
                }
                if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
                    return Err(PluginError::internal(format!(
                        "appended token {bad} is outside 0..{vocab}"
                    )));
                }
                self.feed(tokens)?
            }
        };
        Ok(logits.cast(FloatDType::F32))
    }
}

/// The device path, which `ar-checkpoint` samples with; the host path (the reference in tests)
/// is the SDK's [`OnHost`](dlm_sdk::sampler::device::OnHost) over it.
impl TensorAutoregressive for CheckpointGenerator {
    fn vocab_size(&self) -> usize {
        self.vocab
    }

    fn device(&self) -> String {
        self.label.clone()
    }

    fn begin(&mut self, batch: usize, length: usize) -> dlm_sdk::Result<()> {
        let capacity = length + usize::from(self.bos.is_some());
        self.cache = Some(self.net.empty_cache(batch, capacity)?);
        self.batch = batch;
        self.length = length;
        self.started = false;
        Ok(())
    }

    fn next_logits(&mut self, appended: Option<&[u32]>) -> dlm_sdk::Result<Tensor<2>> {
        CheckpointGenerator::next_logits(self, appended)
    }

    fn synchronize(&mut self) {
        let _ = self.net.device().sync();
    }
}
