//! Training the suite's models that carry `train:`, before their cells run.
//!
//! Every (model with `train:`, task, length) is one [`TrainUnit`]. Its checkpoint lives in the
//! checkpoint cache under a content hash of everything that determines the weights — task and
//! model plugin names and versions, task and model configuration, length and the training
//! settings — so a second run reuses it and any change trains afresh. A training run happens in
//! a worker process like a cell (a crash or a time-out fails only that model's cells) and
//! writes `<name>.ckpt.partial`; only a finished run is renamed into place and gets its
//! `<name>.train.json` record, so an interrupted run never leaves a checkpoint that looks whole.
//! The plugin verifies the file's fingerprint and weight hash whenever it opens it, so a
//! corrupt or mismatched checkpoint is refused with a message naming the file.

use crate::progress::{short_cause, training_cost, Progress};
use crate::results::{read_jsonl, write_atomic, RunDir};
use crate::suite::{hex, CellSpec, MemoryLimit, PluginRef, TrainSpec};
use crate::worker::{self, Job, Outcome, TrainOutput, TrainUnit};
use anyhow::{Context, Result};
use dlm_plugin_api::{PluginDescriptor, TrainedCheckpoint};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `training.jsonl` in a run directory: one line per training unit the run needed.
pub const TRAINING: &str = "training.jsonl";

/// The checkpoint cache directory: `--checkpoints`, else `DLM_BENCH_CHECKPOINTS`, else
/// `reports/checkpoints`.
pub fn default_cache_dir() -> PathBuf {
    std::env::var_os("DLM_BENCH_CHECKPOINTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("reports").join("checkpoints"))
}

/// A finished training run, as recorded beside its checkpoint and in the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainRecord {
    /// `model/task/L<length>`.
    pub key: String,
    /// Content hash naming the cache entry.
    pub cache_id: String,
    pub checkpoint: PathBuf,
    pub model: String,
    pub task: String,
    pub length: usize,
    pub train: TrainSpec,
    pub output: TrainOutput,
    /// The task's exact entropy rate (nats per token), the floor of any model's NLL.
    pub optimal_nll_per_token: Option<f64>,
    pub trained_at: String,
}

impl TrainRecord {
    /// Last held-out NLL per token.
    pub fn final_validation(&self) -> Option<f64> {
        self.output.validation.last().map(|v| v.nll_per_token)
    }

    /// The task's exact NLL per token of the same held-out sequences the validation NLL is
    /// measured on (`output.reference_nll_per_token`): the reference of
    /// [`Self::final_validation`], free of the sampling error of a finite held-out set that the
    /// entropy rate (`optimal_nll_per_token`) carries. `None` in records older than the field or
    /// for tasks without an exact `log q`.
    pub fn reference_nll(&self) -> Option<f64> {
        self.output.reference_nll_per_token
    }

    /// `exp(validation NLL)`: the model's perplexity per token (a bound for an MDM), directly
    /// comparable with the task's optimal TER `exp(H/L)`.
    pub fn validation_perplexity(&self) -> Option<f64> {
        self.final_validation().map(f64::exp)
    }

    pub fn checkpoint_ref(&self) -> TrainedCheckpoint {
        TrainedCheckpoint {
            path: self.checkpoint.to_string_lossy().into_owned(),
            fingerprint: self.output.fingerprint.clone(),
        }
    }

    /// One line for logs: validation against the optimum.
    pub fn summary_line(&self) -> String {
        let mut s = format!(
            "{}: {} steps, {:.0} s, {:.0} tokens/s",
            self.key, self.output.steps, self.output.wall_seconds, self.output.tokens_per_second
        );
        if let Some(v) = self.final_validation() {
            let what = if self.output.bound {
                "validation NLL bound"
            } else {
                "validation NLL"
            };
            s.push_str(&format!("; {what} {v:.4} nats/token"));
            // Against the true model's NLL of the same held-out sequences where known, else
            // against the entropy rate (which a finite held-out set can fall below).
            let (reference, of) = match self.reference_nll() {
                Some(r) => (Some(r), "the task's NLL of the same held-out sequences"),
                None => (self.optimal_nll_per_token, "the entropy rate"),
            };
            if let Some(o) = reference {
                s.push_str(&format!(
                    " vs optimum {o:.4} ({of}; perplexity {:.4} vs {:.4}, {:+.2}%)",
                    v.exp(),
                    o.exp(),
                    ((v - o).exp() - 1.0) * 100.0
                ));
            }
            if let (Some(_), Some(h)) = (self.reference_nll(), self.optimal_nll_per_token) {
                s.push_str(&format!("; entropy rate {h:.4}"));
            }
        }
        s
    }
}

/// One line of `training.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainLine {
    pub key: String,
    /// Whether the checkpoint came from the cache.
    pub reused: bool,
    pub record: Option<TrainRecord>,
    /// Why training failed (the model's cells fail with it).
    pub cause: Option<String>,
}

