//! Languages from explicit tables: hand-computed probabilities, validation, round trips.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::tests::{brute_marginals, enumerate};
use super::*;

fn rows(r: &[&[f64]]) -> Vec<Vec<f64>> {
    r.iter().map(|x| x.to_vec()).collect()
}

#[test]
fn ngram_tables_give_hand_computed_probabilities() {
    // Trigram over {0, 1}; windows (t0, t1) in the order 00, 01, 10, 11.
    let init = [0.1, 0.2, 0.3, 0.4];
    let trans = rows(&[&[0.5, 0.5], &[0.25, 0.75], &[1.0, 0.0], &[0.0, 1.0]]);
    let lang = Language::from_ngram_tables(3, 2, &init, &trans).unwrap();
    assert_eq!(lang.origin(), &Origin::Tables);
    assert_eq!((lang.kind_label(), lang.min_length()), ("3-gram".into(), 2));
    // q(0,1,1,0) = init[01] · P(1 | 01) · P(0 | 11) = 0.2 · 0.75 · 0 = 0.
    assert!(!lang.score(&[0, 1, 1, 0]).unwrap().in_support);
    // q(0,1,0,0) = 0.2 · P(0|01) · P(0|10) = 0.2 · 0.25 · 1.
    let lp = lang.log_prob(&[0, 1, 0, 0]).unwrap();
    assert!((lp - (0.2f64 * 0.25).ln()).abs() < 1e-15);
    // q(1,0) = init[10] = 0.3.
    assert!((lang.log_prob(&[1, 0]).unwrap() - 0.3f64.ln()).abs() < 1e-15);
    let table = enumerate(&lang, 6);
    let total: f64 = table.iter().map(|(_, p)| p).sum();
    assert!((total - 1.0).abs() < 1e-12);
    for (x, p) in &table {
        let s = lang.score(x).unwrap();
        assert_eq!(s.in_support, *p > 0.0);
        if *p > 0.0 {
            assert!((s.log_prob - p.ln()).abs() < 1e-12);
        }
    }
    // Marginals against enumeration.
    let m = lang.mask_id();
    let x = [m, 1, m, m, 0, m];
    let mut out = vec![0.0; 12];
    lang.conditional_marginals(&x, 1, 6, &mut out).unwrap();
    let brute = brute_marginals(&table, &x, 2).unwrap();
    for (g, e) in out.iter().zip(&brute) {
        assert!((g - e).abs() < 1e-12);
    }
}

#[test]
fn hmm_tables_give_hand_computed_probabilities() {
    let init = [0.6, 0.4];
    let trans = rows(&[&[0.7, 0.3], &[0.2, 0.8]]);
    let emit = rows(&[&[0.9, 0.1], &[0.0, 1.0]]);
    let lang = Language::from_hmm_tables(2, &init, &trans, &emit).unwrap();
    assert_eq!(lang.hidden_states(), Some(2));
    let p = |x: &[u32]| lang.log_prob(x).unwrap().exp();
    // q(0) = 0.6·0.9; q(0,1) = 0.6·0.9·(0.7·0.1 + 0.3·1);
    // q(1,0) = 0.6·0.1·0.7·0.9 + 0.4·1·0.2·0.9.
    assert!((p(&[0]) - 0.54).abs() < 1e-15);
    assert!((p(&[0, 1]) - 0.54 * 0.37).abs() < 1e-15);
    assert!((p(&[1, 0]) - (0.6 * 0.1 * 0.7 * 0.9 + 0.4 * 0.2 * 0.9)).abs() < 1e-15);
    let table = enumerate(&lang, 8);
    let total: f64 = table.iter().map(|(_, p)| p).sum();
    assert!((total - 1.0).abs() < 1e-12);
}

