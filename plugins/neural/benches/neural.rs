//! Speed of the neural models on the flex (CPU) backend, CPU-sized architecture
//! (`NetConfig::cpu()`: hidden 128, 4 layers, 4 heads, ff 4×):
//!
//! * `mdm_forward/16x512` — one `Denoiser::denoise` call (forward pass, SUBS, copy of the
//!   16 × 512 × vocab probabilities to the host), the cost the SDK samplers' per-step overhead
//!   is compared with;
//! * `train_step/8x512` — one MDLM training step (noise, forward, backward, AdamW), reported as
//!   tokens/s;
//! * `ar_next_token/{cached,uncached}/P` — one AR `next` call for a batch of 16 after a prefix of
//!   P positions. With the (preallocated, written in place) KV cache a token costs the
//!   per-token work of the network plus attention over P cached positions, which reads the
//!   whole cache: O(P), but without the per-token copy of it. The cache stays warm between
//!   iterations, as between the steps of a generation. `cached_bf16/P` keeps the cache in
//!   bf16 (`kv_cache_dtype: bf16`), half the bytes per step.
//!
//! Run: `cargo bench -p dlm-neural --bench neural`. `DLM_NEURAL_BENCH_DEVICE` picks another
//! device than flex, one this build supports (`tch` with `--features tch`: tools/tch/test.sh).

use burn::optim::GradientsParams;
use burn::tensor::activation::softmax;
use burn::tensor::Device;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dlm_neural::model::{to_host, tokens_tensor, ArCache, KvDtype};
use dlm_neural::train::{mdm_loss, optimizer};
use dlm_neural::{MdmDenoiser, ModelKind, NetConfig, TrainConfig, Transformer};
use dlm_sdk::Denoiser;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

const VOCAB: usize = 8;
const LENGTH: usize = 512;

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

fn config() -> NetConfig {
    NetConfig::cpu().resolved(LENGTH).unwrap()
}

/// flex, or the device `DLM_NEURAL_BENCH_DEVICE` names.
fn bench_device() -> Device {
    let name = std::env::var("DLM_NEURAL_BENCH_DEVICE").ok();
    dlm_neural::plugin::parse_device(name.as_deref())
        .expect("DLM_NEURAL_BENCH_DEVICE names a device this build of dlm-neural supports")
}

fn mdm_forward(c: &mut Criterion) {
    let device = bench_device();
    let batch = 16;
    let mut denoiser = MdmDenoiser {
        net: Transformer::new(ModelKind::Mdm, &config(), VOCAB, 0, &device),
        device,
        label: "cpu".into(),
    };
    let input = tokens(batch * LENGTH, 0.5, 1);
    let mut out = vec![0.0; batch * LENGTH * VOCAB];
    let mut group = c.benchmark_group("mdm_forward");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements((batch * LENGTH) as u64));
    group.bench_function("16x512", |b| {
        b.iter(|| {
            denoiser
                .denoise(&input, batch, LENGTH, 0.5, &mut out)
                .unwrap()
        })
    });
    group.finish();
}

fn train_step(c: &mut Criterion) {
    let device = bench_device().autodiff();
    let batch = 8;
    let mut net = Some(Transformer::new(
        ModelKind::Mdm,
        &config(),
        VOCAB,
        0,
        &device,
    ));
    let mut optim = optimizer(&TrainConfig::new(1000, batch));
    let x0 = tokens(batch * LENGTH, 0.0, 2);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut group = c.benchmark_group("train_step");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements((batch * LENGTH) as u64));
    group.bench_function("8x512", |b| {
        b.iter(|| {
            let model = net.take().unwrap();
            let loss = mdm_loss(&model, &x0, batch, &mut rng, &device);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            net = Some(optim.step(1e-4, model, grads));
        })
    });
    group.finish();
}

fn ar_next_token(c: &mut Criterion) {
    let device = bench_device();
    let batch = 16;
    let net = Transformer::new(ModelKind::Ar, &config(), VOCAB, 0, &device);
    let mut group = c.benchmark_group("ar_next_token");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(batch as u64));
    for prefix in [64usize, 511] {
        let ids = tokens(batch * prefix, 0.0, 4);
        let next = tokens(batch, 0.0, 5);
        // bf16 needs flex's fused kernel; another bench device measures the f32 cache only.
        let on_flex = matches!(
            std::env::var("DLM_NEURAL_BENCH_DEVICE").as_deref(),
            Err(_) | Ok("flex")
        );
        let dtypes: &[(&str, KvDtype)] = if !on_flex {
            &[("cached", KvDtype::F32)]
        } else {
            &[("cached", KvDtype::F32), ("cached_bf16", KvDtype::Bf16)]
        };
        for &(name, dtype) in dtypes {
            let mut cache = ArCache::default().with_dtype(dtype);
            net.forward_cached(tokens_tensor(&ids, batch, prefix, &device), &mut cache);
            group.bench_function(format!("{name}/{prefix}"), |b| {
                // As in a generation: one cache, warm from the step before. Each iteration
                // feeds the token at position `prefix` again (the cache forgets it first), so
                // the cost is always that of position `prefix`. (This bench used to give every
                // iteration a fresh copy of the cache: copying the 33 MB buffers evicted the
                // weights from the caches, which added ≈ 0.6 ms to every position and hid how
                // the cost grows with P.)
                b.iter(|| {
                    cache.len = prefix;
                    let logits =
                        net.forward_cached(tokens_tensor(&next, batch, 1, &device), &mut cache);
                    to_host(softmax(logits.narrow(2, 0, VOCAB), 2))
                })
            });
        }
        // Without the cache: the whole prefix is re-run for one new token.
        let full: Vec<u32> = ids
            .chunks(prefix)
            .zip(&next)
            .flat_map(|(row, &t)| row.iter().copied().chain([t]))
            .collect();
        group.bench_function(format!("uncached/{prefix}"), |b| {
            b.iter(|| {
                let logits = net.forward(tokens_tensor(&full, batch, prefix + 1, &device));
                to_host(softmax(logits.narrow(1, prefix, 1).narrow(2, 0, VOCAB), 2))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, mdm_forward, train_step, ar_next_token);
criterion_main!(benches);
