//! The draw for logits that live in host memory (Burn's `flex` backend, whose device *is* the
//! CPU): one fused pass per row instead of a chain of whole-tensor Burn operations.
//!
//! At a text vocabulary the Burn chain in [`super::draw_rows`] costs about eight passes over
//! every drawn row (maximum, subtract, `exp`, running sum, compare, count, gather, …), each
//! writing a fresh tensor, and flex computes `exp` with glibc's scalar `expf` (2.3 ns per
//! value here). Per row this kernel instead:
//!
//! 1. reads the logits once for their maximum (and the second largest, for the margin), while
//!    the row is pulled into the core's cache;
//! 2. computes the weights `exp((z − max) / T)` with a polynomial `exp` that the compiler
//!    vectorises, summing them in blocks of [`BLOCK`] entries (and `Σ w (z − max)` for the
//!    entropy) without storing them;
//! 3. walks the block sums to the block where the running sum passes `u · total`, and
//!    recomputes that one block's weights to find the entry.
//!
//! Rows run in parallel over rayon's threads, and the hot functions are compiled for AVX2 (and
//! the other common SIMD levels) with runtime dispatch (`multiversion`). The arithmetic is
//! written out in a fixed order (eight lanes, no fused multiply-add), so every dispatch target
//! computes the same bits: a sample does not depend on the CPU that drew it.
//!
//! Compared with the Burn chain, the result differs only by f32 rounding: the running sums are
//! grouped by block, and [`exp_nonpositive`] is within 1 ulp of the correctly rounded `exp`
//! instead of glibc's < 1 ulp, and returns 0 below `−87` where glibc's `expf` still returns
//! values under `1.7e-38` (relative to the largest weight, which is 1). The tests in
//! `tests.rs` hold this kernel to the host path exactly as they hold the Burn chain.

use super::{Shaping, Want, U_MAX};
use multiversion::multiversion;
use rayon::prelude::*;

/// Weights are summed in blocks of this many entries (a multiple of [`LANES`]): the draw walks
/// `vocab / BLOCK` sums and then recomputes one block, instead of storing every weight.
const BLOCK: usize = 512;
/// Independent accumulators per sum: wide enough for AVX2's eight f32 lanes, and a fixed
/// summation order on every target.
const LANES: usize = 8;
/// Below this, `exp` returns 0 (see the module documentation).
const EXP_CUTOFF: f32 = -87.0;

/// `e^x` for `x ≤ 0` (NaN stays NaN): Cephes' `expf` scheme, `2^n · p(r)` with
/// `n = round(x / ln 2)`, `r = x − n ln 2` in two parts and a degree-5 polynomial for
/// `(e^r − 1 − r) / r²`. Written in plain arithmetic and bit casts so that it vectorises;
/// `exp_is_within_one_ulp` checks it against f64's `exp` over the whole range.
#[inline(always)]
fn exp_nonpositive(x: f32) -> f32 {
    // Adding 1.5 · 2²³ rounds to an integer in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let xc = if x < EXP_CUTOFF { EXP_CUTOFF } else { x };
    let t = xc * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let n_int = t.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    let r = xc - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * (r * r) + r + 1.0;
    let scale = f32::from_bits(((n_int + 127) as u32) << 23);
    // 0 below the cutoff (NaN stays NaN), as a bit mask: a branch
    // here stops the compiler from vectorising the loops this is inlined into.
    let keep = 0u32.wrapping_sub(u32::from(x >= EXP_CUTOFF || x.is_nan()));
    f32::from_bits((y * scale).to_bits() & keep)
}

/// A row's largest logit and second largest (equal to the largest when it is tied), and
/// whether the row holds a NaN. NaNs are skipped by the comparisons.
#[multiversion(targets = "simd")]
fn top_two(z: &[f32]) -> (f32, f32, bool) {
    let mut first = [f32::NEG_INFINITY; LANES];
    let mut second = [f32::NEG_INFINITY; LANES];
    let mut nan = [false; LANES];
    let chunks = z.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            let x = c[l];
            nan[l] |= x.is_nan();
            let keep = if x > second[l] { x } else { second[l] };
            second[l] = if x > first[l] { first[l] } else { keep };
            first[l] = if x > first[l] { x } else { first[l] };
        }
    }
    let (mut a, mut b, mut any_nan) = (f32::NEG_INFINITY, f32::NEG_INFINITY, false);
    for x in first.into_iter().chain(second).chain(rest.iter().copied()) {
        any_nan |= x.is_nan();
        if x > a {
            b = a;
            a = x;
        } else if x > b {
            b = x;
        }
    }
    (a, b, any_nan || nan.iter().any(|&n| n))
}

