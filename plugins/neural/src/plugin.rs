//! The `dlm-neural` plugin: models `mdm` (every SDK denoiser sampler) and `ar` (sampler `ar`).

use crate::checkpoint::{Checkpoint, CheckpointHeader, PLUGIN_NAME, PLUGIN_VERSION};
use crate::model::{
    subs_log_probs, to_host, tokens_tensor, ArCache, ModelKind, NetConfig, Transformer,
};
use burn::tensor::activation::softmax;
use burn::tensor::Device;
use dlm_sdk::sampler::{Autoregressive, AutoregressiveModel};
use dlm_sdk::{
    ComponentInfo, Denoiser, DenoiserModel, Model, ModelOpenConfig, Plugin, PluginError, Result,
    TaskDescription,
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
    /// Compute device: `flex` (default; CPU), `cpu`, `wgpu`, `cuda` / `cuda:N`, `tch`.
    #[serde(default)]
    pub device: Option<String>,
    /// AR only: use the KV cache (default true); `false` re-runs the whole prefix per token.
    #[serde(default = "yes")]
    pub kv_cache: bool,
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
                PluginError(format!(
                    "unknown model preset `{name}`; use `paper`, `cpu` or {{hidden, layers, heads, ff_mult}}"
                ))
            }),
            InitSpec::Config(c) => Ok(c.clone()),
        }
    }
}

/// Parse a device name. GPU devices need the matching Cargo feature.
pub fn parse_device(name: Option<&str>) -> Result<Device> {
    match name.unwrap_or("flex") {
        "flex" => Ok(Device::flex()),
        #[cfg(feature = "wgpu")]
        "wgpu" => Ok(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
        #[cfg(feature = "cuda")]
        "cuda" => Ok(Device::cuda(0)),
        #[cfg(feature = "cuda")]
        s if s.starts_with("cuda:") => s[5..]
            .parse::<usize>()
            .map(Device::cuda)
            .map_err(|_| PluginError(format!("bad CUDA device `{s}`"))),
        #[cfg(feature = "tch")]
        "tch" => Ok(Device::libtorch()),
        other => Err(PluginError(format!(
            "unknown or unavailable device `{other}`: this build of dlm-neural supports {}",
            available_devices().join(", ")
        ))),
    }
}

fn available_devices() -> Vec<&'static str> {
    let mut v = vec!["flex"];
    if cfg!(feature = "wgpu") {
        v.push("wgpu");
    }
    if cfg!(feature = "cuda") {
        v.push("cuda[:N]");
    }
    if cfg!(feature = "tch") {
        v.push("tch");
    }
    v
}

fn device_label(name: Option<&str>) -> String {
    match name.unwrap_or("flex") {
        "flex" => "cpu".to_string(),
        other => other.to_string(),
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
        (Some(path), None) => Checkpoint::load(path, config.fingerprint.as_deref(), device)?,
        (None, Some(init)) => {
            if config.fingerprint.is_some() {
                return Err("`fingerprint` applies to a `checkpoint` only".into());
            }
            let net = init.net_config()?.resolved(task.length)?;
            Checkpoint {
                net: Transformer::new(kind, &net, task.vocab_size, config.seed, device),
                header: CheckpointHeader::new(kind, net, task.clone(), None, config.seed),
            }
        }
        _ => {
            return Err(PluginError(
                "model config needs exactly one of `checkpoint: PATH` (a trained model) or \
                 `init: paper | cpu | {hidden, layers, heads}` (an untrained one)"
                    .into(),
            ))
        }
    };
    let id = &ckpt.header.identity;
    if id.kind != kind {
        return Err(PluginError(format!(
            "the checkpoint holds an `{}` model, not `{}`",
            id.kind.as_str(),
            kind.as_str()
        )));
    }
    let trained = &id.task;
    if trained.vocab_size != task.vocab_size || trained.mask_id != task.mask_id {
        return Err(PluginError(format!(
            "the model was trained for vocabulary {} (mask {}), the task has {} (mask {})",
            trained.vocab_size, trained.mask_id, task.vocab_size, task.mask_id
        )));
    }
    if task.mask_id as usize != task.vocab_size {
        return Err(PluginError(format!(
            "dlm-neural needs mask_id = vocab_size, the task says {} and {}",
            task.mask_id, task.vocab_size
        )));
    }
    if trained.label != task.label || trained.details != task.details {
        return Err(PluginError(format!(
            "the model was trained on `{}` ({}), not on `{}` ({})",
            trained.label, trained.details, task.label, task.details
        )));
    }
    if task.length > ckpt.net.max_length() {
        return Err(PluginError(format!(
            "the task length {} exceeds the model's max_length {}",
            task.length,
            ckpt.net.max_length()
        )));
    }
    Ok(ckpt)
}

/// The MDM as a [`Denoiser`]: SUBS probabilities over the real tokens.
pub struct MdmDenoiser {
    pub net: Transformer,
    pub device: Device,
    pub label: String,
}

