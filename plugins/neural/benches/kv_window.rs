//! The MDM's key/value cache ([`dlm_neural::kv_window`]): one denoising step uncached (the full
//! forward pass), a cache fill, and a cached window step — the dual cache's window (one block)
//! and the prefix cache's (the block to the end of the canvas) — through the model's
//! `TensorKvCache`, logits read back to the host.
//!
//! * `quick/…` — the quick suite's `mdm-tiny` (hidden 64, 1 layer, 4 heads, vocabulary 8),
//!   50 sequences of 64 positions, blocks of 8 starting at position 32;
//! * `cpu/…` — `NetConfig::cpu()` (hidden 128, 4 layers, 4 heads), 16 × 512, blocks of 32
//!   starting at position 256.
//!
//! Run: `cargo bench -p dlm-neural --bench kv_window`. `DLM_NEURAL_BENCH_DEVICE` picks another
//! device than flex, one this build supports.

use burn::tensor::Device;
use criterion::{criterion_group, criterion_main, Criterion};
use dlm_neural::kv_window::CachedMdm;
use dlm_neural::model::to_host;
use dlm_neural::{MdmDenoiser, ModelKind, NetConfig, Transformer};
use dlm_sdk::kv_cache::TensorKvCache;
use dlm_sdk::sampler::device::TensorDenoiser;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

const VOCAB: usize = 8;

fn tokens(n: usize, mask_share: f64, seed: u64) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            if rng.random::<f64>() < mask_share {
                VOCAB as u32
            } else {
                rng.random_range(0..VOCAB as u32)
            }
        })
        .collect()
}

/// flex, or the device `DLM_NEURAL_BENCH_DEVICE` names.
fn bench_device() -> Device {
    let name = std::env::var("DLM_NEURAL_BENCH_DEVICE").ok();
    dlm_neural::plugin::parse_device(name.as_deref())
        .expect("DLM_NEURAL_BENCH_DEVICE names a device this build of dlm-neural supports")
}

struct Setting {
    name: &'static str,
    net: NetConfig,
    batch: usize,
    length: usize,
    block: std::ops::Range<usize>,
}

fn steps(c: &mut Criterion) {
    let device = bench_device();
    let quick = NetConfig {
        hidden: 64,
        layers: 1,
        heads: 4,
        ff_mult: 4,
        max_length: None,
    };
    let settings = [
        Setting {
            name: "quick",
            net: quick,
            batch: 50,
            length: 64,
            block: 32..40,
        },
        Setting {
            name: "cpu",
            net: NetConfig::cpu(),
            batch: 16,
            length: 512,
            block: 256..288,
        },
    ];
    for s in settings {
        let config = s.net.resolved(s.length).unwrap();
        let mut mdm = CachedMdm::new(MdmDenoiser {
            net: Transformer::new(ModelKind::Mdm, &config, VOCAB, 0, &device),
            device: device.clone(),
            label: "bench".into(),
        });
        let (batch, length) = (s.batch, s.length);
        let canvas = tokens(batch * length, 0.5, 1);
        let mut group = c.benchmark_group(s.name);
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(5));
        group.bench_function("full", |b| {
            b.iter(|| to_host(mdm.logits(&canvas, batch, length, 0.5).unwrap()))
        });
        group.bench_function("fill", |b| {
            b.iter(|| to_host(mdm.logits_and_fill(&canvas, batch, length, 0.5).unwrap()))
        });
        mdm.logits_and_fill(&canvas, batch, length, 0.5).unwrap();
        let windows = [("dual", s.block.clone()), ("prefix", s.block.start..length)];
        for (name, window) in windows {
            group.bench_function(format!("{name}/{}", window.len()), |b| {
                b.iter(|| {
                    to_host(
                        mdm.logits_window(&canvas, batch, length, window.clone(), 0.5)
                            .unwrap(),
                    )
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, steps);
criterion_main!(benches);
