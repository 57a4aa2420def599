//! The plain-data protocol spoken across the plugin boundary.
//!
//! Requests and replies travel as JSON text; token ids travel beside them as a flat `u32`
//! buffer (sequence boundaries are given by the JSON `lengths` field), so large batches are not
//! re-encoded as JSON numbers. Method names are the constants in [`method`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

mod closed_form;
mod component;
mod errors;
mod likelihood;
mod provenance;
mod theorem;
mod trace;
pub use closed_form::*;
pub use component::*;
pub use errors::*;
pub use likelihood::*;
pub use provenance::*;
pub use theorem::*;
pub use trace::*;

/// Names of the methods a component answers through `call`.
pub mod method {
    /// Task: `DescribeTaskRequest` → `TaskDescription`.
    pub const TASK_DESCRIBE: &str = "task.describe";
    /// Task: `SampleReferenceRequest` → `TokenBatch` (tokens in the token buffer).
    pub const TASK_SAMPLE_REFERENCE: &str = "task.sample_reference";
    /// Task: `TokenBatch` (tokens in the token buffer) → `ScoreReply`.
    pub const TASK_SCORE: &str = "task.score";
    /// Text task (its description has `text`): `PromptsRequest` → `PromptsReply`. Since API 1.2.
    pub const TASK_PROMPTS: &str = "task.prompts";
    /// Text task: `ScoreTextRequest` → `ScoreReply`, one score per completion. Since API 1.2.
    pub const TASK_SCORE_TEXT: &str = "task.score_text";
    /// Model: `GenerateRequest` → `GenerateReply` (tokens in the token buffer).
    pub const MODEL_GENERATE: &str = "model.generate";
    /// Model opened with `train` settings (capability `train`): `TrainStepRequest` (the batch
    /// in the token buffer) → `TrainStepReply`; one optimiser step.
    pub const MODEL_TRAIN_STEP: &str = "model.train_step";
    /// Model opened with `train` settings: `EvaluateRequest` (tokens in the token buffer) →
    /// `EvaluateReply`; the training objective on held-out data, no update.
    pub const MODEL_EVALUATE: &str = "model.evaluate";
    /// Model opened with `train` settings: `SaveRequest` → `SaveReply`; write the checkpoint.
    pub const MODEL_SAVE: &str = "model.save";
    /// Model (capability `loglikelihood`): `LoglikelihoodRequest` (rows in the token buffer)
    /// → `LoglikelihoodReply`; exact for an autoregressive model, a Monte-Carlo ELBO for a
    /// diffusion model. Since API 1.8.
    pub const MODEL_LOGLIKELIHOOD: &str = "model.loglikelihood";
    /// Task (capability `exact_loglikelihood`): `LoglikelihoodRequest` (rows in the token
    /// buffer) → `LoglikelihoodReply`; the ground truth's exact answer. Since API 1.8.
    pub const TASK_LOGLIKELIHOOD: &str = "task.loglikelihood";
    /// Model: `{}` → `PromptIdsReply`; the prompt ids the model can answer, where it answers
    /// a fixed set (replayed generations), for a suite's `docs_from_replay: true`. Since API
    /// 1.5.
    pub const MODEL_PROMPT_IDS: &str = "model.prompt_ids";
}

/// Which kind of component an instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComponentKind {
    /// A task: ground-truth samples (`task.sample_reference`) and scoring (`task.score`).
    Task,
    /// A model: generation (`model.generate`), and optionally training and likelihoods.
    Model,
}

impl ComponentKind {
    /// `"task"` or `"model"`, as in JSON and in error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentKind::Task => "task",
            ComponentKind::Model => "model",
        }
    }
}

