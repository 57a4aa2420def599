//! The `dlm-neural` plugin: models `mdm` (every SDK denoiser sampler) and `ar` (sampler `ar`).

use crate::checkpoint::{Checkpoint, CheckpointHeader, PLUGIN_NAME, PLUGIN_VERSION};
use crate::kv_window::CachedMdm;
pub use crate::mdm::MdmDenoiser;
use crate::model::{tokens_tensor, ArCache, KvDtype, ModelKind, NetConfig, Transformer};
use crate::text;
use crate::train::{TrainConfig, Trainer};
use burn::tensor::{Device, Tensor};
use dlm_sdk::device_name::{Backends, DeviceName};
use dlm_sdk::sampler::device::{
    TensorAutoregressive, TensorAutoregressiveModel, TensorDenoiserModel,
};
use dlm_sdk::{
    ComponentInfo, EvaluateReply, GenerateReply, GenerateRequest, Model, ModelOpenConfig, Plugin,
    PluginError, Result, SaveReply, TaskDescription, TrainSettings, TrainStepReply,
};
use serde::Deserialize;
use std::path::PathBuf;

/// The model's `config` in a suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenConfig {
    /// A trained checkpoint.
    #[serde(default)]
    pub checkpoint: Option<PathBuf>,
    /// Refuse the checkpoint unless its fingerprint is this.
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// An untrained model of this architecture (`"paper"`, `"cpu"` or `{hidden, layers, …}`).
    #[serde(default)]
    pub init: Option<InitSpec>,
    /// Seed of the untrained weights.
    #[serde(default)]
    pub seed: u64,
    /// Compute device: `flex` (default; CPU), `cpu`, `wgpu`, `cuda` / `cuda:N`, `tch` (LibTorch's
    /// CPU) / `tch:cpu` / `tch:cuda` / `tch:cuda:N`.
    #[serde(default)]
    pub device: Option<String>,
    /// AR only: use the KV cache (default true); `false` re-runs the whole prefix per token.
    #[serde(default = "yes")]
    pub kv_cache: bool,
    /// AR only, with `kv_cache`: the cache's precision, `f32` (default) or `bf16` (half the
    /// bytes per decoding step; cached logits then differ from uncached ones by about 1e-2 of
    /// their scale). `bf16` runs on `flex` only. See [`KvDtype`].
    #[serde(default)]
    pub kv_cache_dtype: KvDtype,
    /// A Hugging Face `tokenizer.json`: the model's vocabulary is the tokenizer's and it
    /// answers text tasks with text (prompts encoded, completions decoded). Not trainable by
    /// the harness.
    #[serde(default)]
    pub tokenizer: Option<PathBuf>,
    /// With `tokenizer`: the end-of-text token (default: the first of
    /// [`dlm_sdk::tokenizer::EOS_NAMES`] in the vocabulary).
    #[serde(default)]
    pub eos_token: Option<String>,
    /// With `tokenizer`: every prompt gets exactly this many completion positions, whatever
    /// shares its batch (LLaDA's `gen_length`; the batch is left-padded, the padding hidden),
    /// and the cell's length only labels the cell.
    #[serde(default)]
    pub generation_length: Option<usize>,
    /// `mdm` only: block diffusion (BD3-LM, [`crate::block`]), block-causal attention in blocks
    /// of this many positions, trained with clean earlier blocks in context. Absent: the MDM.
    #[serde(default)]
    pub block_size: Option<usize>,
}

fn yes() -> bool {
    true
}

/// A preset name or an explicit architecture.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum InitSpec {
    Preset(String),
    Config(NetConfig),
}

impl InitSpec {
    pub fn net_config(&self) -> Result<NetConfig> {
        match self {
            InitSpec::Preset(name) => NetConfig::preset(name).ok_or_else(|| {
                PluginError::bad_config(format!(
                    "unknown model preset `{name}`; use `paper`, `cpu` or {{hidden, layers, heads, ff_mult}}"
                ))
            }),
            InitSpec::Config(c) => Ok(c.clone()),
        }
    }
}

/// The GPU backends of this build (its Cargo features).
const BACKENDS: Backends = Backends {
    wgpu: cfg!(feature = "wgpu"),
    cuda: cfg!(feature = "cuda"),
    libtorch: cfg!(feature = "tch"),
};

