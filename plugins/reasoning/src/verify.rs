//! Step verification of one completion, in two separately reported modes.
//!
//! A **step** is one `=` link: `a = b` claims the value of `a` equals the value of `b`. A chain
//! `a = b = c` is two steps, `a = b` and `b = c`, each checked against the *previous side*, so
//! `1+2+3 = 3+3 = 7` is caught at its second step (6 vs 7). Steps are numbered in text order,
//! annotation steps and free-text steps separately.
//!
//! # Annotation mode
//!
//! Every `<<…>>` on one line (no `<`, `>` or newline inside) is an annotation; its content is
//! split at `=` and every side must be a whole arithmetic expression ([`crate::arith`]). An
//! annotation without `=` is one unparseable step.
//!
//! # Free-text mode
//!
//! Annotations are removed first (as GSM8K's plain text is made), then each line is scanned
//! for single `=` signs (not `==`, `<=`, `>=`, `!=`, `=>`). Each `=` is a *candidate* step.
//! Its sides are the longest arithmetic runs touching it: a character counts as arithmetic
//! when it is a digit, space, parenthesis, a `.` before a digit, a thousands comma (after a
//! digit, before exactly three digits), a `$` before a number, a `%` after a number or `)`, a
//! `-` before an operand, or a binary operator (`+ * / ^ ** x × ÷ ·`) with an operand on both
//! sides (`x` only standing alone). Unmatched parentheses at the edge of a run are cut off.
//! A candidate is **skipped** (counted, not checked) when a side
//!
//! * has no digit (`1 hour = 60 minutes`, `x = 5`);
//! * is a number glued to a word on its outer edge on the left (`Q2 = 5`);
//! * continues into prose: the left side follows an operator or one of the words *of, times,
//!   by, plus, minus, over, into, divided, multiplied, than, per, less, more, and, half, twice,
//!   double, triple* (`20% of 50 = 10`, `y * 3 = 6`); the right side is followed by an
//!   operator or one of *of, times, by, plus, minus, over, into, divided, multiplied*
//!   (`6 = 2 times 3`);
//! * starts with a `-` that follows a word (`X - 5 = 10`).
//!
//! A leading `-` followed by a space is a dash or list bullet, not a sign, and is dropped. A
//! unit glued to the right side (`= 12km`) is allowed. A side that passes these tests but does
//! not parse is **unparseable**.
//!
//! # Comparison and rounding
//!
//! Values are compared exactly. When the right side of a step is a single literal written
//! with `d ≥ 1` decimals of value ([`crate::arith::literal_decimals`]: a `%` adds 2), the step
//! is also accepted, as **rounded**, if it equals the exact left value rounded to `d` decimals
//! with ties either way, i.e. `|left − right| ≤ ½·10^−d`: `10/3 = 3.33`, `2/3 = 0.67`,
//! `1/3 = 33%`. An integer right side gets no tolerance (`7/2 = 3` is wrong), nor does a
//! right side that is an expression. Division by zero makes a step wrong.

use std::sync::LazyLock;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Pow, Signed};
use regex::Regex;
use serde::Serialize;

use crate::answer::{answers_match, extract_flexible, StrictMatch};
use crate::arith::{display, evaluate, literal_decimals, EvalError, Limits};

static ANNOTATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<<([^<>\n]*)>>").expect("valid regex"));

/// The result of checking one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Both sides have the same exact value.
    Correct,
    /// The right side is the left value rounded to `decimals` decimals (see the module docs).
    Rounded {
        /// Decimals of the stated value.
        decimals: u32,
    },
    /// The sides differ (or one divides by zero).
    Wrong {
        /// Exact value of the left side, or `undefined`.
        left_value: String,
        /// Exact value of the right side, or `undefined`.
        right_value: String,
    },
    /// A side looked like arithmetic but could not be evaluated.
    Unparseable {
        /// The parser's message.
        reason: String,
    },
    /// Not an arithmetic step (free-text mode only).
    Skipped {
        /// Which rule skipped it.
        reason: String,
    },
}

impl Outcome {
    /// Correct, rounded or wrong: the step was actually checked.
    pub fn is_checked(&self) -> bool {
        matches!(
            self,
            Outcome::Correct | Outcome::Rounded { .. } | Outcome::Wrong { .. }
        )
    }
}

