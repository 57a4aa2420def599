//! A benchmark cell in the worker: generate with the model (or sample the task's reference),
//! score every sequence under the task, time every batch.

use super::*;
use dlm_plugin_api::SamplerSpec;

pub(super) fn run_cell(
    cell: &CellSpec,
    task_library: &Path,
    model_library: Option<&Path>,
    checkpoint: Option<&TrainedCheckpoint>,
    events: &mut EventWriter,
) -> Result<CellOutput> {
    let (task_plugin, task, description) = open_task(&cell.task, task_library, cell.length)?;
    if description.text.is_some() {
        let model = match (&cell.model, &cell.sampler) {
            (None, _) => None,
            (Some(model_spec), Some(sampler)) => {
                let model_library =
                    model_library.context("a model cell needs its model library")?;
                let binding = TaskBinding {
                    plugin: task_plugin.descriptor.name.clone(),
                    task: cell.task.component.clone(),
                    config: cell.task.config.clone(),
                    description: description.clone(),
                };
                let model = open_model(
                    model_library,
                    model_spec,
                    binding,
                    None,
                    checkpoint.cloned(),
                )?;
                Some((model, sampler))
            }
            (Some(_), None) => anyhow::bail!("a model cell needs a sampler"),
        };
        return text::run_text_cell(
            cell,
            (task_plugin, task, description),
            model.as_ref().map(|(m, s)| (m, *s)),
            events,
        );
    }
    let generated = match (&cell.model, &cell.sampler) {
        (None, _) => reference_sequences(cell, &task, &description, events)?,
        (Some(model_spec), Some(sampler)) => {
            let model_library = model_library.context("a model cell needs its model library")?;
            let binding = TaskBinding {
                plugin: task_plugin.descriptor.name.clone(),
                task: cell.task.component.clone(),
                config: cell.task.config.clone(),
                description: description.clone(),
            };
            let model = open_model(
                model_library,
                model_spec,
                binding,
                None,
                checkpoint.cloned(),
            )?;
            generate_sequences(cell, &model, sampler, description.vocab_size as u32, events)?
        }
        (Some(_), None) => anyhow::bail!("a model cell needs a sampler"),
    };
    let scores = score_all(&task, &generated.sequences, events)?;
    let first = cell.sample_range().start as u64;
    let samples = generated
        .sequences
        .into_iter()
        .zip(scores)
        .zip(generated.stats)
        .enumerate()
        .map(
            |(i, ((tokens, score), (nfe, generated_tokens)))| WorkerSample {
                index: first + i as u64,
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
        model_plugin: generated.model.as_ref().map(|m| m.plugin_id.clone()),
        model_autoregressive: generated.model.as_ref().is_some_and(|m| m.autoregressive),
        model_exact: generated.model.as_ref().is_some_and(|m| m.exact),
        one_step_per_token: generated.one_step_per_token,
        samples,
        batches: generated.batches,
        device: generated.device,
    })
}

/// A cell's sequences before scoring, with what the model said about them.
struct Generated {
    sequences: Vec<Vec<u32>>,
    /// Per sample: network calls and generated tokens.
    stats: Vec<(u64, u64)>,
    batches: Vec<BatchRecord>,
    model: Option<OpenedModelInfo>,
    one_step_per_token: bool,
    device: Option<String>,
}

/// The task's own samples: the reference row.
fn reference_sequences(
    cell: &CellSpec,
    task: &Instance,
    description: &TaskDescription,
    events: &mut EventWriter,
) -> Result<Generated> {
    let (range, n) = (cell.sample_range(), cell.n);
    let batch = cell.batch_size.max(1);
    let vocab = description.vocab_size as u32;
    let mut sequences = Vec::with_capacity(n);
    events.emit(&progress("reference", 0, n))?;
    let mut first = range.start;
    while first < range.end {
        let size = batch.min(range.end - first);
        sequences.extend(reference_batch(
            task,
            size,
            cell.length,
            cell.seed,
            first as u64,
            vocab,
        )?);
        first += size;
        events.emit(&progress("reference", first - range.start, n))?;
    }
    Ok(Generated {
        stats: vec![(0, 0); sequences.len()],
        sequences,
        batches: Vec::new(),
        model: None,
        one_step_per_token: false,
        device: None,
    })
}

