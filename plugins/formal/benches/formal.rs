//! Benchmarks of the formal-language core and the oracle:
//!
//! 1. scoring 2000 sequences of length 512 under Table 1's 32-state HMM (SER variant), one
//!    sequence at a time (`score`) and all at once (`score_batch`, checked bit-identical first;
//!    `tools/perf/hmm_numpy.py` is numpy's batched forward pass on the same sizes);
//! 2. one `conditional_marginals` call on a batch of 16 × 512 (half the positions masked) for
//!    the 4-gram and the HMM (SER variants), and for the interval language;
//! 3. one `Denoiser::denoise` call of the plugin's `Oracle` on 16 × 512.
//!
//! `CARGO_TARGET_DIR=/tmp/formal-target cargo bench -p dlm-formal` (about a minute).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use dlm_formal::language::{table1, Language, Variant};
use dlm_formal::plugin::{build_language, Oracle};
use dlm_sdk::Denoiser;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const LENGTH: usize = 512;
const BATCH: usize = 16;
const SEED: u64 = 20250214;

/// `BATCH` ground-truth sequences with each position masked with probability `rate`.
fn masked_batch(lang: &Language, rate: f64, rng: &mut ChaCha8Rng) -> Vec<u32> {
    let mask = lang.mask_id();
    let mut tokens = Vec::with_capacity(BATCH * LENGTH);
    for _ in 0..BATCH {
        let x = lang.sample(LENGTH, rng).expect("valid length");
        tokens.extend(
            x.iter()
                .map(|&t| if rng.random::<f64>() < rate { mask } else { t }),
        );
    }
    tokens
}

fn score(c: &mut Criterion) {
    let lang = table1("hmm", Variant::Ser, SEED).expect("Table 1 HMM");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let seqs: Vec<Vec<u32>> = (0..2000)
        .map(|_| lang.sample(LENGTH, &mut rng).expect("valid length"))
        .collect();
    c.bench_function("score/hmm-32-ser/2000x512", |b| {
        b.iter(|| {
            for x in &seqs {
                black_box(lang.score(black_box(x)).expect("valid tokens"));
            }
        })
    });
    // The batched forward pass must give the one-sequence scores bit for bit before it is timed.
    let batched = lang.score_batch(&seqs).expect("valid tokens");
    for (k, (x, b)) in seqs.iter().zip(&batched).enumerate() {
        let one = lang.score(x).expect("valid tokens");
        assert_eq!(b.log_prob.to_bits(), one.log_prob.to_bits(), "sequence {k}");
        assert_eq!(b, &one, "sequence {k}");
    }
    c.bench_function("score_batch/hmm-32-ser/2000x512", |b| {
        b.iter(|| black_box(lang.score_batch(black_box(&seqs)).expect("valid tokens")))
    });
}

fn marginals(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let languages = [
        (
            "4-gram-ser",
            table1("4-gram", Variant::Ser, SEED).expect("4-gram"),
        ),
        (
            "hmm-32-ser",
            table1("hmm", Variant::Ser, SEED).expect("HMM"),
        ),
        (
            "interval-16",
            Language::interval(16, 8, 2).expect("interval"),
        ),
    ];
    for (name, lang) in languages {
        let tokens = masked_batch(&lang, 0.5, &mut rng);
        let mut out = vec![0.0; BATCH * LENGTH * lang.vocab()];
        c.bench_function(
            &format!("conditional_marginals/{name}/16x512/half-masked"),
            |b| {
                b.iter(|| {
                    lang.conditional_marginals(black_box(&tokens), BATCH, LENGTH, &mut out)
                        .expect("consistent batch");
                    black_box(&out);
                })
            },
        );
    }
}

fn oracle_denoise(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for (name, task, config) in [
        (
            "4-gram-ser",
            "ngram",
            json!({"order": 4, "variant": "ser", "seed": SEED}),
        ),
        ("hmm-32-ser", "hmm", json!({"variant": "ser", "seed": SEED})),
    ] {
        let built = build_language(task, &config).expect("language");
        let tokens = masked_batch(&built.language, 0.5, &mut rng);
        let mut oracle = Oracle::from_language(built.language, built.fallback);
        let mut out = vec![0.0; BATCH * LENGTH * oracle.vocab_size()];
        c.bench_function(&format!("oracle_denoise/{name}/16x512/half-masked"), |b| {
            b.iter(|| {
                oracle
                    .denoise(black_box(&tokens), BATCH, LENGTH, 0.5, &mut out)
                    .expect("denoise");
                black_box(&out);
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = score, marginals, oracle_denoise
}
criterion_main!(benches);
