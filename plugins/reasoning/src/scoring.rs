//! How a reasoning completion becomes a score: the metrics `gsm8k` and `arith` declare and the
//! per-sample values of each (the table in [`crate::plugin`]), shared by both tasks.

use crate::answer::{lm_eval_exact_match, lm_eval_target, Scoring};
use crate::data::Problem;
use crate::verify::{Verification, Verifier};
use dlm_sdk::{Better, MetricDecl, MetricKind, PluginError, SampleScore};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The metrics a reasoning task declares under `scoring`; the accuracy labels name the mode.
pub(crate) fn metrics(scoring: Scoring) -> Vec<MetricDecl> {
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
pub(crate) fn no_sequences() -> PluginError {
    PluginError::unsupported(
        "a text task has no token-sequence sampler: the harness asks it for prompts (`task.prompts`)",
    )
}
