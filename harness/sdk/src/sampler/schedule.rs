//! Noise schedules, semi-autoregressive blocks and per-step quotas: the meaning of `steps`.

use crate::{PluginError, Result};
use std::ops::Range;

/// A noise schedule as the clean-token probability `α(t)`, `α(0) = 1`, `α(1) ≈ 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    /// `loglinear` (the default): `α(t) = 1 − t`.
    LogLinear,
    /// `linear` (MDLM's linear σ): `α(t) = exp(−(σmin + t(σmax − σmin)))`, σ from 1e-4 to 20.
    Linear,
    /// `cosine`: `α(t) = cos(πt/2)`.
    Cosine,
}

impl Schedule {
    /// The name of the schedule a sampler that takes one uses when none is given.
    pub const DEFAULT_NAME: &'static str = "loglinear";

    /// The schedule called `name` (`None` means `loglinear`); an unknown name is an error
    /// listing the known ones.
    pub fn parse(name: Option<&str>) -> Result<Schedule> {
        match name.unwrap_or(Self::DEFAULT_NAME) {
            "loglinear" => Ok(Schedule::LogLinear),
            "linear" => Ok(Schedule::Linear),
            "cosine" => Ok(Schedule::Cosine),
            other => Err(PluginError::bad_config(format!(
                "unknown schedule `{other}`; known schedules: loglinear, linear, cosine"
            ))),
        }
    }

    /// Probability `α(t)` that a position is still clean at diffusion time `t ∈ [0, 1]`.
    pub fn alpha(self, t: f64) -> f64 {
        const SIGMA_MIN: f64 = 1e-4;
        const SIGMA_MAX: f64 = 20.0;
        match self {
            Schedule::LogLinear => 1.0 - t,
            Schedule::Linear if t <= 0.0 => 1.0,
            Schedule::Linear => (-(SIGMA_MIN + t * (SIGMA_MAX - SIGMA_MIN))).exp(),
            Schedule::Cosine => (std::f64::consts::FRAC_PI_2 * t).cos(),
        }
    }

    /// Probability that a position masked at time `t` is unmasked by time `s < t`.
    pub fn unmask_probability(self, t: f64, s: f64) -> f64 {
        if s <= 0.0 {
            return 1.0;
        }
        let (at, as_) = (self.alpha(t), self.alpha(s));
        ((as_ - at) / (1.0 - at)).clamp(0.0, 1.0)
    }
}

/// LLaDA's per-step quotas: `m` tokens over `steps` steps, summing to `m`.
pub fn quotas(m: usize, steps: usize) -> Vec<usize> {
    let steps = steps.max(1);
    (0..steps)
        .map(|k| m / steps + usize::from(k < m % steps))
        .collect()
}

/// Split `steps` over `blocks` blocks (earlier blocks take the remainder); each needs ≥ 1.
pub fn split_steps(steps: usize, blocks: usize) -> Result<Vec<usize>> {
    if steps < blocks {
        return Err(PluginError::bad_config(format!(
            "{steps} steps cannot cover {blocks} blocks: every block needs at least one step (steps is the total across blocks); raise steps or block_length"
        )));
    }
    Ok(quotas(steps, blocks))
}

/// Consecutive blocks of `block_length` positions covering `start..length`.
pub fn blocks(start: usize, length: usize, block_length: usize) -> Vec<Range<usize>> {
    let bl = block_length.max(1);
    (start..length)
        .step_by(bl)
        .map(|b| b..(b + bl).min(length))
        .collect()
}
