//! Exact conditional marginals against enumeration, and the scaled recursions against log
//! space at lengths where unscaled ones underflow.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::tests::{
    all_table1, brute_marginals, enum_len, enumerate, pruned_hmm, small_vocab_languages,
};
use super::*;

fn random_masks(
    lang: &Language,
    l: usize,
    table: &[(Vec<u32>, f64)],
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<u32>> {
    let mask = lang.mask_id();
    let mut seqs = Vec::new();
    for rate in [0.0, 1.0, 0.3, 0.5, 0.7, 0.5, 0.9, 0.2] {
        let x = lang.sample(l, rng).unwrap();
        seqs.push(
            x.iter()
                .map(|&t| if rng.random::<f64>() < rate { mask } else { t })
                .collect(),
        );
    }
    // Also a uniformly random (often out-of-support) sequence with a few masks, if consistent.
    for _ in 0..20 {
        let (x, _) = &table[rng.random_range(0..table.len())];
        let m: Vec<u32> = x
            .iter()
            .map(|&t| if rng.random::<f64>() < 0.5 { mask } else { t })
            .collect();
        if brute_marginals(table, &m, lang.vocab()).is_some() {
            seqs.push(m);
            break;
        }
    }
    seqs
}

#[test]
fn conditional_marginals_match_enumeration() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut langs = Vec::new();
    for (name, lang) in all_table1().into_iter().chain(small_vocab_languages()) {
        let mut slow = lang.clone();
        slow.force_log_space();
        langs.push((name.clone(), lang));
        langs.push((format!("{name} (log space)"), slow));
    }
    for (name, lang) in langs {
        let v = lang.vocab();
        let l = enum_len(&lang);
        let table = enumerate(&lang, l);
        let seqs = random_masks(&lang, l, &table, &mut rng);
        let batch = seqs.len();
        let tokens: Vec<u32> = seqs.concat();
        let mut out = vec![0.0; batch * l * v];
        lang.conditional_marginals(&tokens, batch, l, &mut out)
            .unwrap();
        for (b, masked) in seqs.iter().enumerate() {
            let brute = brute_marginals(&table, masked, v).unwrap();
            let got = &out[b * l * v..(b + 1) * l * v];
            for (i, (g, e)) in got.iter().zip(&brute).enumerate() {
                assert!(
                    (g - e).abs() < 1e-9,
                    "{name} seq {masked:?} pos {} tok {}: {g} vs {e}",
                    i / v,
                    i % v
                );
                assert_eq!(*g == 0.0, *e == 0.0, "{name} zero pattern at {i}");
            }
        }
    }
}

#[test]
fn conditional_marginals_report_inconsistent_sequences() {
    let mut tested = 0;
    for (name, lang) in all_table1().into_iter().chain(small_vocab_languages()) {
        let (v, l) = (lang.vocab(), enum_len(&lang));
        let mask = lang.mask_id();
        let table = enumerate(&lang, l);
        let Some((bad, _)) = table.iter().find(|(_, p)| *p == 0.0) else {
            continue;
        };
        tested += 1;
        let good = vec![mask; l];
        let tokens = [good.clone(), bad.clone(), good, bad.clone()].concat();
        let mut out = vec![0.0; 4 * l * v];
        let err = lang
            .conditional_marginals(&tokens, 4, l, &mut out)
            .unwrap_err();
        assert_eq!(
            err,
            LanguageError::Inconsistent {
                sequence: 1,
                count: 2
            },
            "{name}"
        );
        assert!(out[l * v..2 * l * v].iter().all(|x| x.is_nan()));
        assert!(out[3 * l * v..].iter().all(|x| x.is_nan()));
        assert!(out[..l * v].iter().all(|x| x.is_finite()));
        assert!(out[2 * l * v..3 * l * v].iter().all(|x| x.is_finite()));
        let s = lang.score(bad).unwrap();
        assert!(!s.in_support && s.invalid_transitions > 0 && s.first_invalid.is_some());
    }
    assert!(tested >= 6, "only {tested} languages with a pruned support");
}

/// Long sequences: the scaled recursions agree with the log-space ones, and every SER sample
/// is in the support with a finite log-probability.
#[test]
fn long_sequences_scaled_matches_log_space() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let l = 512;
    let mut langs = all_table1();
    langs.push(("hmm-32/thr0.05".to_string(), pruned_hmm()));
    for (name, lang) in langs {
        let v = lang.vocab();
        let mask = lang.mask_id();
        for rate in [0.1, 0.5, 0.95, 1.0] {
            let x = lang.sample(l, &mut rng).unwrap();
            let s = lang.score(&x).unwrap();
            assert!(
                s.in_support && s.log_prob.is_finite() && s.first_invalid.is_none(),
                "{name}"
            );
            let m: Vec<u32> = x
                .iter()
                .map(|&t| if rng.random::<f64>() < rate { mask } else { t })
                .collect();
            let mut a = vec![0.0; l * v];
            let mut b = vec![0.0; l * v];
            let (ra, rb) = match &lang.model {
                Model::NGram(g) => {
                    let mut ws = ngram::Workspace::default();
                    (
                        g.marginals_scaled(&m, &mut a, &mut ws),
                        g.marginals_log(&m, &mut b, &mut ws),
                    )
                }
                Model::Hmm(g) => {
                    let mut ws = hmm::Workspace::default();
                    (
                        g.marginals_scaled(&m, &mut a, &mut ws),
                        g.marginals_log(&m, &mut b, &mut ws),
                    )
                }
                Model::Interval(_) => unreachable!("only Table 1 languages here"),
            };
            assert!(
                matches!(ra, numeric::Outcome::Done),
                "{name}: scaled pass flagged/inconsistent"
            );
            assert!(matches!(rb, numeric::Outcome::Done), "{name}");
            for (i, (p, q)) in a.iter().zip(&b).enumerate() {
                assert!(
                    (p - q).abs() < 1e-9,
                    "{name} rate {rate} at {i}: {p} vs {q}"
                );
                assert_eq!(*p == 0.0, *q == 0.0, "{name} zero pattern at {i}");
            }
            for row in a.chunks_exact(v) {
                assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            }
            if let Model::Hmm(g) = &lang.model {
                let slow = g.score_log(&x);
                assert!(
                    (slow.log_prob - s.log_prob).abs() < 1e-8 * s.log_prob.abs(),
                    "{name}"
                );
            }
        }
    }
}
