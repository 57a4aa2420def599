//! dlm-bench patch: attention of `f32` queries over `bf16` keys and values (a bf16 KV cache).
//!
//! A decoding step reads the whole filled cache once per layer. At 511 cached positions of
//! the CPU config (batch 16, 4 heads of 32, 4 layers) an `f32` cache is 33.5 MB, more than the
//! 32 MB L3 of the machine it was measured on, so each step streams it from DRAM; in `bf16` it
//! is 16.75 MB and stays in L3. The query, the bias, the softmax and the output stay `f32`;
//! only keys and values are rounded (to 8 significant bits, which is what a bf16 model stores
//! anyway).
//!
//! One query row (`seq_q == 1`, no mask, not causal, no softcap) over keys stored *transposed*
//! (the view's key-position stride is 1: a cache laid out `[batch, heads, dim, capacity]` and
//! viewed as `[batch, heads, capacity, dim]`) takes a fused kernel that widens the bf16 values
//! in registers: the scores are `dim` multiply-adds over contiguous runs of keys, the value mix
//! `keys` multiply-adds over contiguous value rows, both lane-wise with no horizontal sums, so
//! the compiler vectorises them. Multiplies and adds stay separate (no fused multiply-add) and
//! every sum runs in a fixed order, so every instruction set gives the same bits. Any other
//! mixed call widens keys and values to `f32` and takes the ordinary path.

use alloc::vec;
use alloc::vec::Vec;
use burn_backend::DType;
use burn_backend::ops::AttentionModuleOptions;
use burn_std::{Bytes, bf16};

use super::attention::{
    AttentionDims, SOFTMAX_LANES, attention_dims, broadcast_attn_mask_bias, cast_to_f32, lanes_sum,
    matrix_steps, rows_in_place,
};
use crate::{FlexTensor, Layout};

/// Keys scored at once: their accumulators stay in registers (four AVX-512 or eight AVX
/// registers of `f32`).
const KEY_BLOCK: usize = 64;

/// Value columns mixed at once.
const MIX_COLUMNS: usize = 32;

/// Lanes of the max and sum reductions (the naive kernel's, whose tree sum this shares).
const LANES: usize = SOFTMAX_LANES;

/// Heads run in parallel from this much work (`heads · keys · (dim + val_dim)`). A decoding
/// step of the CPU config at 511 cached keys (2.1 M) was faster with its heads on one thread
/// than split over two (0.92 against 1.15 ms per step): the cache is in L3 and a head takes
/// about 2 µs, so waking a second thread for each of the 4 layers cost more than it saved.
/// Eight times that work (e.g. 4,096 keys) is assumed, not measured, to pay.
#[cfg(feature = "rayon")]
const PARALLEL_WORK: usize = 1 << 24;

/// Whether [`attention`] handles this call: an `f32` query with `bf16` keys.
pub fn is_mixed(query: &FlexTensor, key: &FlexTensor) -> bool {
    query.dtype() == DType::F32 && key.dtype() == DType::BF16
}

/// Attention of an `f32` query over `bf16` keys and values; the output is `f32`.
pub fn attention(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    mask: Option<FlexTensor>,
    attn_bias: Option<FlexTensor>,
    options: AttentionModuleOptions,
) -> FlexTensor {
    assert_eq!(
        value.dtype(),
        DType::BF16,
        "attention: with bf16 keys the values must be bf16 too"
    );
    if let Some(bias) = &attn_bias {
        assert_eq!(bias.dtype(), DType::F32, "attention: the bias must be f32");
    }
    let one_query = query.layout().shape()[2] == 1
        && mask.is_none()
        && !options.is_causal
        && options.softcap.is_none()
        && keys_transposed(key.layout())
        && rows_in_place(value.layout());
    if one_query {
        return one_query_attention(query, key, value, attn_bias, options.scale);
    }
    let key = cast_to_f32(key, widen);
    let value = cast_to_f32(value, widen);
    super::attention::attention(query, key, value, mask, attn_bias, options)
}

