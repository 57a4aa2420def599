//! `threshold` — Fast-dLLM's confidence threshold: commit the top-1 and every position with
//! `p(x0) ≥ tau`, and never fewer than the step's quota.

use super::params::{Bound, Handle, Number, BLOCK_LENGTH};
use super::{remask, DenoiserSampler, Param, Params, Ranking, Run, Sampler, Steps, Want};
use super::{CACHE, REFRESH};
use crate::Result;

/// `tau`: the confidence a position needs to be committed beside the top-1.
pub const TAU: Number = Number {
    name: "tau",
    default: 0.9,
    bound: Bound::Any,
    doc: "commit every position whose confidence p(x0) is at least tau",
};

/// The `threshold` sampler.
#[derive(Debug, Clone, Copy)]
pub struct Threshold;

impl Sampler for Threshold {
    fn name(&self) -> &'static str {
        "threshold"
    }
    fn params(&self) -> Vec<Param> {
        vec![
            BLOCK_LENGTH.param(),
            CACHE.param(),
            REFRESH.param(),
            TAU.param(),
        ]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

impl DenoiserSampler for Threshold {
    fn scores(&self, _: &Params) -> Want {
        Want {
            confidence: true,
            ..Want::default()
        }
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        let tau = params.get(&TAU);
        remask(run, params.get(&BLOCK_LENGTH), &|drawn, span, _| {
            let c = drawn.confidence[span].to_vec();
            let above = c.iter().filter(|&&x| x >= tau).count();
            Ranking {
                score: c,
                accepted: above.max(1),
            }
        })
    }
}
