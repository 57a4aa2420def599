//! The dlm-bench plugin SDK: what every model and task plugin links.
//!
//! A **model author** implements [`Denoiser`] — token ids in, per-position distributions out —
//! wraps it in [`DenoiserModel`], and gets every shared sampler, the step accounting and the
//! timing for free. A **task author** implements [`Task`]. A plugin lists its components by
//! implementing [`Plugin`] and exports itself with [`export_plugin!`]:
//!
//! ```ignore
//! struct MyPlugin;
//! impl dlm_sdk::Plugin for MyPlugin {
//!     const NAME: &'static str = "my-mdm";
//!     const VERSION: &'static str = env!("CARGO_PKG_VERSION");
//!     const HAS_MODELS: bool = true;
//!     fn models() -> Vec<dlm_sdk::ComponentInfo> { vec![dlm_sdk::denoiser_component("mdm", "my model", false)] }
//!     fn open_model(name: &str, open: dlm_sdk::ModelOpenConfig) -> dlm_sdk::Result<Box<dyn dlm_sdk::Model>> {
//!         Ok(Box::new(dlm_sdk::DenoiserModel::new(MyDenoiser::new(&open)?)))
//!     }
//! }
//! dlm_sdk::export_plugin!(MyPlugin);
//! ```

//!
//! # Text tasks
//!
//! A task whose description has `text` ([`TextTaskInfo`]) hands out prompts
//! ([`Task::prompts`]) and scores completions ([`Task::score_text`]). With a vocabulary of its
//! own, the harness encodes each prompt into it and asks the model to fill a **generation
//! region** after it: the SDK's samplers keep the prompt tokens fixed (never re-masked, never
//! sampled) and unmask only the region, every sampler and semi-AR blocks included. The counting
//! rules, applied by the harness (and tested there):
//!
//! * the completion is the region's text up to the end-of-text token, then cut before the first
//!   stop string;
//! * generated tokens = the completion's tokens (up to the stop): prompt and padding tokens never
//!   count, so tokens per forward = generated tokens ÷ NFE and tokens/s are not inflated by the
//!   prompt (the trap Fast-dLLM's users fell into);
//! * a completion that is empty, or still holds mask tokens, is scored (as wrong) and counted in
//!   the cell's `empty_completion` and `masked_completion` rates, shown beside accuracy, so a
//!   collapse is never mistaken for a wrong answer;
//! * training on a text task: sequences are prompt + reference completion + end-of-text padding,
//!   and [`Model::train_step`] gets each prompt's length so the loss covers the completion only.
//!
//! A task may declare no vocabulary (GSM8K): then only a model that works on text can answer
//! it, reading [`GenerateRequest::prompt_texts`] and replying with [`GenerateReply::texts`]
//! (the harness still applies the stop strings and scores the texts). With the `tokenizers`
//! feature, `tokenizer::HfTokenizer` reads a Hugging Face `tokenizer.json` (pure Rust, no
//! network; errors name the file) and `tokenizer::TextModel` wraps any token-level model over
//! that vocabulary: it encodes the prompts (no special tokens added), has the wrapped model
//! fill the region after them as above, cuts each completion at the tokenizer's end-of-text
//! token and the stop strings, decodes it, and counts only the completion's tokens as
//! generated. Such a model is not trained by the harness.

// The public API its readers use: every item documented. A crate-root attribute rather than the
// workspace's `[lints]`, which apply to every target of a package (criterion's generated bench
// functions have no docs) while this applies to the library alone.
#![warn(missing_docs)]

pub mod data;
pub mod device_name;
pub mod kv_cache;
pub mod likelihood;
pub mod sampler;
pub mod settings;
#[cfg(feature = "tokenizers")]
pub mod tokenizer;

/// The plugin guide's examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../../../docs/plugin-guide.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use dlm_plugin_api::completion::cut_at_first_stop;
pub use dlm_plugin_api::hash::fnv1a_64;
pub use dlm_plugin_api::protocol::*;
use dlm_plugin_api::PluginInstance;
pub use dlm_plugin_api::API_VERSION;
use serde::{de::DeserializeOwned, Serialize};

