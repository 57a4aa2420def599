//! `threshold_edit` — LLaDA 2.1's joint threshold decoding: mask-to-token commits as
//! `threshold` makes them, plus token-to-token edits that replace a committed token.
//!
//! Reference: the `JointThreshold` algorithm of SGLang's diffusion LLM support,
//! github:sgl-project/sglang, `python/sglang/srt/dllm/algorithm/joint_threshold.py`, commit
//! 17d57211575786d0abf1683309f9e3b1545b8210 (LLaDA 2.1's own repository,
//! github:inclusionAI/LLaDA2.X at a79832985307bb8ac4a43ceeea54168bfb80f0cf, holds only its
//! technical reports).
//!
//! # The rule
//! In each block, at each step, one network call; then, from that one output:
//! * **mask to token** — every masked position draws `x0`; the positions whose confidence
//!   `p(x0) ≥ tau` commit, at least one and never fewer than the step's quota (exactly the
//!   `threshold` sampler's rule, so the quotas still empty the block within its steps);
//! * **token to token** — every position of the block committed before this step draws a
//!   candidate the same way; where the candidate differs from the token there and its
//!   probability is `≥ edit_tau`, it replaces the token (an edit, [`Run::commit`]).
//!
//! A block ends when it has no masked position and its last step made no edit, or when its
//! steps are spent (`steps` is the budget of commits and edits together, split over the blocks
//! as for every block sampler). Once the block is full the sampler keeps calling the network,
//! one step at a time, only while edits fire — so an `edit_tau` above 1, which no probability
//! reaches, draws nothing at committed positions, never makes that extra call, and gives
//! `threshold`'s samples and NFE exactly.
//!
//! # What it needs from the model
//! It reads the network's distributions at committed positions, which no other SDK sampler
//! does and which the [`crate::Denoiser`] contract lets a model leave as anything. Edits mean
//! something only for a network trained to predict there (LLaDA 2.1 is); a network whose output
//! at a committed position is that token itself (an exact oracle conditioning on it, MDLM's
//! carry-over) never edits, and one that leaves those rows unwritten gives meaningless edits or
//! an invalid-distribution error naming the position.
//!
//! Edits of one step are made together from one output, so two neighbours can swap back and
//! forth (each the better token given the other's old value) until the budget ends the block.
//!
//! # Where this differs from the reference
//! * **Draws.** The reference is greedy: its candidate everywhere is the argmax and its
//!   confidence the argmax's probability. Here both are draws from the shaped distribution
//!   (`temperature`, `top_k`, `top_p`) with their untempered probability, as in every SDK
//!   sampler; `temperature: 0` is the reference's rule. (With `edit_tau > 0.5` an accepted edit
//!   is always the argmax, the only token that can hold more than half the mass.)
//! * **Budget.** The reference allows `max_post_edit_steps` (16) steps of edits after a block is
//!   full and the block size plus those as its steps; here the block's share of `steps` bounds
//!   both, and the quotas fill the block by its last step.
//! * **Thresholds** compare with `≥` (the reference: `>`), as `threshold`'s `tau` does; the
//!   reference's repetition penalty (`penalty_lambda`, default off) is not implemented.
//! * **Draw order.** Per sample and step: the masked positions' uniforms left to right, then
//!   the committed positions' (none when `edit_tau > 1`), all from the sample's own stream.
//!
//! # Counting
//! A sample's NFE counts every step its block was still open (masked positions left, or an edit
//! at its previous step), the final call that found nothing to edit included; each edit counts
//! one in its `edits`.

use super::params::{Bound, Handle, Number, BLOCK_LENGTH};
use super::{
    quotas, DenoiserSampler, Drawn, Param, Params, RowBlock, Run, Sampler, Steps, Want, TAU,
};
use crate::Result;
use rand::Rng;

/// `edit_tau`: the probability a differing candidate needs to replace a committed token.
pub const EDIT_TAU: Number = Number {
    name: "edit_tau",
    default: 0.9,
    bound: Bound::NonNegative,
    doc: "replace a committed token by the draw there when it differs and its probability is at least edit_tau (above 1: no edits)",
};

/// The `threshold_edit` sampler.
#[derive(Debug, Clone, Copy)]
pub struct ThresholdEdit;

