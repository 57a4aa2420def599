//! Throughput of the verifier over the GSM8K test set's gold solutions (1,319 completions per
//! iteration; both modes and both extractions, as `verify` does them).
//!
//! `CARGO_TARGET_DIR=/work/target-reasoning cargo bench -p dlm-reasoning`. Skips with a message
//! when the data directory (`$DLM_BENCH_DATA`, default the repository's `data/`) lacks the file.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dlm_reasoning::data::{default_data_dir, load, Split};
use dlm_reasoning::Verifier;

fn verify_test_set(c: &mut Criterion) {
    let dir = default_data_dir();
    let problems = match load(&dir, Split::Test) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipping the verifier bench: {e}");
            return;
        }
    };
    let verifier = Verifier::default();
    let mut group = c.benchmark_group("gsm8k_test");
    group.throughput(Throughput::Elements(problems.len() as u64));
    group.bench_function("verify_1319_gold_solutions", |b| {
        b.iter(|| {
            let mut wrong = 0usize;
            for p in &problems {
                let v = verifier.verify(black_box(&p.answer), Some(&p.gold));
                wrong += v.annotation.wrong + v.free_text.wrong;
            }
            black_box(wrong)
        })
    });
    group.finish();
}

criterion_group!(benches, verify_test_set);
criterion_main!(benches);
