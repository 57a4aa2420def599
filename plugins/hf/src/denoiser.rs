//! A loaded checkpoint as the SDK's [`TensorDenoiser`] (its host path, the reference in tests, is
//! the SDK's [`OnHost`](dlm_sdk::sampler::device::OnHost)), and the id mapping at its boundary.
//!
//! **Ids.** The SDK's convention is that a model predicts real tokens `0..vocab_size()` and the
//! mask token is `vocab_size()`. Here `vocab_size()` is the *tokenizer's* size (one more than
//! its largest id, added tokens included), so every id the tokenizer can produce keeps its
//! value. The checkpoint's own mask token (`mask_token_id` in config.json, e.g. LLaDA's 126336,
//! Dream's 151666) lies inside that range; the only remapping is the SDK's mask id
//! `vocab_size()` → `mask_token_id` on the way in. On the way out the logits are cut to the
//! tokenizer's ids (checkpoints pad their embedding tables past the tokenizer, e.g. LLaDA's
//! 126464 rows), and the column of `mask_token_id` gets probability 0 so that no sampler ever
//! writes a mask token as a "real" one. The softmax is over the remaining ids.
//!
//! **The full row** ([`CheckpointDenoiser::with_full_row`], dlm-hf's default for text): as the
//! reference decoders (LLaDA's `generate.py`, Dream's `_sample`) do, the samplers see the
//! network's whole output row — every embedding row, the padding past the tokenizer and the
//! mask token's column included — so the softmax, the argmax and every confidence are theirs.
//! `vocab_size()` is then the number of rows and the SDK's mask id is that number (mapped to
//! `mask_token_id` on the way in). A sampler may then commit an id the tokenizer lacks (decoded
//! as nothing) or the mask token's id itself, which the network reads as a mask again, as in
//! the references; unlike them, the SDK counts that position as decided and never redraws it.
//!
//! **Dream's shift.** Dream was trained to predict the token at position i from the output at
//! position i − 1; its generation code shifts the logits right by one (position 0 keeps its
//! own). [`CheckpointDenoiser::logits`] applies that, so both architectures answer "the
//! distribution of the token at position i" at position i, as the SDK's samplers expect.
//!
//! **The key/value cache** ([`dlm_sdk::kv_cache::TensorKvCache`], [`crate::window`]): a fill is
//! [`CheckpointDenoiser::logits`] keeping every block's keys and values; a window over
//! positions `s..e` runs the network's queries there only. Dream's shifted logits at `s..e` are
//! the network's outputs at `s − 1..e − 1`, so a Dream window also queries position `s − 1`
//! (its keys and values stay the cached ones, as outside any window; a query changes no other
//! position's output) and drops the output at `e − 1`; at `s = 0` position 0 keeps its own, as
//! in the full pass. Fast-dLLM's Dream (`dream/model/generation_utils_block.py`) shifts inside
//! the window instead, giving position `s` its own output; its loop never reads it (the fill
//! step always commits the block's first position), and every other position agrees.

use crate::config::Architecture;
use crate::error::{HfError, Result};
use crate::model::Network;
use crate::window::WindowCache;
use burn::tensor::activation::softmax;
use burn::tensor::{FloatDType, Tensor, TensorData};
use dlm_sdk::kv_cache::TensorKvCache;
use dlm_sdk::sampler::device::TensorDenoiser;
use std::ops::Range;

/// A LLaDA or Dream checkpoint answering the SDK's denoiser calls.
pub struct CheckpointDenoiser {
    pub net: Network,
    /// Real token ids `0..vocab` (the tokenizer's size); the SDK's mask id is `vocab`.
    vocab: usize,
    /// The checkpoint's mask token id (`< vocab_rows`).
    mask_token_id: u32,
    /// Device label recorded with timings.
    label: String,
    /// Whether the samplers see the network's whole output row (see the module documentation).
    full_row: bool,
    /// Padding positions at the front of each row, hidden in the forward passes (set by the
    /// SDK for a left-padded batch; empty: none).
    left_padding: Vec<usize>,
    /// Keys and values of the last fill ([`TensorKvCache::logits_and_fill`]).
    kv: Option<WindowCache>,
}

