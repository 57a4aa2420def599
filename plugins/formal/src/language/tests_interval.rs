//! The interval language: closed forms against enumeration and against its explicit HMM form.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::tests::{brute_marginals, decode, enumerate};
use super::*;

/// (interval, vocab, modulus, enumeration length): odd and even vocabularies, partial last
/// intervals, k = 2, a modulus other than 2, the copy constraint (modulus = V).
const CASES: [(usize, usize, usize, usize); 7] = [
    (2, 2, 2, 7),
    (3, 3, 2, 8),
    (4, 3, 3, 9),
    (5, 4, 2, 7),
    (3, 5, 2, 6),
    (4, 8, 2, 6),
    (3, 6, 4, 6),
];

fn both(k: usize, v: usize, m: usize) -> (Language, Language) {
    (
        Language::interval(k, v, m).unwrap(),
        Language::interval_hmm(k, v, m).unwrap(),
    )
}

/// Every sequence of length `l` with `q` from the closed-form implementation.
fn enumerate_closed(lang: &Language, l: usize) -> Vec<(Vec<u32>, f64)> {
    let v = lang.vocab();
    (0..v.pow(l as u32))
        .map(|i| {
            let x = decode(i, v, l);
            let p = lang.log_prob(&x).unwrap().exp();
            (x, p)
        })
        .collect()
}

/// Hand-counted parity probability and violation probability.
#[test]
fn class_sizes_and_violation_probability() {
    let lang = Language::interval(4, 8, 2).unwrap();
    assert_eq!(lang.interval_violation_probability(), Some(0.5));
    // V = 3, parity: classes {0, 2} and {1}: p_ok = (4 + 1)/9.
    let lang = Language::interval(4, 3, 2).unwrap();
    let p = lang.interval_violation_probability().unwrap();
    assert!((p - 4.0 / 9.0).abs() < 1e-15, "{p}");
    // V = 6, modulus 4: classes {0,4}, {1,5}, {2}, {3}: p_ok = (4 + 4 + 1 + 1)/36.
    let lang = Language::interval(3, 6, 4).unwrap();
    let p = lang.interval_violation_probability().unwrap();
    assert!((p - 26.0 / 36.0).abs() < 1e-15, "{p}");
    // Modulus = V: copy; p_ok = 1/V.
    let lang = Language::interval(3, 5, 5).unwrap();
    let p = lang.interval_violation_probability().unwrap();
    assert!((p - 0.8).abs() < 1e-15, "{p}");
}

#[test]
fn interval_probabilities_sum_to_one_and_match_the_hmm_form() {
    for (k, v, m, l) in CASES {
        let (closed, hmm) = both(k, v, m);
        let table = enumerate(&hmm, l); // naive sum over hidden paths of the HMM tables
        let total: f64 = table.iter().map(|(_, p)| p).sum();
        assert!((total - 1.0).abs() < 1e-12, "k{k} V{v} m{m}: Σ q = {total}");
        let mut closed_total = 0.0;
        for (x, p) in &table {
            let s = closed.score(x).unwrap();
            assert_eq!(s.in_support, *p > 0.0, "k{k} V{v} m{m} {x:?}");
            if *p > 0.0 {
                assert!(
                    (s.log_prob - p.ln()).abs() < 1e-12,
                    "k{k} V{v} m{m} {x:?}: {} vs {}",
                    s.log_prob,
                    p.ln()
                );
            } else {
                assert_eq!(s.log_prob, f64::NEG_INFINITY);
            }
            // The HMM engine (scaled forward) agrees too.
            let h = hmm.score(x).unwrap();
            assert_eq!(h.in_support, s.in_support);
            if s.in_support {
                assert!((h.log_prob - s.log_prob).abs() < 1e-12);
            }
            closed_total += s.log_prob.exp();
        }
        assert!((closed_total - 1.0).abs() < 1e-12, "{closed_total}");
    }
}