/// The model's samples, batch by batch, each batch timed on the wall and the CPU clock.
fn generate_sequences(
    cell: &CellSpec,
    model: &OpenedModel,
    sampler: &SamplerSpec,
    vocab: u32,
    events: &mut EventWriter,
) -> Result<Generated> {
    let (range, n) = (cell.sample_range(), cell.n);
    let batch = cell.batch_size.max(1);
    let mut out = Generated {
        sequences: Vec::with_capacity(n),
        stats: Vec::with_capacity(n),
        batches: Vec::new(),
        one_step_per_token: model
            .info
            .sampler_info
            .iter()
            .any(|i| i.name == sampler.name && i.one_step_per_token),
        model: Some(model.summary()),
        device: None,
    };
    events.emit(&progress("generate", 0, n))?;
    let mut first = range.start;
    while first < range.end {
        let size = batch.min(range.end - first);
        let request = GenerateRequest {
            batch_size: size,
            length: cell.length,
            sampler: sampler.clone(),
            seed: cell.seed,
            first_index: first as u64,
            prompts: None,
            prompt_texts: None,
        };
        let cpu_before = process_cpu_seconds();
        let (reply, tokens): (GenerateReply, _) =
            call(&model.instance, method::MODEL_GENERATE, &request, &[])?;
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
        out.stats
            .extend(reply.samples.iter().map(|s| (s.nfe, s.generated_tokens)));
        out.batches.push(BatchRecord {
            first_index: first as u64,
            size,
            nfe: reply.batch_nfe,
            wall_seconds: reply.wall_seconds,
            cpu_seconds: Some(cpu_seconds),
        });
        out.device = Some(reply.device.clone());
        out.sequences.extend(seqs);
        first += size;
        events.emit(&progress("generate", first - range.start, n))?;
    }
    Ok(out)
}

/// Score every sequence under the task, in chunks so progress moves and requests stay small.
fn score_all(
    task: &Instance,
    sequences: &[Vec<u32>],
    events: &mut EventWriter,
) -> Result<Vec<SampleScore>> {
    let mut scores: Vec<SampleScore> = Vec::with_capacity(sequences.len());
    for chunk in sequences.chunks(256) {
        let (shape, buffer) = TokenBatch::pack(chunk);
        let (reply, _): (ScoreReply, _) = call(task, method::TASK_SCORE, &shape, &buffer)?;
        if reply.scores.len() != chunk.len() {
            anyhow::bail!(
                "task.score returned {} scores for {} sequences",
                reply.scores.len(),
                chunk.len()
            );
        }
        scores.extend(reply.scores);
        events.emit(&progress("score", scores.len(), sequences.len()))?;
    }
    Ok(scores)
}

/// CPU time of the whole worker process (every thread of the plugin), in seconds. Unlike wall
/// time it hardly moves when other processes compete for the cores, which is what lets
/// `compare` tell a slower machine from slower code.
pub(super) fn process_cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Model outputs are untrusted: check count, length and vocabulary before scoring.
pub(super) fn check_sequences(
    seqs: &[Vec<u32>],
    n: usize,
    length: usize,
    vocab: u32,
    from: &str,
) -> Result<()> {
    let bad = |message: String| Err(BadReply(message).into());
    if seqs.len() != n {
        return bad(format!(
            "{from} returned {} sequences, expected {n}",
            seqs.len()
        ));
    }
    for (i, s) in seqs.iter().enumerate() {
        if s.len() != length {
            return bad(format!(
                "{from}: sequence {i} has {} tokens, expected {length}",
                s.len()
            ));
        }
        if let Some(pos) = s.iter().position(|&t| t >= vocab) {
            return bad(format!(
                "{from}: sequence {i} holds token id {} at position {pos}, outside the task's vocabulary 0..{vocab} (a mask left in the output?)",
                s[pos]
            ));
        }
    }
    Ok(())
}
