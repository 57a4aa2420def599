//! Worker processes. The harness runs every plugin call in a child process of its own binary
//! (`dlm-bench worker ...`), so a plugin that panics, aborts, segfaults or hangs costs only
//! its own cell. The child writes JSON-line events to a file the parent names (stdout and
//! stderr stay free for the plugin's own output and go to the cell's log).

use crate::results::{BatchRecord, PluginId};
use crate::suite::{CellSpec, ComponentSpec, MemoryLimit, TrainSpec};
use anyhow::{Context, Result};
use dlm_plugin_api::abi::Instance;
use dlm_plugin_api::{
    method, ComponentKind, DescribeTaskRequest, EvaluateReply, GenerateReply, GenerateRequest,
    LoadedPlugin, ModelOpenConfig, PluginDescriptor, SampleReferenceRequest, SampleScore,
    SaveReply, SaveRequest, ScoreReply, TaskBinding, TaskDescription, TokenBatch, TrainSettings,
    TrainStepReply, TrainStepRequest, TrainedCheckpoint,
};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
}

/// The result of a cell job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellOutput {
    pub task_description: TaskDescription,
    pub task_plugin: PluginId,
    pub model_plugin: Option<PluginId>,
    pub model_autoregressive: bool,
    /// The cell's sampler decodes one token per step (its descriptor's `sampler_info`).
    #[serde(default)]
    pub one_step_per_token: bool,
    pub samples: Vec<WorkerSample>,
    pub batches: Vec<BatchRecord>,
    pub device: Option<String>,
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
            events.emit(&Event::Failed {
                message: format!("{e:#}"),
            })?;
            Ok(1)
        }
    }
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
    if task_plugin
        .descriptor
        .component(ComponentKind::Task, &task.component)
        .is_none()
    {
        anyhow::bail!(
            "plugin `{}` provides no task `{}`",
            task_plugin.name(),
            task.component
        );
    }
    let instance = task_plugin.open(
        ComponentKind::Task,
        &task.component,
        &task.config.to_string(),
    )?;
    let (description, _): (TaskDescription, _) = call(
        &instance,
        method::TASK_DESCRIBE,
        &DescribeTaskRequest { length },
        &[],
    )?;
    Ok((task_plugin, instance, description))
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

