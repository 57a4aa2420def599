//! Errors instead of panics on bad input, labels and ids, and the timing of the engines.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::tests::SEED;
use super::*;

#[test]
fn errors_instead_of_panics() {
    use LanguageError as E;
    assert!(matches!(
        Language::ngram(1, 8, 2.0, 0.0, 0),
        Err(E::InvalidOrder { order: 1 })
    ));
    assert!(matches!(
        Language::ngram(0, 8, 2.0, 0.0, 0),
        Err(E::InvalidOrder { .. })
    ));
    assert!(matches!(
        Language::ngram(2, 0, 2.0, 0.0, 0),
        Err(E::InvalidVocab { .. })
    ));
    assert!(matches!(
        Language::ngram(2, 1, 2.0, 0.0, 0),
        Err(E::InvalidVocab { .. })
    ));
    assert!(matches!(
        Language::ngram(40, 8, 2.0, 0.0, 0),
        Err(E::TooLarge { .. })
    ));
    assert!(matches!(
        Language::ngram(usize::MAX, 8, 2.0, 0.0, 0),
        Err(E::TooLarge { .. })
    ));
    assert!(matches!(
        Language::hmm(1 << 20, 8, 2.0, 0.0, 0),
        Err(E::TooLarge { .. })
    ));
    assert!(matches!(
        Language::hmm(usize::MAX, 8, 2.0, 0.0, 0),
        Err(E::TooLarge { .. })
    ));
    for t in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                Language::ngram(2, 8, t, 0.0, 0),
                Err(E::InvalidTemperature { .. })
            ),
            "{t}"
        );
        assert!(
            matches!(
                Language::hmm(4, 8, t, 0.0, 0),
                Err(E::InvalidTemperature { .. })
            ),
            "{t}"
        );
    }
    for thr in [-0.1, 1.0, f64::NAN] {
        assert!(
            matches!(
                Language::ngram(2, 8, 2.0, thr, 0),
                Err(E::InvalidThreshold { .. })
            ),
            "{thr}"
        );
    }
    assert!(matches!(
        Language::ngram(2, 8, 2.0, 0.99, 0),
        Err(E::EmptyRow { .. })
    ));
    assert!(matches!(
        Language::hmm(0, 8, 2.0, 0.0, 0),
        Err(E::InvalidStates { .. })
    ));
    assert!(matches!(
        table1("5-gram", Variant::Ter, 0),
        Err(E::UnknownKind { .. })
    ));

    let g = table1("3-gram", Variant::Ser, 0).unwrap();
    let h = table1("hmm", Variant::Ser, 0).unwrap();
    assert!(matches!(
        g.log_prob(&[1]),
        Err(E::LengthTooShort {
            length: 1,
            min: 2,
            ..
        })
    ));
    assert!(matches!(h.log_prob(&[]), Err(E::LengthTooShort { .. })));
    assert!(matches!(
        g.log_prob(&[1, 2, 9]),
        Err(E::TokenOutOfRange {
            position: 2,
            token: 9,
            ..
        })
    ));
    assert!(matches!(
        h.score(&[8, 1]),
        Err(E::TokenOutOfRange { position: 0, .. })
    ));
    assert!(matches!(
        g.sample(1, &mut ChaCha8Rng::seed_from_u64(0)),
        Err(E::LengthTooShort { .. })
    ));
    assert!(matches!(
        h.sample(0, &mut ChaCha8Rng::seed_from_u64(0)),
        Err(E::LengthTooShort { .. })
    ));
    assert!(matches!(g.entropy(0), Err(E::LengthTooShort { .. })));
    assert!(matches!(
        h.support_log10_density(0),
        Err(E::LengthTooShort { .. })
    ));

    let mut out = vec![0.0; 2 * 4 * 8];
    assert!(matches!(
        g.conditional_marginals(&[8; 7], 2, 4, &mut out),
        Err(E::BufferSize { what: "tokens", .. })
    ));
    assert!(matches!(
        g.conditional_marginals(&[8; 8], 2, 4, &mut out[1..]),
        Err(E::BufferSize { what: "out", .. })
    ));
    assert!(matches!(
        g.conditional_marginals(&[8; 2], 2, 1, &mut out[..16]),
        Err(E::LengthTooShort { .. })
    ));
    let mut toks = [8u32; 8];
    toks[6] = 9;
    assert!(matches!(
        h.conditional_marginals(&toks, 2, 4, &mut out),
        Err(E::BatchTokenOutOfRange {
            sequence: 1,
            position: 2,
            token: 9,
            ..
        })
    ));
    assert!(g.conditional_marginals(&[], 0, 4, &mut []).is_ok());
    assert!(g.conditional_marginals(&[8; 8], 2, 4, &mut out).is_ok());
    // Messages say what to do.
    let msg = Language::ngram(1, 8, 2.0, 0.0, 0).unwrap_err().to_string();
    assert!(msg.contains("at least 2"), "{msg}");
}

