//! Worker processes. The harness runs every plugin call in a child process of its own binary
//! (`dlm-bench worker ...`), so a plugin that panics, aborts, segfaults or hangs costs only
//! its own cell. The child writes JSON-line events to a file the parent names (stdout and
//! stderr stay free for the plugin's own output and go to the cell's log).

use crate::results::{BatchRecord, PluginId};
use crate::suite::{resolve_paths, CellSpec, ComponentSpec, MemoryLimit, TrainSpec};
use anyhow::{Context, Result};
use dlm_plugin_api::abi::Instance;
use dlm_plugin_api::{
    method, Better, CallError, ComponentInfo, ComponentKind, DescribeTaskRequest, ErrorKind,
    EvaluateReply, EvaluateRequest, GenerateReply, GenerateRequest, LoadedPlugin, MetricDecl,
    MetricKind, ModelOpenConfig, PluginDescriptor, SampleReferenceRequest, SampleScore, SaveReply,
    SaveRequest, ScoreReply, TaskBinding, TaskDescription, TokenBatch, TrainSettings,
    TrainStepReply, TrainStepRequest, TrainedCheckpoint,
};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod cell;
mod supervise;
#[cfg(test)]
mod tests;
mod text;
mod trace;
mod train;

use cell::{check_sequences, run_cell};
pub use supervise::*;
use train::run_train;

/// What the parent asks a worker to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "job", rename_all = "snake_case")]
pub enum Job {
    /// Load a library and report its descriptor.
    Describe { library: PathBuf },
    /// Run one cell.
    Cell {
        cell: Box<CellSpec>,
        task_library: PathBuf,
        model_library: Option<PathBuf>,
        /// The trained weights of a model with `train:`.
        #[serde(default)]
        checkpoint: Option<TrainedCheckpoint>,
    },
    /// Train one model on one task and save the checkpoint to `checkpoint`.
    Train {
        unit: Box<TrainUnit>,
        task_library: PathBuf,
        model_library: PathBuf,
        checkpoint: PathBuf,
    },
}

/// One training run: a model with `train:` on one task at one length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainUnit {
    pub task: ComponentSpec,
    pub model: ComponentSpec,
    pub length: usize,
}

impl TrainUnit {
    /// `model/task/L<length>`.
    pub fn key(&self) -> String {
        format!("{}/{}/L{}", self.model.name, self.task.name, self.length)
    }

    pub fn spec(&self) -> &TrainSpec {
        self.model
            .train
            .as_ref()
            .expect("a training unit's model has `train:`")
    }

    /// Seeds of the training and validation data, kept apart from the suite's sampling seeds
    /// (which draw the reference rows) so no evaluation sequence is trained on by construction.
    pub fn data_seeds(&self) -> (u64, u64) {
        let seed = self.spec().seed;
        (
            0x7472_6169_6e5f_6461 ^ seed.rotate_left(17),
            0x7661_6c69_645f_6461 ^ seed.rotate_left(17),
        )
    }
}

/// One validation measurement during training.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationPoint {
    pub step: usize,
    /// Held-out NLL per token in nats (an upper bound when `TrainOutput::bound`).
    pub nll_per_token: f64,
}

/// The result of a training job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainOutput {
    pub fingerprint: String,
    pub task_description: TaskDescription,
    pub task_plugin: PluginId,
    pub model_plugin: PluginId,
    pub steps: usize,
    pub tokens: u64,
    pub wall_seconds: f64,
    pub tokens_per_second: f64,
    pub final_loss: f64,
    /// Training loss of every step.
    pub losses: Vec<f64>,
    pub validation: Vec<ValidationPoint>,
    /// Whether the validation values are upper bounds (an MDM's ELBO) rather than exact NLLs.
    pub bound: bool,
    /// The exact NLL per token of the same held-out sequences under the task
    /// (`−Σ log q(x) / tokens`, from `task.score`): the reference `validation` is compared with.
    /// `None` when the task gives no exact `log q` (and in records written before it existed).
    #[serde(default)]
    pub reference_nll_per_token: Option<f64>,
}

/// One generated-and-scored sample.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSample {
    pub index: u64,
    pub tokens: Vec<u32>,
    pub score: SampleScore,
    pub nfe: u64,
    pub generated_tokens: u64,
    /// Query positions the network computed for this sample (API 1.7); `None` when the model
    /// does not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions_computed: Option<u64>,
    /// Commits beyond the first at a position (remasking samplers, API 1.7); `None` when the
    /// sampler does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits: Option<u64>,
    /// The sample's trajectory, scored (`trace: true`, API 1.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::TraceRecord>,
}

