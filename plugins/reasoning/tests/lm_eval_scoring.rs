//! `gsm8k`'s `scoring` modes against lm-evaluation-harness's own per-line results.
//!
//! `tests/fixtures/gsm8k_scoring.jsonl` holds hand-written generations for real GSM8K test
//! problems (`060`, `7.0`, `$1,430.00`, `####18`, two `####` lines, negatives, units, trailing
//! dots, no answer, both prompt formats), each scored by lm-eval's own filters and
//! `exact_match` (tools/lm-eval-fixtures/make_gsm8k_scoring.py, lm-eval 0.4.13), and by the
//! numeric rule written independently in Python. Every line must come out the same here:
//! the extracted strings, `scoring: lm-eval` against lm-eval's results, `scoring: numeric`
//! (and the pre-existing `score_completion`) against the numeric ones, and `scoring: both`
//! against both.

use dlm_reasoning::answer::{
    lm_eval_exact_match, lm_eval_normalise, lm_eval_target, Scoring, LM_EVAL_REGEXES_TO_IGNORE,
};
use dlm_reasoning::data::Problem;
use dlm_reasoning::plugin::{score_completion, score_gsm8k_completion};
use dlm_reasoning::prompt::PromptFormat;
use dlm_reasoning::Verifier;
use serde::Deserialize;
use serde_json::{json, Value};

const FIXTURE: &str = include_str!("fixtures/gsm8k_scoring.jsonl");

/// lm-eval's filter result when the regex finds nothing.
const INVALID: &str = "[invalid]";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    format: String,
    doc_id: usize,
    completion: String,
    answer: String,
    gold: String,
    strict_filtered: String,
    flexible_filtered: String,
    lm_eval_strict: bool,
    lm_eval_flexible: bool,
    numeric_strict: bool,
    numeric_flexible: bool,
}

fn lines() -> Vec<Line> {
    FIXTURE
        .lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("fixtures/gsm8k_scoring.jsonl:{}: {e}", i + 1))
        })
        .collect()
}

fn filtered(extracted: Option<&str>) -> &str {
    extracted.unwrap_or(INVALID)
}

#[test]
fn every_replayed_line_scores_as_lm_eval_and_as_before() {
    let lines = lines();
    assert!(lines.len() >= 60, "{} lines", lines.len());
    for required in ["#### 060", "#### 7.0", "#### $1,430.00", "####18"] {
        assert!(
            lines.iter().any(|l| l.completion == required),
            "the fixture lacks {required:?}"
        );
    }
    assert!(lines
        .iter()
        .any(|l| l.completion.matches("####").count() == 2));
    let mut failures = Vec::new();
    let mut totals = [0usize; 4];
    for (i, l) in lines.iter().enumerate() {
        let at = format!(
            "line {} ({}, doc {}, {:?})",
            i + 1,
            l.format,
            l.doc_id,
            l.completion
        );
        let verifier = Verifier {
            strict: PromptFormat::parse(&l.format).unwrap().strict_match(),
            ..Verifier::default()
        };
        let problem = Problem {
            line: l.doc_id + 1,
            question: String::new(),
            answer: l.answer.clone(),
            gold: l.gold.clone(),
        };
        let v = verifier.verify(&l.completion, Some(&l.gold));
        let got = (
            filtered(v.strict_answer.as_deref()),
            filtered(v.flexible_answer.as_deref()),
        );
        if got != (l.strict_filtered.as_str(), l.flexible_filtered.as_str()) {
            failures.push(format!("{at}: extracted {got:?}"));
        }
        let score = |scoring| score_gsm8k_completion(&verifier, scoring, &l.completion, &problem);
        let lm_eval = (json!(l.lm_eval_strict), json!(l.lm_eval_flexible));
        let numeric = (json!(l.numeric_strict), json!(l.numeric_flexible));
        let pair = |extra: &serde_json::Map<String, Value>, strict: &str, flexible: &str| {
            (extra[strict].clone(), extra[flexible].clone())
        };
        let as_map =
            |s: dlm_sdk::SampleScore| s.extra.into_iter().collect::<serde_json::Map<_, _>>();

        let lm = as_map(score(Scoring::LmEval));
        if pair(&lm, "accuracy_strict", "accuracy_flexible") != lm_eval {
            failures.push(format!(
                "{at}: lm-eval mode {:?}, lm-eval says {lm_eval:?}",
                pair(&lm, "accuracy_strict", "accuracy_flexible")
            ));
        }
        let num = as_map(score(Scoring::Numeric));
        if pair(&num, "accuracy_strict", "accuracy_flexible") != numeric {
            failures.push(format!(
                "{at}: numeric mode {:?}, expected {numeric:?}",
                pair(&num, "accuracy_strict", "accuracy_flexible")
            ));
        }
        // Numeric mode is today's rule: the pre-existing scorer, metric for metric.
        let before = as_map(score_completion(&verifier, &l.completion, &l.gold));
        if num != before {
            failures.push(format!(
                "{at}: numeric mode {num:?} differs from score_completion {before:?}"
            ));
        }
        let both = as_map(score(Scoring::Both));
        if pair(&both, "accuracy_strict", "accuracy_flexible") != lm_eval
            || pair(
                &both,
                "accuracy_strict_numeric",
                "accuracy_flexible_numeric",
            ) != numeric
        {
            failures.push(format!("{at}: both mode {both:?}"));
        }
        for (total, hit) in totals.iter_mut().zip([
            l.lm_eval_strict,
            l.lm_eval_flexible,
            l.numeric_strict,
            l.numeric_flexible,
        ]) {
            *total += usize::from(hit);
        }
    }
    let n = lines.len();
    println!(
        "{n} lines: lm-eval strict {}/{n}, flexible {}/{n}; numeric strict {}/{n}, flexible {}/{n}",
        totals[0], totals[1], totals[2], totals[3]
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_regexes_are_lm_evals_and_apply_to_both_sides() {
    // The four patterns as the vendored gsm8k-cot.yaml lists them (gsm8k.yaml has the same).
    let yaml = include_str!("../data/lm-eval-gsm8k-cot.yaml");
    let listed: Vec<&str> = yaml
        .split_once("regexes_to_ignore:\n")
        .unwrap()
        .1
        .lines()
        .take(4)
        .map(|l| l.trim().trim_start_matches("- ").trim_matches('\''))
        .collect();
    assert_eq!(listed, LM_EVAL_REGEXES_TO_IGNORE);
    // The target: reasoning, commas and the final dot go; case does not count.
    let answer = "Half of 2,860 is 1,430.\n#### 1,430";
    assert_eq!(lm_eval_normalise(answer), "1430");
    let cot = dlm_reasoning::answer::StrictMatch::TheAnswerIs;
    assert_eq!(lm_eval_target(cot, answer), "1,430");
    assert!(lm_eval_exact_match(Some("$1,430."), answer));
    assert!(!lm_eval_exact_match(Some("1430.0"), answer));
    assert!(!lm_eval_exact_match(None, answer));
    // Python's `$` also matches before a final newline.
    assert_eq!(lm_eval_normalise("7.\n"), "7\n");
    assert_eq!(lm_eval_normalise("A.B."), "a.b");
}