impl CheckpointDenoiser {
    /// Wrap `net` for a tokenizer of `vocab` ids, whose mask token is `mask_token_id`.
    pub fn new(net: Network, vocab: usize, mask_token_id: u32, label: String) -> Result<Self> {
        let rows = net.config.vocab_rows;
        if vocab > rows {
            return Err(HfError::Input(format!(
                "the tokenizer has {vocab} ids but the checkpoint's embedding only {rows} rows: \
                 tokenizer.json and the weights are of different models"
            )));
        }
        if mask_token_id as usize >= rows {
            return Err(HfError::Input(format!(
                "mask token id {mask_token_id} is outside the checkpoint's {rows} embedding rows"
            )));
        }
        Ok(CheckpointDenoiser {
            net,
            vocab,
            mask_token_id,
            label,
            left_padding: Vec::new(),
            full_row: false,
            kv: None,
        })
    }

    /// Let the samplers see the network's whole output row (`true`, as the reference decoders
    /// do) or only the tokenizer's ids without the mask token (`false`).
    pub fn with_full_row(mut self, full_row: bool) -> Self {
        self.full_row = full_row;
        self
    }

    /// The ids the samplers draw from, `0..sampler_vocab()`; the SDK's mask id is
    /// `sampler_vocab()`: the tokenizer's size, or every embedding row with the full row.
    pub fn sampler_vocab(&self) -> usize {
        if self.full_row {
            self.net.config.vocab_rows
        } else {
            self.vocab
        }
    }

    /// The tokenizer's size: real ids are `0..vocab()`, the SDK's mask id is `vocab()`.
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// The checkpoint's own mask token id.
    pub fn mask_token_id(&self) -> u32 {
        self.mask_token_id
    }

    /// SDK ids (mask = `vocab()`) → the checkpoint's ids (mask = `mask_token_id`).
    pub fn checkpoint_ids(&self, tokens: &[u32]) -> Result<Vec<u32>> {
        tokens
            .iter()
            .map(|&t| match t as usize {
                t if t < self.sampler_vocab() => Ok(t as u32),
                t if t == self.sampler_vocab() => Ok(self.mask_token_id),
                _ => Err(HfError::Input(format!(
                    "token id {t} is outside 0..={} (the model's ids and the mask)",
                    self.sampler_vocab()
                ))),
            })
            .collect()
    }

    /// Logits `[batch, length, vocab()]` over the real tokens for SDK ids `tokens`, on the
    /// device: the network's output, shifted for Dream, cut to the tokenizer's ids, with the
    /// mask token's column at −∞, the padding of a left-padded batch hidden
    /// ([`Network::forward_padded`]). This is what a sampler running on the device consumes.
    pub fn logits(&self, tokens: &[u32], batch: usize, length: usize) -> Result<Tensor<3>> {
        let ids = self.checkpoint_ids(tokens)?;
        let ids = self.net.ids_tensor(&ids, batch, length)?;
        let logits = self.net.forward_padded(ids, &self.left_padding)?;
        Ok(self.readout(self.shift(logits)))
    }

    /// Dream's shift of a whole row's network output (LLaDA's is unshifted).
    fn shift(&self, logits: Tensor<3>) -> Tensor<3> {
        match self.net.config.architecture {
            Architecture::Dream => shift_right(logits),
            _ => logits,
        }
    }

    /// The network's (shifted) logits as the samplers see them: the full row, or cut to the
    /// tokenizer's ids with the mask token's column at −∞.
    fn readout(&self, logits: Tensor<3>) -> Tensor<3> {
        if self.full_row {
            return logits;
        }
        let logits = logits.narrow(2, 0, self.vocab);
        if (self.mask_token_id as usize) < self.vocab {
            let mut exclude = vec![0f32; self.vocab];
            exclude[self.mask_token_id as usize] = f32::NEG_INFINITY;
            let exclude = Tensor::<1>::from_data(
                TensorData::new(exclude, [self.vocab]),
                (self.net.device(), logits.dtype()),
            );
            logits + exclude.reshape([1, 1, self.vocab])
        } else {
            logits
        }
    }

    /// [`CheckpointDenoiser::logits`], keeping every block's keys and values for
    /// [`CheckpointDenoiser::logits_window`].
    pub fn logits_and_fill(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
    ) -> Result<Tensor<3>> {
        let ids = self.checkpoint_ids(tokens)?;
        let ids = self.net.ids_tensor(&ids, batch, length)?;
        let (logits, cache) = self.net.forward_and_fill(ids, &self.left_padding)?;
        self.kv = Some(cache);
        Ok(self.readout(self.shift(logits)))
    }

