//! `factor` — Fast-dLLM's factor rule: sort the confidences `c(1) ≥ c(2) ≥ …` and commit the
//! longest prefix with `c(k) ≥ 1 − factor/(k+1)` for every `k` in it (rank 1 always), and never
//! fewer than the step's quota. We implement the stated rule; the anchors' code also accepts
//! everything when only the last rank fails.

use super::params::{Bound, Handle, Number, BLOCK_LENGTH};
use super::{remask, DenoiserSampler, Param, Params, Ranking, Run, Sampler, Steps, Want};
use super::{CACHE, REFRESH};
use crate::Result;

/// `factor`: how far below 1 the k-th confidence may fall (`1 − factor/(k+1)`).
pub const FACTOR: Number = Number {
    name: "factor",
    default: 1.0,
    bound: Bound::Any,
    doc: "the k-th most confident position is committed while its confidence is at least 1 - factor/(k+1)",
};

/// The `factor` sampler.
#[derive(Debug, Clone, Copy)]
pub struct Factor;

impl Sampler for Factor {
    fn name(&self) -> &'static str {
        "factor"
    }
    fn params(&self) -> Vec<Param> {
        vec![
            BLOCK_LENGTH.param(),
            CACHE.param(),
            REFRESH.param(),
            FACTOR.param(),
        ]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

impl DenoiserSampler for Factor {
    fn scores(&self, _: &Params) -> Want {
        Want {
            confidence: true,
            ..Want::default()
        }
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        let factor = params.get(&FACTOR);
        remask(run, params.get(&BLOCK_LENGTH), &|drawn, span, _| {
            let c = drawn.confidence[span].to_vec();
            let mut sorted = c.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            let mut accepted = 1;
            for (k, &ck) in sorted.iter().enumerate().skip(1) {
                if ck >= 1.0 - factor / (k as f64 + 2.0) {
                    accepted = k + 1;
                } else {
                    break;
                }
            }
            Ranking { score: c, accepted }
        })
    }
}