/// The result of a cell job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellOutput {
    pub task_description: TaskDescription,
    pub task_plugin: PluginId,
    pub model_plugin: Option<PluginId>,
    pub model_autoregressive: bool,
    /// The model has the `oracle` capability (the task's exact denoiser).
    #[serde(default)]
    pub model_exact: bool,
    /// The cell's sampler decodes one token per step (its descriptor's `sampler_info`).
    #[serde(default)]
    pub one_step_per_token: bool,
    pub samples: Vec<WorkerSample>,
    pub batches: Vec<BatchRecord>,
    pub device: Option<String>,
    /// The model's and the sampler's settings, defaults filled in, as the model's reply
    /// stated them (`GenerateReply::settings`); `None` for the reference row or a model that
    /// does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    /// Text cells whose suite selects documents (`doc_ids:`, `docs_from_replay:`): how many
    /// of the task's documents were scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<crate::suite::DocumentCount>,
}

/// Events a worker writes, one JSON object per line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Progress {
        phase: String,
        done: usize,
        total: usize,
        /// A short status line (training: loss, validation, tokens/s).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    Described {
        descriptor: PluginDescriptor,
    },
    Finished {
        output: Box<CellOutput>,
    },
    Trained {
        output: Box<TrainOutput>,
    },
    Failed {
        message: String,
        /// The plugin's classification of the error that ended the job, when a plugin call
        /// failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<ErrorKind>,
    },
}

// ---------------------------------------------------------------------------------------------
// Child side.

struct EventWriter {
    file: std::fs::File,
}

impl EventWriter {
    fn emit(&mut self, e: &Event) -> Result<()> {
        let mut line = serde_json::to_vec(e)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()?;
        Ok(())
    }
}

/// Entry point of `dlm-bench worker --job FILE --events FILE`. Returns the process exit code.
pub fn worker_main(job_path: &Path, events_path: &Path) -> Result<i32> {
    contain_self();
    let job: Job = serde_json::from_slice(&std::fs::read(job_path)?)
        .with_context(|| format!("malformed worker job {}", job_path.display()))?;
    let mut events = EventWriter {
        file: std::fs::File::create(events_path)?,
    };
    let result = match &job {
        Job::Describe { library } => LoadedPlugin::load(library)
            .map(|p| Event::Described {
                descriptor: p.descriptor,
            })
            .map_err(anyhow::Error::from),
        Job::Cell {
            cell,
            task_library,
            model_library,
            checkpoint,
        } => run_cell(
            cell.as_ref(),
            task_library,
            model_library.as_deref(),
            checkpoint.as_ref(),
            &mut events,
        )
        .map(|output| Event::Finished {
            output: Box::new(output),
        }),
        Job::Train {
            unit,
            task_library,
            model_library,
            checkpoint,
        } => run_train(unit, task_library, model_library, checkpoint, &mut events).map(|output| {
            Event::Trained {
                output: Box::new(output),
            }
        }),
    };
    match result {
        Ok(event) => {
            events.emit(&event)?;
            Ok(0)
        }
        Err(e) => {
            let kind = error_kind(&e);
            events.emit(&Event::Failed {
                message: format!("{e:#}"),
                kind,
            })?;
            Ok(1)
        }
    }
}

/// A plugin's reply that breaks the protocol (wrong shape, ids outside the vocabulary): the
/// harness's own check of a model's output, which counts as bad data.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct BadReply(pub String);

/// The kind of the error that ended a job: the failed plugin call's own classification, bad
/// data for a reply the harness refused, `None` for anything else.
fn error_kind(e: &anyhow::Error) -> Option<ErrorKind> {
    e.chain().find_map(|cause| {
        if let Some(call) = cause.downcast_ref::<CallError>() {
            Some(call.kind)
        } else {
            cause.downcast_ref::<BadReply>().map(|_| ErrorKind::BadData)
        }
    })
}

fn call<Req: Serialize, Rep: for<'de> Deserialize<'de>>(
    instance: &Instance,
    method: &str,
    request: &Req,
    tokens: &[u32],
) -> Result<(Rep, Vec<u32>)> {
    let (json, out_tokens) = instance.call(method, &serde_json::to_string(request)?, tokens)?;
    let reply = serde_json::from_str(&json).with_context(|| {
        format!(
            "plugin `{}` returned a malformed reply to {method}",
            instance.plugin()
        )
    })?;
    Ok((reply, out_tokens))
}