/// Error returned by plugin code; its message reaches the user verbatim, so say what went
/// wrong and what to do about it. Its [`ErrorKind`] travels with it, so reports group failed
/// cells by what the user has to do (fix the suite, fix the data, pick another component, or
/// report a bug). Build it with [`PluginError::bad_config`], [`PluginError::bad_data`],
/// [`PluginError::unsupported`] or [`PluginError::internal`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct PluginError {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// What went wrong and what to do about it.
    pub message: String,
}

impl PluginError {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        PluginError {
            kind,
            message: message.into(),
        }
    }
    /// The configuration is wrong (a suite key, a sampler parameter, a model option).
    pub fn bad_config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadConfig, message)
    }
    /// An input file or a model's output is malformed.
    pub fn bad_data(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadData, message)
    }
    /// The request is well-formed but this component cannot serve it.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }
    /// A bug, or an error nobody classified.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// The same error with `context` in front of its message (`context: message`).
    pub fn context(mut self, context: impl std::fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
    /// The string that crosses the plugin boundary: the message tagged with its kind.
    pub fn into_wire(self) -> String {
        encode_error(self.kind, &self.message)
    }
}

// No `From<String>`/`From<&str>`: every error says what kind it is, so the compiler makes a
// plugin choose (`PluginError::bad_config(..)`, …) and no user mistake reads as a bug.
/// Plugins deserialise their suite configuration with serde_json, so its errors are
/// configuration errors.
impl From<serde_json::Error> for PluginError {
    fn from(e: serde_json::Error) -> Self {
        PluginError::bad_config(format!("invalid JSON: {e}"))
    }
}

/// The SDK's result type: errors are [`PluginError`]s, whose message reaches the user.
pub type Result<T, E = PluginError> = std::result::Result<T, E>;

/// The network a model author implements: one forward pass of the denoiser.
pub trait Denoiser: Send {
    /// Number of real tokens; the mask token id is `vocab_size()`.
    fn vocab_size(&self) -> usize;

    /// Whether the network takes the diffusion time as input. Output caching (`ddpm_cache`)
    /// is only valid for time-independent models and is refused otherwise.
    fn time_conditioned(&self) -> bool {
        false
    }

    /// Device label recorded with every timing, e.g. `cpu` or `cuda:0`.
    fn device(&self) -> String {
        "cpu".to_string()
    }

    /// One forward pass. `tokens` holds `batch × length` ids (mask = `vocab_size()`); write
    /// into `out` (`batch × length × vocab_size()`) the predicted distribution over real tokens
    /// of every position. Unmasked positions may be left as anything (only `threshold_edit`,
    /// which proposes edits there, reads them; see its documentation). `t ∈ [0, 1]` is the
    /// diffusion time (1 = all masked).
    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()>;

    /// Block until queued device work is done, so timings are honest. CPU models need nothing.
    fn synchronize(&mut self) {}

    /// The model's key/value cache, for samplers run with `cache: prefix` or `dual`
    /// ([`kv_cache`]). The default, no cache, makes such a request an `unsupported` error.
    fn kv_cache(&mut self) -> Option<&mut dyn kv_cache::DenoiserKvCache> {
        None
    }
}

/// A task: ground truth, reference samples and scoring.
pub trait Task: Send {
    /// What the task is at sequence length `length` (tokens): vocabulary and mask id, exact
    /// entropy in nats and the optimal TER when known, and any task-specific metrics it adds.
    /// Refuse a length the task cannot serve with an error that says which lengths it can.
    fn describe(&mut self, length: usize) -> Result<TaskDescription>;
    /// `request.n` ground-truth sequences; sequence `i` depends only on `(seed, first_index + i)`.
    fn sample_reference(&mut self, request: &SampleReferenceRequest) -> Result<Vec<Vec<u32>>>;
    /// Score sequences under the ground truth: exactly one [`SampleScore`] per sequence, in
    /// order. Sequences come from models and may be anything of the described length over
    /// `0..vocab_size` (the harness has already refused out-of-vocabulary ids); a sequence
    /// outside the support is a score (`in_support: false`, `log_q: None`), not an error.
    fn score(&mut self, sequences: &[Vec<u32>]) -> Result<Vec<SampleScore>>;

