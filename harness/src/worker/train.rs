//! A training job in the worker: batches from the task, steps on the model, validation
//! against the task's exact NLL of the same held-out sequences, the checkpoint saved.

use super::*;

/// Train one model: fresh ground-truth batches every step, the held-out set evaluated every
/// `validation_every` steps and at the end, then `model.save`.
pub(super) fn run_train(
    unit: &TrainUnit,
    task_library: &Path,
    model_library: &Path,
    checkpoint: &Path,
    events: &mut EventWriter,
) -> Result<TrainOutput> {
    let spec = unit.spec().clone();
    let (task_plugin, task, description) = open_task(&unit.task, task_library, unit.length)?;
    let (train_seed, validation_seed) = unit.data_seeds();
    let binding = TaskBinding {
        plugin: task_plugin.descriptor.name.clone(),
        task: unit.task.component.clone(),
        config: task_config(&task_plugin, &unit.task)?,
        description: description.clone(),
    };
    let settings = TrainSettings {
        steps: spec.steps,
        batch_size: spec.batch_size,
        seed: spec.seed,
        data: serde_json::json!({
            "task_plugin": &binding.plugin,
            "task_plugin_version": &task_plugin.descriptor.version,
            "task": &binding.task,
            "config": &unit.task.config,
            "train_seed": train_seed,
            "validation_seed": validation_seed,
            "validation_samples": spec.validation_samples,
        }),
        options: spec.options.clone(),
    };
    let opened = open_model(model_library, &unit.model, binding, Some(settings), None)?;
    let model = &opened.instance;
    let data = TrainingData::new(&task, &description, unit.length)?;
    let validation_set = data.batch(spec.validation_samples, validation_seed, 0)?;
    // Text tasks have no `log q`: their validation has no reference.
    let reference = match data {
        TrainingData::Sequences { .. } => held_out_nll(&task, &validation_set.0)
            .context("scoring the held-out validation set under the task")?,
        TrainingData::Text { .. } => None,
    };
    let optimum = reference.or(description
        .entropy_nats
        .map(|h| h / description.length as f64));
    let mut bound = false;
    let started = std::time::Instant::now();
    let mut losses = Vec::with_capacity(spec.steps);
    let mut validation = Vec::new();
    let mut last_validation: Option<f64> = None;
    let mut last_report = std::time::Instant::now() - Duration::from_secs(1);
    for step in 0..spec.steps {
        let (batch, prompt_lengths) =
            data.batch(spec.batch_size, train_seed, (step * spec.batch_size) as u64)?;
        let (shape, buffer) = TokenBatch::pack(&batch);
        let (reply, _): (TrainStepReply, _) = call(
            model,
            method::MODEL_TRAIN_STEP,
            &TrainStepRequest {
                step,
                lengths: shape.lengths,
                prompt_lengths,
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
            let (v, is_bound) = validate(model, &validation_set, spec.batch_size)?;
            bound = is_bound;
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
            events.emit(&Event::Progress {
                phase: "train".into(),
                done,
                total: spec.steps,
                message: Some(progress_message(
                    reply.loss,
                    tokens_per_second,
                    last_validation,
                    optimum,
                )),
            })?;
        }
    }
    let wall_seconds = started.elapsed().as_secs_f64();
    let (reply, _): (SaveReply, _) = call(
        model,
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
        model_plugin: plugin_id(&opened.plugin),
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

/// Mean NLL per token of the held-out set under the model, and whether it is an upper bound
/// (an MDM's ELBO).
fn validate(model: &Instance, set: &Batch, batch_size: usize) -> Result<(f64, bool)> {
    let (mut total, mut weight, mut bound) = (0.0, 0usize, false);
    let size = batch_size.max(1);
    for (i, chunk) in set.0.chunks(size).enumerate() {
        let (shape, buffer) = TokenBatch::pack(chunk);
        let request = EvaluateRequest {
            lengths: shape.lengths,
            prompt_lengths: set
                .1
                .as_ref()
                .map(|p| p[i * size..i * size + chunk.len()].to_vec()),
        };
        let (reply, _): (EvaluateReply, _) =
            call(model, method::MODEL_EVALUATE, &request, &buffer)?;
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
    Ok((total / weight.max(1) as f64, bound))
}

/// "loss 1.0234  35000 tok/s  val 0.9876 (reference 0.9544)".
fn progress_message(
    loss: f64,
    tokens_per_second: f64,
    validation: Option<f64>,
    reference: Option<f64>,
) -> String {
    let mut message = format!("loss {loss:.4}  {tokens_per_second:.0} tok/s");
    if let Some(v) = validation {
        message.push_str(&format!("  val {v:.4}"));
        if let Some(o) = reference {
            message.push_str(&format!(" (reference {o:.4})"));
        }
    }
    message
}

/// Mean `−log q(x)` per token of `seqs` under the task; `None` if the task gives no finite
/// `log q` for some sequence.
pub(super) fn held_out_nll(task: &Instance, seqs: &[Vec<u32>]) -> Result<Option<f64>> {
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

/// A batch of training sequences and, for text tasks, their prompt lengths.
type Batch = (Vec<Vec<u32>>, Option<Vec<usize>>);

/// Where training sequences come from: the task's reference sampler, or (text tasks) its
/// prompts with their reference completions in the task's vocabulary.
enum TrainingData<'t> {
    Sequences {
        task: &'t Instance,
        length: usize,
        vocab: u32,
    },
    Text {
        task: &'t Instance,
        length: usize,
        codec: text::Codec,
    },
}

impl<'t> TrainingData<'t> {
    fn new(task: &'t Instance, description: &TaskDescription, length: usize) -> Result<Self> {
        if description.text.is_none() {
            return Ok(TrainingData::Sequences {
                task,
                length,
                vocab: description.vocab_size as u32,
            });
        }
        let codec = text::Codec::of(description)?.context(
            "this text task has no vocabulary of its own, so the harness cannot train a model on it (a model with its own tokenizer trains elsewhere)",
        )?;
        Ok(TrainingData::Text {
            task,
            length,
            codec,
        })
    }

    /// Sequences `first .. first + n` of the stream `seed`.
    fn batch(&self, n: usize, seed: u64, first: u64) -> Result<Batch> {
        match self {
            TrainingData::Sequences {
                task,
                length,
                vocab,
            } => Ok((
                reference_batch(task, n, *length, seed, first, *vocab)?,
                None,
            )),
            TrainingData::Text {
                task,
                length,
                codec,
            } => {
                let mut seqs = Vec::with_capacity(n);
                let mut prompt_lengths = Vec::with_capacity(n);
                for prompt in text::prompts(task, first, n, seed)? {
                    let (ids, prompt_len) = codec.training_sequence(&prompt, *length)?;
                    seqs.push(ids);
                    prompt_lengths.push(prompt_len);
                }
                Ok((seqs, Some(prompt_lengths)))
            }
        }
    }
}