/// `bf16` → `f32`, exact for every bit pattern (NaN payloads included).
#[inline(always)]
fn widen(x: bf16) -> f32 {
    f32::from_bits(u32::from(x.to_bits()) << 16)
}

/// A 4D view whose key positions (dim 2) are adjacent in memory and whose other steps are
/// non-negative.
fn keys_transposed(layout: &Layout) -> bool {
    let shape = layout.shape();
    let strides = layout.strides();
    shape.num_dims() == 4 && strides.iter().all(|&s| s >= 0) && (shape[2] <= 1 || strides[2] == 1)
}

fn one_query_attention(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    attn_bias: Option<FlexTensor>,
    scale: Option<f64>,
) -> FlexTensor {
    let query = query.to_contiguous();
    let AttentionDims {
        batch,
        heads,
        head_dim,
        seq_kv,
        val_dim,
        q_per_kv,
        ..
    } = attention_dims(
        query.layout(),
        key.layout(),
        value.layout(),
        "attention (bf16 keys and values)",
    );
    let scale = scale.unwrap_or_else(|| 1.0 / (head_dim as f64).sqrt()) as f32;

    let mut output = vec![0f32; batch * heads * val_dim];
    if output.is_empty() || seq_kv == 0 {
        return FlexTensor::new(
            Bytes::from_elems(output),
            Layout::contiguous(burn_std::Shape::from(vec![batch, heads, 1, val_dim])),
            DType::F32,
        );
    }

    let bias = attn_bias.map(|b| broadcast_attn_mask_bias(b, [batch, heads, 1, seq_kv], "bias"));

    let q_data: &[f32] = query.storage();
    let k_data: &[bf16] = key.storage();
    let v_data: &[bf16] = value.storage();
    let bias_data: Option<(&[f32], (usize, usize))> = bias
        .as_ref()
        .map(|b| (b.tensor.storage(), (b.batch_step, b.head_step)));
    let k_layout = key.layout();
    let (k_start, k_batch, k_head) = matrix_steps(k_layout);
    // The step between a key's dimensions (a dimension of size 1 never steps).
    let k_row = if head_dim <= 1 {
        0
    } else {
        k_layout.strides()[3] as usize
    };
    let (v_start, v_batch, v_head) = matrix_steps(value.layout());
    // The key slice of one head spans its `head_dim` rows, `k_row` apart.
    let k_len = (head_dim - 1) * k_row + seq_kv;

    let run_head = |scores: &mut Vec<f32>, (index, out): (usize, &mut [f32])| {
        let (b, h) = (index / heads, index % heads);
        let kv_h = h / q_per_kv;
        let q_off = (b * heads + h) * head_dim;
        let k_off = k_start + b * k_batch + kv_h * k_head;
        let v_off = v_start + b * v_batch + kv_h * v_head;
        let bias_row = bias_data.map(|(data, (batch_step, head_step))| {
            let off = b * batch_step + h * head_step;
            &data[off..off + seq_kv]
        });
        one_query_head(
            &q_data[q_off..q_off + head_dim],
            &k_data[k_off..k_off + k_len],
            k_row,
            &v_data[v_off..v_off + seq_kv * val_dim],
            bias_row,
            scale,
            scores,
            out,
        );
    };

    #[cfg(feature = "rayon")]
    {
        let work = (batch * heads)
            .saturating_mul(seq_kv)
            .saturating_mul(head_dim + val_dim);
        if batch * heads > 1 && work >= PARALLEL_WORK {
            use rayon::prelude::*;
            output
                .par_chunks_exact_mut(val_dim)
                .enumerate()
                .for_each_init(|| vec![0f32; seq_kv], run_head);
        } else {
            let mut scores = vec![0f32; seq_kv];
            for head in output.chunks_exact_mut(val_dim).enumerate() {
                run_head(&mut scores, head);
            }
        }
    }
    #[cfg(not(feature = "rayon"))]
    {
        let mut scores = vec![0f32; seq_kv];
        for head in output.chunks_exact_mut(val_dim).enumerate() {
            run_head(&mut scores, head);
        }
    }

    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(burn_std::Shape::from(vec![batch, heads, 1, val_dim])),
        DType::F32,
    )
}

