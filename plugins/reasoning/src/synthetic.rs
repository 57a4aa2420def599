//! Procedurally generated arithmetic chains in GSM8K's format, small enough to train a
//! character-level model on a laptop CPU.
//!
//! A problem of `steps` steps is a left-nested expression over `steps + 1` operands; its
//! solution has one GSM8K annotation line per step and ends with the `#### n` answer line:
//!
//! ```text
//! What is ((12+7)*3)-5?
//!
//! 12+7=<<12+7=19>>19
//! 19*3=<<19*3=57>>57
//! 57-5=<<57-5=52>>52
//! #### 52
//! ```
//!
//! Every gold solution passes [`crate::verify()`] in both modes with every step checked and
//! none wrong.
//!
//! **Drawing rule.** Each operator is drawn uniformly from the distinct operators of
//! [`ArithConfig::ops`]. Every operand is drawn uniformly from `0..=max_operand`, except the
//! right operand of a subtraction, drawn uniformly from `0..=min(running value, max_operand)`,
//! so every intermediate value and the answer are `>= 0` and no `-` ever stands for a sign.
//! There is no division, so every value is an integer.
//!
//! **Determinism.** [`problem`] depends on `(config, seed, index)` only: it runs ChaCha8 with
//! the key `seed` (little-endian, zero-padded) on stream `index`, and draws integers by
//! rejection sampling on raw `u64` words, so a sample depends neither on batch size nor on the
//! version of `rand`'s distribution code.
//!
//! **Vocabulary.** [`VOCABULARY`] is fixed and shared by every config; ids are indices into
//! it and no id is reserved. `VOCABULARY.len()` is the first free id (for padding, mask, …).

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The operators a config may use, in canonical draw order.
const ALL_OPS: [char; 3] = ['+', '-', '*'];
/// Bounds checked by [`ArithConfig::validate`].
const STEPS: std::ops::RangeInclusive<usize> = 1..=8;
const MAX_OPERAND: std::ops::RangeInclusive<u64> = 1..=999;
const PREFIX: &str = "What is ";

/// Generator settings, as a task's `data` section gives them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArithConfig {
    /// Operations per problem, `1..=8` (default 2); a problem has `steps + 1` operands.
    #[serde(default = "default_steps")]
    pub steps: usize,
    /// Largest operand, `1..=999` (default 9); operands are drawn from `0..=max_operand`.
    #[serde(default = "default_max_operand")]
    pub max_operand: u64,
    /// The operators to draw from: a non-empty subset of `"+-*"`, each at most once
    /// (default `"+-*"`). Order does not matter.
    #[serde(default = "default_ops")]
    pub ops: String,
}

fn default_steps() -> usize {
    2
}

fn default_max_operand() -> u64 {
    9
}

fn default_ops() -> String {
    ALL_OPS.iter().collect()
}

impl Default for ArithConfig {
    fn default() -> Self {
        ArithConfig {
            steps: default_steps(),
            max_operand: default_max_operand(),
            ops: default_ops(),
        }
    }
}

impl ArithConfig {
    /// Checks every field; the message names the bad field and its valid range.
    pub fn validate(&self) -> Result<(), String> {
        if !STEPS.contains(&self.steps) {
            return Err(format!(
                "synthetic arithmetic: steps must be in {}..={}, got {}",
                STEPS.start(),
                STEPS.end(),
                self.steps
            ));
        }
        if !MAX_OPERAND.contains(&self.max_operand) {
            return Err(format!(
                "synthetic arithmetic: max_operand must be in {}..={}, got {}",
                MAX_OPERAND.start(),
                MAX_OPERAND.end(),
                self.max_operand
            ));
        }
        let bad_ops = || {
            format!(
                "synthetic arithmetic: ops must be a non-empty subset of \"+-*\" \
                 with each operator at most once, got {:?}",
                self.ops
            )
        };
        if self.ops.is_empty() {
            return Err(bad_ops());
        }
        for (i, c) in self.ops.char_indices() {
            if !ALL_OPS.contains(&c) || self.ops[..i].contains(c) {
                return Err(bad_ops());
            }
        }
        Ok(())
    }

    /// The operators in canonical order, so `"-+"` and `"+-"` draw the same problems.
    fn operators(&self) -> Vec<char> {
        ALL_OPS
            .into_iter()
            .filter(|&c| self.ops.contains(c))
            .collect()
    }
}

