//! The plugin glue: tasks `gsm8k` and `arith`, exported through `dlm_sdk::export_plugin!`.
//!
//! Both are text tasks: the harness asks for prompts, a model writes completions, and the step
//! verifier scores them. Per completion, in `SampleScore::extra` (declared as task metrics, so
//! the harness aggregates them with 95% CIs without knowing them):
//!
//! | metric | per completion | cell figure |
//! |---|---|---|
//! | `accuracy_strict` | `#### n` (format `gsm8k-cot`: `The answer is n.`) equals the gold answer | share |
//! | `accuracy_flexible` | the last number equals the gold answer | share |
//! | `step_error_rate` | wrong ÷ checked `<<expr=value>>` steps (none checked: left out) | mean |
//! | `free_text_step_error_rate` | the same for `a = b = c` chains in the free text | mean |
//! | `trace_error` | among strictly correct answers: a wrong annotation step | share |
//! | `first_error_step` | 1-based index of the first wrong annotation step, if any | mean |
//! | `coverage` | checked ÷ candidate annotation steps | mean |
//!
//! and `in_support` = the chain is right: the strict answer is correct and no annotation step
//! is wrong, so the harness's SER is the share of chains with a wrong step or a wrong answer.
//!
//! # `gsm8k` (config)
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `split` | `test` (1,319 problems) or `train` (7,473) | `test` |
//! | `data_dir` | folder holding `gsm8k/` (sha256-checked) | `$DLM_BENCH_DATA`, else `../shared/data` |
//! | `format` | prompt format: `gsm8k` or `gsm8k-cot` (see below) | `gsm8k` |
//! | `shots` | few-shot examples before the question, 0 to 8: `gsm8k` takes the first `shots` train problems, `gsm8k-cot` the first `shots` of its 8 fixed exemplars | `gsm8k`: 0, `gsm8k-cot`: 8 |
//! | `limit` | use only the first `limit` problems | all |
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

use crate::data::{self, Problem, Split};
use crate::prompt::{PromptFormat, MAX_SHOTS};
use crate::synthetic::{self, ArithConfig};
use crate::verify::Verifier;
use dlm_sdk::{
    Better, Completion, ComponentInfo, MetricDecl, MetricKind, Plugin, PluginError, Prompt,
    PromptsRequest, Result, SampleReferenceRequest, SampleScore, Task, TaskDescription,
    TextTaskInfo,
};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The plugin: tasks `gsm8k` and `arith`.
pub struct ReasoningPlugin;

impl Plugin for ReasoningPlugin {
    const NAME: &'static str = "dlm-reasoning";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str =
        "GSM8K and procedural arithmetic chains as text tasks, scored by an exact step verifier";
    const HAS_TASKS: bool = true;

    fn tasks() -> Vec<ComponentInfo> {
        vec![
            ComponentInfo {
                name: "gsm8k".into(),
                description: "GSM8K grade-school maths (config: split, data_dir, format, shots, limit); completions verified step by step".into(),
                capabilities: vec!["text".into()],
                samplers: Vec::new(),
                sampler_info: Vec::new(),
            },
            ComponentInfo {
                name: "arith".into(),
                description: "procedural arithmetic chains in GSM8K's format, character vocabulary (config: steps, max_operand, ops)".into(),
                capabilities: vec!["text".into(), "vocabulary".into()],
                samplers: Vec::new(),
                sampler_info: Vec::new(),
            },
        ]
    }

    fn open_task(name: &str, config: Value) -> Result<Box<dyn Task>> {
        match name {
            "gsm8k" => Ok(Box::new(Gsm8kTask::open(config)?)),
            "arith" => Ok(Box::new(ArithTask::open(config)?)),
            other => Err(PluginError(format!(
                "plugin `dlm-reasoning` provides no task `{other}` (it has `gsm8k` and `arith`)"
            ))),
        }
    }
}

/// The metrics every reasoning task declares.
fn metrics() -> Vec<MetricDecl> {
    let rate = |name: &str, label: &str, better| MetricDecl {
        name: name.into(),
        label: label.into(),
        kind: MetricKind::Rate,
        better,
        digits: 3,
    };
    let mean = |name: &str, label: &str, better| MetricDecl {
        name: name.into(),
        label: label.into(),
        kind: MetricKind::Mean,
        better,
        digits: 3,
    };
    vec![
        rate("accuracy_strict", "accuracy (strict)", Better::Higher),
        rate("accuracy_flexible", "accuracy (flexible)", Better::Higher),
        mean("step_error_rate", "step error rate", Better::Lower),
        mean(
            "free_text_step_error_rate",
            "step error rate (free text)",
            Better::Lower,
        ),
        rate("trace_error", "trace error", Better::Lower),
        mean("first_error_step", "first wrong step", Better::Neither),
        mean("coverage", "step coverage", Better::Neither),
    ]
}

/// Verify a completion against its gold answer: the score with every metric in `extra`.
pub fn score_completion(verifier: &Verifier, completion: &str, gold: &str) -> SampleScore {
    let v = verifier.verify(completion, Some(gold));
    let strict = v.strict_correct.unwrap_or(false);
    let flexible = v.flexible_correct.unwrap_or(false);
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
    extra.insert("accuracy_strict".into(), json!(strict));
    extra.insert("accuracy_flexible".into(), json!(flexible));
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
    SampleScore {
        log_q: None,
        in_support: chain_right,
        first_invalid: None,
        invalid_transitions: a.wrong,
        extra,
    }
}

