//! Block diffusion checkpoints: SDAR (`SDARForCausalLM`, github.com/JetAstra/SDAR at commit
//! c2041a8333333d685f6e15122c84f60f51f85ebd: `training/model/SDAR-4B-Chat/modeling_sdar.py`,
//! `generate.py`).
//!
//! SDAR is a Qwen3 network ([`crate::model`]'s Qwen2 layers with an RMSNorm on every query and
//! key head before RoPE, no q/k/v biases, `head_dim` its own config value) whose attention is
//! **block-causal**: the sequence is cut into blocks of `block_size` positions from position 0,
//! and a position attends to every position of its own block and of earlier blocks.
//!
//! * Every forward pass of the network carries that mask (`Network::with_block_causal_mask`,
//!   which `Network::padding_layout` applies: the plain pass, the padded pass, the cache's
//!   fill and window). Under left padding the blocks count from each row's first real token,
//!   as its positions do.
//! * Training ([`Network::forward_bd_training`]): the network runs once over `x_t ⊕ x_0`
//!   (both halves at positions `0..n`) with `block_diff_mask`: noisy block `b` sees noisy block
//!   `b` and clean blocks `< b`; clean block `b` sees clean blocks `≤ b`.
//! * Decoding (`block_diffusion_generate`): the prompt's whole blocks are prefilled into a key/
//!   value cache; then each block is decoded with its queries over the cache and over itself
//!   (bidirectional inside the block), and once finished its keys and values are stored. The
//!   SDK's remasking samplers with `block_length` = `block_size` do this with `cache: dual` (or
//!   `prefix`), which is exact here: a fill at the block's first step computes the finished
//!   blocks' keys and values as the reference stores them (they never see a later block), and a
//!   window over the block reads exactly those. It costs a full-canvas pass where the reference
//!   makes a block-wide store call. [`crate::block_decode`] keeps the sampler's blocks the
//!   model's and adds SDAR's `sequential` rule, which no SDK sampler has.

use crate::error::{HfError, Result};
use crate::model::Network;
use burn::tensor::{Bool, Int, Tensor, TensorData};

/// Whether a query at real position `query` may see a key at real position `key` under
/// block-causal attention in blocks of `block_size`: the key's block is not a later one.
pub fn block_causal_sees(query: usize, key: usize, block_size: usize) -> bool {
    key / block_size <= query / block_size
}

/// SDAR's training mask (`block_diff_mask`) over `x_t ⊕ x_0` (`2n` positions, the `x_0`
/// half from `n`): whether query `q` may see key `k`.
pub fn training_sees(q: usize, k: usize, n: usize, block_size: usize) -> bool {
    let (q_clean, k_clean) = (q >= n, k >= n);
    let block = |i: usize, clean: bool| {
        if clean {
            (i - n) / block_size
        } else {
            i / block_size
        }
    };
    let (bq, bk) = (block(q, q_clean), block(k, k_clean));
    let diagonal = bq == bk && q_clean == k_clean;
    let offset_causal = bq > bk && k_clean && !q_clean;
    let causal = bq >= bk && k_clean && q_clean;
    diagonal || offset_causal || causal
}

