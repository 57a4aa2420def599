//! The key/value cache of the diffusion networks: a full forward pass that keeps every block's
//! keys and values ([`Network::forward_and_fill`]), then forward passes whose queries are only a
//! window of positions ([`Network::forward_window`]) — Fast-dLLM's prefix and dual caches
//! (github.com/NVlabs/Fast-dLLM, commit 24cc59e75f20a6384bae8c905965bb090b96388e:
//! `llada/generate.py` `generate_with_prefix_cache` / `generate_with_dual_cache` and the
//! `layer_past` / `replace_position` branch of `LLaDABlock.attention` in
//! `llada/model/modeling_llada.py`).
//!
//! **Keys after RoPE.** Fast-dLLM caches the keys before RoPE and rotates the whole
//! concatenated key sequence (positions `0..length`) at every window step. RoPE acts on each
//! key alone with the table row of its own position, so rotating a key once at fill time and
//! keeping it gives the same numbers, operation for operation, as rotating the cached raw key
//! again at every step; we cache the rotated keys and save that work. The window's queries are
//! rotated at their true positions (Fast-dLLM: `key_len − query_len..key_len` for the prefix
//! cache, `block_end − query_len..block_end` for the dual cache: in both, the window's own).
//!
//! **The window.** Per block: q, k, v of the window's positions from the current tokens; the
//! keys and values are the cached ones before and after the window with the fresh ones in
//! between (Fast-dLLM's prefix cache drops the cached tail and appends the fresh window, which
//! runs to the end; its dual cache overwrites the block in place: the same sequence), and
//! attention runs without a causal mask. Left padding hides the same keys as
//! [`Network::forward_padded`], and positions count from each row's first real token.

use crate::error::{HfError, Result};
use crate::model::{rope_tables_at, Network};
use burn::tensor::{Int, Tensor};
use std::ops::Range;

/// Every block's keys (RoPE applied) and values `[batch, kv_heads, length, head_dim]` of the
/// canvas last filled, in the network's dtype on its device.
#[derive(Debug, Clone)]
pub struct WindowCache {
    layers: Vec<(Tensor<4>, Tensor<4>)>,
    batch: usize,
    length: usize,
    left_padding: Vec<usize>,
}

impl WindowCache {
    /// The batch size and canvas length the cache was filled for.
    pub fn shape(&self) -> (usize, usize) {
        (self.batch, self.length)
    }
}

impl Network {
    /// [`Network::forward_padded`], also returning every block's keys and values.
    pub fn forward_and_fill(
        &self,
        ids: Tensor<2, Int>,
        left_padding: &[usize],
    ) -> Result<(Tensor<3>, WindowCache)> {
        self.refuse_causal()?;
        let [batch, length] = ids.dims();
        let (positions, mask) = self.padding_layout(left_padding, batch, length, 0..length)?;
        let mut layers = Vec::with_capacity(self.config.layers);
        let logits = self.forward_at(ids, &positions, mask, Some(&mut layers));
        let cache = WindowCache {
            layers,
            batch,
            length,
            left_padding: left_padding.to_vec(),
        };
        Ok((logits, cache))
    }

    /// The logits `[batch, n, vocab_rows]` at positions `start..start + n` for `ids: [batch,
    /// n]`, the tokens there now: fresh keys and values at `start + lead..start + n` (the
    /// window), `cache`'s elsewhere — the first `lead` positions are queried but keep their
    /// cached keys and values (Dream reads the output one position before its window).
    /// `left_padding` must be the one the cache was filled with.
    pub fn forward_window(
        &self,
        ids: Tensor<2, Int>,
        start: usize,
        lead: usize,
        cache: &WindowCache,
        left_padding: &[usize],
    ) -> Result<Tensor<3>> {
        self.refuse_causal()?;
        let [batch, n] = ids.dims();
        let length = cache.length;
        let queries = start..start + n;
        let window = start + lead..start + n;
        if batch != cache.batch || window.is_empty() || window.end > length {
            return Err(HfError::Input(format!(
                "a window of positions {queries:?} for a batch of {batch}, but the key/value \
                 cache holds {} × {length} positions: fill it for this canvas first",
                cache.batch
            )));
        }
        let padded = |p: &[usize]| p.iter().any(|&x| x > 0);
        if (padded(left_padding) || padded(&cache.left_padding))
            && left_padding != cache.left_padding.as_slice()
        {
            return Err(HfError::Input(format!(
                "left padding {left_padding:?} differs from the {:?} the key/value cache was \
                 filled with: fill it again after changing the padding",
                cache.left_padding
            )));
        }
        let (positions, mask) = self.padding_layout(left_padding, batch, length, queries)?;
        let c = &self.config;
        let mut x = self.embed(ids);
        let (cos, sin) = rope_tables_at(&positions, n, c.head_dim(), c.rope_theta, &x);
        for (block, (cached_k, cached_v)) in self.blocks().iter().zip(&cache.layers) {
            let (q, k, v) = block.qkv(x.clone(), &cos, &sin, c);
            let keys = splice(cached_k, k.narrow(2, lead, window.len()), &window, length);
            let values = splice(cached_v, v.narrow(2, lead, window.len()), &window, length);
            x = block.finish(x, q, (keys, values), mask.clone(), false, c);
        }
        Ok(self.head_logits(x))
    }

    /// The cache is for bidirectional (diffusion) networks; a causal one has its own
    /// ([`Network::forward_cached`]).
    fn refuse_causal(&self) -> Result<()> {
        if self.config.architecture.is_autoregressive() {
            return Err(HfError::Input(format!(
                "the window key/value cache is for diffusion checkpoints; {} is autoregressive",
                self.config.architecture.hf_name()
            )));
        }
        Ok(())
    }
}

/// `cached[.., ..window.start]`, then `fresh`, then `cached[.., window.end..]` along the
/// positions (dimension 2).
fn splice(cached: &Tensor<4>, fresh: Tensor<4>, window: &Range<usize>, length: usize) -> Tensor<4> {
    let mut parts = Vec::with_capacity(3);
    if window.start > 0 {
        parts.push(cached.clone().narrow(2, 0, window.start));
    }
    parts.push(fresh);
    if window.end < length {
        parts.push(cached.clone().narrow(2, window.end, length - window.end));
    }
    if parts.len() == 1 {
        return parts.pop().expect("one part");
    }
    Tensor::cat(parts, 2)
}
