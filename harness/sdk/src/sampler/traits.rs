//! What a sampler is: one type, described to the harness ([`Sampler`]) and run over a
//! denoiser ([`DenoiserSampler`]). Every method is required, so the compiler, not a fallback,
//! catches a sampler that forgets to say something.

use super::{Params, Run, Want};
use crate::{Result, SamplerInfo};

/// How a sampler reads `steps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    /// `steps` (≥ 1) is the total number of denoising steps, a budget the sampler may finish
    /// under.
    Budget,
    /// One position per step: `steps` must equal the length, and a suite gives none (the
    /// harness uses the length); such cells are the autoregressive baselines.
    OnePerToken,
}

/// A sampler as the harness and the parameter parser see it: its name, its parameters and how
/// it reads `steps` and `schedule`. The harness never interprets a sampler's name; it reads
/// this description from the plugin's descriptor ([`Sampler::info`]).
pub trait Sampler: Send + Sync {
    /// The name a suite's `sampler:` gives.
    fn name(&self) -> &'static str;
    /// Its parameters beyond the draw's `temperature`, `top_k` and `top_p` (which every
    /// sampler takes), declared by their handles (see [`super::params`]).
    fn params(&self) -> Vec<super::Param>;
    /// How it reads `steps`.
    fn steps(&self) -> Steps;
    /// Whether it reads the request's noise `schedule` (a schedule given to a sampler that
    /// does not is refused).
    fn takes_schedule(&self) -> bool;

    /// The description the harness reads from the plugin's descriptor.
    fn info(&self) -> SamplerInfo {
        SamplerInfo {
            name: self.name().to_string(),
            one_step_per_token: self.steps() == Steps::OnePerToken,
            params: super::params::draw_params()
                .into_iter()
                .chain(self.params())
                .map(|p| p.name.to_string())
                .collect(),
            steps_optional: false,
        }
    }
}

/// A sampler over a [`crate::Denoiser`] (host path) or a `device::TensorDenoiser` (device
/// path): what it reads from each forward pass and how it commits tokens.
pub trait DenoiserSampler: Sampler {
    /// The per-position scores its commit rule reads besides the tokens; each draw returns
    /// exactly these (the device path computes nothing else).
    fn scores(&self, params: &Params) -> Want;
    /// Fill every masked position of `run`'s canvas: call the network, draw, commit, count
    /// each sample's NFE. The request's steps, parameters and prompts are already checked
    /// against [`Sampler`]'s description. Every draw for sample `b` must take its uniforms
    /// from [`Run::rng`]`(b)` in a fixed order, so tokens do not depend on the batch.
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()>;
}