/// One `=` link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// 1-based line of the completion.
    pub line: usize,
    /// Left side as compared (empty when there is none).
    pub left: String,
    /// Right side as compared (empty when there is none).
    pub right: String,
    /// What checking found.
    pub outcome: Outcome,
}

/// The steps of one mode and their counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModeReport {
    /// Every candidate step in text order.
    pub steps: Vec<Step>,
    /// Steps checked: correct, rounded or wrong.
    pub checked: usize,
    /// Steps found wrong.
    pub wrong: usize,
    /// Steps accepted only by the rounding rule.
    pub rounded: usize,
    /// Steps skipped as not arithmetic.
    pub skipped: usize,
    /// Indices (into `steps`) of unparseable steps.
    pub unparseable: Vec<usize>,
    /// Index (into `steps`) of the first wrong step.
    pub first_wrong: Option<usize>,
}

impl ModeReport {
    fn from_steps(steps: Vec<Step>) -> Self {
        let mut r = ModeReport::default();
        for (i, s) in steps.iter().enumerate() {
            match &s.outcome {
                Outcome::Correct => r.checked += 1,
                Outcome::Rounded { .. } => {
                    r.checked += 1;
                    r.rounded += 1;
                }
                Outcome::Wrong { .. } => {
                    r.checked += 1;
                    r.wrong += 1;
                    r.first_wrong.get_or_insert(i);
                }
                Outcome::Unparseable { .. } => r.unparseable.push(i),
                Outcome::Skipped { .. } => r.skipped += 1,
            }
        }
        r.steps = steps;
        r
    }

    /// Candidate steps: every annotation link, or every `=` in the free text.
    pub fn candidates(&self) -> usize {
        self.steps.len()
    }

    /// `checked / candidates`; `None` when there is no candidate.
    pub fn coverage(&self) -> Option<f64> {
        (!self.steps.is_empty()).then(|| self.checked as f64 / self.steps.len() as f64)
    }

    /// The unparseable steps themselves.
    pub fn unparseable_steps(&self) -> impl Iterator<Item = &Step> {
        self.unparseable.iter().map(|&i| &self.steps[i])
    }
}

/// Everything found about one completion.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    /// Strict-match extraction (`#### n`, or `The answer is n.` under
    /// [`StrictMatch::TheAnswerIs`]), if any.
    pub strict_answer: Option<String>,
    /// Flexible extraction (last number), if any.
    pub flexible_answer: Option<String>,
    /// Strict answer equals the gold answer; `None` without a gold answer.
    pub strict_correct: Option<bool>,
    /// Flexible answer equals the gold answer; `None` without a gold answer.
    pub flexible_correct: Option<bool>,
    /// `<<expr=value>>` annotation steps.
    pub annotation: ModeReport,
    /// Free-text `a = b = c` steps.
    pub free_text: ModeReport,
}

/// The verifier: [`Limits`] for every evaluation, and the strict-match rule for the final
/// answer (the steps are checked the same way under either rule).
#[derive(Debug, Clone, Copy, Default)]
pub struct Verifier {
    /// Size limits of the evaluator.
    pub limits: Limits,
    /// Strict-match extraction: `#### n` (default) or `The answer is n.` (`gsm8k-cot`).
    pub strict: StrictMatch,
}

/// [`Verifier::verify`] with default limits.
pub fn verify(completion: &str, gold: Option<&str>) -> Verification {
    Verifier::default().verify(completion, gold)
}

impl Verifier {
    /// Verifies `completion`; `gold` is the gold final answer (`$` and commas allowed).
    pub fn verify(&self, completion: &str, gold: Option<&str>) -> Verification {
        let strict = self.strict.extract(completion);
        let flexible = extract_flexible(completion);
        let judge = |a: Option<&str>| gold.map(|g| a.is_some_and(|a| answers_match(a, g)));
        Verification {
            strict_answer: strict.map(str::to_owned),
            flexible_answer: flexible.map(str::to_owned),
            strict_correct: judge(strict),
            flexible_correct: judge(flexible),
            annotation: self.annotations(completion),
            free_text: self.free_text(completion),
        }
    }

