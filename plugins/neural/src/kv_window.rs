//! The MDM's key/value cache (plugin API 1.7, [`TensorKvCache`]): Fast-dLLM's prefix and
//! dual caches for the bidirectional transformer.
//!
//! * **fill** ([`Transformer::forward_real_fill`]) is the full forward pass of
//!   [`Transformer::forward_real_padded`], operation for operation, that also keeps every
//!   block's keys and values at every position.
//! * **window** ([`Transformer::forward_real_window`]) embeds only the window's tokens at
//!   their true positions and runs each block with queries there: fresh keys and values inside
//!   the window (written into the cache, which the contract allows), the cached ones outside.
//!   Its attention bias is the window's rows of the full pass's bias, built by the same
//!   [`Block::attention_bias`](crate::model::Block) (relative positions per head and offset,
//!   the left padding hidden), so a mask the full pass gains holds in the window too.
//!
//! The window's queries are exact only as far as the cache is: after a change inside the
//! window, the first block's keys and values outside it are still exact (they depend on their
//! own token only), every later block's are stale (they attended to the old window). With no
//! change since the fill, a window gives the full pass's rows up to f32 rounding.
//!
//! Left padding ([`text::Padded`]) is supported: the padding a cache was filled with is kept
//! and a window under other padding is refused.

use crate::mdm::MdmDenoiser;
use crate::model::{hidden_keys, tokens_tensor, Transformer};
use crate::text;
use burn::tensor::module::attention;
use burn::tensor::{Int, Tensor};
use dlm_sdk::kv_cache::TensorKvCache;
use dlm_sdk::sampler::device::TensorDenoiser;
use dlm_sdk::{PluginError, Result};
use std::ops::Range;

/// Every block's keys and values at every position of a filled canvas, `[batch, heads,
/// length, head_dim]` each, and the left padding they were computed with.
#[derive(Debug, Clone)]
pub struct WindowCache {
    layers: Vec<(Tensor<4>, Tensor<4>)>,
    left_padding: Vec<usize>,
    batch: usize,
    length: usize,
}

impl Transformer {
    /// [`Transformer::forward_real_padded`] (`tokens: [batch, length]`; no padding: empty or
    /// all 0) and the keys and values of every block at every position.
    pub fn forward_real_fill(
        &self,
        tokens: Tensor<2, Int>,
        left_padding: &[usize],
    ) -> (Tensor<3>, WindowCache) {
        let [batch, length] = tokens.dims();
        let padded = left_padding.iter().any(|&p| p > 0);
        let key_bias = padded.then(|| hidden_keys(left_padding, length, &tokens.device()));
        let mut x = self.embed_padded(tokens, 0, left_padding);
        let mut layers = Vec::with_capacity(self.blocks.len());
        for block in &self.blocks {
            let bias = block.attention_bias(0..length, length, key_bias.as_ref());
            let (q, k, v) = block.qkv(x.clone());
            let context = attention(
                q,
                k.clone(),
                v.clone(),
                None,
                Some(bias),
                Default::default(),
            );
            x = block.finish(x, context);
            layers.push((k, v));
        }
        let cache = WindowCache {
            layers,
            left_padding: if padded {
                left_padding.to_vec()
            } else {
                Vec::new()
            },
            batch,
            length,
        };
        (self.real_logits(x), cache)
    }

    /// The real tokens' logits `[batch, window.len(), vocab]` at the positions `window`, whose
    /// tokens are `window_tokens: [batch, window.len()]`: each block's queries are the window's,
    /// over the keys and values of `cache` outside the window and fresh ones inside it (which
    /// replace the cached ones there).
    ///
    /// # Panics
    /// If `window` is empty or does not lie within the cache's length, or the batch differs
    /// from the cache's ([`CachedMdm`] checks all three first).
    pub fn forward_real_window(
        &self,
        window_tokens: Tensor<2, Int>,
        window: Range<usize>,
        cache: &mut WindowCache,
    ) -> Tensor<3> {
        let [batch, n] = window_tokens.dims();
        assert!(
            n == window.len() && n > 0 && window.end <= cache.length && batch == cache.batch,
            "window {window:?} of a {batch} × {n} batch over a {} × {} cache",
            cache.batch,
            cache.length
        );
        let length = cache.length;
        let key_bias = (!cache.left_padding.is_empty())
            .then(|| hidden_keys(&cache.left_padding, length, &window_tokens.device()));
        let mut x = self.embed_padded(window_tokens, window.start, &cache.left_padding);
        for (block, (keys, values)) in self.blocks.iter().zip(cache.layers.iter_mut()) {
            let bias = block.attention_bias(window.clone(), length, key_bias.as_ref());
            let (q, k, v) = block.qkv(x.clone());
            let [_, heads, _, head_dim] = q.dims();
            let slot = [0..batch, 0..heads, window.clone(), 0..head_dim];
            // Moved out and back, so that the buffer is held once and written in place where
            // the backend can.
            *keys = std::mem::replace(keys, k.clone()).slice_assign(slot.clone(), k);
            *values = std::mem::replace(values, v.clone()).slice_assign(slot, v);
            let context = attention(
                q,
                keys.clone(),
                values.clone(),
                None,
                Some(bias),
                Default::default(),
            );
            x = block.finish(x, context);
        }
        self.real_logits(x)
    }
}