/// Configuration handed to `open` for a model: its own configuration plus the task it will be
/// asked to generate for (an oracle model needs the task's parameters; a neural model needs the
/// vocabulary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelOpenConfig {
    /// The model's own configuration from the suite (`config:` of the model entry), as JSON;
    /// `null` when the suite gives none.
    #[serde(default)]
    pub config: Value,
    /// The task the model will generate for, with its description at the cell's length.
    pub task: TaskBinding,
    /// Present when the harness opens the model to train it (capability `train`): the model
    /// then answers `model.train_step`, `model.evaluate` and `model.save`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<TrainSettings>,
    /// Present when the harness trained this model earlier: load these weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<TrainedCheckpoint>,
    /// The folder of the suite file, which relative paths in `config` are relative to. The
    /// harness has already joined the values of the keys the component declares paths
    /// ([`ConfigKey::path`]); [`ModelOpenConfig::resolve`] is for any other path a plugin
    /// finds. `None` from an older host, or outside a suite. Since API 1.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
}

impl ModelOpenConfig {
    /// A path from `config` as the suite means it: an absolute path as it is, a relative one
    /// joined to [`base_dir`](Self::base_dir) (the suite file's folder) when the host gave one.
    pub fn resolve(&self, path: &std::path::Path) -> std::path::PathBuf {
        match &self.base_dir {
            Some(base) if path.is_relative() => std::path::Path::new(base).join(path),
            _ => path.to_owned(),
        }
    }
}

/// How the harness trains a model. The harness draws the data (fresh ground-truth sequences
/// from the task every step) and drives the loop; the plugin owns the optimiser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainSettings {
    /// Optimiser steps the harness will send (learning-rate schedules need the total).
    pub steps: usize,
    /// Sequences per step.
    pub batch_size: usize,
    /// Seed of the initial weights and of any noise the objective draws.
    pub seed: u64,
    /// Where the training data come from (task plugin, task, config, data seed), so the plugin
    /// can record it in the checkpoint's identity.
    #[serde(default)]
    pub data: Value,
    /// Plugin-specific options from the suite's `train:` mapping (learning rate, warm-up, …).
    #[serde(default)]
    pub options: Value,
}

/// A checkpoint written by `model.save` that a later `open` should load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainedCheckpoint {
    /// Path of the checkpoint file in the harness's checkpoint cache.
    pub path: String,
    /// The fingerprint `model.save` returned; the plugin refuses a file that does not match.
    pub fingerprint: String,
}

/// `model.train_step` request; the batch travels in the token buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainStepRequest {
    /// 0-based optimiser step.
    pub step: usize,
    /// Length of each sequence of the batch, in token-buffer order (as in [`TokenBatch`]).
    pub lengths: Vec<usize>,
    /// Text tasks: how many leading tokens of each sequence are its prompt, which the model
    /// conditions on and is not trained to produce. Absent for unconditional tasks (all 0).
    /// Since API 1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_lengths: Option<Vec<usize>>,
}

/// `model.evaluate` request; the batch travels in the token buffer. Since API 1.2 (before, a
/// plain [`TokenBatch`], which still parses as one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluateRequest {
    /// Length of each sequence of the batch, in token-buffer order.
    pub lengths: Vec<usize>,
    /// As in [`TrainStepRequest::prompt_lengths`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_lengths: Option<Vec<usize>>,
}

/// `model.train_step` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainStepReply {
    /// Training loss of this batch (nats per token).
    pub loss: f64,
    /// Learning rate used for this step.
    pub lr: f64,
}

/// `model.evaluate` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluateReply {
    /// Mean negative log-likelihood per token in nats, or an upper bound on it (`bound`).
    pub nll_per_token: f64,
    /// Whether `nll_per_token` is an upper bound (e.g. a diffusion model's ELBO) rather than
    /// the exact value.
    #[serde(default)]
    pub bound: bool,
}

/// `model.save` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaveRequest {
    /// Where to write the checkpoint; the harness renames it into the cache on success, so the
    /// plugin writes exactly this path and nothing else.
    pub path: String,
}

/// `model.save` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaveReply {
    /// Identity of the saved model; pass it back in `TrainedCheckpoint`.
    pub fingerprint: String,
}