    /// Annotation mode alone.
    pub fn annotations(&self, completion: &str) -> ModeReport {
        let mut steps = Vec::new();
        for (n, line) in completion.split('\n').enumerate() {
            for cap in ANNOTATION.captures_iter(line) {
                let content = cap.get(1).expect("group 1").as_str();
                let sides: Vec<&str> = content.split('=').map(str::trim).collect();
                if sides.len() < 2 {
                    steps.push(Step {
                        line: n + 1,
                        left: content.trim().to_owned(),
                        right: String::new(),
                        outcome: Outcome::Unparseable {
                            reason: "no '=' in annotation".into(),
                        },
                    });
                    continue;
                }
                let values: Vec<_> = sides.iter().map(|s| evaluate(s, &self.limits)).collect();
                for i in 0..sides.len() - 1 {
                    steps.push(Step {
                        line: n + 1,
                        left: sides[i].to_owned(),
                        right: sides[i + 1].to_owned(),
                        outcome: self.compare(&values[i], &values[i + 1], sides[i], sides[i + 1]),
                    });
                }
            }
        }
        ModeReport::from_steps(steps)
    }

    /// Free-text mode alone (annotations are removed first).
    pub fn free_text(&self, completion: &str) -> ModeReport {
        let plain = ANNOTATION.replace_all(completion, "");
        let mut steps = Vec::new();
        for (n, line) in plain.split('\n').enumerate() {
            free_text_line(line, n + 1, self, &mut steps);
        }
        ModeReport::from_steps(steps)
    }

    fn compare(
        &self,
        left: &Result<BigRational, EvalError>,
        right: &Result<BigRational, EvalError>,
        left_text: &str,
        right_text: &str,
    ) -> Outcome {
        let undefined = |v: &Result<BigRational, EvalError>| match v {
            Ok(v) => display(v),
            Err(_) => "undefined".to_owned(),
        };
        match (left, right) {
            (Ok(l), Ok(r)) => {
                // Readings of the stated right side: its value, and for `N%` after a left side
                // without `%`, the number N itself (`18/450 x 100 = 4%`).
                let decimals = literal_decimals(right_text, &self.limits);
                let mut readings = vec![(r.clone(), decimals)];
                if decimals.is_some()
                    && right_text.trim_end().ends_with('%')
                    && !left_text.contains('%')
                {
                    let hundred = BigRational::from_integer(BigInt::from(100));
                    readings.push((r * hundred, decimals.map(|d| d.saturating_sub(2))));
                }
                if readings.iter().any(|(r, _)| l == r) {
                    return Outcome::Correct;
                }
                for (r, d) in &readings {
                    if let Some(d) = d.filter(|&d| d >= 1) {
                        // |l - r| * 2 * 10^d <= 1
                        let scale = BigRational::from_integer(Pow::pow(BigInt::from(10), d) * 2);
                        if (l - r).abs() * scale <= BigRational::from_integer(1.into()) {
                            return Outcome::Rounded { decimals: d };
                        }
                    }
                }
                Outcome::Wrong {
                    left_value: display(l),
                    right_value: display(r),
                }
            }
            (Err(e), _) | (_, Err(e)) if *e != EvalError::DivisionByZero => Outcome::Unparseable {
                reason: e.to_string(),
            },
            _ => Outcome::Wrong {
                left_value: undefined(left),
                right_value: undefined(right),
            },
        }
    }
}

const LEFT_CONNECTIVES: &[&str] = &[
    "of",
    "times",
    "by",
    "plus",
    "minus",
    "over",
    "into",
    "divided",
    "multiplied",
    "than",
    "per",
    "less",
    "more",
    "and",
    "half",
    "twice",
    "double",
    "triple",
];
const RIGHT_CONNECTIVES: &[&str] = &[
    "of",
    "times",
    "by",
    "plus",
    "minus",
    "over",
    "into",
    "divided",
    "multiplied",
];
const OPERATOR_CHARS: &[char] = &['+', '-', '−', '–', '*', '/', '^', '×', '÷', '·'];

struct Line {
    chars: Vec<char>,
}

