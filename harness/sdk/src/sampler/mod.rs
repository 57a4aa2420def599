//! Shared samplers, step accounting and timing.
//!
//! Every sample owns a random stream derived from `(seed, sample index)` alone
//! ([`sample_rng`]); every draw a sampler makes for a sample comes from that stream in a fixed
//! order (positions left to right), so a sample's tokens do not depend on the batch size or on
//! sharding. Categorical draws are made in f64 by inverse CDF ([`categorical`]).
//!
//! # One type per sampler
//! A sampler is one type in its own file, implementing [`Sampler`] (its name, its parameters
//! with their types and defaults, how it reads `steps` and `schedule`) and [`DenoiserSampler`]
//! (the scores it reads from each forward pass, [`Want`], and its loop over a [`Run`]: call
//! the network, draw, commit, count NFE). Every method is required, so a sampler that forgets
//! one does not compile. The denoiser samplers a model answers are a [`Registry`]:
//! [`BUILT_IN`] lists the SDK's, one line each, and a plugin adds its own with
//! [`Registry::with`] (its model is then [`Registry::model`], its component
//! [`Registry::component`]). The harness learns each sampler's description from the plugin's
//! descriptor ([`Sampler::info`]) and never interprets a name. Parameters are declared once, as
//! typed handles ([`params`]), and parsed against the declarations ([`Params`]).
//!
//! # The meaning of `steps`
//! `steps` is the **total number of denoising steps across the whole sequence**, all blocks
//! included. With semi-autoregressive blocks (`block_length` < L) the steps are split over the
//! blocks as evenly as possible (earlier blocks get the remainder); every block needs at least
//! one step ([`Run::blocks`]). Each sample's blocks start at its own prompt's end, so a sample's
//! blocks, steps and times never depend on the prompts it shares a batch with. Inside a block of `M` masked positions and `S` steps, step `k`
//! has the quota `⌊M/S⌋ + [k < M mod S]` (LLaDA's `get_num_transfer_tokens`, [`quotas`]), so
//! the quotas always sum to `M` and no mask survives the last step — no separate
//! noise-removal pass is ever needed.
//! * Fixed-quota rules (`low_confidence`, `random`) commit exactly the quota.
//! * Adaptive rules (`threshold`, `factor`, `eb`) commit what their rule accepts, but never fewer
//!   than the quota: `steps` is their step budget, and they may finish a block early. With
//!   `steps = L` the quota is one token, which is the anchors' "at least one token per step".
//! * `ddpm`/`ddpm_cache` use `steps` as the time grid of each block (positions unmask at random,
//!   Binomially); the grid ends at `t = 0` where every remaining position unmasks. `remdm` uses
//!   the same grid; its last step masks nothing again, so no mask survives it either.
//! * `threshold_edit` commits as `threshold` does; its edits spend the same budget, and once a
//!   block is full it keeps stepping only while edits fire.
//! * `dream_cache` (Fast-dLLM's Dream loop) commits each block's first position at its first
//!   step; with `alg: entropy` a block takes exactly its share of `steps` (at least 2), with
//!   `alg: confidence_threshold` as many steps as it needs, as the reference ([`DreamCache`]).
//! * `left_to_right` takes exactly `L` steps (one position per step, [`Steps::OnePerToken`]).
//! * `ar` (autoregressive models) takes exactly `L` steps.
//!
//! # Samplers
//! Each file's documentation states its rule:
//! * [`Ddpm`] (`ddpm`, `ddpm_cache`) — MDLM ancestral sampling, with and without reuse of the
//!   network's output between steps that changed nothing;
//! * [`LowConfidence`] / [`Random`] (`low_confidence`, `random`) — LLaDA remasking by
//!   confidence or at random;
//! * [`Threshold`] (`threshold`) and [`Factor`] (`factor`) — Fast-dLLM's threshold and factor
//!   rules;
//! * [`Eb`] (`eb`) — entropy-bounded unmasking;
//! * [`LeftToRight`] (`left_to_right`) — one position per step, in order;
//! * [`Dream`] (`dream`) — Dream's own decoder (`alg`: `origin`, `maskgit_plus`, `topk_margin`,
//!   `entropy`; `eps`, `alg_temp`), on its own time grid, with no blocks;
//! * [`DreamCache`] (`dream_cache`) — Fast-dLLM's block loop for Dream with its prefix and dual
//!   caches (`alg`: `entropy`, `confidence_threshold`; `tau`, `eps`, `alg_temp`);
//! * [`Remdm`] (`remdm`) — ReMDM: MDLM ancestral sampling that masks committed tokens again
//!   (`remask_schedule`: `cap`, `rescale`, `conf`, `loop`; `eta`);
//! * [`ThresholdEdit`] (`threshold_edit`) — LLaDA 2.1's joint thresholds: `threshold`'s commits
//!   plus edits that replace a committed token (`edit_tau`);
//! * [`Ar`] (`ar`) — ancestral sampling of an [`Autoregressive`] model (not a denoiser sampler:
//!   [`generate_ar`] runs it), described by the same [`Sampler`] trait.
//!
//! The rules that rank positions share LLaDA's remasking loop ([`remask`]).
//!
//! Parameters (`params:` in a suite): every sampler takes `temperature` (default 1; 0 =
//! argmax), `top_k` and `top_p` (applied to the distribution `x0` is drawn from); the block
//! samplers take `block_length` (default L); `threshold` takes `tau` (default 0.9), `factor`
//! takes `factor` (default 1.0), `eb` takes `gamma` and `proxy` (defaults 0.1 and `entropy`),
//! `dream` takes `alg`, `eps` and `alg_temp` (defaults `origin`, 0.001 and 0; no blocks),
//! `remdm` takes `remask_schedule` and `eta` (defaults `cap` and 0.008; `loop` also `t_on`,
//! `t_off`, `alpha_on`: 0.55, 0.05, 0.9), `threshold_edit` takes
//! `tau` and `edit_tau` (defaults 0.9 and 0.9; above 1: no edits).
//! The samplers of the remasking loop (`low_confidence`, `random`, `threshold`, `factor`, `eb`)
//! and `dream_cache` take `cache` (`none`, the default, `prefix` or `dual`) and `refresh` (`every_block`, the
//! default, or a positive integer k): the model's key/value cache, filled at the first step of
//! every block (and every k steps inside it), windows between fills ([`CACHE`], [`REFRESH`]).
//! Schedules (`ddpm*` and `remdm`): `loglinear` (default, `α = 1 − t`), `linear` (MDLM:
//! `α = exp(−(σmin + t(σmax − σmin)))`, σ 1e-4…20), `cosine` (`α = cos(πt/2)`).
//!
//! # Accounting
//! `batch_nfe` counts network calls actually made for the batch. A sample's `nfe` counts the
//! calls that sample needed on its own: calls made while it still had masked positions, and for
//! `ddpm_cache` only the first one plus one after each step that changed one of *its* tokens —
//! so it does not depend on who shared its batch. Samples whose blocks got different step
//! counts are at different diffusion times in one step; a time-conditioned network is then
//! called once per distinct time ([`Run::forward_and_draw`]), each call counted in `batch_nfe`.
//!
//! A call's cost is counted in **positions computed** (query positions): `length` per row for a
//! full forward pass (a cache fill included), the window's width for a cached step (`cache:
//! prefix`: from the block's start to the end; `dual`: the block). A sample's
//! `positions_computed` sums the widths of the calls counted in its `nfe` (a full pass's less
//! the left padding hidden in its row, so that the count is the row's alone); the reply's
//! `batch_positions` sums `batch × width` over every call made. A cached step is still one
//! NFE: NFE says how many steps, positions what they cost. `ar` computes one position per call
//! and row, prompt positions (fed one per call, not counted in its `nfe`) included, so a
//! sample's positions are its sequence's length (without left padding).
//!
//! Samplers that revisit committed positions (`remdm`, `threshold_edit`) count by the same
//! rules: an edit is a step like any other (its call is one NFE, counted for every sample that
//! read it; `threshold_edit`'s call that finds nothing left to edit included), and a token
//! masked again is generated again. A sample's `edits` counts its commits at positions
//! committed before ([`Run::commit`]): each token re-generated after [`Run::remask`], and each
//! token replaced in place. It is absent for a sample with none.

