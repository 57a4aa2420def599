//! Suites: YAML files that declare a sweep (tasks × models × samplers × steps × lengths ×
//! seeds), parsed with source positions so every error names file, line and column.

use dlm_plugin_api::SamplerSpec;
use marked_yaml::{Node, Spanned};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

mod cells;
mod checks;
mod config_keys;
mod docs;
mod error;
mod likelihood;
mod limits;
#[cfg(test)]
mod tests;
mod yaml;

pub use cells::{hex, CellSpec, ComponentSpec, DocSelection, DocumentCount, SamplePart};
pub use checks::*;
pub use config_keys::{check_config_keys, check_length_overrides, resolve_paths};
use error::load_error;
pub use error::{closest, did_you_mean, Location, SuiteError, SuiteSource};
pub use likelihood::LikelihoodSpec;
pub use limits::*;
pub use yaml::yaml_to_json;
use yaml::{find_key, section_config, section_value};

// ---------------------------------------------------------------------------------------------
// Raw YAML shape.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    name: Spanned<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    samples: Option<Spanned<i64>>,
    #[serde(default)]
    batch_size: Option<Spanned<i64>>,
    #[serde(default)]
    timeout_seconds: Option<Spanned<f64>>,
    /// `8GiB`, `512MiB`, a number of bytes, or `none` (`MemoryLimit`).
    #[serde(default)]
    memory_limit: Option<Spanned<String>>,
    #[serde(default)]
    reference: Option<bool>,
    /// Record every model cell's trajectories (commit steps, intermediate answers).
    #[serde(default)]
    trace: Option<bool>,
    /// Split cells into sample ranges of at most this many samples for shards.
    #[serde(default)]
    shard_samples: Option<Spanned<i64>>,
    lengths: Spanned<Vec<Spanned<i64>>>,
    #[serde(default)]
    seeds: Option<Vec<Spanned<i64>>>,
    tasks: Spanned<Vec<RawTask>>,
    models: Spanned<Vec<RawModel>>,
    samplers: Spanned<Vec<RawSampler>>,
    #[serde(default, rename = "likelihood")] // read from the YAML tree (`likelihood::parse`)
    _likelihood: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: Spanned<String>,
    plugin: Spanned<String>,
    task: Spanned<String>,
    /// Read from the YAML tree instead (`yaml_to_json`), which keeps plain scalars typed.
    #[serde(default, rename = "config")]
    _config: Option<serde::de::IgnoredAny>,
    /// Text tasks: score only these documents (prompt ids), in this order.
    #[serde(default)]
    doc_ids: Option<Vec<Spanned<String>>>,
    /// Text tasks: score exactly the documents each model's replay file covers.
    #[serde(default)]
    docs_from_replay: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    name: Spanned<String>,
    plugin: Spanned<String>,
    model: Spanned<String>,
    /// Read from the YAML tree instead (`yaml_to_json`), which keeps plain scalars typed.
    #[serde(default, rename = "config")]
    _config: Option<serde::de::IgnoredAny>,
    /// Names of the suite's samplers this model runs, every entry of each name (default: all).
    #[serde(default)]
    samplers: Option<Vec<Spanned<String>>>,
    /// Names of the suite's tasks this model runs on (default: all).
    #[serde(default)]
    tasks: Option<Vec<Spanned<String>>>,
    /// Read from the YAML tree instead (`parse_train`).
    #[serde(default, rename = "train")]
    _train: Option<serde::de::IgnoredAny>,
    /// The model whose autoregressive cell this model's speedups and verdicts are measured
    /// against (default: its own left-to-right cell, else the suite's only AR model).
    #[serde(default)]
    baseline: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSampler {
    sampler: Spanned<String>,
    #[serde(default)]
    steps: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    schedule: Option<Spanned<String>>,
    /// Read from the YAML tree instead (`yaml_to_json`).
    #[serde(default, rename = "params")]
    _params: Option<serde::de::IgnoredAny>,
}

// ---------------------------------------------------------------------------------------------
// Checked suite.

/// Where a plugin comes from: a workspace crate the harness builds, or a library path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum PluginRef {
    Crate(String),
    Path(PathBuf),
}

impl PluginRef {
    /// A value containing a path separator or a library suffix is a path (relative to the
    /// suite file); anything else names a workspace crate.
    pub fn parse(value: &str, suite_dir: &Path) -> PluginRef {
        let looks_like_path = value.contains('/')
            || value.contains('\\')
            || value.ends_with(std::env::consts::DLL_SUFFIX);
        if looks_like_path {
            let p = Path::new(value);
            PluginRef::Path(if p.is_absolute() {
                p.to_owned()
            } else {
                suite_dir.join(p)
            })
        } else {
            PluginRef::Crate(value.to_string())
        }
    }
}

