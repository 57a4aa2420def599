//! A checkpoint folder as published on the Hugging Face hub: `config.json`, the safetensors
//! weights (one file or shards with `model.safetensors.index.json`) and `tokenizer.json`.

use crate::ar::CheckpointGenerator;
use crate::config::{Architecture, ModelConfig};
use crate::denoiser::CheckpointDenoiser;
use crate::error::{HfError, Result};
use crate::model::Network;
use crate::weights::WeightStore;
use burn::tensor::{DType, Device};
use dlm_sdk::tokenizer::HfTokenizer;
use std::path::{Path, PathBuf};

/// Mask token names looked up in the tokenizer when config.json has no `mask_token_id`.
pub const MASK_NAMES: &[&str] = &["<|mdm_mask|>", "<|mask|>", "[MASK]", "<mask>"];

/// The compute dtype of the weights and activations (`dtype` in the model config).
pub fn parse_dtype(name: Option<&str>) -> Result<DType> {
    match name.unwrap_or("f32") {
        "f32" | "float32" => Ok(DType::F32),
        "f16" | "float16" => Ok(DType::F16),
        "bf16" | "bfloat16" => Ok(DType::BF16),
        other => Err(HfError::Setting(format!(
            "dtype `{other}` is not supported: use f32, f16 or bf16"
        ))),
    }
}

/// What loading took: the largest host buffer (one tensor) and the weights' size on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadStats {
    /// Bytes of the largest tensor read (host memory beyond the process's own, at the peak).
    pub largest_tensor_bytes: usize,
    /// Bytes of every weight on the device, in the compute dtype.
    pub device_bytes: usize,
}

/// A loaded checkpoint: the denoiser over the tokenizer's ids, and the tokenizer.
pub struct Checkpoint {
    pub dir: PathBuf,
    pub denoiser: CheckpointDenoiser,
    pub tokenizer: HfTokenizer,
    pub stats: LoadStats,
}

impl Checkpoint {
    /// Load the diffusion checkpoint folder `dir` (LLaDA, Dream) onto `device` in `dtype`.
    /// `eos_token` names the end-of-text token when the tokenizer's is not one of the SDK's
    /// usual names. `device_label` is recorded with timings.
    pub fn open(
        dir: &Path,
        device: &Device,
        device_label: &str,
        dtype: DType,
        eos_token: Option<&str>,
    ) -> Result<Self> {
        let parts = Parts::load(dir, device, dtype, eos_token, false)?;
        let mask = mask_token_id(&parts.net.config, &parts.tokenizer, dir)?;
        let denoiser = CheckpointDenoiser::new(
            parts.net,
            parts.tokenizer.vocab_size(),
            mask,
            device_label.to_string(),
        )
        .map_err(|e| in_config(dir, e))?;
        Ok(Checkpoint {
            dir: dir.to_path_buf(),
            denoiser,
            tokenizer: parts.tokenizer,
            stats: parts.stats,
        })
    }
}

/// A loaded autoregressive checkpoint (LLaMA, Qwen2): the generator and the tokenizer.
pub struct ArCheckpoint {
    pub dir: PathBuf,
    pub generator: CheckpointGenerator,
    pub tokenizer: HfTokenizer,
    pub stats: LoadStats,
}

impl ArCheckpoint {
    /// Load the autoregressive checkpoint folder `dir` (see [`Checkpoint::open`]).
    pub fn open(
        dir: &Path,
        device: &Device,
        device_label: &str,
        dtype: DType,
        eos_token: Option<&str>,
    ) -> Result<Self> {
        let parts = Parts::load(dir, device, dtype, eos_token, true)?;
        let bos = match parts.net.config.architecture {
            Architecture::Llama => parts.net.config.bos_token_id,
            _ => None,
        };
        let generator = CheckpointGenerator::new(
            parts.net,
            parts.tokenizer.vocab_size(),
            bos,
            device_label.to_string(),
        )
        .map_err(|e| in_config(dir, e))?;
        Ok(ArCheckpoint {
            dir: dir.to_path_buf(),
            generator,
            tokenizer: parts.tokenizer,
            stats: parts.stats,
        })
    }
}

