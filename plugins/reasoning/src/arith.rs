//! Exact rational arithmetic for the expressions that appear in GSM8K solutions.
//!
//! Every value is a [`BigRational`]; no float is ever used. The grammar, loosest binding first:
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | 'x' | '×' | '·' | '/' | '÷' | '//') unary | juxtaposed)*
//! juxtaposed := power        only right after `)`, or when it starts with `(`: `2(3)`, `(1/2)8`
//! unary   := ('-' | '−' | '–' | '+') unary | power    ('–' is an en dash)
//! power   := postfix (('**' | '^') unary)?        right-associative, as in Python
//! postfix := primary '%'*                         each '%' divides by 100
//! primary := number | '(' expr ')'
//! number  := '$'? digits (',' ddd)* ('.' digits)? | '$'? '.' digits | mixed
//! mixed   := digits ' '+ digits '/' digits       `3 1/2` is 7/2 (not after a '/')
//! ```
//!
//! * `//` is Python's floor division (two GSM8K train annotations use it: `<<560//10=56>>`).
//! * Juxtaposition multiplies with the precedence of `*`: `2(40+9)` is 98, `(1/2) 278` is 139.
//!   Two bare numbers side by side (`2 3`) are unparseable, except a mixed number.
//!
//! * `-2**2` is `-4` and `2**-1` is `1/2`, as in Python.
//! * `x` is multiplication only where it stands alone between two operands (`3 x 4`, `3x4`);
//!   an `x` touching a letter, or anywhere else, makes the text unparseable. `X` is never an
//!   operator (GSM8K free text uses it as an unknown).
//! * A comma is a thousands separator only inside a number: at most three digits before the
//!   first comma and exactly three digits after each (`1,000`, `12,345.5`); anything else is
//!   unparseable.
//! * `%` is postfix and divides the value it follows by 100 (`60%` is `3/5`, `12/20 x 100%` is
//!   `3/5`), the rule proposed in `shared/reference/datasets-and-sandbox.md` §2. It binds tighter
//!   than every operator: `50%*2` is `1`, `(1+1)%` is `1/50`.
//! * `$` may prefix a number (spaces allowed between) and is ignored.
//! * Exponents must evaluate to integers; `2**0.5` is [`EvalError::Unsupported`].
//!
//! **Bounded work.** [`Limits`] bounds the input length, the digits of one literal, the bit
//! size of every intermediate numerator and denominator, the exponent and the nesting depth.
//! Every check happens *before* the expensive operation (an exponentiation predicts its result
//! size from the operands), so a thousands-digit literal or an exponent tower is refused with
//! [`EvalError::TooLarge`] in time linear in the input, never by running out of time or stack.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Pow, Signed, ToPrimitive, Zero};

/// Size limits that keep one evaluation bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest expression text, in bytes.
    pub max_input_len: usize,
    /// Most decimal digits in one numeric literal (integer and fraction parts together).
    pub max_literal_digits: usize,
    /// Most bits in any numerator or denominator, literals and intermediate results alike.
    pub max_bits: u64,
    /// Largest absolute value of an exponent.
    pub max_exponent: u32,
    /// Deepest nesting of parentheses, unary signs and exponents.
    pub max_depth: usize,
}

impl Default for Limits {
    /// 4 KiB of text, 1,000-digit literals, 4,096-bit numbers (about 1,233 decimal digits),
    /// exponents up to 4,096 (still subject to the bit limit) and nesting depth 64.
    fn default() -> Self {
        Limits {
            max_input_len: 4096,
            max_literal_digits: 1000,
            max_bits: 4096,
            max_exponent: 4096,
            max_depth: 64,
        }
    }
}