impl fmt::Display for PluginRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginRef::Crate(c) => write!(f, "crate `{c}`"),
            PluginRef::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A task entry.
pub struct TaskEntry {
    pub name: String,
    pub plugin: PluginRef,
    pub plugin_span: marked_yaml::Span,
    pub component: String,
    pub component_span: marked_yaml::Span,
    pub config: Value,
    /// Each key of `config:` with its place in the suite, for plan-time checks.
    pub config_keys: Vec<(String, marked_yaml::Span)>,
    /// `doc_ids:` or `docs_from_replay: true`: the documents its cells score.
    pub docs: Option<DocSelection>,
    /// The suite file's folder, made absolute: relative paths in `config` are relative to it.
    pub base_dir: PathBuf,
}

/// A model entry.
pub struct ModelEntry {
    pub name: String,
    pub plugin: PluginRef,
    pub plugin_span: marked_yaml::Span,
    pub component: String,
    pub component_span: marked_yaml::Span,
    pub config: Value,
    /// Each key of `config:` with its place in the suite, for plan-time checks.
    pub config_keys: Vec<(String, marked_yaml::Span)>,
    /// Indices into `Suite::samplers`.
    pub samplers: Vec<usize>,
    /// Indices into `Suite::tasks`.
    pub tasks: Vec<usize>,
    /// Train the model per task and length before sampling (`train:` in the suite).
    pub train: Option<TrainSpec>,
    pub train_span: Option<marked_yaml::Span>,
    /// `baseline:`: the model to compare against (checked to name a model of the suite).
    pub baseline: Option<String>,
    /// The suite file's folder, made absolute: relative paths in `config` are relative to it.
    pub base_dir: PathBuf,
}

/// A model's `train:` mapping: the harness trains the model on fresh ground-truth sequences of
/// each task it runs on, once per (task, length), and caches the checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainSpec {
    /// Optimiser steps.
    pub steps: usize,
    /// Sequences per step (drawn fresh from the task's `sample_reference` every step).
    pub batch_size: usize,
    /// Seed of the initial weights, the objective's noise and the training data.
    pub seed: u64,
    /// Evaluate on the held-out set every this many steps (and at the end).
    pub validation_every: usize,
    /// Size of the held-out validation set.
    pub validation_samples: usize,
    /// Wall-clock limit of one training run; not part of the model's identity.
    pub timeout_seconds: f64,
    /// Everything else in `train:`, handed to the plugin (learning rate, warm-up, …).
    pub options: Value,
}

impl TrainSpec {
    /// What determines the trained weights (the timeout does not).
    pub fn identity(&self) -> Value {
        serde_json::json!({
            "steps": self.steps,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "validation_samples": self.validation_samples,
            "options": &self.options,
        })
    }
}

/// Parse a model's `train:` mapping, locating every error.
fn parse_train(node: &Node, source: &SuiteSource) -> Result<TrainSpec, SuiteError> {
    let Some(map) = node.as_mapping() else {
        return Err(SuiteError::at(
            source,
            node.span(),
            "`train` must be a mapping, e.g. {steps: 2000, batch_size: 64, lr: 1e-3}",
        ));
    };
    let check = Check { source };
    let int = |v: &Node, what: &str, min: i64| -> Result<i64, SuiteError> {
        let (max, example) = match what {
            "steps" => (MAX_TRAIN_STEPS, "steps: 2000"),
            "batch_size" => (MAX_BATCH_SIZE, "batch_size: 64"),
            "validation_every" => (MAX_TRAIN_STEPS, "validation_every: 200"),
            "validation_samples" => (MAX_VALIDATION_SAMPLES, "validation_samples: 512"),
            _ => (i64::MAX, "seed: 0"),
        };
        check.whole(v, &format!("train.{what}"), min, max, example)
    };
    let (mut steps, mut batch_size, mut seed) = (None, None, 0u64);
    let (mut every, mut validation_samples, mut timeout) = (None, 512usize, 3600.0f64);
    let mut options = serde_json::Map::new();
    for (k, v) in map.iter() {
        match k.as_str() {
            "steps" => steps = Some(check.at_key(k, v, int(v, "steps", 1))? as usize),
            "batch_size" => {
                batch_size = Some(check.at_key(k, v, int(v, "batch_size", 1))? as usize)
            }
            "seed" => seed = check.at_key(k, v, int(v, "seed", 0))? as u64,
            "validation_every" => {
                every = Some(check.at_key(k, v, int(v, "validation_every", 1))? as usize)
            }
            "validation_samples" => {
                validation_samples = check.at_key(k, v, int(v, "validation_samples", 1))? as usize
            }
            "timeout_seconds" => {
                timeout = check.at_key(
                    k,
                    v,
                    check.seconds(v, "train.timeout_seconds", "timeout_seconds: 3600"),
                )?
            }
            other => {
                options.insert(other.to_string(), yaml_to_json(v, source)?);
            }
        }
    }
    let missing = |what: &str| {
        SuiteError::at(
            source,
            node.span(),
            format!("`train` needs `{what}` (e.g. {{steps: 2000, batch_size: 64}})"),
        )
    };
    let steps = steps.ok_or_else(|| missing("steps"))?;
    let batch_size = batch_size.ok_or_else(|| missing("batch_size"))?;
    Ok(TrainSpec {
        steps,
        batch_size,
        seed,
        validation_every: every.unwrap_or((steps / 10).max(1)),
        validation_samples,
        timeout_seconds: timeout,
        options: Value::Object(options),
    })
}

