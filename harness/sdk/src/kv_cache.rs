//! The key/value cache interface (API 1.7): how a denoiser lets a sampler reuse keys and
//! values between steps, as Fast-dLLM's prefix and dual caches and block diffusion do.
//!
//! A model that has a cache answers [`crate::Denoiser::kv_cache`] (host path) or
//! `TensorDenoiser::kv_cache` (device path, feature `burn`) with `Some`; every other model
//! keeps the default `None` and is refused with a clear error when a suite asks for a cache.
//! The sampler decides when the cache is filled (its `refresh` rule) and which positions a
//! step recomputes (its `cache` mode):
//!
//! * **fill** — a full forward pass over the canvas that also stores, for every layer, the keys
//!   and values of every position. It costs what an uncached step costs.
//! * **window** — a forward pass whose queries are only the positions of `window` (the same
//!   range for every row of the batch). The keys and values *inside* the window are computed
//!   afresh from the current tokens; those *outside* come from the cache as last filled, so
//!   they are stale wherever the canvas changed since (for a bidirectional network every
//!   layer's keys depend on the whole canvas). Prefix cache: the window runs from the current
//!   block's start to the end of the canvas. Dual cache: the window is the current block.
//!
//! The SDK's remasking samplers (`low_confidence`, `random`, `threshold`, `factor`, `eb`) and
//! `dream_cache` (Fast-dLLM's Dream loop) drive it with their parameters `cache` (`none`, the default; `prefix`; `dual`) and `refresh`
//! (`every_block`, the default: a fill at the first step of every block; or `k`: also a fill at
//! steps `k, 2k, …` of a block, so `refresh: 1` is a fill at every step, the samples of `cache:
//! none`). Every other step of a block is a window call. Each call is one NFE; a fill counts
//! `length` positions computed per row, a window its width. The sampler refuses a cache for a
//! time-conditioned network and for a batch whose samples' blocks lie at different positions
//! (prompts of different lengths without left padding), so one window serves every row.
//!
//! A sampler always fills before its first window call and never moves the window between
//! fills, so whether a window call writes its fresh keys and values back into the cache is not
//! observable; implementations may do either. Left padding ([`crate::Model::generate_left_padded`])
//! applies to both calls as to a plain forward pass. For a block-causal network (block
//! diffusion) whose blocks are the sampler's blocks, the prefix cache is exact: the positions
//! before the block never attend to it.

use crate::Result;
use std::ops::Range;

/// The host-path cache interface of a [`crate::Denoiser`]: the f64 distributions of
/// [`crate::Denoiser::denoise`], for a full forward pass that fills the cache and for a window.
pub trait DenoiserKvCache {
    /// As [`crate::Denoiser::denoise`] (`out`: `batch × length × vocab_size`), and store every
    /// layer's keys and values at every position, replacing what the cache held.
    fn denoise_and_fill(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()>;

    /// A forward pass whose queries are the positions `window` of every row (`tokens` is still
    /// the whole `batch × length` canvas): write into `out` (`batch × window.len() ×
    /// vocab_size`) the distributions at those positions, computed with fresh keys and values
    /// inside the window and the cached ones outside it. Called only after
    /// [`DenoiserKvCache::denoise_and_fill`] with the same `batch` and `length`.
    fn denoise_window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
        t: f64,
        out: &mut [f64],
    ) -> Result<()>;
}

/// The device-path cache interface of a `TensorDenoiser` (feature `burn`): its logits, kept on
/// the model's device, for a full forward pass that fills the cache and for a window.
#[cfg(feature = "burn")]
pub trait TensorKvCache {
    /// As `TensorDenoiser::logits` (`[batch, length, vocab_size]`), and store every layer's keys
    /// and values at every position, replacing what the cache held.
    fn logits_and_fill(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
    ) -> Result<burn::tensor::Tensor<3>>;

    /// The logits at the positions `window` of every row, shape `[batch, window.len(),
    /// vocab_size]`, computed with fresh keys and values inside the window and the cached ones
    /// outside it ([`DenoiserKvCache::denoise_window`]'s meaning). Called only after
    /// [`TensorKvCache::logits_and_fill`] with the same `batch` and `length`.
    fn logits_window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
        t: f64,
    ) -> Result<burn::tensor::Tensor<3>>;
}
