//! The plugin glue: tasks `gsm8k`, `arith` and `prompts` (a user's own prompts, see
//! [`crate::user_prompts`]), exported through `dlm_sdk::export_plugin!`.
//!
//! `gsm8k` and `arith` are text tasks: the harness asks for prompts, a model writes completions, and the step
//! verifier scores them. Per completion, in `SampleScore::extra` (declared as task metrics, so
//! the harness aggregates them with 95% CIs without knowing them):
//!
//! | metric | per completion | cell figure |
//! |---|---|---|
//! | `accuracy_strict` | `#### n` (format `gsm8k-cot`: `The answer is n.`) equals the gold answer | share |
//! | `accuracy_flexible` | the last number equals the gold answer | share |
//! | `accuracy_strict_numeric`, `accuracy_flexible_numeric` | the same compared as numbers (`gsm8k` with `scoring: both` only) | share |
//! | `step_error_rate` | wrong ÷ checked `<<expr=value>>` steps (none checked: left out) | mean |
//! | `free_text_step_error_rate` | the same for `a = b = c` chains in the free text | mean |
//! | `trace_error` | among strictly correct answers: a wrong annotation step | share |
//! | `first_error_step` | 1-based index of the first wrong annotation step, if any | mean |
//! | `coverage` | checked ÷ candidate annotation steps | mean |
//!
//! Beside them, for the report only: `extracted_strict`, `extracted_flexible` (null: none
//! found), `gold` and `first_wrong` (`line n: left = right`);
//!
//! and `in_support` = the chain is right: the strict answer is correct and no annotation step
//! is wrong, so the harness's SER is the share of chains with a wrong step or a wrong answer.
//!
//! # `gsm8k` (config)
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `split` | `test` (1,319 problems) or `train` (7,473) | `test` |
//! | `data_dir` | folder holding `gsm8k/` (sha256-checked) | `$DLM_BENCH_DATA`, else the repository's `data/` |
//! | `format` | prompt format: `gsm8k` or `gsm8k-cot` (see below) | `gsm8k` |
//! | `shots` | few-shot examples before the question, 0 to 8: `gsm8k` takes the first `shots` train problems, `gsm8k-cot` the first `shots` of its 8 fixed exemplars | `gsm8k`: 0, `gsm8k-cot`: 8 |
//! | `limit` | use only the first `limit` problems | all |
//! | `scoring` | how an extracted answer is compared with the gold one: `lm-eval`, `numeric` or `both` (see below) | `lm-eval` |
//!
//! `scoring: lm-eval` is lm-evaluation-harness's `exact_match` (strings equal after removing
//! `,`, `$`, the reasoning up to `#### ` and one trailing `.`, lower-cased), what the tables in
//! papers report: `060`, `7.0` and `$1,430.00` are wrong against 60, 7 and 1430.
//! `scoring: numeric` compares exact numbers, so those three are right (see
//! [`crate::answer`]). `scoring: both` reports lm-eval's under `accuracy_strict` and
//! `accuracy_flexible` and the numeric ones as `accuracy_strict_numeric` and
//! `accuracy_flexible_numeric`; the chain (`in_support`, `trace_error`) follows lm-eval's
//! strict answer there. The metric labels and the description's `details.scoring` name the
//! mode. `arith` always compares numbers.
//!
//! With `format: gsm8k` the prompt is lm-evaluation-harness's `gsm8k` format:
//! `Question: {question}\nAnswer:`, the examples joined by a blank line, each followed by
//! ` {answer}`; completions stop at `Question:`, `</s>` or `<|im_end|>`; strict-match is
//! `#### n`. With `format: gsm8k-cot` it is lm-eval's `gsm8k-cot` format: the chain-of-thought
//! exemplars of Wei et al. 2022 as `Q: {question}\nA: {chain} The answer is n.`, joined by a
//! blank line, then `Q: {question}\nA:`; completions stop at `Q:`, `</s>` or `<|im_end|>`;
//! strict-match is `The answer is n.` and the reference is the GSM8K solution with its
//! `#### n` line replaced by `The answer is n.` (see [`crate::prompt`]). flexible-extract and
//! the step verifier are the same in both; completions without `<<…>>` annotations are checked
//! in free-text mode only. Sample `i` of a cell answers problem `i mod problems`, prompt id
//! `{split}-{index}` (lm-eval's `doc_id`). The task has no vocabulary of its own: a model needs
//! a tokenizer or replays generations made elsewhere.
//!
//! # `arith` (config: `steps`, `max_operand`, `ops`; see [`crate::synthetic`])
//!
//! Procedural GSM8K-style chains, one problem per sample (prompt id `s{seed}-{index}`), in the
//! character vocabulary [`crate::synthetic::VOCABULARY`] plus an end-of-text id, small enough
//! for the harness to train a model on in minutes. Prompt: `{question}\n`; reference: the
//! annotated solution ending in `#### n`.