/// A sampler entry; `steps` is empty for `left_to_right` (one step per token).
pub struct SamplerEntry {
    pub sampler: String,
    pub span: marked_yaml::Span,
    /// Step counts; empty when the suite gives none (one step per token: the length).
    pub steps: Vec<usize>,
    pub steps_span: Option<marked_yaml::Span>,
    pub schedule: Option<String>,
    pub params: BTreeMap<String, Value>,
}

/// What to say about a sampler a model names but the suite's list lacks. A close spelling in
/// the list was written by the user too, and either may be the typo (`ddpm-cache` defined,
/// `ddpm_cache` asked for): say where it is rather than suggest it as the fix.
fn undefined_sampler_hint(name: &str, samplers: &[SamplerEntry]) -> String {
    let names = samplers.iter().map(|s| s.sampler.as_str());
    match closest(name, names.clone()).and_then(|c| samplers.iter().find(|s| s.sampler == c)) {
        Some(near) => format!(
            "; the list defines `{}`{}: if one of the two is misspelt, spell both as the plugin does (`dlm-bench describe PLUGIN` lists its samplers)",
            near.sampler,
            near.span
                .start()
                .map(|m| format!(" (line {})", m.line()))
                .unwrap_or_default()
        ),
        None => did_you_mean(name, names),
    }
}

/// A parsed and checked suite.
pub struct Suite {
    pub source: SuiteSource,
    pub name: String,
    pub description: String,
    pub samples: usize,
    pub batch_size: usize,
    pub timeout_seconds: f64,
    /// The most resident memory one worker (with its child processes) may use.
    pub memory_limit: MemoryLimit,
    pub reference: bool,
    /// `trace: true`: every model cell records its samples' trajectories (commit steps, the
    /// answers along the way, the left-to-right τ); off by default, so results stay small.
    pub trace: bool,
    /// `shard_samples`: sharded runs (`run --shard`, Slurm arrays) split cells with more
    /// samples into parts of at most this many (rounded up to whole batches); `merge` joins
    /// them. Not part of any cell's identity, and a run without shards ignores it.
    pub shard_samples: Option<usize>,
    pub lengths: Vec<usize>,
    pub seeds: Vec<u64>,
    pub tasks: Vec<TaskEntry>,
    pub models: Vec<ModelEntry>,
    pub samplers: Vec<SamplerEntry>,
    /// The `likelihood:` section: ELBO against exact log-likelihood (`crate::likelihood`).
    pub likelihood: Option<LikelihoodSpec>,
    /// sha256 of the file's bytes.
    pub hash: String,
}

/// The suite's `memory_limit`: the most resident memory one worker and its child processes may
/// use before the harness kills it and fails the job with "memory limit". Not part of any
/// cell's identity (like `timeout_seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryLimit {
    /// Not given: min(16 GiB, 3/4 of physical memory) (`worker::default_memory_limit`).
    #[default]
    Default,
    Bytes(u64),
    /// `none`.
    Unlimited,
}