/// The training units the cells need, in first-use order.
pub fn units<'a>(cells: impl IntoIterator<Item = &'a CellSpec>) -> Vec<TrainUnit> {
    let mut out: Vec<TrainUnit> = Vec::new();
    for cell in cells {
        let Some(model) = &cell.model else { continue };
        if model.train.is_none() {
            continue;
        }
        let unit = TrainUnit {
            task: cell.task.clone(),
            model: model.clone(),
            length: cell.length,
        };
        if !out.iter().any(|u| u.key() == unit.key()) {
            out.push(unit);
        }
    }
    out
}

/// The unit a cell's model is trained in, if it has `train:`.
pub fn unit_of(cell: &CellSpec) -> Option<TrainUnit> {
    units(std::iter::once(cell)).pop()
}

/// Content hash of everything that determines the trained weights.
pub fn cache_id(
    unit: &TrainUnit,
    task_plugin: &PluginDescriptor,
    model_plugin: &PluginDescriptor,
) -> String {
    let identity = serde_json::json!({
        "task": [&task_plugin.name, &task_plugin.version, &unit.task.component, &unit.task.config],
        "model": [&model_plugin.name, &model_plugin.version, &unit.model.component, &unit.model.config],
        "train": unit.spec().identity(),
        "length": unit.length,
    });
    hex(&Sha256::digest(identity.to_string().as_bytes()))[..20].to_string()
}

fn file_stem(unit: &TrainUnit, id: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!(
        "{}-{}-L{}-{id}",
        clean(&unit.model.name),
        clean(&unit.task.name),
        unit.length
    )
}

/// A cached, finished training run for `id`, if there is one.
fn lookup(dir: &Path, stem: &str, id: &str) -> Option<TrainRecord> {
    let record: TrainRecord =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{stem}.train.json"))).ok()?)
            .ok()?;
    (record.cache_id == id && record.checkpoint.exists()).then_some(record)
}

type Descriptors = BTreeMap<PluginRef, std::result::Result<PluginDescriptor, String>>;

/// Train (or find in the cache) every unit. Returns, per unit key, the record or the cause of
/// failure; appends one `training.jsonl` line per unit to `run` when given. Each unit moves
/// `progress` by its [`training_cost`] and prints its line there.
pub fn ensure_trained(
    units: &[TrainUnit],
    libraries: &BTreeMap<PluginRef, PathBuf>,
    descriptors: &Descriptors,
    cache_dir: &Path,
    run: Option<&RunDir>,
    progress: &Progress,
    memory_limit: MemoryLimit,
) -> Result<BTreeMap<String, std::result::Result<TrainRecord, String>>> {
    let mut results = BTreeMap::new();
    if units.is_empty() {
        return Ok(results);
    }
    std::fs::create_dir_all(cache_dir).with_context(|| {
        format!(
            "cannot create the checkpoint directory {} (set it with --checkpoints)",
            cache_dir.display()
        )
    })?;
    let cache_dir = std::fs::canonicalize(cache_dir)?;
    let scratch = cache_dir.join("logs");
    std::fs::create_dir_all(&scratch)?;
    let bar = progress.bars().add(ProgressBar::new(0));
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} steps  ETA {eta}  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix("train");
    for (i, unit) in units.iter().enumerate() {
        let key = unit.key();
        let cost = training_cost(unit.spec(), unit.length);
        let descriptor = |r: &PluginRef| match descriptors.get(r) {
            Some(Ok(d)) => Ok(d),
            Some(Err(cause)) => Err(format!("plugin {r} could not be loaded: {cause}")),
            None => Err(format!("plugin {r} was not resolved")),
        };
        let (task_d, model_d) = match (
            descriptor(&unit.task.plugin),
            descriptor(&unit.model.plugin),
        ) {
            (Ok(t), Ok(m)) => (t, m),
            (Err(e), _) | (_, Err(e)) => {
                progress.training_finished(
                    &key,
                    cost,
                    true,
                    &format!("training {key} FAILED: {e}"),
                );
                record_line(run, &key, false, None, Some(e.clone()))?;
                results.insert(key, Err(e));
                continue;
            }
        };
        let id = cache_id(unit, task_d, model_d);
        let stem = file_stem(unit, &id);
        let mut cached = lookup(&cache_dir, &stem, &id);
        // Held until this unit's checkpoint is in place (or its training failed).
        let _entry_lock = match cached {
            Some(_) => None,
            None => {
                let lock = lock_entry(&cache_dir, &stem, &key)?;
                // Another process may have trained it while this one waited.
                cached = lookup(&cache_dir, &stem, &id);
                Some(lock)
            }
        };
        if let Some(record) = cached {
            progress.training_reused(
                &key,
                cost,
                &format!(
                    "reusing checkpoint {} ({})",
                    record.checkpoint.display(),
                    record.summary_line()
                ),
            );
            record_line(run, &key, true, Some(record.clone()), None)?;
            results.insert(key, Ok(record));
            continue;
        }
        let spec = unit.spec();
        let checkpoint = cache_dir.join(format!("{stem}.ckpt"));
        let partial = cache_dir.join(format!("{stem}.ckpt.partial"));
        let _ = std::fs::remove_file(&partial);
        let job = Job::Train {
            unit: Box::new(unit.clone()),
            task_library: libraries[&unit.task.plugin].clone(),
            model_library: libraries[&unit.model.plugin].clone(),
            checkpoint: partial.clone(),
        };
        bar.reset();
        bar.set_length(spec.steps as u64);
        bar.set_message(format!("{key} ({}/{})", i + 1, units.len()));
        let outcome = worker::run_job(
            &job,
            &scratch,
            &stem,
            worker::Limits::new(Duration::from_secs_f64(spec.timeout_seconds), memory_limit),
            |_, done, total, message| {
                progress.advance(&key, cost, done, total);
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                if let Some(m) = message {
                    bar.set_message(format!("{key}  {m}"));
                }
            },
        )?;
        let result = match outcome {
            Outcome::Trained(output) => {
                let record = store_trained(*output, unit, &id, &partial, &checkpoint)?;
                let line = format!("trained {}", record.summary_line());
                progress.training_finished(&key, cost, false, &line);
                Ok(record)
            }
            Outcome::Failed(cause, _) => {
                let _ = std::fs::remove_file(&partial);
                let short = short_cause(&cause);
                let line = format!("training {key} FAILED: {short}");
                progress.training_finished(&key, cost, true, &line);
                if short != cause.trim() {
                    tracing::warn!("training {key} failed: {cause}");
                }
                Err(cause)
            }
            Outcome::Finished(_) | Outcome::Described(_) => {
                anyhow::bail!("worker answered a training job with something else")
            }
        };
        match &result {
            Ok(r) => record_line(run, &key, false, Some(r.clone()), None)?,
            Err(e) => record_line(run, &key, false, None, Some(e.clone()))?,
        }
        results.insert(key, result);
    }
    bar.finish_and_clear();
    Ok(results)
}

