//! The plugin face of the formal languages: tasks `ngram`, `hmm`, `file` and `interval`, and
//! the exact oracle denoiser `oracle`, exported through `dlm_sdk::export_plugin!`.
//!
//! # Task configuration (suite `config:`)
//!
//! `ngram` and `hmm` (random languages of Table 1), all keys optional except `order`:
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `order` | n of the n-gram (`ngram` only) | — |
//! | `states` | hidden states (`hmm` only) | 32 |
//! | `variant` | `ter` (threshold 0, full support), `ser` (Table 1 threshold) or, `hmm` only, `sparse` (below) | `ter` |
//! | `seed` | seed of the language's parameters | 0 |
//! | `vocab` | vocabulary size | 8 |
//! | `temperature` | sharpening temperature | Table 1 (2, or 3.2 for the HMM) |
//! | `threshold` | pruning threshold; overrides `variant` | Table 1 for `ser` and `sparse` |
//! | `max_successors` | successor states kept per hidden state (`variant: sparse` only) | 4 |
//! | `emission_threshold` | threshold on the emission rows (`variant: sparse` only; `threshold` then prunes the initial and transition rows) | 0.05 |
//!
//! `variant: sparse` (`hmm` only) is the HMM with genuinely sparse transitions ("The sparse
//! HMM" in [`crate::language`]): Table 1's SER variant (temperature 3.2, threshold 0.003, the
//! same draws for the same seed) with two changes, every transition row cut to its
//! `max_successors` most likely successor states, and emissions pruned at
//! `emission_threshold` instead of 0.003 (≈2.4 instead of ≈5 tokens per state; sparse
//! transitions alone leave the support density at ≈1). Table 1's own SER HMM prunes no token
//! sequence (support density 1, SER always 0); the sparse one does, and its support density,
//! reported exactly by `describe`, falls geometrically with `L` (seed 0: 0.053 at `L = 64`).
//! Its oracle fallback is the TER variant of the same seed. For example `{variant: sparse}` or
//! `{variant: sparse, max_successors: 3, seed: 1}`.
//!
//! `file` (a user's n-gram or HMM tables; schema in [`crate::file`]):
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `path` | the YAML or JSON (`.json`) file; relative to the current working directory | — |
//! | `variant` | `ser`: the tables as written; `ter`: every row `p` replaced by `(1-ε)·p + ε/n` (full support, finite generative perplexity) | `ser` |
//! | `smoothing` | `ε` of the `ter` variant and of the oracle's fallback | `1e-3` |
//!
//! `interval` (the worst case of Theorem 4.4; definition in [`crate::language`]):
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `interval` | interval length `k >= 2` | — |
//! | `vocab` | vocabulary size | 8 |
//! | `modulus` | first and last token of an interval agree modulo this (2: parity) | 2 |
//!
//! # The oracle
//!
//! The oracle takes no configuration: it serves the language of the task it is bound to (for a
//! `file` task it reads the same file and refuses to run if its content changed since the task
//! was described).

use crate::file::{self, FileKind};
use crate::language::{Language, LanguageError, SequenceScore, SparseHmm};
use dlm_sdk::sampler::sample_rng;
use dlm_sdk::{
    denoiser_component, ComponentInfo, Denoiser, DenoiserModel, IntervalSer, Model,
    ModelOpenConfig, Plugin, PluginError, Result, SampleReferenceRequest, SampleScore, Task,
    TaskDescription, TheoremCheck,
};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;

pub const PLUGIN_NAME: &str = "dlm-formal";

/// Task components of this plugin.
pub const TASKS: &[&str] = &["ngram", "hmm", "file", "interval"];

/// `ε` of a file language's TER variant and of the oracle's fallback for it.
pub const DEFAULT_FILE_SMOOTHING: f64 = 1e-3;

/// Stream tag so reference samples never share a random stream with a model's samples.
const REFERENCE_STREAM: u64 = 0x5EF0_0000_0000_0000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum VariantName {
    #[default]
    Ter,
    Ser,
    /// `hmm` only: the sparse-transition HMM ([`Language::sparse_hmm`]).
    Sparse,
}

/// An `ngram` or `hmm` task's configuration as a suite writes it.
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
    #[serde(default)]
    pub max_successors: Option<usize>,
    #[serde(default)]
    pub emission_threshold: Option<f64>,
}

/// A `file` task's configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub path: String,
    #[serde(default)]
    pub variant: Option<VariantName>,
    #[serde(default)]
    pub smoothing: Option<f64>,
}

