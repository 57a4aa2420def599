//! `eb` — entropy-bounded unmasking: order the masked positions by an error proxy (`entropy`,
//! `confidence` = −max p, `margin` = −(p1 − p2)) and commit the longest prefix whose entropies
//! satisfy `Σ H − max H ≤ gamma`, and never fewer than the step's quota. As in the anchors,
//! `gamma = 0` commits every zero-entropy position plus one more, so one token per step on
//! full-support distributions.

use super::params::{Bound, Choice, Handle, Number, BLOCK_LENGTH};
use super::{remask, DenoiserSampler, Param, Params, Ranking, Run, Sampler, Steps, Want};
use super::{CACHE, REFRESH};
use crate::Result;

/// The error proxy positions are ordered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proxy {
    /// The entropy of the position's distribution.
    Entropy,
    /// Minus its largest probability.
    Confidence,
    /// Minus the gap between its two largest probabilities.
    Margin,
}

/// `gamma`: the entropy budget of one step.
pub const GAMMA: Number = Number {
    name: "gamma",
    default: 0.1,
    bound: Bound::NonNegative,
    doc: "commit while the sum of entropies minus the largest stays within gamma",
};

/// `proxy`: the order in which positions are considered.
pub const PROXY: Choice<Proxy> = Choice {
    name: "proxy",
    options: &[
        ("entropy", Proxy::Entropy),
        ("confidence", Proxy::Confidence),
        ("margin", Proxy::Margin),
    ],
    doc: "the error proxy positions are ordered by",
};

/// The `eb` sampler.
#[derive(Debug, Clone, Copy)]
pub struct Eb;

impl Sampler for Eb {
    fn name(&self) -> &'static str {
        "eb"
    }
    fn params(&self) -> Vec<Param> {
        vec![
            BLOCK_LENGTH.param(),
            CACHE.param(),
            REFRESH.param(),
            GAMMA.param(),
            PROXY.param(),
        ]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

impl DenoiserSampler for Eb {
    fn scores(&self, params: &Params) -> Want {
        let proxy = params.get(&PROXY);
        Want {
            entropy: true,
            max_prob: proxy == Proxy::Confidence,
            margin: proxy == Proxy::Margin,
            ..Want::default()
        }
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        let (gamma, proxy) = (params.get(&GAMMA), params.get(&PROXY));
        remask(run, params.get(&BLOCK_LENGTH), &|drawn, span, _| {
            let h = &drawn.entropy[span.clone()];
            let err: Vec<f64> = match proxy {
                Proxy::Entropy => h.to_vec(),
                Proxy::Confidence => drawn.max_prob[span].iter().map(|m| -m).collect(),
                Proxy::Margin => drawn.margin[span].iter().map(|m| -m).collect(),
            };
            let mut order: Vec<usize> = (0..err.len()).collect();
            order.sort_by(|&a, &b| err[a].total_cmp(&err[b]).then(a.cmp(&b)));
            let (mut sum, mut max, mut accepted) = (0.0, 0.0f64, 0);
            for &i in &order {
                sum += h[i];
                max = max.max(h[i]);
                if sum - max <= gamma {
                    accepted += 1;
                } else {
                    break;
                }
            }
            // Rank by ascending error proxy.
            Ranking {
                score: err.iter().map(|e| -e).collect(),
                accepted: accepted.max(1),
            }
        })
    }
}
