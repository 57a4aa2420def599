//! The scaled forward pass over many sequences at once: per position one
//! (sequences × states) · (states × states) product, times each sequence's emission column,
//! each row divided by its maximum.
//!
//! Bit-identical to the one-sequence pass ([`Hmm::score`]): every entry is computed with the
//! same operations in the same order (`d = 0; d += α_i · T[i][j]` for `i = 0..H`, then
//! `d *= e_j`, a separate multiply and add, never a fused multiply–add), the maximum is exact
//! whatever the order, and the scale, its logarithm and the final sum are the same scalar
//! expressions. Only the schedule changes: rows are processed in pairs with a tile of
//! `TILE_VECTORS` SIMD vectors of states held in registers, so each transition row loaded
//! serves two sequences and no partial sum goes through memory. SIMD width is picked at run
//! time by `pulp` (AVX2 on x86-64 where present), with no `unsafe` here.

use pulp::{Simd, WithSimd};

use super::super::numeric::{Norm, FLOOR};
use super::super::SequenceScore;
use super::Hmm;

/// Sequences advanced together through all positions: their forward vectors (two buffers of
/// `ROWS_PER_CHUNK × H` values) stay in the L1/L2 cache for the whole pass.
const ROWS_PER_CHUNK: usize = 64;
/// SIMD vectors of states per register tile: 2 rows × 4 accumulators + 4 transition vectors
/// fit the 16 AVX2 registers.
const TILE_VECTORS: usize = 4;

/// Per-sequence state of the scaled pass, mirroring the locals of `Hmm::score_scaled`.
#[derive(Clone, Default)]
struct RowState {
    log_prob: f64,
    invalid: usize,
    first_invalid: Option<usize>,
    /// The guard tripped: the sequence is rescored in log space.
    flagged: bool,
}

impl Hmm {
    /// Exact scores of many sequences of valid tokens (each of length >= 1), equal bit for bit
    /// to [`Hmm::score`] of each. Lengths may differ.
    pub(crate) fn score_batch(&self, sequences: &[&[u32]]) -> Vec<SequenceScore> {
        self.score_batch_on(sequences, |pass| dispatch(pass))
    }

    /// Test hook: [`Hmm::score_batch`] on a given SIMD type (e.g. pulp's scalar emulations of
    /// 1 or 8 lanes), so that every tile width is checked whatever the CPU.
    #[cfg(test)]
    pub(crate) fn score_batch_with<S: Simd>(
        &self,
        simd: S,
        sequences: &[&[u32]],
    ) -> Vec<SequenceScore> {
        self.score_batch_on(sequences, |pass| Simd::vectorize(simd, pass))
    }

    fn score_batch_on(
        &self,
        sequences: &[&[u32]],
        run: impl FnOnce(BatchPass<'_>) -> Vec<RowState>,
    ) -> Vec<SequenceScore> {
        if self.guard.always_log {
            return sequences.iter().map(|x| self.score_log(x)).collect();
        }
        // Longest first, so the sequences still running at a position are a prefix of a chunk.
        let mut order: Vec<usize> = (0..sequences.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(sequences[i].len()));
        let sorted: Vec<&[u32]> = order.iter().map(|&i| sequences[i]).collect();
        let states = run(BatchPass {
            hmm: self,
            sequences: &sorted,
        });
        let mut scores: Vec<Option<SequenceScore>> = vec![None; sequences.len()];
        for ((&i, x), state) in order.iter().zip(&sorted).zip(states) {
            scores[i] = Some(if state.flagged {
                self.score_log(x)
            } else {
                SequenceScore {
                    log_prob: state.log_prob,
                    in_support: state.invalid == 0,
                    first_invalid: state.first_invalid,
                    invalid_transitions: state.invalid,
                }
            });
        }
        scores
            .into_iter()
            .map(|s| s.expect("`order` is a permutation: every sequence was scored"))
            .collect()
    }
}

/// Runs `op` with AVX2 where the CPU has it (`pulp`'s `V3` level, which also has FMA, unused
/// here; it needs no pulp feature, so this crate shares gemm's build of pulp), else with
/// `pulp`'s own choice (NEON on aarch64, scalar otherwise).
fn dispatch<Op: WithSimd>(op: Op) -> Op::Output {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        return Simd::vectorize(simd, op);
    }
    pulp::Arch::new().dispatch(op)
}

