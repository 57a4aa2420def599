//! The `dlm-hf` plugin: model `checkpoint`, a LLaDA or Dream checkpoint folder answering text
//! tasks through every SDK denoiser sampler, and model `ar-checkpoint`, a LLaMA or Qwen2
//! checkpoint folder decoded by the `ar` sampler with a KV cache.

use crate::checkpoint::{parse_dtype, ArCheckpoint, Checkpoint};
use crate::error::HfError;
use burn::tensor::{DType, Device};
use dlm_sdk::device_name::{Backends, DeviceName};
use dlm_sdk::sampler::device::{TensorAutoregressiveModel, TensorDenoiserModel};
use dlm_sdk::settings::WithSettings;
use dlm_sdk::tokenizer::TextModel;
use dlm_sdk::{ComponentInfo, Model, ModelOpenConfig, Plugin, PluginError, Result};
use serde::Deserialize;
use std::path::PathBuf;

/// The plugin's name.
pub const PLUGIN_NAME: &str = "dlm-hf";

/// The model's `config` in a suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenConfig {
    /// The checkpoint folder: config.json, model.safetensors (or shards with
    /// model.safetensors.index.json) and tokenizer.json. A declared path key: the harness
    /// joins a relative one to the suite file's folder.
    pub path: PathBuf,
    /// Compute dtype: `f32` (default), `f16` or `bf16`; weights stored in another of the three
    /// are converted as they load.
    #[serde(default)]
    pub dtype: Option<String>,
    /// Compute device: `flex` (default; CPU), `cpu`, and with the Cargo features `wgpu`,
    /// `cuda` / `cuda:N`, `tch` (LibTorch: `tch`, `tch:cpu`, `tch:cuda`, `tch:cuda:N`).
    #[serde(default)]
    pub device: Option<String>,
    /// The end-of-text token (default: the first of [`dlm_sdk::tokenizer::EOS_NAMES`] in the
    /// vocabulary).
    #[serde(default)]
    pub eos_token: Option<String>,
    /// LLaDA's `gen_length`: every prompt gets a completion region of exactly this many
    /// tokens, whatever shares its batch (the batch is left-padded, the padding hidden from
    /// attention), and whatever the suite's `lengths`, which then only label the cells.
    /// Without it the region is what the cell's length leaves after each prompt.
    #[serde(default)]
    pub generation_length: Option<usize>,
    /// Whether the samplers see the network's whole output row, padded ids and the mask
    /// token's column included, as LLaDA's and Dream's reference decoders do (default `true`);
    /// `false`: only the tokenizer's ids, never the mask token.
    #[serde(default)]
    pub full_row: Option<bool>,
}

/// The GPU backends of this build (its Cargo features).
const BACKENDS: Backends = Backends {
    wgpu: cfg!(feature = "wgpu"),
    cuda: cfg!(feature = "cuda"),
    libtorch: cfg!(feature = "tch"),
};

/// Parse a device name ([`DeviceName`]) into the Burn device and the label timings record.
/// GPU devices need the matching Cargo feature.
pub fn parse_device(name: Option<&str>) -> std::result::Result<(Device, String), HfError> {
    let name =
        DeviceName::parse(name, PLUGIN_NAME, BACKENDS).map_err(|e| HfError::Setting(e.message))?;
    let device = match name {
        DeviceName::Flex => Device::flex(),
        #[cfg(feature = "wgpu")]
        DeviceName::Wgpu => Device::wgpu(burn::tensor::DeviceKind::DefaultDevice),
        #[cfg(feature = "cuda")]
        DeviceName::Cuda(index) => Device::cuda(index),
        #[cfg(feature = "tch")]
        DeviceName::LibTorchCpu | DeviceName::LibTorchCuda(_) => libtorch_device(name)?,
        #[allow(unreachable_patterns)]
        other => {
            return Err(HfError::Setting(format!(
                "device {other:?} is not built into dlm-hf"
            )))
        }
    };
    Ok((device, name.label()))
}

/// LibTorch's CPU, or a CUDA GPU LibTorch sees, as in dlm-neural. Burn 0.22 marks burn-tch
/// deprecated; it is still the way to PyTorch's kernels, so the deprecation is allowed here.
#[cfg(feature = "tch")]
#[allow(deprecated)]
fn libtorch_device(name: DeviceName) -> std::result::Result<Device, HfError> {
    match name {
        DeviceName::LibTorchCuda(index) => {
            // Without this, the first tensor on a missing GPU panics inside LibTorch.
            let gpus = tch::Cuda::device_count();
            if index as i64 >= gpus {
                return Err(HfError::Setting(format!(
                    "device `tch:cuda:{index}`: LibTorch sees {gpus} CUDA device(s) on this machine"
                )));
            }
            Ok(Device::libtorch_cuda(index))
        }
        _ => Ok(Device::libtorch()),
    }
}

