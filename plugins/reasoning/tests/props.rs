//! Property tests: no input panics; the evaluator agrees with a reference evaluation of random
//! expression trees; the verifier flags exactly the links whose sides differ, in both modes;
//! oversized numbers and exponent towers are refused by the size limits (asserted, never timed).

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Pow, Zero};
use proptest::prelude::*;

use dlm_reasoning::arith::{display, evaluate, EvalError, Limits};
use dlm_reasoning::{verify, ModeReport, Outcome};

#[derive(Debug, Clone)]
enum Expr {
    /// An integer leaf and its rendering style (0 plain, 1 `$`, 2 commas, 3 `$` + commas).
    Int(u32, u8),
    /// A decimal leaf `n / 10^k` written with k decimals.
    Dec(u32, u8),
    /// `n%`.
    Pct(u32),
    Neg(Box<Expr>),
    Bin(Box<Expr>, char, Box<Expr>),
    Pow(Box<Expr>, u8),
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        4 => (0u32..3000, 0u8..4).prop_map(|(n, s)| Expr::Int(n, s)),
        1 => (0u32..100_000, 1u8..4).prop_map(|(n, k)| Expr::Dec(n, k)),
        1 => (0u32..300).prop_map(Expr::Pct),
    ]
}

fn expr(with_percent_and_decimals: bool) -> BoxedStrategy<Expr> {
    let base = if with_percent_and_decimals {
        leaf().boxed()
    } else {
        (0u32..3000, 0u8..4)
            .prop_map(|(n, s)| Expr::Int(n, s))
            .boxed()
    };
    base.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            1 => inner.clone().prop_map(|e| Expr::Neg(Box::new(e))),
            6 => (inner.clone(), prop::sample::select(vec!['+', '-', '*', 'x', '×', '/', '÷']), inner.clone())
                .prop_map(|(a, op, b)| Expr::Bin(Box::new(a), op, Box::new(b))),
            1 => (inner, 0u8..4).prop_map(|(e, k)| Expr::Pow(Box::new(e), k)),
        ]
    })
    .boxed()
}

fn q(n: impl Into<BigInt>) -> BigRational {
    BigRational::from_integer(n.into())
}

/// The reference evaluation, straight on the tree; `None` on division by zero.
fn value(e: &Expr) -> Option<BigRational> {
    Some(match e {
        Expr::Int(n, _) => q(*n),
        Expr::Dec(n, k) => BigRational::new((*n).into(), Pow::pow(BigInt::from(10), u32::from(*k))),
        Expr::Pct(n) => BigRational::new((*n).into(), 100.into()),
        Expr::Neg(e) => -value(e)?,
        Expr::Pow(e, k) => Pow::pow(value(e)?, i32::from(*k)),
        Expr::Bin(a, op, b) => {
            let (a, b) = (value(a)?, value(b)?);
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' | 'x' | '×' => a * b,
                _ => {
                    if b.is_zero() {
                        return None;
                    }
                    a / b
                }
            }
        }
    })
}

fn with_commas(n: u32) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Renders fully parenthesised (so the tree's structure is the text's), spaces varying.
fn render(e: &Expr, spaced: bool) -> String {
    let sp = if spaced { " " } else { "" };
    match e {
        Expr::Int(n, style) => match style {
            0 => n.to_string(),
            1 => format!("${n}"),
            2 => with_commas(*n),
            _ => format!("${}", with_commas(*n)),
        },
        Expr::Dec(n, k) => {
            let k = usize::from(*k);
            let s = format!("{n:0>width$}", width = k + 1);
            let (i, f) = s.split_at(s.len() - k);
            format!("{i}.{f}")
        }
        Expr::Pct(n) => format!("{n}%"),
        Expr::Neg(e) => format!("(-{})", render(e, spaced)),
        Expr::Pow(e, k) => format!("({}){sp}**{sp}{k}", render(e, spaced)),
        Expr::Bin(a, op, b) => {
            let op_sp = if *op == 'x' { " " } else { sp };
            format!(
                "({}{op_sp}{op}{op_sp}{})",
                render(a, spaced),
                render(b, spaced)
            )
        }
    }
}