/// One (sequence, head): `out = softmax(scale · q·K + bias) · V`. Key dimension `d` of every
/// key is the run `kt[d · k_row..][..keys]`; `v` holds `keys` rows of `out.len()` values.
#[allow(clippy::too_many_arguments)]
fn one_query_head(
    q: &[f32],
    kt: &[bf16],
    k_row: usize,
    v: &[bf16],
    bias: Option<&[f32]>,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    key_scores(q, kt, k_row, scale, bias, scores);
    let total = softmax_weights(scores);
    mix_values(scores, v, out);
    let inv = 1.0 / total;
    for o in out.iter_mut() {
        *o *= inv;
    }
}

/// `scores[j] = (Σ_d q[d] · k[d][j]) · scale + bias[j]`, the sum over `d` in order whichever
/// loop runs (so both give the same bits).
// The named lifetime is for `with_simd`, which rejects an elided one in `Option<&[f32]>`.
#[allow(clippy::extra_unused_type_parameters, clippy::needless_lifetimes)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn key_scores<'a, #[cfg(feature = "simd")] S: macerator::Simd>(
    q: &[f32],
    kt: &[bf16],
    k_row: usize,
    scale: f32,
    bias: Option<&'a [f32]>,
    scores: &mut [f32],
) {
    if scores.len() >= ROW_PASS_KEYS {
        key_scores_by_rows(q, kt, k_row, scores);
    } else {
        key_scores_by_blocks(q, kt, k_row, scores);
    }
    match bias {
        Some(bias) => {
            for (s, &b) in scores.iter_mut().zip(bias) {
                *s = *s * scale + b;
            }
        }
        None => {
            for s in scores.iter_mut() {
                *s *= scale;
            }
        }
    }
}

/// From this many keys the scores are summed a key dimension at a time over all keys (each
/// run read once, front to back, the sums in L1) rather than a register block of keys at a
/// time over all dimensions (`dim` runs read in short strided pieces). One query over 4
/// layers' bf16 caches of 16 × 4 heads of 32, on one thread: 19 against 14 µs per layer at 64
/// keys, 76–80 against 101 µs at 511. The threshold between those two points is a guess.
const ROW_PASS_KEYS: usize = 256;

/// `scores[j] = Σ_d q[d] · k[d][j]`, one key dimension at a time.
#[inline(always)]
fn key_scores_by_rows(q: &[f32], kt: &[bf16], k_row: usize, scores: &mut [f32]) {
    let n = scores.len();
    scores.fill(0.0);
    for (d, &qd) in q.iter().enumerate() {
        for (s, &k) in scores.iter_mut().zip(&kt[d * k_row..][..n]) {
            *s += qd * widen(k);
        }
    }
}

/// `scores[j] = Σ_d q[d] · k[d][j]`, [`KEY_BLOCK`] keys at a time.
#[inline(always)]
fn key_scores_by_blocks(q: &[f32], kt: &[bf16], k_row: usize, scores: &mut [f32]) {
    for (block, out) in scores.chunks_mut(KEY_BLOCK).enumerate() {
        let first = block * KEY_BLOCK;
        let mut acc = [0f32; KEY_BLOCK];
        if out.len() == KEY_BLOCK {
            // A full block with a constant width, so that its accumulators live in registers.
            for (d, &qd) in q.iter().enumerate() {
                let run: &[bf16; KEY_BLOCK] =
                    kt[d * k_row + first..][..KEY_BLOCK].try_into().unwrap();
                for (acc, &k) in acc.iter_mut().zip(run) {
                    *acc += qd * widen(k);
                }
            }
        } else {
            let width = out.len();
            for (d, &qd) in q.iter().enumerate() {
                let run = &kt[d * k_row + first..][..width];
                for (acc, &k) in acc.iter_mut().zip(run) {
                    *acc += qd * widen(k);
                }
            }
        }
        out.copy_from_slice(&acc[..out.len()]);
    }
}