/// An `interval` task's configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalConfig {
    pub interval: usize,
    #[serde(default)]
    pub vocab: Option<usize>,
    #[serde(default)]
    pub modulus: Option<usize>,
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

/// A language's parameters are the task's configuration, so their errors are configuration errors.
fn lang_err(e: LanguageError) -> PluginError {
    PluginError::bad_config(e.to_string())
}

/// A task's language with everything the task and the oracle need besides it.
#[derive(Debug, Clone)]
pub struct BuiltLanguage {
    pub language: Language,
    /// What the oracle answers with where the exact conditional does not exist (the unmasked
    /// tokens already have probability zero): the TER variant of a pruned `ngram`/`hmm`
    /// language, the smoothed tables of a `file` language with zero entries, the relaxed
    /// interval language ([`Language::relaxed`]). `None` when the language has full support.
    pub fallback: Option<Language>,
    /// Human label for reports.
    pub label: String,
    /// Task-specific facts for [`TaskDescription::details`].
    pub details: serde_json::Value,
    /// For a `file` task: the path and the content hash the language was read with.
    pub file: Option<(String, String)>,
    /// `ter`, `ser` or `sparse` for the random languages; `None` for the others.
    pub variant: Option<&'static str>,
}

/// Which of the paper's theorem checks a task is an instance of (see [`TheoremCheck`]):
/// * Theorem 4.2 (TER independent of L): an `ngram` language with full support (TER variant);
/// * Theorem 4.4 (SER steps linear in L), as one of its worst cases: the `interval` language
///   (with its exact closed form) and the sparse `hmm`;
/// * Theorem 4.4, measured beside the verdict: a pruned `ngram` (SER variant).
///
/// The dense `hmm` and `file` languages are instances of neither.
fn theorem_checks(
    task: &str,
    variant: &Option<&'static str>,
    language: &Language,
    length: usize,
) -> Vec<TheoremCheck> {
    let ser =
        |primary: bool, closed_form: Option<IntervalSer>| TheoremCheck::SerStepsLinearInLength {
            primary,
            closed_form,
        };
    match (task, *variant) {
        ("ngram", Some("ter")) => vec![TheoremCheck::TerIndependentOfLength],
        ("ngram", Some("ser")) => vec![ser(false, None)],
        ("hmm", Some("sparse")) => vec![ser(true, None)],
        ("interval", _) => {
            let closed_form = language
                .interval_violation_probability()
                .zip(language.interval_length())
                .map(|(violation_probability, k)| IntervalSer {
                    violation_probability,
                    complete_intervals: length / k,
                });
            vec![ser(true, closed_form)]
        }
        _ => Vec::new(),
    }
}

fn parse_config<T: serde::de::DeserializeOwned>(
    task: &str,
    config: &serde_json::Value,
) -> Result<T> {
    let value = if config.is_null() {
        json!({})
    } else {
        config.clone()
    };
    serde_json::from_value(value)
        .map_err(|e| PluginError::bad_config(format!("invalid `{task}` task config: {e}")))
}

/// Build the language a task component and its configuration describe.
pub fn build_language(task: &str, config: &serde_json::Value) -> Result<BuiltLanguage> {
    match task {
        "ngram" | "hmm" => build_random(task, parse_config(task, config)?),
        "file" => build_file(parse_config(task, config)?),
        "interval" => build_interval(parse_config(task, config)?),
        other => Err(PluginError::bad_config(format!(
            "plugin `{PLUGIN_NAME}` has no task `{other}`; tasks: {}",
            TASKS.join(", ")
        ))),
    }
}

