//! What a plugin says it provides: the descriptor `describe` returns and each component in it.

use super::ComponentKind;
use serde::{Deserialize, Serialize};

/// What `describe` returns: the plugin and every component it provides (the SDK builds it from
/// a plugin's `Plugin` implementation); `#[non_exhaustive]` keeps later fields compatible.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PluginDescriptor {
    /// Plugin name, e.g. `dlm-formal`; must equal the name in the descriptor static (by
    /// convention the crate name). Suites and run manifests refer to plugins by it.
    pub name: String,
    /// Plugin version (by convention the crate version); recorded in every run's manifest, and
    /// a changed version makes `--resume` refuse to mix results.
    pub version: String,
    /// API version the plugin was built against, `major.minor`.
    pub api_version: String,
    /// One line for `dlm-bench list`.
    #[serde(default)]
    pub description: String,
    /// Tasks the plugin provides (names unique among its tasks).
    #[serde(default)]
    pub tasks: Vec<ComponentInfo>,
    /// Models the plugin provides (names unique among its models).
    #[serde(default)]
    pub models: Vec<ComponentInfo>,
    /// Compute device the plugin's models run on by default (e.g. `cpu`).
    #[serde(default)]
    pub device: String,
}

impl PluginDescriptor {
    /// The descriptor of plugin `name` at `version`, built against this crate's
    /// [`API_VERSION`](crate::API_VERSION), with no components yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        PluginDescriptor {
            name: name.into(),
            version: version.into(),
            api_version: crate::API_VERSION.to_string(),
            ..PluginDescriptor::default()
        }
    }

    /// The task or model called `name`, if the plugin provides it.
    pub fn component(&self, kind: ComponentKind, name: &str) -> Option<&ComponentInfo> {
        let list = match kind {
            ComponentKind::Task => &self.tasks,
            ComponentKind::Model => &self.models,
        };
        list.iter().find(|c| c.name == name)
    }
}

/// One task or model a plugin provides. Build it with [`ComponentInfo::new`] (or the SDK's
/// `denoiser_component`); `#[non_exhaustive]` keeps later fields compatible.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ComponentInfo {
    /// Name used in suites (`task:` / `model:`) and in `open`.
    pub name: String,
    /// One line for `dlm-bench list`.
    #[serde(default)]
    pub description: String,
    /// Optional capabilities, e.g. `train`, `loglikelihood`, `time_conditioned`, `oracle`,
    /// `autoregressive` (the model is an AR model: speedups are measured against it).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Sampler names a model supports (empty for tasks).
    #[serde(default)]
    pub samplers: Vec<String>,
    /// What the harness needs to know about each of those samplers (the SDK fills it in), so
    /// that the harness never interprets a sampler's name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sampler_info: Vec<SamplerInfo>,
}

/// One sampler as the harness sees it: how `steps` applies and which parameters it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplerInfo {
    /// The name suites use (`sampler:`).
    pub name: String,
    /// It decodes one token per step, left to right (an AR model's sampler, or left-to-right
    /// decoding of a denoiser): a suite gives it no `steps` (the harness uses the length), and
    /// its cells are the autoregressive baselines of speedups and verdicts.
    pub one_step_per_token: bool,
    /// Names of the `params:` it accepts.
    #[serde(default)]
    pub params: Vec<String>,
    /// A suite may leave out `steps` (then the cell's step count is the length), e.g. a model
    /// replaying generations that carry no step count. Since API 1.2.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steps_optional: bool,
}

impl ComponentInfo {
    /// A component called `name` with no capabilities or samplers yet (add them with
    /// [`ComponentInfo::with_capability`] and [`ComponentInfo::with_sampler`]).
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        ComponentInfo {
            name: name.into(),
            description: description.into(),
            ..ComponentInfo::default()
        }
    }

    /// The same component with one more sampler (its name in `samplers`, its description in
    /// `sampler_info`).
    pub fn with_sampler(mut self, info: SamplerInfo) -> Self {
        self.samplers.push(info.name.clone());
        self.sampler_info.push(info);
        self
    }

    /// Whether the component declares `capability` (see [`ComponentInfo::capabilities`]).
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// The same component with one more capability.
    pub fn with_capability(mut self, capability: &str) -> Self {
        if !self.has(capability) {
            self.capabilities.push(capability.to_string());
        }
        self
    }
}
