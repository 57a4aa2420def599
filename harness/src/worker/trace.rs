//! Trajectories in the worker (suite `trace: true`): every prediction a sample's trace holds is
//! scored by the task's own scorer, and only the verdicts are kept (`crate::trace`).

use super::*;
use crate::trace::TraceRecord;
use dlm_plugin_api::{Completion, SampleStats, SampleTrace};
use serde_json::Value;

/// What makes an answer right: the task's first headline rate metric (text tasks: GSM8K's
/// and arith's strict accuracy), else `in_support` (formal languages: a valid sequence).
pub(super) enum Verdict {
    Metric(String),
    InSupport,
}

impl Verdict {
    pub fn of(description: &TaskDescription) -> Verdict {
        description
            .metrics
            .iter()
            .find(|m| m.headline && m.kind == MetricKind::Rate)
            .map_or(Verdict::InSupport, |m| Verdict::Metric(m.name.clone()))
    }

    fn judge(&self, score: &SampleScore) -> bool {
        match self {
            Verdict::InSupport => score.in_support,
            Verdict::Metric(name) => match score.extra.get(name) {
                Some(Value::Bool(b)) => *b,
                Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x >= 0.5),
                _ => false,
            },
        }
    }
}

/// A token task's traces: each prediction without masks (ids below `vocab`) scored as a
/// sequence by `task.score`; one with masks left is no sequence yet, so not correct.
pub(super) fn token_records(
    task: &Instance,
    traces: &[Option<SampleTrace>],
    length: usize,
    vocab: u32,
    verdict: &Verdict,
) -> Result<Vec<Option<TraceRecord>>> {
    let whole = |tokens: &[u32]| tokens.len() == length && tokens.iter().all(|&t| t < vocab);
    let sequences: Vec<Vec<u32>> = predictions(traces)
        .filter(|tokens| whole(tokens))
        .map(<[u32]>::to_vec)
        .collect();
    let mut scores = Vec::with_capacity(sequences.len());
    for chunk in sequences.chunks(256) {
        let (shape, buffer) = TokenBatch::pack(chunk);
        let (reply, _): (ScoreReply, _) = call(task, method::TASK_SCORE, &shape, &buffer)?;
        if reply.scores.len() != chunk.len() {
            anyhow::bail!(
                "task.score returned {} scores for {} traced predictions",
                reply.scores.len(),
                chunk.len()
            );
        }
        scores.extend(reply.scores.iter().map(|s| verdict.judge(s)));
    }
    let mut scores = scores.into_iter();
    let verdicts: Vec<bool> = predictions(traces)
        .map(|tokens| whole(tokens) && scores.next().unwrap_or(false))
        .collect();
    Ok(attach(traces, verdicts))
}

/// How the text path reads and scores a prediction: `read` turns a completion's tokens (after
/// the prompt) into the text the task scores (decoded, cut at the stop strings: `text.rs`),
/// `score` is `task.score_text`.
pub(super) struct TextScoring<'a> {
    pub read: &'a dyn Fn(&[u32]) -> String,
    pub score: &'a dyn Fn(Vec<Completion>) -> Result<Vec<SampleScore>>,
}

/// A text task's traces, for a model answering in the task's vocabulary: each prediction's
/// completion (after the prompt's `prompt_lens[b]` tokens) read and scored as the sample's
/// completion would be.
fn text_records(
    traces: &[Option<SampleTrace>],
    prompts: &[(String, usize)],
    scoring: &TextScoring,
    verdict: &Verdict,
) -> Result<Vec<Option<TraceRecord>>> {
    let mut completions = Vec::new();
    for (trace, (id, prompt_len)) in traces.iter().zip(prompts) {
        for p in trace.iter().flat_map(|t| t.predictions.iter().flatten()) {
            completions.push(Completion {
                prompt_id: id.clone(),
                text: (scoring.read)(p.tokens.get(*prompt_len..).unwrap_or(&[])),
            });
        }
    }
    let verdicts = (scoring.score)(completions)?
        .iter()
        .map(|s| verdict.judge(s))
        .collect();
    Ok(attach(traces, verdicts))
}

/// Every prediction of every trace, in order.
fn predictions(traces: &[Option<SampleTrace>]) -> impl Iterator<Item = &[u32]> {
    traces
        .iter()
        .flatten()
        .flat_map(|t| t.predictions.iter().flatten())
        .map(|p| p.tokens.as_slice())
}