    /// Text tasks (whose description has `text`): the prompts of samples `first_index ..
    /// first_index + n`, each with a stable id and, where the task has one, the reference
    /// completion. Prompt `i` depends only on `(seed, first_index + i)` (or on the index alone
    /// for a fixed data set).
    fn prompts(&mut self, _request: &PromptsRequest) -> Result<Vec<Prompt>> {
        Err(PluginError::unsupported(
            "this task hands out no prompts (it is not a text task)",
        ))
    }

    /// Text tasks: score completions, one [`SampleScore`] each, in order. A completion is the
    /// model's text after the prompt, already cut at the end-of-text token and the first stop
    /// string. Set `in_support` to whether it is a fully correct answer (so SER is the share
    /// of wrong ones), `log_q` to `None`, and the task's declared metrics in `extra`.
    fn score_text(&mut self, _completions: &[Completion]) -> Result<Vec<SampleScore>> {
        Err(PluginError::unsupported(
            "this task scores no text completions (it is not a text task)",
        ))
    }

    /// Text tasks that set [`TextTaskInfo::whole_programs`]: score completions that are whole
    /// programs (an evalplus `solution`), each run as given in place of prompt + completion.
    fn score_programs(&mut self, _programs: &[Completion]) -> Result<Vec<SampleScore>> {
        Err(PluginError::unsupported(
            "this task scores no whole programs, only completions that continue its prompts",
        ))
    }

    /// Tasks with the capability `exact_loglikelihood`: the exact `log p(continuation |
    /// context)` of each row (context, continuation) under the ground truth, in nats (`-inf`
    /// for probability 0). Since API 1.8.
    fn loglikelihood(&mut self, _rows: &[(Vec<u32>, Vec<u32>)]) -> Result<Vec<f64>> {
        Err(PluginError::unsupported(
            "this task has no exact log-likelihood (no `exact_loglikelihood` capability)",
        ))
    }
}

/// A model: answers `generate`. Most models are a [`DenoiserModel`].
///
/// A model whose component lists the capability `train` is also opened by the harness with
/// [`ModelOpenConfig::train`] set; that instance answers the three training methods below
/// (the harness draws the data and drives the loop) and is not asked to generate.
pub trait Model: Send {
    /// Generate `request.batch_size` sequences of `request.length` tokens with
    /// `request.sampler`, and the reply's statistics (per-sample and batch NFE, wall-clock
    /// seconds measured after [`Denoiser::synchronize`], device). Sample `i` must draw only
    /// from its own random stream [`sampler::sample_rng`]`(seed, first_index + i)`, so tokens
    /// do not depend on batching. The reply's `lengths` are filled in by the SDK.
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)>;

    /// Generate as [`Model::generate`], where the first `left_padding[i]` tokens of prompt `i`
    /// (`request.prompts`) are padding: every other position of the row must come out exactly
    /// as it would for the row alone without them (padding hidden from attention, positions
    /// counted from the first real token). `tokenizer::TextModel` left-pads a batch this way
    /// so that every prompt gets the same completion region whatever shares its batch. The
    /// default runs rows without padding and refuses padding as unsupported, rather than let
    /// the model attend to it; `sampler::device::TensorDenoiserModel` (through
    /// `TensorDenoiser::set_left_padding`) and the autoregressive models support it.
    fn generate_left_padded(
        &mut self,
        request: &GenerateRequest,
        left_padding: &[usize],
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        if left_padding.iter().all(|&p| p == 0) {
            return self.generate(request);
        }
        Err(PluginError::unsupported(
            "this model cannot hide left padding from its attention, which a batch of prompts of different lengths with a fixed generation length needs; use `batch_size: 1` or a model that supports padding",
        ))
    }

    /// One optimiser step on `batch` (real tokens only, every sequence of the task's length).
    /// `prompt_lengths[i]` leading tokens of sequence `i` are its prompt (text tasks): condition
    /// on them, do not learn to produce them. All 0 for unconditional tasks.
    fn train_step(
        &mut self,
        _step: usize,
        _batch: &[Vec<u32>],
        _prompt_lengths: &[usize],
    ) -> Result<TrainStepReply> {
        Err(PluginError::unsupported(
            "this model cannot be trained by the harness (no `train` capability)",
        ))
    }

    /// The training objective on held-out `batch`, without updating anything (prompts as in
    /// [`Model::train_step`]).
    fn evaluate(
        &mut self,
        _batch: &[Vec<u32>],
        _prompt_lengths: &[usize],
    ) -> Result<EvaluateReply> {
        Err(PluginError::unsupported(
            "this model cannot be trained by the harness (no `train` capability)",
        ))
    }

    /// Write the trained model to `path` and return its fingerprint.
    fn save(&mut self, _path: &std::path::Path) -> Result<SaveReply> {
        Err(PluginError::unsupported(
            "this model cannot be trained by the harness (no `train` capability)",
        ))
    }

    /// The prompt ids this model can answer, where it answers a fixed set (a model replaying
    /// generations made elsewhere); `None` (the default) for a model that generates for any
    /// prompt. A suite's `docs_from_replay: true` scores exactly these documents.
    fn prompt_ids(&mut self) -> Result<Option<Vec<String>>> {
        Ok(None)
    }

    /// Models with the capability `loglikelihood`: `log p(continuation | context)` of each
    /// row, exactly (autoregressive models) or as a Monte-Carlo ELBO with `request.elbo`'s
    /// settings (diffusion models; [`likelihood`]). [`DenoiserModel`] and the autoregressive
    /// models answer it; a wrapper forwards it. Since API 1.8.
    fn loglikelihood(
        &mut self,
        _request: &LoglikelihoodRequest,
        _rows: &[(Vec<u32>, Vec<u32>)],
    ) -> Result<LoglikelihoodReply> {
        Err(PluginError::unsupported(
            "this model answers no log-likelihood requests (no `loglikelihood` capability)",
        ))
    }
}

