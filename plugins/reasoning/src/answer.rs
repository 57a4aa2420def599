//! Final-answer extraction, as lm-evaluation-harness's `gsm8k` and `gsm8k-cot` tasks do it.
//!
//! * **strict-match** ([`StrictMatch`]): the first match of group 1 of
//!   * `#### (\-?[0-9\.\,]+)` for the `gsm8k` format ([`extract_strict`]);
//!   * `The answer is (\-?[0-9\.\,]+).` for `gsm8k-cot` ([`extract_strict_cot`]). The final
//!     `.` is a regex wildcard, as in lm-eval: one more character (not a newline) must follow
//!     the number, and the greedy number gives it back, so `The answer is 12.` gives `12`,
//!     `The answer is 123` at the end of the text gives `12`, `The answer is 5` at the end
//!     gives nothing, and `The answer is $5.` gives nothing (no `$` in the class).
//! * **flexible-extract**: the *last* match of `(-?[$0-9.,]{2,})|(-?[0-9]+)`, taking the first
//!   non-empty group (`group_select: -1` in both `gsm8k.yaml` and `gsm8k-cot.yaml`).
//!
//! Two ways to compare an extracted answer with the gold answer ([`Scoring`]):
//!
//! * **lm-eval** ([`lm_eval_exact_match`], the default): lm-eval's `exact_match` with the
//!   `gsm8k.yaml`/`gsm8k-cot.yaml` settings. Both the extracted string and lm-eval's target
//!   ([`lm_eval_target`]: the whole GSM8K `answer` field for `gsm8k`, the text after its last
//!   `####`, stripped, for `gsm8k-cot`) go through `regexes_to_ignore` `,`, `\$`,
//!   `(?s).*#### `, `\.$` (each removed everywhere, in that order) and are lower-cased
//!   ([`lm_eval_normalise`]); equal strings are correct. So `060`, `7.0` and `$1,430.00` are
//!   *wrong* against golds 60, 7 and 1430, as in lm-eval and the tables in papers.
//! * **numeric** ([`answers_match`]): both sides parsed with [`parse_answer`] (the same
//!   removals) and compared as exact rationals, so `18.00` matches a gold `18`. A string that
//!   is not a plain number after the removals (`$.`, `1.2.3`) is never correct.

use std::sync::LazyLock;

use num_rational::BigRational;
use regex::Regex;

use crate::arith::parse_answer;

/// lm-eval's `gsm8k` strict-match pattern (`gsm8k.yaml`).
pub const STRICT_PATTERN: &str = r"#### (\-?[0-9\.\,]+)";
/// lm-eval's `gsm8k-cot` strict-match pattern (`gsm8k-cot.yaml`), verbatim.
pub const STRICT_COT_PATTERN: &str = r"The answer is (\-?[0-9\.\,]+).";
/// lm-eval's flexible-extract pattern (the same in `gsm8k.yaml` and `gsm8k-cot.yaml`).
pub const FLEXIBLE_PATTERN: &str = r"(-?[$0-9.,]{2,})|(-?[0-9]+)";

static STRICT: LazyLock<Regex> = LazyLock::new(|| Regex::new(STRICT_PATTERN).expect("valid regex"));
static STRICT_COT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(STRICT_COT_PATTERN).expect("valid regex"));
static FLEXIBLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(FLEXIBLE_PATTERN).expect("valid regex"));