/// Parse a device name ([`DeviceName`]). GPU devices need the matching Cargo feature.
pub fn parse_device(name: Option<&str>) -> Result<Device> {
    burn_device(DeviceName::parse(name, PLUGIN_NAME, BACKENDS)?)
}

/// The Burn device of a parsed name.
fn burn_device(name: DeviceName) -> Result<Device> {
    match name {
        DeviceName::Flex => Ok(Device::flex()),
        #[cfg(feature = "wgpu")]
        DeviceName::Wgpu => Ok(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
        #[cfg(feature = "cuda")]
        DeviceName::Cuda(index) => Ok(Device::cuda(index)),
        #[cfg(feature = "tch")]
        DeviceName::LibTorchCpu | DeviceName::LibTorchCuda(_) => libtorch_device(name),
        #[allow(unreachable_patterns)]
        other => Err(PluginError::unsupported(format!(
            "device {other:?} is not built into dlm-neural"
        ))),
    }
}

/// LibTorch's CPU, or a CUDA GPU LibTorch sees (cuBLAS, cuDNN). Burn 0.22 marks burn-tch
/// deprecated; it is still the way to PyTorch's kernels, so the deprecation is allowed here and
/// only here.
#[cfg(feature = "tch")]
#[allow(deprecated)]
fn libtorch_device(name: DeviceName) -> Result<Device> {
    match name {
        DeviceName::LibTorchCuda(index) => {
            // Without this, the first tensor on a missing GPU panics inside LibTorch.
            let gpus = tch::Cuda::device_count();
            if index as i64 >= gpus {
                return Err(PluginError::bad_config(format!(
                    "device `tch:cuda:{index}`: LibTorch sees {gpus} CUDA device(s) on this machine"
                )));
            }
            Ok(Device::libtorch_cuda(index))
        }
        _ => Ok(Device::libtorch()),
    }
}

/// Open a model for `task` from an open config (checkpoint or fresh initialisation).
pub fn open_checkpoint(
    kind: ModelKind,
    config: &OpenConfig,
    task: &TaskDescription,
    device: &Device,
) -> Result<Checkpoint> {
    let ckpt = match (&config.checkpoint, &config.init) {
        (Some(path), None) => Checkpoint::load(path, config.fingerprint.as_deref(), device)
            .map_err(PluginError::bad_data)?,
        (None, Some(init)) => {
            if config.fingerprint.is_some() {
                return Err(PluginError::bad_config(
                    "`fingerprint` applies to a `checkpoint` only",
                ));
            }
            let net = init
                .net_config()?
                .resolved(task.length)
                .map_err(PluginError::bad_config)?;
            let fresh = Transformer::new(kind, &net, task.vocab_size, config.seed, device);
            Checkpoint {
                net: fresh.with_block_size(config.block_size),
                header: CheckpointHeader::new(kind, net, task.clone(), None, config.seed)
                    .with_block_size(config.block_size),
            }
        }
        _ => {
            return Err(PluginError::bad_config(
                "model config needs exactly one of `checkpoint: PATH` (a trained model) or \
                 `init: paper | cpu | {hidden, layers, heads}` (an untrained one)",
            ))
        }
    };
    check_checkpoint(kind, ckpt, task)
}

/// Refuse a checkpoint of the wrong kind or trained for another task or length.
fn check_checkpoint(
    kind: ModelKind,
    ckpt: Checkpoint,
    task: &TaskDescription,
) -> Result<Checkpoint> {
    let id = &ckpt.header.identity;
    if id.kind != kind {
        return Err(PluginError::bad_config(format!(
            "the checkpoint holds an `{}` model, not `{}`",
            id.kind.as_str(),
            kind.as_str()
        )));
    }
    let trained = &id.task;
    if trained.vocab_size != task.vocab_size || trained.mask_id != task.mask_id {
        return Err(PluginError::bad_config(format!(
            "the model was trained for vocabulary {} (mask {}), the task has {} (mask {})",
            trained.vocab_size, trained.mask_id, task.vocab_size, task.mask_id
        )));
    }
    if task.mask_id as usize != task.vocab_size {
        return Err(PluginError::unsupported(format!(
            "dlm-neural needs mask_id = vocab_size, the task says {} and {}",
            task.mask_id, task.vocab_size
        )));
    }
    if trained.label != task.label || trained.details != task.details {
        return Err(PluginError::bad_config(format!(
            "the model was trained on `{}` ({}), not on `{}` ({})",
            trained.label, trained.details, task.label, task.details
        )));
    }
    if task.length > ckpt.net.max_length() {
        return Err(PluginError::bad_config(format!(
            "the task length {} exceeds the model's max_length {}",
            task.length,
            ckpt.net.max_length()
        )));
    }
    Ok(ckpt)
}

/// The AR model as an [`Autoregressive`](dlm_sdk::sampler::Autoregressive) generator. With `kv_cache` each token costs one
/// incremental forward pass over the new position (O(prefix) attention); without it the whole
/// prefix is re-run (kept for tests and comparisons).
pub struct ArGenerator {
    pub net: Transformer,
    pub device: Device,
    pub label: String,
    pub kv_cache: bool,
    /// The KV cache's precision (f32 unless set).
    pub kv_dtype: KvDtype,
    cache: ArCache,
    /// Uncached path: the tokens fed so far (`batch` rows, BOS first).
    prefix: Vec<Vec<u32>>,
    batch: usize,
    length: usize,
    /// Whether `next` was called since `begin`.
    started: bool,
}

impl ArGenerator {
    pub fn new(net: Transformer, device: Device, label: String, kv_cache: bool) -> Self {
        ArGenerator {
            net,
            device,
            label,
            kv_cache,
            kv_dtype: KvDtype::F32,
            cache: ArCache::default(),
            prefix: Vec::new(),
            batch: 0,
            length: 0,
            started: false,
        }
    }
}

impl ArGenerator {
    /// Append `appended` and return every row's next-token logits over the real tokens,
    /// `[batch, vocab]`, on the device (the protocol of
    /// [`Autoregressive::next`](dlm_sdk::sampler::Autoregressive::next)).
    pub fn next_logits(&mut self, appended: Option<&[u32]>) -> Result<Tensor<2>> {
        let (batch, vocab) = (self.batch, self.net.vocab);
        let fed = self.prefix.first().map_or(0, Vec::len);
        let started = self.started;
        self.started = true;
        let new: Vec<u32> = match appended {
            None if fed == 1 && !started => vec![vocab as u32; batch],
            None => {
                return Err(PluginError::internal(
                    "`next(None)` is only valid right after `begin`",
                ))
            }
            Some(_) if !started => {
                return Err(PluginError::internal(
                    "the first `next` after `begin` appends nothing (`None`)",
                ))
            }
            Some(tokens) => {
                if tokens.len() != batch {
                    return Err(PluginError::internal(format!(
                        "{} appended tokens for a batch of {batch}",
                        tokens.len()
                    )));
                }
                if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
                    return Err(PluginError::internal(format!(
                        "appended token {bad} is outside 0..{vocab}"
                    )));
                }
                if fed >= self.length {
                    return Err(PluginError::internal(format!(
                        "more than {} positions fed",
                        self.length
                    )));
                }
                for (row, &t) in self.prefix.iter_mut().zip(tokens) {
                    row.push(t);
                }
                tokens.to_vec()
            }
        };
        let logits = if self.kv_cache {
            let x = tokens_tensor(&new, batch, 1, &self.device);
            self.net.forward_cached(x, &mut self.cache)
        } else {
            let n = self.prefix[0].len();
            let flat: Vec<u32> = self.prefix.iter().flatten().copied().collect();
            let x = tokens_tensor(&flat, batch, n, &self.device);
            self.net.forward(x).narrow(1, n - 1, 1)
        };
        Ok(logits.narrow(2, 0, vocab).reshape([batch, vocab]))
    }
}