#[test]
fn interval_score_fields() {
    let lang = Language::interval(4, 8, 2).unwrap();
    // Intervals [0..4), [4..8), [8..10) partial.
    let good = [1, 2, 3, 5, 0, 7, 7, 6, 1, 2];
    let s = lang.score(&good).unwrap();
    assert!(s.in_support);
    assert_eq!((s.first_invalid, s.invalid_transitions), (None, 0));
    // q = (1/8)^3 · (1/4) per interval, (1/8)^2 for the partial one.
    let want = 2.0 * (8f64.powi(-3) / 4.0).ln() + 8f64.powi(-2).ln();
    assert!((s.log_prob - want).abs() < 1e-12);
    let mut bad = good;
    bad[7] = 5; // second interval: 0 (even) … 5 (odd)
    let s = lang.score(&bad).unwrap();
    assert!(!s.in_support);
    assert_eq!((s.first_invalid, s.invalid_transitions), (Some(7), 1));
    bad[3] = 4; // first interval too: 1 (odd) … 4 (even)
    let s = lang.score(&bad).unwrap();
    assert_eq!((s.first_invalid, s.invalid_transitions), (Some(3), 2));
    // The partial interval is unconstrained.
    let mut tail = good;
    tail[9] = 7;
    assert!(lang.score(&tail).unwrap().in_support);
}

#[test]
fn interval_entropy_and_support_density_are_exact() {
    for (k, v, m, l) in CASES {
        let (closed, hmm) = both(k, v, m);
        for len in 1..=l {
            let table = enumerate_closed(&closed, len);
            let brute: f64 = -table
                .iter()
                .filter(|(_, p)| *p > 0.0)
                .map(|(_, p)| p * p.ln())
                .sum::<f64>();
            let e = closed.entropy(len).unwrap();
            assert!(e.exact && e.std_error == 0.0);
            assert!(
                (e.nats - brute).abs() < 1e-10,
                "k{k} V{v} m{m} L{len}: {} vs {brute}",
                e.nats
            );
            let count = table.iter().filter(|(_, p)| *p > 0.0).count();
            let density = (count as f64 / table.len() as f64).log10();
            let got = closed.support_log10_density(len).unwrap();
            assert!((got - density).abs() < 1e-12, "{got} vs {density}");
        }
        // Long sequences: the HMM engines (subset construction, Monte Carlo entropy) agree.
        for len in [64, 65, 257] {
            let a = closed.support_log10_density(len).unwrap();
            let b = hmm.support_log10_density(len).unwrap();
            assert!(
                (a - b).abs() < 1e-9 * a.abs().max(1.0),
                "L{len}: {a} vs {b}"
            );
        }
        let e_hmm = hmm.entropy(64).unwrap();
        let e = closed.entropy(64).unwrap();
        assert!(
            (e.nats - e_hmm.nats).abs() <= 5.0 * e_hmm.std_error + 1e-9,
            "{} vs {} ± {}",
            e.nats,
            e_hmm.nats,
            e_hmm.std_error
        );
    }
    // Parity with an even vocabulary: H = n(k ln V - ln 2) + r ln V, density n·log10(1/2).
    let lang = Language::interval(16, 8, 2).unwrap();
    let (n, r) = (512 / 16, 0);
    let want = n as f64 * (16.0 * 8f64.ln() - 2f64.ln()) + r as f64 * 8f64.ln();
    assert!((lang.entropy(512).unwrap().nats - want).abs() < 1e-9);
    let d = lang.support_log10_density(520).unwrap();
    assert!((d - 32.0 * 0.5f64.log10()).abs() < 1e-12);
}

