use super::*;

/// Samples `0..` with templates `x`, `y` alternating and the given outcomes.
fn scored(right: &[bool]) -> Scored {
    right
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let t = if i % 2 == 0 { "x" } else { "y" };
            (i as u64, (t.to_string(), *r))
        })
        .collect()
}

#[test]
fn accuracy_counts_each_templates_samples_with_the_wilson_interval() {
    let s = scored(&[true, false, true, false, false, true]);
    let x = accuracy(&s, "x");
    assert_eq!((x.n, x.correct), (3, 2));
    assert_eq!(x.accuracy, Some(2.0 / 3.0));
    assert_eq!(x.ci, Some(wilson_ci(2, 3)));
    let y = accuracy(&s, "y");
    assert_eq!((y.n, y.correct), (3, 1));
    let none = accuracy(&s, "z");
    assert_eq!((none.n, none.accuracy, none.ci), (0, None, None));
}

/// A is right on every `x` prompt and wrong on every `y` prompt, B the other way round, over
/// 8 prompts per template: the difference is +1 under `x` and −1 under `y`, each interval
/// Agresti–Min's for 8 discordant pairs of 8, so the pair flips.
#[test]
fn a_method_that_wins_under_one_template_and_loses_under_another_flips() {
    let a = scored(&[true, false].repeat(8));
    let b = scored(&[false, true].repeat(8));
    let x = difference(&a, &b, "x");
    let y = difference(&a, &b, "y");
    assert_eq!(x.difference, PairedDifference::new(8, 8, 0));
    assert_eq!(y.difference, PairedDifference::new(8, 0, 8));
    assert_eq!((x.outcome, y.outcome), ("better", "worse"));
    let pair = TemplatePair {
        a: "A".into(),
        a_key: "a".into(),
        b: "B".into(),
        b_key: "b".into(),
        against: "first cell".into(),
        per_template: vec![x, y],
        flip: true,
    };
    let sentence = flip_sentence(&pair);
    assert!(
        sentence.starts_with("A against B: better under x (+1.000 [")
            && sentence.contains("worse under y (-1.000 ["),
        "{sentence}"
    );
}

/// Pairs are matched by sample index: a sample B lacks is left out, and so is one scored
/// under another template at the same index.
#[test]
fn differences_pair_samples_by_index_and_template() {
    let a = scored(&[true, true, true, true, false, true]);
    let mut b = scored(&[false, true, true, true, true, true]);
    b.remove(&2);
    b.insert(4, ("y".to_string(), true));
    // x: indices 0 (a only), 2 (missing in b), 4 (another template in b) → n = 1.
    let x = difference(&a, &b, "x").difference.unwrap();
    assert_eq!((x.n, x.a_only, x.b_only), (1, 1, 0));
    let y = difference(&a, &b, "y").difference.unwrap();
    assert_eq!((y.n, y.a_only, y.b_only), (3, 0, 0));
    assert_eq!(difference(&a, &b, "y").outcome, "unclear");
    assert!(difference(&a, &b, "z").difference.is_none());
}