/// Turns any [`Denoiser`] into a [`Model`] using the shared samplers.
pub struct DenoiserModel<D: Denoiser> {
    /// The wrapped network; every `generate` runs a shared sampler over it.
    pub denoiser: D,
}

impl<D: Denoiser> DenoiserModel<D> {
    /// Wrap `denoiser`; it answers every sampler in [`sampler::BUILT_IN`].
    pub fn new(denoiser: D) -> Self {
        DenoiserModel { denoiser }
    }
}

impl<D: Denoiser> Model for DenoiserModel<D> {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        sampler::generate(&mut self.denoiser, request)
    }
    fn loglikelihood(
        &mut self,
        request: &LoglikelihoodRequest,
        rows: &[(Vec<u32>, Vec<u32>)],
    ) -> Result<LoglikelihoodReply> {
        likelihood::answer_with_elbo(&mut self.denoiser, request, rows)
    }
}

/// Component info for a denoiser-based model with the samplers the SDK provides.
pub fn denoiser_component(name: &str, description: &str, time_conditioned: bool) -> ComponentInfo {
    sampler::Registry::built_in().component(name, description, time_conditioned)
}

/// What a plugin provides. Implement this and call [`export_plugin!`].
pub trait Plugin: 'static {
    /// Plugin name, by convention the crate name (e.g. `dlm-formal`); at most 64 bytes (the
    /// descriptor static's field). Suites and run manifests refer to the plugin by it.
    const NAME: &'static str;
    /// Plugin version, by convention `env!("CARGO_PKG_VERSION")`; at most 32 bytes. Recorded
    /// in every run's manifest; bump it when outputs change, since `--resume` refuses a run
    /// whose plugin versions changed.
    const VERSION: &'static str;
    /// One line for `dlm-bench list`.
    const DESCRIPTION: &'static str = "";
    /// Whether [`Plugin::tasks`] is non-empty (the `KIND_TASK` bit of the descriptor static,
    /// which must be known at compile time).
    const HAS_TASKS: bool = false;
    /// Whether [`Plugin::models`] is non-empty (the `KIND_MODEL` bit of the descriptor static).
    const HAS_MODELS: bool = false;

    /// The tasks this plugin provides, with their descriptions and capabilities.
    fn tasks() -> Vec<ComponentInfo> {
        Vec::new()
    }
    /// The models this plugin provides; a denoiser-based model usually uses
    /// [`denoiser_component`], which lists every SDK sampler.
    fn models() -> Vec<ComponentInfo> {
        Vec::new()
    }
    /// Open the task `name` with the suite's `config:` for it (`null` when none is given).
    /// Validate the config here and say what is wrong: the message reaches the user verbatim.
    fn open_task(name: &str, _config: serde_json::Value) -> Result<Box<dyn Task>> {
        Err(PluginError::bad_config(format!(
            "plugin `{}` provides no task `{name}`",
            Self::NAME
        )))
    }
    /// Open the model `name`: its own config, the task it will serve (vocabulary, mask id,
    /// length), and `train` or `checkpoint` settings when the harness trains it or loads what
    /// it trained (see [`ModelOpenConfig`]).
    fn open_model(name: &str, _open: ModelOpenConfig) -> Result<Box<dyn Model>> {
        Err(PluginError::bad_config(format!(
            "plugin `{}` provides no model `{name}`",
            Self::NAME
        )))
    }
    /// Device label for the descriptor.
    fn device() -> String {
        "cpu".to_string()
    }
}