#[test]
fn interval_marginals_match_enumeration_and_the_hmm_form() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for (k, v, m, l) in CASES {
        let (closed, hmm) = both(k, v, m);
        let mask = closed.mask_id();
        let table = enumerate_closed(&closed, l);
        let mut seqs = Vec::new();
        for rate in [0.0, 1.0, 0.3, 0.5, 0.7, 0.5, 0.9, 0.2, 0.6, 0.4] {
            let x = closed.sample(l, &mut rng).unwrap();
            seqs.push(
                x.iter()
                    .map(|&t| if rng.random::<f64>() < rate { mask } else { t })
                    .collect::<Vec<u32>>(),
            );
        }
        // Only the pair's partner unmasked, in every interval.
        let mut pair = vec![mask; l];
        for (i, chunk) in pair.chunks_exact_mut(k).enumerate() {
            chunk[if i % 2 == 0 { 0 } else { k - 1 }] = (i % v) as u32;
        }
        seqs.push(pair);
        let batch = seqs.len();
        let tokens: Vec<u32> = seqs.concat();
        let mut out = vec![0.0; batch * l * v];
        let mut out_hmm = vec![0.0; batch * l * v];
        closed
            .conditional_marginals(&tokens, batch, l, &mut out)
            .unwrap();
        hmm.conditional_marginals(&tokens, batch, l, &mut out_hmm)
            .unwrap();
        for (b, masked) in seqs.iter().enumerate() {
            let brute = brute_marginals(&table, masked, v).unwrap();
            let got = &out[b * l * v..(b + 1) * l * v];
            let via_hmm = &out_hmm[b * l * v..(b + 1) * l * v];
            for (i, ((g, e), h)) in got.iter().zip(&brute).zip(via_hmm).enumerate() {
                assert!(
                    (g - e).abs() < 1e-12 && (h - e).abs() < 1e-9,
                    "k{k} V{v} m{m} {masked:?} pos {} tok {}: {g} / hmm {h} vs {e}",
                    i / v,
                    i % v
                );
                assert_eq!(*g == 0.0, *e == 0.0);
            }
        }
    }
}

#[test]
fn interval_inconsistent_sequences_and_the_relaxed_language() {
    let lang = Language::interval(3, 4, 2).unwrap();
    let mask = lang.mask_id();
    let (l, v) = (9, 4);
    // Interval 0 broken (0 … 1), interval 1: first known (3), last masked; interval 2 masked.
    let broken = vec![0, mask, 1, 3, mask, mask, mask, mask, mask];
    let fine = vec![mask; l];
    let tokens = [fine.clone(), broken.clone()].concat();
    let mut out = vec![0.0; 2 * l * v];
    let err = lang
        .conditional_marginals(&tokens, 2, l, &mut out)
        .unwrap_err();
    assert_eq!(
        err,
        LanguageError::Inconsistent {
            sequence: 1,
            count: 1
        }
    );
    assert!(out[l * v..].iter().all(|x| x.is_nan()));
    assert!(out[..l * v].iter().all(|&x| x == 0.25));

    let relaxed = lang.relaxed().unwrap();
    relaxed
        .conditional_marginals(&tokens, 2, l, &mut out)
        .unwrap();
    let row = |p: usize| &out[(l + p) * v..(l + p + 1) * v];
    // The broken interval's masked interior is uniform.
    assert_eq!(row(1), &[0.25; 4]);
    // The next interval keeps its exact conditionals: position 5 must be odd like 3.
    assert_eq!(row(5), &[0.0, 0.5, 0.0, 0.5]);
    assert_eq!(row(4), &[0.25; 4]);
    assert_eq!(row(6), &[0.25; 4]);
    // Unmasked positions are one-hot.
    assert_eq!(row(2), &[0.0, 1.0, 0.0, 0.0]);
    // Scoring is unchanged by relaxing.
    let x = [0, 2, 1, 3, 0, 1, 2, 2, 2];
    assert_eq!(relaxed.score(&x).unwrap(), lang.score(&x).unwrap());
    assert!(Language::ngram(2, 3, 2.0, 0.0, 0)
        .unwrap()
        .relaxed()
        .is_none());
}

#[test]
fn interval_samples_follow_q() {
    let lang = Language::interval(3, 3, 2).unwrap();
    let l = 5; // one complete interval and a partial one of 2
    let table = enumerate_closed(&lang, l);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let n = 60_000;
    let mut counts = vec![0usize; table.len()];
    for _ in 0..n {
        let x = lang.sample(l, &mut rng).unwrap();
        let idx = x.iter().fold(0usize, |a, &t| a * 3 + t as usize);
        counts[idx] += 1;
    }
    for ((x, p), &c) in table.iter().zip(&counts) {
        let f = c as f64 / n as f64;
        let tol = 5.0 * (p * (1.0 - p) / n as f64).sqrt() + 1e-12;
        assert!((f - p).abs() <= tol, "{x:?}: {f} vs {p}");
    }
}