impl MdmDenoiser {
    /// Probabilities `batch × length × vocab` (row-major) of one forward pass.
    pub fn probabilities(&self, tokens: &[u32], batch: usize, length: usize) -> Result<Vec<f32>> {
        let vocab = self.net.vocab;
        if tokens.len() != batch * length {
            return Err(PluginError(format!(
                "{} token ids for a {batch} × {length} batch",
                tokens.len()
            )));
        }
        if length > self.net.max_length() {
            return Err(PluginError(format!(
                "length {length} exceeds the model's max_length {}",
                self.net.max_length()
            )));
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize > vocab) {
            return Err(PluginError(format!(
                "token id {bad} is outside 0..={vocab}"
            )));
        }
        let xt = tokens_tensor(tokens, batch, length, &self.device);
        let logp = subs_log_probs(self.net.forward(xt.clone()), xt, vocab);
        Ok(to_host(logp.narrow(2, 0, vocab).exp()))
    }
}

impl Denoiser for MdmDenoiser {
    fn vocab_size(&self) -> usize {
        self.net.vocab
    }

    fn device(&self) -> String {
        self.label.clone()
    }

    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let probs = self.probabilities(tokens, batch, length)?;
        if out.len() != probs.len() {
            return Err(PluginError(format!(
                "output buffer holds {} values, expected {}",
                out.len(),
                probs.len()
            )));
        }
        for (o, p) in out.iter_mut().zip(probs) {
            *o = p as f64;
        }
        Ok(())
    }

    fn synchronize(&mut self) {
        let _ = self.device.sync();
    }
}

/// The AR model as an [`Autoregressive`] generator. With `kv_cache` each token costs one
/// incremental forward pass over the new position (O(prefix) attention); without it the whole
/// prefix is re-run (kept for tests and comparisons).
pub struct ArGenerator {
    pub net: Transformer,
    pub device: Device,
    pub label: String,
    pub kv_cache: bool,
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
            cache: ArCache::default(),
            prefix: Vec::new(),
            batch: 0,
            length: 0,
            started: false,
        }
    }
}

impl Autoregressive for ArGenerator {
    fn vocab_size(&self) -> usize {
        self.net.vocab
    }

    fn device(&self) -> String {
        self.label.clone()
    }

    fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
        if length > self.net.max_length() {
            return Err(PluginError(format!(
                "length {length} exceeds the model's max_length {}",
                self.net.max_length()
            )));
        }
        self.batch = batch;
        self.length = length;
        self.cache = ArCache::default();
        self.started = false;
        self.prefix = vec![vec![self.net.vocab as u32]; batch];
        Ok(())
    }

    fn next(&mut self, appended: Option<&[u32]>, out: &mut [f64]) -> Result<()> {
        let (batch, vocab) = (self.batch, self.net.vocab);
        if out.len() != batch * vocab {
            return Err(PluginError(format!(
                "output buffer holds {} values, expected {}",
                out.len(),
                batch * vocab
            )));
        }
        let fed = self.prefix.first().map_or(0, Vec::len);
        let started = self.started;
        self.started = true;
        let new: Vec<u32> = match appended {
            None if fed == 1 && !started => vec![vocab as u32; batch],
            None => return Err("`next(None)` is only valid right after `begin`".into()),
            Some(_) if !started => {
                return Err("the first `next` after `begin` appends nothing (`None`)".into())
            }
            Some(tokens) => {
                if tokens.len() != batch {
                    return Err(PluginError(format!(
                        "{} appended tokens for a batch of {batch}",
                        tokens.len()
                    )));
                }
                if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
                    return Err(PluginError(format!(
                        "appended token {bad} is outside 0..{vocab}"
                    )));
                }
                if fed >= self.length {
                    return Err(PluginError(format!(
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
        let probs = to_host(softmax(logits.narrow(2, 0, vocab), 2));
        for (o, p) in out.iter_mut().zip(probs) {
            *o = p as f64;
        }
        Ok(())
    }

    fn synchronize(&mut self) {
        let _ = self.device.sync();
    }
}

/// Open the `mdm` or `ar` model.
pub fn open_model(kind: ModelKind, open: &ModelOpenConfig) -> Result<Box<dyn Model>> {
    let config: OpenConfig = serde_json::from_value(open.config.clone())
        .map_err(|e| PluginError(format!("model config: {e}")))?;
    let device = parse_device(config.device.as_deref())?;
    let label = device_label(config.device.as_deref());
    let ckpt = open_checkpoint(kind, &config, &open.task.description, &device)?;
    Ok(match kind {
        ModelKind::Mdm => Box::new(DenoiserModel::new(MdmDenoiser {
            net: ckpt.net,
            device,
            label,
        })),
        ModelKind::Ar => Box::new(AutoregressiveModel {
            model: ArGenerator::new(ckpt.net, device, label, config.kv_cache),
        }),
    })
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
                 config: {checkpoint: PATH} or {init: cpu | paper | {hidden, layers, heads}, seed}",
                false,
            ),
            ComponentInfo {
                name: "ar".to_string(),
                description: "autoregressive transformer of the same architecture with a KV cache; \
                              config: {checkpoint: PATH} or {init: …, seed}"
                    .to_string(),
                capabilities: vec!["autoregressive".to_string()],
                samplers: vec!["ar".to_string()],
            },
        ]
    }

    fn open_model(name: &str, open: ModelOpenConfig) -> Result<Box<dyn Model>> {
        match name {
            "mdm" => open_model(ModelKind::Mdm, &open),
            "ar" => open_model(ModelKind::Ar, &open),
            other => Err(PluginError(format!(
                "plugin `{PLUGIN_NAME}` provides models `mdm` and `ar`, not `{other}`"
            ))),
        }
    }
}
