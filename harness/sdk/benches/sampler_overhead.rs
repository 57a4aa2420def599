//! The samplers' own cost per step — everything except the denoiser call — at batch 16 ×
//! length 512 (vocabulary 8), against a denoiser that only writes a uniform distribution.
//! Overhead per step = (sampler run − the same number of bare denoiser calls) / steps.
//!
//! Run with `cargo bench -p dlm-sdk --bench sampler_overhead`.

use criterion::{criterion_group, criterion_main, Criterion};
use dlm_sdk::sampler::generate;
use dlm_sdk::{Denoiser, GenerateRequest, Result, SamplerSpec};
use std::time::Duration;

const BATCH: usize = 16;
const LENGTH: usize = 512;
const VOCAB: usize = 8;

/// Writes a fixed, slightly uneven distribution (so confidence ranking has work to do).
struct Cheap;

impl Denoiser for Cheap {
    fn vocab_size(&self) -> usize {
        VOCAB
    }
    fn denoise(
        &mut self,
        _tokens: &[u32],
        _b: usize,
        _l: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        for (i, x) in out.iter_mut().enumerate() {
            *x = 0.1 + 0.05 * ((i * 7919) % 5) as f64;
        }
        Ok(())
    }
}

fn request(name: &str, steps: usize) -> GenerateRequest {
    GenerateRequest {
        batch_size: BATCH,
        length: LENGTH,
        sampler: SamplerSpec {
            name: name.into(),
            steps,
            schedule: None,
            params: Default::default(),
        },
        seed: 1,
        first_index: 0,
        prompts: None,
        prompt_texts: None,
        trace: false,
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("sampler 16x512 (512 steps)");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    let tokens = vec![VOCAB as u32; BATCH * LENGTH];
    let mut out = vec![0.0; BATCH * LENGTH * VOCAB];
    group.bench_function("bare denoiser x512", |b| {
        b.iter(|| {
            for _ in 0..LENGTH {
                Cheap
                    .denoise(&tokens, BATCH, LENGTH, 1.0, &mut out)
                    .unwrap();
            }
        })
    });
    for name in ["ddpm", "low_confidence", "threshold", "eb", "left_to_right"] {
        let req = request(name, LENGTH);
        group.bench_function(name, |b| b.iter(|| generate(&mut Cheap, &req).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