#[test]
fn interval_ddpm_ser_closed_form() {
    let lang = Language::interval(8, 8, 2).unwrap();
    // One step: 1 - 2^-n.
    assert_eq!(lang.interval_ddpm_ser(16, 1), Some(0.75));
    assert!((lang.interval_ddpm_ser(512, 1).unwrap() - (1.0 - 0.5f64.powi(64))).abs() < 1e-15);
    // T steps: 1 - (1 - 1/(2T))^n; fewer than one interval: 0.
    let got = lang.interval_ddpm_ser(64, 4).unwrap();
    assert!((got - (1.0 - (1.0 - 0.125f64).powi(8))).abs() < 1e-15);
    assert_eq!(lang.interval_ddpm_ser(7, 1), Some(0.0));
    assert_eq!(lang.interval_ddpm_ser(16, 0), None);
    // Decreasing in T, increasing in L: the steps needed for a fixed SER grow linearly in L.
    let steps_for = |len: usize| {
        (1..100_000)
            .find(|&t| lang.interval_ddpm_ser(len, t).unwrap() <= 0.1)
            .unwrap()
    };
    let (a, b) = (steps_for(512), steps_for(1024));
    assert!((b as f64 / a as f64 - 2.0).abs() < 0.05, "{a} {b}");
    assert!(Language::hmm(2, 3, 1.0, 0.0, 0)
        .unwrap()
        .interval_ddpm_ser(4, 1)
        .is_none());
}

#[test]
fn interval_errors_and_labels() {
    use LanguageError as E;
    assert!(matches!(
        Language::interval(1, 8, 2),
        Err(E::InvalidInterval { .. })
    ));
    assert!(matches!(
        Language::interval(0, 8, 2),
        Err(E::InvalidInterval { .. })
    ));
    assert!(matches!(
        Language::interval(4, 8, 9),
        Err(E::InvalidInterval { .. })
    ));
    assert!(matches!(
        Language::interval(4, 8, 1),
        Err(E::InvalidInterval { .. })
    ));
    assert!(matches!(
        Language::interval(4, 1, 2),
        Err(E::InvalidVocab { .. })
    ));
    assert!(matches!(
        Language::interval_hmm(1 << 20, 8, 8),
        Err(E::TooLarge { .. })
    ));
    assert!(matches!(
        Language::interval_hmm(usize::MAX, 8, 8),
        Err(E::TooLarge { .. })
    ));
    let lang = Language::interval(16, 8, 2).unwrap();
    assert_eq!(lang.kind_label(), "interval-16");
    assert_eq!(
        Language::interval(16, 8, 3).unwrap().kind_label(),
        "interval-16-mod3"
    );
    assert_eq!(
        (lang.interval_length(), lang.interval_modulus()),
        (Some(16), Some(2))
    );
    assert_eq!((lang.order(), lang.hidden_states()), (None, None));
    assert_eq!(lang.origin(), &Origin::Interval);
    assert!(lang.initial_distribution().is_empty() && lang.emission_table().is_none());
    assert!(lang.has_zero_entries());
    assert!(matches!(lang.smoothed(0.1), Err(E::Unsupported { .. })));
    assert!(matches!(lang.entropy(0), Err(E::LengthTooShort { .. })));
    assert!(matches!(
        lang.score(&[8, 0]),
        Err(E::TokenOutOfRange { .. })
    ));
    let mut out = vec![0.0; 3 * 8];
    assert!(matches!(
        lang.conditional_marginals(&[0, 9, 1], 1, 3, &mut out),
        Err(E::BatchTokenOutOfRange { position: 1, .. })
    ));
    // Long sequences: in support, finite log-probability, exact marginals stay one-hot/uniform.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let x = lang.sample(4099, &mut rng).unwrap();
    let s = lang.score(&x).unwrap();
    assert!(s.in_support && s.log_prob.is_finite());
}
