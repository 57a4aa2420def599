//! `remdm` — ReMDM (Wang et al., "Remasking Discrete Diffusion Models with Inference-Time
//! Scaling", 2025): MDLM ancestral sampling in which a committed token may be masked again and
//! generated anew later.
//!
//! Reference: github:kuleshov-group/remdm, `diffusion.py`, `_ddpm_caching_update` (samplers
//! `remdm-cap`, `remdm-rescale`, `remdm-conf`, `remdm-loop`; defaults from `scripts/remdm-*.sh`),
//! commit f830d659fb98d9b2c79ff71bfa12d578312b688a.
//!
//! # The rule
//! One step goes from time `t` to `s < t` (clean probabilities `α_t ≤ α_s`, from the request's
//! noise `schedule`). With a remasking probability `σ` for a committed position:
//! * a committed position is masked again with probability `σ` (and otherwise kept);
//! * a masked position unmasks with probability `(α_s − (1 − σ) α_t) / (1 − α_t)` and draws its
//!   token from the denoiser's distribution (shaped by `temperature`, `top_k`, `top_p`).
//!
//! These are the reference's `q_xs` (committed) and `q_xs_2` (masked). With `σ = 0` they are
//! MDLM's step, so `eta = 0` under `cap` or `rescale` is [`super::Ddpm`] (`ddpm`) token for token.
//! `remask_schedule` chooses `σ`, with `σ_max = min(1, (1 − α_s)/α_t)` (1 where `α_t = 0`):
//! * `cap` (default): `σ = min(eta, (1 − α_s)/α_t)`;
//! * `rescale`: `σ = eta · σ_max`;
//! * `conf`: per position, `σ_j = w_j · σ_max`, `w` the softmax over the block's committed
//!   positions of minus the probability `p(x_j)` each token had when it was drawn (the least
//!   confident is the likeliest to be masked again); masked positions unmask as in MDLM (their
//!   `σ` is 0). `eta` is not read (as in the reference);
//! * `loop`: its own `α` (the noise `schedule` is refused) in three phases, chosen by the time
//!   `t` a step starts at (both ends of the step use that phase's `α`): for `t > t_on`, MDLM
//!   with `α(x) = (1 − x) · alpha_on / (1 − t_on)`; for `t_off < t ≤ t_on`, `α = alpha_on` held
//!   and `σ = eta` (a masked position unmasks with probability `eta · alpha_on / (1 − alpha_on)`,
//!   capped at 1); for `t ≤ t_off`, MDLM with `α(x) = 1 − x (1 − alpha_on) / t_off`. Defaults
//!   `t_on = 0.55`, `t_off = 0.05`, `alpha_on = 0.9` (the reference's `remdm-loop.sh`; its
//!   `eta` there is 0.02). `t_on`, `t_off` and `alpha_on` are used only by `loop`.
//!
//! # Where this differs from the reference
//! * **Time grid.** The reference walks `linspace(1, 1e-5, steps + 1)` and then makes one more
//!   network call (`noise_removal`) whose argmax fills what is still masked. Here, as in `ddpm`,
//!   each block's grid is `t_i = 1 − i/n` for its `n` steps and ends at `t = 0`: the last step
//!   has `σ = 0` and unmasks every remaining position by a draw, so no extra call is made and no
//!   mask survives (a position masked again at step `i < n − 1` is generated again later).
//! * **Noise schedule.** The reference requires `loglinear` (`α = 1 − t`); the rule above is
//!   written in `α` and is used with any of the SDK's schedules.
//! * **Blocks and prompts.** Only the current block's committed positions may be masked again;
//!   prompts and finished blocks never are. With the default single block this is the
//!   reference's whole sequence minus the prompt (the reference generates unconditionally).
//! * **Network calls.** The reference calls the network at every step (`ddpm_cache` reuses the
//!   output only when nothing changed); here a sample needs a call only at a step where it has
//!   masked positions: a step where it has none only flips its remasking coins, which read no
//!   network output. A step where no sample has a masked position makes no call.
//! * **`conf`'s confidences** are `p(x_j)` under the untempered distribution (the reference
//!   uses the distribution after its nucleus cut), and the softmax runs in f64 (bfloat16 there).
//! * **Draws.** Every uniform comes from the sample's own stream ([`Run::rng`]) in a fixed
//!   order: per step, positions of the block left to right — a masked position takes its
//!   unmasking coin and, if it unmasks, the uniform of its token's draw; a committed position
//!   takes its remasking coin when its `σ > 0` (none is drawn where `σ = 0`, which keeps
//!   `eta = 0` on `ddpm`'s stream).
//! * **`loop`'s last step**: if `t_off` is below the last step's start `1/n`, the reference's
//!   grid ends inside the remasking phase and its final argmax fills what is left; here the
//!   last step of every schedule unmasks every remaining position by a draw and masks nothing.
//!
//! # Counting
//! A sample's NFE counts the calls made at steps where it had masked positions; each token
//! generated again after being masked counts one edit ([`Run::commit`]).

