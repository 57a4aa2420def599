//! The attention masks of block diffusion ([`crate::block`]): block-causal attention and
//! BD3-LM's training mask over `x_t ⊕ x_0`, and the hook through which the network applies the
//! former ([`mask_later_blocks`], called by `Block::attention_bias`). Apart from the model so
//! that the network can apply them without importing the block model's training code.

use burn::tensor::{Tensor, TensorData};
use std::ops::Range;

/// Whether, with blocks of `block_size` positions, a query at position `query` attends to the
/// key at position `key`: the definition of block-causal attention.
pub fn block_causal_sees(query: usize, key: usize, block_size: usize) -> bool {
    key / block_size <= query / block_size
}

/// The block-causal attention bias `[queries.len(), keys]` (row-major) of queries at positions
/// `queries` over keys at positions `0..keys`: 0 up to the end of the query's block, −∞ after.
pub fn block_causal_bias(queries: Range<usize>, keys: usize, block_size: usize) -> Vec<f32> {
    let mut bias = Vec::with_capacity(queries.len() * keys);
    for query in queries {
        let visible = ((query / block_size + 1) * block_size).min(keys);
        bias.extend(std::iter::repeat_n(0.0, visible));
        bias.extend(std::iter::repeat_n(f32::NEG_INFINITY, keys - visible));
    }
    bias
}

/// `bias` (`[1 or batch, heads, queries.len(), keys]`) with keys in blocks after each query's
/// hidden (−∞), for a model with `block_size`; unchanged without one. The one place the
/// block-causal mask enters the network (`Block::attention_bias` calls it).
pub(crate) fn mask_later_blocks(
    bias: Tensor<4>,
    queries: Range<usize>,
    block_size: Option<usize>,
) -> Tensor<4> {
    let Some(block_size) = block_size else {
        return bias;
    };
    let [rows, heads, n, keys] = bias.dims();
    let mask = Tensor::<4>::from_data(
        TensorData::new(
            block_causal_bias(queries, keys, block_size),
            [1, 1, n, keys],
        ),
        &bias.device(),
    );
    bias + mask.expand([rows, heads, n, keys])
}

/// Whether, in BD3-LM's training pass over `x_t ⊕ x_0` (`2·length` positions: `x_t` at
/// `0..length`, `x_0` at `length..2·length`), query `query` attends to key `key`.
pub fn bd3_training_sees(query: usize, key: usize, length: usize, block_size: usize) -> bool {
    let (query_clean, key_clean) = (query >= length, key >= length);
    let query_block = (query % length) / block_size;
    let key_block = (key % length) / block_size;
    match (query_clean, key_clean) {
        // A noisy block sees itself (noisy) and the clean blocks before it.
        (false, false) => key_block == query_block,
        (false, true) => key_block < query_block,
        // A clean block sees the clean blocks up to its own, never a noisy one.
        (true, true) => key_block <= query_block,
        (true, false) => false,
    }
}

/// The additive bias `[2·length, 2·length]` (row-major) of [`bd3_training_sees`].
pub fn bd3_training_bias(length: usize, block_size: usize) -> Vec<f32> {
    let span = 2 * length;
    (0..span * span)
        .map(|i| {
            if bd3_training_sees(i / span, i % span, length, block_size) {
                0.0
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect()
}