/// The task a model instance serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskBinding {
    /// Name of the plugin that provides the task (from its descriptor).
    pub plugin: String,
    /// Task component name inside that plugin.
    pub task: String,
    /// The task's configuration from the suite, as JSON.
    #[serde(default)]
    pub config: Value,
    /// What the task said about itself (`task.describe`) at the cell's length: vocabulary,
    /// mask id, entropy, …
    pub description: TaskDescription,
}

/// `task.describe` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DescribeTaskRequest {
    /// Sequence length in tokens the task is asked about.
    pub length: usize,
}

/// What a task says about itself for a given sequence length.
///
/// Build it with [`TaskDescription::new`] and set the optional fields: the struct is
/// `#[non_exhaustive]`, so a field added in a later API version does not break a plugin's source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskDescription {
    /// Human label, e.g. `2-gram (SER variant)`.
    pub label: String,
    /// Number of real tokens; ids are `0..vocab_size`.
    pub vocab_size: usize,
    /// Id of the mask token models should use (conventionally `vocab_size`).
    pub mask_id: u32,
    /// Sequence length in tokens this description is for.
    pub length: usize,
    /// Entropy of the whole sequence distribution in nats, when known.
    pub entropy_nats: Option<f64>,
    /// Whether `entropy_nats` is exact (otherwise a Monte Carlo estimate with `entropy_std_error`).
    #[serde(default)]
    pub entropy_exact: bool,
    /// Standard error of `entropy_nats` in nats when it is a Monte Carlo estimate; 0 when exact.
    #[serde(default)]
    pub entropy_std_error: f64,
    /// `exp(entropy_nats / length)`: the best token error rate any model can reach.
    pub optimal_ter: Option<f64>,
    /// log10 of the share of all `vocab^length` sequences that are in the support.
    pub support_log10_density: Option<f64>,
    /// Task-specific facts (parameters, variant, …) for the report.
    #[serde(default)]
    pub details: Value,
    /// Metrics this task adds to the built-in ones (TER, SER, NFE, …). Each sample's value is
    /// `SampleScore::extra[name]`; the harness aggregates it per cell (with a 95% CI) and shows
    /// it in `summary.json`, the report, `compare` and `history` without knowing the task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricDecl>,
    /// Present for text tasks (prompts in, completions scored): the harness asks them for
    /// prompts (`task.prompts`) and scores completions (`task.score_text`) instead of sampling
    /// and scoring token sequences; they have no `log q` (no TER). Since API 1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextTaskInfo>,
    /// Which of the paper's theorem checks apply to this task, with their constants: the task
    /// declares them, so the harness needs to know no plugin's component or configuration
    /// names. Since API 1.4.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub theorem_checks: Vec<TheoremCheck>,
    /// How a text task's numbers are made (data files and their sums, prompt template, few-shot
    /// count, answer filters, scoring mode, deliberate differences from the reference tool):
    /// the harness records it per cell in the run's manifest and states it in `summary.json`
    /// and the report. `None` for tasks that do not say (older plugins: the field is absent and
    /// reads as `None`). Since API 1.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<TaskProvenance>,
    /// Closed-form values of the task's rate metrics under the exact denoiser, by sampler and
    /// steps (parallel-decoding tasks); the report shows them as reference lines. Empty for
    /// tasks that declare none (and older plugins). Since API 1.8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub closed_forms: Vec<ClosedFormAccuracy>,
}

impl TaskDescription {
    /// A task over token ids `0..vocab_size` (mask id `vocab_size`) at `length` tokens, with
    /// no entropy, support, details, metrics, text or theorem checks yet.
    pub fn new(label: impl Into<String>, vocab_size: usize, length: usize) -> Self {
        TaskDescription {
            label: label.into(),
            vocab_size,
            mask_id: vocab_size as u32,
            length,
            ..TaskDescription::default()
        }
    }
}