use super::params::{Bound, Choice, Handle, Number, BLOCK_LENGTH};
use super::{DenoiserSampler, Param, Params, RowBlock, Run, Sampler, Schedule, Steps, Want};
use crate::{PluginError, Result};
use rand::Rng;

/// ReMDM's choice of the remasking probability `σ` (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemaskSchedule {
    /// `σ = min(eta, (1 − α_s)/α_t)`.
    Cap,
    /// `σ = eta · σ_max`.
    Rescale,
    /// `σ_j = softmax(−confidence)_j · σ_max` over the block's committed positions.
    Conf,
    /// MDLM down to `α = alpha_on` at `t_on`, then `σ = eta` at constant `α` until `t_off`, then
    /// MDLM to the end.
    Loop,
}

/// `remask_schedule`: how `σ` is chosen (`cap`, `rescale`, `conf`).
pub const REMASK_SCHEDULE: Choice<RemaskSchedule> = Choice {
    name: "remask_schedule",
    options: &[
        ("cap", RemaskSchedule::Cap),
        ("rescale", RemaskSchedule::Rescale),
        ("conf", RemaskSchedule::Conf),
        ("loop", RemaskSchedule::Loop),
    ],
    doc: "ReMDM's remasking probability: cap (min(eta, σ_max)), rescale (eta·σ_max), conf (by confidence) or loop (eta between t_on and t_off)",
};

/// `t_on` (`loop`): where the remasking phase starts.
pub const T_ON: Number = Number {
    name: "t_on",
    default: 0.55,
    bound: Bound::NonNegative,
    doc: "loop: the time the remasking phase starts (t_off < t_on < 1)",
};

/// `t_off` (`loop`): where the remasking phase ends.
pub const T_OFF: Number = Number {
    name: "t_off",
    default: 0.05,
    bound: Bound::NonNegative,
    doc: "loop: the time the remasking phase ends (0 ≤ t_off < t_on)",
};

/// `alpha_on` (`loop`): the clean probability held during the remasking phase.
pub const ALPHA_ON: Number = Number {
    name: "alpha_on",
    default: 0.9,
    bound: Bound::UnitInterval,
    doc: "loop: the clean-token probability α held between t_on and t_off (below 1)",
};

/// `eta`: the remasking strength of `cap` and `rescale`; 0 is MDLM (`ddpm`). The default is the
/// value of the reference's `scripts/remdm-cap.sh`.
pub const ETA: Number = Number {
    name: "eta",
    default: 0.008,
    bound: Bound::NonNegative,
    doc: "remasking strength in [0, 1] for cap and rescale (0: plain MDLM; conf does not read it)",
};

/// The `remdm` sampler.
#[derive(Debug, Clone, Copy)]
pub struct Remdm;

impl Sampler for Remdm {
    fn name(&self) -> &'static str {
        "remdm"
    }
    fn params(&self) -> Vec<Param> {
        vec![
            BLOCK_LENGTH.param(),
            REMASK_SCHEDULE.param(),
            ETA.param(),
            T_ON.param(),
            T_OFF.param(),
            ALPHA_ON.param(),
        ]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        true
    }
}

impl DenoiserSampler for Remdm {
    fn scores(&self, params: &Params) -> Want {
        Want {
            confidence: params.get(&REMASK_SCHEDULE) == RemaskSchedule::Conf,
            ..Want::default()
        }
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        let eta = params.get(&ETA);
        if eta > 1.0 {
            return Err(PluginError::bad_config(format!(
                "remdm: eta must be at most 1 (it is a probability of masking a token again), got {eta}"
            )));
        }
        let remask = params.get(&REMASK_SCHEDULE);
        if remask == RemaskSchedule::Loop && run.schedule().is_some() {
            return Err(PluginError::bad_config(
                "remdm: remask_schedule `loop` has its own α schedule (t_on, t_off, alpha_on); give no `schedule`",
            ));
        }
        let rule = Rule {
            remask,
            eta,
            noise: Schedule::parse(run.schedule())?,
            looped: Loop::read(params)?,
        };
        for block in run.blocks(params.get(&BLOCK_LENGTH))? {
            rule.block(run, &block)?;
        }
        Ok(())
    }
}

