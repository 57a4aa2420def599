//! Final-answer extraction, as lm-evaluation-harness's `gsm8k` task does it.
//!
//! * **strict-match**: the first match of `#### (\-?[0-9\.\,]+)`, group 1.
//! * **flexible-extract**: the *last* match of `(-?[$0-9.,]{2,})|(-?[0-9]+)`, taking the first
//!   non-empty group (`group_select: -1` in `gsm8k.yaml`).
//!
//! Scoring differs from lm-eval on purpose: lm-eval compares *strings* after removing `,`, `$`
//! and one trailing `.`; here both sides are parsed with [`parse_answer`] (same removals) and
//! compared as exact rationals, so `18.00` matches a gold `18`. A string that is not a plain
//! number after the removals (`$.`, `1.2.3`) is never correct.

use std::sync::LazyLock;

use num_rational::BigRational;
use regex::Regex;

use crate::arith::parse_answer;

static STRICT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"#### (\-?[0-9\.\,]+)").expect("valid regex"));
static FLEXIBLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(-?[$0-9.,]{2,})|(-?[0-9]+)").expect("valid regex"));

/// lm-eval's strict-match extraction: the first `#### n`, or `None` (lm-eval's `[invalid]`).
pub fn extract_strict(text: &str) -> Option<&str> {
    STRICT
        .captures(text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
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