/// Move a finished training's checkpoint into place and write its record beside it.
fn store_trained(
    output: TrainOutput,
    unit: &TrainUnit,
    id: &str,
    partial: &Path,
    checkpoint: &Path,
) -> Result<TrainRecord> {
    std::fs::rename(partial, checkpoint).with_context(|| {
        format!(
            "cannot move the trained checkpoint to {}",
            checkpoint.display()
        )
    })?;
    let optimal = output
        .task_description
        .entropy_nats
        .map(|h| h / output.task_description.length as f64);
    let record = TrainRecord {
        key: unit.key(),
        cache_id: id.to_string(),
        checkpoint: checkpoint.to_path_buf(),
        model: unit.model.name.clone(),
        task: unit.task.name.clone(),
        length: unit.length,
        train: unit.spec().clone(),
        output,
        optimal_nll_per_token: optimal,
        trained_at: crate::results::now_rfc3339(),
    };
    write_atomic(
        &checkpoint.with_extension("train.json"),
        &serde_json::to_vec_pretty(&record)?,
    )?;
    Ok(record)
}

/// An exclusive lock on one cache entry, so that processes sharing the cache — runs side by
/// side, or the shards of a Slurm array on a shared file system — train it once: the others
/// wait, then reuse the checkpoint. These are `flock` locks: the kernel drops them when their
/// holder dies, so a killed trainer leaves no stale lock, and on NFS Linux maps them to the
/// server's byte-range locks. The file names its holder for whoever waits.
fn lock_entry(dir: &Path, stem: &str, key: &str) -> Result<std::fs::File> {
    let path = dir.join(format!("{stem}.lock"));
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the checkpoint lock {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            tracing::info!(
                "{key}: another process ({}) is training it; waiting for its checkpoint (lock {})",
                holder.trim(),
                path.display()
            );
            file.lock()
                .with_context(|| format!("cannot lock {}", path.display()))?;
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", path.display()));
        }
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    file.set_len(0)?;
    writeln!(file, "pid {} on {}", std::process::id(), host.trim())?;
    Ok(file)
}

fn record_line(
    run: Option<&RunDir>,
    key: &str,
    reused: bool,
    record: Option<TrainRecord>,
    cause: Option<String>,
) -> Result<()> {
    let Some(run) = run else { return Ok(()) };
    let line = TrainLine {
        key: key.to_string(),
        reused,
        record,
        cause,
    };
    let mut text = serde_json::to_vec(&line)?;
    text.push(b'\n');
    let path = run.file(TRAINING);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot append to {}", path.display()))?;
    f.write_all(&text)?;
    f.sync_data()?;
    Ok(())
}

/// The training lines of a run (latest per key), empty when the run trained nothing.
pub fn read_training(run: &RunDir) -> Result<Vec<TrainLine>> {
    let path = run.file(TRAINING);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let (lines, _) = read_jsonl::<TrainLine>(&path)?;
    let mut latest: Vec<TrainLine> = Vec::new();
    for line in lines {
        match latest.iter_mut().find(|l| l.key == line.key) {
            Some(slot) => *slot = line,
            None => latest.push(line),
        }
    }
    Ok(latest)
}