impl Line {
    fn get(&self, i: isize) -> Option<char> {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.chars.get(i).copied())
    }

    fn prev_nonspace(&self, i: usize) -> Option<(usize, char)> {
        self.chars[..i]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, c)| !c.is_whitespace())
            .map(|(j, &c)| (j, c))
    }

    fn next_nonspace(&self, i: usize) -> Option<(usize, char)> {
        self.chars
            .iter()
            .enumerate()
            .skip(i)
            .find(|(_, c)| !c.is_whitespace())
            .map(|(j, &c)| (j, c))
    }

    fn operand_end_before(&self, i: usize) -> bool {
        matches!(self.prev_nonspace(i), Some((_, c)) if c.is_ascii_digit() || c == ')' || c == '%')
    }

    fn operand_start_at(&self, j: usize) -> bool {
        match self.next_nonspace(j) {
            Some((k, c)) => {
                c.is_ascii_digit()
                    || c == '('
                    || c == '-'
                    || c == '−'
                    || c == '–'
                    || (c == '.' && self.get(k as isize + 1).is_some_and(|d| d.is_ascii_digit()))
                    || (c == '$'
                        && self.next_nonspace(k + 1).is_some_and(|(m, d)| {
                            d.is_ascii_digit()
                                || (d == '.'
                                    && self.get(m as isize + 1).is_some_and(|e| e.is_ascii_digit()))
                        }))
            }
            None => false,
        }
    }

    /// Whether character `i` can belong to an arithmetic run (see the module docs).
    fn arith_mask(&self) -> Vec<bool> {
        let n = self.chars.len();
        let mut mask = vec![false; n];
        let digit_at = |k: usize| self.chars.get(k).is_some_and(char::is_ascii_digit);
        let mut i = 0;
        while i < n {
            let c = self.chars[i];
            let m = match c {
                '0'..='9' | '(' | ')' => true,
                c if c.is_whitespace() => true,
                '.' => digit_at(i + 1),
                ',' => {
                    i > 0
                        && digit_at(i - 1)
                        && digit_at(i + 1)
                        && digit_at(i + 2)
                        && digit_at(i + 3)
                        && !digit_at(i + 4)
                }
                '$' => match self.next_nonspace(i + 1) {
                    Some((k, c)) => c.is_ascii_digit() || (c == '.' && digit_at(k + 1)),
                    None => false,
                },
                '%' => self.operand_end_before(i),
                '-' | '−' | '–' => self.operand_start_at(i + 1),
                '*' if self.get(i as isize + 1) == Some('*') => {
                    let ok = self.operand_end_before(i) && self.operand_start_at(i + 2);
                    mask[i] = ok;
                    mask[i + 1] = ok;
                    i += 2;
                    continue;
                }
                '+' | '*' | '/' | '^' | '×' | '÷' | '·' => {
                    self.operand_end_before(i) && self.operand_start_at(i + 1)
                }
                'x' => {
                    !self.get(i as isize - 1).is_some_and(char::is_alphabetic)
                        && !self.get(i as isize + 1).is_some_and(char::is_alphabetic)
                        && self.operand_end_before(i)
                        && self.operand_start_at(i + 1)
                        && !matches!(self.next_nonspace(i + 1), Some((_, '-' | '−' | '–')))
                }
                _ => false,
            };
            mask[i] = m;
            i += 1;
        }
        mask
    }

    fn word_before(&self, i: usize) -> String {
        let mut j = i;
        while j > 0 && self.chars[j - 1].is_whitespace() {
            j -= 1;
        }
        let end = j;
        while j > 0 && self.chars[j - 1].is_alphabetic() {
            j -= 1;
        }
        self.chars[j..end].iter().collect::<String>().to_lowercase()
    }

    fn word_after(&self, i: usize) -> String {
        let mut j = i;
        while j < self.chars.len() && self.chars[j].is_whitespace() {
            j += 1;
        }
        let start = j;
        while j < self.chars.len() && self.chars[j].is_alphabetic() {
            j += 1;
        }
        self.chars[start..j]
            .iter()
            .collect::<String>()
            .to_lowercase()
    }

    fn text(&self, a: usize, b: usize) -> String {
        self.chars[a..b].iter().collect()
    }

    /// Trims whitespace from `[a, b)`.
    fn trim(&self, mut a: usize, mut b: usize) -> (usize, usize) {
        while a < b && self.chars[a].is_whitespace() {
            a += 1;
        }
        while b > a && self.chars[b - 1].is_whitespace() {
            b -= 1;
        }
        (a, b)
    }
}

/// An operator character in prose next to a side: `x` or `X` only when standing alone.
fn is_operator_like(line: &Line, i: usize, c: char) -> bool {
    if c == 'x' || c == 'X' {
        let alone = |k: isize| !line.get(k).is_some_and(char::is_alphabetic);
        return alone(i as isize - 1) && alone(i as isize + 1);
    }
    OPERATOR_CHARS.contains(&c)
}

