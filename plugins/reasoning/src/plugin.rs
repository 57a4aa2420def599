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
//! | `templates` | write every problem in several templates: `gsm8k`, `gsm8k-cot`, `problem` (`Problem: {question}\nSolution:`) or inline texts with one `{question}`, each replacing `doc_to_text` in the examples and the question (see [`crate::template`]) | the format's own |
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
//! # `arith` (config: `steps`, `max_operand`, `ops`, see [`crate::synthetic`]; `templates`, see [`crate::arith_task`])
//!
//! Procedural GSM8K-style chains, one problem per sample (prompt id `s{seed}-{index}`), in the
//! character vocabulary [`crate::synthetic::VOCABULARY`] plus an end-of-text id, small enough
//! for the harness to train a model on in minutes. Prompt: `{question}\n`; reference: the
//! annotated solution ending in `#### n`.

use crate::answer::Scoring;
use crate::arith_task::{ArithTask, TEMPLATES_KEY};
use crate::data::{self, Problem, Split};
use crate::prompt::{PromptFormat, MAX_SHOTS};
pub(crate) use crate::scoring::{metrics, no_sequences};
pub use crate::scoring::{score_completion, score_gsm8k_completion};
use crate::synthetic::ArithConfig;
use crate::template::{Template, Templates};
use crate::user_prompts::{PromptsConfig, PromptsTask};
use crate::verify::Verifier;
use dlm_sdk::{
    Completion, ComponentInfo, ConfigKey, Plugin, PluginError, Prompt, PromptsRequest, Result,
    SampleReferenceRequest, SampleScore, Task, TaskDescription, TextTaskInfo,
};
use serde::Deserialize;
use serde_json::{json, Value};
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
                "procedural arithmetic chains in GSM8K's format, character vocabulary (config: steps, max_operand, ops, templates)",
            )
            .with_capability("text")
            .with_capability("vocabulary")
            .with_config_of::<ArithConfig>(&[])
            .with_config_key(ConfigKey::new(TEMPLATES_KEY)),
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
    #[serde(default)]
    templates: Option<Vec<String>>,
}

fn default_split() -> String {
    "test".into()
}

