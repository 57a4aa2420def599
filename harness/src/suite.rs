//! Suites: YAML files that declare a sweep (tasks × models × samplers × steps × lengths ×
//! seeds), parsed with source positions so every error names file, line and column.

use dlm_plugin_api::SamplerSpec;
use marked_yaml::{Node, Spanned};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
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
    let int = |v: &Node, what: &str, min: i64| -> Result<i64, SuiteError> {
        match v.as_scalar().and_then(|s| s.as_str().parse::<i64>().ok()) {
            Some(i) if i >= min => Ok(i),
            _ => Err(SuiteError::at(
                source,
                v.span(),
                format!("train.{what} must be an integer ≥ {min}"),
            )),
        }
    };
    let (mut steps, mut batch_size, mut seed) = (None, None, 0u64);
    let (mut every, mut validation_samples, mut timeout) = (None, 512usize, 3600.0f64);
    let mut options = serde_json::Map::new();
    for (k, v) in map.iter() {
        match k.as_str() {
            "steps" => steps = Some(int(v, "steps", 1)? as usize),
            "batch_size" => batch_size = Some(int(v, "batch_size", 1)? as usize),
            "seed" => seed = int(v, "seed", 0)? as u64,
            "validation_every" => every = Some(int(v, "validation_every", 1)? as usize),
            "validation_samples" => validation_samples = int(v, "validation_samples", 1)? as usize,
            "timeout_seconds" => {
                timeout = match v.as_scalar().and_then(|s| s.as_str().parse::<f64>().ok()) {
                    Some(t) if t > 0.0 && t.is_finite() => t,
                    _ => {
                        return Err(SuiteError::at(
                            source,
                            v.span(),
                            "train.timeout_seconds must be a positive number",
                        ))
                    }
                }
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
    pub steps: Vec<usize>,
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
    pub reference: bool,
    pub lengths: Vec<usize>,
    pub seeds: Vec<u64>,
    pub tasks: Vec<TaskEntry>,
    pub models: Vec<ModelEntry>,
    pub samplers: Vec<SamplerEntry>,
    /// sha256 of the file's bytes.
    pub hash: String,
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
        let text = std::fs::read_to_string(path)
            .map_err(|e| SuiteError::whole_file(path, format!("cannot read suite file: {e}")))?;
        Suite::parse(path, text)
    }

    pub fn parse(path: &Path, text: String) -> Result<Suite, SuiteError> {
        let hash = hex(&Sha256::digest(text.as_bytes()));
        let source = SuiteSource {
            path: path.to_owned(),
            text,
        };
        let options = marked_yaml::LoaderOptions::default()
            .error_on_duplicate_keys(true)
            .prevent_coercion(true);
        let node = marked_yaml::parse_yaml_with_options(0, &source.text, options)
            .map_err(|e| load_error(&source, e))?;
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
            let one_step_per_token = matches!(s.sampler.as_str(), "left_to_right" | "ar");
            let steps = match &s.steps {
                Some(steps) if one_step_per_token => {
                    return Err(SuiteError::at(
                        &source,
                        steps.span(),
                        format!(
                            "{} takes exactly one step per token; remove `steps`",
                            *s.sampler
                        ),
                    ))
                }
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
                None if one_step_per_token => Vec::new(),
                None => {
                    return Err(SuiteError::at(
                        &source,
                        s.sampler.span(),
                        format!("sampler `{}` needs `steps: [...]`", *s.sampler),
                    ))
                }
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
                steps,
                schedule: s.schedule.as_ref().map(|x| x.to_string()),
                params,
            });
        }
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
            });
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
        if raw.name.trim().is_empty() {
            return Err(SuiteError::at(
                &source,
                raw.name.span(),
                "`name` must not be empty",
            ));
        }
        Ok(Suite {
            name: raw.name.to_string(),
            description: raw.description.unwrap_or_default(),
            samples,
            batch_size,
            timeout_seconds,
            reference: raw.reference.unwrap_or(true),
            lengths,
            seeds,
            tasks,
            models,
            samplers,
            hash,
            source,
        })
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
    fn left_to_right_with_steps_and_missing_steps_are_errors() {
        let e = error_of(&GOOD.replace(
            "  - sampler: left_to_right",
            "  - sampler: left_to_right\n    steps: [3]",
        ));
        assert!(e.message.contains("one step per token"), "{e}");
        let e = error_of(&GOOD.replace("    steps: [1, 4]\n", ""));
        assert!(e.message.contains("needs `steps"), "{e}");
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