fn assert_consistent(r: &ModeReport) {
    let checked = r.steps.iter().filter(|s| s.outcome.is_checked()).count();
    assert_eq!(checked, r.checked);
    assert_eq!(r.checked + r.skipped + r.unparseable.len(), r.candidates());
    let first = r
        .steps
        .iter()
        .position(|s| matches!(s.outcome, Outcome::Wrong { .. }));
    assert_eq!(first, r.first_wrong);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let v = verify(&text, Some("1"));
        assert_consistent(&v.annotation);
        assert_consistent(&v.free_text);
        let _ = evaluate(&text, &Limits::default());
    }

    #[test]
    fn arithmetic_soup_never_panics(
        parts in prop::collection::vec(prop::sample::select(vec![
            "1", "23", "0", "9,999", "1,00", "4.5", ".", ",", "$", "%", "+", "-", "−", "–", "*", "**",
            "^", "/", "//", "x", "X", "×", "÷", "(", ")", "=", "==", "<<", ">>", " ", "\n", "####",
            " and ", "of", "1 1/2", ":", "√", "¢", "\u{a0}",
        ]), 0..60)
    ) {
        let text = parts.concat();
        let v = verify(&text, Some("23"));
        assert_consistent(&v.annotation);
        assert_consistent(&v.free_text);
        let _ = evaluate(&text, &Limits::default());
    }

    #[test]
    fn evaluator_agrees_with_reference(e in expr(true), spaced in any::<bool>()) {
        let text = render(&e, spaced);
        match (value(&e), evaluate(&text, &Limits::default())) {
            (Some(want), Ok(got)) => prop_assert_eq!(want, got, "{}", text),
            (None, Err(EvalError::DivisionByZero)) => {}
            (want, got) => prop_assert!(false, "{text}: reference {want:?}, evaluator {got:?}"),
        }
    }

    #[test]
    fn chains_are_checked_link_by_link(
        first in expr(false),
        rest in prop::collection::vec((any::<bool>(), expr(false)), 1..5),
        spaced in any::<bool>(),
    ) {
        // Each next side is either the previous value written out (a true link) or a fresh
        // expression (usually a false link). The first side is an operation, never a lone
        // number (free-text mode skips a lone number before the first `=` as a label).
        let first = Expr::Bin(Box::new(first), '+', Box::new(Expr::Int(0, 0)));
        let mut sides = vec![render(&first, spaced)];
        let mut values = vec![value(&first)];
        for (copy, e) in &rest {
            let prev = values.last().expect("non-empty").clone();
            match (copy, prev) {
                (true, Some(v)) => {
                    sides.push(display(&v));
                    values.push(Some(v));
                }
                _ => {
                    sides.push(render(e, spaced));
                    values.push(value(e));
                }
            }
        }
        prop_assume!(values.iter().all(Option::is_some));
        let values: Vec<BigRational> = values.into_iter().flatten().collect();
        let expected: Vec<bool> = values.windows(2).map(|w| w[0] == w[1]).collect();

        let annotated = verify(&format!("<<{}>>", sides.join("=")), None).annotation;
        let free = verify(&format!("Hence: {} apples.", sides.join(" = ")), None).free_text;
        for (mode, r) in [("annotation", &annotated), ("free text", &free)] {
            assert_consistent(r);
            prop_assert_eq!(r.candidates(), expected.len(), "{} {:?}", mode, sides);
            for (i, ok) in expected.iter().enumerate() {
                let outcome = &r.steps[i].outcome;
                if *ok {
                    prop_assert_eq!(outcome, &Outcome::Correct, "{} link {} of {:?}", mode, i, sides);
                } else {
                    let is_wrong = matches!(outcome, Outcome::Wrong { .. });
                    prop_assert!(is_wrong, "{} link {} of {:?}: {:?}", mode, i, sides, outcome);
                }
            }
            prop_assert_eq!(r.first_wrong, expected.iter().position(|ok| !ok));
        }
    }

    #[test]
    fn huge_literals_are_refused(digits in 1001usize..6000, d in 1u8..10) {
        let text = char::from(b'0' + d).to_string().repeat(digits);
        let refused = matches!(evaluate(&text, &Limits::default()), Err(EvalError::TooLarge(_)));
        prop_assert!(refused);
        let v = verify(&format!("<<{text}={text}>>"), None);
        prop_assert_eq!(v.annotation.unparseable.len(), 1);
    }

    #[test]
    fn exponent_towers_are_refused(bases in prop::collection::vec(2u32..10, 5..9)) {
        let text = bases.iter().map(u32::to_string).collect::<Vec<_>>().join("**");
        let refused = matches!(evaluate(&text, &Limits::default()), Err(EvalError::TooLarge(_)));
        prop_assert!(refused, "{}", text);
        let caret = bases.iter().map(u32::to_string).collect::<Vec<_>>().join("^");
        let refused = matches!(evaluate(&caret, &Limits::default()), Err(EvalError::TooLarge(_)));
        prop_assert!(refused, "{}", caret);
    }

    #[test]
    fn products_past_the_bit_limit_are_refused(n in 2usize..8, d in 1u8..10) {
        // Each factor has 700 digits (at least 2,322 bits): each fits the literal limit, but any
        // product of two passes 4,096 bits.
        let f = char::from(b'0' + d).to_string().repeat(700);
        let text = vec![f; n].join("*");
        let refused = matches!(evaluate(&text, &Limits::default()), Err(EvalError::TooLarge(_)));
        prop_assert!(refused);
    }
}

#[test]
fn display_round_trips() {
    for (n, d) in [(1, 3), (-7, 4), (5, 1), (123_456, 1000), (-1, 7)] {
        let v = BigRational::new(BigInt::from(n), BigInt::from(d));
        assert_eq!(evaluate(&display(&v), &Limits::default()).unwrap(), v);
    }
    assert_eq!(q(0), evaluate("0", &Limits::default()).unwrap());
}
