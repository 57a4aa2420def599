//! Parallel-decoding tasks after ParallelBench (Kim et al., ICLR 2026): text tasks in a small
//! letter vocabulary whose accuracy under parallel decoding has a closed form, because a step
//! that commits several tokens draws them independently from their marginals.
//!
//! * [`task`]: the tasks (`copy`, `reverse`, `replace_one`, `sort`, `shuffle`, `line`), their
//!   prompts, reference answers, exact scorers and the exact conditional distribution of every
//!   masked answer position given the visible ones;
//! * [`closed_form`]: the exact accuracy of the `random` sampler with the exact denoiser at
//!   any number of steps (derivations in its doc comments);
//! * [`plugin`]: the task plugin and the `oracle` model, exported through
//!   `dlm_sdk::export_plugin!`.

pub mod closed_form;
pub mod plugin;
pub mod task;

#[cfg(test)]
mod tests;

/// The exported descriptor static and root module (generated, so not documented here).
#[allow(missing_docs)]
mod export {
    dlm_sdk::export_plugin!(super::plugin::ParallelPlugin);
}