impl MemoryLimit {
    /// `none`, a number of bytes, or a number with a unit: `KiB`/`MiB`/`GiB`/`TiB` (also `K`,
    /// `M`, `G`, `T`) or `KB`/`MB`/`GB`/`TB` (powers of 1000), case-insensitive.
    pub fn parse(text: &str) -> Option<MemoryLimit> {
        let t = text.trim().to_ascii_lowercase();
        if t == "none" {
            return Some(MemoryLimit::Unlimited);
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let scale: f64 = match unit.trim() {
            "" | "b" => 1.0,
            "k" | "kib" => 1024.0,
            "m" | "mib" => 1024f64.powi(2),
            "g" | "gib" => 1024f64.powi(3),
            "t" | "tib" => 1024f64.powi(4),
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            "tb" => 1e12,
            _ => return None,
        };
        let bytes = number.parse::<f64>().ok()? * scale;
        (bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64)
            .then(|| MemoryLimit::Bytes(bytes.round() as u64))
    }
}

fn positive(source: &SuiteSource, v: &Spanned<i64>, what: &str) -> Result<usize, SuiteError> {
    if **v < 1 {
        return Err(SuiteError::at(
            source,
            v.span(),
            format!("{what} must be at least 1, got {}", **v),
        ));
    }
    Ok(**v as usize)
}

impl Suite {
    pub fn load(path: &Path) -> Result<Suite, SuiteError> {
        let bytes = std::fs::read(path)
            .map_err(|e| SuiteError::whole_file(path, format!("cannot read suite file: {e}")))?;
        let text =
            String::from_utf8(bytes).map_err(|e| SuiteError::not_utf8(path, e.into_bytes()))?;
        Suite::parse(path, text)
    }

    pub fn parse(path: &Path, text: String) -> Result<Suite, SuiteError> {
        let hash = hex(&Sha256::digest(text.as_bytes()));
        // YAML allows a byte-order mark before the document; it is not part of the first key.
        let text = match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        };
        let source = SuiteSource {
            path: path.to_owned(),
            text,
        };
        let options = marked_yaml::LoaderOptions::default()
            .error_on_duplicate_keys(true)
            .prevent_coercion(true);
        check_indentation(&source)?;
        let node = marked_yaml::parse_yaml_with_options(0, &source.text, options)
            .map_err(|e| load_error(&source, e))?;
        check_single_document(&source)?;
        if let Err(e) = check_depth(&node, &source) {
            dismantle(node);
            return Err(e);
        }
        check_shape(&node, &source)?;
        let raw: RawSuite = marked_yaml::from_node(&node).map_err(|e| {
            let span = match (e.start_mark(), &*e) {
                (Some(m), _) => marked_yaml::Span::new_start(m),
                // Unknown keys come without a position: find the key in the tree.
                (None, marked_yaml::Error::UnknownFieldError(field, _, _)) => {
                    find_key(&node, field).unwrap_or_else(marked_yaml::Span::new_blank)
                }
                (None, _) => marked_yaml::Span::new_blank(),
            };
            let mut err = SuiteError::at(&source, &span, e.to_string());
            if err.location.is_none() {
                err.message = format!("{} (check the suite's top-level keys: name, lengths, tasks, models, samplers are required)", err.message);
            }
            err
        })?;
        let suite_dir = path.parent().unwrap_or(Path::new(".")).to_owned();
        let top = node.as_mapping().expect("from_node accepted a mapping");

        let tasks = parse_tasks(&raw, top, &source, &suite_dir)?;
        let samplers = parse_samplers(&raw, top, &source)?;
        let models = parse_models(&raw, top, &source, &suite_dir, &tasks, &samplers)?;
        let settings = parse_settings(&raw, &source)?;
        let likelihood = likelihood::parse(top, &source, &tasks, &models, &settings.lengths)?;
        let suite = Suite {
            name: raw.name.to_string(),
            description: raw.description.unwrap_or_default(),
            samples: settings.samples,
            batch_size: settings.batch_size,
            timeout_seconds: settings.timeout_seconds,
            memory_limit: settings.memory_limit,
            reference: raw.reference.unwrap_or(true),
            trace: raw.trace.unwrap_or(false),
            shard_samples: settings.shard_samples,
            lengths: settings.lengths,
            seeds: settings.seeds,
            tasks,
            models,
            samplers,
            likelihood,
            hash,
            source,
        };
        check_sizes(&suite, top)?;
        Ok(suite)
    }
}