/// Every sequence (sorted longest first) through every position, inside the SIMD context
/// `pulp` chose at run time; everything it calls is `#[inline(always)]` so that it is compiled
/// for that context too.
struct BatchPass<'a> {
    hmm: &'a Hmm,
    sequences: &'a [&'a [u32]],
}

impl WithSimd for BatchPass<'_> {
    type Output = Vec<RowState>;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> Vec<RowState> {
        let Self { hmm, sequences } = self;
        let tiles = pack_tiles(hmm, TILE_VECTORS * S::F64_LANES);
        let mut states = Vec::with_capacity(sequences.len());
        for rows in sequences.chunks(ROWS_PER_CHUNK) {
            states.extend(chunk_pass(simd, hmm, &tiles, rows));
        }
        states
    }
}

/// The transition table cut into column tiles of `width` states, each stored as `H` rows of
/// `width` contiguous values, so that the kernel streams a tile without strides. The states
/// past the last whole tile (`H mod width`) are left to a scalar loop.
#[inline(always)]
fn pack_tiles(hmm: &Hmm, width: usize) -> Vec<f64> {
    let h = hmm.states;
    let whole = h / width * width;
    let mut tiles = Vec::with_capacity(whole * h);
    for j0 in (0..whole).step_by(width) {
        for row in hmm.trans.chunks_exact(h) {
            tiles.extend_from_slice(&row[j0..j0 + width]);
        }
    }
    tiles
}

/// One chunk of sequences (sorted longest first) through every position: the body of
/// `Hmm::score_scaled`, row by row, with the propagation done for all rows at once.
#[inline(always)]
fn chunk_pass<S: Simd>(simd: S, hmm: &Hmm, tiles: &[f64], rows: &[&[u32]]) -> Vec<RowState> {
    let h = hmm.states;
    let n = rows.len();
    let length = rows.first().map_or(0, |x| x.len());
    let mut alpha = vec![0.0; n * h];
    let mut next = vec![0.0; n * h];
    let mut states = vec![RowState::default(); n];
    let mut tokens = vec![0usize; n];
    for t in 0..length {
        let active = rows.iter().take_while(|x| x.len() > t).count();
        tokens.truncate(active);
        for (tok, x) in tokens.iter_mut().zip(rows) {
            *tok = x[t] as usize;
        }
        let cur = &mut next[..active * h];
        if t == 0 {
            for (row, &tok) in cur.chunks_exact_mut(h).zip(&tokens) {
                for ((a, &p), &e) in row.iter_mut().zip(&hmm.init).zip(hmm.column(tok)) {
                    *a = p * e;
                }
            }
        } else {
            propagate(simd, hmm, tiles, &alpha[..active * h], cur, &tokens);
        }
        for (((row, st), &tok), x) in cur
            .chunks_exact_mut(h)
            .zip(&mut states)
            .zip(&tokens)
            .zip(rows)
        {
            if st.flagged {
                continue;
            }
            rescale(simd, hmm, t, tok, row, st);
            if x.len() == t + 1 && !st.flagged && st.invalid == 0 {
                st.log_prob += row.iter().sum::<f64>().ln();
            }
        }
        std::mem::swap(&mut alpha, &mut next);
    }
    states
}

/// `dst[r] = (src[r] · T) ∘ e(tokens[r])` for every row `r`, two rows at a time.
#[inline(always)]
fn propagate<S: Simd>(
    simd: S,
    hmm: &Hmm,
    tiles: &[f64],
    src: &[f64],
    dst: &mut [f64],
    tokens: &[usize],
) {
    let h = hmm.states;
    let pairs = tokens.len() / 2;
    let (src_pairs, src_last) = src.split_at(pairs * 2 * h);
    let (dst_pairs, dst_last) = dst.split_at_mut(pairs * 2 * h);
    for ((s, d), tok) in src_pairs
        .chunks_exact(2 * h)
        .zip(dst_pairs.chunks_exact_mut(2 * h))
        .zip(tokens.chunks_exact(2))
    {
        let (s0, s1) = s.split_at(h);
        let (d0, d1) = d.split_at_mut(h);
        propagate_rows(simd, hmm, tiles, [s0, s1], [d0, d1], [tok[0], tok[1]]);
    }
    if let Some(&tok) = tokens.get(pairs * 2) {
        propagate_rows(simd, hmm, tiles, [src_last], [dst_last], [tok]);
    }
}

