//! Sampling against `q`, the seed contract, and the score fields against their definitions.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::tests::{
    all_table1, decode, enum_len, enumerate, naive_prob, small_vocab_languages, KINDS, SEED,
};
use super::*;

#[test]
fn sampling_frequencies_match_q() {
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    for (kind, variant, l, n) in [
        ("2-gram", Variant::Ser, 3, 200_000),
        ("3-gram", Variant::Ter, 3, 200_000),
        ("4-gram", Variant::Ter, 4, 300_000),
        ("hmm", Variant::Ser, 3, 200_000),
    ] {
        let lang = table1(kind, variant, SEED).unwrap();
        let v = lang.vocab();
        let mut counts: HashMap<Vec<u32>, usize> = HashMap::new();
        for _ in 0..n {
            *counts.entry(lang.sample(l, &mut rng).unwrap()).or_default() += 1;
        }
        let mut chi2 = 0.0;
        let mut cells = 0usize;
        for (x, q) in enumerate(&lang, l) {
            let c = counts.get(&x).copied().unwrap_or(0);
            let f = c as f64 / n as f64;
            if q == 0.0 {
                assert_eq!(c, 0, "{kind}: sampled a zero-probability sequence {x:?}");
                continue;
            }
            assert!(
                (f - q).abs() <= 6.0 * (q * (1.0 - q) / n as f64).sqrt() + 2.0 / n as f64,
                "{kind} {x:?}: {f} vs {q}"
            );
            if q * n as f64 >= 5.0 {
                chi2 += (c as f64 - q * n as f64).powi(2) / (q * n as f64);
                cells += 1;
            }
        }
        let df = cells as f64 - 1.0;
        assert!(
            chi2 < df + 6.0 * (2.0 * df).sqrt(),
            "{kind}: chi2 {chi2} with {cells} cells"
        );
        assert!(v.pow(l as u32) >= cells);
    }
}

#[test]
fn ser_samples_are_in_support() {
    let mut rng = ChaCha8Rng::seed_from_u64(1234);
    for kind in KINDS {
        let lang = table1(kind, Variant::Ser, SEED).unwrap();
        let n = if kind == "hmm" { 200 } else { 2000 };
        for _ in 0..n {
            let x = lang.sample(512, &mut rng).unwrap();
            assert_eq!(x.len(), 512);
            assert!(x.iter().all(|&t| (t as usize) < lang.vocab()));
            let s = lang.score(&x).unwrap();
            assert!(
                s.in_support && s.invalid_transitions == 0 && s.log_prob.is_finite(),
                "{kind}"
            );
        }
    }
}

#[test]
fn same_seed_same_parameters_and_variants_share_draws() {
    for kind in KINDS {
        let tables = |g: &Language| {
            let mut t = vec![
                g.initial_distribution().to_vec(),
                g.transition_table().to_vec(),
            ];
            if let Some(e) = g.emission_table() {
                t.push(e.to_vec());
            }
            t
        };
        let a = table1(kind, Variant::Ser, 42).unwrap();
        let b = table1(kind, Variant::Ser, 42).unwrap();
        let c = table1(kind, Variant::Ser, 43).unwrap();
        assert_eq!(tables(&a), tables(&b), "{kind}");
        assert_ne!(tables(&a), tables(&c), "{kind}");

        let ter = table1(kind, Variant::Ter, 42).unwrap();
        let thr = a.threshold().unwrap();
        let v = a.vocab();
        let row_lens: Vec<usize> = match a.order() {
            Some(_) => vec![a.initial_distribution().len(), v],
            None => {
                let h = a.hidden_states().unwrap();
                vec![h, h, v]
            }
        };
        for ((ser_t, ter_t), len) in tables(&a).iter().zip(tables(&ter)).zip(row_lens) {
            for (sr, tr) in ser_t.chunks_exact(len).zip(ter_t.chunks_exact(len)) {
                let argmax = |r: &[f64]| {
                    r.iter()
                        .enumerate()
                        .max_by(|x, y| x.1.total_cmp(y.1))
                        .unwrap()
                        .0
                };
                assert_eq!(argmax(sr), argmax(tr), "{kind}");
                let kept: f64 = tr.iter().filter(|&&p| p >= thr).sum();
                for (&s, &t) in sr.iter().zip(tr) {
                    if t < thr {
                        assert_eq!(s, 0.0, "{kind}");
                    } else {
                        assert!((s - t / kept).abs() < 1e-12, "{kind}: {s} vs {}", t / kept);
                    }
                }
            }
        }
    }
}