/// The device path, which `ar` samples with; the host path (the reference in tests and
/// benchmarks) is the SDK's [`OnHost`](dlm_sdk::sampler::device::OnHost) over it.
impl TensorAutoregressive for ArGenerator {
    fn vocab_size(&self) -> usize {
        self.net.vocab
    }

    fn device(&self) -> String {
        self.label.clone()
    }

    fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
        if length > self.net.max_length() {
            return Err(PluginError::bad_config(format!(
                "length {length} exceeds the model's max_length {}",
                self.net.max_length()
            )));
        }
        self.batch = batch;
        self.length = length;
        self.cache = ArCache::with_capacity(length).with_dtype(self.kv_dtype);
        self.started = false;
        self.prefix = vec![vec![self.net.vocab as u32]; batch];
        Ok(())
    }

    fn next_logits(&mut self, appended: Option<&[u32]>) -> Result<Tensor<2>> {
        ArGenerator::next_logits(self, appended)
    }

    fn synchronize(&mut self) {
        let _ = self.device.sync();
    }
}

/// Open the `mdm` or `ar` model: for generation (from `config`, or from the checkpoint the
/// harness trained) or, when `open.train` is set, for training.
pub fn open_model(kind: ModelKind, open: &ModelOpenConfig) -> Result<Box<dyn Model>> {
    let config: OpenConfig = serde_json::from_value(open.config.clone())
        .map_err(|e| PluginError::bad_config(format!("model config: {e}")))?;
    check_kv_cache_dtype(kind, &config)?;
    let device_name = DeviceName::parse(config.device.as_deref(), PLUGIN_NAME, BACKENDS)?;
    let device = burn_device(device_name)?;
    let label = device_name.label();
    let tokenizer = text::open_tokenizer(config.tokenizer.as_deref(), config.eos_token.as_deref())?;
    if config.generation_length.is_some() && tokenizer.is_none() {
        return Err(PluginError::bad_config(
            "`generation_length` applies with a `tokenizer: PATH` only (a task's own vocabulary generates at the cell's length)",
        ));
    }
    let task = &text::network_task(open, tokenizer.as_ref())?;
    crate::block::check_block_size(kind, config.block_size, task.length, tokenizer.is_some())?;
    if let Some(settings) = &open.train {
        return Ok(Box::new(TrainingModel::new(
            kind, &config, open, settings, device,
        )?));
    }
    let ckpt = match &open.checkpoint {
        Some(trained) => {
            if config.checkpoint.is_some() {
                return Err(PluginError::bad_config(
                    "a model the harness trains takes its weights from the training; remove `checkpoint`",
                ));
            }
            let path = std::path::Path::new(&trained.path);
            let ckpt =
                Checkpoint::load(path, Some(&trained.fingerprint), &device).map_err(|e| {
                    PluginError::bad_data(format!("{e}; delete {} to retrain it", path.display()))
                })?;
            if let Some(init) = &config.init {
                let wanted = init
                    .net_config()?
                    .resolved(task.length)
                    .map_err(PluginError::bad_config)?;
                if wanted != ckpt.header.identity.net {
                    return Err(PluginError::bad_config(format!(
                        "checkpoint {} holds architecture {:?}, the suite asks for {:?}",
                        path.display(),
                        ckpt.header.identity.net,
                        wanted
                    )));
                }
            }
            check_checkpoint(kind, ckpt, task)?
        }
        None => open_checkpoint(kind, &config, task, &device)?,
    };
    crate::block::check_checkpoint_block_size(config.block_size, &ckpt)?;
    let (generation_length, max_length) = (config.generation_length, ckpt.net.max_length());
    // What the run records of this model beside the sampler: every default resolved (Burn's
    // default float, f32, is the compute dtype on every device).
    let mut settings = serde_json::json!({
        "dtype": "f32",
        "device": label.clone(),
        "generation_length": generation_length,
    });
    if kind == ModelKind::Ar {
        settings["kv_cache"] = serde_json::json!(config.kv_cache);
        settings["kv_cache_dtype"] = serde_json::json!(config.kv_cache_dtype);
    }
    let model = match kind {
        ModelKind::Mdm => text::wrap(
            TensorDenoiserModel {
                denoiser: text::Padded::new(CachedMdm::new(MdmDenoiser {
                    net: ckpt.net,
                    device,
                    label,
                })),
            },
            tokenizer,
            open,
            generation_length,
            max_length,
        ),
        ModelKind::Ar => text::wrap(
            TensorAutoregressiveModel {
                model: ArGenerator {
                    kv_dtype: config.kv_cache_dtype,
                    ..ArGenerator::new(ckpt.net, device, label, config.kv_cache)
                },
            },
            tokenizer,
            open,
            generation_length,
            max_length,
        ),
    }?;
    let model = crate::block::with_settings(model, settings, config.block_size);
    Ok(model)
}