#[test]
fn rows_are_normalised_and_zero_rows_of_unreachable_contexts_are_accepted() {
    // Bigram: token 2 can never occur (initial 0, no transition into it), so its row may be 0.
    let init = [0.5, 0.5 + 4e-10, 0.0];
    let trans = rows(&[&[0.5, 0.5, 0.0], &[1.0, 0.0, 0.0], &[0.0, 0.0, 0.0]]);
    let lang = Language::from_ngram_tables(2, 3, &init, &trans).unwrap();
    let s: f64 = lang.initial_distribution().iter().sum();
    assert!((s - 1.0).abs() < 1e-15);
    assert!(lang.has_zero_entries());
    // Support density: sequences over {0,1} avoiding 1→1, first token ≠ 2.
    let table = enumerate(&lang, 6);
    let count = table.iter().filter(|(_, p)| *p > 0.0).count();
    let want = (count as f64 / 729.0).log10();
    assert!((lang.support_log10_density(6).unwrap() - want).abs() < 1e-12);
    // Smoothing gives full support and stays close.
    let smooth = lang.smoothed(1e-3).unwrap();
    assert!(!smooth.has_zero_entries());
    assert_eq!(smooth.support_log10_density(100).unwrap(), 0.0);
    assert!((smooth.transition_table()[0] - (0.999 * 0.5 + 1e-3 / 3.0)).abs() < 1e-15);
    assert_eq!(&smooth.transition_table()[6..], &[1.0 / 3.0; 3]);
    // HMM: state 2 is unreachable, so its rows may be zero.
    let lang = Language::from_hmm_tables(
        2,
        &[1.0, 0.0, 0.0],
        &rows(&[&[0.5, 0.5, 0.0], &[1.0, 0.0, 0.0], &[0.0, 0.0, 0.0]]),
        &rows(&[&[1.0, 0.0], &[0.0, 1.0], &[0.0, 0.0]]),
    )
    .unwrap();
    assert!(lang.entropy(3).unwrap().exact);
    let table = enumerate(&lang, 5);
    assert!((table.iter().map(|(_, p)| p).sum::<f64>() - 1.0).abs() < 1e-12);
    let e = lang.smoothed(0.5).unwrap();
    assert!((e.emission_table().unwrap()[4] - 0.5).abs() < 1e-15);
}

fn table_error(r: Result<Language, LanguageError>) -> (&'static str, Option<usize>, String) {
    match r {
        Err(LanguageError::InvalidTable {
            table,
            row,
            ref problem,
        }) => {
            let msg = r.as_ref().unwrap_err().to_string();
            assert!(msg.contains(problem.as_str()));
            (table, row, msg)
        }
        other => panic!("expected an InvalidTable error, got {other:?}"),
    }
}

/// A constructor's result, the table and row the error must name, and a message fragment.
type Case = (
    Result<Language, LanguageError>,
    &'static str,
    Option<usize>,
    &'static str,
);