/// What a text task says about its prompts and completions.
///
/// Counting rules (the SDK's docs repeat them): a completion is the text a model writes after
/// its prompt, up to the end-of-text token or the first stop string, whichever comes first.
/// Only its tokens count as generated: prompt and padding tokens never do. Tokens per forward
/// = generated tokens up to the stop ÷ network calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextTaskInfo {
    /// The task's own vocabulary, for models without a tokenizer: token id `i` is the text
    /// `vocabulary[i]` (usually one character). Then `vocab_size = vocabulary.len() + 1`: the
    /// last real id is [`eos_id`](Self::eos_id), and `mask_id = vocab_size`. `None` when a model
    /// must bring its own tokenizer.
    #[serde(default)]
    pub vocabulary: Option<Vec<String>>,
    /// End-of-text id in that vocabulary: the completion ends before it, the positions after
    /// it are padding.
    #[serde(default)]
    pub eos_id: Option<u32>,
    /// Stop strings: a completion is cut before the first one it contains.
    #[serde(default)]
    pub stop: Vec<String>,
    /// How many distinct prompts the task has; sample `i` of a cell answers prompt
    /// `i mod prompts`. `None`: every sample gets a prompt of its own (a procedural task).
    #[serde(default)]
    pub prompts: Option<usize>,
    /// The id of every prompt, in order, where the task has a fixed set of them (a dataset):
    /// a model that replays generations made elsewhere refuses rows whose id the task does not
    /// have. `None` for procedural tasks. Since API 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_ids: Option<Vec<String>>,
    /// The task can score a whole program in place of a completion (a code task given an
    /// evalplus `solution`): see [`ScoreTextRequest::whole_programs`]. Since API 1.5.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_programs: bool,
}

impl TextTaskInfo {
    /// A text task whose models bring their own tokenizer (no vocabulary), with these stop
    /// strings.
    pub fn new(stop: Vec<String>) -> Self {
        TextTaskInfo {
            stop,
            ..TextTaskInfo::default()
        }
    }
}

/// `task.prompts` request: the prompts of samples `first_index .. first_index + n`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptsRequest {
    /// Global index of the first sample.
    pub first_index: u64,
    /// Number of samples.
    pub n: usize,
    /// The cell's seed (procedural tasks draw their problems from it).
    pub seed: u64,
}

/// A prompt a text task hands out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Stable identity of the problem (a GSM8K index, an MBPP task id, …), used to match
    /// completions made elsewhere (replay) and to score.
    pub id: String,
    /// The text the model continues.
    pub text: String,
    /// The reference completion (gold solution), when the task has one: the reference row
    /// scores these, and trainable models learn from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// `task.prompts` reply: one prompt per requested sample, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptsReply {
    /// The prompts.
    pub prompts: Vec<Prompt>,
}

/// A completion to score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// [`Prompt::id`] of the prompt it answers.
    pub prompt_id: String,
    /// The completion's text, already cut at the end-of-text token and the stop strings.
    pub text: String,
}

/// `task.score_text` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreTextRequest {
    /// The completions, in sample order.
    pub completions: Vec<Completion>,
    /// Every completion is a whole program that replaces prompt + completion (the model said
    /// so with [`GenerateReply::whole_programs`]): run it as given, never cut at a stop
    /// string. Sent only to a task whose [`TextTaskInfo::whole_programs`] is set. Since API
    /// 1.5.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_programs: bool,
}

/// `model.prompt_ids` reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptIdsReply {
    /// The prompt ids the model answers, in its own order; `None` when it answers any prompt
    /// (a model that generates).
    #[serde(default)]
    pub ids: Option<Vec<String>>,
}

/// A metric a task declares (see [`TaskDescription::metrics`]). Build it with
/// [`MetricDecl::new`]; `#[non_exhaustive]` keeps later fields compatible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MetricDecl {
    /// Key in `SampleScore::extra` and in the summary, e.g. `accuracy_strict`.
    pub name: String,
    /// Human label, e.g. `accuracy (strict)`.
    pub label: String,
    /// How per-sample values combine into the cell's figure.
    pub kind: MetricKind,
    /// Which direction is better (`compare` gates on the worse one).
    pub better: Better,
    /// Digits shown after the decimal point.
    #[serde(default = "default_digits")]
    pub digits: usize,
    /// One of the task's headline metrics: the figures its verdict judges against the AR
    /// baseline and the report's summary names (GSM8K's accuracy, a code task's pass@k).
    /// A task that marks none is judged on TER/SER (formal tasks) or on its higher-is-better
    /// metrics (text tasks). Set with [`MetricDecl::with_headline`]. Since API 1.6 (absent in
    /// older descriptions, where it reads as `false`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub headline: bool,
}

