//! LLaDA's remasking loop, shared by the samplers that commit by a ranking (`low_confidence`,
//! `random`, `threshold`, `factor`, `eb`): in each block, at each step, draw `x0` at every
//! masked position, then commit the quota — or more, if the rule accepts more — of the
//! positions the rule ranks highest; the rest stay masked.
//!
//! With `cache: prefix` or `dual` (the samplers declare [`super::CACHE`] and
//! [`super::REFRESH`]) a step calls the model's key/value cache instead of a plain forward pass
//! (`cache.rs`): a fill at the first step of each block and at each refresh step, a
//! window otherwise; every sample's blocks must then lie at the same positions.

use super::{quotas, Drawn, RowBlock, Run};
use crate::Result;
use rand_chacha::ChaCha8Rng;
use std::ops::Range;

/// A commit rule's verdict on one sample's masked positions at one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// One score per masked position, in position order: higher commits first (ties: the
    /// earlier position).
    pub score: Vec<f64>,
    /// How many positions the rule accepts; the step commits `max(quota, accepted)` (at most
    /// all of them).
    pub accepted: usize,
}

/// Run the remasking loop over `run`'s canvas, in blocks of `block_length` positions (one
/// block when `None`). At each step `rank` gets the draws (with the scores the sampler asked
/// for), the span of one sample's masked positions in them, and that sample's random stream
/// (after its `x0` uniforms), and ranks the positions.
pub fn remask(
    run: &mut Run<'_>,
    block_length: Option<usize>,
    rank: &dyn Fn(&Drawn, Range<usize>, &mut ChaCha8Rng) -> Ranking,
) -> Result<()> {
    let blocks = run.blocks(block_length)?;
    run.cache_plan()
        .check_aligned(&blocks, |b| run.prompt_len(b))?;
    for block in blocks {
        remask_block(run, &block, rank)?;
    }
    Ok(())
}

/// Block `i` of every sample (`block[b]`: sample `b`'s, `None` when it has no `i`-th block);
/// each sample runs its own block's steps at its own times and quotas.
fn remask_block(
    run: &mut Run<'_>,
    block: &[Option<RowBlock>],
    rank: &dyn Fn(&Drawn, Range<usize>, &mut ChaCha8Rng) -> Ranking,
) -> Result<()> {
    let length = run.length();
    let steps = block.iter().flatten().map(|r| r.steps).max().unwrap_or(0);
    // Per-step quotas of every sample, from its masked positions as the block starts,
    // transposed to step-major: step_quotas[k][b] (0 past the sample's own steps).
    let row_quotas: Vec<Vec<usize>> = block
        .iter()
        .enumerate()
        .map(|(b, rb)| match rb {
            Some(rb) => quotas(run.masked_in(b, &rb.range).len(), rb.steps),
            None => Vec::new(),
        })
        .collect();
    let step_quotas: Vec<Vec<usize>> = (0..steps)
        .map(|k| {
            row_quotas
                .iter()
                .map(|q| q.get(k).copied().unwrap_or(0))
                .collect()
        })
        .collect();
    for (k, quota_k) in step_quotas.iter().enumerate() {
        // A sample past its own block's steps has nothing masked left in it (the quotas sum
        // to its masked count).
        let masked: Vec<Vec<usize>> = block
            .iter()
            .enumerate()
            .map(|(b, rb)| match rb {
                Some(rb) if k < rb.steps => run.masked_in(b, &rb.range),
                _ => Vec::new(),
            })
            .collect();
        if masked.iter().all(Vec::is_empty) {
            break;
        }
        let times: Vec<Option<f64>> = block
            .iter()
            .zip(&masked)
            .map(|(rb, m)| match rb {
                Some(rb) if !m.is_empty() => Some(1.0 - k as f64 / rb.steps as f64),
                _ => None,
            })
            .collect();
        // Draw x0 at every masked position of the block (fixed order), then score and select.
        let (mut rows, mut uniforms) = (Vec::new(), Vec::new());
        for (b, positions) in masked.iter().enumerate() {
            for &j in positions {
                rows.push(b * length + j);
                uniforms.push(rand::Rng::random::<f64>(run.rng(b)));
            }
        }
        let drawn = step_and_draw(run, k, block, &times, &rows, &uniforms)?;
        let mut offset = 0;
        for (b, positions) in masked.iter().enumerate() {
            let n = positions.len();
            if n == 0 {
                continue;
            }
            run.count_call(b);
            let span = offset..offset + n;
            offset += n;
            let ranking = rank(&drawn, span.clone(), run.rng(b));
            for i in select(ranking, quota_k[b].min(n), n) {
                run.commit(b * length + positions[i], drawn.tokens[span.start + i]);
            }
        }
    }
    Ok(())
}

/// Step `step` of `block`'s network call and its draws: uncached, each sample at its own time
/// ([`Run::forward_and_draw`]); cached, the plan's fill or window (a time-conditioned network
/// is refused before, so one call at any active sample's time serves all; the blocks are
/// aligned, so every sample's block is the same range).
fn step_and_draw(
    run: &mut Run<'_>,
    step: usize,
    block: &[Option<RowBlock>],
    times: &[Option<f64>],
    rows: &[usize],
    uniforms: &[f64],
) -> Result<Drawn> {
    let plan = run.cache_plan();
    let range = block.iter().flatten().next().map(|rb| &rb.range);
    let (Some(&t), Some(range), true) = (times.iter().flatten().next(), range, plan.is_on()) else {
        return run.forward_and_draw(times, rows, uniforms);
    };
    run.call(plan.call(step, range, run.length()), t)?;
    if rows.is_empty() {
        return Ok(Drawn::default());
    }
    run.draw(rows, uniforms)
}

/// Indices (into the sample's `n` masked positions) to commit this step: the `max(quota,
/// accepted)` best by score, ties to the earlier position.
fn select(ranking: Ranking, quota: usize, n: usize) -> Vec<usize> {
    let score = ranking.score;
    let take = quota.max(ranking.accepted).min(n);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| score[b].total_cmp(&score[a]).then(a.cmp(&b)));
    order.truncate(take);
    order
}
