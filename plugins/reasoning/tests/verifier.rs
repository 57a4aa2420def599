//! Unit tests of the verifier through the public API: both modes, the free-text chain rules,
//! the rounding rule, the answer extraction and degenerate inputs.

use dlm_reasoning::{verify, Outcome, Verification};

fn wrong_indices(v: &dlm_reasoning::ModeReport) -> Vec<usize> {
    v.steps
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.outcome, Outcome::Wrong { .. }))
        .map(|(i, _)| i)
        .collect()
}

fn free(text: &str) -> dlm_reasoning::ModeReport {
    verify(text, None).free_text
}

#[test]
fn chain_caught_at_the_nth_link() {
    // 6 = 6 holds, 6 = 7 does not: caught at the second link.
    let r = free("1+2+3 = 3+3 = 7");
    assert_eq!((r.candidates(), r.checked, r.wrong), (2, 2, 1));
    assert_eq!(r.first_wrong, Some(1));
    // The brief's example: sides are 6, 7 and 6, so *both* links fail and the first is link 0.
    let r = free("1+2+3=4+3=6");
    assert_eq!(wrong_indices(&r), vec![0, 1]);
    assert_eq!(r.first_wrong, Some(0));
    // Third link of four.
    let r = free("So 2*3 = 6 = 3+3 = 5 = 5");
    assert_eq!(r.candidates(), 4);
    assert_eq!(wrong_indices(&r), vec![2]);
    assert_eq!(r.first_wrong, Some(2));
    match &r.steps[2].outcome {
        Outcome::Wrong {
            left_value,
            right_value,
        } => assert_eq!((left_value.as_str(), right_value.as_str()), ("6", "5")),
        o => panic!("{o:?}"),
    }
}

#[test]
fn annotations_right_and_wrong() {
    let v = verify(
        "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 eggs.\nShe makes 9 * 2 = $<<9*2=19>>19.\n#### 19",
        Some("18"),
    );
    assert_eq!(v.annotation.candidates(), 2);
    assert_eq!(v.annotation.checked, 2);
    assert_eq!(v.annotation.wrong, 1);
    assert_eq!(v.annotation.first_wrong, Some(1));
    assert_eq!(v.annotation.steps[1].line, 2);
    assert_eq!(v.strict_correct, Some(false));
    // Free text sees the same equations once the annotations are removed.
    assert_eq!(v.free_text.checked, 2);
    assert_eq!(v.free_text.wrong, 1);
    // Multi-link annotation, an annotation without '=', and an rhs that is an expression.
    let r = verify("<<2+2=4=3+1>> <<42>> <<3/4=3/4>> <<5/0=1>>", None).annotation;
    assert_eq!(r.candidates(), 5);
    assert_eq!(r.wrong, 1);
    assert_eq!(r.unparseable, vec![2]);
    assert_eq!(r.checked, 4);
    assert_eq!(r.first_wrong, Some(4));
}

#[test]
fn unparseable_annotations_are_listed() {
    let r = verify("a <<2 apples*3=6>> b <<(2+3=5>> c <<2**0.5=1.41>>", None).annotation;
    assert_eq!(r.candidates(), 3);
    assert_eq!(r.unparseable, vec![0, 1, 2]);
    assert_eq!(r.checked, 0);
    assert_eq!(r.coverage(), Some(0.0));
    assert_eq!(r.unparseable_steps().count(), 3);
}

#[test]
fn rounding_tolerance() {
    let cases = [
        ("<<10/3=3.33>>", Outcome::Rounded { decimals: 2 }),
        ("<<2/3=0.67>>", Outcome::Rounded { decimals: 2 }),
        ("<<2/3=0.6667>>", Outcome::Rounded { decimals: 4 }),
        ("<<1/3=33%>>", Outcome::Rounded { decimals: 2 }),
        ("<<1.25=1.3>>", Outcome::Rounded { decimals: 1 }),
        ("<<1.25=1.2>>", Outcome::Rounded { decimals: 1 }),
        ("<<1.5=1.50>>", Outcome::Correct),
    ];
    for (text, want) in cases {
        let r = verify(text, None).annotation;
        assert_eq!(r.steps[0].outcome, want, "{text}");
    }
    for text in [
        "<<2/3=0.66>>",
        "<<7/2=3>>",
        "<<10/3=3.3+0.03>>",
        "<<10/3=3.34>>",
        "<<1.26=1.2>>",
    ] {
        let r = verify(text, None).annotation;
        assert_eq!(r.wrong, 1, "{text}: {:?}", r.steps[0].outcome);
    }
    assert_eq!(free("10 / 3 = 3.33 cups").rounded, 1);
}

#[test]
fn percent_forms() {
    let r = free("12/20 x 100% = 60%");
    assert_eq!((r.checked, r.wrong), (1, 0));
    // "× 100 = N%" reads the percent sign as a unit (the number N itself).
    let r = free("The oven is off because 18 / 450 x 100 = 4%");
    assert_eq!((r.checked, r.wrong), (1, 0));
    // The first link's left side is a lone number (skipped); the second is checked.
    let r = free("so 0.25 = 25% = 1/4");
    assert_eq!((r.skipped, r.checked, r.wrong), (1, 1, 0));
    let r = free("18 / 450 x 100 = 5%");
    assert_eq!(r.wrong, 1);
}