use crate::answer::{lm_eval_exact_match, lm_eval_target, Scoring};
use crate::data::{self, Problem, Split};
use crate::prompt::{PromptFormat, MAX_SHOTS};
use crate::synthetic::{self, ArithConfig};
use crate::user_prompts::{PromptsConfig, PromptsTask};
use crate::verify::{Verification, Verifier};
use dlm_sdk::{
    Better, Completion, ComponentInfo, MetricDecl, MetricKind, Plugin, PluginError, Prompt,
    PromptsRequest, Result, SampleReferenceRequest, SampleScore, Task, TaskDescription,
    TextTaskInfo,
};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The plugin: tasks `gsm8k`, `arith` and `prompts`.
pub struct ReasoningPlugin;

impl Plugin for ReasoningPlugin {
    const NAME: &'static str = "dlm-reasoning";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str =
        "GSM8K and procedural arithmetic chains as text tasks, scored by an exact step verifier";
    const HAS_TASKS: bool = true;

    fn tasks() -> Vec<ComponentInfo> {
        vec![
            ComponentInfo::new(
                "gsm8k",
                "GSM8K grade-school maths (config: split, data_dir, format, shots, limit, scoring); completions verified step by step",
            )
            .with_capability("text")
            .with_config_of::<Gsm8kConfig>(&["data_dir"]),
            ComponentInfo::new(
                "arith",
                "procedural arithmetic chains in GSM8K's format, character vocabulary (config: steps, max_operand, ops)",
            )
            .with_capability("text")
            .with_capability("vocabulary")
            .with_config_of::<ArithConfig>(&[]),
            ComponentInfo::new(
                "prompts",
                "your own prompts from a JSONL file of {id, prompt, reference?} (config: path, stop, limit); completion length and exact match",
            )
            .with_capability("text")
            .with_config_of::<PromptsConfig>(&["path"]),
        ]
    }

    fn open_task(name: &str, config: Value) -> Result<Box<dyn Task>> {
        match name {
            "gsm8k" => Ok(Box::new(Gsm8kTask::open(config)?)),
            "arith" => Ok(Box::new(ArithTask::open(config)?)),
            "prompts" => Ok(Box::new(PromptsTask::open(config)?)),
            other => Err(PluginError::bad_config(format!(
                "plugin `dlm-reasoning` provides no task `{other}` (it has `gsm8k`, `arith` and `prompts`)"
            ))),
        }
    }
}

/// The metrics a reasoning task declares under `scoring`; the accuracy labels name the mode.
fn metrics(scoring: Scoring) -> Vec<MetricDecl> {
    let rate =
        |name: &str, label: &str, better| MetricDecl::new(name, label, MetricKind::Rate, better);
    let mean =
        |name: &str, label: &str, better| MetricDecl::new(name, label, MetricKind::Mean, better);
    let mode = match scoring {
        Scoring::LmEval | Scoring::Both => "lm-eval exact match",
        Scoring::Numeric => "numeric",
    };
    // The headline: what the report's verdict judges against AR and its summary names.
    let mut declared = vec![
        rate(
            "accuracy_strict",
            &format!("accuracy (strict, {mode})"),
            Better::Higher,
        )
        .with_headline(),
        rate(
            "accuracy_flexible",
            &format!("accuracy (flexible, {mode})"),
            Better::Higher,
        )
        .with_headline(),
        mean("step_error_rate", "step error rate", Better::Lower).with_headline(),
        mean(
            "free_text_step_error_rate",
            "step error rate (free text)",
            Better::Lower,
        ),
        rate("trace_error", "trace error", Better::Lower),
        mean("first_error_step", "first wrong step", Better::Neither),
        mean("coverage", "step coverage", Better::Neither),
    ];
    if scoring == Scoring::Both {
        declared.extend([
            rate(
                "accuracy_strict_numeric",
                "accuracy (strict, numeric)",
                Better::Higher,
            ),
            rate(
                "accuracy_flexible_numeric",
                "accuracy (flexible, numeric)",
                Better::Higher,
            ),
        ]);
    }
    declared
}

