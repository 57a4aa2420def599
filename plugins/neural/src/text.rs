//! Models that own a Hugging Face tokenizer (`tokenizer: PATH` in the model config): the
//! model's vocabulary is the tokenizer's (the MDM's mask id is its size), and on text tasks it
//! answers with text through [`dlm_sdk::tokenizer::TextModel`]. Without a tokenizer a model
//! needs a task with a vocabulary of its own.

use burn::tensor::Tensor;
use dlm_sdk::kv_cache::TensorKvCache;
use dlm_sdk::sampler::device::TensorDenoiser;
use dlm_sdk::tokenizer::{HfTokenizer, TextModel};
use dlm_sdk::{Model, ModelOpenConfig, PluginError, Result, TaskDescription};
use std::path::Path;

/// The tokenizer a model config names (`tokenizer`), with its end-of-text token (`eos_token`);
/// `None` when it names none. A file that is missing or does not parse fails with the SDK's
/// message, which names it.
pub fn open_tokenizer(path: Option<&Path>, eos_token: Option<&str>) -> Result<Option<HfTokenizer>> {
    let Some(path) = path else {
        if eos_token.is_some() {
            return Err(PluginError::bad_config(
                "`eos_token` applies with a `tokenizer: PATH` only",
            ));
        }
        return Ok(None);
    };
    let tokenizer = HfTokenizer::from_file(path)?;
    Ok(Some(match eos_token {
        Some(token) => tokenizer.with_eos_token(token)?,
        None => tokenizer,
    }))
}

/// The task as the network sees it: with a tokenizer, the tokenizer's vocabulary (mask id =
/// its size); without one, the task's own, which a text task without a vocabulary lacks.
pub fn network_task(
    open: &ModelOpenConfig,
    tokenizer: Option<&HfTokenizer>,
) -> Result<TaskDescription> {
    let task = &open.task.description;
    match tokenizer {
        Some(tokenizer) => {
            if open.train.is_some() {
                return Err(PluginError::unsupported(format!(
                    "a model with its own tokenizer ({}) cannot be trained by the harness, which trains on a task's own vocabulary only; remove `train:` (or `tokenizer:`)",
                    tokenizer.path().display()
                )));
            }
            let mut seen = task.clone();
            seen.vocab_size = tokenizer.vocab_size();
            seen.mask_id = tokenizer.vocab_size() as u32;
            Ok(seen)
        }
        None => {
            if task.text.as_ref().is_some_and(|t| t.vocabulary.is_none()) {
                return Err(PluginError::bad_config(format!(
                    "task `{}` has no vocabulary of its own: give the model a tokenizer (`tokenizer: PATH` to a Hugging Face tokenizer.json)",
                    task.label
                )));
            }
            Ok(task.clone())
        }
    }
}

/// `model` as the harness sees it: answering with text when it owns a tokenizer, with every
/// prompt's completion region `generation_length` long when that is set (within the model's
/// `max_length` positions; the SDK's `TextModel` left-pads the batch). `open_model` refuses
/// `generation_length` without a tokenizer.
pub fn wrap<M: Model + 'static>(
    model: M,
    tokenizer: Option<HfTokenizer>,
    open: &ModelOpenConfig,
    generation_length: Option<usize>,
    max_length: usize,
) -> Result<Box<dyn Model>> {
    let Some(tokenizer) = tokenizer else {
        return Ok(Box::new(model));
    };
    let stop = open
        .task
        .description
        .text
        .as_ref()
        .map(|t| t.stop.clone())
        .unwrap_or_default();
    let text = TextModel::new(model, tokenizer, stop)
        .map_err(|e| PluginError::bad_config(format!("{e} (`eos_token` in the model config)")))?;
    Ok(match generation_length {
        None => Box::new(text),
        Some(tokens) => Box::new(text.with_generation_length(tokens, max_length)?),
    })
}

/// A denoiser that can run a left-padded batch: its logits with the first `left_padding[b]`
/// positions of row `b` hidden from attention and positions counted from each row's first real
/// token, so every other position gets the logits of its row alone.
pub trait PaddedLogits: TensorDenoiser {
    fn padded_logits(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        left_padding: &[usize],
    ) -> Result<Tensor<3>>;

    /// This denoiser's key/value cache with the first `left_padding[b]` positions of row `b`
    /// hidden as in [`PaddedLogits::padded_logits`] (empty: no padding); `None`: it has none.
    fn padded_kv_cache(&mut self, _left_padding: &[usize]) -> Option<&mut dyn TensorKvCache> {
        None
    }
}

/// A denoiser as a text model samples with it: able to hide the left padding of a batch whose
/// prompts differ in length ([`TensorDenoiser::set_left_padding`]).
pub struct Padded<D> {
    pub inner: D,
    left_padding: Vec<usize>,
}

impl<D> Padded<D> {
    pub fn new(inner: D) -> Self {
        Padded {
            inner,
            left_padding: Vec::new(),
        }
    }
}

impl<D: PaddedLogits> TensorDenoiser for Padded<D> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    fn time_conditioned(&self) -> bool {
        self.inner.time_conditioned()
    }

    fn device(&self) -> String {
        self.inner.device()
    }

    fn logits(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<Tensor<3>> {
        if self.left_padding.iter().all(|&p| p == 0) {
            return self.inner.logits(tokens, batch, length, t);
        }
        if self.left_padding.len() != batch || self.left_padding.iter().any(|&p| p >= length) {
            return Err(PluginError::internal(format!(
                "left padding {:?} for a {batch} × {length} batch",
                self.left_padding
            )));
        }
        self.inner
            .padded_logits(tokens, batch, length, &self.left_padding)
    }

    fn synchronize(&mut self) {
        self.inner.synchronize()
    }

    fn kv_cache(&mut self) -> Option<&mut dyn TensorKvCache> {
        self.inner.padded_kv_cache(&self.left_padding)
    }

    fn set_left_padding(&mut self, left_padding: &[usize]) -> Result<()> {
        self.left_padding = left_padding.to_vec();
        Ok(())
    }
}