/// One generated problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyntheticProblem {
    /// `What is <expression>?`
    pub question: String,
    /// One `a op b=<<a op b=c>>c` line per step, then `#### answer`; no trailing newline.
    pub solution: String,
    /// The value of the expression, always `>= 0`. `i128` because the largest valid config
    /// (8 steps, operands up to 999, `*`) reaches `999^9 ≈ 10^27`, beyond `i64`.
    pub answer: i128,
}

/// Uniform integer in `0..n` (`n >= 1`) by rejection on raw words: exact and independent of
/// `rand`'s distribution code.
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % n;
        }
    }
}

fn apply(op: char, a: i128, b: i128) -> i128 {
    match op {
        '+' => a + b,
        '-' => a - b,
        '*' => a * b,
        _ => unreachable!("operators are validated"),
    }
}

/// Problem number `index` of the stream `seed`: a pure function of `(config, seed, index)`.
///
/// # Panics
///
/// If `config` does not pass [`ArithConfig::validate`].
pub fn problem(config: &ArithConfig, seed: u64, index: u64) -> SyntheticProblem {
    if let Err(e) = config.validate() {
        panic!("{e}");
    }
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(index);

    let ops = config.operators();
    let max = config.max_operand;
    let mut acc = i128::from(below(&mut rng, max + 1));
    let mut expression = acc.to_string();
    let mut solution = String::new();
    for step in 0..config.steps {
        let op = ops[below(&mut rng, ops.len() as u64) as usize];
        let limit = if op == '-' {
            u64::try_from(acc.min(i128::from(max))).expect("values stay non-negative")
        } else {
            max
        };
        let b = i128::from(below(&mut rng, limit + 1));
        let value = apply(op, acc, b);
        expression = if step == 0 {
            format!("{expression}{op}{b}")
        } else {
            format!("({expression}){op}{b}")
        };
        let link = format!("{acc}{op}{b}");
        solution.push_str(&format!("{link}=<<{link}={value}>>{value}\n"));
        acc = value;
    }
    solution.push_str(&format!("#### {acc}"));
    SyntheticProblem {
        question: format!("{PREFIX}{expression}?"),
        solution,
        answer: acc,
    }
}

fn digits(v: i128) -> usize {
    v.to_string().len()
}

/// Upper bounds on the lengths, in characters, of the question and the solution of every
/// problem of `config`. When `ops` has `+` or `*`, both are attained by one problem: every
/// operand `max_operand` and every operator the one that makes the running value largest.
/// With `ops = "-"` they are loose, as a subtraction cannot both take the largest operand and
/// keep the running value.
///
/// # Panics
///
/// If `config` does not pass [`ArithConfig::validate`].
pub fn max_chars(config: &ArithConfig) -> (usize, usize) {
    if let Err(e) = config.validate() {
        panic!("{e}");
    }
    let ops = config.operators();
    let m = i128::from(config.max_operand);
    let operand = digits(m);
    // Each operation is monotone in the running value (a subtraction's largest result is
    // subtracting 0), so the largest value after each step is the best op applied to the
    // previous largest value.
    let mut largest = m;
    let mut solution = 0;
    for _ in 0..config.steps {
        let next = ops
            .iter()
            .map(|&op| {
                if op == '-' {
                    largest
                } else {
                    apply(op, largest, m)
                }
            })
            .max()
            .expect("ops is non-empty");
        // `a?b=<<a?b=c>>c\n`
        solution += 2 * (digits(largest) + 1 + operand) + 2 * digits(next) + 7;
        largest = next;
    }
    solution += "#### ".len() + digits(largest);
    let question =
        PREFIX.len() + 2 * (config.steps - 1) + (config.steps + 1) * operand + config.steps + 1;
    (question, solution)
}

/// Every character a synthetic problem or solution may contain; a character's id is its
/// index. Fixed for every config. No id is reserved: `VOCABULARY.len()` is the first free id.
pub const VOCABULARY: &[char] = &[
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', // digits: id = value
    '+', '-', '*', '(', ')', '=', '<', '>', '#', '?', ' ', '\n', // punctuation
    'W', 'h', 'a', 't', 'i', 's', // "What is"
];