/// lm-eval's strict-match extraction: the first `#### n`, or `None` (lm-eval's `[invalid]`).
pub fn extract_strict(text: &str) -> Option<&str> {
    STRICT
        .captures(text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// lm-eval's `gsm8k-cot` strict-match extraction: the first `The answer is n.`, or `None`
/// (see the module documentation for the regex's quirks, kept on purpose).
pub fn extract_strict_cot(text: &str) -> Option<&str> {
    STRICT_COT
        .captures(text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// Which strict-match rule a completion is held to: the final-answer convention of the prompt
/// format it answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StrictMatch {
    /// `#### n`, GSM8K's own solutions and lm-eval's `gsm8k` task.
    #[default]
    Hashes,
    /// `The answer is n.`, lm-eval's `gsm8k-cot` task.
    TheAnswerIs,
}

impl StrictMatch {
    /// The strict answer in `text` under this rule.
    pub fn extract(self, text: &str) -> Option<&str> {
        match self {
            StrictMatch::Hashes => extract_strict(text),
            StrictMatch::TheAnswerIs => extract_strict_cot(text),
        }
    }
}

/// lm-eval's flexible-extract: the last number-like run in the text, or `None`.
pub fn extract_flexible(text: &str) -> Option<&str> {
    FLEXIBLE
        .captures_iter(text)
        .last()
        .and_then(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str())
}

/// The gold answer of a GSM8K solution: the text after the last `#### `, trimmed.
pub fn gold_answer(solution: &str) -> Option<&str> {
    solution
        .rfind("#### ")
        .map(|i| solution[i + 5..].trim())
        .filter(|s| !s.is_empty())
}

/// How an extracted answer is compared with the gold answer (the `gsm8k` task's `scoring`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scoring {
    /// lm-eval's `exact_match`: strings equal after its `regexes_to_ignore` and lower-casing.
    #[default]
    LmEval,
    /// Exact numbers after removing `$`, commas and one trailing `.` ([`answers_match`]).
    Numeric,
    /// lm-eval's under the usual metric names, numeric under `…_numeric` names.
    Both,
}

impl Scoring {
    /// The config values, in the order error messages list them.
    pub const NAMES: [&'static str; 3] = ["lm-eval", "numeric", "both"];

    /// Parses a config value (`lm-eval`, `numeric` or `both`).
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "lm-eval" => Ok(Scoring::LmEval),
            "numeric" => Ok(Scoring::Numeric),
            "both" => Ok(Scoring::Both),
            other => Err(format!(
                "scoring must be one of `{}`, got `{other}`",
                Self::NAMES.join("`, `")
            )),
        }
    }

    /// The config value naming this mode.
    pub fn name(self) -> &'static str {
        match self {
            Scoring::LmEval => "lm-eval",
            Scoring::Numeric => "numeric",
            Scoring::Both => "both",
        }
    }
}

/// lm-eval's `regexes_to_ignore` for `gsm8k` and `gsm8k-cot`, in the order it applies them.
pub const LM_EVAL_REGEXES_TO_IGNORE: [&str; 4] = [",", r"\$", "(?s).*#### ", r"\.$"];

/// A string as lm-eval's `exact_match_hf_evaluate` compares it under the GSM8K settings: every
/// `,` removed, then every `$`, then everything up to and including the last `#### ` (the
/// greedy `(?s).*#### `), then a `.` at the end, then lower-cased (`ignore_case: true`).
///
/// The last removal follows Python's `$`, which also matches before a final newline: `7.\n`
/// loses its `.` and keeps the newline. Python's `re.sub` removes every match; a greedy
/// `.*#### ` and an end-anchored `\.` each match at most once, which is what this does.
pub fn lm_eval_normalise(text: &str) -> String {
    let mut s: String = text.chars().filter(|&c| c != ',' && c != '$').collect();
    if let Some(i) = s.rfind("#### ") {
        s.drain(..i + "#### ".len());
    }
    let dot = if s.ends_with(".\n") {
        Some(s.len() - 2)
    } else if s.ends_with('.') {
        Some(s.len() - 1)
    } else {
        None
    };
    if let Some(i) = dot {
        s.remove(i);
    }
    s.to_lowercase()
}

/// lm-eval's target (`doc_to_target`) for a GSM8K `answer` field: the whole field for `gsm8k`
/// (`{{answer}}`, reasoning included: the `(?s).*#### ` removal cuts it), the text after the
/// last `####`, stripped, for `gsm8k-cot` (`answer.split('####')[-1].strip()`).
pub fn lm_eval_target(strict: StrictMatch, answer_field: &str) -> &str {
    match strict {
        StrictMatch::Hashes => answer_field,
        StrictMatch::TheAnswerIs => answer_field
            .rsplit("####")
            .next()
            .unwrap_or(answer_field)
            .trim(),
    }
}

/// lm-eval's `exact_match` of an extracted answer against a target from [`lm_eval_target`].
/// `None` (nothing extracted) is lm-eval's `[invalid]`, which no GSM8K target equals.
pub fn lm_eval_exact_match(extracted: Option<&str>, target: &str) -> bool {
    extracted.is_some_and(|a| lm_eval_normalise(a) == lm_eval_normalise(target))
}