/// One request's ReMDM settings.
struct Rule {
    remask: RemaskSchedule,
    eta: f64,
    noise: Schedule,
    looped: Loop,
}

/// `loop`'s three phases and their `α` (the reference's `remdm-loop`).
#[derive(Debug, Clone, Copy)]
struct Loop {
    t_on: f64,
    t_off: f64,
    alpha_on: f64,
}

/// Which phase of `loop` a step starting at `t` is in.
enum LoopPhase {
    /// `t > t_on`: MDLM with `α` from 0 at `t = 1` to `alpha_on` at `t_on`.
    Before,
    /// `t_off < t ≤ t_on`: `α = alpha_on`, committed tokens masked again with `σ = eta`.
    Remask,
    /// `t ≤ t_off`: MDLM with `α` from `alpha_on` at `t_off` to 1 at `t = 0`.
    After,
}

impl Loop {
    fn read(params: &Params) -> Result<Loop> {
        let (t_on, t_off, alpha_on) =
            (params.get(&T_ON), params.get(&T_OFF), params.get(&ALPHA_ON));
        if !(t_off < t_on && t_on < 1.0) || alpha_on >= 1.0 {
            return Err(PluginError::bad_config(format!(
                "remdm loop: need 0 ≤ t_off < t_on < 1 and alpha_on < 1; got t_off {t_off}, t_on {t_on}, alpha_on {alpha_on}"
            )));
        }
        Ok(Loop {
            t_on,
            t_off,
            alpha_on,
        })
    }

    fn phase(&self, t: f64) -> LoopPhase {
        if t > self.t_on {
            LoopPhase::Before
        } else if t <= self.t_off {
            LoopPhase::After
        } else {
            LoopPhase::Remask
        }
    }

    /// `α(x)` in the phase of the step starting at `t`.
    fn alpha(&self, t: f64, x: f64) -> f64 {
        match self.phase(t) {
            LoopPhase::Before => (1.0 - x) * self.alpha_on / (1.0 - self.t_on),
            LoopPhase::Remask => self.alpha_on,
            LoopPhase::After => 1.0 - x * (1.0 - self.alpha_on) / self.t_off,
        }
    }
}

/// One step's plan for one sample: what it draws and which positions it masks again.
#[derive(Default)]
struct StepPlan {
    /// Positions that unmask this step (their token uniforms are in the step's list).
    unmask: Vec<usize>,
    /// Committed positions masked again this step.
    remask: Vec<usize>,
    /// Whether the sample had masked positions (it needs the network's output).
    needs_call: bool,
}

impl Rule {
    /// `(σ for a committed position, σ_max)` from `t` to `s` (`s ≤ 0`: the last step, no
    /// remasking). `conf` scales `σ_max` per position itself.
    fn sigma(&self, t: f64, s: f64) -> (f64, f64) {
        if s <= 0.0 {
            return (0.0, 0.0);
        }
        if let RemaskSchedule::Loop = self.remask {
            return match self.looped.phase(t) {
                LoopPhase::Remask => (self.eta, 1.0),
                LoopPhase::Before | LoopPhase::After => (0.0, 0.0),
            };
        }
        let (at, as_) = (self.alpha(t, t), self.alpha(t, s));
        let room = if at > 0.0 {
            (1.0 - as_) / at
        } else {
            f64::INFINITY
        };
        let sigma_max = room.min(1.0);
        let sigma = match self.remask {
            RemaskSchedule::Cap => self.eta.min(room),
            RemaskSchedule::Rescale => self.eta * sigma_max,
            RemaskSchedule::Conf | RemaskSchedule::Loop => 0.0,
        };
        (sigma, sigma_max)
    }

    /// Probability that a masked position unmasks from `t` to `s` when committed ones are masked
    /// again with probability `sigma` (MDLM's when `sigma = 0`; 1 at the last step).
    fn unmask_probability(&self, t: f64, s: f64, sigma: f64) -> f64 {
        if s <= 0.0 {
            return 1.0;
        }
        let (at, as_) = (self.alpha(t, t), self.alpha(t, s));
        ((as_ - (1.0 - sigma) * at) / (1.0 - at)).clamp(0.0, 1.0)
    }

    /// `α(x)` for the step that starts at `t`: the noise schedule's, or under `loop` the
    /// schedule of the phase `t` is in (both ends of a step use the phase of its start, as the
    /// reference does).
    fn alpha(&self, t: f64, x: f64) -> f64 {
        match self.remask {
            RemaskSchedule::Loop => self.looped.alpha(t, x),
            RemaskSchedule::Cap | RemaskSchedule::Rescale | RemaskSchedule::Conf => {
                self.noise.alpha(x)
            }
        }
    }

