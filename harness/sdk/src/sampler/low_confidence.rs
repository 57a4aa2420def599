//! `low_confidence` — LLaDA remasking: draw `x0` at every masked position of the block and
//! commit the quota with the highest confidence `p(x0)` (untempered); the rest stay masked.

use super::params::{Handle, BLOCK_LENGTH};
use super::{remask, DenoiserSampler, Param, Params, Ranking, Run, Sampler, Steps, Want};
use super::{CACHE, REFRESH};
use crate::Result;

/// The `low_confidence` sampler.
#[derive(Debug, Clone, Copy)]
pub struct LowConfidence;

impl Sampler for LowConfidence {
    fn name(&self) -> &'static str {
        "low_confidence"
    }
    fn params(&self) -> Vec<Param> {
        vec![BLOCK_LENGTH.param(), CACHE.param(), REFRESH.param()]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

impl DenoiserSampler for LowConfidence {
    fn scores(&self, _: &Params) -> Want {
        Want {
            confidence: true,
            ..Want::default()
        }
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        remask(run, params.get(&BLOCK_LENGTH), &|drawn, span, _| Ranking {
            score: drawn.confidence[span].to_vec(),
            accepted: 0,
        })
    }
}