/// A row's largest logit and whether it holds a NaN (the margin-free [`top_two`]).
#[multiversion(targets = "simd")]
fn largest(z: &[f32]) -> (f32, bool) {
    let mut first = [f32::NEG_INFINITY; LANES];
    let mut nan = [false; LANES];
    let chunks = z.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            let x = c[l];
            nan[l] |= x.is_nan();
            first[l] = if x > first[l] { x } else { first[l] };
        }
    }
    let mut a = f32::NEG_INFINITY;
    let mut any_nan = nan.iter().any(|&n| n);
    for x in first.into_iter().chain(rest.iter().copied()) {
        any_nan |= x.is_nan();
        if x > a {
            a = x;
        }
    }
    (a, any_nan)
}

/// Sums of the weights `exp((z − max) · scale)` per block of [`BLOCK`] entries, written to
/// `block_sums`, and with `ENTROPY` also `Σ w (z − max)` (with `z − max` floored at the `exp`
/// cutoff, where `w` is 0, so that `−inf` logits add `0` and not `0 · −inf`). Returns
/// `(Σ w, Σ w (z − max))`, the first summed block by block in order, as the draw walks them.
/// (Every accumulator is per block and per lane: accumulating across blocks kept the compiler
/// from vectorising the loop.)
#[multiversion(targets = "simd")]
fn block_weights<const ENTROPY: bool>(
    z: &[f32],
    max: f32,
    scale: f32,
    block_sums: &mut Vec<f32>,
) -> (f32, f32) {
    block_sums.clear();
    let mut total = 0.0f32;
    let mut wz_total = 0.0f32;
    for block in z.chunks(BLOCK) {
        let mut acc = [0.0f32; LANES];
        let mut wz = [0.0f32; LANES];
        let chunks = block.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for l in 0..LANES {
                let s = c[l] - max;
                let w = exp_nonpositive(s * scale);
                acc[l] += w;
                if ENTROPY {
                    wz[l] += w * s.max(EXP_CUTOFF);
                }
            }
        }
        for &x in rest {
            let s = x - max;
            let w = exp_nonpositive(s * scale);
            acc[0] += w;
            if ENTROPY {
                wz[0] += w * s.max(EXP_CUTOFF);
            }
        }
        let sum = acc.iter().sum::<f32>();
        block_sums.push(sum);
        total += sum;
        wz_total += wz.iter().sum::<f32>();
    }
    (total, wz_total)
}

/// The first entry whose running weight exceeds `target`, walking the block sums and then
/// recomputing one block; when rounding leaves `target` past the end, the last entry with
/// weight (the host's rule).
fn find(z: &[f32], max: f32, scale: f32, block_sums: &[f32], target: f32) -> usize {
    let mut run = 0.0f32;
    for (b, &sum) in block_sums.iter().enumerate() {
        if run + sum > target {
            let start = b * BLOCK;
            let mut inner = run;
            for (i, &x) in z[start..(start + BLOCK).min(z.len())].iter().enumerate() {
                inner += exp_nonpositive((x - max) * scale);
                if inner > target {
                    return start + i;
                }
            }
        }
        run += sum;
    }
    z.iter()
        .rposition(|&x| exp_nonpositive((x - max) * scale) > 0.0)
        .unwrap_or(z.len() - 1)
}

/// One drawn row: the token and the score columns of [`super::draw_rows`] (the check value
/// first, then the wanted scores in order).
struct Row {
    token: i64,
    columns: [f32; 5],
}