/// Text tasks have no reference token sampler: their training data are prompts with their
/// reference completions (`task.prompts`).
fn no_sequences() -> PluginError {
    PluginError(
        "a text task has no token-sequence sampler: the harness asks it for prompts (`task.prompts`)"
            .into(),
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
}

impl Gsm8kTask {
    fn open(config: Value) -> Result<Self> {
        let config: Gsm8kConfig = if config.is_null() {
            serde_json::from_value(json!({}))?
        } else {
            serde_json::from_value(config).map_err(|e| {
                PluginError(format!(
                    "gsm8k config: {e} (keys: split, data_dir, format, shots, limit)"
                ))
            })?
        };
        let split = match config.split.as_str() {
            "test" => Split::Test,
            "train" => Split::Train,
            other => {
                return Err(PluginError(format!(
                    "gsm8k config: split must be `test` or `train`, got `{other}`"
                )))
            }
        };
        let format = PromptFormat::parse(config.format.as_deref().unwrap_or("gsm8k"))
            .map_err(|e| PluginError(format!("gsm8k config: {e}")))?;
        let shots = config.shots.unwrap_or(format.default_shots());
        if shots > MAX_SHOTS {
            return Err(PluginError(format!(
                "gsm8k config: shots must be at most {MAX_SHOTS}, got {shots}"
            )));
        }
        let dir = config
            .data_dir
            .clone()
            .unwrap_or_else(data::default_data_dir);
        let mut problems =
            data::load(&dir, split).map_err(|e| PluginError(format!("gsm8k: {e}")))?;
        if let Some(limit) = config.limit {
            if limit == 0 {
                return Err(PluginError("gsm8k config: limit must be at least 1".into()));
            }
            problems.truncate(limit);
        }
        let train = if shots > 0 && format.needs_train_examples() {
            data::load(&dir, Split::Train)
                .map_err(|e| PluginError(format!("gsm8k few-shot examples: {e}")))?
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
        })
    }

    fn index_of(&self, id: &str) -> Result<usize> {
        id.strip_prefix(&format!("{}-", self.split_name))
            .and_then(|i| i.parse::<usize>().ok())
            .filter(|&i| i < self.problems.len())
            .ok_or_else(|| {
                PluginError(format!(
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
        Ok(TaskDescription {
            label: format!(
                "GSM8K {} ({} problems, {}-shot{})",
                self.split_name,
                self.problems.len(),
                self.shots,
                match self.format {
                    PromptFormat::Gsm8k => "",
                    PromptFormat::Gsm8kCot => " CoT",
                }
            ),
            vocab_size: 0,
            mask_id: 0,
            length,
            entropy_nats: None,
            entropy_exact: false,
            entropy_std_error: 0.0,
            optimal_ter: None,
            support_log10_density: None,
            details: json!({
                "task": "gsm8k",
                "split": self.split_name,
                "problems": self.problems.len(),
                "pinned_problems": self.split.problems(),
                "shots": self.shots,
                "format": self.format.describe(),
            }),
            metrics: metrics(),
            text: Some(TextTaskInfo {
                vocabulary: None,
                eos_id: None,
                stop: self.format.stop(),
                prompts: Some(self.problems.len()),
                prompt_ids: Some(
                    (0..self.problems.len())
                        .map(|i| format!("{}-{i}", self.split_name))
                        .collect(),
                ),
            }),
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
                Ok(score_completion(
                    &self.verifier,
                    &c.text,
                    &self.problems[i].gold,
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
                PluginError(format!("arith config: {e} (keys: steps, max_operand, ops)"))
            })?
        };
        config.validate().map_err(PluginError)?;
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
            PluginError(format!(
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
            return Err(PluginError(format!(
                "arith with steps {}, max_operand {}: a prompt and its solution can take {needed} tokens with end-of-text; use a length of at least {needed} (got {length})",
                self.config.steps, self.config.max_operand
            )));
        }
        let vocabulary: Vec<String> = synthetic::VOCABULARY
            .iter()
            .map(|c| c.to_string())
            .collect();
        let eos = vocabulary.len() as u32;
        Ok(TaskDescription {
            label: format!(
                "arith ({} steps, operands ≤ {}, ops {})",
                self.config.steps, self.config.max_operand, self.config.ops
            ),
            vocab_size: vocabulary.len() + 1,
            mask_id: eos + 1,
            length,
            entropy_nats: None,
            entropy_exact: false,
            entropy_std_error: 0.0,
            optimal_ter: None,
            support_log10_density: None,
            details: json!({
                "task": "arith",
                "steps": self.config.steps,
                "max_operand": self.config.max_operand,
                "ops": self.config.ops,
                "tokens_needed": needed,
            }),
            metrics: metrics(),
            text: Some(TextTaskInfo {
                vocabulary: Some(vocabulary),
                eos_id: Some(eos),
                stop: Vec::new(),
                prompts: None,
                prompt_ids: None,
            }),
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
        let e = task.describe(10).unwrap_err().0;
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
            .0;
        assert!(e.contains("unknown prompt id"), "{e}");
    }

    #[test]
    fn bad_configs_name_the_key() {
        let e = ArithTask::open(json!({"stepz": 2})).err().unwrap().0;
        assert!(e.contains("stepz"), "{e}");
        let e = Gsm8kTask::open(json!({"split": "dev"})).err().unwrap().0;
        assert!(e.contains("split"), "{e}");
    }
}