struct Gsm8kTask {
    split: Split,
    split_name: String,
    problems: Vec<Problem>,
    format: PromptFormat,
    /// The templates a question is written in (the format's `doc_to_text` by default).
    templates: Templates,
    /// The few-shot preamble in each template, in its order (empty for zero-shot).
    preambles: Vec<String>,
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
                    "gsm8k config: {e} (keys: split, data_dir, format, shots, limit, scoring, templates)"
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
        let templates = Templates::from_config(
            config.templates.as_deref(),
            &PromptFormat::builtin_templates(),
            format.template(),
            |_| Ok(()),
        )
        .map_err(|e| PluginError::bad_config(format!("gsm8k config: {e}")))?;
        Ok(Gsm8kTask {
            split,
            split_name: config.split,
            problems,
            format,
            preambles: (templates.list().iter())
                .map(|t| format.preamble_in(t, shots, &train))
                .collect(),
            templates,
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
            .with_filter(format!(
                "cut before the first of {:?}",
                self.format.stop_in(&self.templates)
            ))
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
        if self.templates.configured() {
            for t in self.templates.list() {
                p = p.with_prompt_template(&t.name, &t.text);
            }
        }
        p
    }

    /// The problem and the template of a prompt id.
    fn index_of(&self, id: &str) -> Result<(usize, &Template)> {
        self.templates
            .split_id(id)
            .and_then(|(base, t)| {
                let i = base.strip_prefix(&format!("{}-", self.split_name))?;
                Some((i.parse::<usize>().ok()?, t))
            })
            .filter(|&(i, _)| i < self.problems.len())
            .ok_or_else(|| {
                let suffix = if self.templates.configured() {
                    "@<template>"
                } else {
                    ""
                };
                PluginError::bad_config(format!(
                    "gsm8k: unknown prompt id `{id}` (expected `{}-0{suffix}` … `{}-{}{suffix}`)",
                    self.split_name,
                    self.split_name,
                    self.problems.len() - 1
                ))
            })
    }

    /// The id of problem `i` in `template`.
    fn prompt_id(&self, i: usize, template: &Template) -> String {
        let base = format!("{}-{i}", self.split_name);
        self.templates.prompt_id(&base, template)
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
                let mut text = TextTaskInfo::new(self.format.stop_in(&self.templates));
                text.prompts = Some(self.problems.len() * self.templates.list().len());
                text.prompt_ids = Some(
                    (0..self.problems.len())
                        .flat_map(|i| self.templates.list().iter().map(move |t| (i, t)))
                        .map(|(i, t)| self.prompt_id(i, t))
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
        let templates = self.templates.list();
        Ok((0..request.n as u64)
            .map(|k| {
                let (problem, template) = self.templates.of_sample(request.first_index + k);
                let i = (problem % total) as usize;
                let p = &self.problems[i];
                let t = templates.iter().position(|x| x == template).unwrap_or(0);
                Prompt {
                    id: self.prompt_id(i, template),
                    text: format!("{}{}", self.preambles[t], template.render(&p.question)),
                    reference: Some(self.format.reference(p)),
                }
            })
            .collect())
    }

    fn score_text(&mut self, completions: &[Completion]) -> Result<Vec<SampleScore>> {
        completions
            .iter()
            .map(|c| {
                let (i, template) = self.index_of(&c.prompt_id)?;
                let score = score_gsm8k_completion(
                    &self.verifier,
                    self.scoring,
                    &c.text,
                    &self.problems[i],
                );
                Ok(match self.templates.recorded_name(template) {
                    Some(name) => score.with_template(name),
                    None => score,
                })
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
    use crate::verify::Verifier;
    use std::collections::BTreeMap;

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

    /// With `templates`, sample `i` is problem `i / T` in template `i mod T`; the few-shot
    /// examples are written in the sample's own template, the stop strings gain each
    /// template's lead, and gold references score right under every template.
    #[test]
    fn gsm8k_templates_write_each_problem_in_each() {
        let config = json!({"limit": 2, "shots": 1, "templates": ["gsm8k", "problem"]});
        let mut task = Gsm8kTask::open(config).unwrap();
        let d = task.describe(512).unwrap();
        let text = d.text.unwrap();
        assert_eq!(text.stop, ["Question:", "</s>", "<|im_end|>", "Problem:"]);
        assert_eq!(text.prompts, Some(4));
        let ids = [
            "test-0@gsm8k",
            "test-0@problem",
            "test-1@gsm8k",
            "test-1@problem",
        ];
        assert_eq!(text.prompt_ids.unwrap(), ids);
        let listed: Vec<String> = d
            .provenance
            .unwrap()
            .templates
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(listed, ["gsm8k", "problem"]);
        let request = PromptsRequest {
            first_index: 0,
            n: 5,
            seed: 0,
        };
        let prompts = task.prompts(&request).unwrap();
        let got: Vec<&str> = prompts.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(got, [ids[0], ids[1], ids[2], ids[3], ids[0]]);
        let question = &task.problems[1].question;
        let default = Gsm8kTask::open(json!({"limit": 2, "shots": 1})).unwrap();
        assert_eq!(task.preambles[0], default.preambles[0]);
        let problem_preamble = &task.preambles[1];
        assert!(
            problem_preamble.starts_with("Problem: ") && problem_preamble.contains("\nSolution: ")
        );
        assert!(!problem_preamble.contains("Question:"));
        assert_eq!(
            prompts[2].text,
            format!("{}Question: {question}\nAnswer:", default.preambles[0])
        );
        assert_eq!(
            prompts[3].text,
            format!("{problem_preamble}Problem: {question}\nSolution:")
        );
        let completions: Vec<Completion> = prompts
            .iter()
            .map(|p| Completion {
                prompt_id: p.id.clone(),
                text: p.reference.clone().unwrap(),
            })
            .collect();
        let scores = task.score_text(&completions).unwrap();
        let names: Vec<&str> = scores
            .iter()
            .filter_map(|s| s.template.as_deref())
            .collect();
        assert_eq!(names, ["gsm8k", "problem", "gsm8k", "problem", "gsm8k"]);
        assert!(scores
            .iter()
            .all(|s| s.extra["accuracy_strict"] == json!(true)));
        let e = task
            .score_text(&[Completion {
                prompt_id: "test-0".into(),
                text: String::new(),
            }])
            .unwrap_err()
            .message;
        assert!(e.contains("test-0@<template>"), "{e}");
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