fn draw_row(z: &[f32], u: f64, params: &Shaping, want: Want, block_sums: &mut Vec<f32>) -> Row {
    let (max, second, nan) = if want.margin {
        top_two(z)
    } else {
        let (max, nan) = largest(z);
        (max, f32::NEG_INFINITY, nan)
    };
    let mut columns = [0.0f32; 5];
    let mut width = 1;
    let mut push = |columns: &mut [f32; 5], v: f32| {
        columns[width] = v;
        width += 1;
    };
    let needs_scores = want.confidence || want.entropy || want.max_prob || want.margin;
    // The untempered mass and Σ w (z − max), when the draw does not already give them.
    let mut untempered = None;
    let token = if params.temperature == 0.0 {
        // The first index of the largest logit, as Burn's argmax; a NaN makes the row invalid.
        columns[0] = if nan { f32::NAN } else { max };
        z.iter().position(|&x| x == max).unwrap_or(0)
    } else {
        let scale = (1.0 / params.temperature) as f32;
        let (total, wz) = if scale == 1.0 && want.entropy {
            block_weights::<true>(z, max, 1.0, block_sums)
        } else {
            block_weights::<false>(z, max, scale, block_sums)
        };
        if scale == 1.0 {
            untempered = Some((total, wz));
        }
        // NaN logits make the total NaN, and `+inf` or all `−inf` ones make `z − max` NaN:
        // the check below refuses the row, as on the other paths.
        columns[0] = total;
        if !(total.is_finite() && total > 0.0) {
            return Row { token: 0, columns };
        }
        let target = (u as f32).min(U_MAX) * total;
        find(z, max, scale, block_sums, target)
    };
    if needs_scores {
        // (An untempered draw summed `Σ w (z − max)` already when the entropy is wanted.)
        let (mass, wz) = match untempered {
            Some(sums) => sums,
            None if want.entropy => block_weights::<true>(z, max, 1.0, block_sums),
            None => block_weights::<false>(z, max, 1.0, block_sums),
        };
        if want.confidence {
            push(&mut columns, exp_nonpositive(z[token] - max) / mass);
        }
        if want.entropy {
            push(&mut columns, mass.ln() - wz / mass);
        }
        if want.max_prob {
            push(&mut columns, 1.0 / mass);
        }
        if want.margin {
            let runner_up = if z.len() >= 2 {
                exp_nonpositive(second - max)
            } else {
                0.0
            };
            push(&mut columns, (1.0 - runner_up) / mass);
        }
    }
    Row {
        token: token as i64,
        columns,
    }
}

/// Draw at every row of `logits` (`rows × vocab`, row-major, in host memory) with the
/// matching uniform: the token ids and `width` score columns per row, laid out as the Burn
/// chain of [`super::draw_rows`] returns them.
pub(super) fn draw(
    logits: &[f32],
    vocab: usize,
    uniforms: &[f64],
    params: &Shaping,
    want: Want,
    width: usize,
) -> (Vec<i64>, Vec<f32>) {
    let rows: Vec<Row> = logits
        .par_chunks(vocab)
        .zip(uniforms.par_iter())
        .map_init(Vec::new, |block_sums, (z, &u)| {
            draw_row(z, u, params, want, block_sums)
        })
        .collect();
    let tokens = rows.iter().map(|r| r.token).collect();
    let scores = rows
        .iter()
        .flat_map(|r| r.columns[..width].iter().copied())
        .collect();
    (tokens, scores)
}

/// Every row of `logits` (`rows × vocab`, row-major) normalised, with this kernel's arithmetic:
/// `exp_nonpositive(z − max) / Σ`, the sum taken as the draw takes it. The host path's
/// reference (`OnHost`) normalises so on flex, so that both paths compare bit-identical
/// confidences against a threshold or each other.
pub(super) fn softmax(logits: &[f32], vocab: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; logits.len()];
    out.par_chunks_mut(vocab)
        .zip(logits.par_chunks(vocab))
        .for_each_init(Vec::new, |block_sums, (p, z)| {
            let (max, _) = largest(z);
            let (mass, _) = block_weights::<false>(z, max, 1.0, block_sums);
            for (p, &x) in p.iter_mut().zip(z) {
                *p = exp_nonpositive(x - max) / mass;
            }
        });
    out
}

/// Whether `params` are ones this kernel draws with: every temperature, no truncation (top-k
/// and top-p sort the row, which stays with the Burn chain).
pub(super) fn handles(params: &Shaping) -> bool {
    params.top_k.is_none() && params.top_p.is_none() && params.temperature >= 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f32 in `[−87, 0]` (about 1.1 billion values, stepped through in a sample of one
    /// in 64) and the values around the cutoff: within 1 ulp of f64's correctly rounded `exp`.
    #[test]
    fn exp_is_within_one_ulp() {
        let mut worst = 0u32;
        let mut bits = (-0.0f32).to_bits();
        let end = EXP_CUTOFF.to_bits();
        // Negative floats grow in magnitude as their bits grow.
        let mut checked = 0u64;
        while bits <= end {
            let x = f32::from_bits(bits);
            let exact = (x as f64).exp() as f32;
            let ours = exp_nonpositive(x);
            worst = worst.max(exact.to_bits().abs_diff(ours.to_bits()));
            bits += if checked.is_multiple_of(2) { 1 } else { 127 };
            checked += 1;
        }
        assert!(checked > 10_000_000, "{checked}");
        assert!(
            worst <= 1,
            "exp is {worst} ulp from the correctly rounded value"
        );
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-87.5), 0.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        assert!(exp_nonpositive(f32::NAN).is_nan());
    }
}