/// Replaces each score `s` by `exp(s − max)` and returns their sum (both reductions lane-wise,
/// then a fixed tree).
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn softmax_weights<#[cfg(feature = "simd")] S: macerator::Simd>(scores: &mut [f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = scores.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (m, &s) in lanes.iter_mut().zip(chunk) {
            *m = if s > *m { s } else { *m };
        }
    }
    let max = tail
        .iter()
        .chain(&lanes)
        .fold(f32::NEG_INFINITY, |m, &s| m.max(s));
    let mut sums = [0f32; LANES];
    let mut chunks = scores.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for (sum, s) in sums.iter_mut().zip(chunk.iter_mut()) {
            *s = exp_nonpositive(*s - max);
            *sum += *s;
        }
    }
    let mut tail_sum = 0f32;
    for s in chunks.into_remainder() {
        *s = exp_nonpositive(*s - max);
        tail_sum += *s;
    }
    lanes_sum(sums) + tail_sum
}

/// `e^x` for `x ≤ 0` (the argument of a softmax weight), within 2 ulp of the exact value; 0
/// below −87 (where `e^x < 1.7e-38`, so no sum of weights that includes the maximum's 1 can
/// tell) and for −∞; NaN for NaN. Cephes' polynomial on `x − n·ln 2`, written without branches
/// so that it vectorises.
#[inline(always)]
pub(super) fn exp_nonpositive(x: f32) -> f32 {
    const CUTOFF: f32 = -87.0;
    // 1.5 · 2^23: adding it rounds to an integer in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let clamped = if x < CUTOFF { CUTOFF } else { x };
    let t = clamped * core::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let n_int = t.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    // ln 2 in two parts, so that `n · ln 2` is subtracted without rounding error.
    let r = clamped - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * (r * r) + r + 1.0;
    let two_n = f32::from_bits(((n_int + 127) as u32) << 23);
    // All ones unless x is below the cutoff (−∞ included); NaN stays NaN through `clamped`.
    let keep = 0u32.wrapping_sub(u32::from(x >= CUTOFF || x.is_nan()));
    f32::from_bits((y * two_n).to_bits() & keep)
}

/// `out = Σ_j weights[j] · v[j]` (unnormalised), the rows `out.len()` apart.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn mix_values<#[cfg(feature = "simd")] S: macerator::Simd>(
    weights: &[f32],
    v: &[bf16],
    out: &mut [f32],
) {
    let val_dim = out.len();
    for (block, out) in out.chunks_mut(MIX_COLUMNS).enumerate() {
        let col = block * MIX_COLUMNS;
        let sums = if out.len() == MIX_COLUMNS {
            mix_block(weights, v, val_dim, col, MIX_COLUMNS)
        } else {
            mix_block(weights, v, val_dim, col, out.len())
        };
        out.copy_from_slice(&sums[..out.len()]);
    }
}

