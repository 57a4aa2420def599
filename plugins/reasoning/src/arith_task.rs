//! The task `arith`: procedural GSM8K-style chains ([`crate::synthetic`]) as a text task in
//! their own character vocabulary, scored by the step verifier (see [`crate::plugin`]).
//!
//! Config: `steps`, `max_operand`, `ops` ([`ArithConfig`]) and `templates` (see
//! [`crate::template`]): the built-in templates are [`BUILTIN_TEMPLATES`], every inline one
//! must be spelt in [`synthetic::VOCABULARY`]. The default is `plain`, `{question}\n`.

use crate::answer::Scoring;
use crate::scoring::{metrics, no_sequences, score_completion};
use crate::synthetic::{self, ArithConfig};
use crate::template::{Template, Templates};
use crate::verify::Verifier;
use dlm_sdk::{
    Completion, PluginError, Prompt, PromptsRequest, Result, SampleReferenceRequest, SampleScore,
    Task, TaskDescription, TaskProvenance, TextTaskInfo,
};
use serde_json::{json, Value};

/// The built-in templates of `arith`, each within the task's vocabulary: `plain` (the default:
/// the question, a line break, the solution), `space` (a space in place of the line break),
/// `bare` (the solution right after the `?`) and `blank` (an empty line between).
pub const BUILTIN_TEMPLATES: [(&str, &str); 4] = [
    ("plain", "{question}\n"),
    ("space", "{question} "),
    ("bare", "{question}"),
    ("blank", "{question}\n\n"),
];

/// The config key that lists the templates, beside [`ArithConfig`]'s own keys.
pub const TEMPLATES_KEY: &str = "templates";

pub(crate) struct ArithTask {
    config: ArithConfig,
    templates: Templates,
    verifier: Verifier,
}

fn builtins() -> Vec<Template> {
    BUILTIN_TEMPLATES
        .iter()
        .map(|(name, text)| Template::new(name, text))
        .collect()
}

impl ArithTask {
    pub(crate) fn open(config: Value) -> Result<Self> {
        let bad = |e: String| {
            PluginError::bad_config(format!(
                "arith config: {e} (keys: steps, max_operand, ops, templates)"
            ))
        };
        let (config, entries) = match config {
            Value::Null => (ArithConfig::default(), None),
            Value::Object(mut map) => {
                let entries = match map.remove(TEMPLATES_KEY) {
                    None => None,
                    Some(v) => Some(serde_json::from_value::<Vec<String>>(v).map_err(|e| {
                        bad(format!(
                            "templates must be a list of template names or texts: {e}"
                        ))
                    })?),
                };
                let config =
                    serde_json::from_value(Value::Object(map)).map_err(|e| bad(e.to_string()))?;
                (config, entries)
            }
            other => return Err(bad(format!("expected a map, got {other}"))),
        };
        config.validate().map_err(PluginError::bad_config)?;
        let spelt = |text: &str| {
            let outside = text.replace(crate::template::PLACEHOLDER, "");
            synthetic::encode(&outside).map(|_| ()).map_err(|e| {
                format!(
                    "{e} (the task's characters: {:?})",
                    synthetic::VOCABULARY.iter().collect::<String>()
                )
            })
        };
        let templates = Templates::from_config(
            entries.as_deref(),
            &builtins(),
            builtins()[0].clone(),
            spelt,
        )
        .map_err(|e| PluginError::bad_config(format!("arith config: {e}")))?;
        Ok(ArithTask {
            config,
            templates,
            verifier: Verifier::default(),
        })
    }

    /// Tokens a prompt and its reference need in the longest template, plus one end-of-text.
    pub(crate) fn tokens_needed(&self) -> usize {
        let (question, solution) = synthetic::max_chars(&self.config);
        question + self.templates.max_overhead_chars() + solution + 1
    }

