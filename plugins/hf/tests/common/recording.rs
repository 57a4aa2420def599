//! A checkpoint that records every call of its key/value cache, for the tests that replay
//! Fast-dLLM's cached generations call by call (`kv_cache.rs`, `dream_cache.rs`).

use burn::tensor::Tensor;
use dlm_hf::CheckpointDenoiser;
use dlm_sdk::kv_cache::TensorKvCache;
use dlm_sdk::sampler::device::TensorDenoiser;
use serde::Deserialize;
use std::ops::Range;

/// One network call as the reference records it: a fill (the whole canvas) or a window (its
/// positions and the tokens there), in checkpoint ids.
#[derive(Deserialize, Debug, PartialEq, Eq, Clone)]
pub struct Call {
    pub kind: String,
    #[serde(default)]
    pub start: Option<usize>,
    #[serde(default)]
    pub end: Option<usize>,
    pub tokens: Vec<u32>,
}

/// The checkpoint, recording every call of its cache (checkpoint ids, as the references'
/// records) and counting its uncached calls.
pub struct Recording {
    pub inner: CheckpointDenoiser,
    pub calls: Vec<Call>,
    pub plain_calls: usize,
}

impl TensorDenoiser for Recording {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn logits(&mut self, tokens: &[u32], b: usize, l: usize, t: f64) -> dlm_sdk::Result<Tensor<3>> {
        self.plain_calls += 1;
        TensorDenoiser::logits(&mut self.inner, tokens, b, l, t)
    }
    fn kv_cache(&mut self) -> Option<&mut dyn TensorKvCache> {
        Some(self)
    }
}

impl TensorKvCache for Recording {
    fn logits_and_fill(
        &mut self,
        tokens: &[u32],
        b: usize,
        l: usize,
        t: f64,
    ) -> dlm_sdk::Result<Tensor<3>> {
        self.calls.push(Call {
            kind: "fill".into(),
            start: None,
            end: None,
            tokens: self.inner.checkpoint_ids(tokens).unwrap(),
        });
        TensorKvCache::logits_and_fill(&mut self.inner, tokens, b, l, t)
    }
    fn logits_window(
        &mut self,
        tokens: &[u32],
        b: usize,
        l: usize,
        window: Range<usize>,
        t: f64,
    ) -> dlm_sdk::Result<Tensor<3>> {
        self.calls.push(Call {
            kind: "window".into(),
            start: Some(window.start),
            end: Some(window.end),
            tokens: self.inner.checkpoint_ids(&tokens[window.clone()]).unwrap(),
        });
        TensorKvCache::logits_window(&mut self.inner, tokens, b, l, window, t)
    }
}