/// Verify a completion against its gold answer, comparing answers as numbers
/// ([`Scoring::Numeric`]): the score with every metric in `extra`.
pub fn score_completion(verifier: &Verifier, completion: &str, gold: &str) -> SampleScore {
    let v = verifier.verify(completion, Some(gold));
    let numeric = Correct::numeric(&v);
    scored(&v, gold, numeric, None)
}

/// Verify a completion to a GSM8K problem under `scoring`. The lm-eval target follows the
/// verifier's strict rule: the whole `answer` field for `#### n` (`gsm8k`), its final answer
/// for `The answer is n.` (`gsm8k-cot`), as lm-eval's two task files define it.
pub fn score_gsm8k_completion(
    verifier: &Verifier,
    scoring: Scoring,
    completion: &str,
    problem: &Problem,
) -> SampleScore {
    let v = verifier.verify(completion, Some(&problem.gold));
    let numeric = Correct::numeric(&v);
    let target = lm_eval_target(verifier.strict, &problem.answer);
    let lm_eval = Correct {
        strict: lm_eval_exact_match(v.strict_answer.as_deref(), target),
        flexible: lm_eval_exact_match(v.flexible_answer.as_deref(), target),
    };
    let gold = &problem.gold;
    match scoring {
        Scoring::LmEval => scored(&v, gold, lm_eval, None),
        Scoring::Numeric => scored(&v, gold, numeric, None),
        Scoring::Both => scored(&v, gold, lm_eval, Some(numeric)),
    }
}

/// Whether the strict and the flexible answer are right under one comparison.
#[derive(Debug, Clone, Copy)]
struct Correct {
    strict: bool,
    flexible: bool,
}

impl Correct {
    fn numeric(v: &Verification) -> Self {
        Correct {
            strict: v.strict_correct.unwrap_or(false),
            flexible: v.flexible_correct.unwrap_or(false),
        }
    }
}

/// The score of a verified completion: `correct` under the usual names (it also decides the
/// chain and the trace error), `also` under the `…_numeric` names.
fn scored(v: &Verification, gold: &str, correct: Correct, also: Option<Correct>) -> SampleScore {
    let Correct { strict, flexible } = correct;
    let a = &v.annotation;
    let ratio = |wrong: usize, checked: usize| -> Value {
        if checked == 0 {
            Value::Null
        } else {
            json!(wrong as f64 / checked as f64)
        }
    };
    let chain_right = strict && a.wrong == 0;
    let mut extra = BTreeMap::new();
    // For the report's sample display: the extracted answers and the gold one.
    extra.insert("gold".into(), json!(gold));
    extra.insert("extracted_strict".into(), json!(v.strict_answer));
    extra.insert("extracted_flexible".into(), json!(v.flexible_answer));
    extra.insert("accuracy_strict".into(), json!(strict));
    extra.insert("accuracy_flexible".into(), json!(flexible));
    if let Some(n) = also {
        extra.insert("accuracy_strict_numeric".into(), json!(n.strict));
        extra.insert("accuracy_flexible_numeric".into(), json!(n.flexible));
    }
    extra.insert("step_error_rate".into(), ratio(a.wrong, a.checked));
    extra.insert(
        "free_text_step_error_rate".into(),
        ratio(v.free_text.wrong, v.free_text.checked),
    );
    extra.insert(
        "trace_error".into(),
        if strict {
            json!(a.wrong > 0)
        } else {
            Value::Null
        },
    );
    extra.insert(
        "first_error_step".into(),
        a.first_wrong.map_or(Value::Null, |i| json!(i + 1)),
    );
    extra.insert(
        "coverage".into(),
        a.coverage().map_or(Value::Null, |c| json!(c)),
    );
    extra.insert("steps_checked".into(), json!(a.checked));
    extra.insert("steps_wrong".into(), json!(a.wrong));
    if let Some(i) = a.first_wrong {
        let s = &a.steps[i];
        extra.insert(
            "first_wrong".into(),
            json!(format!("line {}: {} = {}", s.line, s.left, s.right)),
        );
    }
    let mut score = SampleScore::text(chain_right, extra);
    score.invalid_transitions = a.wrong;
    score
}