/// Bridges a typed [`Plugin`] to the untyped ABI. Used by [`export_plugin!`].
pub struct Exported<P: Plugin>(std::marker::PhantomData<P>);

impl<P: Plugin> dlm_plugin_api::PluginImpl for Exported<P> {
    fn descriptor() -> PluginDescriptor {
        let mut descriptor = PluginDescriptor::new(P::NAME, P::VERSION);
        descriptor.description = P::DESCRIPTION.to_string();
        descriptor.tasks = P::tasks();
        descriptor.models = P::models();
        descriptor.device = P::device();
        descriptor
    }

    fn open(
        kind: ComponentKind,
        name: &str,
        config_json: &str,
    ) -> std::result::Result<Box<dyn PluginInstance>, String> {
        match kind {
            ComponentKind::Task => {
                let config: serde_json::Value =
                    parse_json(config_json).map_err(PluginError::into_wire)?;
                let task = P::open_task(name, config).map_err(PluginError::into_wire)?;
                Ok(Box::new(TaskInstance(task)))
            }
            ComponentKind::Model => {
                let open: ModelOpenConfig =
                    parse_json(config_json).map_err(PluginError::into_wire)?;
                let model = P::open_model(name, open).map_err(PluginError::into_wire)?;
                Ok(Box::new(ModelInstance(model)))
            }
        }
    }
}

fn parse_json<T: DeserializeOwned>(json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| PluginError::internal(format!("malformed request: {e}")))
}

fn to_json<T: Serialize>(value: &T) -> std::result::Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("reply not serialisable: {e}"))
}

struct TaskInstance(Box<dyn Task>);

impl PluginInstance for TaskInstance {
    fn call(
        &mut self,
        method: &str,
        request_json: &str,
        tokens: &[u32],
    ) -> std::result::Result<(String, Vec<u32>), String> {
        let task = &mut self.0;
        match method {
            method::TASK_DESCRIBE => {
                let req: DescribeTaskRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                Ok((
                    to_json(&task.describe(req.length).map_err(PluginError::into_wire)?)?,
                    Vec::new(),
                ))
            }
            method::TASK_SAMPLE_REFERENCE => {
                let req: SampleReferenceRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                let seqs = task
                    .sample_reference(&req)
                    .map_err(PluginError::into_wire)?;
                let (shape, buffer) = TokenBatch::pack(&seqs);
                Ok((to_json(&shape)?, buffer))
            }
            method::TASK_SCORE => {
                let shape: TokenBatch = parse_json(request_json).map_err(PluginError::into_wire)?;
                let seqs = shape.unpack(tokens)?;
                let scores = task.score(&seqs).map_err(PluginError::into_wire)?;
                Ok((to_json(&ScoreReply { scores })?, Vec::new()))
            }
            method::TASK_PROMPTS => {
                let req: PromptsRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                let prompts = task.prompts(&req).map_err(PluginError::into_wire)?;
                Ok((to_json(&PromptsReply { prompts })?, Vec::new()))
            }
            method::TASK_SCORE_TEXT => {
                let req: ScoreTextRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                let scores = if req.whole_programs {
                    task.score_programs(&req.completions)
                } else {
                    task.score_text(&req.completions)
                }
                .map_err(PluginError::into_wire)?;
                Ok((to_json(&ScoreReply { scores })?, Vec::new()))
            }
            method::TASK_LOGLIKELIHOOD => {
                let req: LoglikelihoodRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                let rows = req.unpack(tokens)?;
                let values = task.loglikelihood(&rows).map_err(PluginError::into_wire)?;
                Ok((to_json(&likelihood::exact_reply(values))?, Vec::new()))
            }
            other => Err(format!("a task does not answer `{other}`")),
        }
    }
}

