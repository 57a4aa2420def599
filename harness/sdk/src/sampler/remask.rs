//! LLaDA's remasking loop, shared by the samplers that commit by a ranking (`low_confidence`,
//! `random`, `threshold`, `factor`, `eb`): in each block, at each step, draw `x0` at every
//! masked position, then commit the quota — or more, if the rule accepts more — of the
//! positions the rule ranks highest; the rest stay masked.

use super::{quotas, Drawn, Run};
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
    for (range, steps) in run.blocks(block_length)? {
        remask_block(run, range, steps, rank)?;
    }
    Ok(())
}

fn remask_block(
    run: &mut Run<'_>,
    range: Range<usize>,
    steps: usize,
    rank: &dyn Fn(&Drawn, Range<usize>, &mut ChaCha8Rng) -> Ranking,
) -> Result<()> {
    let (batch, length) = (run.batch(), run.length());
    // Per-step quotas of every row, transposed to step-major: step_quotas[k][b].
    let row_quotas: Vec<Vec<usize>> = (0..batch)
        .map(|b| quotas(run.masked_in(b, &range).len(), steps))
        .collect();
    let step_quotas: Vec<Vec<usize>> = (0..steps)
        .map(|k| row_quotas.iter().map(|q| q[k]).collect())
        .collect();
    for (k, quota_k) in step_quotas.iter().enumerate() {
        let masked: Vec<Vec<usize>> = (0..batch).map(|b| run.masked_in(b, &range)).collect();
        if masked.iter().all(Vec::is_empty) {
            break;
        }
        let t = 1.0 - k as f64 / steps as f64;
        run.forward(t)?;
        // Draw x0 at every masked position of the block (fixed order), then score and select.
        let (mut rows, mut uniforms) = (Vec::new(), Vec::new());
        for (b, positions) in masked.iter().enumerate() {
            for &j in positions {
                rows.push(b * length + j);
                uniforms.push(rand::Rng::random::<f64>(run.rng(b)));
            }
        }
        let drawn = run.draw(&rows, &uniforms)?;
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
