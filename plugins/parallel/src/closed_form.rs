//! The exact accuracy of the `random` sampler driving the exact denoiser, at any number of
//! steps.
//!
//! # The decoding it assumes
//!
//! The completion region holds `M = n + f` positions: the `n` answer letters and `f` trailing
//! end-of-text positions (which the oracle knows with certainty). With `S` steps the SDK's
//! `random` sampler (one block) commits `q_1, …, q_S` positions, LLaDA's quotas
//! (`dlm_sdk::sampler::quotas(M, S)`: `⌊M/S⌋`, the first `M mod S` steps one more); which
//! positions is uniform among those still masked (it ranks them by fresh uniform scores). A
//! step draws every committed token independently from the denoiser's marginal given the
//! canvas before the step. With `k` tokens per step (`S = M/k`), `q_s = k`.
//!
//! Let `r` be the answer positions still masked before a step and `g` how many of the step's
//! `q` positions are answer positions: `g` is hypergeometric, `P(g) = C(r,g)·C(u,q−g)/C(r+u,q)`
//! with `u` the end-of-text positions still masked (with `f = 0`, `g = q`). Per task:
//!
//! * `copy`, `reverse`, `sort`: every marginal is a point mass, so the accuracy is 1.
//! * `shuffle` (a uniform permutation of `n` distinct letters): the `r` masked slots share
//!   the `r` letters still missing, each slot's marginal uniform over them. The step succeeds
//!   iff its `g` independent draws are distinct: `∏_{i<g} (r − i)/r = r!/((r−g)!·r^g)`. With
//!   `f = 0` the accuracy is `∏_s r_s!/((r_s − q_s)!·r_s^{q_s})`, `r_s = n − Σ_{t<s} q_t`; at
//!   `k = 1` it is 1, at `k = n` (one step) `n!/n^n`.
//! * `replace_one` (one letter of `n` replaced, uniform over position and the `A − 1` other
//!   letters): while no change is committed each masked slot is changed with probability
//!   `1/r`, independently across the step's draws. The step makes no change with probability
//!   `(1 − 1/r)^g`, exactly one (then every later marginal is a point mass: success) with
//!   `g·(1/r)·(1 − 1/r)^{g−1}`, and otherwise two or more (failure); with nothing masked left
//!   and no change it has failed. With `f = 0`: `Σ_s [∏_{t<s} (1 − 1/r_t)^{q_t}]·q_s/r_s·(1 −
//!   1/r_s)^{q_s−1}`, which is 1 at `k = 1` and `(1 − 1/n)^{n−1}` at `k = n`.
//! * `line` (a uniform arrangement of a multiset with counts `c`): a masked slot holds letter
//!   `s` with probability `c_s/r` (`c`: the counts still missing). The step's `g` draws have a
//!   multinomial count vector `d`; it succeeds iff `d ≤ c` componentwise, leaving `c − d`.
//!   The accuracy is the expectation of this chain over the steps and over the prompt's
//!   counts (the counts of `n` i.i.d. uniform letters, multinomial), computed exactly by
//!   dynamic programming over count vectors (sorted: the chain is symmetric in the letters).
//!   With every `c_s ≤ 1` it is `shuffle`'s product.
//!
//! The adaptive samplers (`threshold`, `eb`, `low_confidence`) choose positions by the
//! marginals themselves and have no such formula; the report shows their sampled accuracy.

use crate::task::{Kind, Spec};
use dlm_sdk::sampler::quotas;
use std::collections::{BTreeMap, HashMap};

/// What the closed form assumes, in words (for the report).
pub const ASSUMPTION: &str = "random sampler, one block: each step commits LLaDA's quota of positions chosen uniformly among the masked ones, each token drawn independently from the exact denoiser's marginal given the canvas before the step (k tokens per step at steps = M/k, M = answer + end-of-text positions)";

/// The exact accuracy at every number of steps from 1 to the completion's length, for a task
/// whose completion region has `free` end-of-text positions after the answer.
pub fn accuracy_by_steps(spec: &Spec, free: usize) -> BTreeMap<usize, f64> {
    let m = spec.n + free;
    (1..=m)
        .map(|steps| (steps, accuracy(spec, free, steps)))
        .collect()
}