struct ModelInstance(Box<dyn Model>);

impl PluginInstance for ModelInstance {
    fn call(
        &mut self,
        method: &str,
        request_json: &str,
        tokens: &[u32],
    ) -> std::result::Result<(String, Vec<u32>), String> {
        match method {
            method::MODEL_GENERATE => {
                let req: GenerateRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                let (seqs, mut reply) = self.0.generate(&req).map_err(PluginError::into_wire)?;
                let (shape, buffer) = TokenBatch::pack(&seqs);
                reply.lengths = shape.lengths;
                Ok((to_json(&reply)?, buffer))
            }
            method::MODEL_TRAIN_STEP => {
                let req: TrainStepRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                let prompts = prompt_lengths(req.prompt_lengths, req.lengths.len())?;
                let batch = TokenBatch {
                    lengths: req.lengths,
                }
                .unpack(tokens)?;
                let reply = self
                    .0
                    .train_step(req.step, &batch, &prompts)
                    .map_err(PluginError::into_wire)?;
                Ok((to_json(&reply)?, Vec::new()))
            }
            method::MODEL_EVALUATE => {
                let req: EvaluateRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                let prompts = prompt_lengths(req.prompt_lengths, req.lengths.len())?;
                let batch = TokenBatch {
                    lengths: req.lengths,
                }
                .unpack(tokens)?;
                let reply = self
                    .0
                    .evaluate(&batch, &prompts)
                    .map_err(PluginError::into_wire)?;
                Ok((to_json(&reply)?, Vec::new()))
            }
            method::MODEL_LOGLIKELIHOOD => {
                let req: LoglikelihoodRequest =
                    parse_json(request_json).map_err(PluginError::into_wire)?;
                let rows = req.unpack(tokens)?;
                let reply = self
                    .0
                    .loglikelihood(&req, &rows)
                    .map_err(PluginError::into_wire)?;
                Ok((to_json(&reply)?, Vec::new()))
            }
            method::MODEL_PROMPT_IDS => {
                let ids = self.0.prompt_ids().map_err(PluginError::into_wire)?;
                Ok((to_json(&PromptIdsReply { ids })?, Vec::new()))
            }
            method::MODEL_SAVE => {
                let req: SaveRequest = parse_json(request_json).map_err(PluginError::into_wire)?;
                let reply = self
                    .0
                    .save(std::path::Path::new(&req.path))
                    .map_err(PluginError::into_wire)?;
                Ok((to_json(&reply)?, Vec::new()))
            }
            other => Err(format!(
                "this model does not answer `{other}` (capability not provided)"
            )),
        }
    }
}

/// The prompt lengths of a training batch: as sent, or all 0 when absent.
fn prompt_lengths(
    sent: Option<Vec<usize>>,
    batch: usize,
) -> std::result::Result<Vec<usize>, String> {
    match sent {
        None => Ok(vec![0; batch]),
        Some(p) if p.len() == batch => Ok(p),
        Some(p) => Err(format!(
            "{} prompt lengths for a batch of {batch} sequences",
            p.len()
        )),
    }
}

#[doc(hidden)]
pub mod __private {
    pub use dlm_plugin_api;
}

/// Export a [`Plugin`] from a `cdylib` crate: writes the descriptor static and the root module.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        $crate::__private::dlm_plugin_api::export_plugin_abi!(
            $crate::Exported<$plugin>,
            name = <$plugin as $crate::Plugin>::NAME,
            version = <$plugin as $crate::Plugin>::VERSION,
            kinds = (if <$plugin as $crate::Plugin>::HAS_TASKS {
                $crate::__private::dlm_plugin_api::abi::KIND_TASK
            } else {
                0
            }) | (if <$plugin as $crate::Plugin>::HAS_MODELS {
                $crate::__private::dlm_plugin_api::abi::KIND_MODEL
            } else {
                0
            })
        );
    };
}