/// Why an expression has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The text is not an arithmetic expression of the grammar.
    #[error("unparseable at byte {at}: {message}")]
    Syntax {
        /// Byte offset in the expression text.
        at: usize,
        /// What was wrong.
        message: String,
    },
    /// A size limit of [`Limits`] was hit; nothing larger was computed.
    #[error("too large: {0}")]
    TooLarge(String),
    /// Division by zero, or zero raised to a negative power.
    #[error("division by zero")]
    DivisionByZero,
    /// A well-formed expression outside the exact-rational fragment (a non-integer exponent).
    #[error("unsupported: {0}")]
    Unsupported(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Num(BigRational),
    Plus,
    Minus,
    Times,
    /// A standalone `x`: multiplication only in binary-operator position.
    LetterX,
    Divide,
    /// `//`, Python's floor division.
    FloorDivide,
    Pow,
    Percent,
    LParen,
    RParen,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    at: usize,
}

fn syntax(at: usize, message: impl Into<String>) -> EvalError {
    EvalError::Syntax {
        at,
        message: message.into(),
    }
}

/// A scanned numeric literal: its value and the number of decimals written.
struct Literal {
    value: BigRational,
    decimals: u32,
    end: usize,
}

/// Scans a number starting at byte `start` of `s` (which must be a digit or a `.`).
fn scan_number(s: &str, start: usize, limits: &Limits) -> Result<Literal, EvalError> {
    let b = s.as_bytes();
    let mut i = start;
    let mut int_digits = String::new();
    let mut digits_total = 0usize;
    let push = |out: &mut String, c: u8, total: &mut usize| -> Result<(), EvalError> {
        *total += 1;
        if *total > limits.max_literal_digits {
            return Err(EvalError::TooLarge(format!(
                "a literal with more than {} digits",
                limits.max_literal_digits
            )));
        }
        out.push(c as char);
        Ok(())
    };
    let mut group_len = 0usize; // digits since the last comma (or the start)
    let mut saw_comma = false;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            push(&mut int_digits, c, &mut digits_total)?;
            group_len += 1;
            i += 1;
        } else if c == b',' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            // A thousands separator: at most 3 digits before the first, exactly 3 between.
            if group_len == 0 || (saw_comma && group_len != 3) || (!saw_comma && group_len > 3) {
                return Err(syntax(i, "misplaced thousands separator"));
            }
            saw_comma = true;
            group_len = 0;
            i += 1;
        } else {
            break;
        }
    }
    if saw_comma && group_len != 3 {
        return Err(syntax(i, "a thousands group must have three digits"));
    }
    let mut frac_digits = String::new();
    if i < b.len() && b[i] == b'.' {
        if i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                push(&mut frac_digits, b[i], &mut digits_total)?;
                i += 1;
            }
        } else {
            return Err(syntax(i, "a decimal point must be followed by a digit"));
        }
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(syntax(start, "expected a number"));
    }
    if i < b.len() && (b[i] == b'.' || b[i] == b',') {
        return Err(syntax(i, "malformed number"));
    }
    let all = format!("{int_digits}{frac_digits}");
    let numer =
        BigInt::parse_bytes(all.as_bytes(), 10).ok_or_else(|| syntax(start, "bad digits"))?;
    let decimals = frac_digits.len() as u32;
    let denom = Pow::pow(BigInt::from(10u32), decimals);
    Ok(Literal {
        value: BigRational::new(numer, denom),
        decimals,
        end: i,
    })
}

/// The fraction of a mixed number (`3 1/2`): after an integer literal ending at `end`, one or
/// more spaces, then `digits/digits` with no space inside, not followed by another digit, `.`,
/// `/` or `,`. Returns the fraction's value and where it ends.
fn mixed_fraction(
    s: &str,
    end: usize,
    limits: &Limits,
) -> Result<Option<(BigRational, usize)>, EvalError> {
    let b = s.as_bytes();
    let mut i = end;
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    if i == end {
        return Ok(None);
    }
    let digits = |mut k: usize| {
        let start = k;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        (start, k)
    };
    let (n0, n1) = digits(i);
    if n1 == n0 || b.get(n1) != Some(&b'/') {
        return Ok(None);
    }
    let (d0, d1) = digits(n1 + 1);
    if d1 == d0 || matches!(b.get(d1), Some(b'0'..=b'9' | b'.' | b'/' | b',')) {
        return Ok(None);
    }
    if (n1 - n0) + (d1 - d0) > limits.max_literal_digits {
        return Err(EvalError::TooLarge(format!(
            "a literal with more than {} digits",
            limits.max_literal_digits
        )));
    }
    let num = BigInt::parse_bytes(&b[n0..n1], 10).expect("digits");
    let den = BigInt::parse_bytes(&b[d0..d1], 10).expect("digits");
    if den.is_zero() {
        return Err(EvalError::DivisionByZero);
    }
    Ok(Some((BigRational::new(num, den), d1)))
}