    /// The logits `[batch, window.len(), vocab()]` at positions `window` of the SDK ids
    /// `tokens` (the whole `batch × length` canvas), with the keys and values of the last
    /// [`CheckpointDenoiser::logits_and_fill`] outside the window (see the module
    /// documentation for Dream).
    pub fn logits_window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
    ) -> Result<Tensor<3>> {
        let Some(cache) = self.kv.as_ref() else {
            return Err(HfError::Input(
                "a window step before any fill: the key/value cache is empty (the sampler must \
                 call logits_and_fill first)"
                    .into(),
            ));
        };
        if cache.shape() != (batch, length) || tokens.len() != batch * length {
            return Err(HfError::Input(format!(
                "a window step over a {batch} × {length} canvas ({} tokens), but the key/value \
                 cache was filled for {:?} (batch, length): fill it for this canvas first",
                tokens.len(),
                cache.shape()
            )));
        }
        if window.is_empty() || window.end > length {
            return Err(HfError::Input(format!(
                "window {window:?} is empty or outside the canvas of {length} positions"
            )));
        }
        let dream = self.net.config.architecture == Architecture::Dream;
        let start = if dream {
            window.start.saturating_sub(1)
        } else {
            window.start
        };
        let n = window.end - start;
        let rows: Vec<u32> = tokens
            .chunks(length)
            .flat_map(|row| row[start..window.end].iter().copied())
            .collect();
        let ids = self.checkpoint_ids(&rows)?;
        let ids = self.net.ids_tensor(&ids, batch, n)?;
        let lead = window.start - start;
        let logits = self
            .net
            .forward_window(ids, start, lead, cache, &self.left_padding)?;
        let logits = match (dream, window.start) {
            (true, 0) => shift_right(logits),
            (true, _) => logits.narrow(1, 0, n - 1),
            (false, _) => logits,
        };
        Ok(self.readout(logits))
    }

    /// Probabilities `batch × length × vocab()` (row-major, f32) of one forward pass.
    pub fn probabilities(&self, tokens: &[u32], batch: usize, length: usize) -> Result<Vec<f32>> {
        // The softmax in f32 whatever the compute dtype.
        let probs = softmax(self.logits(tokens, batch, length)?.cast(FloatDType::F32), 2);
        probs
            .into_data_as::<f32>()
            .try_into_vec::<f32>()
            .map_err(|e| HfError::Input(format!("reading the probabilities back: {e:?}")))
    }
}

/// Dream's convention: the logits of position i come from position i − 1 (position 0 keeps
/// its own): `cat(logits[:, :1], logits[:, :-1])` along the sequence.
pub fn shift_right(logits: Tensor<3>) -> Tensor<3> {
    let length = logits.dims()[1];
    if length < 2 {
        return logits;
    }
    Tensor::cat(
        vec![
            logits.clone().narrow(1, 0, 1),
            logits.narrow(1, 0, length - 1),
        ],
        1,
    )
}

/// The device path, which `checkpoint` samples with: the logits (in f32) stay on the device.
impl TensorDenoiser for CheckpointDenoiser {
    fn vocab_size(&self) -> usize {
        self.sampler_vocab()
    }

    fn device(&self) -> String {
        self.label.clone()
    }

    fn logits(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
    ) -> dlm_sdk::Result<Tensor<3>> {
        Ok(CheckpointDenoiser::logits(self, tokens, batch, length)?.cast(FloatDType::F32))
    }

    fn synchronize(&mut self) {
        let _ = self.net.device().sync();
    }

    fn set_left_padding(&mut self, left_padding: &[usize]) -> dlm_sdk::Result<()> {
        self.left_padding = left_padding.to_vec();
        Ok(())
    }

    fn kv_cache(&mut self) -> Option<&mut dyn TensorKvCache> {
        Some(self)
    }
}

/// The cache the SDK's `cache: prefix | dual` samplers drive (logits in f32 on the device).
impl TensorKvCache for CheckpointDenoiser {
    fn logits_and_fill(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
    ) -> dlm_sdk::Result<Tensor<3>> {
        let logits = CheckpointDenoiser::logits_and_fill(self, tokens, batch, length)?;
        Ok(logits.cast(FloatDType::F32))
    }

    fn logits_window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
        _t: f64,
    ) -> dlm_sdk::Result<Tensor<3>> {
        let logits = CheckpointDenoiser::logits_window(self, tokens, batch, length, window)?;
        Ok(logits.cast(FloatDType::F32))
    }
}
