//! The `gsm8k-cot` prompt format (`format: gsm8k-cot`) against lm-evaluation-harness's
//! `gsm8k-cot.yaml`: the exemplars and settings against the vendored copy of the yaml, prompts
//! against text assembled here from the yaml's rules, the `The answer is n.` extraction, and
//! the gold solutions rewritten to end `The answer is n.` scoring perfectly on every problem.
//! Tests that need GSM8K skip with a message when the data directory (`$DLM_BENCH_DATA`,
//! default the repository's `data/`) has no GSM8K files, and fail instead under `CI=true`
//! (tests/common/skip.rs).

#[path = "../../../tests/common/skip.rs"]
mod skip;

use dlm_reasoning::answer::{StrictMatch, FLEXIBLE_PATTERN, STRICT_COT_PATTERN};
use dlm_reasoning::data::{default_data_dir, load, DataError, Problem, Split};
use dlm_reasoning::plugin::{score_completion, ReasoningPlugin};
use dlm_reasoning::prompt::COT_EXEMPLARS;
use dlm_reasoning::Verifier;
use dlm_sdk::{Completion, Plugin, PromptsRequest, Task};
use serde_json::{json, Value};

/// The verbatim copy of lm-eval's `lm_eval/tasks/gsm8k/gsm8k-cot.yaml`, licence header first.
const YAML: &str = include_str!("../data/lm-eval-gsm8k-cot.yaml");

/// The first exemplar, typed from the yaml (its folded lines joined by single spaces).
const FIRST_QUESTION: &str = "There are 15 trees in the grove. Grove workers will plant trees \
in the grove today. After they are done, there will be 21 trees. How many trees did the grove \
workers plant today?";
const FIRST_TARGET: &str = "There are 15 trees originally. Then there were 21 trees after some \
more were planted. So there must have been 21 - 15 = 6. The answer is 6.";

/// lm-eval's defaults for keys the yaml leaves out (`TaskConfig` in `lm_eval/config/task.py`).
const TARGET_DELIMITER: &str = " ";
const FEWSHOT_DELIMITER: &str = "\n\n";

/// `doc_to_text: 'Q: {{question}}\n\n  A:'`: in a single-quoted YAML scalar the empty line
/// is one newline and the next line's indentation is dropped.
fn doc_to_text(question: &str) -> String {
    format!("Q: {question}\nA:")
}

fn yaml_body() -> &'static str {
    YAML.split_once("# ---- begin verbatim copy ----\n")
        .expect("the vendored yaml has its header marker")
        .1
}

/// `fewshot_config.samples` of the yaml as (question, target): each `- question:` starts a
/// sample, `target:` its target, and a more deeply indented line continues the plain scalar
/// before it (folded into one space).
fn yaml_samples() -> Vec<(String, String)> {
    let mut samples: Vec<(String, String)> = Vec::new();
    let mut in_target = false;
    let lines = yaml_body()
        .lines()
        .skip_while(|l| *l != "  samples:")
        .skip(1)
        .take_while(|l| l.starts_with("  "));
    for line in lines {
        if let Some(q) = line.strip_prefix("  - question: ") {
            samples.push((q.to_string(), String::new()));
            in_target = false;
        } else if let Some(t) = line.strip_prefix("    target: ") {
            samples.last_mut().expect("a question first").1 = t.to_string();
            in_target = true;
        } else if let Some(more) = line.strip_prefix("      ") {
            let last = samples.last_mut().expect("a sample first");
            let field = if in_target { &mut last.1 } else { &mut last.0 };
            field.push(' ');
            field.push_str(more.trim());
        } else {
            panic!("unexpected line in samples: {line:?}");
        }
    }
    samples
}

