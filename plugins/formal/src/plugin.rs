//! The plugin face of the formal languages: tasks `ngram` and `hmm`, and the exact oracle
//! denoiser `oracle`, exported through `dlm_sdk::export_plugin!`.
//!
//! Task configuration (suite `config:`), all keys optional except `order` for `ngram`:
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `order` | n of the n-gram (`ngram` only) | — |
//! | `states` | hidden states (`hmm` only) | 32 |
//! | `variant` | `ter` (threshold 0, full support) or `ser` (Table 1 threshold) | `ter` |
//! | `seed` | seed of the language's parameters | 0 |
//! | `vocab` | vocabulary size | 8 |
//! | `temperature` | sharpening temperature | Table 1 (2, or 3.2 for the HMM) |
//! | `threshold` | pruning threshold; overrides `variant` | Table 1 for `ser` |
//!
//! The oracle takes no configuration: it serves the language of the task it is bound to.

use crate::language::{Language, LanguageError, SequenceScore};
use dlm_sdk::sampler::sample_rng;
use dlm_sdk::{
    denoiser_component, ComponentInfo, Denoiser, DenoiserModel, Model, ModelOpenConfig, Plugin,
    PluginError, Result, SampleReferenceRequest, SampleScore, Task, TaskDescription,
};
use serde::Deserialize;
use std::collections::BTreeMap;

pub const PLUGIN_NAME: &str = "dlm-formal";

/// Stream tag so reference samples never share a random stream with a model's samples.
const REFERENCE_STREAM: u64 = 0x5EF0_0000_0000_0000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum VariantName {
    #[default]
    Ter,
    Ser,
}

/// A language's configuration as a suite writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageConfig {
    #[serde(default)]
    pub order: Option<usize>,
    #[serde(default)]
    pub states: Option<usize>,
    #[serde(default)]
    pub variant: VariantName,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub vocab: Option<usize>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub threshold: Option<f64>,
}

/// Table 1 of Feng et al.: (temperature, SER threshold) by language.
fn table1_defaults(task: &str, order: Option<usize>) -> (f64, Option<f64>) {
    match (task, order) {
        ("ngram", Some(2)) | ("ngram", Some(3)) => (2.0, Some(0.008)),
        ("ngram", Some(4)) => (2.0, Some(0.005)),
        ("ngram", _) => (2.0, None),
        _ => (3.2, Some(0.003)),
    }
}

fn lang_err(e: LanguageError) -> PluginError {
    PluginError(e.to_string())
}

/// Build the language a task component and its configuration describe.
pub fn build_language(
    task: &str,
    config: &serde_json::Value,
) -> Result<(Language, LanguageConfig)> {
    let config_value = if config.is_null() {
        serde_json::json!({})
    } else {
        config.clone()
    };
    let cfg: LanguageConfig = serde_json::from_value(config_value)
        .map_err(|e| PluginError(format!("invalid `{task}` task config: {e}")))?;
    let vocab = cfg.vocab.unwrap_or(8);
    let (default_temp, default_threshold) = table1_defaults(task, cfg.order);
    let temperature = cfg.temperature.unwrap_or(default_temp);
    let threshold = match (cfg.threshold, cfg.variant) {
        (Some(t), _) => t,
        (None, VariantName::Ter) => 0.0,
        (None, VariantName::Ser) => default_threshold.ok_or_else(|| {
            PluginError(format!(
                "Table 1 gives no SER threshold for a {}-gram; set `threshold` in the task config",
                cfg.order.unwrap_or(0)
            ))
        })?,
    };
    let language = match task {
        "ngram" => {
            let order = cfg.order.ok_or_else(|| {
                PluginError("the `ngram` task needs `order` (2, 3, 4, …) in its config".into())
            })?;
            Language::ngram(order, vocab, temperature, threshold, cfg.seed).map_err(lang_err)?
        }
        "hmm" => Language::hmm(
            cfg.states.unwrap_or(32),
            vocab,
            temperature,
            threshold,
            cfg.seed,
        )
        .map_err(lang_err)?,
        other => {
            return Err(PluginError(format!(
                "plugin `{PLUGIN_NAME}` has no task `{other}`; tasks: ngram, hmm"
            )))
        }
    };
    Ok((language, cfg))
}

fn to_sample_score(s: SequenceScore) -> SampleScore {
    SampleScore {
        log_q: s.log_prob.is_finite().then_some(s.log_prob),
        in_support: s.in_support,
        first_invalid: s.first_invalid,
        invalid_transitions: s.invalid_transitions,
        extra: BTreeMap::new(),
    }
}

/// A formal-language task.
pub struct LanguageTask {
    task: String,
    config: LanguageConfig,
    language: Language,
    described: BTreeMap<usize, TaskDescription>,
}

impl LanguageTask {
    pub fn new(task: &str, config: &serde_json::Value) -> Result<Self> {
        let (language, config) = build_language(task, config)?;
        Ok(LanguageTask {
            task: task.to_string(),
            config,
            language,
            described: BTreeMap::new(),
        })
    }
}

impl Task for LanguageTask {
    fn describe(&mut self, length: usize) -> Result<TaskDescription> {
        if let Some(d) = self.described.get(&length) {
            return Ok(d.clone());
        }
        let l = &self.language;
        let entropy = l.entropy(length).map_err(lang_err)?;
        let variant = if self.language.threshold() > 0.0 {
            "SER"
        } else {
            "TER"
        };
        let d = TaskDescription {
            label: format!("{} ({variant} variant)", l.kind_label()),
            vocab_size: l.vocab(),
            mask_id: l.mask_id(),
            length,
            entropy_nats: Some(entropy.nats),
            entropy_exact: entropy.exact,
            entropy_std_error: entropy.std_error,
            optimal_ter: Some((entropy.nats / length as f64).exp()),
            support_log10_density: Some(l.support_log10_density(length).map_err(lang_err)?),
            details: serde_json::json!({
                "task": self.task,
                "kind": l.kind_label(),
                "order": l.order(),
                "hidden_states": l.hidden_states(),
                "variant": variant.to_lowercase(),
                "temperature": l.temperature(),
                "threshold": l.threshold(),
                "seed": self.config.seed,
                "entropy_method": entropy.method,
            }),
        };
        self.described.insert(length, d.clone());
        Ok(d)
    }

