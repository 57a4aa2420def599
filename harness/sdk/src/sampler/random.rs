//! `random` — LLaDA remasking with random order: draw `x0` at every masked position of the
//! block and commit the quota with the highest uniform score (drawn from the sample's stream
//! after its `x0` uniforms); the rest stay masked.

use super::params::{Handle, BLOCK_LENGTH};
use super::{remask, DenoiserSampler, Param, Params, Ranking, Run, Sampler, Steps, Want};
use super::{CACHE, REFRESH};
use crate::Result;
use rand::Rng;

/// The `random` sampler.
#[derive(Debug, Clone, Copy)]
pub struct Random;

impl Sampler for Random {
    fn name(&self) -> &'static str {
        "random"
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

impl DenoiserSampler for Random {
    fn scores(&self, _: &Params) -> Want {
        Want::default()
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        remask(run, params.get(&BLOCK_LENGTH), &|_, span, rng| Ranking {
            score: span.map(|_| rng.random::<f64>()).collect(),
            accepted: 0,
        })
    }
}