/// The exact accuracy with `steps` steps (see the module's documentation).
pub fn accuracy(spec: &Spec, free: usize, steps: usize) -> f64 {
    let q = quotas(spec.n + free, steps);
    match spec.kind {
        Kind::Copy | Kind::Reverse | Kind::Sort => 1.0,
        Kind::Shuffle => Chain::new(&q, free).run(&ShuffleStep, spec.n),
        Kind::ReplaceOne => Chain::new(&q, free).run(&ReplaceStep, (spec.n, false)),
        Kind::Line => line_accuracy(spec, free, &q),
    }
}

/// `line`: the expectation over the prompt's counts (the counts of `n` i.i.d. uniform letters)
/// of the chain from those counts.
fn line_accuracy(spec: &Spec, free: usize, q: &[usize]) -> f64 {
    let mut chain = Chain::new(q, free);
    let a = spec.alphabet;
    let mut total = 0.0;
    for counts in compositions(spec.n, a) {
        let weight = multinomial_log(&counts).exp() / (a as f64).powi(spec.n as i32);
        let mut sorted = counts.clone();
        sorted.sort_unstable();
        total += weight * chain.run(&LineStep, sorted);
    }
    total
}

/// The accuracy of one prompt's multiset with counts `counts` (for tests).
pub fn line_accuracy_given(counts: &[usize], free: usize, steps: usize) -> f64 {
    let n: usize = counts.iter().sum();
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    Chain::new(&quotas(n + free, steps), free).run(&LineStep, sorted)
}

/// One task's state between steps and what a step with `g` answer positions does to it.
trait StepRule {
    type State: Clone + Eq + std::hash::Hash;
    /// Answer positions still masked.
    fn masked(&self, state: &Self::State) -> usize;
    /// The probability of each state after committing `g` answer positions that keeps the
    /// answer valid (the missing mass is failure).
    fn step(&self, state: &Self::State, g: usize) -> Vec<(Self::State, f64)>;
    /// Whether a state with nothing masked is a valid answer.
    fn done(&self, state: &Self::State) -> bool;
}

/// The chain over steps: `P(valid)` from a state at step `s` with `u` end-of-text positions
/// still masked, memoised.
struct Chain<'q, S> {
    quotas: &'q [usize],
    free: usize,
    memo: HashMap<(usize, usize, S), f64>,
}

impl<'q, S: Clone + Eq + std::hash::Hash> Chain<'q, S> {
    fn new(quotas: &'q [usize], free: usize) -> Self {
        Chain {
            quotas,
            free,
            memo: HashMap::new(),
        }
    }

    fn run<R: StepRule<State = S>>(&mut self, rule: &R, start: S) -> f64 {
        self.from(rule, 0, self.free, start)
    }

    fn from<R: StepRule<State = S>>(&mut self, rule: &R, s: usize, u: usize, state: S) -> f64 {
        let r = rule.masked(&state);
        if s == self.quotas.len() || r + u == 0 {
            return if r == 0 && rule.done(&state) {
                1.0
            } else {
                0.0
            };
        }
        let key = (s, u, state.clone());
        if let Some(&p) = self.memo.get(&key) {
            return p;
        }
        let q = self.quotas[s].min(r + u);
        let mut p = 0.0;
        for (g, pg) in hypergeometric(r, u, q) {
            for (next, pn) in rule.step(&state, g) {
                p += pg * pn * self.from(rule, s + 1, u - (q - g), next);
            }
        }
        self.memo.insert(key, p);
        p
    }
}

/// `P(g)` of `g` answer positions among `q` drawn without replacement from `r` answer and `u`
/// other positions.
fn hypergeometric(r: usize, u: usize, q: usize) -> Vec<(usize, f64)> {
    let lo = q.saturating_sub(u);
    let hi = q.min(r);
    (lo..=hi)
        .map(|g| {
            let log = ln_choose(r, g) + ln_choose(u, q - g) - ln_choose(r + u, q);
            (g, log.exp())
        })
        .collect()
}