/// Text tasks have no reference token sampler: their training data are prompts with their
/// reference completions (`task.prompts`).
fn no_sequences() -> PluginError {
    PluginError::unsupported(
        "a text task has no token-sequence sampler: the harness asks it for prompts (`task.prompts`)",
    )
}

// ---------------------------------------------------------------------------------------------
// gsm8k

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Gsm8kConfig {
    #[serde(default = "default_split")]
    split: String,
    #[serde(default)]
    data_dir: Option<PathBuf>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    shots: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    scoring: Option<String>,
}

fn default_split() -> String {
    "test".into()
}

struct Gsm8kTask {
    split: Split,
    split_name: String,
    problems: Vec<Problem>,
    format: PromptFormat,
    /// The few-shot preamble (empty for zero-shot).
    preamble: String,
    shots: usize,
    verifier: Verifier,
    scoring: Scoring,
}

impl Gsm8kTask {
    fn open(config: Value) -> Result<Self> {
        let config: Gsm8kConfig = if config.is_null() {
            serde_json::from_value(json!({}))?
        } else {
            serde_json::from_value(config).map_err(|e| {
                PluginError::bad_config(format!(
                    "gsm8k config: {e} (keys: split, data_dir, format, shots, limit, scoring)"
                ))
            })?
        };
        let split = match config.split.as_str() {
            "test" => Split::Test,
            "train" => Split::Train,
            other => {
                return Err(PluginError::bad_config(format!(
                    "gsm8k config: split must be `test` or `train`, got `{other}`"
                )))
            }
        };
        let format = PromptFormat::parse(config.format.as_deref().unwrap_or("gsm8k"))
            .map_err(|e| PluginError::bad_config(format!("gsm8k config: {e}")))?;
        let scoring = config
            .scoring
            .as_deref()
            .map_or(Ok(Scoring::default()), Scoring::parse)
            .map_err(|e| PluginError::bad_config(format!("gsm8k config: {e}")))?;
        let shots = config.shots.unwrap_or(format.default_shots());
        if shots > MAX_SHOTS {
            return Err(PluginError::bad_config(format!(
                "gsm8k config: shots must be at most {MAX_SHOTS}, got {shots}"
            )));
        }
        let dir = config
            .data_dir
            .clone()
            .unwrap_or_else(data::default_data_dir);
        let mut problems =
            data::load(&dir, split).map_err(|e| PluginError::bad_data(format!("gsm8k: {e}")))?;
        if let Some(limit) = config.limit {
            if limit == 0 {
                return Err(PluginError::bad_config(
                    "gsm8k config: limit must be at least 1",
                ));
            }
            problems.truncate(limit);
        }
        let train = if shots > 0 && format.needs_train_examples() {
            data::load(&dir, Split::Train)
                .map_err(|e| PluginError::bad_data(format!("gsm8k few-shot examples: {e}")))?
        } else {
            Vec::new()
        };
        Ok(Gsm8kTask {
            split,
            split_name: config.split,
            problems,
            format,
            preamble: format.preamble(shots, &train),
            shots,
            verifier: Verifier {
                strict: format.strict_match(),
                ..Verifier::default()
            },
            scoring,
        })
    }

    /// What a run record says about how this task's numbers are made. The files are
    /// sha256-checked as they load, so the pinned sums are the sums of the bytes read.
    fn provenance(&self) -> dlm_sdk::TaskProvenance {
        use crate::answer::{FLEXIBLE_PATTERN, LM_EVAL_REGEXES_TO_IGNORE as IGNORED};
        let strict = match self.format.strict_match() {
            crate::answer::StrictMatch::Hashes => crate::answer::STRICT_PATTERN,
            crate::answer::StrictMatch::TheAnswerIs => crate::answer::STRICT_COT_PATTERN,
        };
        let mut p =
            dlm_sdk::TaskProvenance::new(self.format.describe(), self.shots, self.scoring.name())
                .with_dataset(self.split.relative_path(), self.split.sha256());
        if self.shots > 0 && self.format.needs_train_examples() {
            p = p.with_dataset(Split::Train.relative_path(), Split::Train.sha256());
        }
        p = p
            .with_filter(format!("cut before the first of {:?}", self.format.stop()))
            .with_filter(format!("strict-match: first match of `{strict}`"))
            .with_filter(format!(
                "flexible-extract: last match of `{FLEXIBLE_PATTERN}`"
            ));
        if self.scoring != Scoring::Numeric {
            p = p.with_filter(format!(
                "lm-eval exact_match: remove {IGNORED:?}, ignore case, compare strings"
            ));
        }
        if self.scoring == Scoring::Numeric {
            p = p.with_difference(
                "answers compared as numbers (`060` = 60, `7.0` = 7, `$1,430.00` = 1430), not as \
                 lm-eval's strings (set `scoring: lm-eval` or `both` for lm-eval's numbers)",
            );
        }
        p
    }