fn tokenize(s: &str, limits: &Limits) -> Result<Vec<Token>, EvalError> {
    if s.len() > limits.max_input_len {
        return Err(EvalError::TooLarge(format!(
            "an expression longer than {} bytes",
            limits.max_input_len
        )));
    }
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < s.len() {
        let c = s[i..].chars().next().expect("in bounds");
        let w = c.len_utf8();
        let simple = |kind: Kind| Token { kind, at: i };
        match c {
            c if c.is_whitespace() => {}
            '0'..='9' | '.' => {
                let lit = scan_number(s, i, limits)?;
                let mut value = lit.value;
                let mut end = lit.end;
                let after_slash = matches!(
                    out.last(),
                    Some(Token {
                        kind: Kind::Divide,
                        ..
                    })
                );
                if lit.decimals == 0 && !after_slash {
                    if let Some((frac, frac_end)) = mixed_fraction(s, end, limits)? {
                        value += frac;
                        end = frac_end;
                    }
                }
                out.push(simple(Kind::Num(value)));
                i = end;
                continue;
            }
            '$' => {
                let next = s[i + 1..].trim_start().bytes().next();
                if !matches!(next, Some(b'0'..=b'9' | b'.')) {
                    return Err(syntax(i, "'$' must prefix a number"));
                }
            }
            '+' => out.push(simple(Kind::Plus)),
            '-' | '−' | '–' => out.push(simple(Kind::Minus)),
            '*' if b.get(i + 1) == Some(&b'*') => {
                out.push(simple(Kind::Pow));
                i += 2;
                continue;
            }
            '*' | '×' | '·' => out.push(simple(Kind::Times)),
            '/' if b.get(i + 1) == Some(&b'/') => {
                out.push(simple(Kind::FloorDivide));
                i += 2;
                continue;
            }
            '/' | '÷' => out.push(simple(Kind::Divide)),
            '^' => out.push(simple(Kind::Pow)),
            '%' => out.push(simple(Kind::Percent)),
            '(' => out.push(simple(Kind::LParen)),
            ')' => out.push(simple(Kind::RParen)),
            'x' => {
                let before = s[..i].chars().next_back();
                let after = s[i + 1..].chars().next();
                if before.is_some_and(char::is_alphabetic) || after.is_some_and(char::is_alphabetic)
                {
                    return Err(syntax(i, "'x' inside a word"));
                }
                out.push(simple(Kind::LetterX));
            }
            other => return Err(syntax(i, format!("unexpected character {other:?}"))),
        }
        i += w;
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    limits: &'a Limits,
    len: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Kind> {
        self.tokens.get(self.pos).map(|t| &t.kind)
    }

    fn previous_is(&self, kind: &Kind) -> bool {
        self.pos > 0 && &self.tokens[self.pos - 1].kind == kind
    }

    fn at(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.len, |t| t.at)
    }

    fn check(&self, v: BigRational) -> Result<BigRational, EvalError> {
        let bits = v.numer().bits().max(v.denom().bits());
        if bits > self.limits.max_bits {
            return Err(EvalError::TooLarge(format!(
                "a value of more than {} bits",
                self.limits.max_bits
            )));
        }
        Ok(v)
    }

    fn expr(&mut self, depth: usize) -> Result<BigRational, EvalError> {
        let mut acc = self.term(depth)?;
        loop {
            match self.peek() {
                Some(Kind::Plus) => {
                    self.pos += 1;
                    let rhs = self.term(depth)?;
                    acc = self.check(acc + rhs)?;
                }
                Some(Kind::Minus) => {
                    self.pos += 1;
                    let rhs = self.term(depth)?;
                    acc = self.check(acc - rhs)?;
                }
                _ => return Ok(acc),
            }
        }
    }

    fn term(&mut self, depth: usize) -> Result<BigRational, EvalError> {
        let mut acc = self.unary(depth)?;
        loop {
            match self.peek() {
                Some(Kind::Times | Kind::LetterX) => {
                    self.pos += 1;
                    let rhs = self.unary(depth)?;
                    acc = self.check(acc * rhs)?;
                }
                Some(Kind::Divide) => {
                    self.pos += 1;
                    let rhs = self.unary(depth)?;
                    if rhs.is_zero() {
                        return Err(EvalError::DivisionByZero);
                    }
                    acc = self.check(acc / rhs)?;
                }
                Some(Kind::FloorDivide) => {
                    self.pos += 1;
                    let rhs = self.unary(depth)?;
                    if rhs.is_zero() {
                        return Err(EvalError::DivisionByZero);
                    }
                    acc =
                        self.check(BigRational::from_integer((acc / rhs).floor().to_integer()))?;
                }
                // Juxtaposition: `2(3)`, `(1/2)(20)`, `(1/4)24`, `50%(8)`.
                Some(Kind::LParen) => {
                    let rhs = self.power(depth)?;
                    acc = self.check(acc * rhs)?;
                }
                Some(Kind::Num(_)) if self.previous_is(&Kind::RParen) => {
                    let rhs = self.power(depth)?;
                    acc = self.check(acc * rhs)?;
                }
                _ => return Ok(acc),
            }
        }
    }

    fn deeper(&self, depth: usize) -> Result<usize, EvalError> {
        if depth >= self.limits.max_depth {
            return Err(EvalError::TooLarge(format!(
                "nesting deeper than {}",
                self.limits.max_depth
            )));
        }
        Ok(depth + 1)
    }

    fn unary(&mut self, depth: usize) -> Result<BigRational, EvalError> {
        let depth = self.deeper(depth)?;
        match self.peek() {
            Some(Kind::Minus) => {
                self.pos += 1;
                Ok(-self.unary(depth)?)
            }
            Some(Kind::Plus) => {
                self.pos += 1;
                self.unary(depth)
            }
            _ => self.power(depth),
        }
    }

    fn power(&mut self, depth: usize) -> Result<BigRational, EvalError> {
        let base = self.postfix(depth)?;
        if self.peek() != Some(&Kind::Pow) {
            return Ok(base);
        }
        self.pos += 1;
        let exp = self.unary(depth)?;
        if !exp.is_integer() {
            return Err(EvalError::Unsupported("a non-integer exponent".into()));
        }
        let e = exp
            .to_integer()
            .abs()
            .to_u32()
            .filter(|&e| e <= self.limits.max_exponent)
            .ok_or_else(|| {
                EvalError::TooLarge(format!(
                    "an exponent larger than {}",
                    self.limits.max_exponent
                ))
            })?;
        if base.is_zero() && exp.is_negative() {
            return Err(EvalError::DivisionByZero);
        }
        // Predict the size before computing: bits(b^e) <= e * bits(b).
        let base_bits = base.numer().bits().max(base.denom().bits());
        let is_unit = base.numer().abs().is_one() && base.denom().is_one();
        if !is_unit
            && !base.is_zero()
            && base_bits.saturating_mul(u64::from(e)) > self.limits.max_bits + 64
        {
            return Err(EvalError::TooLarge(format!(
                "a power of more than {} bits",
                self.limits.max_bits
            )));
        }
        let v = Pow::pow(&base, e);
        let v = if exp.is_negative() { v.recip() } else { v };
        self.check(v)
    }

    fn postfix(&mut self, depth: usize) -> Result<BigRational, EvalError> {
        let mut v = self.primary(depth)?;
        while self.peek() == Some(&Kind::Percent) {
            self.pos += 1;
            v = self.check(v / BigRational::from_integer(BigInt::from(100)))?;
        }
        Ok(v)
    }

    fn primary(&mut self, depth: usize) -> Result<BigRational, EvalError> {
        let at = self.at();
        match self.tokens.get(self.pos).map(|t| t.kind.clone()) {
            Some(Kind::Num(v)) => {
                self.pos += 1;
                self.check(v)
            }
            Some(Kind::LParen) => {
                let depth = self.deeper(depth)?;
                self.pos += 1;
                let v = self.expr(depth)?;
                if self.peek() != Some(&Kind::RParen) {
                    return Err(syntax(self.at(), "expected ')'"));
                }
                self.pos += 1;
                Ok(v)
            }
            Some(k) => Err(syntax(at, format!("expected a number or '(', found {k:?}"))),
            None => Err(syntax(at, "unexpected end of expression")),
        }
    }
}