fn is_equals(line: &Line, i: usize) -> bool {
    line.chars[i] == '='
        && !matches!(line.get(i as isize - 1), Some('<' | '>' | '!' | '='))
        && !matches!(line.get(i as isize + 1), Some('=' | '>'))
}

/// Characters that may touch the outer edge of a left side: anything else glued to it (a
/// letter, a digit, `:` of a time, `√`, `¢`, …) means the number belongs to something else.
const LEFT_OPENERS: &[char] = &['=', '(', '[', '{', '"', '\'', '“', '‘', ';'];

/// Where `[a, b)` is two operands side by side with only spaces between (`4 $5` of
/// `$20/$5 = 4 $5 bills`): the positions of those space runs, when the whole run does not
/// evaluate (a mixed number `3 1/2` does).
fn operand_breaks(line: &Line, a: usize, b: usize, limits: &Limits) -> Vec<usize> {
    let mut out = Vec::new();
    let mut k = a;
    while k < b {
        if line.chars[k].is_whitespace() && k > a && matches!(line.chars[k - 1], '0'..='9' | '%') {
            let mut e = k;
            while e < b && line.chars[e].is_whitespace() {
                e += 1;
            }
            if e < b && matches!(line.chars[e], '0'..='9' | '$' | '.') {
                out.push(k);
            }
            k = e;
        } else {
            k += 1;
        }
    }
    if !out.is_empty() && evaluate(&line.text(a, b), limits).is_ok() {
        out.clear();
    }
    out
}

/// Whether the single space at `k` separates thousands: 1–3 digits before, exactly three after.
fn space_thousands(line: &Line, k: usize) -> bool {
    let digit = |i: usize| line.chars.get(i).is_some_and(char::is_ascii_digit);
    let before = (0..k).rev().take_while(|&i| digit(i)).count();
    let lead_ok = (1..=3).contains(&before)
        && !(k > before && matches!(line.chars[k - before - 1], '.' | ','));
    lead_ok && digit(k + 1) && digit(k + 2) && digit(k + 3) && !digit(k + 4)
}

/// Checks shared by both sides of a free-text step.
fn side_common(line: &Line, a: usize, b: usize, which: &'static str) -> Result<(), &'static str> {
    if !line.chars[a..b].iter().any(char::is_ascii_digit) {
        return Err(if which == "left" {
            "left side is not arithmetic"
        } else {
            "right side is not arithmetic"
        });
    }
    // A number with a leading zero (`0900`, `00` of `8:00`) is a time or a code.
    for k in a..b {
        let starts_number = k == a || !matches!(line.chars[k - 1], '0'..='9' | '.' | ',');
        if starts_number
            && line.chars[k] == '0'
            && line.get(k as isize + 1).is_some_and(|c| c.is_ascii_digit())
        {
            return Err("a number with a leading zero (a time or a code)");
        }
    }
    Ok(())
}

/// The left side of the `=` at `eq`: `Ok((start, end))` or `Err(skip reason)`.
fn left_side(
    line: &Line,
    mask: &[bool],
    eq: usize,
    limits: &Limits,
) -> Result<(usize, usize), &'static str> {
    let mut j = eq;
    let mut unmatched: Vec<usize> = Vec::new();
    while j > 0 && mask[j - 1] {
        match line.chars[j - 1] {
            ')' => unmatched.push(j - 1),
            '(' if unmatched.pop().is_none() => break,
            _ => {}
        }
        j -= 1;
    }
    let start = unmatched.first().map_or(j, |&p| p + 1);
    let (mut a, b) = line.trim(start, eq);
    if let Some(&k) = operand_breaks(line, a, b, limits).last() {
        a = line.trim(k, b).0;
    }
    side_common(line, a, b, "left")?;
    let before_at = line.prev_nonspace(a);
    let before = before_at.map(|(_, c)| c);
    let first = line.chars[a];
    if matches!(first, '-' | '−' | '–') {
        if before.is_some_and(|c| c.is_alphanumeric() || c == ')' || c == '%') {
            return Err("left side continues into prose (a minus after a word)");
        }
        if line.get(a as isize + 1).is_some_and(char::is_whitespace) {
            // A dash or list bullet, not a sign.
            a = line.trim(a + 1, b).0;
        }
    } else if !(first.is_ascii_digit() || matches!(first, '(' | '$' | '.')) {
        return Err("left side continues into prose (it starts with an operator)");
    }
    if a > 0 && !line.chars[a - 1].is_whitespace() && !LEFT_OPENERS.contains(&line.chars[a - 1]) {
        return Err("left side is a number glued to a word or symbol");
    }
    if before_at.is_some_and(|(i, c)| is_operator_like(line, i, c)) {
        return Err("left side continues into prose (an operator before it)");
    }
    if LEFT_CONNECTIVES.contains(&line.word_before(a).as_str()) {
        return Err("left side continues into prose (a connective word before it)");
    }
    let side = line.text(a, b);
    if before != Some('=') && literal_decimals(&side, &Limits::default()).is_some() {
        return Err("left side is a lone number (a label, or the end of a prose expression)");
    }
    Ok((a, b))
}

