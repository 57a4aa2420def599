//! Speed of the checkpoint networks on the flex (CPU) backend, on the tiny fixtures
//! (`tests/fixtures/{llada,dream}-tiny`: 2 layers, hidden 64, 512 embedding rows):
//!
//! * `forward/{llada,dream}/1x512` — one forward pass at batch 1 × 512 tokens to logits on
//!   the device (what `tools/hf-fixtures/make_fixtures.py` times for PyTorch on the same CPU);
//! * `denoise/{llada,dream}/1x512` — one host-path `Denoiser::denoise` call (the SDK's
//!   `OnHost`): the forward pass, the softmax over the tokenizer's ids and the copy of the
//!   probabilities to the host as f64;
//! * `load/{llada,dream}` — opening the checkpoint folder (config, tokenizer, weights).
//!
//! Run: `cargo bench -p dlm-hf --bench forward`.

use burn::tensor::{DType, Device};
use criterion::{criterion_group, criterion_main, Criterion};
use dlm_hf::Checkpoint;
use dlm_sdk::sampler::device::OnHost;
use dlm_sdk::Denoiser;
use std::path::PathBuf;
use std::time::Duration;

const LENGTH: usize = 512;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn open(name: &str) -> Checkpoint {
    Checkpoint::open(&fixture(name), &Device::flex(), "cpu", DType::F32, None).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("hf");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for arch in ["llada", "dream"] {
        let name = format!("{arch}-tiny");
        let ckpt = open(&name);
        let vocab = ckpt.denoiser.vocab() as u32;
        // Every fourth position masked, the rest ordinary ids.
        let tokens: Vec<u32> = (0..LENGTH as u32)
            .map(|i| if i % 4 == 0 { vocab } else { (i * 7) % 480 })
            .collect();
        let ids = ckpt.denoiser.checkpoint_ids(&tokens).unwrap();
        group.bench_function(format!("forward/{arch}/1x{LENGTH}"), |b| {
            b.iter(|| {
                let net = &ckpt.denoiser.net;
                let logits = net.forward(net.ids_tensor(&ids, 1, LENGTH).unwrap());
                let _ = logits.into_data();
            })
        });
        let mut out = vec![0f64; LENGTH * vocab as usize];
        let mut host = OnHost::new(ckpt.denoiser);
        group.bench_function(format!("denoise/{arch}/1x{LENGTH}"), |b| {
            b.iter(|| host.denoise(&tokens, 1, LENGTH, 1.0, &mut out).unwrap())
        });
        group.bench_function(format!("load/{arch}"), |b| b.iter(|| open(&name)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