fn plugin_id(p: &LoadedPlugin) -> PluginId {
    PluginId {
        name: p.descriptor.name.clone(),
        version: p.descriptor.version.clone(),
    }
}

fn progress(phase: &str, done: usize, total: usize) -> Event {
    Event::Progress {
        phase: phase.into(),
        done,
        total,
        message: None,
    }
}

/// Load the task plugin, open the task and describe it at `length`.
fn open_task(
    task: &ComponentSpec,
    task_library: &Path,
    length: usize,
) -> Result<(LoadedPlugin, Instance, TaskDescription)> {
    let task_plugin = LoadedPlugin::load(task_library)?;
    let config = task_config(&task_plugin, task)?;
    let instance = task_plugin.open(ComponentKind::Task, &task.component, &config.to_string())?;
    let (description, _): (TaskDescription, _) = call(
        &instance,
        method::TASK_DESCRIBE,
        &DescribeTaskRequest { length },
        &[],
    )?;
    Ok((task_plugin, instance, description))
}

/// The task's config as its plugin receives it: relative values of its declared path keys
/// joined to the suite's folder (`TaskBinding::config` carries the same, so a model that
/// reads the task's files finds them too).
pub(super) fn task_config(
    task_plugin: &LoadedPlugin,
    task: &ComponentSpec,
) -> Result<serde_json::Value> {
    let info = task_plugin
        .descriptor
        .component(ComponentKind::Task, &task.component)
        .with_context(|| {
            format!(
                "plugin `{}` provides no task `{}`",
                task_plugin.name(),
                task.component
            )
        })?;
    Ok(resolve_paths(&task.config, info, task.base_dir.as_deref()))
}

/// A model component opened in the worker. Fields drop in order: the instance closes before
/// its plugin goes.
pub(super) struct OpenedModel {
    pub instance: Instance,
    pub info: ComponentInfo,
    pub plugin: LoadedPlugin,
}

/// What a cell records of the model that made its samples.
pub(super) struct OpenedModelInfo {
    pub plugin_id: PluginId,
    pub autoregressive: bool,
    pub exact: bool,
}

impl OpenedModel {
    pub fn summary(&self) -> OpenedModelInfo {
        OpenedModelInfo {
            plugin_id: plugin_id(&self.plugin),
            autoregressive: self.info.has("autoregressive"),
            exact: self.info.has("oracle"),
        }
    }
}

/// Load the model plugin, check it provides the model (and can be trained, when `train` is
/// given), and open it bound to the task.
pub(super) fn open_model(
    library: &Path,
    spec: &ComponentSpec,
    task: TaskBinding,
    train: Option<TrainSettings>,
    checkpoint: Option<TrainedCheckpoint>,
) -> Result<OpenedModel> {
    let plugin = LoadedPlugin::load(library)?;
    let info = plugin
        .descriptor
        .component(ComponentKind::Model, &spec.component)
        .with_context(|| {
            format!(
                "plugin `{}` provides no model `{}`",
                plugin.name(),
                spec.component
            )
        })?
        .clone();
    if train.is_some() && !info.has("train") {
        anyhow::bail!(
            "model `{}` of plugin `{}` cannot be trained by the harness (no `train` capability)",
            spec.component,
            plugin.name()
        );
    }
    let open = ModelOpenConfig {
        config: resolve_paths(&spec.config, &info, spec.base_dir.as_deref()),
        task,
        train,
        checkpoint,
        base_dir: spec
            .base_dir
            .as_ref()
            .map(|dir| dir.to_string_lossy().into_owned()),
    };
    let instance = plugin.open(
        ComponentKind::Model,
        &spec.component,
        &serde_json::to_string(&open)?,
    )?;
    Ok(OpenedModel {
        instance,
        info,
        plugin,
    })
}

/// Ground-truth sequences `first .. first + n` of the stream `seed`, checked.
fn reference_batch(
    task: &Instance,
    n: usize,
    length: usize,
    seed: u64,
    first: u64,
    vocab: u32,
) -> Result<Vec<Vec<u32>>> {
    let (shape, tokens): (TokenBatch, _) = call(
        task,
        method::TASK_SAMPLE_REFERENCE,
        &SampleReferenceRequest {
            n,
            length,
            seed,
            first_index: first,
        },
        &[],
    )?;
    let seqs = shape.unpack(&tokens).map_err(anyhow::Error::msg)?;
    check_sequences(&seqs, n, length, vocab, "task.sample_reference")?;
    Ok(seqs)
}