impl Sampler for ThresholdEdit {
    fn name(&self) -> &'static str {
        "threshold_edit"
    }
    fn params(&self) -> Vec<Param> {
        vec![BLOCK_LENGTH.param(), TAU.param(), EDIT_TAU.param()]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

impl DenoiserSampler for ThresholdEdit {
    fn scores(&self, _: &Params) -> Want {
        Want {
            confidence: true,
            ..Want::default()
        }
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        let rule = Rule {
            tau: params.get(&TAU),
            edit_tau: params.get(&EDIT_TAU),
        };
        for block in run.blocks(params.get(&BLOCK_LENGTH))? {
            rule.block(run, &block)?;
        }
        Ok(())
    }
}

struct Rule {
    tau: f64,
    edit_tau: f64,
}

/// One sample's positions at one step: masked (to commit) and committed (to edit).
#[derive(Default)]
struct Open {
    masked: Vec<usize>,
    committed: Vec<usize>,
}

impl Rule {
    /// Whether an edit can ever fire (a probability reaches `edit_tau`).
    fn edits_possible(&self) -> bool {
        self.edit_tau <= 1.0
    }

    /// Block `i` of every sample (`block[b]`: sample `b`'s, `None` when it has no `i`-th
    /// block), each with its own steps and quotas.
    fn block(&self, run: &mut Run<'_>, block: &[Option<RowBlock>]) -> Result<()> {
        let length = run.length();
        let steps = block.iter().flatten().map(|r| r.steps).max().unwrap_or(0);
        let row_quotas: Vec<Vec<usize>> = block
            .iter()
            .enumerate()
            .map(|(b, rb)| match rb {
                Some(rb) => quotas(run.masked_in(b, &rb.range).len(), rb.steps),
                None => Vec::new(),
            })
            .collect();
        // A sample's block is closed once full and quiet (a step with no edit).
        let mut closed = vec![false; block.len()];
        for k in 0..steps {
            let open: Vec<Open> = block
                .iter()
                .enumerate()
                .map(|(b, rb)| match rb {
                    Some(rb) if k < rb.steps && !closed[b] => self.open(run, b, rb),
                    _ => Open::default(),
                })
                .collect();
            let active = |o: &Open| !o.masked.is_empty() || !o.committed.is_empty();
            if !open.iter().any(active) {
                break;
            }
            let times: Vec<Option<f64>> = block
                .iter()
                .zip(&open)
                .map(|(rb, o)| match rb {
                    Some(rb) if active(o) => Some(1.0 - k as f64 / rb.steps as f64),
                    _ => None,
                })
                .collect();
            // Per sample: masked positions' uniforms, then committed positions'.
            let (mut rows, mut uniforms) = (Vec::new(), Vec::new());
            for (b, o) in open.iter().enumerate() {
                for &j in o.masked.iter().chain(&o.committed) {
                    rows.push(b * length + j);
                    uniforms.push(run.rng(b).random::<f64>());
                }
            }
            let drawn = run.forward_and_draw(&times, &rows, &uniforms)?;
            let mut offset = 0;
            for (b, o) in open.iter().enumerate() {
                if !active(o) {
                    continue;
                }
                run.count_call(b);
                let quota = row_quotas[b].get(k).copied().unwrap_or(0);
                let masked_span = offset..offset + o.masked.len();
                for i in self.commits(&drawn, masked_span.clone(), quota) {
                    run.commit(
                        b * length + o.masked[i],
                        drawn.tokens[masked_span.start + i],
                    );
                }
                offset = masked_span.end;
                let mut edited = false;
                for &j in &o.committed {
                    let (token, p) = (drawn.tokens[offset], drawn.confidence[offset]);
                    offset += 1;
                    if run.token(b, j) != Some(token) && p >= self.edit_tau {
                        run.commit(b * length + j, token);
                        edited = true;
                    }
                }
                closed[b] = o.masked.is_empty() && !edited;
            }
        }
        Ok(())
    }

    /// Sample `b`'s masked positions in its block and, where edits can fire, its committed ones
    /// (none once the block is full and edits cannot fire: the block is done).
    fn open(&self, run: &Run<'_>, b: usize, rb: &RowBlock) -> Open {
        let masked = run.masked_in(b, &rb.range);
        let committed = if self.edits_possible() {
            rb.range
                .clone()
                .filter(|&j| run.token(b, j).is_some())
                .collect()
        } else {
            Vec::new()
        };
        Open { masked, committed }
    }

    /// Indices into the masked positions (`span` of the draws) to commit: those with
    /// confidence `≥ tau`, at least one and at least `quota`, most confident first (ties to
    /// the earlier position) — `threshold`'s rule.
    fn commits(&self, drawn: &Drawn, span: std::ops::Range<usize>, quota: usize) -> Vec<usize> {
        let confidence = &drawn.confidence[span];
        let n = confidence.len();
        if n == 0 {
            return Vec::new();
        }
        let above = confidence.iter().filter(|&&c| c >= self.tau).count();
        let take = quota.max(above.max(1)).min(n);
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &c| confidence[c].total_cmp(&confidence[a]).then(a.cmp(&c)));
        order.truncate(take);
        order
    }
}