fn build_random(task: &str, cfg: LanguageConfig) -> Result<BuiltLanguage> {
    let vocab = cfg.vocab.unwrap_or(8);
    let sparse = cfg.variant == VariantName::Sparse;
    if sparse && task != "hmm" {
        return Err(PluginError::bad_config(format!(
            "`variant: sparse` exists only for the `hmm` task (sparse transitions between hidden \
             states); the `{task}` task has variants ter and ser"
        )));
    }
    for (key, set) in [
        ("max_successors", cfg.max_successors.is_some()),
        ("emission_threshold", cfg.emission_threshold.is_some()),
    ] {
        if set && !sparse {
            return Err(PluginError::bad_config(format!(
                "`{key}` applies only to `variant: sparse` of the `hmm` task; add \
                 `variant: sparse` or remove `{key}`"
            )));
        }
    }
    let (default_temp, default_threshold) = table1_defaults(task, cfg.order);
    let temperature = cfg.temperature.unwrap_or(default_temp);
    let threshold = match (cfg.threshold, cfg.variant) {
        (Some(t), _) => t,
        (None, VariantName::Ter) => 0.0,
        (None, VariantName::Ser | VariantName::Sparse) => default_threshold.ok_or_else(|| {
            PluginError::bad_config(format!(
                "Table 1 gives no SER threshold for a {}-gram; set `threshold` in the task config",
                cfg.order.unwrap_or(0)
            ))
        })?,
    };
    let states = cfg.states.unwrap_or(32);
    let defaults = SparseHmm::default();
    let sparse_params = sparse.then(|| SparseHmm {
        states,
        vocab,
        temperature,
        threshold,
        emission_threshold: cfg
            .emission_threshold
            .unwrap_or(defaults.emission_threshold),
        max_successors: cfg.max_successors.unwrap_or(defaults.max_successors),
    });
    let make = |threshold: f64, sparse: Option<&SparseHmm>| -> Result<Language> {
        match (task, sparse) {
            ("ngram", _) => {
                let order = cfg.order.ok_or_else(|| {
                    PluginError::bad_config(
                        "the `ngram` task needs `order` (2, 3, 4, …) in its config",
                    )
                })?;
                Language::ngram(order, vocab, temperature, threshold, cfg.seed).map_err(lang_err)
            }
            (_, Some(params)) => Language::sparse_hmm(params, cfg.seed).map_err(lang_err),
            _ => Language::hmm(states, vocab, temperature, threshold, cfg.seed).map_err(lang_err),
        }
    };
    let language = make(threshold, sparse_params.as_ref())?;
    // The TER variant of the same draws: full support, the oracle's fallback.
    let fallback = if threshold > 0.0 || sparse {
        Some(make(0.0, None)?)
    } else {
        None
    };
    let variant = match sparse_params {
        Some(_) => "sparse",
        None if threshold > 0.0 => "ser",
        None => "ter",
    };
    let label = match &sparse_params {
        Some(p) => format!(
            "{} (sparse variant, at most {} successors per state)",
            language.kind_label(),
            p.max_successors
        ),
        None => format!(
            "{} ({} variant)",
            language.kind_label(),
            variant.to_uppercase()
        ),
    };
    let mut details = json!({
        "task": task,
        "kind": language.kind_label(),
        "order": language.order(),
        "hidden_states": language.hidden_states(),
        "variant": variant,
        "temperature": temperature,
        "threshold": threshold,
        "seed": cfg.seed,
    });
    if let (Some(p), Some(obj)) = (&sparse_params, details.as_object_mut()) {
        obj.insert("max_successors".into(), json!(p.max_successors));
        obj.insert("emission_threshold".into(), json!(p.emission_threshold));
        obj.insert(
            "support_density_method".into(),
            json!("exact: subset construction over reachable hidden-state sets"),
        );
    }
    Ok(BuiltLanguage {
        label,
        details,
        language,
        fallback,
        file: None,
        variant: Some(variant),
    })
}

fn build_file(cfg: FileConfig) -> Result<BuiltLanguage> {
    let smoothing = cfg.smoothing.unwrap_or(DEFAULT_FILE_SMOOTHING);
    if !(smoothing > 0.0 && smoothing <= 1.0) {
        return Err(PluginError::bad_config(format!(
            "`smoothing` must be in (0, 1] (got {smoothing}); the default is {DEFAULT_FILE_SMOOTHING}"
        )));
    }
    let f = file::load(&cfg.path).map_err(|e| PluginError::bad_data(e.0))?;
    let in_file = |e: LanguageError| PluginError::bad_data(format!("{}: {e}", cfg.path));
    if cfg.variant == Some(VariantName::Sparse) {
        return Err(PluginError::bad_config(format!(
            "`variant: sparse` exists only for the `hmm` task; a `file` task ({}) has variants \
             ser (the tables as written) and ter (smoothed)",
            cfg.path
        )));
    }
    let ter = cfg.variant == Some(VariantName::Ter);
    let (language, fallback) = if ter {
        (f.language.smoothed(smoothing).map_err(in_file)?, None)
    } else if f.language.has_zero_entries() {
        let fallback = f.language.smoothed(smoothing).map_err(in_file)?;
        (f.language.clone(), Some(fallback))
    } else {
        (f.language.clone(), None)
    };
    let kind = match f.kind {
        FileKind::NGram => "ngram",
        FileKind::Hmm => "hmm",
    };
    let label = if ter {
        format!(
            "{} ({}, from file; TER variant, smoothing {smoothing})",
            f.name,
            language.kind_label()
        )
    } else {
        format!("{} ({}, from file)", f.name, language.kind_label())
    };
    Ok(BuiltLanguage {
        label,
        details: json!({
            "task": "file",
            "path": f.path,
            "name": f.name,
            "file_kind": kind,
            "kind": language.kind_label(),
            "order": language.order(),
            "hidden_states": language.hidden_states(),
            "variant": if ter { "ter" } else { "ser" },
            "smoothing": smoothing,
            "content_hash": f.content_hash,
        }),
        language,
        fallback,
        file: Some((f.path, f.content_hash)),
        variant: None,
    })
}

