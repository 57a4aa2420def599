//! A benchmark cell in the worker: generate with the model (or sample the task's reference),
//! score every sequence under the task, time every batch.

use super::*;
use crate::suite::{DocSelection, DocumentCount};
use dlm_plugin_api::{Prompt, PromptIdsReply, SampleStats, SamplerSpec};
use std::collections::HashMap;

pub(super) fn run_cell(
    cell: &CellSpec,
    task_library: &Path,
    model_library: Option<&Path>,
    checkpoint: Option<&TrainedCheckpoint>,
    events: &mut EventWriter,
) -> Result<CellOutput> {
    let (task_plugin, task, description) = open_task(&cell.task, task_library, cell.length)?;
    if description.text.is_some() {
        return run_text(
            cell,
            (task_plugin, task, description),
            model_library,
            checkpoint,
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
                config: task_config(&task_plugin, &cell.task)?,
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
    let traces = super::trace::token_cell(cell, &task, &description, &generated.stats)?;
    let samples = generated
        .sequences
        .into_iter()
        .zip(scores)
        .zip(generated.stats)
        .zip(traces)
        .enumerate()
        .map(|(i, (((tokens, score), stats), trace))| WorkerSample {
            index: first + i as u64,
            tokens,
            score,
            nfe: stats.nfe,
            generated_tokens: stats.generated_tokens,
            positions_computed: stats.positions_computed,
            edits: stats.edits,
            trace,
        })
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
        settings: generated.settings,
        documents: None,
    })
}

/// A text cell: open the model (if any) for the documents the cell scores, then generate and
/// score in `text.rs`.
fn run_text(
    cell: &CellSpec,
    (task_plugin, task, description): (LoadedPlugin, Instance, TaskDescription),
    model_library: Option<&Path>,
    checkpoint: Option<&TrainedCheckpoint>,
    events: &mut EventWriter,
) -> Result<CellOutput> {
    let task_config = task_config(&task_plugin, &cell.task)?;
    let binding = |description: &TaskDescription| TaskBinding {
        plugin: task_plugin.descriptor.name.clone(),
        task: cell.task.component.clone(),
        config: task_config.clone(),
        description: description.clone(),
    };
    let (model, selection) = match (&cell.model, &cell.sampler) {
        (None, _) => {
            let selection = match &cell.task.docs {
                Some(DocSelection::Ids(ids)) => Some(Selection::of(cell, &description, ids)?),
                // No model, no replay file: the task's own documents.
                Some(DocSelection::FromReplay) | None => None,
            };
            (None, selection)
        }
        (Some(model_spec), Some(sampler)) => {
            let model_library = model_library.context("a model cell needs its model library")?;
            let open = |description: &TaskDescription| {
                open_model(
                    model_library,
                    model_spec,
                    binding(description),
                    None,
                    checkpoint.cloned(),
                )
            };
            let selection = match &cell.task.docs {
                None => None,
                Some(DocSelection::Ids(ids)) => Some(Selection::of(cell, &description, ids)?),
                Some(DocSelection::FromReplay) => {
                    let ids = model_prompt_ids(&open(&description)?, cell)?;
                    Some(Selection::of(cell, &description, &ids)?)
                }
            };
            // The model sees the selected documents as the task's whole set: it numbers the
            // samples of each document as the cell does.
            let model = match &selection {
                None => open(&description)?,
                Some(selection) => open(&selection.describe(&description))?,
            };
            (Some((model, sampler)), selection)
        }
        (Some(_), None) => anyhow::bail!("a model cell needs a sampler"),
    };
    let description = match &selection {
        Some(selection) => selection.describe(&description),
        None => description,
    };
    let mut output = text::run_text_cell(
        cell,
        (task_plugin, task, description),
        model.as_ref().map(|(m, s)| (m, *s)),
        selection.as_ref(),
        events,
    )?;
    output.documents = selection.as_ref().map(Selection::count);
    Ok(output)
}

/// The prompt ids a model answers (`model.prompt_ids`), for `docs_from_replay: true`.
fn model_prompt_ids(model: &OpenedModel, cell: &CellSpec) -> Result<Vec<String>> {
    let name = cell.model.as_ref().map_or("", |m| m.name.as_str());
    let (reply, _): (PromptIdsReply, _) = call(
        &model.instance,
        method::MODEL_PROMPT_IDS,
        &serde_json::json!({}),
        &[],
    )
    .with_context(|| {
        format!("task `{}` has `docs_from_replay: true`, but model `{name}` cannot say which documents it covers", cell.task.name)
    })?;
    reply.ids.with_context(|| {
        format!(
            "task `{}` has `docs_from_replay: true`, but model `{name}` generates for any \
             prompt rather than replaying a file; list the documents with `doc_ids:` instead",
            cell.task.name
        )
    })
}

/// The documents a text cell scores when its suite selects some: sample `i` of the cell
/// answers selected document `i mod D` as its sample number `i div D`, which is the task's
/// own sample `(i div D)·P + position` (P: the task's prompt count).
pub(super) struct Selection {
    /// The selected documents' positions among the task's prompts, in selection order.
    positions: Vec<u64>,
    /// Their prompt ids, in the same order.
    ids: Vec<String>,
    /// The task's prompt count.
    of: u64,
}