/// [`propagate`] for `R` rows: per tile, `R × TILE_VECTORS` accumulators in registers, each
/// updated `acc = acc + α_i · T[i][tile]` for `i = 0..H` in order (separate multiply and add,
/// as in the one-sequence `forward_step`), then multiplied by the emission column.
#[inline(always)]
fn propagate_rows<S: Simd, const R: usize>(
    simd: S,
    hmm: &Hmm,
    tiles: &[f64],
    src: [&[f64]; R],
    mut dst: [&mut [f64]; R],
    tokens: [usize; R],
) {
    let h = hmm.states;
    let width = TILE_VECTORS * S::F64_LANES;
    let whole = h / width * width;
    let src: [&[f64]; R] = src.map(|s| &s[..h]);
    for (tile, j0) in tiles.chunks_exact(h * width).zip((0..whole).step_by(width)) {
        let (vectors, _) = S::as_simd_f64s(tile);
        let (tile_rows, _) = pulp::as_arrays::<TILE_VECTORS, _>(vectors);
        let mut acc = [[simd.splat_f64s(0.0); TILE_VECTORS]; R];
        for (i, t) in tile_rows.iter().enumerate().take(h) {
            for (acc, s) in acc.iter_mut().zip(&src) {
                let a = simd.splat_f64s(s[i]);
                for (c, &p) in acc.iter_mut().zip(t) {
                    *c = simd.add_f64s(*c, simd.mul_f64s(a, p));
                }
            }
        }
        for ((acc, d), &tok) in acc.iter().zip(dst.iter_mut()).zip(&tokens) {
            let (e, _) = S::as_simd_f64s(&hmm.column(tok)[j0..j0 + width]);
            let (d, _) = S::as_mut_simd_f64s(&mut d[j0..j0 + width]);
            for ((d, &c), &e) in d.iter_mut().zip(acc).zip(e) {
                *d = simd.mul_f64s(c, e);
            }
        }
    }
    for j in whole..h {
        for ((s, d), &tok) in src.iter().zip(dst.iter_mut()).zip(&tokens) {
            let mut sum = 0.0;
            for (&a, row) in s.iter().zip(hmm.trans.chunks_exact(h)) {
                sum += a * row[j];
            }
            d[j] = sum * hmm.column(tok)[j];
        }
    }
}

/// The per-position bookkeeping of `Hmm::score_scaled` for one row: divide by the maximum
/// and add its log; on an impossible position count it, restart, and rescale again.
#[inline(always)]
fn rescale<S: Simd>(simd: S, hmm: &Hmm, t: usize, tok: usize, row: &mut [f64], st: &mut RowState) {
    match normalize_max(simd, row) {
        Norm::Scaled(m) => st.log_prob += m.ln(),
        Norm::Zero => {
            st.invalid += 1;
            st.first_invalid.get_or_insert(t);
            st.log_prob = f64::NEG_INFINITY;
            hmm.restart(tok, row);
            if !matches!(normalize_max(simd, row), Norm::Scaled(_)) {
                st.flagged = true;
            }
        }
        Norm::Flagged => st.flagged = true,
    }
}

/// `numeric::normalize_max`, vectorised: the maximum of non-negative finite values is the
/// same in any order, and the division and the floor test are the same per entry.
#[inline(always)]
fn normalize_max<S: Simd>(simd: S, v: &mut [f64]) -> Norm {
    let (head, tail) = S::as_simd_f64s(v);
    let mut vmax = simd.splat_f64s(0.0);
    for &x in head {
        vmax = simd.max_f64s(vmax, x);
    }
    let max = tail
        .iter()
        .fold(simd.reduce_max_f64s(vmax), |m, &x| m.max(x));
    if max == 0.0 {
        return Norm::Zero;
    }
    if !max.is_finite() {
        return Norm::Flagged;
    }
    let inv = 1.0 / max;
    if !inv.is_finite() {
        return Norm::Flagged;
    }
    let mut flagged = false;
    for x in v.iter_mut() {
        *x *= inv;
        flagged |= *x != 0.0 && *x < FLOOR;
    }
    if flagged {
        Norm::Flagged
    } else {
        Norm::Scaled(max)
    }
}