#[test]
fn score_fields_match_definitions() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let mut langs = Vec::new();
    for (name, lang) in all_table1().into_iter().chain(small_vocab_languages()) {
        let mut slow = lang.clone();
        slow.force_log_space();
        langs.push((name.clone(), lang));
        langs.push((format!("{name} (log space)"), slow));
    }
    for (name, lang) in langs {
        let l = enum_len(&lang);
        let v = lang.vocab();
        for _ in 0..300 {
            let x: Vec<u32> = (0..l).map(|_| rng.random_range(0..v as u32)).collect();
            let s = lang.score(&x).unwrap();
            // first_invalid: first k whose prefix x[..=k] has probability zero.
            let prefix_prob = |k: usize| -> f64 {
                let m = k + 1;
                if m >= lang.min_length() {
                    naive_prob(&lang, &x[..m])
                } else {
                    // Marginal over completions of the initial window.
                    let rest = lang.min_length() - m;
                    (0..v.pow(rest as u32))
                        .map(|i| naive_prob(&lang, &[&x[..m], &decode(i, v, rest)[..]].concat()))
                        .sum()
                }
            };
            let expected_first = (0..l).find(|&k| prefix_prob(k) == 0.0);
            assert_eq!(s.first_invalid, expected_first, "{name} {x:?}");
            let q = naive_prob(&lang, &x);
            assert_eq!(s.in_support, q > 0.0);
            if q > 0.0 {
                assert!((s.log_prob - q.ln()).abs() < 1e-9, "{name} {x:?}");
            } else {
                assert_eq!(s.log_prob, f64::NEG_INFINITY);
            }
            assert_eq!(s.in_support, s.invalid_transitions == 0);
            let expected_invalid = match lang.order() {
                Some(n) => {
                    let code = |s: &[u32]| s.iter().fold(0usize, |w, &t| w * v + t as usize);
                    let init_bad =
                        usize::from(lang.initial_distribution()[code(&x[..n - 1])] == 0.0);
                    init_bad
                        + (n - 1..l)
                            .filter(|&k| {
                                lang.transition_table()[code(&x[k + 1 - n..k]) * v + x[k] as usize]
                                    == 0.0
                            })
                            .count()
                }
                None => brute_min_restarts(&lang, &x),
            };
            assert_eq!(s.invalid_transitions, expected_invalid, "{name} {x:?}");
        }
    }
}

/// Smallest set of restart positions (by trying every subset) that makes the HMM sequence
/// explainable, per the documented definition.
fn brute_min_restarts(lang: &Language, x: &[u32]) -> usize {
    let h = lang.hidden_states().unwrap();
    let v = lang.vocab();
    let (init, trans, emit) = (
        lang.initial_distribution(),
        lang.transition_table(),
        lang.emission_table().unwrap(),
    );
    let l = x.len();
    let mut best = usize::MAX;
    for breaks in 0u32..(1 << l) {
        let n = breaks.count_ones() as usize;
        if n >= best {
            continue;
        }
        let mut set = vec![false; h];
        let mut ok = true;
        for (t, &tok) in x.iter().enumerate() {
            let emits: Vec<bool> = (0..h).map(|j| emit[j * v + tok as usize] > 0.0).collect();
            let next: Vec<bool> = if breaks >> t & 1 == 1 {
                if emits.iter().any(|&e| e) {
                    emits
                } else {
                    vec![true; h]
                }
            } else if t == 0 {
                (0..h).map(|j| init[j] > 0.0 && emits[j]).collect()
            } else {
                (0..h)
                    .map(|j| emits[j] && (0..h).any(|i| set[i] && trans[i * h + j] > 0.0))
                    .collect()
            };
            if !next.iter().any(|&b| b) {
                ok = false;
                break;
            }
            set = next;
        }
        if ok {
            best = n;
        }
    }
    best
}

#[test]
fn invalid_positions_are_located() {
    // Take an in-support 2-gram sample and break it at a known position.
    let lang = table1("2-gram", Variant::Ser, SEED).unwrap();
    let v = lang.vocab();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut x = lang.sample(100, &mut rng).unwrap();
    let k = 57;
    let ctx = x[k - 1] as usize;
    let bad = (0..v)
        .find(|&t| lang.transition_table()[ctx * v + t] == 0.0)
        .unwrap();
    x[k] = bad as u32;
    let s = lang.score(&x).unwrap();
    assert_eq!(s.first_invalid, Some(k));
    assert!(s.invalid_transitions >= 1);
    assert_eq!(s.log_prob, f64::NEG_INFINITY);
    assert!(!s.in_support);
}