/// Evaluates `text` exactly under `limits`.
///
/// ```
/// use dlm_reasoning::arith::{display, evaluate, Limits};
/// let v = evaluate("$1,000 x 1.5% + (2 - -3)**2", &Limits::default()).unwrap();
/// assert_eq!(display(&v), "40");
/// ```
pub fn evaluate(text: &str, limits: &Limits) -> Result<BigRational, EvalError> {
    let tokens = tokenize(text, limits)?;
    if tokens.is_empty() {
        return Err(syntax(0, "empty expression"));
    }
    let mut p = Parser {
        tokens,
        pos: 0,
        limits,
        len: text.len(),
    };
    let v = p.expr(0)?;
    if p.pos != p.tokens.len() {
        return Err(syntax(p.at(), "unexpected trailing input"));
    }
    Ok(v)
}

/// If `text` is a single numeric literal — optional sign, optional `$`, the number, optional
/// `%` — the number of decimals its *value* is written to: the decimals written, plus 2 for a
/// `%` (`33.3%` is `0.333`, three decimals). `None` for anything else, including expressions.
pub fn literal_decimals(text: &str, limits: &Limits) -> Option<u32> {
    let t = text.trim();
    let t = t
        .strip_prefix('-')
        .or_else(|| t.strip_prefix('−'))
        .unwrap_or(t)
        .trim_start();
    let t = t.strip_prefix('$').unwrap_or(t);
    let (t, pct) = match t.strip_suffix('%') {
        Some(rest) => (rest.trim_end(), 2),
        None => (t, 0),
    };
    if !t.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let lit = scan_number(t, 0, limits).ok()?;
    (lit.end == t.len()).then_some(lit.decimals + pct)
}