impl Selection {
    /// The selection of `wanted` among the task's prompt ids; `docs_from_replay` lists them in
    /// the task's order, `doc_ids` in its own.
    fn of(cell: &CellSpec, description: &TaskDescription, wanted: &[String]) -> Result<Self> {
        let task = &cell.task.name;
        let known = description
            .text
            .as_ref()
            .and_then(|t| t.prompt_ids.as_ref())
            .with_context(|| {
                format!(
                    "task `{task}` has no fixed set of documents (its prompts are made, not read \
                     from a dataset), so `doc_ids`/`docs_from_replay` cannot select any; remove them"
                )
            })?;
        let position: HashMap<&str, u64> = known
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i as u64))
            .collect();
        let unknown: Vec<&str> = wanted
            .iter()
            .filter(|id| !position.contains_key(id.as_str()))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let shown: Vec<String> = unknown.iter().take(5).map(|id| format!("`{id}`")).collect();
            anyhow::bail!(
                "task `{task}`: {} selected document(s) are not among its {} prompt ids ({}{}); \
                 its ids run `{}` … `{}` (check the ids, and the task's `limit` and split)",
                unknown.len(),
                known.len(),
                shown.join(", "),
                if unknown.len() > shown.len() {
                    ", …"
                } else {
                    ""
                },
                known.first().map_or("", String::as_str),
                known.last().map_or("", String::as_str),
            );
        }
        let mut positions: Vec<u64> = wanted.iter().map(|id| position[id.as_str()]).collect();
        if matches!(cell.task.docs, Some(DocSelection::FromReplay)) {
            positions.sort_unstable();
            positions.dedup();
        }
        if positions.is_empty() {
            anyhow::bail!("task `{task}`: the selection holds no document");
        }
        let whole = cell.part.map_or(cell.n, |p| p.of);
        if !whole.is_multiple_of(positions.len()) {
            anyhow::bail!(
                "task `{task}`: the cell's {whole} samples do not split evenly over the {} \
                 selected documents; set `samples` to a multiple of {} (2 samples per \
                 document: {})",
                positions.len(),
                positions.len(),
                2 * positions.len()
            );
        }
        Ok(Selection {
            ids: positions
                .iter()
                .map(|&p| known[p as usize].clone())
                .collect(),
            positions,
            of: known.len() as u64,
        })
    }

    /// The task's description as the cell sees it: the selected documents are its prompts.
    fn describe(&self, description: &TaskDescription) -> TaskDescription {
        let mut description = description.clone();
        if let Some(text) = description.text.as_mut() {
            text.prompts = Some(self.ids.len());
            text.prompt_ids = Some(self.ids.clone());
        }
        description
    }

    fn count(&self) -> DocumentCount {
        DocumentCount {
            scored: self.ids.len(),
            of: self.of as usize,
        }
    }

    /// The prompts of the cell's samples `first .. first + n`: each asked of the task at its
    /// own sample index, and checked to be the selected document.
    pub(super) fn prompts(
        &self,
        task: &Instance,
        first: u64,
        n: usize,
        seed: u64,
    ) -> Result<Vec<Prompt>> {
        let d = self.positions.len() as u64;
        (first..first + n as u64)
            .map(|i| {
                let slot = (i % d) as usize;
                let index = (i / d) * self.of + self.positions[slot];
                let prompt = text::prompts(task, index, 1, seed)?.remove(0);
                if prompt.id != self.ids[slot] {
                    anyhow::bail!(
                        "task.prompts gave prompt `{}` at index {index}, where its prompt_ids \
                         list `{}`: the task's prompts do not follow its own ids",
                        prompt.id,
                        self.ids[slot]
                    );
                }
                Ok(prompt)
            })
            .collect()
    }
}

/// A cell's sequences before scoring, with what the model said about them.
struct Generated {
    sequences: Vec<Vec<u32>>,
    /// Per sample: network calls, generated tokens, positions computed and edits, as the
    /// model's reply states them (all zero and absent for the reference row).
    stats: Vec<SampleStats>,
    batches: Vec<BatchRecord>,
    model: Option<OpenedModelInfo>,
    one_step_per_token: bool,
    device: Option<String>,
    /// The model's and the sampler's resolved settings, as its last reply stated them.
    settings: Option<serde_json::Value>,
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
        stats: vec![SampleStats::default(); sequences.len()],
        sequences,
        batches: Vec::new(),
        model: None,
        one_step_per_token: false,
        device: None,
        settings: None,
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
        settings: None,
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
            trace: cell.trace,
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
        out.stats.extend(reply.samples.iter().cloned());
        out.batches.push(BatchRecord {
            first_index: first as u64,
            size,
            nfe: reply.batch_nfe,
            positions: reply.batch_positions,
            wall_seconds: reply.wall_seconds,
            cpu_seconds: Some(cpu_seconds),
        });
        out.device = Some(reply.device.clone());
        out.settings = reply.settings.clone();
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
