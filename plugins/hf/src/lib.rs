//! Hugging Face checkpoints of diffusion language models as dlm-bench models.
//!
//! Point a suite at a checkpoint folder (`config.json`, `model.safetensors` or shards with
//! `model.safetensors.index.json`, `tokenizer.json`) of a supported architecture and it answers
//! text tasks through every SDK denoiser sampler:
//!
//! * [`config`] — config.json under each architecture's own field names; unsupported options
//!   refused by name;
//! * [`weights`] — safetensors headers checked against the files, tensors read one at a time;
//! * [`model`] — the LLaDA and Dream networks in Burn ([`Network::forward`]: ids → logits);
//! * [`denoiser`] — the SDK [`dlm_sdk::Denoiser`]: id mapping, Dream's logit shift, the mask
//!   token excluded ([`CheckpointDenoiser::logits`] keeps the logits on the device);
//! * [`block_diffusion`], [`block_decode`] — SDAR's block-causal mask, its training pass, and
//!   its decoding through the SDK's samplers in the checkpoint's blocks (plus `sequential`);
//! * [`window`] — the key/value cache of the diffusion networks (Fast-dLLM's prefix and dual
//!   caches: fill, then windows), behind the SDK's `TensorKvCache`;
//! * [`ar`] — LLaMA and Qwen2 causal checkpoints as the SDK's `Autoregressive` model (KV cache);
//! * [`checkpoint`] — a whole folder loaded ([`Checkpoint::open`], [`ArCheckpoint::open`]);
//! * [`plugin`] — the `dlm-hf` plugin, models `checkpoint` (diffusion) and `ar-checkpoint`
//!   (autoregressive), wrapped in the SDK's `TextModel`.

pub mod ar;
pub mod block_decode;
pub mod block_diffusion;
pub mod checkpoint;
pub mod config;
pub mod denoiser;
pub mod error;
pub mod model;
pub mod plugin;
pub mod weights;
pub mod window;

pub use ar::CheckpointGenerator;
pub use checkpoint::{ArCheckpoint, Checkpoint, LoadStats};
pub use config::{Architecture, ModelConfig};
pub use denoiser::CheckpointDenoiser;
pub use error::HfError;
pub use model::Network;
pub use plugin::{HfPlugin, OpenConfig};
pub use weights::WeightStore;
pub use window::WindowCache;

dlm_sdk::export_plugin!(plugin::HfPlugin);