/// `kv_cache_dtype: bf16` needs the `ar` model, its cache and the `flex` device (the only
/// backend whose attention reads an f32 query over bf16 keys and values).
fn check_kv_cache_dtype(kind: ModelKind, config: &OpenConfig) -> Result<()> {
    if config.kv_cache_dtype == KvDtype::F32 {
        return Ok(());
    }
    if kind != ModelKind::Ar || !config.kv_cache {
        return Err(PluginError::bad_config(
            "model config: `kv_cache_dtype` applies to the `ar` model with `kv_cache: true`; \
             remove it or enable the cache",
        ));
    }
    match config.device.as_deref() {
        None | Some("flex") => Ok(()),
        Some(other) => Err(PluginError::bad_config(format!(
            "model config: `kv_cache_dtype: bf16` runs on the `flex` device only, not `{other}`; \
             remove it or use `device: flex`"
        ))),
    }
}

/// Training options a suite's `train:` mapping may set for `dlm-neural` (the harness handles
/// `steps`, `batch_size`, `seed` and the validation settings itself).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainOptions {
    /// Peak learning rate (the paper: 3e-4).
    #[serde(default)]
    pub lr: Option<f64>,
    /// Share of the steps spent in linear warm-up (the paper: 0.1).
    #[serde(default)]
    pub warmup_fraction: Option<f64>,
    /// AdamW decoupled weight decay (default 0).
    #[serde(default)]
    pub weight_decay: Option<f64>,
    /// Global gradient-norm clip (default 1.0; `null` turns it off).
    #[serde(default, with = "serde_with_null")]
    pub grad_clip: Option<Option<f64>>,
}