/// The `mdm` model's denoiser with its key/value cache: [`MdmDenoiser`] for plain forward
/// passes, [`TensorKvCache`] for the cached ones. Inside [`text::Padded`] it runs under the
/// batch's left padding.
pub struct CachedMdm {
    pub mdm: MdmDenoiser,
    cache: Option<WindowCache>,
    /// The padding the next cached call runs under (set by [`text::Padded`]; empty: none).
    left_padding: Vec<usize>,
}

impl CachedMdm {
    pub fn new(mdm: MdmDenoiser) -> Self {
        CachedMdm {
            mdm,
            cache: None,
            left_padding: Vec::new(),
        }
    }
}

impl TensorDenoiser for CachedMdm {
    fn vocab_size(&self) -> usize {
        TensorDenoiser::vocab_size(&self.mdm)
    }

    fn device(&self) -> String {
        TensorDenoiser::device(&self.mdm)
    }

    fn logits(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<Tensor<3>> {
        self.mdm.logits(tokens, batch, length, t)
    }

    fn synchronize(&mut self) {
        TensorDenoiser::synchronize(&mut self.mdm)
    }

    fn kv_cache(&mut self) -> Option<&mut dyn TensorKvCache> {
        self.left_padding.clear();
        Some(self)
    }
}

impl text::PaddedLogits for CachedMdm {
    fn padded_logits(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        left_padding: &[usize],
    ) -> Result<Tensor<3>> {
        self.mdm.padded_logits(tokens, batch, length, left_padding)
    }

    fn padded_kv_cache(&mut self, left_padding: &[usize]) -> Option<&mut dyn TensorKvCache> {
        self.left_padding = left_padding.to_vec();
        Some(self)
    }
}

impl CachedMdm {
    /// The padding of the next cached call, checked against the batch (empty: none).
    fn padding(&self, batch: usize, length: usize) -> Result<Vec<usize>> {
        if self.left_padding.iter().all(|&p| p == 0) {
            return Ok(Vec::new());
        }
        if self.left_padding.len() != batch || self.left_padding.iter().any(|&p| p >= length) {
            return Err(PluginError::internal(format!(
                "left padding {:?} for a {batch} × {length} batch",
                self.left_padding
            )));
        }
        Ok(self.left_padding.clone())
    }
}

impl TensorKvCache for CachedMdm {
    fn logits_and_fill(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
    ) -> Result<Tensor<3>> {
        if self.mdm.net.causal {
            // The window's queries would need the causal mask offset to their positions.
            return Err(PluginError::unsupported(
                "the key/value cache of `cache: prefix | dual` is the MDM's; this network is causal",
            ));
        }
        let left_padding = self.padding(batch, length)?;
        let xt = self.mdm.input(tokens, batch, length)?;
        let (logits, cache) = self.mdm.net.forward_real_fill(xt, &left_padding);
        self.cache = Some(cache);
        Ok(logits)
    }

    fn logits_window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
        _t: f64,
    ) -> Result<Tensor<3>> {
        let left_padding = self.padding(batch, length)?;
        // Validates the whole canvas (ids, shape, max_length) as a plain pass would.
        self.mdm.input(tokens, batch, length)?;
        let Some(cache) = self.cache.as_mut() else {
            return Err(PluginError::internal(
                "a cached window before any fill; call logits_and_fill first",
            ));
        };
        if (cache.batch, cache.length) != (batch, length) || cache.left_padding != left_padding {
            let filled = (cache.batch, cache.length, &cache.left_padding);
            return Err(PluginError::internal(format!(
                "a cached window over a {batch} × {length} batch (left padding {left_padding:?}) \
                 after a fill of a {} × {} batch (left padding {:?}); fill again first",
                filled.0, filled.1, filled.2
            )));
        }
        if window.is_empty() || window.end > length {
            return Err(PluginError::internal(format!(
                "cache window {window:?} is empty or outside 0..{length}"
            )));
        }
        let inside: Vec<u32> = tokens
            .chunks(length)
            .flat_map(|row| row[window.clone()].iter().copied())
            .collect();
        let window_tokens = tokens_tensor(&inside, batch, window.len(), &self.mdm.device);
        Ok(self
            .mdm
            .net
            .forward_real_window(window_tokens, window, cache))
    }
}