/// The suite's `tasks`, with their configs from the YAML tree.
fn parse_tasks(
    raw: &RawSuite,
    top: &marked_yaml::types::MarkedMappingNode,
    source: &SuiteSource,
    suite_dir: &Path,
) -> Result<Vec<TaskEntry>, SuiteError> {
    let mut tasks = Vec::new();
    let mut seen = HashSet::new();
    for (i, t) in raw.tasks.iter().enumerate() {
        if !seen.insert(t.name.as_str().to_string()) {
            return Err(SuiteError::at(
                source,
                t.name.span(),
                format!("duplicate task name `{}`", *t.name),
            ));
        }
        let config = section_config(top, "tasks", i, source)?;
        let docs = docs::selection(t, source)?;
        tasks.push(TaskEntry {
            name: t.name.to_string(),
            plugin: PluginRef::parse(&t.plugin, suite_dir),
            plugin_span: *t.plugin.span(),
            component: t.task.to_string(),
            component_span: *t.task.span(),
            config,
            config_keys: config_keys::spans(top, "tasks", i),
            docs,
            base_dir: docs::base_dir(suite_dir),
        });
    }
    if tasks.is_empty() {
        return Err(SuiteError::at(
            source,
            raw.tasks.span(),
            "`tasks` is empty; list at least one task",
        ));
    }
    Ok(tasks)
}

/// The suite's `samplers`: step counts, schedule and params.
fn parse_samplers(
    raw: &RawSuite,
    top: &marked_yaml::types::MarkedMappingNode,
    source: &SuiteSource,
) -> Result<Vec<SamplerEntry>, SuiteError> {
    let mut samplers = Vec::new();
    for (i, s) in raw.samplers.iter().enumerate() {
        // Whether the sampler takes `steps` is the plugin's to say (its descriptor's
        // `sampler_info`); `run::check_components` checks it once plugins are described.
        let steps = match &s.steps {
            Some(steps) => {
                if steps.is_empty() {
                    return Err(SuiteError::at(
                        source,
                        steps.span(),
                        "`steps` is empty; give at least one step count",
                    ));
                }
                steps
                    .iter()
                    .map(|v| positive(source, v, "steps"))
                    .collect::<Result<Vec<_>, _>>()?
            }
            None => Vec::new(),
        };
        let params = match section_value(top, &["samplers"], i, "params", source)? {
            Value::Null => BTreeMap::new(),
            Value::Object(m) => m.into_iter().collect(),
            _ => {
                return Err(SuiteError::at(
                    source,
                    s.sampler.span(),
                    "`params` must be a mapping",
                ))
            }
        };
        samplers.push(SamplerEntry {
            sampler: s.sampler.to_string(),
            span: *s.sampler.span(),
            steps_span: s.steps.as_ref().map(|st| *st.span()),
            steps,
            schedule: s.schedule.as_ref().map(|x| x.to_string()),
            params,
        });
    }
    check_repeated_samplers(source, &raw.samplers, &samplers)?;
    if samplers.is_empty() {
        return Err(SuiteError::at(
            source,
            raw.samplers.span(),
            "`samplers` is empty; list at least one sampler",
        ));
    }
    Ok(samplers)
}