/// Distinguishes an absent `grad_clip` (keep the default) from `grad_clip: null` (no clipping).
mod serde_with_null {
    use serde::{Deserialize, Deserializer};
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
        Option::<f64>::deserialize(d).map(Some)
    }
}

impl TrainOptions {
    /// The full training configuration for `settings`.
    pub fn train_config(&self, settings: &TrainSettings) -> TrainConfig {
        let mut c = TrainConfig::new(settings.steps, settings.batch_size);
        c.seed = settings.seed;
        c.data = settings.data.clone();
        if let Some(lr) = self.lr {
            c.lr = lr;
        }
        if let Some(w) = self.warmup_fraction {
            c.warmup_fraction = w;
        }
        if let Some(w) = self.weight_decay {
            c.weight_decay = w;
        }
        if let Some(clip) = self.grad_clip {
            c.grad_clip = clip;
        }
        c
    }
}

/// A model opened for training: answers `train_step`, `evaluate` and `save`.
pub struct TrainingModel {
    kind: ModelKind,
    trainer: Trainer,
}

impl TrainingModel {
    fn new(
        kind: ModelKind,
        config: &OpenConfig,
        open: &ModelOpenConfig,
        settings: &TrainSettings,
        device: Device,
    ) -> Result<Self> {
        let task = &open.task.description;
        if task.mask_id as usize != task.vocab_size {
            return Err(PluginError::unsupported(format!(
                "dlm-neural needs mask_id = vocab_size, the task says {} and {}",
                task.mask_id, task.vocab_size
            )));
        }
        let init = match (&config.init, &config.checkpoint) {
            (Some(init), None) => init,
            _ => return Err(PluginError::bad_config(
                "a model the harness trains needs `init: cpu | paper | {hidden, layers, heads}` \
                     (its architecture) and no `checkpoint`",
            )),
        };
        let options: TrainOptions = match &settings.options {
            serde_json::Value::Null => serde_json::from_value(serde_json::json!({})),
            v => serde_json::from_value(v.clone()),
        }
        .map_err(|e| {
            PluginError::bad_config(format!(
                "train: {e} (dlm-neural's training options are lr, warmup_fraction, weight_decay, grad_clip)"
            ))
        })?;
        let train_config = options.train_config(settings);
        let trainer = Trainer::new(kind, &init.net_config()?, task, &train_config, &device)
            .and_then(|t| t.with_block_size(config.block_size))
            .map_err(PluginError::bad_config)?;
        Ok(TrainingModel { kind, trainer })
    }
}