    fn sample_reference(&mut self, request: &SampleReferenceRequest) -> Result<Vec<Vec<u32>>> {
        (0..request.n as u64)
            .map(|i| {
                let mut rng =
                    sample_rng(request.seed, REFERENCE_STREAM | (request.first_index + i));
                self.language
                    .sample(request.length, &mut rng)
                    .map_err(lang_err)
            })
            .collect()
    }

    fn score(&mut self, sequences: &[Vec<u32>]) -> Result<Vec<SampleScore>> {
        sequences
            .iter()
            .enumerate()
            .map(|(i, x)| {
                self.language
                    .score(x)
                    .map(to_sample_score)
                    .map_err(|e| PluginError(format!("sequence {i}: {e}")))
            })
            .collect()
    }
}

/// The exact oracle denoiser: the conditional marginal of every masked position given all
/// unmasked ones, under the ground-truth language.
///
/// When parallel unmasking has already committed a zero-probability combination (possible for
/// SER languages), the exact conditional does not exist. The oracle then answers with the
/// conditionals of the same language without pruning (its TER variant, which has full support
/// and shares every parameter draw): the behaviour of a model that puts tiny mass on pruned
/// transitions. This keeps the oracle's learning error at zero wherever it is defined.
pub struct Oracle {
    language: Language,
    unpruned: Option<Language>,
    row: Vec<f64>,
}

impl Oracle {
    pub fn new(open: &ModelOpenConfig) -> Result<Self> {
        if open.task.plugin != PLUGIN_NAME {
            return Err(PluginError(format!(
                "the `oracle` model knows only the languages of plugin `{PLUGIN_NAME}`, but this cell's task comes from `{}`",
                open.task.plugin
            )));
        }
        let (language, cfg) = build_language(&open.task.task, &open.task.config)?;
        let unpruned = if language.threshold() > 0.0 {
            let mut config = open.task.config.clone();
            if let Some(obj) = config.as_object_mut() {
                obj.insert("threshold".into(), serde_json::json!(0.0));
            }
            Some(build_language(&open.task.task, &config)?.0)
        } else {
            None
        };
        let _ = cfg;
        Ok(Oracle {
            language,
            unpruned,
            row: Vec::new(),
        })
    }
}

impl Denoiser for Oracle {
    fn vocab_size(&self) -> usize {
        self.language.vocab()
    }

    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        if self
            .language
            .conditional_marginals(tokens, batch, length, out)
            .is_ok()
        {
            return Ok(());
        }
        // Some row is inconsistent: answer row by row, falling back where needed.
        let v = self.language.vocab();
        self.row.resize(length * v, 0.0);
        for b in 0..batch {
            let row_tokens = &tokens[b * length..(b + 1) * length];
            let row_out = &mut out[b * length * v..(b + 1) * length * v];
            match self
                .language
                .conditional_marginals(row_tokens, 1, length, row_out)
            {
                Ok(()) => {}
                Err(LanguageError::Inconsistent { .. }) => {
                    let fallback = self.unpruned.as_ref().ok_or_else(|| {
                        PluginError(format!("row {b}: unmasked tokens have probability 0 under a full-support language"))
                    })?;
                    fallback
                        .conditional_marginals(row_tokens, 1, length, row_out)
                        .map_err(|e| PluginError(format!("row {b}: {e}")))?;
                }
                Err(e) => return Err(PluginError(format!("row {b}: {e}"))),
            }
        }
        Ok(())
    }
}

pub struct FormalPlugin;

impl Plugin for FormalPlugin {
    const NAME: &'static str = PLUGIN_NAME;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str =
        "n-gram and HMM languages of Feng et al. (Table 1) with exact scoring, and their exact oracle denoiser";
    const HAS_TASKS: bool = true;
    const HAS_MODELS: bool = true;

    fn tasks() -> Vec<ComponentInfo> {
        vec![
            ComponentInfo {
                name: "ngram".into(),
                description: "n-gram language (config: order, variant ter|ser, seed, vocab, temperature, threshold)".into(),
                capabilities: vec!["exact_log_prob".into(), "exact_entropy".into()],
                samplers: vec![],
            },
            ComponentInfo {
                name: "hmm".into(),
                description: "hidden Markov language (config: states, variant ter|ser, seed, vocab, temperature, threshold)".into(),
                capabilities: vec!["exact_log_prob".into()],
                samplers: vec![],
            },
        ]
    }

    fn models() -> Vec<ComponentInfo> {
        let mut oracle = denoiser_component(
            "oracle",
            "exact conditional marginals of the bound task's language (forward–backward)",
            false,
        );
        oracle.capabilities.push("oracle".into());
        vec![oracle]
    }

    fn open_task(name: &str, config: serde_json::Value) -> Result<Box<dyn Task>> {
        Ok(Box::new(LanguageTask::new(name, &config)?))
    }

    fn open_model(name: &str, open: ModelOpenConfig) -> Result<Box<dyn Model>> {
        match name {
            "oracle" => Ok(Box::new(DenoiserModel::new(Oracle::new(&open)?))),
            other => Err(PluginError(format!(
                "plugin `{PLUGIN_NAME}` has no model `{other}`; models: oracle"
            ))),
        }
    }
}
