//! Neural models for dlm-bench on Burn 0.22: a masked diffusion transformer (MDLM training,
//! SUBS parameterisation, no time conditioning) and an autoregressive transformer of the same
//! architecture with a KV cache.
//!
//! * [`model`] — the network ([`Transformer`]), the SUBS output, the KV cache;
//! * [`kv_window`] — the `mdm` model's key/value cache (the samplers' `cache: prefix | dual`);
//! * [`train`] — the MDLM and next-token losses and the training loop ([`train::train`]);
//! * [`train_config`] — the training settings a checkpoint records;
//! * [`block`] — block diffusion (BD3-LM): `mdm` with `block_size`, block-causal attention;
//! * [`checkpoint`] — checkpoint files with a fingerprinted JSON header;
//! * [`mdm`] — the `mdm` model's network as a denoiser ([`MdmDenoiser`]);
//! * [`plugin`] — the `dlm-neural` plugin: models `mdm` (every SDK denoiser sampler) and `ar`;
//! * [`text`] — models that own a Hugging Face tokenizer and answer text tasks with text.
//!
//! Open configs: `{checkpoint: PATH, fingerprint?: HEX}` for a trained model, or
//! `{init: cpu | paper | {hidden, layers, heads, ff_mult?, max_length?}, seed?}` for an untrained
//! one (useful for timing); both take `device` (`flex` by default), for `ar`, `kv_cache` and
//! `kv_cache_dtype` (`f32` or `bf16`, see [`model::KvDtype`]), and
//! `tokenizer: PATH` (with `eos_token?`) for a model whose vocabulary is a Hugging Face tokenizer's.

pub mod block;
pub mod block_mask;
pub mod checkpoint;
pub mod kv_window;
pub mod mdm;
pub mod model;
pub mod noise;
pub mod plugin;
pub mod text;
pub mod train;
pub mod train_config;

pub use checkpoint::{Checkpoint, CheckpointHeader, ModelIdentity};
pub use model::{ModelKind, NetConfig, Transformer};
pub use plugin::{ArGenerator, MdmDenoiser, NeuralPlugin, OpenConfig};
pub use train::{train, TrainConfig, TrainProgress};

dlm_sdk::export_plugin!(plugin::NeuralPlugin);

#[cfg(test)]
mod block_tests;
#[cfg(test)]
mod kv_cache_tests;
#[cfg(test)]
mod kv_window_tests;
#[cfg(test)]
mod likelihood_tests;
#[cfg(test)]
mod plugin_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod text_tests;
#[cfg(test)]
mod training_tests;