    fn index_of(&self, id: &str) -> Result<usize> {
        id.strip_prefix(&format!("{}-", self.split_name))
            .and_then(|i| i.parse::<usize>().ok())
            .filter(|&i| i < self.problems.len())
            .ok_or_else(|| {
                PluginError::bad_config(format!(
                    "gsm8k: unknown prompt id `{id}` (expected `{}-0` … `{}-{}`)",
                    self.split_name,
                    self.split_name,
                    self.problems.len() - 1
                ))
            })
    }
}

impl Task for Gsm8kTask {
    fn describe(&mut self, length: usize) -> Result<TaskDescription> {
        Ok({
            let mut d = TaskDescription::new(
                format!(
                    "GSM8K {} ({} problems, {}-shot{})",
                    self.split_name,
                    self.problems.len(),
                    self.shots,
                    match self.format {
                        PromptFormat::Gsm8k => "",
                        PromptFormat::Gsm8kCot => " CoT",
                    }
                ),
                0,
                length,
            );
            d.details = json!({
                "task": "gsm8k",
                "split": self.split_name,
                "problems": self.problems.len(),
                "pinned_problems": self.split.problems(),
                "shots": self.shots,
                "format": self.format.describe(),
                "scoring": self.scoring.name(),
            });
            d.metrics = metrics(self.scoring);
            d.provenance = Some(self.provenance());
            d.text = Some({
                let mut text = TextTaskInfo::new(self.format.stop());
                text.prompts = Some(self.problems.len());
                text.prompt_ids = Some(
                    (0..self.problems.len())
                        .map(|i| format!("{}-{i}", self.split_name))
                        .collect(),
                );
                text
            });
            d
        })
    }

    fn sample_reference(&mut self, _request: &SampleReferenceRequest) -> Result<Vec<Vec<u32>>> {
        Err(no_sequences())
    }

    fn score(&mut self, _sequences: &[Vec<u32>]) -> Result<Vec<SampleScore>> {
        Err(no_sequences())
    }

    fn prompts(&mut self, request: &PromptsRequest) -> Result<Vec<Prompt>> {
        let total = self.problems.len() as u64;
        Ok((0..request.n as u64)
            .map(|k| {
                let i = ((request.first_index + k) % total) as usize;
                let p = &self.problems[i];
                Prompt {
                    id: format!("{}-{i}", self.split_name),
                    text: format!(
                        "{}{}",
                        self.preamble,
                        self.format.question_text(&p.question)
                    ),
                    reference: Some(self.format.reference(p)),
                }
            })
            .collect())
    }