/// The right side of the `=` at `eq`.
fn right_side(
    line: &Line,
    mask: &[bool],
    eq: usize,
    limits: &Limits,
) -> Result<(usize, usize), &'static str> {
    let mut k = eq + 1;
    let mut unmatched: Vec<usize> = Vec::new();
    while k < line.chars.len() && mask[k] {
        match line.chars[k] {
            '(' => unmatched.push(k),
            ')' if unmatched.pop().is_none() => break,
            _ => {}
        }
        k += 1;
    }
    let end = unmatched.first().copied().unwrap_or(k);
    let (mut a, mut b) = line.trim(eq + 1, end);
    if let Some(&k) = operand_breaks(line, a, b, limits).first() {
        if space_thousands(line, k) {
            return Err("right side has space thousands separators (`18 000`)");
        }
        b = line.trim(a, k).1;
    }
    side_common(line, a, b, "right")?;
    if matches!(line.chars[a], '-' | '−' | '–')
        && line.get(a as isize + 1).is_some_and(char::is_whitespace)
    {
        a = line.trim(a + 1, b).0;
    }
    match line.get(b as isize) {
        Some(':') => return Err("right side is a time"),
        Some('(') => return Err("right side continues into prose (implicit multiplication)"),
        Some(c) if c.is_alphabetic() => {
            let word_len = line.chars[b..]
                .iter()
                .take_while(|c| c.is_alphabetic())
                .count();
            if word_len == 1 {
                return Err("right side is a number glued to a letter (algebra)");
            }
        }
        _ => {}
    }
    if line
        .next_nonspace(b)
        .is_some_and(|(i, c)| is_operator_like(line, i, c))
    {
        return Err("right side continues into prose (an operator after it)");
    }
    let word = line.word_after(b);
    if RIGHT_CONNECTIVES.contains(&word.as_str()) {
        return Err("right side continues into prose (a connective word after it)");
    }
    if word == "and" && is_mixed_fraction(line, b) {
        return Err("right side is a mixed number (`5 and 2/3`)");
    }
    Ok((a, b))
}

/// Whether ` and a/b` (optionally parenthesised) follows position `b`, not followed by `=`.
fn is_mixed_fraction(line: &Line, b: usize) -> bool {
    static FRACTION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\s*and\s+\(?\d+\s*/\s*\d+\)?(\s*$|\s*[^=\s\d])").expect("valid regex")
    });
    FRACTION.is_match(&line.text(b, line.chars.len()))
}

fn free_text_line(text: &str, line_no: usize, verifier: &Verifier, steps: &mut Vec<Step>) {
    if !text.contains('=') {
        return;
    }
    let line = Line {
        chars: text.chars().collect(),
    };
    let mask = line.arith_mask();
    for eq in (0..line.chars.len()).filter(|&i| is_equals(&line, i)) {
        let left = left_side(&line, &mask, eq, &verifier.limits);
        let right = right_side(&line, &mask, eq, &verifier.limits);
        let shown = |s: &Result<(usize, usize), &str>| match s {
            Ok((a, b)) => line.text(*a, *b),
            Err(_) => String::new(),
        };
        let (left_text, right_text) = (shown(&left), shown(&right));
        let outcome = match (&left, &right) {
            (Err(reason), _) | (_, Err(reason)) => Outcome::Skipped {
                reason: (*reason).to_owned(),
            },
            (Ok(_), Ok(_)) => verifier.compare(
                &evaluate(&left_text, &verifier.limits),
                &evaluate(&right_text, &verifier.limits),
                &left_text,
                &right_text,
            ),
        };
        steps.push(Step {
            line: line_no,
            left: left_text,
            right: right_text,
            outcome,
        });
    }
}