#[test]
fn labels_and_ids() {
    let g = table1("4-gram", Variant::Ter, 1).unwrap();
    assert_eq!(
        (g.kind_label(), g.vocab(), g.mask_id(), g.min_length()),
        ("4-gram".to_string(), 8, 8, 3)
    );
    assert_eq!(g.initial_distribution().len(), 512);
    assert_eq!(g.transition_table().len(), 512 * 8);
    assert!(g.emission_table().is_none());
    let h = table1("hmm", Variant::Ser, 1).unwrap();
    assert_eq!(
        (h.kind_label(), h.min_length(), h.hidden_states()),
        ("hmm-32".to_string(), 1, Some(32))
    );
    assert_eq!(
        (h.temperature(), h.threshold(), h.seed()),
        (Some(3.2), Some(0.003), Some(1))
    );
    assert_eq!(
        h.origin(),
        &Origin::Generated {
            temperature: 3.2,
            threshold: 0.003,
            seed: 1
        }
    );
    assert_eq!("SER".parse::<Variant>(), Ok(Variant::Ser));
    assert_eq!(Variant::Ter.to_string(), "ter");
}

/// Release-mode timing: `cargo test --release -p dlm-formal --lib -- --ignored --nocapture timing`.
#[test]
#[ignore]
fn timing() {
    use std::time::Instant;
    let (batch, l) = (16, 512);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    for (kind, variant) in [
        ("4-gram", Variant::Ser),
        ("4-gram", Variant::Ter),
        ("hmm", Variant::Ser),
        ("hmm", Variant::Ter),
    ] {
        let lang = table1(kind, variant, SEED).unwrap();
        let v = lang.vocab();
        let mask = lang.mask_id();
        for rate in [1.0, 0.5] {
            let mut tokens = Vec::new();
            for _ in 0..batch {
                let x = lang.sample(l, &mut rng).unwrap();
                tokens.extend(
                    x.iter()
                        .map(|&t| if rng.random::<f64>() < rate { mask } else { t }),
                );
            }
            let mut out = vec![0.0; batch * l * v];
            lang.conditional_marginals(&tokens, batch, l, &mut out)
                .unwrap();
            let reps = 10;
            let t0 = Instant::now();
            for _ in 0..reps {
                lang.conditional_marginals(&tokens, batch, l, &mut out)
                    .unwrap();
            }
            let ms = t0.elapsed().as_secs_f64() * 1e3 / reps as f64;
            println!("conditional_marginals {kind}/{variant} 16x512 mask rate {rate}: {ms:.2} ms");
        }
    }
    for variant in [Variant::Ser, Variant::Ter] {
        let lang = table1("hmm", variant, SEED).unwrap();
        let seqs: Vec<Vec<u32>> = (0..2000)
            .map(|_| lang.sample(l, &mut rng).unwrap())
            .collect();
        let t0 = Instant::now();
        let total: f64 = seqs.iter().map(|x| lang.log_prob(x).unwrap()).sum();
        println!(
            "score 2000x512 hmm/{variant}: {:.1} ms (mean log q {:.2})",
            t0.elapsed().as_secs_f64() * 1e3,
            total / 2000.0
        );
        let t0 = Instant::now();
        let e = lang.entropy(512).unwrap();
        println!(
            "entropy hmm/{variant} L=512: {:.1} ms: {e:?} (optimal TER {:.4})",
            t0.elapsed().as_secs_f64() * 1e3,
            e.optimal_ter(512)
        );
        let t0 = Instant::now();
        let d = lang.support_log10_density(512).unwrap();
        println!(
            "support density hmm/{variant} L=512: {:.1} ms: log10 {d:.3}",
            t0.elapsed().as_secs_f64() * 1e3
        );
    }
    for kind in ["2-gram", "3-gram", "4-gram"] {
        for variant in [Variant::Ter, Variant::Ser] {
            let lang = table1(kind, variant, SEED).unwrap();
            let e = lang.entropy(512).unwrap();
            let d = lang.support_log10_density(512).unwrap();
            println!("{kind}/{variant} L=512: entropy {:.3} nats (optimal TER {:.4}), support log10 density {d:.3}", e.nats, e.optimal_ter(512));
        }
    }
}