/// The records of `traces`, `verdicts` holding one verdict per prediction in order.
fn attach(traces: &[Option<SampleTrace>], verdicts: Vec<bool>) -> Vec<Option<TraceRecord>> {
    let mut verdicts = verdicts.into_iter();
    traces
        .iter()
        .map(|trace| {
            let trace = trace.as_ref()?;
            let count = trace.predictions.as_ref().map_or(0, Vec::len);
            let mine: Vec<bool> = verdicts.by_ref().take(count).collect();
            Some(TraceRecord::new(trace, Ok(mine)))
        })
        .collect()
}

/// A token cell's records, one per sample (all `None` unless the cell is traced).
pub(super) fn token_cell(
    cell: &CellSpec,
    task: &Instance,
    description: &TaskDescription,
    stats: &[SampleStats],
) -> Result<Vec<Option<TraceRecord>>> {
    if !cell.trace {
        return Ok(vec![None; stats.len()]);
    }
    let traces: Vec<Option<SampleTrace>> = stats.iter().map(|s| s.trace.clone()).collect();
    let records = token_records(
        task,
        &traces,
        cell.length,
        description.vocab_size as u32,
        &Verdict::of(description),
    )?;
    Ok(or_untraced(records, stats))
}

/// Where a traced cell's reply held no trajectory for a sample: a record that says so (with
/// the sample's steps), never a silent gap.
pub(super) fn or_untraced(
    records: Vec<Option<TraceRecord>>,
    stats: &[SampleStats],
) -> Vec<Option<TraceRecord>> {
    records
        .into_iter()
        .zip(stats)
        .map(|(record, s)| {
            record.or_else(|| {
                let none = SampleTrace::new(s.nfe, Vec::new());
                Some(TraceRecord::new(&none, Err(NOT_TRACED.to_string())))
            })
        })
        .collect()
}

/// Why a traced cell's sample has no trajectory.
pub(super) const NOT_TRACED: &str =
    "not traced: the model's reply held no trajectory (a plugin built before API 1.8, or a model whose sampler does not record one)";

/// A text sample's trajectory with its prompt's length where its predictions are in the
/// task's vocabulary (`None`: a model that works on text).
pub(super) type TracedText = Option<(SampleTrace, Option<usize>)>;

/// A text batch's records: each traced sample (`(nfe, trace and prompt length)`) scored where
/// its predictions are in the task's vocabulary, commit steps and τ only where the model works
/// on text of its own tokenizer, "not traced" where the reply held no trajectory.
pub(super) fn text_batch(
    prompts: &[dlm_plugin_api::Prompt],
    traced: Vec<(u64, TracedText)>,
    scoring: Option<&TextScoring>,
    verdict: &Verdict,
) -> Result<Vec<Option<TraceRecord>>> {
    let in_vocabulary = |t: &TracedText| matches!(t, Some((_, Some(_)))) && scoring.is_some();
    let scorable: Vec<Option<SampleTrace>> = traced
        .iter()
        .map(|(_, t)| {
            t.as_ref()
                .filter(|_| in_vocabulary(t))
                .map(|(t, _)| t.clone())
        })
        .collect();
    let lens: Vec<(String, usize)> = traced
        .iter()
        .zip(prompts)
        .map(|((_, t), p)| (p.id.clone(), t.as_ref().and_then(|t| t.1).unwrap_or(0)))
        .collect();
    let scored = match scoring {
        Some(scoring) => text_records(&scorable, &lens, scoring, verdict)?,
        None => vec![None; traced.len()],
    };
    let records = scored
        .into_iter()
        .zip(&traced)
        .map(|(record, (_, t))| match (record, t) {
            (Some(record), _) => Some(record),
            (None, Some((trace, _))) => Some(TraceRecord::new(
                trace,
                Err("the model answers with text of its own tokenizer, whose intermediate predictions the harness cannot read".into()),
            )),
            (None, None) => None,
        })
        .collect();
    let stats: Vec<SampleStats> = traced
        .iter()
        .map(|&(nfe, _)| SampleStats {
            nfe,
            ..SampleStats::default()
        })
        .collect();
    Ok(or_untraced(records, &stats))
}
