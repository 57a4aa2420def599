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

/// A position in a suite file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

/// An error in a suite, located in its file, with the offending line quoted.
#[derive(Debug, Clone)]
pub struct SuiteError {
    pub location: Option<Location>,
    pub file: PathBuf,
    pub message: String,
    snippet: Option<String>,
}

impl SuiteError {
    pub fn at(source: &SuiteSource, span: &marked_yaml::Span, message: impl Into<String>) -> Self {
        let location = span.start().map(|m| Location {
            file: source.path.clone(),
            line: m.line(),
            column: m.column(),
        });
        let snippet = location
            .as_ref()
            .and_then(|l| source.snippet(l.line, l.column));
        SuiteError {
            location,
            file: source.path.clone(),
            message: message.into(),
            snippet,
        }
    }

    fn whole_file(path: &Path, message: impl Into<String>) -> Self {
        SuiteError {
            location: None,
            file: path.to_owned(),
            message: message.into(),
            snippet: None,
        }
    }
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(l) => write!(
                f,
                "{}:{}:{}: {}",
                l.file.display(),
                l.line,
                l.column,
                self.message
            )?,
            None => write!(f, "{}: {}", self.file.display(), self.message)?,
        }
        if let Some(s) = &self.snippet {
            write!(f, "\n{s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SuiteError {}

/// The text of a suite file, kept for quoting lines in errors.
pub struct SuiteSource {
    pub path: PathBuf,
    pub text: String,
}

impl SuiteSource {
    fn snippet(&self, line: usize, column: usize) -> Option<String> {
        let text = self.text.lines().nth(line.checked_sub(1)?)?;
        Some(format!(
            "{line:>5} | {text}\n      | {}^",
            " ".repeat(column.saturating_sub(1))
        ))
    }
}

/// "did you mean" suffix for an unknown name.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let mut best: Option<(f64, &str)> = None;
    let mut all = Vec::new();
    for c in candidates {
        all.push(c);
        let score = strsim::jaro_winkler(name, c);
        if score > 0.7 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    match best {
        Some((_, c)) => format!("; did you mean `{c}`?"),
        None if all.is_empty() => String::new(),
        None => format!("; known: {}", all.join(", ")),
    }
}

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
    lengths: Spanned<Vec<Spanned<i64>>>,
    #[serde(default)]
    seeds: Option<Vec<Spanned<i64>>>,
    tasks: Spanned<Vec<RawTask>>,
    models: Spanned<Vec<RawModel>>,
    samplers: Spanned<Vec<RawSampler>>,
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
    /// Names of the suite's samplers this model runs (default: all).
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
}

/// A model entry.
pub struct ModelEntry {
    pub name: String,
    pub plugin: PluginRef,
    pub plugin_span: marked_yaml::Span,
    pub component: String,
    pub component_span: marked_yaml::Span,
    pub config: Value,
    /// Indices into `Suite::samplers`.
    pub samplers: Vec<usize>,
    /// Indices into `Suite::tasks`.
    pub tasks: Vec<usize>,
    /// Train the model per task and length before sampling (`train:` in the suite).
    pub train: Option<TrainSpec>,
    pub train_span: Option<marked_yaml::Span>,
    /// `baseline:`: the model to compare against (checked to name a model of the suite).
    pub baseline: Option<String>,
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
    pub lengths: Vec<usize>,
    pub seeds: Vec<u64>,
    pub tasks: Vec<TaskEntry>,
    pub models: Vec<ModelEntry>,
    pub samplers: Vec<SamplerEntry>,
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
        let text = String::from_utf8(bytes).map_err(|e| {
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let before = String::from_utf8_lossy(&bytes[..valid]).into_owned();
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            let source = SuiteSource {
                path: path.to_owned(),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            };
            SuiteError {
                location: Some(Location {
                    file: path.to_owned(),
                    line,
                    column,
                }),
                file: path.to_owned(),
                message: format!(
                    "the suite is not UTF-8 text: byte 0x{:02x} here is not valid UTF-8 (save the file as UTF-8)",
                    bytes[valid]
                ),
                snippet: source.snippet(line, column),
            }
        })?;
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

        let mut tasks = Vec::new();
        let mut seen = HashSet::new();
        for (i, t) in raw.tasks.iter().enumerate() {
            if !seen.insert(t.name.as_str().to_string()) {
                return Err(SuiteError::at(
                    &source,
                    t.name.span(),
                    format!("duplicate task name `{}`", *t.name),
                ));
            }
            let config = section_config(top, "tasks", i, &source)?;
            tasks.push(TaskEntry {
                name: t.name.to_string(),
                plugin: PluginRef::parse(&t.plugin, &suite_dir),
                plugin_span: *t.plugin.span(),
                component: t.task.to_string(),
                component_span: *t.task.span(),
                config,
            });
        }
        if tasks.is_empty() {
            return Err(SuiteError::at(
                &source,
                raw.tasks.span(),
                "`tasks` is empty; list at least one task",
            ));
        }

        let mut samplers = Vec::new();
        for (i, s) in raw.samplers.iter().enumerate() {
            // Whether the sampler takes `steps` is the plugin's to say (its descriptor's
            // `sampler_info`); `run::check_components` checks it once plugins are described.
            let steps = match &s.steps {
                Some(steps) => {
                    if steps.is_empty() {
                        return Err(SuiteError::at(
                            &source,
                            steps.span(),
                            "`steps` is empty; give at least one step count",
                        ));
                    }
                    steps
                        .iter()
                        .map(|v| positive(&source, v, "steps"))
                        .collect::<Result<Vec<_>, _>>()?
                }
                None => Vec::new(),
            };
            let params = match section_value(top, &["samplers"], i, "params", &source)? {
                Value::Null => BTreeMap::new(),
                Value::Object(m) => m.into_iter().collect(),
                _ => {
                    return Err(SuiteError::at(
                        &source,
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
        check_repeated_samplers(&source, &raw.samplers, &samplers)?;
        if samplers.is_empty() {
            return Err(SuiteError::at(
                &source,
                raw.samplers.span(),
                "`samplers` is empty; list at least one sampler",
            ));
        }

        let mut models = Vec::new();
        let mut seen = HashSet::new();
        for (i, m) in raw.models.iter().enumerate() {
            if !seen.insert(m.name.as_str().to_string()) || m.name.as_str() == "reference" {
                return Err(SuiteError::at(
                    &source,
                    m.name.span(),
                    format!("duplicate or reserved model name `{}`", *m.name),
                ));
            }
            let config = section_config(top, "models", i, &source)?;
            let chosen = match &m.samplers {
                None => (0..samplers.len()).collect(),
                Some(names) => names
                    .iter()
                    .map(|n| {
                        samplers
                            .iter()
                            .position(|s| s.sampler == n.as_str())
                            .ok_or_else(|| {
                                SuiteError::at(
                                    &source,
                                    n.span(),
                                    format!(
                                        "model `{}` asks for sampler `{}`, which the suite's `samplers` list does not define{}",
                                        *m.name,
                                        n.as_str(),
                                        did_you_mean(n, samplers.iter().map(|s| s.sampler.as_str()))
                                    ),
                                )
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            };
            let task_indices = match &m.tasks {
                None => (0..tasks.len()).collect(),
                Some(names) => names
                    .iter()
                    .map(|n| {
                        tasks.iter().position(|t| t.name == n.as_str()).ok_or_else(|| {
                            SuiteError::at(
                                &source,
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
            let train = train_node.map(|n| parse_train(n, &source)).transpose()?;
            models.push(ModelEntry {
                name: m.name.to_string(),
                plugin: PluginRef::parse(&m.plugin, &suite_dir),
                plugin_span: *m.plugin.span(),
                component: m.model.to_string(),
                component_span: *m.model.span(),
                config,
                samplers: chosen,
                tasks: task_indices,
                train,
                train_span: train_node.map(|n| *n.span()),
                baseline: m.baseline.as_ref().map(|b| b.to_string()),
            });
        }
        for m in raw.models.iter() {
            if let Some(b) = &m.baseline {
                if !models.iter().any(|x| x.name == b.as_str()) {
                    return Err(SuiteError::at(
                        &source,
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

        if raw.lengths.is_empty() {
            return Err(SuiteError::at(
                &source,
                raw.lengths.span(),
                "`lengths` is empty",
            ));
        }
        let lengths = raw
            .lengths
            .iter()
            .map(|l| positive(&source, l, "length"))
            .collect::<Result<Vec<_>, _>>()?;
        let seeds = match &raw.seeds {
            None => vec![0],
            Some(seeds) => seeds
                .iter()
                .map(|s| {
                    if **s < 0 {
                        Err(SuiteError::at(
                            &source,
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
            .map(|v| positive(&source, v, "samples"))
            .transpose()?
            .unwrap_or(100);
        let batch_size = raw
            .batch_size
            .as_ref()
            .map(|v| positive(&source, v, "batch_size"))
            .transpose()?
            .unwrap_or(32);
        let timeout_seconds = match &raw.timeout_seconds {
            Some(t) if !(**t > 0.0 && t.is_finite()) => {
                return Err(SuiteError::at(
                    &source,
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
                    &source,
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
                &source,
                raw.name.span(),
                "`name` must not be empty",
            ));
        }
        let suite = Suite {
            name: raw.name.to_string(),
            description: raw.description.unwrap_or_default(),
            samples,
            batch_size,
            timeout_seconds,
            memory_limit,
            reference: raw.reference.unwrap_or(true),
            lengths,
            seeds,
            tasks,
            models,
            samplers,
            hash,
            source,
        };
        check_sizes(&suite, top)?;
        Ok(suite)
    }

    /// Every cell of the sweep, in a stable order.
    pub fn cells(&self) -> Vec<CellSpec> {
        let mut cells = Vec::new();
        for &seed in &self.seeds {
            for &length in &self.lengths {
                for (ti, task) in self.tasks.iter().enumerate() {
                    let task_spec = ComponentSpec {
                        name: task.name.clone(),
                        plugin: task.plugin.clone(),
                        component: task.component.clone(),
                        config: task.config.clone(),
                        train: None,
                        baseline: None,
                    };
                    let base =
                        |model: Option<ComponentSpec>, sampler: Option<SamplerSpec>| CellSpec {
                            task: task_spec.clone(),
                            model,
                            sampler,
                            length,
                            seed,
                            n: self.samples,
                            batch_size: self.batch_size,
                            timeout_seconds: self.timeout_seconds,
                        };
                    if self.reference {
                        cells.push(base(None, None));
                    }
                    for model in self.models.iter().filter(|m| m.tasks.contains(&ti)) {
                        let model_spec = ComponentSpec {
                            name: model.name.clone(),
                            plugin: model.plugin.clone(),
                            component: model.component.clone(),
                            config: model.config.clone(),
                            train: model.train.clone(),
                            baseline: model.baseline.clone(),
                        };
                        for &si in &model.samplers {
                            let s = &self.samplers[si];
                            let steps = if s.steps.is_empty() {
                                vec![length]
                            } else {
                                s.steps.clone()
                            };
                            for st in steps {
                                cells.push(base(
                                    Some(model_spec.clone()),
                                    Some(SamplerSpec {
                                        name: s.sampler.clone(),
                                        steps: st,
                                        schedule: s.schedule.clone(),
                                        params: s.params.clone(),
                                    }),
                                ));
                            }
                        }
                    }
                }
            }
        }
        cells
    }
}

// ---------------------------------------------------------------------------------------------
// Shape, range and size checks on the YAML tree. They run before serde sees the tree, so every
// type error, missing key, out-of-range number and repeated value is located at its node with a
// hint of what is valid; serde then only extracts a tree already known to fit `RawSuite`.

/// Longest `timeout_seconds` (per cell) and `train.timeout_seconds` (per training run): 7 days.
pub const MAX_TIMEOUT_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// Most `samples` per cell.
pub const MAX_SAMPLES: i64 = 100_000_000;
/// Most sequences per `generate` call (`batch_size`) or training step (`train.batch_size`).
pub const MAX_BATCH_SIZE: i64 = 1_000_000;
/// Longest sequence (`lengths`).
pub const MAX_LENGTH: i64 = 1_000_000;
/// Most sampling steps (`steps`).
pub const MAX_STEPS: i64 = 1_000_000;
/// Most optimiser steps (`train.steps`, `train.validation_every`).
pub const MAX_TRAIN_STEPS: i64 = 100_000_000;
/// Largest held-out set (`train.validation_samples`).
pub const MAX_VALIDATION_SAMPLES: i64 = 10_000_000;
/// Most tokens the harness holds for one cell (samples × length; also validation samples ×
/// length): token ids, their JSON rows and events, about [`BYTES_PER_HELD_TOKEN`] each.
pub const MAX_CELL_TOKENS: u128 = 250_000_000;
/// Most tokens in one `generate` call or training step (batch × length): a plugin holds batch ×
/// length × vocabulary probabilities (8 bytes each) for every forward pass.
pub const MAX_BATCH_TOKENS: u128 = 1 << 24;
/// Most cells in one suite (each is a worker process).
pub const MAX_CELLS: u128 = 1_000_000;
/// Deepest nesting of lists and mappings (a suite needs about 6 levels).
pub const MAX_DEPTH: usize = 64;
/// Bytes the harness holds per sampled token (u32 ids, JSON rows, the events file): an estimate
/// used to state a refused size in memory.
const BYTES_PER_HELD_TOKEN: f64 = 12.0;

fn gib(bytes: f64) -> String {
    let g = bytes / (1u64 << 30) as f64;
    if g >= 1024.0 {
        format!("{:.1} TiB", g / 1024.0)
    } else {
        format!("{g:.1} GiB")
    }
}

/// A scalar for a message: shortened, invisible characters escaped.
fn shown(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == 40 {
            out.push('…');
            break;
        }
        if invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{feff}' | '\u{200b}'..='\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{a0}'
        )
}

/// What a node is, for "got …" in messages.
fn describe_node(node: &Node) -> String {
    match node {
        Node::Scalar(s) if !s.may_coerce() => format!("the quoted text `{}`", shown(s.as_str())),
        Node::Scalar(s) if s.as_str().is_empty() => "nothing".into(),
        Node::Scalar(s) => format!("`{}`", shown(s.as_str())),
        Node::Sequence(_) => "a list".into(),
        Node::Mapping(_) => "a mapping".into(),
    }
}

fn is_null(node: &Node) -> bool {
    node.as_scalar().is_some_and(|s| {
        s.may_coerce() && matches!(s.as_str(), "" | "~" | "null" | "Null" | "NULL")
    })
}

fn position(node: &Node) -> String {
    match node.span().start() {
        Some(m) => format!("line {}:{}", m.line(), m.column()),
        None => "earlier".into(),
    }
}

/// The keys a serde-derived struct accepts (probed with an unknown key, so fields others add
/// to `RawSuite`, `RawTask`, … are known here without a second list).
fn serde_fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    let Ok(probe) = marked_yaml::parse_yaml(0, "dlm_bench_probe_key: 0") else {
        return &[];
    };
    match marked_yaml::from_node::<T>(&probe) {
        Err(e) => match &*e {
            marked_yaml::Error::UnknownFieldError(_, fields, _) => fields,
            _ => &[],
        },
        Ok(_) => &[],
    }
}

/// The loader reads the first YAML document only: refuse a second one instead of ignoring it.
/// A document marker is `---` (or `...`) at the start of a line; one before any content is
/// fine.
fn check_single_document(source: &SuiteSource) -> Result<(), SuiteError> {
    let is = |line: &str, m: &str| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    };
    let (mut content, mut ended) = (false, false);
    for (i, line) in source.text.lines().enumerate() {
        let trimmed = line.trim_start();
        let second = if is(line, "---") {
            content
        } else if is(line, "...") {
            ended = true;
            false
        } else if trimmed.is_empty() || trimmed.starts_with('#') {
            false
        } else {
            content = true;
            ended
        };
        if second {
            return Err(SuiteError::at(
                source,
                &marked_yaml::Span::new_start(marked_yaml::Marker::new(0, 0, i + 1, 1)),
                "a suite is one YAML document, but another starts here: remove the document marker and what follows, or make a second suite file",
            ));
        }
    }
    Ok(())
}

/// Most columns of indentation and block markers (`- `, `? `, `: `) before a line's content.
/// The YAML parser recurses once per level of nesting, so a line such as `- - - … x` with
/// thousands of markers would overflow the stack before any other check could run. Block
/// nesting is bounded by this column (flow nesting, `[[…]]`, by the scanner's limit of 255).
pub const MAX_INDENT_COLUMNS: usize = 256;

fn check_indentation(source: &SuiteSource) -> Result<(), SuiteError> {
    for (i, line) in source.text.lines().enumerate() {
        let chars: Vec<char> = line.chars().take(MAX_INDENT_COLUMNS + 2).collect();
        let mut at = 0;
        while at < chars.len() {
            let c = chars[at];
            let marker = matches!(c, '-' | '?' | ':')
                && chars.get(at + 1).is_none_or(|n| *n == ' ' || *n == '\t');
            if c == ' ' || c == '\t' || marker {
                if at >= MAX_INDENT_COLUMNS {
                    return Err(SuiteError::at(
                        source,
                        &marked_yaml::Span::new_start(marked_yaml::Marker::new(
                            0,
                            0,
                            i + 1,
                            at + 1,
                        )),
                        format!(
                            "lists and mappings are nested too deeply here (more than {MAX_INDENT_COLUMNS} columns of indentation and `- ` markers); a suite needs about 6 levels"
                        ),
                    ));
                }
                at += 1;
            } else {
                break;
            }
        }
    }
    Ok(())
}

/// Nesting depth, iteratively (a hostile file may nest deeper than the stack allows).
fn check_depth(node: &Node, source: &SuiteSource) -> Result<(), SuiteError> {
    let mut stack = vec![(node, 0usize)];
    while let Some((n, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(SuiteError::at(
                source,
                n.span(),
                format!(
                    "lists and mappings are nested more than {MAX_DEPTH} levels deep here; a suite needs about 6"
                ),
            ));
        }
        match n {
            Node::Scalar(_) => {}
            Node::Sequence(seq) => stack.extend(seq.iter().map(|c| (c, depth + 1))),
            Node::Mapping(map) => stack.extend(map.values().map(|c| (c, depth + 1))),
        }
    }
    Ok(())
}

/// Drop a tree without recursion (the derived drop recurses once per level).
fn dismantle(node: Node) {
    let mut stack = vec![node];
    while let Some(mut n) = stack.pop() {
        match &mut n {
            Node::Scalar(_) => {}
            Node::Sequence(seq) => stack.extend(std::mem::take(&mut **seq)),
            Node::Mapping(map) => {
                stack.extend(std::mem::take(&mut **map).into_iter().map(|(_, v)| v))
            }
        }
    }
}

/// Located checks of single nodes.
struct Check<'a> {
    source: &'a SuiteSource,
}

impl Check<'_> {
    fn err(&self, node: &Node, message: impl Into<String>) -> SuiteError {
        SuiteError::at(self.source, node.span(), message)
    }

    /// A whole number in `min..=max`; `example` is a suite line, e.g. `samples: 400`.
    fn whole(
        &self,
        node: &Node,
        what: &str,
        min: i64,
        max: i64,
        example: &str,
    ) -> Result<i64, SuiteError> {
        let hint = format!("{what} must be a whole number from {min} to {max}, e.g. `{example}`");
        let Node::Scalar(s) = node else {
            return Err(self.err(node, format!("{hint}; got {}", describe_node(node))));
        };
        let text = s.as_str();
        if !s.may_coerce() {
            return Err(self.err(
                node,
                format!("{hint}, without quotes; got {}", describe_node(node)),
            ));
        }
        match text.parse::<i64>() {
            Ok(v) if v < min => Err(self.err(
                node,
                format!("{what} must be at least {min}, got {v} ({hint})"),
            )),
            Ok(v) if v > max => Err(self.err(
                node,
                format!("{what} must be at most {max}, got {v} ({hint})"),
            )),
            Ok(v) => Ok(v),
            Err(_) => {
                let digits = text.trim_start_matches(['+', '-']);
                let message = if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
                    format!("{what} must be at most {max}, got {} ({hint})", shown(text))
                } else if text
                    .parse::<f64>()
                    .is_ok_and(|f| f.is_finite() && f.fract() == 0.0)
                {
                    format!("{hint}; write `{}` out in digits", shown(text))
                } else {
                    format!("{hint}; got {}", describe_node(node))
                };
                Err(self.err(node, message))
            }
        }
    }

    /// A number of seconds in `(0, MAX_TIMEOUT_SECONDS]`.
    fn seconds(&self, node: &Node, what: &str, example: &str) -> Result<f64, SuiteError> {
        let range = format!("above 0 and at most {MAX_TIMEOUT_SECONDS} (7 days), e.g. `{example}`");
        let value = node
            .as_scalar()
            .filter(|s| s.may_coerce())
            .and_then(|s| s.as_str().parse::<f64>().ok());
        let message = match value {
            Some(t) if t > 0.0 && t <= MAX_TIMEOUT_SECONDS => return Ok(t),
            Some(t) if t > MAX_TIMEOUT_SECONDS => {
                format!("{what} must be at most {MAX_TIMEOUT_SECONDS} seconds (7 days), got {t:e}; e.g. `{example}`")
            }
            Some(_) => format!(
                "{what} must be positive: a number of seconds {range}; got {}",
                describe_node(node)
            ),
            None => format!(
                "{what} must be a number of seconds {range}; got {}",
                describe_node(node)
            ),
        };
        Err(self.err(node, message))
    }

    /// A non-empty name or text.
    fn text(&self, node: &Node, what: &str, example: &str) -> Result<(), SuiteError> {
        match node {
            Node::Scalar(s) if !s.as_str().trim().is_empty() => Ok(()),
            _ => Err(self.err(
                node,
                format!(
                    "`{what}` must be a non-empty name, e.g. `{example}`; got {}",
                    describe_node(node)
                ),
            )),
        }
    }

    /// A non-empty list.
    fn list<'n>(
        &self,
        node: &'n Node,
        what: &str,
        example: &str,
    ) -> Result<&'n [Node], SuiteError> {
        match node {
            Node::Sequence(seq) if seq.is_empty() => Err(self.err(
                node,
                format!("`{what}` is empty; list at least one, e.g. `{example}`"),
            )),
            Node::Sequence(seq) => Ok(seq),
            _ => Err(self.err(
                node,
                format!(
                    "`{what}` must be a list, e.g. `{example}`; got {}",
                    describe_node(node)
                ),
            )),
        }
    }

    /// A list of distinct whole numbers.
    fn distinct_wholes(
        &self,
        node: &Node,
        list: &str,
        what: &str,
        (min, max): (i64, i64),
        example: &str,
    ) -> Result<(), SuiteError> {
        let mut seen: BTreeMap<i64, &Node> = BTreeMap::new();
        for item in self.list(node, list, example)? {
            let v = self.whole(item, what, min, max, example)?;
            if let Some(first) = seen.insert(v, item) {
                return Err(self.err(
                    item,
                    format!(
                        "`{list}` lists {v} twice (first at {}); each value would run the same cells again and write duplicate rows: remove one",
                        position(first)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A list of distinct names.
    fn distinct_names(&self, node: &Node, list: &str, example: &str) -> Result<(), SuiteError> {
        let mut seen: BTreeMap<&str, &Node> = BTreeMap::new();
        for item in self.list(node, list, example)? {
            self.text(item, list, example)?;
            let name = item.as_scalar().map(|s| s.as_str()).unwrap_or_default();
            if let Some(first) = seen.insert(name, item) {
                return Err(self.err(
                    item,
                    format!(
                        "`{list}` names `{}` twice (first at {}); its cells would run twice: remove one",
                        shown(name),
                        position(first)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A plugin's settings: a mapping, or nothing.
    fn settings(&self, node: &Node, what: &str, example: &str) -> Result<(), SuiteError> {
        if node.as_mapping().is_some() || is_null(node) {
            Ok(())
        } else {
            Err(self.err(
                node,
                format!(
                    "`{what}` must be a mapping of settings, e.g. `{example}`; got {}",
                    describe_node(node)
                ),
            ))
        }
    }

    fn boolean(&self, node: &Node, what: &str) -> Result<(), SuiteError> {
        match node.as_scalar() {
            Some(s) if s.may_coerce() && s.as_bool().is_some() => Ok(()),
            _ => Err(self.err(
                node,
                format!(
                    "`{what}` must be `true` or `false`; got {}",
                    describe_node(node)
                ),
            )),
        }
    }

    /// Unknown keys (with a suggestion) and missing required keys of one mapping.
    fn keys(
        &self,
        node: &Node,
        map: &marked_yaml::types::MarkedMappingNode,
        place: &str,
        fields: &[&str],
        required: &[(&str, &str)],
    ) -> Result<(), SuiteError> {
        if !fields.is_empty() {
            for (key, _) in map.iter() {
                let k = key.as_str();
                if fields.contains(&k) {
                    continue;
                }
                let clean: String = k.chars().filter(|c| !invisible(*c)).collect();
                let mut message = format!("unknown key `{}` in {place}", shown(k));
                if clean != k {
                    message.push_str(&format!(
                        " (it contains an invisible character such as a byte-order mark; delete it{})",
                        if fields.contains(&clean.as_str()) {
                            format!(" to get `{clean}`")
                        } else {
                            String::new()
                        }
                    ));
                }
                message.push_str(&did_you_mean(&clean, fields.iter().copied()));
                return Err(SuiteError::at(self.source, key.span(), message));
            }
        }
        // A mapping's own mark is where its first value starts; point at its first key.
        let at = map.keys().next().map(|k| *k.span()).unwrap_or(*node.span());
        for (key, hint) in required {
            if map.get_node(key).is_none() {
                return Err(SuiteError::at(
                    self.source,
                    &at,
                    format!("{place} has no `{key}` ({hint})"),
                ));
            }
        }
        Ok(())
    }

    /// An error about an empty value (`samples:` and nothing) is marked where the next token
    /// starts, often on the next line: point at its key instead.
    fn at_key<T>(
        &self,
        key: &marked_yaml::types::MarkedScalarNode,
        value: &Node,
        result: Result<T, SuiteError>,
    ) -> Result<T, SuiteError> {
        result.map_err(|mut e| {
            let empty = value
                .as_scalar()
                .is_some_and(|s| s.may_coerce() && s.as_str().is_empty());
            let here = value.span().start().map(|m| (m.line(), m.column()));
            if empty && e.location.as_ref().map(|l| (l.line, l.column)) == here {
                let message = std::mem::take(&mut e.message);
                e = SuiteError::at(self.source, key.span(), message);
            }
            e
        })
    }

    /// One entry of `tasks`, `models` or `samplers`: a mapping.
    fn entry<'n>(
        &self,
        node: &'n Node,
        section: &str,
        example: &str,
    ) -> Result<&'n marked_yaml::types::MarkedMappingNode, SuiteError> {
        node.as_mapping().ok_or_else(|| {
            self.err(
                node,
                format!(
                    "each entry of `{section}` must be a mapping, e.g. `- {example}`; got {}",
                    describe_node(node)
                ),
            )
        })
    }
}

const TASK_EXAMPLE: &str = "{name: bigram, plugin: dlm-formal, task: ngram, config: {order: 2}}";
const MODEL_EXAMPLE: &str = "{name: oracle, plugin: dlm-formal, model: oracle}";
const SAMPLER_EXAMPLE: &str = "{sampler: ddpm_cache, steps: [1, 4, 16]}";
const PLUGIN_HINT: &str =
    "the plugin: a workspace crate such as `dlm-formal`, or a path to a plugin library";

/// Types, ranges, required and unknown keys, and repeated values of the whole tree.
fn check_shape(node: &Node, source: &SuiteSource) -> Result<(), SuiteError> {
    let c = Check { source };
    let Some(top) = node.as_mapping() else {
        return Err(c.err(node, "the top level must be a mapping of suite keys (name, samples, lengths, tasks, models, samplers, …)"));
    };
    if top.is_empty() {
        return Err(c.err(
            node,
            "the suite is empty; it needs `name`, `lengths`, `tasks`, `models` and `samplers` (README, \"Suites\")",
        ));
    }
    c.keys(
        node,
        top,
        "the suite",
        serde_fields::<RawSuite>(),
        &[
            ("name", "the suite's name, e.g. `name: quick`"),
            ("lengths", "the sequence lengths to sample, e.g. `lengths: [64]`"),
            ("tasks", "e.g. `tasks: [{name: bigram, plugin: dlm-formal, task: ngram, config: {order: 2}}]`"),
            ("models", "e.g. `models: [{name: oracle, plugin: dlm-formal, model: oracle}]`"),
            ("samplers", "e.g. `samplers: [{sampler: ddpm_cache, steps: [1, 4, 16]}]`"),
        ],
    )?;
    for (key, v) in top.iter() {
        c.at_key(key, v, check_top_value(&c, key.as_str(), v))?;
    }
    Ok(())
}

/// One top-level value.
fn check_top_value(c: &Check, key: &str, v: &Node) -> Result<(), SuiteError> {
    match key {
        "name" => c.text(v, "name", "name: quick")?,
        "description" if v.as_scalar().is_none() => {
            return Err(c.err(
                v,
                format!("`description` must be text; got {}", describe_node(v)),
            ));
        }
        "samples" => drop(c.whole(v, "samples", 1, MAX_SAMPLES, "samples: 400")?),
        "batch_size" => drop(c.whole(v, "batch_size", 1, MAX_BATCH_SIZE, "batch_size: 50")?),
        "timeout_seconds" => drop(c.seconds(v, "timeout_seconds", "timeout_seconds: 300")?),
        "reference" => c.boolean(v, "reference")?,
        "lengths" => c.distinct_wholes(v, "lengths", "length", (1, MAX_LENGTH), "lengths: [64]")?,
        "seeds" => c.distinct_wholes(v, "seeds", "seed", (0, i64::MAX), "seeds: [0, 1]")?,
        "tasks" => {
            for t in c.list(v, "tasks", &format!("tasks: [{TASK_EXAMPLE}]"))? {
                let map = c.entry(t, "tasks", TASK_EXAMPLE)?;
                c.keys(
                    t,
                    map,
                    "this `tasks` entry",
                    serde_fields::<RawTask>(),
                    &[
                        ("name", "its name in reports, e.g. `name: bigram`"),
                        ("plugin", PLUGIN_HINT),
                        ("task", "the task inside the plugin, e.g. `task: ngram`"),
                    ],
                )?;
                for (k, x) in map.iter() {
                    let checked = match k.as_str() {
                        "name" => c.text(x, "name", "name: bigram"),
                        "plugin" => c.text(x, "plugin", "plugin: dlm-formal"),
                        "task" => c.text(x, "task", "task: ngram"),
                        "config" => c.settings(x, "config", "config: {order: 2}"),
                        _ => Ok(()),
                    };
                    c.at_key(k, x, checked)?;
                }
            }
        }
        "models" => {
            for m in c.list(v, "models", &format!("models: [{MODEL_EXAMPLE}]"))? {
                let map = c.entry(m, "models", MODEL_EXAMPLE)?;
                c.keys(
                    m,
                    map,
                    "this `models` entry",
                    serde_fields::<RawModel>(),
                    &[
                        ("name", "its name in reports, e.g. `name: oracle`"),
                        ("plugin", PLUGIN_HINT),
                        ("model", "the model inside the plugin, e.g. `model: oracle`"),
                    ],
                )?;
                for (k, x) in map.iter() {
                    let checked = match k.as_str() {
                        "name" => c.text(x, "name", "name: oracle"),
                        "plugin" => c.text(x, "plugin", "plugin: dlm-formal"),
                        "model" => c.text(x, "model", "model: oracle"),
                        "baseline" => c.text(x, "baseline", "baseline: ar"),
                        "config" => c.settings(x, "config", "config: {hidden: 32}"),
                        "samplers" => c.distinct_names(x, "samplers", "samplers: [ddpm_cache]"),
                        "tasks" => c.distinct_names(x, "tasks", "tasks: [bigram]"),
                        _ => Ok(()),
                    };
                    c.at_key(k, x, checked)?;
                }
            }
        }
        "samplers" => {
            for s in c.list(v, "samplers", &format!("samplers: [{SAMPLER_EXAMPLE}]"))? {
                let map = c.entry(s, "samplers", SAMPLER_EXAMPLE)?;
                c.keys(
                    s,
                    map,
                    "this `samplers` entry",
                    serde_fields::<RawSampler>(),
                    &[("sampler", "the sampler's name, e.g. `sampler: ddpm_cache`")],
                )?;
                for (k, x) in map.iter() {
                    let checked = match k.as_str() {
                        "sampler" => c.text(x, "sampler", "sampler: ddpm_cache"),
                        "steps" => c.distinct_wholes(
                            x,
                            "steps",
                            "steps",
                            (1, MAX_STEPS),
                            "steps: [1, 4, 16]",
                        ),
                        "schedule" => c.text(x, "schedule", "schedule: linear"),
                        "params" => c.settings(x, "params", "params: {block_length: 32}"),
                        _ => Ok(()),
                    };
                    c.at_key(k, x, checked)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// What a cell holds in memory, and how many cells there are, against the limits.
fn check_sizes(
    suite: &Suite,
    top: &marked_yaml::types::MarkedMappingNode,
) -> Result<(), SuiteError> {
    let source = &suite.source;
    let longest = suite.lengths.iter().copied().max().unwrap_or(1) as u128;
    // Locate at the value that makes a product too large: the number if it was written,
    // otherwise the longest length.
    let length_node = top.get_sequence("lengths").and_then(|seq| {
        seq.iter()
            .find(|n| n.as_scalar().and_then(|s| s.as_str().parse::<u128>().ok()) == Some(longest))
    });
    let at = |key: &str| {
        top.get_node(key)
            .or(length_node)
            .map(|n| *n.span())
            .unwrap_or_else(marked_yaml::Span::new_blank)
    };

    let samples = suite.samples as u128;
    if samples * longest > MAX_CELL_TOKENS {
        return Err(SuiteError::at(
            source,
            &at("samples"),
            format!(
                "samples × length = {samples} × {longest} = {} tokens in one cell, about {} for the harness to hold; the limit is {MAX_CELL_TOKENS} tokens per cell ({}): lower `samples` or the length",
                samples * longest,
                gib((samples * longest) as f64 * BYTES_PER_HELD_TOKEN),
                gib(MAX_CELL_TOKENS as f64 * BYTES_PER_HELD_TOKEN),
            ),
        ));
    }
    let batch = suite.batch_size.min(suite.samples) as u128;
    if batch * longest > MAX_BATCH_TOKENS {
        return Err(SuiteError::at(
            source,
            &at("batch_size"),
            format!(
                "batch_size × length = {batch} × {longest} = {} tokens per generate call; a plugin holds batch × length × vocabulary probabilities of 8 bytes, at least {} even for a vocabulary of 8; the limit is {MAX_BATCH_TOKENS} tokens per batch: lower `batch_size`",
                batch * longest,
                gib((batch * longest) as f64 * 64.0),
            ),
        ));
    }
    let models = top.get_sequence("models");
    for (i, m) in suite.models.iter().enumerate() {
        let Some(t) = &m.train else { continue };
        let train = models
            .and_then(|seq| seq.get_node(i))
            .and_then(Node::as_mapping)
            .and_then(|map| map.get_mapping("train"));
        let at = |key: &str| {
            train
                .and_then(|map| map.get_node(key))
                .map(|n| *n.span())
                .or(m.train_span)
                .unwrap_or_else(marked_yaml::Span::new_blank)
        };
        let batch = t.batch_size as u128;
        if batch * longest > MAX_BATCH_TOKENS {
            return Err(SuiteError::at(
                source,
                &at("batch_size"),
                format!(
                    "train.batch_size × length = {batch} × {longest} = {} tokens per training step; the limit is {MAX_BATCH_TOKENS} (a model holds activations for every token of a step): lower `train.batch_size`",
                    batch * longest
                ),
            ));
        }
        let held = t.validation_samples as u128;
        if held * longest > MAX_CELL_TOKENS {
            return Err(SuiteError::at(
                source,
                &at("validation_samples"),
                format!(
                    "train.validation_samples × length = {held} × {longest} = {} tokens held for validation, about {}; the limit is {MAX_CELL_TOKENS} tokens: lower `train.validation_samples`",
                    held * longest,
                    gib((held * longest) as f64 * BYTES_PER_HELD_TOKEN),
                ),
            ));
        }
    }
    // Cells, counted without expanding the sweep.
    let mut per_length_seed: u128 = 0;
    for ti in 0..suite.tasks.len() {
        per_length_seed += u128::from(suite.reference);
        for m in suite.models.iter().filter(|m| m.tasks.contains(&ti)) {
            for &si in &m.samplers {
                per_length_seed += suite.samplers[si].steps.len().max(1) as u128;
            }
        }
    }
    let cells = per_length_seed * suite.lengths.len() as u128 * suite.seeds.len() as u128;
    if cells > MAX_CELLS {
        return Err(SuiteError::at(
            source,
            &top.get_node("seeds")
                .or(top.get_node("lengths"))
                .map(|n| *n.span())
                .unwrap_or_else(marked_yaml::Span::new_blank),
            format!(
                "the sweep has {cells} cells (seeds × lengths × tasks × (reference + models × samplers × steps)); the limit is {MAX_CELLS}, and each cell is a worker process: split the suite"
            ),
        ));
    }
    Ok(())
}

/// Two sampler entries with the same sampler, schedule and params must not share a step count
/// (their cells would run twice).
fn check_repeated_samplers(
    source: &SuiteSource,
    raw: &[RawSampler],
    samplers: &[SamplerEntry],
) -> Result<(), SuiteError> {
    type Key = (String, Option<String>, String, Option<usize>);
    let mut seen: HashMap<Key, marked_yaml::Span> = HashMap::new();
    for (r, s) in raw.iter().zip(samplers) {
        let params = serde_json::to_string(&s.params).unwrap_or_default();
        let points: Vec<(Option<usize>, marked_yaml::Span)> = match &r.steps {
            Some(steps) => steps
                .iter()
                .map(|v| (Some(**v as usize), *v.span()))
                .collect(),
            None => vec![(None, *r.sampler.span())],
        };
        for (step, span) in points {
            let key = (s.sampler.clone(), s.schedule.clone(), params.clone(), step);
            if let Some(first) = seen.insert(key, span) {
                let at = first
                    .start()
                    .map(|m| format!("line {}:{}", m.line(), m.column()))
                    .unwrap_or_else(|| "earlier".into());
                let what = match step {
                    Some(n) => format!("sampler `{}` with {n} steps", s.sampler),
                    None => format!("sampler `{}`", s.sampler),
                };
                return Err(SuiteError::at(
                    source,
                    &span,
                    format!(
                        "{what} is already listed at {at} with the same schedule and params; its cells would run twice and write duplicate rows: remove one"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A YAML syntax error, located.
fn load_error(source: &SuiteSource, e: marked_yaml::LoadError) -> SuiteError {
    use marked_yaml::LoadError as L;
    #[allow(deprecated)] // ScanError::description is yaml-rust's only access to the bare message
    let (marker, message) = match &e {
        L::TopLevelMustBeMapping(m) => (
            *m,
            "the top level must be a mapping of suite keys".to_string(),
        ),
        L::TopLevelMustBeSequence(m) => (*m, "the top level must be a sequence".to_string()),
        L::UnexpectedAnchor(m) => (
            *m,
            "YAML anchors and aliases are not supported in suites".to_string(),
        ),
        L::MappingKeyMustBeScalar(m) => (*m, "mapping keys must be plain strings".to_string()),
        L::UnexpectedTag(m) => (*m, "YAML tags are not supported in suites".to_string()),
        L::ScanError(m, err) => (*m, std::error::Error::description(err).to_string()),
        L::DuplicateKey(inner) => match inner.key.span().start() {
            Some(m) => (*m, format!("duplicate key `{}`", inner.key.as_str())),
            None => return SuiteError::whole_file(&source.path, format!("invalid YAML: {e}")),
        },
    };
    SuiteError::at(
        source,
        &marked_yaml::Span::new_start(marker),
        format!("invalid YAML: {message}"),
    )
}

/// Span of the first mapping key named `key`, depth first.
fn find_key(node: &Node, key: &str) -> Option<marked_yaml::Span> {
    match node {
        Node::Scalar(_) => None,
        Node::Sequence(seq) => seq.iter().find_map(|n| find_key(n, key)),
        Node::Mapping(map) => map.iter().find_map(|(k, v)| {
            if k.as_str() == key {
                Some(*k.span())
            } else {
                find_key(v, key)
            }
        }),
    }
}

/// Convert the `config` of `section[index]` from the YAML tree to JSON, typing plain scalars.
fn section_config(
    top: &marked_yaml::types::MarkedMappingNode,
    section: &str,
    index: usize,
    source: &SuiteSource,
) -> Result<Value, SuiteError> {
    section_value(top, &[section], index, "config", source)
}

fn section_value(
    top: &marked_yaml::types::MarkedMappingNode,
    path: &[&str],
    index: usize,
    key: &str,
    source: &SuiteSource,
) -> Result<Value, SuiteError> {
    let entry = top
        .get_sequence(path[0])
        .and_then(|seq| seq.get_node(index))
        .and_then(Node::as_mapping);
    match entry.and_then(|m| m.get_node(key)) {
        None => Ok(Value::Null),
        Some(node) => yaml_to_json(node, source),
    }
}

/// YAML → JSON with YAML 1.2 core-schema typing of unquoted scalars.
pub fn yaml_to_json(node: &Node, source: &SuiteSource) -> Result<Value, SuiteError> {
    Ok(match node {
        Node::Scalar(s) => {
            let text = s.as_str();
            if !s.may_coerce() {
                Value::String(text.to_string())
            } else if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
                Value::Null
            } else if let Some(b) = s.as_bool() {
                Value::Bool(b)
            } else if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else if let Ok(f) = text.parse::<f64>() {
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| {
                        SuiteError::at(source, s.span(), format!("`{text}` is not a finite number"))
                    })?
            } else {
                Value::String(text.to_string())
            }
        }
        Node::Sequence(seq) => Value::Array(
            seq.iter()
                .map(|n| yaml_to_json(n, source))
                .collect::<Result<_, _>>()?,
        ),
        Node::Mapping(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.as_str().to_string(), yaml_to_json(v, source)?)))
                .collect::<Result<_, SuiteError>>()?,
        ),
    })
}

/// A task or model as a cell sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentSpec {
    /// Name in the suite.
    pub name: String,
    pub plugin: PluginRef,
    /// Component name inside the plugin.
    pub component: String,
    #[serde(default)]
    pub config: Value,
    /// Models only: train before sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<TrainSpec>,
    /// Models only: the suite's `baseline:` (not part of the cell's identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

/// One benchmark cell: a task, a model with a sampler (or the ground-truth reference row when
/// `model` is `None`), a length and a seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    pub task: ComponentSpec,
    pub model: Option<ComponentSpec>,
    pub sampler: Option<SamplerSpec>,
    pub length: usize,
    pub seed: u64,
    pub n: usize,
    pub batch_size: usize,
    pub timeout_seconds: f64,
}

impl CellSpec {
    /// Human-readable key: `task/model/sampler@steps/L<length>/seed<seed>`.
    pub fn key(&self) -> String {
        let model = self
            .model
            .as_ref()
            .map(|m| m.name.as_str())
            .unwrap_or("reference");
        let sampler = self
            .sampler
            .as_ref()
            .map(SamplerSpec::label)
            .unwrap_or_else(|| "ground-truth".into());
        format!(
            "{}/{}/{}/L{}/seed{}",
            self.task.name, model, sampler, self.length, self.seed
        )
    }

    /// Content hash of everything that determines the cell's samples (not where plugins live,
    /// not the timeout), so a moved checkout resumes the same units.
    pub fn unit_id(&self) -> String {
        let identity = serde_json::json!({
            "task": [&self.task.name, &self.task.component, &self.task.config],
            "model": self.model.as_ref().map(|m| match &m.train {
                None => serde_json::json!([&m.name, &m.component, &m.config]),
                Some(t) => serde_json::json!([&m.name, &m.component, &m.config, t.identity()]),
            }),
            "sampler": &self.sampler,
            "length": self.length,
            "seed": self.seed,
            "n": self.n,
        });
        hex(&Sha256::digest(identity.to_string().as_bytes()))[..16].to_string()
    }

    pub fn is_reference(&self) -> bool {
        self.model.is_none()
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name: t
samples: 10
lengths: [8, 16]
seeds: [0, 1]
tasks:
  - name: bigram
    plugin: dlm-formal
    task: ngram
    config: {order: 2, variant: ser, label: "007", temperature: 2.0}
models:
  - name: oracle
    plugin: ../lib/libx.so
    model: oracle
samplers:
  - sampler: ddpm_cache
    steps: [1, 4]
  - sampler: left_to_right
"#;

    fn parse(text: &str) -> Result<Suite, SuiteError> {
        Suite::parse(Path::new("suites/t.yaml"), text.to_string())
    }

    #[test]
    fn every_shipped_suite_parses_and_expands() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                let suite = Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
                assert!(!suite.cells().is_empty(), "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen >= 3, "quick, cpu-fig1 and paper-fig1 at least");
        // Models with `tasks:` run only on those tasks, and trained models carry `train:`.
        let fig1 = Suite::load(&dir.join("paper-fig1.yaml")).unwrap();
        let cells = fig1.cells();
        let on = |model: &str, task: &str| {
            cells.iter().any(|c| {
                c.model
                    .as_ref()
                    .is_some_and(|m| m.name == model && m.train.is_some())
                    && c.task.name == task
            })
        };
        assert!(on("mdm-10", "4gram") && !on("mdm-10", "2gram") && !on("mdm", "4gram"));
    }

    #[test]
    fn parses_and_expands() {
        let s = parse(GOOD).unwrap();
        assert_eq!(s.lengths, vec![8, 16]);
        assert_eq!(s.tasks[0].config["order"], Value::from(2));
        assert_eq!(s.tasks[0].config["label"], Value::from("007"));
        assert_eq!(s.tasks[0].config["temperature"], Value::from(2.0));
        assert_eq!(
            s.models[0].plugin,
            PluginRef::Path(PathBuf::from("suites/../lib/libx.so"))
        );
        assert_eq!(s.tasks[0].plugin, PluginRef::Crate("dlm-formal".into()));
        let cells = s.cells();
        // 2 seeds × 2 lengths × (reference + 2 ddpm_cache steps + 1 left_to_right)
        assert_eq!(cells.len(), 2 * 2 * 4);
        let l2r: Vec<_> = cells
            .iter()
            .filter(|c| {
                c.sampler
                    .as_ref()
                    .is_some_and(|s| s.name == "left_to_right")
            })
            .collect();
        assert!(l2r
            .iter()
            .all(|c| c.sampler.as_ref().unwrap().steps == c.length));
        let ids: HashSet<_> = cells.iter().map(CellSpec::unit_id).collect();
        assert_eq!(ids.len(), cells.len(), "unit ids are unique");
    }

    fn error_of(text: &str) -> SuiteError {
        match parse(text) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e,
        }
    }

    #[test]
    fn memory_limit_parses_and_bad_values_are_located() {
        assert_eq!(parse(GOOD).unwrap().memory_limit, MemoryLimit::Default);
        for (text, want) in [
            ("8GiB", MemoryLimit::Bytes(8 << 30)),
            ("512 MiB", MemoryLimit::Bytes(512 << 20)),
            ("1.5g", MemoryLimit::Bytes(3 << 29)),
            ("2GB", MemoryLimit::Bytes(2_000_000_000)),
            ("1048576", MemoryLimit::Bytes(1 << 20)),
            ("none", MemoryLimit::Unlimited),
        ] {
            let suite =
                parse(&GOOD.replace("samples: 10", &format!("samples: 10\nmemory_limit: {text}")));
            assert_eq!(suite.unwrap().memory_limit, want, "{text}");
        }
        let e = error_of(&GOOD.replace("samples: 10", "samples: 10\nmemory_limit: lots"));
        let l = e.location.clone().unwrap();
        assert_eq!((l.line, l.column), (4, 15), "{e}");
        assert!(e.to_string().contains("memory_limit must be a size"), "{e}");
        assert!(
            error_of(&GOOD.replace("samples: 10", "samples: 10\nmemory_limit: 0"))
                .to_string()
                .contains("memory_limit")
        );
    }

    #[test]
    fn zero_steps_is_located() {
        let e = error_of(&GOOD.replace("steps: [1, 4]", "steps: [1, 0]"));
        let l = e.location.clone().unwrap();
        assert_eq!((l.line, l.column), (17, 16), "{e}");
        assert!(e.to_string().contains("steps must be at least 1"), "{e}");
        assert!(e.to_string().starts_with("suites/t.yaml:17:16:"), "{e}");
    }

    #[test]
    fn unknown_key_is_located() {
        let e = error_of(&GOOD.replace("samples: 10", "sample: 10"));
        let l = e.location.clone().expect("located");
        assert_eq!(l.line, 3, "{e}");
        assert!(e.message.contains("sample"), "{e}");
    }

    #[test]
    fn syntax_error_names_line() {
        let e = error_of("name: t\nlengths: [1, 2\ntasks: []\n");
        assert!(e.to_string().starts_with("suites/t.yaml"), "{e}");
        assert!(e.to_string().contains(':'), "{e}");
    }

    #[test]
    fn wrong_type_is_located() {
        let e = error_of(&GOOD.replace("lengths: [8, 16]", "lengths: [8, sixteen]"));
        let l = e.location.clone().expect("located");
        assert_eq!(l.line, 4, "{e}");
    }

    #[test]
    fn model_sampler_typo_suggests() {
        let e = error_of(&GOOD.replace(
            "    model: oracle",
            "    model: oracle\n    samplers: [ddpm_cach]",
        ));
        assert!(e.message.contains("did you mean `ddpm_cache`"), "{e}");
    }

    #[test]
    fn every_test_suite_passes_the_stricter_checks() {
        // tests/suites/malformed/ holds the refused ones (tests/suite_errors.rs).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suites");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }

    #[test]
    fn serde_field_lists_are_probed() {
        // The shape checks learn the accepted keys from the serde structs themselves.
        assert!(serde_fields::<RawSuite>().contains(&"samplers"));
        assert!(serde_fields::<RawSuite>().contains(&"timeout_seconds"));
        assert!(serde_fields::<RawTask>().contains(&"config"));
        assert!(serde_fields::<RawModel>().contains(&"train"));
        assert!(serde_fields::<RawSampler>().contains(&"params"));
    }

    #[test]
    fn a_config_for_a_model_and_null_settings_still_parse() {
        let s = parse(&GOOD.replace(
            "    model: oracle",
            "    model: oracle\n    config:\n    samplers: [ddpm_cache, left_to_right]",
        ))
        .unwrap();
        assert_eq!(s.models[0].config, Value::Null);
        assert_eq!(s.models[0].samplers, vec![0, 1]);
    }

    #[test]
    fn garbage_never_panics() {
        for text in [
            "",
            "[]",
            "- 1\n- 2",
            "name: [1]",
            ":",
            "name: t\nlengths: 3\n",
            "\t\tx",
            "name: t\ntasks: {a: 1}",
        ] {
            assert!(parse(text).is_err(), "{text:?}");
        }
    }
}