/// Parses a final answer as lm-evaluation-harness normalises it: commas and `$` removed, one
/// trailing `.` removed, surrounding whitespace ignored; what is left must be a plain decimal
/// number (`-1,234.50` → `-123450/100`). `None` when it is not.
pub fn parse_answer(text: &str) -> Option<BigRational> {
    let cleaned: String = text.chars().filter(|&c| c != ',' && c != '$').collect();
    let t = cleaned.trim();
    let t = t.strip_suffix('.').unwrap_or(t);
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
        return None;
    }
    let lit = scan_number(t, 0, &Limits::default()).ok()?;
    if lit.end != t.len() {
        return None;
    }
    Some(if neg { -lit.value } else { lit.value })
}

/// Renders a rational for reports: an integer, a terminating decimal when it has at most 12
/// decimals, or `p/q`.
pub fn display(v: &BigRational) -> String {
    if v.is_integer() {
        return v.numer().to_string();
    }
    // Terminating decimal iff the reduced denominator has only factors 2 and 5.
    let mut d = v.denom().clone();
    let (two, five) = (BigInt::from(2), BigInt::from(5));
    let mut k2 = 0u32;
    let mut k5 = 0u32;
    while (&d % &two).is_zero() && k2 <= 12 {
        d /= &two;
        k2 += 1;
    }
    while (&d % &five).is_zero() && k5 <= 12 {
        d /= &five;
        k5 += 1;
    }
    let k = k2.max(k5);
    if d.is_one() && k <= 12 {
        let scaled = v * BigRational::from_integer(Pow::pow(BigInt::from(10), k));
        let n = scaled.to_integer();
        let neg = n.is_negative();
        let s = n.abs().to_string();
        let s = format!("{s:0>width$}", width = k as usize + 1);
        let (i, f) = s.split_at(s.len() - k as usize);
        return format!("{}{i}.{f}", if neg { "-" } else { "" });
    }
    format!("{}/{}", v.numer(), v.denom())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> Result<BigRational, EvalError> {
        evaluate(s, &Limits::default())
    }

    fn q(n: i64, d: i64) -> BigRational {
        BigRational::new(n.into(), d.into())
    }

    #[test]
    fn basic_operators_and_precedence() {
        assert_eq!(ev("16-3-4").unwrap(), q(9, 1));
        assert_eq!(ev("2+3*4").unwrap(), q(14, 1));
        assert_eq!(ev("(2+3)*4").unwrap(), q(20, 1));
        assert_eq!(ev("10/4").unwrap(), q(5, 2));
        assert_eq!(ev("10/3*3").unwrap(), q(10, 1));
        assert_eq!(ev(" 8 / 2 / 2 ").unwrap(), q(2, 1));
    }

    #[test]
    fn commas_dollars_decimals() {
        assert_eq!(ev("1,000").unwrap(), q(1000, 1));
        assert_eq!(ev("$80,000+$50,000").unwrap(), q(130_000, 1));
        assert_eq!(ev("1,234,567.25").unwrap(), q(123_456_725, 100));
        assert_eq!(ev("1.5").unwrap(), q(3, 2));
        assert_eq!(ev(".5*4").unwrap(), q(2, 1));
        assert_eq!(ev("0.1+0.2").unwrap(), q(3, 10));
        assert!(ev("1,00").is_err());
        assert!(ev("1000,000").is_err());
        assert!(ev("1,0000").is_err());
        assert!(ev("1.2.3").is_err());
        assert!(ev("5.").is_err());
        assert!(ev("$").is_err());
        assert!(ev("5$").is_err());
        assert_eq!(ev("9 x $ 2").unwrap(), q(18, 1));
    }

    #[test]
    fn percent_divides_by_100() {
        assert_eq!(ev("60%").unwrap(), q(3, 5));
        assert_eq!(ev("12/20 x 100%").unwrap(), q(3, 5));
        assert_eq!(ev("50%*2").unwrap(), q(1, 1));
        assert_eq!(ev("(1+1)%").unwrap(), q(1, 50));
        assert_eq!(ev("12.5%").unwrap(), q(1, 8));
        assert!(ev("%5").is_err());
    }

    #[test]
    fn multiplication_signs() {
        assert_eq!(ev("3 x 4").unwrap(), q(12, 1));
        assert_eq!(ev("3x4").unwrap(), q(12, 1));
        assert_eq!(ev("3 × 4 ÷ 6").unwrap(), q(2, 1));
        assert_eq!(ev("2·5").unwrap(), q(10, 1));
        assert!(ev("3 X 4").is_err());
        assert!(ev("x + 3").is_err());
        assert!(ev("3x").is_err());
        assert!(ev("3 box 4").is_err());
        assert!(ev("2 3").is_err());
    }

    #[test]
    fn unary_minus_and_powers() {
        assert_eq!(ev("-5+3").unwrap(), q(-2, 1));
        assert_eq!(ev("2 - -3").unwrap(), q(5, 1));
        assert_eq!(ev("−4").unwrap(), q(-4, 1));
        assert_eq!(ev("-2**2").unwrap(), q(-4, 1));
        assert_eq!(ev("(-2)**2").unwrap(), q(4, 1));
        assert_eq!(ev("2**3**2").unwrap(), q(512, 1));
        assert_eq!(ev("2^-2").unwrap(), q(1, 4));
        assert_eq!(ev("(1/2)^3").unwrap(), q(1, 8));
        assert_eq!(ev("0**0").unwrap(), q(1, 1));
        assert_eq!(ev("0**-1"), Err(EvalError::DivisionByZero));
        assert!(matches!(ev("2**0.5"), Err(EvalError::Unsupported(_))));
    }

    #[test]
    fn juxtaposition_mixed_numbers_floor_division() {
        assert_eq!(ev("2(40+9)").unwrap(), q(98, 1));
        assert_eq!(ev("(1/2)(20)").unwrap(), q(10, 1));
        assert_eq!(ev("(1/2) 278 + 11").unwrap(), q(150, 1));
        assert_eq!(ev(".75(.5) + .25(.1)").unwrap(), q(2, 5));
        assert_eq!(ev("40+2(120)").unwrap(), q(280, 1));
        assert_eq!(ev("3 1/2").unwrap(), q(7, 2));
        assert_eq!(ev("14 * 1 1/2").unwrap(), q(21, 1));
        assert_eq!(ev("16 1/2 + 24 1/2").unwrap(), q(41, 1));
        assert_eq!(ev("3 / 2").unwrap(), q(3, 2));
        assert_eq!(
            ev("6 / 2 1/2").unwrap_err(),
            syntax(6, "unexpected trailing input")
        );
        assert_eq!(ev("560//10").unwrap(), q(56, 1));
        assert_eq!(ev("-7//2").unwrap(), q(-4, 1));
        assert_eq!(ev("7//0"), Err(EvalError::DivisionByZero));
        assert_eq!(ev("1 1/0"), Err(EvalError::DivisionByZero));
    }

    #[test]
    fn division_by_zero_is_an_error_not_a_panic() {
        assert_eq!(ev("5/0"), Err(EvalError::DivisionByZero));
        assert_eq!(ev("5/(3-3)"), Err(EvalError::DivisionByZero));
    }

    #[test]
    fn size_limits_refuse_instead_of_working() {
        let big = "9".repeat(5000);
        assert!(matches!(ev(&big), Err(EvalError::TooLarge(_))));
        let dec = format!("0.{}", "1".repeat(5000));
        assert!(matches!(ev(&dec), Err(EvalError::TooLarge(_))));
        assert!(matches!(ev("10**5000"), Err(EvalError::TooLarge(_))));
        assert!(matches!(
            ev("2**2**2**2**2**2"),
            Err(EvalError::TooLarge(_))
        ));
        assert!(matches!(ev("1**100000"), Err(EvalError::TooLarge(_))));
        assert!(matches!(
            ev("2**99999999999999999999"),
            Err(EvalError::TooLarge(_))
        ));
        let deep = format!("{}1{}", "(".repeat(2000), ")".repeat(2000));
        assert!(matches!(ev(&deep), Err(EvalError::TooLarge(_))));
        let long = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(matches!(ev(&long), Err(EvalError::TooLarge(_))));
        let minus = format!("{}1", "-".repeat(3000));
        assert!(matches!(ev(&minus), Err(EvalError::TooLarge(_))));
        // A product of 900-digit literals passes the literal limit but not the bit limit.
        let f = "9".repeat(900);
        assert!(matches!(
            ev(&format!("{f}*{f}")),
            Err(EvalError::TooLarge(_))
        ));
        // Within the limits: fine.
        assert_eq!(ev("2**1000").unwrap().numer().bits(), 1001);
        assert!(ev(&"7".repeat(1000)).is_ok());
    }

    #[test]
    fn literal_decimals_and_answers() {
        let l = Limits::default();
        assert_eq!(literal_decimals("3.33", &l), Some(2));
        assert_eq!(literal_decimals(" $1,234.5 ", &l), Some(1));
        assert_eq!(literal_decimals("-7", &l), Some(0));
        assert_eq!(literal_decimals("33.3%", &l), Some(3));
        assert_eq!(literal_decimals("3/4", &l), None);
        assert_eq!(literal_decimals("", &l), None);
        assert_eq!(parse_answer("1,234"), Some(q(1234, 1)));
        assert_eq!(parse_answer("$18."), Some(q(18, 1)));
        assert_eq!(parse_answer("-3.50"), Some(q(-7, 2)));
        assert_eq!(parse_answer("18.00"), Some(q(18, 1)));
        assert_eq!(parse_answer("$."), None);
        assert_eq!(parse_answer("1.2.3"), None);
        assert_eq!(parse_answer(""), None);
    }

    #[test]
    fn display_forms() {
        assert_eq!(display(&q(7, 1)), "7");
        assert_eq!(display(&q(-3, 2)), "-1.5");
        assert_eq!(display(&q(1, 40)), "0.025");
        assert_eq!(display(&q(10, 3)), "10/3");
    }
}