#[test]
fn arithmetic_forms_in_free_text() {
    for text in [
        "The house cost 80,000+50,000 = $130,000 in total.",
        "She pays $3.50 x 4 = $14.",
        "He runs 9 × 60 = 540 meters",
        "so 3 ÷ 4 = 0.75.",
        "Profit: (200,000 - 130,000) = $70,000",
        "Change: -5 + 3 = -2",
        "- 3 * 4 = 12 (a bullet, not a sign)",
        "He has $400 – $80 = $320",
        "that's 2(40+9) = 98 and 1 1/2 * 2 = 3",
        "Then 2**3 = 8 and 2^10 = 1,024.",
        "The bill is 9 x $ 2 = $18",
    ] {
        let r = free(text);
        assert!(r.checked >= 1, "{text}: {:?}", r.steps);
        assert_eq!(r.wrong, 0, "{text}: {:?}", r.steps);
        assert!(r.unparseable.is_empty(), "{text}: {:?}", r.steps);
    }
}

#[test]
fn prose_and_algebra_are_skipped_not_wrong() {
    for text in [
        "1 hour = 60 minutes",
        "Let x = 5",
        "20% of 50 = 10",
        "Q2 = 5",
        "X - X*25% = $19.50",
        "100 = 5A so A = 20",
        "5+(4x-13)=4x-8",
        "From 8:00 to 11:00, 11:00-8:00 = 3 hours",
        "0900-0130 = 0730 hours",
        "48 = 100% + 20%",
        "2 times 3 = 6 = 2 times 3",
        "17/3 = 5 and 2/3 loads",
        "$60 = 12(4A) + 12A",
        "a == b, c <= 5, 3 != 4, x => y",
        "y * 3 = 6",
        "so 250 x 12 = 3 000 grams",
        "√(144) = 12",
    ] {
        let r = free(text);
        assert_eq!(r.wrong, 0, "{text}: {:?}", r.steps);
    }
    let r = free("1 hour = 60 minutes");
    assert_eq!((r.candidates(), r.skipped, r.checked), (1, 1, 0));
    assert_eq!(r.coverage(), Some(0.0));
    // A sentence of prose between two equations splits the chain.
    let r = free("3+4 = 7. Then 7*2 = 14 apples = 14 pears");
    assert_eq!(r.candidates(), 3);
    assert_eq!(r.checked, 2);
    assert_eq!(r.skipped, 1);
    // Two operands side by side: the right side stops at the first.
    let r = free("$20/$5 = 4 $5 bills");
    assert_eq!((r.checked, r.wrong), (1, 0));
}

#[test]
fn strict_and_flexible_extraction() {
    let v = verify("3 + 4 = 7\n#### 7", Some("7"));
    assert_eq!(v.strict_answer.as_deref(), Some("7"));
    assert_eq!(v.flexible_answer.as_deref(), Some("7"));
    assert_eq!(
        (v.strict_correct, v.flexible_correct),
        (Some(true), Some(true))
    );
    // No `####`: strict misses, flexible takes the last number.
    let v = verify("So the answer is $1,200.", Some("1200"));
    assert_eq!(v.strict_answer, None);
    assert_eq!(v.strict_correct, Some(false));
    assert_eq!(v.flexible_answer.as_deref(), Some("$1,200."));
    assert_eq!(v.flexible_correct, Some(true));
    // Strict takes the first `####`, flexible the last number.
    let v = verify("#### 5\nActually 6", Some("6"));
    assert_eq!(
        (v.strict_correct, v.flexible_correct),
        (Some(false), Some(true))
    );
    // Gold with commas.
    let v = verify("#### 2125", Some("2,125"));
    assert_eq!(v.strict_correct, Some(true));
    // No gold: no judgement.
    let v = verify("#### 5", None);
    assert_eq!(v.strict_correct, None);
}

fn assert_empty(v: &Verification) {
    assert_eq!(v.annotation.candidates(), 0);
    assert_eq!(v.annotation.coverage(), None);
    assert_eq!(v.free_text.candidates(), 0);
    assert_eq!(v.annotation.first_wrong, None);
}

#[test]
fn empty_and_garbage() {
    let v = verify("", Some("5"));
    assert_empty(&v);
    assert_eq!(v.strict_answer, None);
    assert_eq!(v.flexible_answer, None);
    assert_eq!(v.flexible_correct, Some(false));
    let v = verify(
        "\u{0}\u{7f}<<>>>><<==>>=<<<=>>=== %%% $$$ ((((( )))) ** ^^ x × ÷",
        Some("1"),
    );
    assert_eq!(v.annotation.wrong + v.free_text.wrong, 0);
    assert_eq!(v.flexible_correct, Some(false));
    let v = verify("the end...", Some("1"));
    assert_eq!(v.flexible_answer.as_deref(), Some("..."));
    assert_eq!(v.flexible_correct, Some(false));
}

#[test]
fn thousands_of_digits_are_refused_not_computed() {
    let big = "9".repeat(5000);
    let v = verify(&format!("<<{big}*{big}={big}>> so {big} + 1 = {big}"), None);
    assert_eq!(v.annotation.unparseable.len(), 1);
    assert!(format!("{:?}", v.annotation.steps[0].outcome).contains("too large"));
    assert_eq!(v.free_text.unparseable.len(), 1);
    let v = verify("<<2**2**2**2**2**2=1>> <<10**5000=1>>", None);
    assert_eq!(v.annotation.unparseable.len(), 2);
}
