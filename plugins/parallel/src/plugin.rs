//! The plugin face: tasks `copy`, `reverse`, `replace_one`, `sort`, `shuffle`, `line` (text
//! tasks with their own vocabulary, see [`crate::task`]) and the exact denoiser `oracle`.
//!
//! # Task configuration (suite `config:`), every key optional
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `n` | answer length in letters (1 … 32) | 8 |
//! | `alphabet` | letters `a`, `b`, … (2 … 26; `line` 2 … 4; `shuffle` at least `n`) | `shuffle`: `n`, `line`: 3, else 4 |
//! | `seed` | mixed into the prompts' random stream | 0 |
//!
//! The suite's length must hold the prompt and the answer ([`Spec::min_length`]; `describe`
//! names the least length otherwise), and one end-of-text more where the harness trains a
//! model on the task. Positions after the answer are end-of-text; the closed forms count them.
//!
//! Each task declares the closed-form accuracy of the `random` sampler with the exact oracle
//! at every number of steps ([`crate::closed_form`]) in `TaskDescription::closed_forms`.

use crate::closed_form;
use crate::task::{Kind, Problem, Spec, TASKS};
use dlm_sdk::Better;
use dlm_sdk::{
    denoiser_component, ClosedFormAccuracy, Completion, ComponentInfo, Denoiser, DenoiserModel,
    MetricDecl, MetricKind, Model, ModelOpenConfig, Plugin, PluginError, Prompt, PromptsRequest,
    Result, SampleReferenceRequest, SampleScore, Task, TaskDescription, TextTaskInfo,
};
use serde_json::json;
use std::collections::BTreeMap;

pub const PLUGIN_NAME: &str = "dlm-parallel";

/// Name of the per-sample correctness metric (the closed forms predict its rate).
pub const CORRECT: &str = "correct";
/// Name of the per-sample share of answer letters equal to the unique answer's.
pub const TOKEN_ACCURACY: &str = "token_accuracy";

/// A parallel-decoding task.
pub struct ParallelTask {
    spec: Spec,
}

impl ParallelTask {
    pub fn new(task: &str, config: &serde_json::Value) -> Result<Self> {
        Ok(ParallelTask {
            spec: Spec::new(task, config)?,
        })
    }

    /// The prompt a `prompt_id` (`s{seed}-{index}`) names.
    fn problem_of(&self, id: &str) -> Result<Problem> {
        let parsed = id.strip_prefix('s').and_then(|rest| {
            let (seed, index) = rest.split_once('-')?;
            Some((seed.parse().ok()?, index.parse().ok()?))
        });
        let (seed, index) = parsed.ok_or_else(|| {
            PluginError::bad_data(format!(
                "prompt id `{id}` is not one of this task's (`s<seed>-<index>`)"
            ))
        })?;
        Ok(self.spec.problem(seed, index))
    }

    fn score_one(&self, completion: &Completion) -> Result<SampleScore> {
        let p = self.problem_of(&completion.prompt_id)?;
        let answer = self.spec.parse_answer(&completion.text);
        let correct = answer
            .as_deref()
            .is_some_and(|a| self.spec.is_correct(&p, a));
        let mut extra = BTreeMap::new();
        extra.insert(CORRECT.into(), json!(correct));
        if self.spec.kind.deterministic() {
            // Position by position against the unique answer; a letter the vocabulary's
            // alphabet does not have, or a missing one, counts as wrong.
            let target = self.spec.target(&p);
            let letters: Vec<Option<usize>> = completion
                .text
                .chars()
                .map(|c| self.spec.parse_answer(&c.to_string()).map(|v| v[0]))
                .collect();
            let right = (0..self.spec.n)
                .filter(|&j| letters.get(j).copied().flatten() == Some(target[j]))
                .count();
            extra.insert(
                TOKEN_ACCURACY.into(),
                json!(right as f64 / self.spec.n as f64),
            );
        }
        Ok(SampleScore::text(correct, extra))
    }
}

fn no_sequences() -> PluginError {
    PluginError::unsupported(
        "a parallel-decoding task is a text task: the harness asks it for prompts (`task.prompts`), not token sequences",
    )
}