    /// Block `i` of every sample (`block[b]`: sample `b`'s, `None` when it has no `i`-th block),
    /// each on its own time grid of its own steps.
    fn block(&self, run: &mut Run<'_>, block: &[Option<RowBlock>]) -> Result<()> {
        let (batch, length) = (run.batch(), run.length());
        let steps = block.iter().flatten().map(|r| r.steps).max().unwrap_or(0);
        // `conf`: the confidence each committed position of the block had when drawn.
        let mut confidence: Vec<Vec<Option<f64>>> = vec![vec![None; length]; batch];
        for i in 0..steps {
            let (mut rows, mut uniforms) = (Vec::new(), Vec::new());
            let mut plans: Vec<StepPlan> = Vec::with_capacity(batch);
            let mut times: Vec<Option<f64>> = Vec::with_capacity(batch);
            for (b, rb) in block.iter().enumerate() {
                let Some(rb) = rb.as_ref().filter(|rb| i < rb.steps) else {
                    plans.push(StepPlan::default());
                    times.push(None);
                    continue;
                };
                let n = rb.steps as f64;
                let (t, s) = (1.0 - i as f64 / n, 1.0 - (i + 1) as f64 / n);
                let plan = self.plan(run, b, rb, (t, s), &confidence[b], &mut uniforms)?;
                rows.extend(plan.unmask.iter().map(|&j| b * length + j));
                times.push(plan.needs_call.then_some(t));
                plans.push(plan);
            }
            let drawn = run.forward_and_draw(&times, &rows, &uniforms)?;
            let mut next = 0;
            for (b, plan) in plans.iter().enumerate() {
                if plan.needs_call {
                    run.count_call(b);
                }
                for &j in &plan.unmask {
                    run.commit(b * length + j, drawn.tokens[next]);
                    confidence[b][j] = drawn.confidence.get(next).copied();
                    next += 1;
                }
                for &j in &plan.remask {
                    run.remask(b * length + j)?;
                    confidence[b][j] = None;
                }
            }
        }
        Ok(())
    }

    /// Sample `b`'s draws for the step from `t` to `s` over its block `rb`: its coins and
    /// token uniforms (pushed to `uniforms`), in position order.
    fn plan(
        &self,
        run: &mut Run<'_>,
        b: usize,
        rb: &RowBlock,
        (t, s): (f64, f64),
        confidence: &[Option<f64>],
        uniforms: &mut Vec<f64>,
    ) -> Result<StepPlan> {
        let (sigma, sigma_max) = self.sigma(t, s);
        let per_position = match self.remask {
            RemaskSchedule::Conf => conf_sigmas(run, b, rb, confidence, sigma_max)?,
            RemaskSchedule::Cap | RemaskSchedule::Rescale | RemaskSchedule::Loop => Vec::new(),
        };
        let p_unmask = self.unmask_probability(t, s, sigma);
        let mut plan = StepPlan::default();
        for j in rb.range.clone() {
            if run.token(b, j).is_none() {
                plan.needs_call = true;
                if run.rng(b).random::<f64>() < p_unmask {
                    plan.unmask.push(j);
                    uniforms.push(run.rng(b).random::<f64>());
                }
                continue;
            }
            let sigma_j = per_position
                .get(j - rb.range.start)
                .copied()
                .unwrap_or(sigma);
            if sigma_j > 0.0 && run.rng(b).random::<f64>() < sigma_j {
                plan.remask.push(j);
            }
        }
        Ok(plan)
    }
}

/// `conf`'s `σ_j` for each position of sample `b`'s block (0 where masked): `σ_max` times the
/// softmax of minus the committed positions' confidences.
fn conf_sigmas(
    run: &Run<'_>,
    b: usize,
    rb: &RowBlock,
    confidence: &[Option<f64>],
    sigma_max: f64,
) -> Result<Vec<f64>> {
    let scores: Vec<Option<f64>> = rb
        .range
        .clone()
        .map(|j| match (run.token(b, j), confidence[j]) {
            (None, _) => Ok(None),
            (Some(_), Some(c)) => Ok(Some(-c)),
            (Some(_), None) => Err(PluginError::internal(format!(
                "remdm conf: sample {b}, position {j} is committed with no recorded confidence"
            ))),
        })
        .collect::<Result<_>>()?;
    let top = scores
        .iter()
        .flatten()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = scores
        .iter()
        .map(|s| s.map_or(0.0, |s| (s - top).exp()))
        .collect();
    let total: f64 = weights.iter().sum();
    Ok(weights
        .iter()
        .map(|w| {
            if total > 0.0 {
                w / total * sigma_max
            } else {
                0.0
            }
        })
        .collect())
}