/// Train one model: fresh ground-truth batches every step, the held-out set evaluated every
/// `validation_every` steps and at the end, then `model.save`.
fn run_train(
    unit: &TrainUnit,
    task_library: &Path,
    model_library: &Path,
    checkpoint: &Path,
    events: &mut EventWriter,
) -> Result<TrainOutput> {
    let spec = unit.spec().clone();
    let (task_plugin, task, description) = open_task(&unit.task, task_library, unit.length)?;
    let vocab = description.vocab_size as u32;
    let model_plugin = LoadedPlugin::load(model_library)?;
    let info = model_plugin
        .descriptor
        .component(ComponentKind::Model, &unit.model.component)
        .with_context(|| {
            format!(
                "plugin `{}` provides no model `{}`",
                model_plugin.name(),
                unit.model.component
            )
        })?;
    if !info.has("train") {
        anyhow::bail!(
            "model `{}` of plugin `{}` cannot be trained by the harness (no `train` capability)",
            unit.model.component,
            model_plugin.name()
        );
    }
    let (train_seed, validation_seed) = unit.data_seeds();
    let binding = TaskBinding {
        plugin: task_plugin.descriptor.name.clone(),
        task: unit.task.component.clone(),
        config: unit.task.config.clone(),
        description: description.clone(),
    };
    let open = ModelOpenConfig {
        config: unit.model.config.clone(),
        task: binding.clone(),
        train: Some(TrainSettings {
            steps: spec.steps,
            batch_size: spec.batch_size,
            seed: spec.seed,
            data: serde_json::json!({
                "task_plugin": &binding.plugin,
                "task_plugin_version": &task_plugin.descriptor.version,
                "task": &binding.task,
                "config": &binding.config,
                "train_seed": train_seed,
                "validation_seed": validation_seed,
                "validation_samples": spec.validation_samples,
            }),
            options: spec.options.clone(),
        }),
        checkpoint: None,
    };
    let model = model_plugin.open(
        ComponentKind::Model,
        &unit.model.component,
        &serde_json::to_string(&open)?,
    )?;
    let validation_set = reference_batch(
        &task,
        spec.validation_samples,
        unit.length,
        validation_seed,
        0,
        vocab,
    )?;
    let reference = held_out_nll(&task, &validation_set)
        .context("scoring the held-out validation set under the task")?;
    let optimum = reference.or(description
        .entropy_nats
        .map(|h| h / description.length as f64));
    let mut bound = false;
    let mut validate = || -> Result<f64> {
        let (mut total, mut weight) = (0.0, 0usize);
        for chunk in validation_set.chunks(spec.batch_size.max(1)) {
            let (shape, buffer) = TokenBatch::pack(chunk);
            let (reply, _): (EvaluateReply, _) =
                call(&model, method::MODEL_EVALUATE, &shape, &buffer)?;
            if !reply.nll_per_token.is_finite() {
                anyhow::bail!(
                    "model.evaluate returned a non-finite loss ({})",
                    reply.nll_per_token
                );
            }
            bound = reply.bound;
            total += reply.nll_per_token * chunk.len() as f64;
            weight += chunk.len();
        }
        Ok(total / weight.max(1) as f64)
    };
    let started = std::time::Instant::now();
    let mut losses = Vec::with_capacity(spec.steps);
    let mut validation = Vec::new();
    let mut last_validation: Option<f64> = None;
    let mut last_report = std::time::Instant::now() - Duration::from_secs(1);
    for step in 0..spec.steps {
        let batch = reference_batch(
            &task,
            spec.batch_size,
            unit.length,
            train_seed,
            (step * spec.batch_size) as u64,
            vocab,
        )?;
        let (shape, buffer) = TokenBatch::pack(&batch);
        let (reply, _): (TrainStepReply, _) = call(
            &model,
            method::MODEL_TRAIN_STEP,
            &TrainStepRequest {
                step,
                lengths: shape.lengths,
            },
            &buffer,
        )
        .with_context(|| format!("training step {step} of {}", spec.steps))?;
        if !reply.loss.is_finite() {
            anyhow::bail!("training diverged at step {step}: loss {}", reply.loss);
        }
        losses.push(reply.loss);
        let done = step + 1;
        if done % spec.validation_every == 0 || done == spec.steps {
            let v = validate()?;
            validation.push(ValidationPoint {
                step: done,
                nll_per_token: v,
            });
            last_validation = Some(v);
        }
        // At most ten progress lines a second: the parent re-reads the events file.
        if last_report.elapsed() >= Duration::from_millis(100) || done == spec.steps {
            last_report = std::time::Instant::now();
            let seconds = started.elapsed().as_secs_f64().max(1e-9);
            let tokens_per_second = (done * spec.batch_size * unit.length) as f64 / seconds;
            let mut message = format!("loss {:.4}  {:.0} tok/s", reply.loss, tokens_per_second);
            if let Some(v) = last_validation {
                message.push_str(&format!("  val {v:.4}"));
                if let Some(o) = optimum {
                    message.push_str(&format!(" (reference {o:.4})"));
                }
            }
            events.emit(&Event::Progress {
                phase: "train".into(),
                done,
                total: spec.steps,
                message: Some(message),
            })?;
        }
    }
    let wall_seconds = started.elapsed().as_secs_f64();
    let (reply, _): (SaveReply, _) = call(
        &model,
        method::MODEL_SAVE,
        &SaveRequest {
            path: checkpoint.to_string_lossy().into_owned(),
        },
        &[],
    )?;
    let tokens = (spec.steps * spec.batch_size * unit.length) as u64;
    Ok(TrainOutput {
        fingerprint: reply.fingerprint,
        task_description: description,
        task_plugin: plugin_id(&task_plugin),
        model_plugin: plugin_id(&model_plugin),
        steps: spec.steps,
        tokens,
        wall_seconds,
        tokens_per_second: tokens as f64 / wall_seconds.max(1e-9),
        final_loss: losses.last().copied().unwrap_or(f64::NAN),
        losses,
        validation,
        bound,
        reference_nll_per_token: reference,
    })
}