impl Model for TrainingModel {
    fn generate(&mut self, _request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        Err(PluginError::unsupported(
            "this instance was opened for training; open the saved checkpoint to generate",
        ))
    }

    fn train_step(
        &mut self,
        step: usize,
        batch: &[Vec<u32>],
        prompt_lengths: &[usize],
    ) -> Result<TrainStepReply> {
        if step != self.trainer.steps_done() {
            return Err(PluginError::internal(format!(
                "train_step {step} arrived after {} steps; steps must come in order",
                self.trainer.steps_done()
            )));
        }
        let p = self
            .trainer
            .step(batch, prompt_lengths)
            .map_err(PluginError::internal)?;
        Ok(TrainStepReply {
            loss: p.loss,
            lr: p.lr,
        })
    }

    fn evaluate(&mut self, batch: &[Vec<u32>], prompt_lengths: &[usize]) -> Result<EvaluateReply> {
        let nll = self
            .trainer
            .evaluate(&[batch.to_vec()], &[prompt_lengths.to_vec()])
            .map_err(PluginError::internal)?;
        Ok(EvaluateReply {
            nll_per_token: nll,
            // The MDM's loss is MDLM's continuous-time ELBO: an upper bound on the NLL.
            bound: self.kind == ModelKind::Mdm,
        })
    }

    fn save(&mut self, path: &std::path::Path) -> Result<SaveReply> {
        let ckpt = self.trainer.checkpoint().map_err(PluginError::internal)?;
        ckpt.save(path).map_err(PluginError::internal)?;
        Ok(SaveReply {
            fingerprint: ckpt.header.identity.fingerprint(),
        })
    }
}

/// The plugin.
pub struct NeuralPlugin;

impl Plugin for NeuralPlugin {
    const NAME: &'static str = PLUGIN_NAME;
    const VERSION: &'static str = PLUGIN_VERSION;
    const DESCRIPTION: &'static str =
        "Transformer MDM (MDLM, SUBS, no time conditioning) and AR model of the same architecture, on Burn";
    const HAS_MODELS: bool = true;

    fn models() -> Vec<ComponentInfo> {
        vec![
            dlm_sdk::denoiser_component(
                "mdm",
                "masked diffusion transformer (MDLM loss, SUBS parameterisation, no time conditioning); \
                 config: {checkpoint: PATH} or {init: cpu | paper | {hidden, layers, heads}, seed}, \
                 optionally tokenizer: PATH (a Hugging Face tokenizer.json: text tasks answered with text) \
                 with eos_token and generation_length; trainable by the harness (`train:`) without a tokenizer; \
                 a key/value cache for the samplers' `cache: prefix | dual`",
                false,
            )
            .with_capability("train")
            // Its Monte-Carlo ELBO (the SDK's estimator; rows padded with masks to the task's
            // length), on a task's own vocabulary and without `block_size`.
            .with_capability("loglikelihood")
            .with_config_of::<OpenConfig>(&["checkpoint", "tokenizer"])
            .with_length_override("generation_length"),
            ComponentInfo::new(
                "ar",
                "autoregressive transformer of the same architecture with a KV cache; \
                 config: {checkpoint: PATH} or {init: …, seed}, optionally tokenizer: PATH with eos_token and generation_length",
            )
            .with_capability("autoregressive")
            .with_capability("train")
            // Exact: the chain rule over its next-token distributions.
            .with_capability("loglikelihood")
            .with_sampler(dlm_sdk::sampler::info("ar"))
            .with_config_of::<OpenConfig>(&["checkpoint", "tokenizer"])
            .with_length_override("generation_length"),
        ]
    }

    fn open_model(name: &str, open: ModelOpenConfig) -> Result<Box<dyn Model>> {
        match name {
            "mdm" => open_model(ModelKind::Mdm, &open),
            "ar" => open_model(ModelKind::Ar, &open),
            other => Err(PluginError::bad_config(format!(
                "plugin `{PLUGIN_NAME}` provides models `mdm` and `ar`, not `{other}`"
            ))),
        }
    }
}