/// A GSM8K split, or `None` (after a visible skip line) when the data directory lacks it.
fn problems_of(split: Split) -> Option<Vec<Problem>> {
    match load(&default_data_dir(), split) {
        Ok(p) => Some(p),
        Err(DataError::Missing { path }) => {
            skip::absent(&skip::DATA, format!("{} is absent", path.display()));
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn open(config: Value) -> Box<dyn Task> {
    ReasoningPlugin::open_task("gsm8k", config).unwrap_or_else(|e| panic!("{}", e.message))
}

fn prompts(task: &mut Box<dyn Task>, n: usize) -> Vec<dlm_sdk::Prompt> {
    task.prompts(&PromptsRequest {
        first_index: 0,
        n,
        seed: 0,
    })
    .unwrap()
}

#[test]
fn exemplars_and_settings_match_the_yaml() {
    let body = yaml_body();
    let samples = yaml_samples();
    assert_eq!(samples.len(), 8);
    assert_eq!(samples[0], (FIRST_QUESTION.into(), FIRST_TARGET.into()));
    for (e, (q, t)) in COT_EXEMPLARS.iter().zip(&samples) {
        assert_eq!((e.question, e.target), (q.as_str(), t.as_str()));
        assert!(t.contains(" The answer is ") && t.ends_with('.'), "{t}");
    }
    for needle in [
        "task: gsm8k_cot\n",
        "doc_to_text: 'Q: {{question}}\n\n  A:'\n",
        "  sampler: first_n\n",
        "num_fewshot: 8\n",
        "  until:\n  - 'Q:'\n  - </s>\n  - <|im_end|>\n",
        "    group_select: -1\n",
        &format!("    regex_pattern: {STRICT_COT_PATTERN}\n  - function: take_first\n  name: strict-match\n"),
        &format!("    regex_pattern: {FLEXIBLE_PATTERN}\n  - function: take_first\n  name: flexible-extract\n"),
    ] {
        assert!(body.contains(needle), "the yaml lacks {needle:?}");
    }
    // No delimiter keys: lm-eval's defaults apply.
    assert!(!body.contains("delimiter"));
}

#[test]
fn cot_prompts_are_laid_out_like_lm_eval() {
    let Some(problems) = problems_of(Split::Test) else {
        return;
    };
    let samples = yaml_samples();
    let example = |(q, t): &(String, String)| {
        format!("{}{TARGET_DELIMITER}{t}{FEWSHOT_DELIMITER}", doc_to_text(q))
    };
    // Default: all 8 exemplars.
    let mut task = open(json!({"format": "gsm8k-cot", "limit": 3}));
    let got = prompts(&mut task, 3);
    for (p, problem) in got.iter().zip(&problems) {
        let want: String =
            samples.iter().map(example).collect::<String>() + &doc_to_text(&problem.question);
        assert_eq!(p.text, want);
    }
    let first = format!(
        "Q: {FIRST_QUESTION}\nA: {FIRST_TARGET}\n\nQ: {}",
        samples[1].0
    );
    assert!(got[0].text.starts_with(&first), "{}", got[0].text);
    assert_eq!(got[0].text.matches("\n\nQ: ").count(), 8);
    assert!(got[0]
        .text
        .ends_with(&format!("\n\nQ: {}\nA:", problems[0].question)));
    let d = task.describe(512).unwrap();
    assert_eq!(d.text.unwrap().stop, ["Q:", "</s>", "<|im_end|>"]);
    assert!(d.label.contains("8-shot CoT"), "{}", d.label);
    // Zero-shot and the first three.
    let mut task = open(json!({"format": "gsm8k-cot", "shots": 0, "limit": 2}));
    let got = prompts(&mut task, 2);
    assert_eq!(got[1].text, format!("Q: {}\nA:", problems[1].question));
    let mut task = open(json!({"format": "gsm8k-cot", "shots": 3, "limit": 1}));
    let want: String =
        samples[..3].iter().map(example).collect::<String>() + &doc_to_text(&problems[0].question);
    assert_eq!(prompts(&mut task, 1)[0].text, want);
    // The default format is unchanged: lm-eval's `gsm8k`, zero-shot.
    for config in [json!({"limit": 1}), json!({"format": "gsm8k", "limit": 1})] {
        let mut task = open(config);
        let p = &prompts(&mut task, 1)[0];
        assert_eq!(
            p.text,
            format!("Question: {}\nAnswer:", problems[0].question)
        );
        assert_eq!(
            p.reference.as_deref(),
            Some(&*format!(" {}", problems[0].answer))
        );
        let stop = task.describe(512).unwrap().text.unwrap().stop;
        assert_eq!(stop, ["Question:", "</s>", "<|im_end|>"]);
    }
}

#[test]
fn unknown_formats_and_too_many_shots_are_refused() {
    let err = |config: Value| {
        ReasoningPlugin::open_task("gsm8k", config)
            .err()
            .unwrap()
            .message
    };
    let e = err(json!({"format": "cot"}));
    assert!(e.contains("format"), "{e}");
    assert!(
        e.contains("`gsm8k` or `gsm8k-cot`") && e.contains("`cot`"),
        "{e}"
    );
    let e = err(json!({"format": 8}));
    assert!(e.contains("format"), "{e}");
    let e = err(json!({"format": "gsm8k-cot", "shots": 9}));
    assert!(e.contains("shots must be at most 8, got 9"), "{e}");
    let e = err(json!({"formats": "gsm8k-cot"}));
    assert!(e.contains("formats") && e.contains("keys:"), "{e}");
}

#[test]
fn cot_completions_without_annotations_are_checked_in_free_text() {
    let cot = Verifier {
        strict: StrictMatch::TheAnswerIs,
        ..Verifier::default()
    };
    for e in &COT_EXEMPLARS {
        let gold = e.target.rsplit("The answer is ").next().unwrap();
        let gold = gold.trim_end_matches('.');
        let s = score_completion(&cot, e.target, gold);
        assert_eq!(s.extra["accuracy_strict"], json!(true), "{}", e.target);
        assert_eq!(s.extra["accuracy_flexible"], json!(true), "{}", e.target);
        assert!(s.in_support);
        assert_eq!(s.extra["steps_checked"], json!(0));
        for key in ["step_error_rate", "coverage", "first_error_step"] {
            assert_eq!(s.extra[key], Value::Null, "{key}");
        }
        assert_eq!(s.extra["trace_error"], json!(false));
        assert_eq!(
            s.extra["free_text_step_error_rate"],
            json!(0.0),
            "{}",
            e.target
        );
    }
    // A wrong free-text step is counted; the answer is still right.
    let planted = FIRST_TARGET.replace("21 - 15 = 6", "21 - 15 = 7");
    let s = score_completion(&cot, &planted, "6");
    assert_eq!(s.extra["free_text_step_error_rate"], json!(1.0));
    assert_eq!(s.extra["accuracy_strict"], json!(true));
    // `#### 6`, `$6.`, a lower-case sentence: strict fails, flexible finds 6.
    for text in [
        "21 - 15 = 6\n#### 6",
        "So 6. The answer is $6.",
        "the answer is 6.",
    ] {
        let s = score_completion(&cot, text, "6");
        assert_eq!(s.extra["accuracy_strict"], json!(false), "{text}");
        assert_eq!(s.extra["accuracy_flexible"], json!(true), "{text}");
        assert!(!s.in_support);
    }
    let s = score_completion(&cot, "The answer is 1,234.", "1234");
    assert_eq!(s.extra["accuracy_strict"], json!(true));
    for text in ["", "no number at all"] {
        let s = score_completion(&cot, text, "6");
        assert_eq!(s.extra["accuracy_flexible"], json!(false));
        assert_eq!(s.extra["free_text_step_error_rate"], Value::Null);
    }
}

/// The reference row under `gsm8k-cot` on a whole split: every gold solution, its `#### n`
/// line rewritten to `The answer is n.` and cut at the stop strings as the harness does, scores
/// accuracy 1 with no wrong step (SER 0). Returns how many have checked annotation steps.
fn check_cot_reference(split: &str, problems: &[Problem]) -> usize {
    let mut task = open(json!({"format": "gsm8k-cot", "split": split}));
    let stop = task.describe(512).unwrap().text.unwrap().stop;
    let got = prompts(&mut task, problems.len());
    let mut completions = Vec::new();
    for (p, problem) in got.iter().zip(problems) {
        let reference = p.reference.clone().unwrap();
        let end = problem.answer.rfind("#### ").unwrap();
        let want = format!(" {}The answer is {}.", &problem.answer[..end], problem.gold);
        assert_eq!(reference, want);
        let cut = stop.iter().filter_map(|s| reference.find(s.as_str())).min();
        assert_eq!(cut, None, "{}: a stop string in the reference", p.id);
        completions.push(Completion {
            prompt_id: p.id.clone(),
            text: reference,
        });
    }
    let scores = task.score_text(&completions).unwrap();
    assert_eq!(scores.len(), problems.len());
    let mut annotated = 0;
    for (s, c) in scores.iter().zip(&completions) {
        assert!(s.in_support, "{}: {s:?}", c.prompt_id);
        assert_eq!(s.extra["accuracy_strict"], json!(true), "{}", c.prompt_id);
        assert_eq!(s.extra["accuracy_flexible"], json!(true), "{}", c.prompt_id);
        assert_eq!(s.extra["steps_wrong"], json!(0), "{}", c.prompt_id);
        match &s.extra["step_error_rate"] {
            Value::Null => {}
            r => {
                assert_eq!(r, &json!(0.0), "{}", c.prompt_id);
                annotated += 1;
            }
        }
    }
    println!(
        "gsm8k-cot reference, {split}: {n}/{n} right, {annotated} with checked annotations",
        n = problems.len()
    );
    annotated
}

#[test]
fn cot_reference_scores_perfectly_on_every_test_problem() {
    let Some(problems) = problems_of(Split::Test) else {
        return;
    };
    assert_eq!(problems.len(), 1319);
    // The other 18 solutions have no `<<…>>` annotation (pinned data, so exact).
    assert_eq!(check_cot_reference("test", &problems), 1301);
    // A model's CoT answer to problem 0 (gold 18), scored through the task.
    let mut task = open(json!({"format": "gsm8k-cot", "limit": 1}));
    let text = format!(
        "She has 16 - 3 - 4 = 9 eggs. 9 * 2 = 18. The answer is {}.",
        problems[0].gold
    );
    let s = task
        .score_text(&[Completion {
            prompt_id: "test-0".into(),
            text,
        }])
        .unwrap();
    assert_eq!(s[0].extra["accuracy_strict"], json!(true));
    assert_eq!(s[0].extra["free_text_step_error_rate"], json!(0.0));
}

#[test]
fn cot_reference_scores_perfectly_on_every_train_problem() {
    let Some(problems) = problems_of(Split::Train) else {
        return;
    };
    assert_eq!(problems.len(), 7473);
    assert_eq!(check_cot_reference("train", &problems), 7378);
}