/// A bad pairing of weights and tokenizer, reported against the folder's config.json.
fn in_config(dir: &Path, e: HfError) -> HfError {
    match e {
        HfError::Input(message) => HfError::Config {
            path: dir.join("config.json"),
            message,
        },
        other => other,
    }
}

/// What both kinds of checkpoint load: the network and the tokenizer.
struct Parts {
    net: Network,
    tokenizer: HfTokenizer,
    stats: LoadStats,
}

impl Parts {
    fn load(
        dir: &Path,
        device: &Device,
        dtype: DType,
        eos_token: Option<&str>,
        autoregressive: bool,
    ) -> Result<Self> {
        if !dir.is_dir() {
            return Err(HfError::Io {
                path: dir.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "not a directory (give the checkpoint folder: config.json, *.safetensors, tokenizer.json)",
                ),
            });
        }
        let config_path = dir.join("config.json");
        let config = ModelConfig::from_file(&config_path)?;
        let name = config.architecture.hf_name();
        match (config.architecture.is_autoregressive(), autoregressive) {
            (true, false) => {
                return Err(HfError::Config {
                    path: config_path,
                    message: format!(
                        "{name} is an autoregressive model: open it as dlm-hf's model `ar-checkpoint` (sampler `ar`)"
                    ),
                })
            }
            (false, true) => {
                return Err(HfError::Config {
                    path: config_path,
                    message: format!(
                        "{name} is a diffusion model: open it as dlm-hf's model `checkpoint`"
                    ),
                })
            }
            _ => {}
        }
        // The tokenizer first: it is cheap, and a folder without one fails before gigabytes load.
        let tokenizer = open_tokenizer(dir, eos_token)?;
        let mut weights = WeightStore::open(dir)?;
        let elements = parameter_count(&config);
        let net = Network::load(config, &mut weights, device, dtype)?;
        let stats = LoadStats {
            largest_tensor_bytes: weights.largest_read(),
            device_bytes: elements * dtype.size(),
        };
        Ok(Parts {
            net,
            tokenizer,
            stats,
        })
    }
}

/// `dir/tokenizer.json`, with its end-of-text token.
pub fn open_tokenizer(dir: &Path, eos_token: Option<&str>) -> Result<HfTokenizer> {
    let path = dir.join("tokenizer.json");
    if !path.exists() {
        return Err(HfError::Tokenizer(format!(
            "{}: missing; a checkpoint folder needs its tokenizer.json (the `tokenizers` format; \
             convert a slow tokenizer with transformers' AutoTokenizer.save_pretrained)",
            path.display()
        )));
    }
    let tokenizer = HfTokenizer::from_file(&path).map_err(|e| HfError::Tokenizer(e.message))?;
    match eos_token {
        Some(token) => tokenizer
            .with_eos_token(token)
            .map_err(|e| HfError::Tokenizer(e.message)),
        None => Ok(tokenizer),
    }
}

/// The mask token: config.json's `mask_token_id`, else one of [`MASK_NAMES`] in the tokenizer.
fn mask_token_id(config: &ModelConfig, tokenizer: &HfTokenizer, dir: &Path) -> Result<u32> {
    if let Some(id) = config.mask_token_id {
        return Ok(id);
    }
    MASK_NAMES
        .iter()
        .find_map(|name| tokenizer.token_id(name))
        .ok_or_else(|| HfError::Config {
            path: dir.join("config.json"),
            message: format!(
                "no `mask_token_id`, and the tokenizer has none of {}; add the {} mask token's id to config.json",
                MASK_NAMES.join(", "),
                match config.architecture {
                    Architecture::Llada => "LLaDA",
                    _ => "Dream",
                }
            ),
        })
}

/// Number of weights the architecture has (for the device memory estimate).
pub fn parameter_count(c: &ModelConfig) -> usize {
    let (h, f, rows) = (c.hidden, c.intermediate, c.vocab_rows);
    let kv = c.kv_heads * c.head_dim();
    let (width, d) = (c.attention_width(), c.head_dim());
    let bias = if c.qkv_bias { width + 2 * kv } else { 0 };
    let qk_norm = if c.qk_norm { 2 * d } else { 0 };
    let block = 2 * h + width * h + 2 * kv * h + bias + h * width + 3 * h * f + qk_norm;
    let head = if c.tied_embeddings { 0 } else { rows * h };
    rows * h + c.layers * block + h + head
}