/// The suite's `models`, their samplers and tasks resolved to indices, `train:` and `baseline:`.
fn parse_models(
    raw: &RawSuite,
    top: &marked_yaml::types::MarkedMappingNode,
    source: &SuiteSource,
    suite_dir: &Path,
    tasks: &[TaskEntry],
    samplers: &[SamplerEntry],
) -> Result<Vec<ModelEntry>, SuiteError> {
    let mut models = Vec::new();
    let mut seen = HashSet::new();
    for (i, m) in raw.models.iter().enumerate() {
        if !seen.insert(m.name.as_str().to_string()) || m.name.as_str() == "reference" {
            return Err(SuiteError::at(
                source,
                m.name.span(),
                format!("duplicate or reserved model name `{}`", *m.name),
            ));
        }
        let config = section_config(top, "models", i, source)?;
        let chosen = match &m.samplers {
            None => (0..samplers.len()).collect(),
            // Every entry of each named sampler: a suite may list one sampler several times
            // (e.g. with and without semi-AR blocks), and naming it selects them all.
            Some(names) => names
                .iter()
                .map(|n| {
                    let entries: Vec<usize> = (0..samplers.len())
                        .filter(|&i| samplers[i].sampler == n.as_str())
                        .collect();
                    if entries.is_empty() {
                        return Err(SuiteError::at(
                            source,
                            n.span(),
                            format!(
                                "model `{}` asks for sampler `{}`, which the suite's `samplers` list does not define{}",
                                *m.name,
                                n.as_str(),
                                undefined_sampler_hint(n, samplers)
                            ),
                        ));
                    }
                    Ok(entries)
                })
                .collect::<Result<Vec<_>, _>>()?
                .concat(),
        };
        let task_indices = match &m.tasks {
            None => (0..tasks.len()).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    tasks.iter().position(|t| t.name == n.as_str()).ok_or_else(|| {
                        SuiteError::at(
                            source,
                            n.span(),
                            format!(
                                "model `{}` asks for task `{}`, which the suite's `tasks` list does not define{}",
                                *m.name,
                                n.as_str(),
                                did_you_mean(n, tasks.iter().map(|t| t.name.as_str()))
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let train_node = top
            .get_sequence("models")
            .and_then(|seq| seq.get_node(i))
            .and_then(Node::as_mapping)
            .and_then(|map| map.get_node("train"));
        let train = train_node.map(|n| parse_train(n, source)).transpose()?;
        models.push(ModelEntry {
            name: m.name.to_string(),
            plugin: PluginRef::parse(&m.plugin, suite_dir),
            plugin_span: *m.plugin.span(),
            component: m.model.to_string(),
            component_span: *m.model.span(),
            config,
            config_keys: config_keys::spans(top, "models", i),
            samplers: chosen,
            tasks: task_indices,
            train,
            train_span: train_node.map(|n| *n.span()),
            baseline: m.baseline.as_ref().map(|b| b.to_string()),
            base_dir: docs::base_dir(suite_dir),
        });
    }
    for m in raw.models.iter() {
        if let Some(b) = &m.baseline {
            if !models.iter().any(|x| x.name == b.as_str()) {
                return Err(SuiteError::at(
                    source,
                    b.span(),
                    format!(
                        "model `{}` names baseline `{}`, which is not a model of this suite{}",
                        *m.name,
                        b.as_str(),
                        did_you_mean(b, models.iter().map(|x| x.name.as_str()))
                    ),
                ));
            }
        }
    }
    Ok(models)
}

/// The sweep's scalar settings, defaults filled in.
struct Settings {
    lengths: Vec<usize>,
    seeds: Vec<u64>,
    samples: usize,
    batch_size: usize,
    timeout_seconds: f64,
    memory_limit: MemoryLimit,
    shard_samples: Option<usize>,
}

fn parse_settings(raw: &RawSuite, source: &SuiteSource) -> Result<Settings, SuiteError> {
    if raw.lengths.is_empty() {
        return Err(SuiteError::at(
            source,
            raw.lengths.span(),
            "`lengths` is empty",
        ));
    }
    let lengths = raw
        .lengths
        .iter()
        .map(|l| positive(source, l, "length"))
        .collect::<Result<Vec<_>, _>>()?;
    let seeds = match &raw.seeds {
        None => vec![0],
        Some(seeds) => seeds
            .iter()
            .map(|s| {
                if **s < 0 {
                    Err(SuiteError::at(
                        source,
                        s.span(),
                        "seeds must be non-negative integers",
                    ))
                } else {
                    Ok(**s as u64)
                }
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let samples = raw
        .samples
        .as_ref()
        .map(|v| positive(source, v, "samples"))
        .transpose()?
        .unwrap_or(100);
    let batch_size = raw
        .batch_size
        .as_ref()
        .map(|v| positive(source, v, "batch_size"))
        .transpose()?
        .unwrap_or(32);
    let shard_samples = raw
        .shard_samples
        .as_ref()
        .map(|v| positive(source, v, "shard_samples"))
        .transpose()?;
    let timeout_seconds = match &raw.timeout_seconds {
        Some(t) if !(**t > 0.0 && t.is_finite()) => {
            return Err(SuiteError::at(
                source,
                t.span(),
                "timeout_seconds must be a positive number",
            ))
        }
        Some(t) => **t,
        None => 600.0,
    };
    let memory_limit = match &raw.memory_limit {
        Some(m) => MemoryLimit::parse(m).ok_or_else(|| {
            SuiteError::at(
                source,
                m.span(),
                format!(
                    "memory_limit must be a size such as `8GiB` or `512MiB`, a number of bytes, or `none`; got `{}`",
                    m.as_str()
                ),
            )
        })?,
        None => MemoryLimit::Default,
    };
    if raw.name.trim().is_empty() {
        return Err(SuiteError::at(
            source,
            raw.name.span(),
            "`name` must not be empty",
        ));
    }
    Ok(Settings {
        lengths,
        seeds,
        samples,
        batch_size,
        timeout_seconds,
        memory_limit,
        shard_samples,
    })
}