/// Whether an extracted answer equals the gold answer as exact numbers after removing `$` and
/// commas (see the module documentation). `false` when either side is not a number.
pub fn answers_match(extracted: &str, gold: &str) -> bool {
    match (parse_answer(extracted), parse_answer(gold)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// [`answers_match`] against an already parsed gold value.
pub fn answer_matches_value(extracted: &str, gold: &BigRational) -> bool {
    parse_answer(extracted).is_some_and(|a| &a == gold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_takes_the_first_hash_answer() {
        assert_eq!(extract_strict("so 5\n#### 1,234\n"), Some("1,234"));
        assert_eq!(extract_strict("#### -3.5 and #### 7"), Some("-3.5"));
        assert_eq!(extract_strict("The answer is 42."), None);
        assert_eq!(extract_strict("####42"), None);
        assert_eq!(extract_strict("#### $5"), None);
        assert_eq!(extract_strict(""), None);
    }

    #[test]
    fn strict_cot_follows_lm_evals_regex() {
        // Expected values are what Python's `re.findall(...)[0]` gives for lm-eval's pattern.
        let cases: [(&str, Option<&str>); 14] = [
            ("The answer is 1,234.", Some("1,234")),
            ("So 3 + 4 = 7. The answer is 7.\n\nQ:", Some("7")),
            ("The answer is -3.5.", Some("-3.5")),
            ("The answer is 18.00.", Some("18.00")),
            ("The answer is 12 apples.", Some("12")),
            ("The answer is 42.\nThe answer is 7.", Some("42")),
            ("The answer is 8.\n", Some("8")),
            // The trailing wildcard takes a digit back when nothing follows the number.
            ("The answer is 123", Some("12")),
            ("The answer is 7.5", Some("7.")),
            ("The answer is 42\nnext", Some("4")),
            ("The answer is 5", None),
            ("The answer is $5.", None),
            ("the answer is 6.", None),
            ("#### 6\n", None),
        ];
        for (text, want) in cases {
            assert_eq!(extract_strict_cot(text), want, "{text:?}");
            assert_eq!(StrictMatch::TheAnswerIs.extract(text), want, "{text:?}");
        }
        assert_eq!(StrictMatch::Hashes.extract("#### 6\n"), Some("6"));
        assert_eq!(StrictMatch::default(), StrictMatch::Hashes);
        assert!(answers_match(
            extract_strict_cot("The answer is 1,234.").unwrap(),
            "1234"
        ));
        // `$5.`: strict finds nothing, flexible finds `$5.`, which matches 5.
        assert_eq!(extract_flexible("The answer is $5."), Some("$5."));
        assert!(answers_match("$5.", "5"));
        assert_eq!(extract_flexible("So 6 apples"), Some("6"));
    }

    #[test]
    fn flexible_takes_the_last_number() {
        assert_eq!(
            extract_flexible("3 + 4 = 7 so the answer is 7."),
            Some("7.")
        );
        assert_eq!(extract_flexible("It costs $1,200 in total"), Some("$1,200"));
        assert_eq!(extract_flexible("#### 18"), Some("18"));
        assert_eq!(extract_flexible("x = -5"), Some("-5"));
        assert_eq!(extract_flexible("answer: 9"), Some("9"));
        assert_eq!(extract_flexible("no digits here"), None);
        assert_eq!(extract_flexible("the end..."), Some("..."));
        assert_eq!(extract_flexible(""), None);
    }

    #[test]
    fn matching_normalises_dollars_commas_and_trailing_dot() {
        assert!(answers_match("$1,200", "1200"));
        assert!(answers_match("7.", "7"));
        assert!(answers_match("18.00", "18"));
        assert!(answers_match("-3", "-3"));
        assert!(!answers_match("...", "7"));
        assert!(!answers_match("8", "7"));
        assert!(!answers_match("7", "seven"));
    }

    #[test]
    fn gold_is_text_after_hashes() {
        assert_eq!(gold_answer("a\nb\n#### 2,125"), Some("2,125"));
        assert_eq!(gold_answer("no answer"), None);
        assert_eq!(gold_answer("#### "), None);
    }
}