/// `Σ_j weights[j] · v[j][col..col + width]` (`width ≤ MIX_COLUMNS`), zero-padded. Even and
/// odd rows go to separate accumulators, so that no single chain of adds bounds the loop.
#[inline(always)]
fn mix_block(
    weights: &[f32],
    v: &[bf16],
    val_dim: usize,
    col: usize,
    width: usize,
) -> [f32; MIX_COLUMNS] {
    let mut even = [0f32; MIX_COLUMNS];
    let mut odd = [0f32; MIX_COLUMNS];
    let mix = |acc: &mut [f32; MIX_COLUMNS], row: &[bf16], w: f32| {
        for (acc, &x) in acc[..width].iter_mut().zip(&row[col..col + width]) {
            *acc += w * widen(x);
        }
    };
    let pairs = v.chunks_exact(2 * val_dim);
    let last = pairs.remainder();
    for (rows, w) in pairs.zip(weights.chunks_exact(2)) {
        let (r0, r1) = rows.split_at(val_dim);
        mix(&mut even, r0, w[0]);
        mix(&mut odd, r1, w[1]);
    }
    if !last.is_empty() {
        mix(&mut even, last, weights[weights.len() - 1]);
    }
    core::array::from_fn(|c| even[c] + odd[c])
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn tensor_f32(data: Vec<f32>, shape: &[usize]) -> FlexTensor {
        FlexTensor::new(
            Bytes::from_elems(data),
            Layout::contiguous(burn_std::Shape::from(shape.to_vec())),
            DType::F32,
        )
    }

    fn tensor_bf16(data: Vec<bf16>, shape: &[usize]) -> FlexTensor {
        FlexTensor::new(
            Bytes::from_elems(data),
            Layout::contiguous(burn_std::Shape::from(shape.to_vec())),
            DType::BF16,
        )
    }

    /// A deterministic pseudo-random value in [-1, 1).
    fn noise(i: usize, salt: usize) -> f32 {
        let x = (i as u64 ^ (salt as u64) << 32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((x >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }

    #[test]
    fn widening_is_exact_for_every_bit_pattern() {
        for bits in 0..=u16::MAX {
            let x = bf16::from_bits(bits);
            let (wide, reference) = (widen(x), x.to_f32());
            assert!(
                wide.to_bits() == reference.to_bits() || (wide.is_nan() && reference.is_nan()),
                "bits {bits:#06x}: {wide} against {reference}"
            );
        }
    }

    #[test]
    fn exp_is_within_two_ulp_on_the_softmax_domain() {
        // One value in 256 of the f32 range [-87, 0], plus the edges and special values.
        let mut checked = 0;
        let mut x = -87.0f32;
        while x < 0.0 {
            let (got, want) = (exp_nonpositive(x), (x as f64).exp());
            let ulp = f32::from_bits((want as f32).to_bits() + 1) as f64 - want as f32 as f64;
            assert!(
                (got as f64 - want).abs() <= 2.0 * ulp,
                "x = {x}: {got} against {want}"
            );
            x = f32::from_bits(x.to_bits() - 256);
            checked += 1;
        }
        assert!(checked > 4_000_000);
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-0.0), 1.0);
        assert_eq!(exp_nonpositive(-87.5), 0.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        assert!(exp_nonpositive(f32::NAN).is_nan());
    }

    /// Attention in f64 over the bf16 values widened, one query per (sequence, head).
    fn reference(
        q: &[f32],
        k: &[bf16],
        v: &[bf16],
        bias: &[f32],
        (b, h, n, d): (usize, usize, usize, usize),
    ) -> Vec<f64> {
        let scale = 1.0 / (d as f64).sqrt();
        let mut out = Vec::new();
        for bi in 0..b {
            for hi in 0..h {
                let head = (bi * h + hi) * n * d;
                let scores: Vec<f64> = (0..n)
                    .map(|j| {
                        let dot: f64 = (0..d)
                            .map(|x| {
                                q[(bi * h + hi) * d + x] as f64
                                    * k[head + j * d + x].to_f32() as f64
                            })
                            .sum();
                        dot * scale + bias[hi * n + j] as f64
                    })
                    .collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let w: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let total: f64 = w.iter().sum();
                for x in 0..d {
                    let mixed: f64 = (0..n)
                        .map(|j| w[j] * v[head + j * d + x].to_f32() as f64)
                        .sum();
                    out.push(mixed / total);
                }
            }
        }
        out
    }

    fn output(t: FlexTensor) -> Vec<f32> {
        t.to_contiguous().storage::<f32>().to_vec()
    }

    /// Keys `[b, h, n, d]` stored as `[b, h, d, capacity]` from position 3 and viewed back, as
    /// the cache does (a view with a start offset and gaps between heads).
    fn transposed_view(k: &[bf16], (b, h, n, d): (usize, usize, usize, usize)) -> FlexTensor {
        let capacity = n + 5;
        let mut kt = vec![bf16::from_f32(9.0); b * h * d * capacity];
        for bh in 0..b * h {
            for j in 0..n {
                for x in 0..d {
                    kt[(bh * d + x) * capacity + 3 + j] = k[(bh * n + j) * d + x];
                }
            }
        }
        let view = tensor_bf16(kt, &[b, h, d, capacity])
            .narrow(3, 3, n)
            .transpose(2, 3);
        assert!(keys_transposed(view.layout()));
        view
    }

    #[test]
    fn one_query_kernel_matches_an_f64_reference_and_the_widened_path() {
        // Key counts around the key block (64), the lanes (16) and the row-pass threshold (256);
        // dims around the mix block.
        for (b, h, n, d) in [
            (2, 3, 1, 8),
            (1, 2, 63, 32),
            (2, 2, 64, 32),
            (3, 4, 131, 40),
            (1, 2, 300, 32),
        ] {
            let shape = (b, h, n, d);
            let q: Vec<f32> = (0..b * h * d).map(|i| noise(i, 1) * 2.0).collect();
            let k: Vec<bf16> = (0..b * h * n * d)
                .map(|i| bf16::from_f32(noise(i, 2)))
                .collect();
            let v: Vec<bf16> = (0..b * h * n * d)
                .map(|i| bf16::from_f32(noise(i, 3)))
                .collect();
            let bias: Vec<f32> = (0..h * n).map(|i| noise(i, 4) * 3.0).collect();
            let want = reference(&q, &k, &v, &bias, shape);

            let fused = attention(
                tensor_f32(q.clone(), &[b, h, 1, d]),
                transposed_view(&k, shape),
                tensor_bf16(v.clone(), &[b, h, n, d]),
                None,
                Some(tensor_f32(bias.clone(), &[1, h, 1, n])),
                Default::default(),
            );
            // Row-major keys are not the kernel's layout: they are widened to f32 instead.
            let widened = attention(
                tensor_f32(q.clone(), &[b, h, 1, d]),
                tensor_bf16(k.clone(), &[b, h, n, d]),
                tensor_bf16(v.clone(), &[b, h, n, d]),
                None,
                Some(tensor_f32(bias.clone(), &[1, h, 1, n])),
                Default::default(),
            );
            for (label, got) in [("fused", output(fused)), ("widened", output(widened))] {
                assert_eq!(got.len(), want.len());
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "{label} {shape:?} output {i}: {g} against {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn both_score_loops_give_the_same_bits() {
        for (n, d) in [(1, 8), (64, 32), (131, 40), (300, 32)] {
            let k_row = n + 7;
            let q: Vec<f32> = (0..d).map(|i| noise(i, 8) * 3.0).collect();
            let kt: Vec<bf16> = (0..d * k_row)
                .map(|i| bf16::from_f32(noise(i, 9)))
                .collect();
            let (mut rows, mut blocks) = (vec![0f32; n], vec![1f32; n]);
            key_scores_by_rows(&q, &kt, k_row, &mut rows);
            key_scores_by_blocks(&q, &kt, k_row, &mut blocks);
            let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&rows), bits(&blocks), "{n} keys of {d}");
        }
    }

    #[test]
    fn heads_give_the_same_bits_serial_and_in_parallel() {
        // 16 × 4 heads of 32 over 4,100 keys crosses the parallel threshold; each head alone
        // (batch 1, one head) runs serially. Both must give the same bits.
        let (b, h, n, d) = (16, 4, 4100, 32);
        assert!(b * h * n * (d + d) >= PARALLEL_WORK);
        let q: Vec<f32> = (0..b * h * d).map(|i| noise(i, 5)).collect();
        let k: Vec<bf16> = (0..b * h * n * d)
            .map(|i| bf16::from_f32(noise(i, 6)))
            .collect();
        let v: Vec<bf16> = (0..b * h * n * d)
            .map(|i| bf16::from_f32(noise(i, 7)))
            .collect();
        let all = output(attention(
            tensor_f32(q.clone(), &[b, h, 1, d]),
            transposed_view(&k, (b, h, n, d)),
            tensor_bf16(v.clone(), &[b, h, n, d]),
            None,
            None,
            Default::default(),
        ));
        for head in [0, 17, b * h - 1] {
            let one = output(attention(
                tensor_f32(q[head * d..][..d].to_vec(), &[1, 1, 1, d]),
                transposed_view(&k[head * n * d..][..n * d], (1, 1, n, d)),
                tensor_bf16(v[head * n * d..][..n * d].to_vec(), &[1, 1, n, d]),
                None,
                None,
                Default::default(),
            ));
            let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&all[head * d..][..d]), bits(&one), "head {head}");
        }
    }
}