/// Open model `checkpoint` (diffusion) or, with `autoregressive`, `ar-checkpoint` for the
/// task in `open`.
pub fn open_checkpoint_model(
    open: &ModelOpenConfig,
    autoregressive: bool,
) -> Result<Box<dyn Model>> {
    let config: OpenConfig = serde_json::from_value(open.config.clone()).map_err(|e| {
        PluginError::bad_config(format!(
            "model config: {e} (dlm-hf's checkpoints take path, dtype, device, eos_token, generation_length, full_row)"
        ))
    })?;
    if open.train.is_some() || open.checkpoint.is_some() {
        return Err(PluginError::unsupported(
            "dlm-hf's checkpoints are not trained by the harness; remove `train:` from the model",
        ));
    }
    let task = &open.task.description;
    let Some(text) = &task.text else {
        return Err(PluginError::unsupported(format!(
            "task `{}` is not a text task; a Hugging Face checkpoint answers text tasks (gsm8k, arith, mbpp, …) with its own tokenizer",
            task.label
        )));
    };
    let (device, label) = parse_device(config.device.as_deref())?;
    let dtype = parse_dtype(config.dtype.as_deref())?;
    let (path, eos) = (&config.path, config.eos_token.as_deref());
    let stop = text.stop.clone();
    let eos_hint =
        |e: PluginError| PluginError::bad_config(format!("{e} (`eos_token` in the model config)"));
    let (model, max): (Box<dyn Model>, usize) = if autoregressive {
        let ckpt = ArCheckpoint::open(path, &device, &label, dtype, eos)?;
        let max = ckpt.generator.net.config.max_length;
        let ar = TensorAutoregressiveModel {
            model: ckpt.generator,
        };
        let model = TextModel::new(ar, ckpt.tokenizer, stop).map_err(eos_hint)?;
        (fixed_generation(model, config.generation_length, max)?, max)
    } else {
        let ckpt = Checkpoint::open(path, &device, &label, dtype, eos)?;
        let max = ckpt.denoiser.net.config.max_length;
        let block_size = ckpt.denoiser.net.config.block_size;
        let denoiser = TensorDenoiserModel {
            denoiser: ckpt.denoiser.with_full_row(config.full_row.unwrap_or(true)),
        };
        let length = config.generation_length;
        let model = match block_size {
            None => {
                let model = TextModel::new(denoiser, ckpt.tokenizer, stop).map_err(eos_hint)?;
                fixed_generation(model, length, max)?
            }
            // Block diffusion (SDAR): the sampler's blocks are the checkpoint's.
            Some(block_size) => {
                let model = crate::block_decode::BlockDiffusionModel {
                    model: denoiser,
                    block_size,
                };
                let model = TextModel::new(model, ckpt.tokenizer, stop).map_err(eos_hint)?;
                fixed_generation(model, length, max)?
            }
        };
        (model, max)
    };
    // What the run records of this model beside the sampler: every default resolved.
    let mut settings = serde_json::json!({
        "dtype": dtype_name(dtype),
        "device": label,
        "generation_length": config.generation_length,
    });
    if !autoregressive {
        settings["full_row"] = serde_json::json!(config.full_row.unwrap_or(true));
    }
    let model: Box<dyn Model> = Box::new(WithSettings::new(model, settings));
    if task.length > max && config.generation_length.is_none() {
        return Err(PluginError::bad_config(format!(
            "the task's length {} exceeds the {} positions of {} (config.json); lower `lengths`",
            task.length,
            max,
            path.display()
        )));
    }
    Ok(model)
}

/// The compute dtype as a suite names it.
fn dtype_name(dtype: DType) -> String {
    match dtype {
        DType::F32 => "f32".into(),
        DType::F16 => "f16".into(),
        DType::BF16 => "bf16".into(),
        other => format!("{other:?}"),
    }
}

/// `model`, with a fixed completion region when `generation_length` is set.
fn fixed_generation<M: Model + 'static>(
    model: TextModel<M>,
    generation_length: Option<usize>,
    max_length: usize,
) -> Result<Box<dyn Model>> {
    Ok(match generation_length {
        None => Box::new(model),
        Some(tokens) => Box::new(model.with_generation_length(tokens, max_length)?),
    })
}

/// The plugin.
pub struct HfPlugin;

impl Plugin for HfPlugin {
    const NAME: &'static str = PLUGIN_NAME;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str =
        "Hugging Face checkpoints of diffusion LLMs (LLaDA, Dream) with their tokenizers, on Burn";
    const HAS_MODELS: bool = true;

    fn models() -> Vec<ComponentInfo> {
        let ar = dlm_sdk::sampler::info("ar");
        vec![
            dlm_sdk::denoiser_component(
            "checkpoint",
            "a LLaDA (LLaDAModelLM), Dream (DreamModel) or SDAR (SDARForCausalLM, block \
             diffusion; its own sampler `sequential`) checkpoint folder: config.json, \
             safetensors weights, tokenizer.json; config: {path: DIR, dtype?: f32|f16|bf16, \
             device?: flex|wgpu|cuda[:N]|tch[:cpu|:cuda[:N]], eos_token?, generation_length?, full_row?}; answers text tasks with text",
                false,
            )
            .with_sampler(dlm_sdk::sampler::Sampler::info(
                &crate::block_decode::Sequential,
            ))
            .with_config_of::<OpenConfig>(&["path"])
            .with_length_override("generation_length"),
            ComponentInfo::new(
                "ar-checkpoint",
                "a LLaMA (LlamaForCausalLM) or Qwen2 (Qwen2ForCausalLM) checkpoint folder, \
                 decoded token by token with a KV cache; the same config as `checkpoint`",
            )
            .with_capability("autoregressive")
            .with_sampler(ar)
            .with_config_of::<OpenConfig>(&["path"])
            .with_length_override("generation_length"),
        ]
    }

    fn open_model(name: &str, open: ModelOpenConfig) -> Result<Box<dyn Model>> {
        match name {
            "checkpoint" => open_checkpoint_model(&open, false),
            "ar-checkpoint" => open_checkpoint_model(&open, true),
            other => Err(PluginError::bad_config(format!(
                "plugin `{PLUGIN_NAME}` provides the models `checkpoint` and `ar-checkpoint`, not `{other}`"
            ))),
        }
    }
}