impl Network {
    /// `padding_mask` (the keys hidden by left padding, `[batch, heads, queries, length]`) with
    /// SDAR's block-causal mask added when the network has a block size: key `j` is hidden
    /// from query `i` of row `b` when its block, counted from the row's first real token
    /// (`left_padding[b]`, none when empty), is a later one. Without a block size,
    /// `padding_mask` unchanged.
    pub(crate) fn with_block_causal_mask(
        &self,
        padding_mask: Option<Tensor<4, Bool>>,
        left_padding: &[usize],
        batch: usize,
        length: usize,
        queries: std::ops::Range<usize>,
    ) -> Option<Tensor<4, Bool>> {
        let Some(block_size) = self.config.block_size else {
            return padding_mask;
        };
        let pad = |b: usize| left_padding.get(b).copied().unwrap_or(0);
        let n = queries.len();
        // The padding keys are hidden for every query as well (what `padding_mask` says), so
        // the whole mask is built here.
        let hidden: Vec<bool> = (0..batch)
            .flat_map(|b| {
                let queries = queries.clone();
                queries.flat_map(move |i| {
                    (0..length).map(move |j| {
                        j < pad(b)
                            || !block_causal_sees(
                                i.saturating_sub(pad(b)),
                                j.saturating_sub(pad(b)),
                                block_size,
                            )
                    })
                })
            })
            .collect();
        let mask = Tensor::<4, Bool>::from_data(
            TensorData::new(hidden, [batch, 1, n, length]),
            self.device(),
        );
        Some(mask.expand([batch, self.config.heads, n, length]))
    }

    /// SDAR's training pass: logits `[batch, 2n, vocab_rows]` over `x_t ⊕ x_0` (`xt`, `x0`:
    /// `[batch, n]`, both halves at RoPE positions `0..n`) under [`training_sees`]' mask. The
    /// `x_t` half's logits are those a block-causal pass over `x_t` gives where every earlier
    /// block is clean — what decoding block by block sees — for every block at once.
    pub fn forward_bd_training(&self, xt: Tensor<2, Int>, x0: Tensor<2, Int>) -> Result<Tensor<3>> {
        let Some(block_size) = self.config.block_size else {
            return Err(HfError::Input(format!(
                "the training pass over x_t ⊕ x_0 is block diffusion's; {} has no block_size",
                self.config.architecture.hf_name()
            )));
        };
        let [batch, n] = xt.dims();
        if x0.dims() != [batch, n] {
            return Err(HfError::Input(format!(
                "x_t is {batch} × {n} but x_0 is {:?}: they must have the same shape",
                x0.dims()
            )));
        }
        let positions: Vec<usize> = (0..n).chain(0..n).collect();
        let hidden: Vec<bool> = (0..2 * n)
            .flat_map(|q| (0..2 * n).map(move |k| !training_sees(q, k, n, block_size)))
            .collect();
        let mask = Tensor::<4, Bool>::from_data(
            TensorData::new(hidden, [1, 1, 2 * n, 2 * n]),
            self.device(),
        )
        .expand([batch, self.config.heads, 2 * n, 2 * n]);
        let ids = Tensor::cat(vec![xt, x0], 1);
        Ok(self.forward_at(ids, &positions, Some(mask), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_causal_is_causal_across_blocks_and_bidirectional_inside() {
        // Blocks of 4: position 5 (block 1) sees 0..8, not 8.
        assert!(block_causal_sees(5, 0, 4) && block_causal_sees(5, 7, 4));
        assert!(!block_causal_sees(5, 8, 4));
        // Block size 1 is causal attention.
        assert!(block_causal_sees(3, 3, 1) && !block_causal_sees(3, 4, 1));
    }

    #[test]
    fn the_training_mask_is_sdars_three_parts() {
        let (n, b) = (8, 4);
        // Noisy block 1 (positions 4..8) sees itself and clean block 0 (8..12), nothing else.
        let seen: Vec<usize> = (0..2 * n).filter(|&k| training_sees(5, k, n, b)).collect();
        assert_eq!(seen, vec![4, 5, 6, 7, 8, 9, 10, 11]);
        // Clean block 1 (12..16) sees clean blocks 0 and 1, no noisy position.
        let seen: Vec<usize> = (0..2 * n).filter(|&k| training_sees(13, k, n, b)).collect();
        assert_eq!(seen, (8..16).collect::<Vec<_>>());
        // Noisy block 0 sees only itself.
        let seen: Vec<usize> = (0..2 * n).filter(|&k| training_sees(0, k, n, b)).collect();
        assert_eq!(seen, vec![0, 1, 2, 3]);
    }
}