/// `shuffle`: the state is the number of masked slots; the letters still missing are as many.
struct ShuffleStep;

impl StepRule for ShuffleStep {
    type State = usize;
    fn masked(&self, r: &usize) -> usize {
        *r
    }
    fn step(&self, &r: &usize, g: usize) -> Vec<(usize, f64)> {
        let distinct: f64 = (0..g).map(|i| (r - i) as f64 / r as f64).product();
        vec![(r - g, distinct)]
    }
    fn done(&self, _: &usize) -> bool {
        true
    }
}

/// `replace_one`: masked slots and whether the change is committed.
struct ReplaceStep;

impl StepRule for ReplaceStep {
    type State = (usize, bool);
    fn masked(&self, s: &(usize, bool)) -> usize {
        s.0
    }
    fn step(&self, &(r, changed): &(usize, bool), g: usize) -> Vec<((usize, bool), f64)> {
        if changed || g == 0 {
            return vec![((r - g, changed), 1.0)];
        }
        let p = 1.0 / r as f64;
        let none = (1.0 - p).powi(g as i32);
        let one = g as f64 * p * (1.0 - p).powi(g as i32 - 1);
        vec![((r - g, false), none), ((r - g, true), one)]
    }
    fn done(&self, s: &(usize, bool)) -> bool {
        s.1
    }
}

/// `line`: the counts still missing, sorted.
struct LineStep;

impl StepRule for LineStep {
    type State = Vec<usize>;
    fn masked(&self, c: &Vec<usize>) -> usize {
        c.iter().sum()
    }
    fn step(&self, c: &Vec<usize>, g: usize) -> Vec<(Vec<usize>, f64)> {
        let r = self.masked(c) as f64;
        let mut out = Vec::new();
        let mut draw = vec![0; c.len()];
        // Every count vector d ≤ c with |d| = g, with its multinomial probability.
        fn visit(
            c: &[usize],
            r: f64,
            i: usize,
            left: usize,
            draw: &mut Vec<usize>,
            out: &mut Vec<(Vec<usize>, f64)>,
        ) {
            if i == c.len() {
                if left == 0 {
                    let g: usize = draw.iter().sum();
                    let log = ln_factorial(g)
                        + draw
                            .iter()
                            .zip(c)
                            .filter(|(&d, _)| d > 0)
                            .map(|(&d, &cs)| d as f64 * (cs as f64 / r).ln() - ln_factorial(d))
                            .sum::<f64>();
                    let mut next: Vec<usize> =
                        c.iter().zip(draw.iter()).map(|(a, b)| a - b).collect();
                    next.sort_unstable();
                    out.push((next, log.exp()));
                }
                return;
            }
            for d in 0..=c[i].min(left) {
                draw[i] = d;
                visit(c, r, i + 1, left - d, draw, out);
            }
            draw[i] = 0;
        }
        if g == 0 {
            return vec![(c.clone(), 1.0)];
        }
        visit(c, r, 0, g, &mut draw, &mut out);
        out
    }
    fn done(&self, _: &Vec<usize>) -> bool {
        true
    }
}

/// Every vector of `parts` non-negative integers summing to `n`.
fn compositions(n: usize, parts: usize) -> Vec<Vec<usize>> {
    if parts == 1 {
        return vec![vec![n]];
    }
    (0..=n)
        .flat_map(|first| {
            compositions(n - first, parts - 1)
                .into_iter()
                .map(move |mut rest| {
                    rest.insert(0, first);
                    rest
                })
        })
        .collect()
}

fn ln_factorial(k: usize) -> f64 {
    (2..=k).map(|i| (i as f64).ln()).sum()
}

fn ln_choose(n: usize, k: usize) -> f64 {
    if k > n {
        return f64::NEG_INFINITY;
    }
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// `ln(n! / ∏ c_s!)`.
fn multinomial_log(counts: &[usize]) -> f64 {
    ln_factorial(counts.iter().sum()) - counts.iter().map(|&c| ln_factorial(c)).sum::<f64>()
}