fn build_interval(cfg: IntervalConfig) -> Result<BuiltLanguage> {
    let vocab = cfg.vocab.unwrap_or(8);
    let modulus = cfg.modulus.unwrap_or(2);
    let language = Language::interval(cfg.interval, vocab, modulus).map_err(lang_err)?;
    let fallback = language.relaxed();
    Ok(BuiltLanguage {
        label: format!(
            "{} (interval language, Theorem 4.4 worst case)",
            language.kind_label()
        ),
        details: json!({
            "task": "interval",
            "kind": language.kind_label(),
            "interval": cfg.interval,
            "vocab": vocab,
            "modulus": modulus,
            "violation_probability": language.interval_violation_probability(),
        }),
        language,
        fallback,
        file: None,
        variant: None,
    })
}

fn to_sample_score(s: SequenceScore) -> SampleScore {
    let mut score = if s.log_prob.is_finite() {
        SampleScore::valid(s.log_prob)
    } else {
        SampleScore::invalid()
    };
    score.in_support = s.in_support;
    score.first_invalid = s.first_invalid;
    score.invalid_transitions = s.invalid_transitions;
    score
}

/// A formal-language task.
pub struct LanguageTask {
    task: String,
    built: BuiltLanguage,
    described: BTreeMap<usize, TaskDescription>,
}

impl LanguageTask {
    pub fn new(task: &str, config: &serde_json::Value) -> Result<Self> {
        Ok(LanguageTask {
            task: task.to_string(),
            built: build_language(task, config)?,
            described: BTreeMap::new(),
        })
    }

    /// The task's language.
    pub fn language(&self) -> &Language {
        &self.built.language
    }
}

impl Task for LanguageTask {
    fn describe(&mut self, length: usize) -> Result<TaskDescription> {
        if let Some(d) = self.described.get(&length) {
            return Ok(d.clone());
        }
        let l = &self.built.language;
        let in_context = |e: LanguageError| match &self.built.file {
            Some((path, _)) => PluginError::bad_data(format!("{path}: {e}")),
            None => lang_err(e),
        };
        let entropy = l.entropy(length).map_err(in_context)?;
        let support = l.support_log10_density(length).map_err(in_context)?;
        if support.is_nan() || support == f64::NEG_INFINITY {
            let what = match &self.built.file {
                Some((path, _)) => format!("the language of {path}"),
                None => format!("the `{}` language", self.task),
            };
            return Err(PluginError::bad_config(format!(
                "{what} has no sequence of length {length} with positive probability (empty \
                 support); check its tables"
            )));
        }
        let one_step_ser = match l.sparse_params() {
            Some(_) => l.one_step_ser(length).map_err(in_context)?,
            None => None,
        };
        let mut details = self.built.details.clone();
        if let Some(obj) = details.as_object_mut() {
            obj.insert("entropy_method".into(), json!(entropy.method));
            if let Some(ser) = one_step_ser {
                obj.insert("oracle_one_step_ser".into(), json!(ser));
                obj.insert(
                    "oracle_one_step_ser_meaning".into(),
                    json!("exact SER of the exact oracle decoded in one parallel step (ddpm/ddpm_cache, steps 1): every position drawn independently from its all-masked marginal"),
                );
            }
            if l.interval_length().is_some() {
                let complete = length / l.interval_length().unwrap_or(1);
                obj.insert("complete_intervals".into(), json!(complete));
                obj.insert(
                    "oracle_ddpm_ser_one_step".into(),
                    json!(l.interval_ddpm_ser(length, 1)),
                );
                obj.insert(
                    "oracle_ddpm_ser_formula".into(),
                    json!("1 - (1 - violation_probability / steps)^complete_intervals (ddpm/ddpm_cache, loglinear schedule, exact oracle)"),
                );
            }
        }
        let mut d = TaskDescription::new(self.built.label.clone(), l.vocab(), length);
        d.mask_id = l.mask_id();
        d.entropy_nats = Some(entropy.nats);
        d.entropy_exact = entropy.exact;
        d.entropy_std_error = entropy.std_error;
        d.optimal_ter = Some((entropy.nats / length as f64).exp());
        d.support_log10_density = Some(support);
        d.details = details;
        d.theorem_checks = theorem_checks(&self.task, &self.built.variant, l, length);
        self.described.insert(length, d.clone());
        Ok(d)
    }