/// Mean `−log q(x)` per token of `seqs` under the task; `None` if the task gives no finite
/// `log q` for some sequence.
fn held_out_nll(task: &Instance, seqs: &[Vec<u32>]) -> Result<Option<f64>> {
    let (mut total, mut tokens) = (0.0, 0usize);
    for chunk in seqs.chunks(256) {
        let (shape, buffer) = TokenBatch::pack(chunk);
        let (reply, _): (ScoreReply, _) = call(task, method::TASK_SCORE, &shape, &buffer)?;
        if reply.scores.len() != chunk.len() {
            anyhow::bail!(
                "task.score returned {} scores for {} sequences",
                reply.scores.len(),
                chunk.len()
            );
        }
        for (score, seq) in reply.scores.iter().zip(chunk) {
            match score.log_q {
                Some(log_q) if log_q.is_finite() => {
                    total -= log_q;
                    tokens += seq.len();
                }
                _ => return Ok(None),
            }
        }
    }
    Ok((tokens > 0).then(|| total / tokens as f64))
}

fn run_cell(
    cell: &CellSpec,
    task_library: &Path,
    model_library: Option<&Path>,
    checkpoint: Option<&TrainedCheckpoint>,
    events: &mut EventWriter,
) -> Result<CellOutput> {
    let (task_plugin, task, description) = open_task(&cell.task, task_library, cell.length)?;
    let n = cell.n;
    let batch = cell.batch_size.max(1);
    let mut sequences: Vec<Vec<u32>> = Vec::with_capacity(n);
    let mut stats = Vec::with_capacity(n);
    let mut batches = Vec::new();
    let mut model_plugin_id = None;
    let mut model_autoregressive = false;
    let mut one_step_per_token = false;
    let mut device = None;
    let vocab = description.vocab_size as u32;
    match (&cell.model, &cell.sampler) {
        (None, _) => {
            events.emit(&progress("reference", 0, n))?;
            let mut first = 0;
            while first < n {
                let size = batch.min(n - first);
                let seqs =
                    reference_batch(&task, size, cell.length, cell.seed, first as u64, vocab)?;
                for _ in &seqs {
                    stats.push((0, 0));
                }
                sequences.extend(seqs);
                first += size;
                events.emit(&progress("reference", first, n))?;
            }
        }
        (Some(model_spec), Some(sampler)) => {
            let model_library = model_library.context("a model cell needs its model library")?;
            let model_plugin = LoadedPlugin::load(model_library)?;
            let info = model_plugin
                .descriptor
                .component(ComponentKind::Model, &model_spec.component)
                .with_context(|| {
                    format!(
                        "plugin `{}` provides no model `{}`",
                        model_plugin.name(),
                        model_spec.component
                    )
                })?;
            model_autoregressive = info.has("autoregressive");
            one_step_per_token = cell.sampler.as_ref().is_some_and(|s| {
                info.sampler_info
                    .iter()
                    .any(|i| i.name == s.name && i.one_step_per_token)
            });
            model_plugin_id = Some(plugin_id(&model_plugin));
            let open = ModelOpenConfig {
                config: model_spec.config.clone(),
                task: TaskBinding {
                    plugin: task_plugin.descriptor.name.clone(),
                    task: cell.task.component.clone(),
                    config: cell.task.config.clone(),
                    description: description.clone(),
                },
                train: None,
                checkpoint: checkpoint.cloned(),
            };
            let model = model_plugin.open(
                ComponentKind::Model,
                &model_spec.component,
                &serde_json::to_string(&open)?,
            )?;
            events.emit(&progress("generate", 0, n))?;
            let mut first = 0;
            while first < n {
                let size = batch.min(n - first);
                let request = GenerateRequest {
                    batch_size: size,
                    length: cell.length,
                    sampler: sampler.clone(),
                    seed: cell.seed,
                    first_index: first as u64,
                    prompts: None,
                };
                let cpu_before = process_cpu_seconds();
                let (reply, tokens): (GenerateReply, _) =
                    call(&model, method::MODEL_GENERATE, &request, &[])?;
                let cpu_seconds = process_cpu_seconds() - cpu_before;
                let seqs = TokenBatch {
                    lengths: reply.lengths.clone(),
                }
                .unpack(&tokens)
                .map_err(anyhow::Error::msg)?;
                check_sequences(&seqs, size, cell.length, vocab, "model.generate")?;
                if reply.samples.len() != size {
                    anyhow::bail!(
                        "model.generate returned statistics for {} samples, expected {size}",
                        reply.samples.len()
                    );
                }
                stats.extend(reply.samples.iter().map(|s| (s.nfe, s.generated_tokens)));
                batches.push(BatchRecord {
                    first_index: first as u64,
                    size,
                    nfe: reply.batch_nfe,
                    wall_seconds: reply.wall_seconds,
                    cpu_seconds: Some(cpu_seconds),
                });
                device = Some(reply.device.clone());
                sequences.extend(seqs);
                first += size;
                events.emit(&progress("generate", first, n))?;
            }
        }
        (Some(_), None) => anyhow::bail!("a model cell needs a sampler"),
    }
    // Score in chunks so progress moves and requests stay small.
    let mut scores: Vec<SampleScore> = Vec::with_capacity(n);
    for chunk in sequences.chunks(256) {
        let (shape, buffer) = TokenBatch::pack(chunk);
        let (reply, _): (ScoreReply, _) = call(&task, method::TASK_SCORE, &shape, &buffer)?;
        if reply.scores.len() != chunk.len() {
            anyhow::bail!(
                "task.score returned {} scores for {} sequences",
                reply.scores.len(),
                chunk.len()
            );
        }
        scores.extend(reply.scores);
        events.emit(&progress("score", scores.len(), n))?;
    }
    let samples = sequences
        .into_iter()
        .zip(scores)
        .zip(stats)
        .enumerate()
        .map(
            |(i, ((tokens, score), (nfe, generated_tokens)))| WorkerSample {
                index: i as u64,
                tokens,
                score,
                nfe,
                generated_tokens,
            },
        )
        .collect();
    Ok(CellOutput {
        task_description: description,
        task_plugin: plugin_id(&task_plugin),
        model_plugin: model_plugin_id,
        model_autoregressive,
        one_step_per_token,
        samples,
        batches,
        device,
    })
}