impl Task for ParallelTask {
    fn describe(&mut self, length: usize) -> Result<TaskDescription> {
        let spec = &self.spec;
        if length < spec.min_length() {
            return Err(PluginError::bad_config(format!(
                "`{}` with n = {}: a prompt ({} tokens) and its answer ({}) take {} tokens; use a length of at least {} (one more for a model the harness trains: it learns the end-of-text) (got {length})",
                spec.kind.name(),
                spec.n,
                spec.prompt_len(),
                spec.n,
                spec.min_length(),
                spec.min_length()
            )));
        }
        let vocabulary = spec.vocabulary();
        let eos = vocabulary.len() as u32;
        let mut d = TaskDescription::new(
            format!(
                "{} (n = {}, {} letters)",
                spec.kind.name(),
                spec.n,
                spec.alphabet
            ),
            vocabulary.len() + 1,
            length,
        );
        d.mask_id = eos + 1;
        let free = length - spec.prompt_len() - spec.n;
        let mut details = spec.details();
        if let Some(obj) = details.as_object_mut() {
            obj.insert("end_of_text_positions".into(), json!(free));
        }
        d.details = details;
        d.metrics = vec![MetricDecl::new(
            CORRECT,
            "accuracy (valid answer)",
            MetricKind::Rate,
            Better::Higher,
        )
        .with_headline()];
        if spec.kind.deterministic() {
            d.metrics.push(MetricDecl::new(
                TOKEN_ACCURACY,
                "token accuracy",
                MetricKind::Mean,
                Better::Higher,
            ));
        }
        d.text = Some({
            let mut text = TextTaskInfo::new(Vec::new());
            text.vocabulary = Some(vocabulary);
            text.eos_id = Some(eos);
            text
        });
        d.closed_forms = vec![ClosedFormAccuracy::new(
            CORRECT,
            "random",
            closed_form::ASSUMPTION,
            closed_form::accuracy_by_steps(spec, free),
        )];
        Ok(d)
    }

    fn sample_reference(&mut self, _: &SampleReferenceRequest) -> Result<Vec<Vec<u32>>> {
        Err(no_sequences())
    }

    fn score(&mut self, _: &[Vec<u32>]) -> Result<Vec<SampleScore>> {
        Err(no_sequences())
    }

    fn prompts(&mut self, request: &PromptsRequest) -> Result<Vec<Prompt>> {
        Ok((0..request.n as u64)
            .map(|k| {
                let index = request.first_index + k;
                let p = self.spec.problem(request.seed, index);
                let reference: String = self
                    .spec
                    .reference(&p, request.seed, index)
                    .into_iter()
                    .map(crate::task::letter)
                    .collect();
                Prompt {
                    id: format!("s{}-{index}", request.seed),
                    text: self.spec.prompt_text(&p),
                    reference: Some(reference),
                }
            })
            .collect())
    }

    fn score_text(&mut self, completions: &[Completion]) -> Result<Vec<SampleScore>> {
        completions.iter().map(|c| self.score_one(c)).collect()
    }
}

/// The exact denoiser: at every masked answer position, the conditional distribution given
/// the prompt and the committed positions under the task's uniform distribution over valid
/// answers ([`Spec::conditional`]); end-of-text after the answer.
pub struct Oracle {
    spec: Spec,
    vocab: usize,
    mask: u32,
}

impl Oracle {
    pub fn new(open: &ModelOpenConfig) -> Result<Self> {
        if open.config.as_object().is_some_and(|m| !m.is_empty())
            || !(open.config.is_null() || open.config.is_object())
        {
            return Err(PluginError::bad_config(format!(
                "the `oracle` model takes no `config` (it serves the exact distribution of its task, so configure the task), but got `{}`",
                open.config
            )));
        }
        if open.task.plugin != PLUGIN_NAME {
            return Err(PluginError::unsupported(format!(
                "the `oracle` model knows only the tasks of plugin `{PLUGIN_NAME}`, but this cell's task comes from `{}`",
                open.task.plugin
            )));
        }
        Ok(Self::for_spec(Spec::new(
            &open.task.task,
            &open.task.config,
        )?))
    }

    /// The oracle of a task built directly (tests).
    pub fn for_spec(spec: Spec) -> Self {
        let vocab = spec.vocabulary().len() + 1;
        Oracle {
            spec,
            vocab,
            mask: vocab as u32,
        }
    }