    fn sample_reference(&mut self, request: &SampleReferenceRequest) -> Result<Vec<Vec<u32>>> {
        (0..request.n as u64)
            .map(|i| {
                let mut rng =
                    sample_rng(request.seed, REFERENCE_STREAM | (request.first_index + i));
                self.built
                    .language
                    .sample(request.length, &mut rng)
                    .map_err(lang_err)
            })
            .collect()
    }

    fn score(&mut self, sequences: &[Vec<u32>]) -> Result<Vec<SampleScore>> {
        // One batched forward pass for the HMM (bit-identical to scoring one by one); its
        // errors name the sequence as `sequence i: …`.
        let scores = self
            .built
            .language
            .score_batch(sequences)
            .map_err(|e| PluginError::bad_data(e.to_string()))?;
        Ok(scores.into_iter().map(to_sample_score).collect())
    }

    /// Exact `ln q(continuation | context)` of each row (`language/continuation.rs`).
    fn loglikelihood(&mut self, rows: &[(Vec<u32>, Vec<u32>)]) -> Result<Vec<f64>> {
        rows.iter()
            .enumerate()
            .map(|(i, (context, continuation))| {
                self.built
                    .language
                    .log_prob_continuation(context, continuation)
                    .map_err(|e| PluginError::bad_data(format!("row {i}: {e}")))
            })
            .collect()
    }
}

/// The exact oracle denoiser: the conditional marginal of every masked position given all
/// unmasked ones, under the ground-truth language.
///
/// When parallel unmasking has already committed a zero-probability combination, the exact
/// conditional does not exist. The oracle then answers for that sequence with its fallback
/// language ([`BuiltLanguage::fallback`]): for a pruned Table 1 language the same language
/// without pruning (its TER variant, which has full support and shares every parameter draw:
/// the behaviour of a model that puts tiny mass on pruned transitions); for a file language
/// the smoothed tables; for the interval language the relaxed language, which keeps the
/// exact conditionals of every interval that is not yet broken. This keeps the oracle's
/// learning error at zero wherever it is defined.
pub struct Oracle {
    language: Language,
    fallback: Option<Language>,
}

impl Oracle {
    pub fn new(open: &ModelOpenConfig) -> Result<Self> {
        // The oracle has no settings: a `config` in the suite is a mistake, not something to
        // ignore (it would otherwise change the cell's identity and nothing else).
        if let Some(keys) = open.config.as_object().filter(|m| !m.is_empty()) {
            let keys: Vec<_> = keys.keys().map(|k| format!("`{k}`")).collect();
            return Err(PluginError::bad_config(format!(
                "the `oracle` model takes no `config` (valid keys: none; it serves the exact language of its task, so configure the task), but got {}",
                keys.join(", ")
            )));
        }
        if !open.config.is_null() && !open.config.is_object() {
            return Err(PluginError::bad_config(format!(
                "the `oracle` model takes no `config` (valid keys: none), but got `{}`",
                open.config
            )));
        }
        if open.task.plugin != PLUGIN_NAME {
            return Err(PluginError::unsupported(format!(
                "the `oracle` model knows only the languages of plugin `{PLUGIN_NAME}`, but this cell's task comes from `{}`",
                open.task.plugin
            )));
        }
        let built = build_language(&open.task.task, &open.task.config)?;
        if let Some((path, hash)) = &built.file {
            let described = open.task.description.details.get("content_hash");
            if let Some(described) = described.and_then(|h| h.as_str()) {
                if described != hash {
                    return Err(PluginError::bad_data(format!(
                        "{path} changed since the task was described (content hash {described} \
                         then, {hash} now); the oracle must serve the same language as the task: \
                         leave the file alone during a run"
                    )));
                }
            }
        }
        Ok(Oracle {
            language: built.language,
            fallback: built.fallback,
        })
    }