/// CPU time of the whole worker process (every thread of the plugin), in seconds. Unlike wall
/// time it hardly moves when other processes compete for the cores, which is what lets
/// `compare` tell a slower machine from slower code.
fn process_cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Model outputs are untrusted: check count, length and vocabulary before scoring.
fn check_sequences(
    seqs: &[Vec<u32>],
    n: usize,
    length: usize,
    vocab: u32,
    from: &str,
) -> Result<()> {
    if seqs.len() != n {
        anyhow::bail!("{from} returned {} sequences, expected {n}", seqs.len());
    }
    for (i, s) in seqs.iter().enumerate() {
        if s.len() != length {
            anyhow::bail!(
                "{from}: sequence {i} has {} tokens, expected {length}",
                s.len()
            );
        }
        if let Some(pos) = s.iter().position(|&t| t >= vocab) {
            anyhow::bail!(
                "{from}: sequence {i} holds token id {} at position {pos}, outside the task's vocabulary 0..{vocab} (a mask left in the output?)",
                s[pos]
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Parent side.

/// The executable to start workers from: this binary, unless `DLM_BENCH_WORKER_EXE` says
/// otherwise (tests that drive the library in-process point it at the real binary).
pub fn worker_exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("DLM_BENCH_WORKER_EXE") {
        return Ok(PathBuf::from(p));
    }
    std::env::current_exe().context("cannot find the dlm-bench executable to start workers")
}

/// How a worker ended.
pub enum Outcome {
    Described(PluginDescriptor),
    Finished(Box<CellOutput>),
    Trained(Box<TrainOutput>),
    /// The job failed; the cause says why (plugin error, crash signal, timeout, memory or
    /// output limit) and quotes the end of the worker's log.
    Failed(String),
}

/// The most a worker's stdout and stderr together may write to its log: past it the worker is
/// killed, the log cut at the limit, and the job fails with "output limit".
pub const OUTPUT_LIMIT: u64 = 10 << 20;

/// The default `memory_limit`: min(16 GiB, 3/4 of the machine's memory) — the smaller of
/// `MemTotal` and the cgroup's `memory.max` where one is set. 16 GiB where neither can be read.
pub fn default_memory_limit() -> u64 {
    const CAP: u64 = 16 << 30;
    physical_memory().map_or(CAP, |m| (m / 4 * 3).min(CAP))
}

fn physical_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let total = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())?
        * 1024;
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    Some(cgroup.map_or(total, |c| c.min(total)))
}

/// `1 GiB`, `1.5 GiB`, `300 MiB`: sizes in causes.
pub fn format_bytes(n: u64) -> String {
    let (unit, name) = if n >= 1 << 30 {
        (1u64 << 30, "GiB")
    } else if n >= 1 << 20 {
        (1 << 20, "MiB")
    } else {
        (1 << 10, "KiB")
    };
    if n.is_multiple_of(unit) {
        format!("{} {name}", n / unit)
    } else {
        format!("{:.1} {name}", n as f64 / unit as f64)
    }
}

/// What one worker may use before the harness kills it (with every process it started).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Wall-clock time (`timeout_seconds`).
    pub timeout: Duration,
    /// Resident memory of the worker and its child processes (`memory_limit`); `None`: no limit.
    pub memory: Option<u64>,
    /// Whether `memory` came from the suite (otherwise it is the default), for the cause.
    pub memory_from_suite: bool,
    /// Bytes of stdout + stderr in the worker's log.
    pub output: u64,
}