/// A character outside [`VOCABULARY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("character {ch:?} at position {position} is not in the synthetic vocabulary")]
pub struct UnknownChar {
    /// The character.
    pub ch: char,
    /// Its index in the text, in characters (not bytes).
    pub position: usize,
}

/// An id that is no index of [`VOCABULARY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("id {id} at position {position} is not in the synthetic vocabulary (size {})", VOCABULARY.len())]
pub struct UnknownId {
    /// The id.
    pub id: u32,
    /// Its index in the id sequence.
    pub position: usize,
}

/// The ids of `text`, one per character.
pub fn encode(text: &str) -> Result<Vec<u32>, UnknownChar> {
    text.chars()
        .enumerate()
        .map(|(position, ch)| {
            VOCABULARY
                .iter()
                .position(|&v| v == ch)
                .map(|id| id as u32)
                .ok_or(UnknownChar { ch, position })
        })
        .collect()
}

/// The text of `ids`; the inverse of [`encode`].
pub fn decode(ids: &[u32]) -> Result<String, UnknownId> {
    ids.iter()
        .enumerate()
        .map(|(position, &id)| {
            VOCABULARY
                .get(id as usize)
                .copied()
                .ok_or(UnknownId { id, position })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::arith::{evaluate, Limits};
    use crate::verify;

    fn config(steps: usize, max_operand: u64, ops: &str) -> ArithConfig {
        ArithConfig {
            steps,
            max_operand,
            ops: ops.into(),
        }
    }

    #[test]
    fn format_matches_gsm8k() {
        let p = problem(&config(3, 99, "+-*"), 7, 3);
        let lines: Vec<&str> = p.solution.lines().collect();
        assert_eq!(lines.len(), 4, "{p:?}");
        assert_eq!(lines[3], format!("#### {}", p.answer));
        assert!(p.question.starts_with("What is ((") && p.question.ends_with('?'));
        let one = problem(&config(1, 9, "+"), 0, 0);
        let (a, b) = one.question["What is ".len()..one.question.len() - 1]
            .split_once('+')
            .unwrap();
        assert_eq!(
            one.solution,
            format!("{a}+{b}=<<{a}+{b}={0}>>{0}\n#### {0}", one.answer)
        );
    }

    #[test]
    fn deterministic_in_seed_and_index() {
        let c = ArithConfig::default();
        for i in 0..50 {
            assert_eq!(problem(&c, 3, i), problem(&c, 3, i));
        }
        assert_ne!(problem(&c, 3, 0), problem(&c, 4, 0));
        // Operator order in the config does not matter.
        assert_eq!(
            problem(&config(2, 9, "*-+"), 1, 2),
            problem(&config(2, 9, "+-*"), 1, 2)
        );
    }

    #[test]
    fn indices_give_varied_problems() {
        let c = config(2, 9, "+-*");
        let distinct: HashSet<String> = (0..100).map(|i| problem(&c, 0, i).question).collect();
        assert!(distinct.len() >= 90, "{} distinct", distinct.len());
        let ops: HashSet<char> = (0..100)
            .flat_map(|i| problem(&c, 0, i).question.chars().collect::<Vec<_>>())
            .filter(|c| "+-*".contains(*c))
            .collect();
        assert_eq!(ops.len(), 3);
    }

    #[test]
    fn every_gold_solution_verifies() {
        for steps in [1, 2, 4] {
            for max_operand in [9, 99] {
                for ops in ["+-*", "-", "*"] {
                    let c = config(steps, max_operand, ops);
                    for i in 0..2000 {
                        let p = problem(&c, 11, i);
                        let gold = p.answer.to_string();
                        let v = verify(&p.solution, Some(&gold));
                        assert_eq!(v.strict_correct, Some(true), "{p:?}");
                        assert_eq!(v.flexible_correct, Some(true), "{p:?}");
                        for mode in [&v.annotation, &v.free_text] {
                            assert_eq!(mode.candidates(), steps, "{p:?} {mode:?}");
                            assert_eq!(mode.checked, steps, "{p:?} {mode:?}");
                            assert_eq!(mode.wrong, 0, "{p:?} {mode:?}");
                            assert_eq!(mode.rounded, 0, "{p:?} {mode:?}");
                        }
                        // The question's expression has the answer's value.
                        let expr = &p.question["What is ".len()..p.question.len() - 1];
                        let value = evaluate(expr, &Limits::default()).unwrap();
                        assert_eq!(value.to_string(), gold, "{p:?}");
                        assert!(p.answer >= 0 && !p.solution.contains("=-"), "{p:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn largest_config_fits() {
        let c = config(8, 999, "*");
        let p = problem(&c, 0, 0);
        assert!(verify(&p.solution, Some(&p.answer.to_string())).strict_correct == Some(true));
        let (q, s) = max_chars(&c);
        assert!(p.question.chars().count() <= q && p.solution.chars().count() <= s);
    }

    #[test]
    fn max_chars_bounds_hold_and_are_attained() {
        for steps in [1, 2, 4, 8] {
            for max_operand in [1, 9, 99, 999] {
                for ops in ["+-*", "+", "-", "*", "+-"] {
                    let c = config(steps, max_operand, ops);
                    let (q, s) = max_chars(&c);
                    for i in 0..300 {
                        let p = problem(&c, 5, i);
                        assert!(p.question.chars().count() <= q, "{c:?} {p:?}");
                        assert!(p.solution.chars().count() <= s, "{c:?} {p:?}");
                    }
                }
            }
        }
        // Small enough for the extreme problem to come up.
        let c = config(1, 9, "+");
        let (q, s) = max_chars(&c);
        assert_eq!(
            (q, s),
            ("What is 9+9?".len(), "9+9=<<9+9=18>>18\n#### 18".len())
        );
        let longest = (0..2000)
            .map(|i| problem(&c, 0, i))
            .fold((0, 0), |(a, b), p| {
                (a.max(p.question.len()), b.max(p.solution.len()))
            });
        assert_eq!(longest, (q, s));
    }

    #[test]
    fn encode_decode_round_trip() {
        for i in 0..200 {
            let p = problem(&config(4, 99, "+-*"), 2, i);
            let text = format!("{}\n{}", p.question, p.solution);
            let ids = encode(&text).unwrap();
            assert!(ids.iter().all(|&id| (id as usize) < VOCABULARY.len()));
            assert_eq!(decode(&ids).unwrap(), text);
        }
        assert_eq!(encode("0189").unwrap(), vec![0, 1, 8, 9]);
        let distinct: HashSet<char> = VOCABULARY.iter().copied().collect();
        assert_eq!(distinct.len(), VOCABULARY.len());
    }

    #[test]
    fn unknown_characters_and_ids_are_reported() {
        assert_eq!(
            encode("What is 2÷3?"),
            Err(UnknownChar {
                ch: '÷',
                position: 9
            })
        );
        let err = encode("1/2").unwrap_err();
        assert_eq!((err.ch, err.position), ('/', 1));
        assert!(err.to_string().contains("'/'") && err.to_string().contains("position 1"));
        let n = VOCABULARY.len() as u32;
        assert_eq!(decode(&[1, 2, n]), Err(UnknownId { id: n, position: 2 }));
    }

    #[test]
    fn config_defaults_and_validation() {
        let c: ArithConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, ArithConfig::default());
        assert_eq!(c, config(2, 9, "+-*"));
        assert!(c.validate().is_ok());
        let err = serde_json::from_str::<ArithConfig>(r#"{"step": 3}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");

        let rejects = |c: ArithConfig, field: &str, range: &str| {
            let e = c.validate().unwrap_err();
            assert!(e.contains(field) && e.contains(range), "{e}");
        };
        rejects(config(0, 9, "+"), "steps", "1..=8");
        rejects(config(9, 9, "+"), "steps", "1..=8");
        rejects(config(2, 0, "+"), "max_operand", "1..=999");
        rejects(config(2, 1000, "+"), "max_operand", "1..=999");
        for ops in ["", "/", "+-/", "++", "+ "] {
            rejects(config(2, 9, ops), "ops", "\"+-*\"");
        }
        for ops in ["+", "-", "*", "*+", "-*+"] {
            assert!(config(8, 999, ops).validate().is_ok());
        }
    }

    #[test]
    #[should_panic(expected = "steps must be in")]
    fn problem_refuses_invalid_config() {
        problem(&config(0, 9, "+"), 0, 0);
    }
}