    fn problem_of(&self, id: &str) -> Result<(synthetic::SyntheticProblem, &Template)> {
        let parse = || -> Option<(u64, u64, &Template)> {
            let (base, template) = self.templates.split_id(id)?;
            let (seed, index) = base.strip_prefix('s')?.split_once('-')?;
            Some((seed.parse().ok()?, index.parse().ok()?, template))
        };
        let (seed, index, template) = parse().ok_or_else(|| {
            let suffix = if self.templates.configured() {
                "@<template>"
            } else {
                ""
            };
            PluginError::bad_config(format!(
                "arith: unknown prompt id `{id}` (expected `s<seed>-<index>{suffix}`)"
            ))
        })?;
        Ok((synthetic::problem(&self.config, seed, index), template))
    }

    /// Provenance only where the config chose templates, so the description of a suite
    /// without them stays as it was.
    fn provenance(&self) -> Option<TaskProvenance> {
        if !self.templates.configured() {
            return None;
        }
        let names: Vec<&str> = self
            .templates
            .list()
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        let mut p = TaskProvenance::new(
            format!("arith, {} templates: {}", names.len(), names.join(", ")),
            0,
            Scoring::Numeric.name(),
        );
        for t in self.templates.list() {
            p = p.with_prompt_template(&t.name, &t.text);
        }
        Some(p)
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
        if self.templates.configured() {
            let names: Vec<&str> = self
                .templates
                .list()
                .iter()
                .map(|t| t.name.as_str())
                .collect();
            d.details["templates"] = json!(names);
        }
        d.metrics = metrics(Scoring::Numeric);
        d.provenance = self.provenance();
        d.text = Some({
            let mut text = TextTaskInfo::new(Vec::new());
            text.vocabulary = Some(vocabulary);
            text.eos_id = Some(eos);
            text
        });
        Ok(d)
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
                let (index, template) = self.templates.of_sample(request.first_index + k);
                let p = synthetic::problem(&self.config, request.seed, index);
                Prompt {
                    id: self
                        .templates
                        .prompt_id(&format!("s{}-{index}", request.seed), template),
                    text: template.render(&p.question),
                    reference: Some(p.solution),
                }
            })
            .collect())
    }

    fn score_text(&mut self, completions: &[Completion]) -> Result<Vec<SampleScore>> {
        completions
            .iter()
            .map(|c| {
                let (p, template) = self.problem_of(&c.prompt_id)?;
                let score = score_completion(&self.verifier, &c.text, &p.answer.to_string());
                Ok(match self.templates.recorded_name(template) {
                    Some(name) => score.with_template(name),
                    None => score,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arith() -> ArithTask {
        ArithTask::open(json!({"steps": 2, "max_operand": 9})).unwrap()
    }

    fn references(task: &mut ArithTask, first_index: u64, n: usize, seed: u64) -> Vec<Completion> {
        task.prompts(&PromptsRequest {
            first_index,
            n,
            seed,
        })
        .unwrap()
        .iter()
        .map(|p| Completion {
            prompt_id: p.id.clone(),
            text: p.reference.clone().unwrap(),
        })
        .collect()
    }

    #[test]
    fn arith_reference_completions_score_as_right_chains() {
        let mut task = arith();
        let completions = references(&mut task, 5, 50, 3);
        let scores = task.score_text(&completions).unwrap();
        assert_eq!(scores.len(), 50);
        for s in &scores {
            assert!(s.in_support, "{s:?}");
            assert_eq!(s.extra["accuracy_strict"], json!(true));
            assert_eq!(s.extra["step_error_rate"], json!(0.0));
            assert_eq!(s.extra["trace_error"], json!(false));
            assert_eq!(s.template, None);
        }
    }

    /// Without `templates` the prompts are those the task wrote before templates existed:
    /// `{question}\n`, id `s{seed}-{index}`, sample `i` = problem `i`, no provenance.
    #[test]
    fn the_default_template_leaves_prompts_ids_and_description_unchanged() {
        let mut task = arith();
        let prompts = task
            .prompts(&PromptsRequest {
                first_index: 4,
                n: 3,
                seed: 7,
            })
            .unwrap();
        for (k, p) in prompts.iter().enumerate() {
            let index = 4 + k as u64;
            let problem = synthetic::problem(&task.config, 7, index);
            assert_eq!(p.id, format!("s7-{index}"));
            assert_eq!(p.text, format!("{}\n", problem.question));
            assert_eq!(p.reference.as_deref(), Some(problem.solution.as_str()));
        }
        let (question, solution) = synthetic::max_chars(&task.config);
        assert_eq!(task.tokens_needed(), question + 1 + solution + 1);
        let d = task.describe(64).unwrap();
        assert_eq!(d.provenance, None);
        assert!(d.details.get("templates").is_none());
    }

    #[test]
    fn templates_write_each_problem_in_each_and_samples_carry_the_name() {
        let mut task = ArithTask::open(json!({
            "steps": 2, "max_operand": 9, "templates": ["plain", "bare", "What is {question}\n"],
        }))
        .unwrap();
        let prompts = task
            .prompts(&PromptsRequest {
                first_index: 3,
                n: 6,
                seed: 1,
            })
            .unwrap();
        // Samples 3..9 are problems 1, 1, 1 (templates 0, 1, 2), then 2, 2, 2.
        let q1 = synthetic::problem(&task.config, 1, 1).question;
        let q2 = synthetic::problem(&task.config, 1, 2).question;
        let texts: Vec<&str> = prompts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                format!("{q1}\n"),
                q1.clone(),
                format!("What is {q1}\n"),
                format!("{q2}\n"),
                q2.clone(),
                format!("What is {q2}\n"),
            ]
        );
        assert_eq!(prompts[0].id, "s1-1@plain");
        assert_eq!(prompts[1].id, "s1-1@bare");
        assert_eq!(prompts[5].id, "s1-2@What is {question}\\n");
        let completions = references(&mut task, 3, 6, 1);
        let scores = task.score_text(&completions).unwrap();
        let names: Vec<Option<&str>> = scores.iter().map(|s| s.template.as_deref()).collect();
        let inline = Some("What is {question}\\n");
        assert_eq!(
            names,
            [
                Some("plain"),
                Some("bare"),
                inline,
                Some("plain"),
                Some("bare"),
                inline
            ]
        );
        assert!(scores.iter().all(|s| s.in_support));
        // The longest template's 9 extra characters count against the length.
        let (question, solution) = synthetic::max_chars(&task.config);
        assert_eq!(task.tokens_needed(), question + 9 + solution + 1);
        let d = task.describe(task.tokens_needed()).unwrap();
        let p = d.provenance.unwrap();
        let listed: Vec<(&str, &str)> = p
            .templates
            .iter()
            .map(|t| (t.name.as_str(), t.text.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("plain", "{question}\n"),
                ("bare", "{question}"),
                ("What is {question}\\n", "What is {question}\n")
            ]
        );
        assert_eq!(
            d.details["templates"],
            json!(["plain", "bare", "What is {question}\\n"])
        );
    }

    #[test]
    fn bad_templates_are_refused_naming_the_problem() {
        let open = |templates: Value| {
            ArithTask::open(json!({"templates": templates}))
                .err()
                .unwrap()
                .message
        };
        let e = open(json!(["Q: {question}\n"]));
        assert!(e.contains("'Q'") && e.contains("characters"), "{e}");
        let e = open(json!(["chatty"]));
        assert!(e.contains("plain, space, bare, blank"), "{e}");
        let e = open(json!("plain"));
        assert!(e.contains("list of template names"), "{e}");
        let mut task = ArithTask::open(json!({"templates": ["plain", "space"]})).unwrap();
        let e = task
            .score_text(&[Completion {
                prompt_id: "s0-1".into(),
                text: String::new(),
            }])
            .unwrap_err()
            .message;
        assert!(e.contains("s<seed>-<index>@<template>"), "{e}");
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
}