impl Limits {
    /// `timeout` and the suite's `memory_limit`, with the default output limit.
    pub fn new(timeout: Duration, memory: MemoryLimit) -> Limits {
        let (memory, memory_from_suite) = match memory {
            MemoryLimit::Default => (Some(default_memory_limit()), false),
            MemoryLimit::Bytes(b) => (Some(b), true),
            MemoryLimit::Unlimited => (None, true),
        };
        Limits {
            timeout,
            memory,
            memory_from_suite,
            output: OUTPUT_LIMIT,
        }
    }
}

/// A time limit with the default memory and output limits.
impl From<Duration> for Limits {
    fn from(timeout: Duration) -> Limits {
        Limits::new(timeout, MemoryLimit::Default)
    }
}

/// The environment variable that marks every process a worker starts (inherited by the
/// plugin's children), so the harness finds and kills those that left the worker's process
/// group.
const TOKEN_VAR: &str = "DLM_BENCH_WORKER_TOKEN";
/// The harness's pid, so a worker whose parent died before it set its parent-death signal
/// notices and exits.
const PARENT_VAR: &str = "DLM_BENCH_WORKER_PARENT";

/// Child side of the containment, first thing in the worker: die with the harness. The worker
/// runs in its own process group, so a Ctrl-C at the terminal reaches only the harness; the
/// parent-death signal takes the worker down with it.
fn contain_self() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getppid, set_parent_process_death_signal, Pid, Signal};
        let _ = set_parent_process_death_signal(Some(Signal::KILL));
        if let Some(parent) = std::env::var(PARENT_VAR)
            .ok()
            .and_then(|v| v.parse::<i32>().ok())
        {
            if Pid::as_raw(getppid()) != parent {
                // The harness died before the signal was armed.
                std::process::exit(1);
            }
        }
    }
}