fn default_digits() -> usize {
    3
}

impl MetricDecl {
    /// A metric shown with 3 digits after the decimal point (set `digits` to change it).
    pub fn new(
        name: impl Into<String>,
        label: impl Into<String>,
        kind: MetricKind,
        better: Better,
    ) -> Self {
        MetricDecl {
            name: name.into(),
            label: label.into(),
            kind,
            better,
            digits: default_digits(),
            headline: false,
        }
    }

    /// The same metric shown with `digits` digits after the decimal point.
    pub fn with_digits(mut self, digits: usize) -> Self {
        self.digits = digits;
        self
    }

    /// The same metric marked as a headline metric ([`MetricDecl::headline`]). Since API 1.6.
    pub fn with_headline(mut self) -> Self {
        self.headline = true;
        self
    }
}

/// How a metric's per-sample values combine into a cell's figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// Per-sample `true`/`false` (or 1/0): the share of `true`, with a Wilson 95% CI.
    Rate,
    /// Per-sample numbers: the mean, with a bootstrap 95% CI over samples.
    Mean,
    /// Per-sample `true`/`false` (the sample solved its problem), grouped by the problem
    /// (`SampleScore::extra["prompt_id"]`): the unbiased pass@k estimator of Chen et al. 2021,
    /// `1 − C(n−c, k)/C(n, k)` per problem with `n` samples and `c` correct, averaged over
    /// problems, with a bootstrap 95% CI over problems. Needs `n ≥ k` samples of every problem
    /// (otherwise no value). Since API 1.2.
    PassAtK {
        /// The `k` of pass@k.
        k: u64,
    },
}

/// Which direction of a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Smaller values are better (error rates, costs).
    Lower,
    /// Larger values are better (accuracy, throughput).
    Higher,
    /// Informational: changes are reported, never gated.
    Neither,
}

/// `task.sample_reference` request: `n` ground-truth sequences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleReferenceRequest {
    /// Number of sequences to draw.
    pub n: usize,
    /// Tokens per sequence.
    pub length: usize,
    /// Seed of the random streams; with `first_index` it fixes every sequence.
    pub seed: u64,
    /// Global index of the first sequence; sequence `i` depends only on `(seed, first_index + i)`.
    #[serde(default)]
    pub first_index: u64,
}

/// Shape of a batch of sequences whose tokens travel in the token buffer, concatenated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenBatch {
    /// Length of each sequence, in buffer order; the buffer holds `lengths.iter().sum()` ids.
    pub lengths: Vec<usize>,
}

impl TokenBatch {
    /// Flatten sequences into (shape, buffer).
    pub fn pack(sequences: &[Vec<u32>]) -> (TokenBatch, Vec<u32>) {
        let lengths = sequences.iter().map(Vec::len).collect();
        let buffer = sequences.iter().flatten().copied().collect();
        (TokenBatch { lengths }, buffer)
    }

    /// Split a buffer back into sequences, checking that the sizes agree.
    pub fn unpack(&self, buffer: &[u32]) -> Result<Vec<Vec<u32>>, String> {
        let total: usize = self.lengths.iter().sum();
        if total != buffer.len() {
            return Err(format!(
                "token buffer holds {} ids but the batch shape says {} ({} sequences)",
                buffer.len(),
                total,
                self.lengths.len()
            ));
        }
        let mut out = Vec::with_capacity(self.lengths.len());
        let mut at = 0;
        for &len in &self.lengths {
            out.push(buffer[at..at + len].to_vec());
            at += len;
        }
        Ok(out)
    }
}