    fn denoise_row(&self, b: usize, row: &[u32], out: &mut [f64]) -> Result<()> {
        let (spec, v) = (&self.spec, self.vocab);
        let p = spec.parse_prompt(row).ok_or_else(|| {
            PluginError::bad_data(format!(
                "row {b}: its first {} tokens are not a `{}` prompt of this configuration (n = {}, alphabet {})",
                spec.prompt_len(),
                spec.kind.name(),
                spec.n,
                spec.alphabet
            ))
        })?;
        let start = spec.prompt_len();
        let answer = start..start + spec.n;
        let slots: Vec<Option<u32>> = row[answer.clone()]
            .iter()
            .map(|&t| (t != self.mask).then_some(t))
            .collect();
        let rows = spec.conditional(&p, &slots);
        out.fill(0.0);
        for (j, &t) in row.iter().enumerate() {
            let cell = &mut out[j * v..(j + 1) * v];
            if answer.contains(&j) {
                cell[..spec.alphabet].copy_from_slice(&rows[j - start]);
            } else if j >= answer.end {
                cell[spec.eos() as usize] = 1.0;
            } else {
                cell[(t as usize).min(v - 1)] = 1.0;
            }
        }
        Ok(())
    }
}

impl Denoiser for Oracle {
    fn vocab_size(&self) -> usize {
        self.vocab
    }

    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        if length < self.spec.min_length() {
            return Err(PluginError::bad_config(format!(
                "length {length} cannot hold a `{}` prompt and its answer ({} tokens)",
                self.spec.kind.name(),
                self.spec.min_length()
            )));
        }
        let v = self.vocab;
        for b in 0..batch {
            let row = &tokens[b * length..(b + 1) * length];
            self.denoise_row(b, row, &mut out[b * length * v..(b + 1) * length * v])?;
        }
        Ok(())
    }
}

pub struct ParallelPlugin;

impl Plugin for ParallelPlugin {
    const NAME: &'static str = PLUGIN_NAME;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str =
        "parallel-decoding tasks after ParallelBench (copy, reverse, replace_one, sort, shuffle, line) with exact scoring, their exact oracle denoiser and the closed-form accuracy of committing several tokens per step";
    const HAS_TASKS: bool = true;
    const HAS_MODELS: bool = true;

    fn tasks() -> Vec<ComponentInfo> {
        let describe = |kind: Kind| match kind {
            Kind::Copy => "copy the prompt's n letters",
            Kind::Reverse => "write the prompt's n letters reversed",
            Kind::ReplaceOne => "copy the prompt with exactly one letter replaced by another (any)",
            Kind::Sort => "write the prompt's letters sorted",
            Kind::Shuffle => "write any permutation of the prompt's n distinct letters",
            Kind::Line => {
                "waiting line: given a count per letter, write any line with those counts"
            }
        };
        TASKS
            .iter()
            .map(|&name| {
                let kind = Spec::new(name, &serde_json::Value::Null)
                    .map(|s| s.kind)
                    .unwrap_or(Kind::Copy);
                ComponentInfo::new(
                    name,
                    format!("{} (config: n, alphabet, seed)", describe(kind)),
                )
                .with_capability("text")
                .with_capability("vocabulary")
                .with_config_of::<crate::task::Config>(&[])
            })
            .collect()
    }

    fn models() -> Vec<ComponentInfo> {
        let mut oracle = denoiser_component(
            "oracle",
            "exact conditional distribution of every masked answer position of the bound parallel-decoding task",
            false,
        );
        oracle.capabilities.push("oracle".into());
        vec![oracle]
    }

    fn open_task(name: &str, config: serde_json::Value) -> Result<Box<dyn Task>> {
        Ok(Box::new(ParallelTask::new(name, &config)?))
    }

    fn open_model(name: &str, open: ModelOpenConfig) -> Result<Box<dyn Model>> {
        match name {
            "oracle" => Ok(Box::new(DenoiserModel::new(Oracle::new(&open)?))),
            other => Err(PluginError::bad_config(format!(
                "plugin `{PLUGIN_NAME}` has no model `{other}`; models: oracle"
            ))),
        }
    }
}