/// Why the poll loop stopped.
enum Ended {
    Exited(std::process::ExitStatus),
    TimedOut,
    Memory(u64),
    Output,
}

/// Run `job` in a worker process and wait for it, within `limits` (a `Duration` is a time
/// limit with the default memory and output limits). `scratch` is a directory for the job,
/// event and log files (named by `name`).
///
/// The worker leads a process group of its own. Whatever ends the job — success, failure,
/// crash, or a limit — the whole group is killed afterwards, and so is every process that
/// carries the job's token in its environment (a child that left the group with `setsid`), so
/// nothing a plugin started outlives its job.
pub fn run_job(
    job: &Job,
    scratch: &Path,
    name: &str,
    limits: impl Into<Limits>,
    mut on_progress: impl FnMut(&str, usize, usize, Option<&str>),
) -> Result<Outcome> {
    let limits = limits.into();
    let job_path = scratch.join(format!("{name}.job.json"));
    let events_path = scratch.join(format!("{name}.events.jsonl"));
    let log_path = scratch.join(format!("{name}.log"));
    std::fs::write(&job_path, serde_json::to_vec(job)?)?;
    let _ = std::fs::remove_file(&events_path);
    let log = std::fs::File::create(&log_path)?;
    let log_size = log.try_clone()?;
    let token = job_token();
    let started = Instant::now();
    let mut command = Command::new(worker_exe()?);
    // Symbolising a panic backtrace of a large plugin can outlast a cell's time limit, and the
    // panic message already reaches the report; opt back in with DLM_BENCH_WORKER_BACKTRACE=1.
    if std::env::var_os("DLM_BENCH_WORKER_BACKTRACE").is_none() {
        command.env("RUST_BACKTRACE", "0");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child: Child = command
        .env(TOKEN_VAR, &token)
        .env(PARENT_VAR, std::process::id().to_string())
        .arg("worker")
        .arg("--job")
        .arg(&job_path)
        .arg("--events")
        .arg(&events_path)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("cannot start a worker process")?;
    let mut memory = MemoryWatch::new(child.id());
    let mut seen_lines = 0usize;
    let mut last: Option<Event> = None;
    let mut poll = Duration::from_micros(500);
    let ended = loop {
        let exited = child.try_wait()?;
        // Read any new events (the file only grows).
        if let Ok(f) = std::fs::File::open(&events_path) {
            let lines: Vec<String> = std::io::BufReader::new(f)
                .lines()
                .map_while(Result::ok)
                .collect();
            for line in lines.iter().skip(seen_lines) {
                match serde_json::from_str::<Event>(line) {
                    Ok(Event::Progress {
                        phase,
                        done,
                        total,
                        message,
                    }) => on_progress(&phase, done, total, message.as_deref()),
                    Ok(e) => last = Some(e),
                    Err(_) => {} // a line being written; read again next round
                }
            }
            // Only count lines that parsed fully, so a half-written line is re-read.
            seen_lines = lines
                .iter()
                .take_while(|l| serde_json::from_str::<Event>(l).is_ok())
                .count();
        }
        if let Some(status) = exited {
            break Ended::Exited(status);
        }
        if started.elapsed() > limits.timeout {
            break Ended::TimedOut;
        }
        if log_size.metadata().map_or(0, |m| m.len()) > limits.output {
            break Ended::Output;
        }
        if let Some(limit) = limits.memory {
            let used = memory.sample();
            if used > limit {
                break Ended::Memory(used);
            }
        }
        // Back off from 1 ms to 20 ms: short jobs finish promptly, long ones cost no CPU.
        poll = (poll * 2).min(Duration::from_millis(20));
        std::thread::sleep(poll);
    };
    // Nothing the plugin started outlives the job: not the worker, not its children.
    kill_tree(child.id(), &token);
    let ended = match ended {
        Ended::Exited(status) => {
            // Limits hold however the worker ended: a finished job that wrote past the output
            // limit, or peaked over the memory limit between two polls, still fails.
            let peak = memory.peak;
            if log_size.metadata().map_or(0, |m| m.len()) > limits.output {
                Ended::Output
            } else if limits.memory.is_some_and(|limit| peak > limit) {
                Ended::Memory(peak)
            } else {
                Ended::Exited(status)
            }
        }
        other => {
            let _ = child.wait();
            other
        }
    };
    if matches!(ended, Ended::Output) {
        // Keep the log at the limit, with a note where it was cut.
        let _ = log_size.set_len(limits.output);
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&log_path) {
            let _ = writeln!(
                f,
                "\n[dlm-bench: log cut at {} (output limit)]",
                format_bytes(limits.output)
            );
        }
    }
    // A flood of output needs only a glimpse.
    let tail = log_tail(
        &log_path,
        if matches!(ended, Ended::Output) {
            3
        } else {
            12
        },
    );
    let outcome = match (ended, last) {
        (Ended::TimedOut, _) => Outcome::Failed(format!(
            "timed out after {:.0} s (the limit `timeout_seconds`); worker killed{tail}",
            limits.timeout.as_secs_f64()
        )),
        (Ended::Memory(used), _) => Outcome::Failed(format!(
            "memory limit ({}, {}) exceeded: the worker and its child processes reached {} resident; worker killed{tail}",
            format_bytes(limits.memory.unwrap_or_default()),
            if limits.memory_from_suite {
                "the suite's `memory_limit`"
            } else {
                "the default `memory_limit`, min(16 GiB, 3/4 of physical memory)"
            },
            format_bytes(used)
        )),
        (Ended::Output, _) => Outcome::Failed(format!(
            "output limit ({} of log) exceeded: the worker wrote more than that to stdout and stderr; worker killed and its log cut at the limit{tail}",
            format_bytes(limits.output)
        )),
        (Ended::Exited(_), Some(Event::Described { descriptor })) => {
            Outcome::Described(descriptor)
        }
        (Ended::Exited(_), Some(Event::Finished { output })) => Outcome::Finished(output),
        (Ended::Exited(_), Some(Event::Trained { output })) => Outcome::Trained(output),
        (Ended::Exited(_), Some(Event::Failed { message })) => Outcome::Failed(message),
        (Ended::Exited(status), _) => {
            Outcome::Failed(format!("worker {}{tail}", describe_exit(status)))
        }
    };
    if matches!(
        outcome,
        Outcome::Finished(_) | Outcome::Described(_) | Outcome::Trained(_)
    ) {
        let _ = std::fs::remove_file(&job_path);
        let _ = std::fs::remove_file(&events_path);
    }
    // A log the plugin wrote nothing to says nothing: keep only logs with content.
    if std::fs::metadata(&log_path).is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(&log_path);
    }
    Ok(outcome)
}