/// Per-sequence scores from `task.score`.
///
/// Build it with [`SampleScore::valid`], [`SampleScore::invalid`] or [`SampleScore::text`] and
/// set the optional fields: the struct is `#[non_exhaustive]`, so a field added in a later API
/// version does not break a plugin's source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SampleScore {
    /// `log q(x)` in nats under the ground truth; `None` when `q(x) = 0`.
    pub log_q: Option<f64>,
    /// Whether `q(x) > 0`.
    pub in_support: bool,
    /// First position whose prefix has probability zero.
    #[serde(default)]
    pub first_invalid: Option<usize>,
    /// Number of positions with a zero-probability transition.
    #[serde(default)]
    pub invalid_transitions: usize,
    /// Task-specific metrics (text tasks: accuracy, step errors, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Value>,
    /// The name of the prompt template the sample's prompt was written in, where the task
    /// writes its prompts in several (a text task's `templates`); `None`: the task's one
    /// template. The report compares samplers per template. Since API 1.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

impl SampleScore {
    /// The same score, marked as written in the prompt template `name`. Since API 1.8.
    pub fn with_template(mut self, name: impl Into<String>) -> Self {
        self.template = Some(name.into());
        self
    }

    /// A sequence in the support, with `log q(x) = log_q`.
    pub fn valid(log_q: f64) -> Self {
        SampleScore {
            log_q: Some(log_q),
            in_support: true,
            ..SampleScore::default()
        }
    }

    /// A sequence outside the support (`q(x) = 0`).
    pub fn invalid() -> Self {
        SampleScore::default()
    }

    /// A text task's score: no `log q`; `correct` counts as "in the language" for SER, and
    /// `extra` carries the task's metrics.
    pub fn text(correct: bool, extra: BTreeMap<String, Value>) -> Self {
        SampleScore {
            in_support: correct,
            extra,
            ..SampleScore::default()
        }
    }
}

/// `task.score` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreReply {
    /// One score per sequence of the request, in the same order.
    pub scores: Vec<SampleScore>,
}

/// A sampler and its parameters. `steps` is the total number of denoising steps over the whole
/// sequence (across all blocks); see the SDK's sampler docs for each sampler's exact meaning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplerSpec {
    /// Sampler name, one the model lists in [`ComponentInfo::samplers`] (e.g. `ddpm_cache`).
    pub name: String,
    /// Total denoising steps over the whole sequence, all blocks included; each sampler
    /// documents exactly what a step is (`ar` and `left_to_right` decode one token per step, so
    /// for them it must equal the length).
    pub steps: usize,
    /// Noise schedule (`loglinear` by default).
    #[serde(default)]
    pub schedule: Option<String>,
    /// Sampler-specific parameters from the suite's `params:` (e.g. `block_length`,
    /// `temperature`); the SDK's samplers refuse names they do not know.
    #[serde(default)]
    pub params: BTreeMap<String, Value>,
}

impl SamplerSpec {
    /// Canonical one-line label, e.g. `ddpm_cache@64`.
    pub fn label(&self) -> String {
        let mut s = format!("{}@{}", self.name, self.steps);
        if let Some(sched) = &self.schedule {
            s.push_str(&format!(",{sched}"));
        }
        for (k, v) in &self.params {
            s.push_str(&format!(",{k}={v}"));
        }
        s
    }
}

/// `model.generate` request: `batch_size` sequences of `length` tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateRequest {
    /// Number of sequences to generate in this call.
    pub batch_size: usize,
    /// Tokens per sequence (including any prompt).
    pub length: usize,
    /// Which sampler to run, with how many steps.
    pub sampler: SamplerSpec,
    /// Seed of the per-sample random streams (see `first_index`).
    pub seed: u64,
    /// Global index of the first sample; sample `i` draws from its own random stream
    /// `(seed, first_index + i)`, so outputs do not depend on batch size or sharding.
    #[serde(default)]
    pub first_index: u64,
    /// Optional prompts (text tasks): one per sample, prefix tokens that are kept fixed.
    #[serde(default)]
    pub prompts: Option<Vec<Vec<u32>>>,
    /// Text tasks: the prompts as text with their ids, one per sample. A model that works on
    /// text (its own tokenizer, or replayed generations) answers with
    /// [`GenerateReply::texts`]. Since API 1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_texts: Option<Vec<Prompt>>,
    /// Record each sample's trajectory ([`SampleStats::trace`]): a suite's `trace: true`.
    /// Since API 1.8.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trace: bool,
}