    fn score_text(&mut self, completions: &[Completion]) -> Result<Vec<SampleScore>> {
        completions
            .iter()
            .map(|c| {
                let i = self.index_of(&c.prompt_id)?;
                Ok(score_gsm8k_completion(
                    &self.verifier,
                    self.scoring,
                    &c.text,
                    &self.problems[i],
                ))
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// arith

struct ArithTask {
    config: ArithConfig,
    verifier: Verifier,
}

impl ArithTask {
    fn open(config: Value) -> Result<Self> {
        let config: ArithConfig = if config.is_null() {
            ArithConfig::default()
        } else {
            serde_json::from_value(config).map_err(|e| {
                PluginError::bad_config(format!(
                    "arith config: {e} (keys: steps, max_operand, ops)"
                ))
            })?
        };
        config.validate().map_err(PluginError::bad_config)?;
        Ok(ArithTask {
            config,
            verifier: Verifier::default(),
        })
    }

    /// Tokens a prompt and its reference need, plus one end-of-text.
    fn tokens_needed(&self) -> usize {
        let (question, solution) = synthetic::max_chars(&self.config);
        question + 1 + solution + 1
    }

    fn problem_of(&self, id: &str) -> Result<synthetic::SyntheticProblem> {
        let parse = || -> Option<(u64, u64)> {
            let (seed, index) = id.strip_prefix('s')?.split_once('-')?;
            Some((seed.parse().ok()?, index.parse().ok()?))
        };
        let (seed, index) = parse().ok_or_else(|| {
            PluginError::bad_config(format!(
                "arith: unknown prompt id `{id}` (expected `s<seed>-<index>`)"
            ))
        })?;
        Ok(synthetic::problem(&self.config, seed, index))
    }
}

impl Task for ArithTask {
    fn describe(&mut self, length: usize) -> Result<TaskDescription> {
        let needed = self.tokens_needed();
        if length < needed {
            return Err(PluginError::bad_config(format!(
                "arith with steps {}, max_operand {}: a prompt and its solution can take {needed} tokens with end-of-text; use a length of at least {needed} (got {length})",
                self.config.steps, self.config.max_operand
            )));
        }
        let vocabulary: Vec<String> = synthetic::VOCABULARY
            .iter()
            .map(|c| c.to_string())
            .collect();
        let eos = vocabulary.len() as u32;
        Ok({
            let mut d = TaskDescription::new(
                format!(
                    "arith ({} steps, operands ≤ {}, ops {})",
                    self.config.steps, self.config.max_operand, self.config.ops
                ),
                vocabulary.len() + 1,
                length,
            );
            d.mask_id = eos + 1;
            d.details = json!({
                "task": "arith",
                "steps": self.config.steps,
                "max_operand": self.config.max_operand,
                "ops": self.config.ops,
                "tokens_needed": needed,
            });
            d.metrics = metrics(Scoring::Numeric);
            d.text = Some({
                let mut text = TextTaskInfo::new(Vec::new());
                text.vocabulary = Some(vocabulary);
                text.eos_id = Some(eos);
                text
            });
            d
        })
    }

    fn sample_reference(&mut self, _request: &SampleReferenceRequest) -> Result<Vec<Vec<u32>>> {
        Err(no_sequences())
    }

    fn score(&mut self, _sequences: &[Vec<u32>]) -> Result<Vec<SampleScore>> {
        Err(no_sequences())
    }

    fn prompts(&mut self, request: &PromptsRequest) -> Result<Vec<Prompt>> {
        Ok((0..request.n as u64)
            .map(|k| {
                let index = request.first_index + k;
                let p = synthetic::problem(&self.config, request.seed, index);
                Prompt {
                    id: format!("s{}-{index}", request.seed),
                    text: format!("{}\n", p.question),
                    reference: Some(p.solution),
                }
            })
            .collect())
    }

    fn score_text(&mut self, completions: &[Completion]) -> Result<Vec<SampleScore>> {
        completions
            .iter()
            .map(|c| {
                let p = self.problem_of(&c.prompt_id)?;
                Ok(score_completion(
                    &self.verifier,
                    &c.text,
                    &p.answer.to_string(),
                ))
            })
            .collect()
    }
}

/// The exported descriptor static and root module (generated, so not documented here).
#[allow(missing_docs)]
mod export {
    dlm_sdk::export_plugin!(super::ReasoningPlugin);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arith() -> ArithTask {
        ArithTask::open(json!({"steps": 2, "max_operand": 9})).unwrap()
    }

    #[test]
    fn arith_reference_completions_score_as_right_chains() {
        let mut task = arith();
        let prompts = task
            .prompts(&PromptsRequest {
                first_index: 5,
                n: 50,
                seed: 3,
            })
            .unwrap();
        let completions: Vec<Completion> = prompts
            .iter()
            .map(|p| Completion {
                prompt_id: p.id.clone(),
                text: p.reference.clone().unwrap(),
            })
            .collect();
        let scores = task.score_text(&completions).unwrap();
        assert_eq!(scores.len(), 50);
        for s in &scores {
            assert!(s.in_support, "{s:?}");
            assert_eq!(s.extra["accuracy_strict"], json!(true));
            assert_eq!(s.extra["step_error_rate"], json!(0.0));
            assert_eq!(s.extra["trace_error"], json!(false));
        }
    }

    #[test]
    fn planted_errors_are_counted_as_planted() {
        let v = Verifier::default();
        // Right steps, right answer.
        let right = score_completion(&v, "2+3=<<2+3=5>>5\n5*4=<<5*4=20>>20\n#### 20", "20");
        assert!(right.in_support);
        // Wrong intermediate, right final answer: a trace error.
        let trace = score_completion(&v, "2+3=<<2+3=6>>6\n5*4=<<5*4=20>>20\n#### 20", "20");
        assert!(!trace.in_support);
        assert_eq!(trace.extra["accuracy_strict"], json!(true));
        assert_eq!(trace.extra["trace_error"], json!(true));
        assert_eq!(trace.extra["first_error_step"], json!(1));
        assert_eq!(trace.extra["step_error_rate"], json!(0.5));
        // Right steps, wrong final answer.
        let wrong = score_completion(&v, "2+3=<<2+3=5>>5\n5*4=<<5*4=20>>20\n#### 21", "20");
        assert!(!wrong.in_support);
        assert_eq!(wrong.extra["accuracy_strict"], json!(false));
        assert_eq!(wrong.extra["trace_error"], Value::Null);
        // No `####`: strict fails, flexible may not.
        let flexible = score_completion(&v, "2+3=<<2+3=5>>5\nso 20", "20");
        assert_eq!(flexible.extra["accuracy_strict"], json!(false));
        assert_eq!(flexible.extra["accuracy_flexible"], json!(true));
        // Garbage and empty.
        for text in ["%$#@!", ""] {
            let s = score_completion(&v, text, "20");
            assert!(!s.in_support);
            assert_eq!(s.extra["step_error_rate"], Value::Null);
        }
    }

    #[test]
    fn arith_refuses_lengths_too_short_and_unknown_ids() {
        let mut task = arith();
        let e = task.describe(10).unwrap_err().message;
        assert!(e.contains("at least"), "{e}");
        let d = task.describe(task.tokens_needed()).unwrap();
        let text = d.text.unwrap();
        assert_eq!(d.vocab_size, text.vocabulary.unwrap().len() + 1);
        let e = task
            .score_text(&[Completion {
                prompt_id: "nope".into(),
                text: String::new(),
            }])
            .unwrap_err()
            .message;
        assert!(e.contains("unknown prompt id"), "{e}");
    }

    #[test]
    fn the_description_states_the_scoring_mode() {
        let declared = |config: Value| {
            let d = Gsm8kTask::open(config).unwrap().describe(512).unwrap();
            let labels: BTreeMap<String, String> =
                d.metrics.into_iter().map(|m| (m.name, m.label)).collect();
            (d.details["scoring"].clone(), labels)
        };
        let (mode, labels) = declared(json!({"limit": 1}));
        assert_eq!(mode, json!("lm-eval"));
        assert_eq!(
            labels["accuracy_strict"],
            "accuracy (strict, lm-eval exact match)"
        );
        assert!(!labels.contains_key("accuracy_strict_numeric"));
        let (mode, labels) = declared(json!({"limit": 1, "scoring": "numeric"}));
        assert_eq!(mode, json!("numeric"));
        assert_eq!(labels["accuracy_flexible"], "accuracy (flexible, numeric)");
        let (mode, labels) = declared(json!({"limit": 1, "scoring": "both"}));
        assert_eq!(mode, json!("both"));
        assert_eq!(
            labels["accuracy_flexible"],
            "accuracy (flexible, lm-eval exact match)"
        );
        assert_eq!(
            labels["accuracy_strict_numeric"],
            "accuracy (strict, numeric)"
        );
    }

    #[test]
    fn bad_configs_name_the_key() {
        let e = ArithTask::open(json!({"stepz": 2})).err().unwrap().message;
        assert!(e.contains("stepz"), "{e}");
        let e = Gsm8kTask::open(json!({"split": "dev"}))
            .err()
            .unwrap()
            .message;
        assert!(e.contains("split"), "{e}");
        let e = Gsm8kTask::open(json!({"scoring": "strings"}))
            .err()
            .unwrap()
            .message;
        for named in ["scoring", "strings", "lm-eval", "numeric", "both"] {
            assert!(e.contains(named), "{named}: {e}");
        }
    }
}