/// A token unique to one job: this process, a counter and the clock.
fn job_token() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{n}-{nanos:x}", std::process::id())
}

/// Kill the worker's process group (the worker leads it), then every process still carrying
/// the job's token (those that left the group with `setsid`), a few rounds in case one was
/// forking meanwhile.
fn kill_tree(pgid: u32, token: &str) {
    #[cfg(unix)]
    {
        use rustix::process::{kill_process, kill_process_group, Pid, Signal};
        if let Some(pid) = Pid::from_raw(pgid as i32) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        for _ in 0..8 {
            let found = processes_with_token(token);
            if found.is_empty() {
                break;
            }
            for pid in found {
                if let Some(pid) = Pid::from_raw(pid) {
                    let _ = kill_process(pid, Signal::KILL);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Processes (other than this one) whose environment holds `TOKEN_VAR=token` — found through
/// `/proc`, so only on Linux and only those of this user.
fn processes_with_token(token: &str) -> Vec<i32> {
    let needle = format!("{TOKEN_VAR}={token}\0").into_bytes();
    let me = std::process::id() as i32;
    proc_pids()
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_slice()))
        })
        .collect()
}

fn proc_pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
}

/// A `/proc/PID/status` field in bytes (`VmRSS`, `VmHWM`: given in kB).
fn status_bytes(pid: i32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// The process group of `pid` (field 5 of `/proc/PID/stat`, after the parenthesised name).
fn process_group_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Resident memory of a worker and its process group, from `/proc` (Linux; elsewhere nothing
/// is measured). The worker's own figure is its peak (`VmHWM`), read at every poll; the rest of
/// the group is summed every quarter second.
struct MemoryWatch {
    pid: i32,
    /// The latest total of the group's other processes.
    others: u64,
    last_scan: Option<Instant>,
    /// The highest total seen.
    peak: u64,
}

impl MemoryWatch {
    fn new(pid: u32) -> MemoryWatch {
        MemoryWatch {
            pid: pid as i32,
            others: 0,
            last_scan: None,
            peak: 0,
        }
    }

    /// The current total: the worker's peak resident set plus its group's current ones.
    fn sample(&mut self) -> u64 {
        let own = status_bytes(self.pid, "VmHWM").unwrap_or(0);
        if self
            .last_scan
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(250))
        {
            self.last_scan = Some(Instant::now());
            self.others = proc_pids()
                .filter(|&p| p != self.pid && process_group_of(p) == Some(self.pid))
                .filter_map(|p| status_bytes(p, "VmRSS"))
                .sum();
        }
        let total = own + self.others;
        self.peak = self.peak.max(total);
        total
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                6 => " (SIGABRT: the plugin aborted)",
                9 => " (SIGKILL; from outside the harness, e.g. the system's out-of-memory killer)",
                11 => " (SIGSEGV: the plugin crashed)",
                7 => " (SIGBUS)",
                4 => " (SIGILL)",
                8 => " (SIGFPE)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    match status.code() {
        Some(c) => format!("exited with code {c} without reporting a result"),
        None => "ended abnormally".to_string(),
    }
}

/// The last `lines` non-empty lines of the log (read from its last 64 KiB; each cut at 300
/// characters, so a flood of output does not flood the cause).
fn log_tail(path: &Path, lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    const WINDOW: u64 = 64 << 10;
    let mut bytes = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let len = f.metadata().map_or(0, |m| m.len());
        if f.seek(SeekFrom::Start(len.saturating_sub(WINDOW))).is_ok() {
            let _ = f.take(WINDOW).read_to_end(&mut bytes);
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            if l.chars().count() > 300 {
                format!("{}…", l.chars().take(300).collect::<String>())
            } else {
                l.to_string()
            }
        })
        .collect();
    if all.is_empty() {
        return String::new();
    }
    let start = all.len().saturating_sub(lines);
    format!(
        "; last log lines ({}):\n  {}",
        path.display(),
        all[start..].join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_limits() {
        assert_eq!(format_bytes(8 << 30), "8 GiB");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
        assert_eq!(format_bytes(300 << 20), "300 MiB");
        let default = default_memory_limit();
        assert!(default > 0 && default <= 16 << 30, "{default}");
        let limits = Limits::from(Duration::from_secs(1));
        assert_eq!(limits.memory, Some(default));
        assert!(!limits.memory_from_suite);
        assert_eq!(limits.output, OUTPUT_LIMIT);
        let none = Limits::new(Duration::from_secs(1), MemoryLimit::Unlimited);
        assert_eq!(none.memory, None);
    }

    #[test]
    fn log_tail_reads_the_end_and_cuts_long_lines() {
        let dir = std::env::temp_dir().join(format!("dlm-bench-log-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.log");
        let mut text = "early\n".repeat(100_000);
        text.push_str(&"y".repeat(10_000));
        text.push_str("\nlast line\n");
        std::fs::write(&path, text).unwrap();
        let tail = log_tail(&path, 3);
        assert!(
            tail.contains("last line") && tail.contains("yyy…"),
            "{tail}"
        );
        assert!(tail.len() < 1000, "{}", tail.len());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