    /// An oracle for a language built directly (benchmarks, tests).
    pub fn from_language(language: Language, fallback: Option<Language>) -> Self {
        Oracle { language, fallback }
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
        match self
            .language
            .conditional_marginals(tokens, batch, length, out)
        {
            Ok(()) => return Ok(()),
            Err(LanguageError::Inconsistent { .. }) => {}
            Err(e) => return Err(lang_err(e)),
        }
        // Some rows are inconsistent (their rows of `out` are NaN, all others are filled in):
        // answer those with the fallback.
        let v = self.language.vocab();
        for b in 0..batch {
            let row_out = &mut out[b * length * v..(b + 1) * length * v];
            if !row_out.first().is_some_and(|x| x.is_nan()) {
                continue;
            }
            let row_tokens = &tokens[b * length..(b + 1) * length];
            let fallback = self.fallback.as_ref().ok_or_else(|| {
                PluginError::bad_data(format!(
                    "row {b}: unmasked tokens have probability 0 under a full-support language"
                ))
            })?;
            fallback
                .conditional_marginals(row_tokens, 1, length, row_out)
                .map_err(|e| PluginError::internal(format!("row {b}: {e}")))?;
        }
        Ok(())
    }

    /// Exact: see `plugin/cache.rs`.
    fn kv_cache(&mut self) -> Option<&mut dyn dlm_sdk::kv_cache::DenoiserKvCache> {
        Some(self)
    }
}

pub struct FormalPlugin;

impl Plugin for FormalPlugin {
    const NAME: &'static str = PLUGIN_NAME;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str =
        "n-gram and HMM languages of Feng et al. (Table 1), languages from files and the interval language of Theorem 4.4, with exact scoring, and their exact oracle denoiser";
    const HAS_TASKS: bool = true;
    const HAS_MODELS: bool = true;

    fn tasks() -> Vec<ComponentInfo> {
        vec![
            ComponentInfo::new(
                "ngram",
                "n-gram language (config: order, variant ter|ser, seed, vocab, temperature, threshold)",
            )
            .with_capability("exact_log_prob")
            .with_capability("exact_loglikelihood")
            .with_capability("exact_entropy")
            .with_config_of::<LanguageConfig>(&[]),
            ComponentInfo::new(
                "hmm",
                "hidden Markov language (config: states, variant ter|ser|sparse, seed, vocab, temperature, threshold, max_successors, emission_threshold)",
            )
            .with_capability("exact_log_prob")
            .with_capability("exact_loglikelihood")
            .with_config_of::<LanguageConfig>(&[]),
            ComponentInfo::new(
                "file",
                "n-gram or HMM tables from a YAML/JSON file (config: path, variant ser|ter, smoothing)",
            )
            .with_capability("exact_log_prob")
            .with_capability("exact_loglikelihood")
            .with_config_of::<FileConfig>(&["path"]),
            ComponentInfo::new(
                "interval",
                "interval language of Theorem 4.4: first and last token of every interval agree in parity (config: interval, vocab, modulus)",
            )
            .with_capability("exact_log_prob")
            .with_capability("exact_loglikelihood")
            .with_capability("exact_entropy")
            .with_config_of::<IntervalConfig>(&[]),
        ]
    }

    fn models() -> Vec<ComponentInfo> {
        let mut oracle = denoiser_component(
            "oracle",
            "exact conditional marginals of the bound task's language (forward–backward)",
            false,
        );
        oracle.capabilities.push("oracle".into());
        // Its ELBO (`DenoiserModel`'s answer) has the exact log-likelihood as its expectation.
        oracle.capabilities.push("loglikelihood".into());
        vec![oracle]
    }

    fn open_task(name: &str, config: serde_json::Value) -> Result<Box<dyn Task>> {
        Ok(Box::new(LanguageTask::new(name, &config)?))
    }

    fn open_model(name: &str, open: ModelOpenConfig) -> Result<Box<dyn Model>> {
        match name {
            "oracle" => Ok(Box::new(DenoiserModel::new(Oracle::new(&open)?))),
            other => Err(PluginError::bad_config(format!(
                "plugin `{PLUGIN_NAME}` has no model `{other}`; models: oracle"
            ))),
        }
    }
}

mod cache;

#[cfg(test)]
mod tests;