#[test]
fn invalid_tables_name_the_table_and_row() {
    use tables::{EMISSIONS, INITIAL, TRANSITIONS};
    let ok = rows(&[&[0.5, 0.5], &[0.1, 0.9]]);
    let ng = |init: &[f64], t: &[Vec<f64>]| Language::from_ngram_tables(2, 2, init, t);
    let cases: Vec<Case> = vec![
        (ng(&[0.5, 0.4], &ok), INITIAL, None, "sums to 0.9"),
        (ng(&[0.5], &ok), INITIAL, None, "has 1 entries but 2"),
        (ng(&[1.5, -0.5], &ok), INITIAL, None, "entry 1 is -0.5"),
        (ng(&[f64::NAN, 1.0], &ok), INITIAL, None, "entry 0 is NaN"),
        (ng(&[0.0, 0.0], &ok), INITIAL, None, "sums to 0"),
        (
            ng(&[0.5, 0.5], &rows(&[&[0.5, 0.5]])),
            TRANSITIONS,
            None,
            "has 1 rows but 2",
        ),
        (
            ng(&[0.5, 0.5], &rows(&[&[0.5, 0.5], &[0.2, 0.9]])),
            TRANSITIONS,
            Some(1),
            "sums to 1.1",
        ),
        (
            ng(&[0.5, 0.5], &rows(&[&[0.5, 0.5], &[1.0]])),
            TRANSITIONS,
            Some(1),
            "has 1 entries but 2",
        ),
        (
            ng(&[0.5, 0.5], &rows(&[&[0.5, 0.5], &[f64::INFINITY, 0.0]])),
            TRANSITIONS,
            Some(1),
            "entry 0 is inf",
        ),
        (
            ng(&[0.5, 0.5], &rows(&[&[0.5, 0.5], &[0.0, 0.0]])),
            TRANSITIONS,
            Some(1),
            "can occur",
        ),
        (
            // Off by 2e-9: outside the tolerance.
            ng(&[0.5, 0.5 + 2e-9], &ok),
            INITIAL,
            None,
            "within 1e-9",
        ),
    ];
    let h = |init: &[f64], t: &[Vec<f64>], e: &[Vec<f64>]| Language::from_hmm_tables(2, init, t, e);
    let emit = rows(&[&[0.5, 0.5], &[0.0, 1.0]]);
    let hmm_cases: Vec<Case> = vec![
        (
            h(&[0.5, 0.5], &ok, &rows(&[&[1.0, 0.0]])),
            EMISSIONS,
            None,
            "has 1 rows but 2",
        ),
        (
            h(&[0.5, 0.5], &rows(&[&[0.5, 0.5, 0.0], &[0.1, 0.9]]), &emit),
            TRANSITIONS,
            Some(0),
            "has 3 entries but 2",
        ),
        (
            h(&[0.5, 0.5], &ok, &rows(&[&[0.5, 0.5], &[0.0, 0.0]])),
            EMISSIONS,
            Some(1),
            "hidden state 1 can occur",
        ),
        (
            h(&[1.0, 0.0], &rows(&[&[0.5, 0.5], &[0.0, 0.0]]), &emit),
            TRANSITIONS,
            Some(1),
            "hidden state 1 can occur",
        ),
        (
            h(&[0.5, 0.5], &ok, &rows(&[&[0.5, 0.5], &[-0.0, 1.0 + 1e-6]])),
            EMISSIONS,
            Some(1),
            "sums to",
        ),
    ];
    for (result, table, row, fragment) in cases.into_iter().chain(hmm_cases) {
        let (t, r, msg) = table_error(result);
        assert_eq!((t, r), (table, row), "{msg}");
        assert!(msg.contains(fragment), "{msg:?} lacks {fragment:?}");
        match row {
            Some(r) => assert!(msg.contains(&format!("row {r} of the {table}")), "{msg}"),
            None => assert!(msg.starts_with(&format!("the {table}")), "{msg}"),
        }
    }
    // The n-gram context is named.
    let (_, _, msg) = table_error(Language::from_ngram_tables(
        3,
        2,
        &[0.25; 4],
        &rows(&[&[1.0, 0.0], &[1.0, 0.0], &[1.0, 0.0], &[0.3, 0.3]]),
    ));
    assert!(msg.contains("context [1, 1]"), "{msg}");
    // Size errors, not panics.
    assert!(matches!(
        Language::from_ngram_tables(1, 2, &[1.0], &[]),
        Err(LanguageError::InvalidOrder { .. })
    ));
    assert!(matches!(
        Language::from_ngram_tables(100, 2, &[1.0], &[]),
        Err(LanguageError::TooLarge { .. })
    ));
    assert!(matches!(
        Language::from_ngram_tables(2, 1, &[1.0], &[]),
        Err(LanguageError::InvalidVocab { .. })
    ));
    assert!(matches!(
        Language::from_hmm_tables(2, &[], &[], &[]),
        Err(LanguageError::InvalidStates { .. })
    ));
    assert!(matches!(
        Language::from_hmm_tables(0, &[1.0], &[vec![1.0]], &[vec![]]),
        Err(LanguageError::InvalidVocab { .. })
    ));
    for eps in [0.0, -1.0, 1.5, f64::NAN] {
        let lang = Language::from_hmm_tables(2, &[1.0], &[vec![1.0]], &[vec![0.5, 0.5]]).unwrap();
        assert!(lang.smoothed(eps).is_err(), "{eps}");
    }
}

/// The tables of a generated language, fed back through the explicit constructors, give the
/// same language.
#[test]
fn generated_tables_round_trip() {
    for kind in ["3-gram", "hmm"] {
        let g = table1(kind, Variant::Ser, 5).unwrap();
        let v = g.vocab();
        let init = g.initial_distribution();
        let back = match g.order() {
            Some(n) => {
                let t: Vec<Vec<f64>> = g
                    .transition_table()
                    .chunks(v)
                    .map(<[f64]>::to_vec)
                    .collect();
                Language::from_ngram_tables(n, v, init, &t).unwrap()
            }
            None => {
                let h = g.hidden_states().unwrap();
                let t: Vec<Vec<f64>> = g
                    .transition_table()
                    .chunks(h)
                    .map(<[f64]>::to_vec)
                    .collect();
                let e: Vec<Vec<f64>> = g
                    .emission_table()
                    .unwrap()
                    .chunks(v)
                    .map(<[f64]>::to_vec)
                    .collect();
                Language::from_hmm_tables(v, init, &t, &e).unwrap()
            }
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..20 {
            let x = g.sample(64, &mut rng).unwrap();
            let (a, b) = (g.log_prob(&x).unwrap(), back.log_prob(&x).unwrap());
            assert!((a - b).abs() < 1e-9 * a.abs(), "{kind}: {a} vs {b}");
        }
        assert!(
            (g.support_log10_density(64).unwrap() - back.support_log10_density(64).unwrap()).abs()
                < 1e-9
        );
    }
}