/// Per-sample statistics from a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleStats {
    /// Network calls that contributed to this sample (a batched call counts once for every
    /// sample in the batch).
    pub nfe: u64,
    /// Tokens generated (response tokens only).
    pub generated_tokens: u64,
    /// Query positions the network computed for this sample, summed over its calls: the whole
    /// length for a full forward pass, the window's width for a step that reused cached keys
    /// and values, one per call for an autoregressive model (prompt tokens included, which it
    /// feeds in calls `nfe` does not count). `None` from a model that does not count them (each of
    /// its calls is then a full forward pass). Since API 1.7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions_computed: Option<u64>,
    /// Commits beyond the first at a position: a token re-masked and generated again, or
    /// replaced in place by an edit (remasking samplers). `None` from a sampler that never
    /// revisits a committed position. Since API 1.7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits: Option<u64>,
    /// The sample's trajectory, when the request asked for it ([`GenerateRequest::trace`]);
    /// `None` otherwise, and from a model that cannot record one. Since API 1.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<SampleTrace>,
}

/// `model.generate` reply; the tokens travel in the token buffer (`batch_size × length`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GenerateReply {
    /// Length of each generated sequence, in token-buffer order (`batch_size` entries, each
    /// `length`); the harness refuses a reply whose shape differs from the request.
    pub lengths: Vec<usize>,
    /// Statistics per sample, in the same order.
    pub samples: Vec<SampleStats>,
    /// Network calls made for the whole batch.
    pub batch_nfe: u64,
    /// Query positions computed over all of the batch's network calls (rows × positions per
    /// call; a cached step computes only its window). `None` from a model that does not count
    /// them. Since API 1.7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_positions: Option<u64>,
    /// Wall-clock seconds of the generation, measured inside the plugin after device sync.
    pub wall_seconds: f64,
    /// Device the batch ran on, e.g. `cpu`.
    pub device: String,
    /// Text tasks: the completions as text, one per sample, when the model produces text
    /// rather than ids of the task's vocabulary (then the token buffer may be empty). Since
    /// API 1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub texts: Option<Vec<String>>,
    /// The `texts` are whole programs (an evalplus `solution`), not continuations of the
    /// prompts: the harness does not cut them at stop strings and asks the task to score them
    /// as programs ([`ScoreTextRequest::whole_programs`]), refusing a task that cannot. Since
    /// API 1.5.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_programs: bool,
    /// The settings the batch was generated with, every default filled in, as a JSON object:
    /// `"sampler"` (its name, `steps`, `schedule` where it takes one, and every parameter it
    /// reads, `null` for one left unset) and `"model"` (the model's resolved configuration:
    /// dtype, device, …). The harness records it per cell in the manifest without
    /// interpreting it. `None` from a model that does not say. Since API 1.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_from_before_api_1_6_reads_as_no_headline_and_a_headline_round_trips() {
        let old = r#"{"name": "passed", "label": "pass", "kind": "rate", "better": "higher"}"#;
        let d: MetricDecl = serde_json::from_str(old).unwrap();
        assert_eq!(
            d,
            MetricDecl::new("passed", "pass", MetricKind::Rate, Better::Higher)
        );
        assert!(!d.headline);
        assert!(!serde_json::to_string(&d).unwrap().contains("headline"));
        let marked = d.with_headline();
        let back: MetricDecl =
            serde_json::from_str(&serde_json::to_string(&marked).unwrap()).unwrap();
        assert!(back.headline);
    }
}