mod ar;
mod cache;
mod ddpm;
mod draw;
mod dream;
mod dream_cache;
mod eb;
mod edit;
mod factor;
mod left_to_right;
mod low_confidence;
pub mod params;
mod random;
mod registry;
mod remask;
mod remdm;
mod run;
mod schedule;
mod threshold;
mod trace;
mod traits;

pub use ar::{
    answer_autoregressive, exact_autoregressive, generate_ar, Ar, Autoregressive,
    AutoregressiveModel,
};
pub use cache::{CacheMode, CACHE, REFRESH};
pub use ddpm::Ddpm;
pub use draw::{categorical, sample_rng, Drawn, Want};
pub use dream::{Dream, DreamAlg, ALG, ALG_TEMP, EPS};
pub use dream_cache::{DreamCache, DreamCacheAlg, CACHE_ALG};
pub use eb::{Eb, Proxy, GAMMA, PROXY};
pub use edit::{ThresholdEdit, EDIT_TAU};
pub use factor::{Factor, FACTOR};
pub use left_to_right::LeftToRight;
pub use low_confidence::LowConfidence;
pub use params::{Param, Params};
pub use random::Random;
pub use registry::{Registry, RegistryModel, BUILT_IN};
pub use remask::{remask, Ranking};
pub use remdm::{RemaskSchedule, Remdm, ALPHA_ON, ETA, REMASK_SCHEDULE, T_OFF, T_ON};
pub use run::{RowBlock, Run};
pub use schedule::{blocks, quotas, split_steps, Schedule};
pub use threshold::{Threshold, TAU};
pub use traits::{DenoiserSampler, Sampler, Steps};

// What the device path (`device`, feature `burn`) plugs into.
#[cfg(all(test, feature = "burn"))]
use draw::{host_draw, shape_distribution};
#[cfg(feature = "burn")]
use {
    ar::{generate_ar_with, NextNet},
    draw::{RowError, Shaping},
    run::{generate_with, DenoiseNet},
};

use crate::{Denoiser, GenerateReply, GenerateRequest, Result, SamplerInfo};

/// What the harness needs to know about the SDK's sampler `name` (`ar` included): whether it
/// takes one step per token, and its parameters (see [`Sampler::info`]). A name the SDK does
/// not define gets no parameters and budgeted steps.
pub fn info(name: &str) -> SamplerInfo {
    match Registry::built_in().get(name) {
        Some(sampler) => sampler.info(),
        None if name == Ar.name() => Ar.info(),
        None => SamplerInfo {
            name: name.to_string(),
            one_step_per_token: false,
            params: Vec::new(),
            steps_optional: false,
        },
    }
}

/// Generate a batch with the built-in sampler the request names (host path: f64
/// distributions); [`Registry::generate`] for a model with samplers of its own.
pub fn generate<D: Denoiser + ?Sized>(
    denoiser: &mut D,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    Registry::built_in().generate(denoiser, request)
}

#[cfg(feature = "burn")]
pub mod device;

#[cfg(test)]
mod ar_likelihood_tests;
#[cfg(test)]
mod cache_tests;
#[cfg(test)]
mod golden;
#[cfg(test)]
mod revisit_tests;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod trace_tests;
