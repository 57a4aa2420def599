//! Sampling at a real text vocabulary (issue 17): vocabulary 50,257 (GPT-2's), batch 16,
//! length 512, the CPU config's MDM (hidden 128, 4 layers, 4 heads) on flex.
//!
//! For each of `ddpm_cache`, `low_confidence`, `threshold` and `eb` it reports the sampler's
//! cost per step on the device path (a whole generation over fixed logits — a denoiser that
//! hands back one forward's output, so no network runs — divided by its steps) as a share of
//! one forward pass of the network, and the process's peak resident memory for a forward plus
//! a generation on each path (the host path copies every distribution out as f64). The same at
//! vocabulary 8 for both paths.
//!
//! Each figure is the median of `DLM_BENCH_REPEATS` runs (default 3); these cases take seconds
//! each, so this bench times them itself instead of through criterion's ≥ 10 samples.
//! Peak memory is Linux's VmHWM, reset between cases through `/proc/self/clear_refs`.
//!
//! Run: `cargo bench -p dlm-neural --bench text_scale` (`-- --quick` skips vocabulary 50,257's
//! host path, which needs ≈ 7 GB).

use burn::tensor::{Device, Tensor};
use dlm_neural::{MdmDenoiser, ModelKind, NetConfig, Transformer};
use dlm_sdk::sampler::device::{self, OnHost, TensorDenoiser};
use dlm_sdk::{GenerateRequest, Result, SamplerSpec};
use std::time::Instant;

const BATCH: usize = 16;
const LENGTH: usize = 512;
const STEPS: usize = 8;

/// One forward's logits, handed back at every call: the sampler's own cost, without a network.
struct Fixed {
    logits: Tensor<3>,
    vocab: usize,
}

impl TensorDenoiser for Fixed {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn logits(&mut self, _: &[u32], _: usize, _: usize, _: f64) -> Result<Tensor<3>> {
        Ok(self.logits.clone())
    }
}

fn request(sampler: &str) -> GenerateRequest {
    GenerateRequest {
        batch_size: BATCH,
        length: LENGTH,
        sampler: SamplerSpec {
            name: sampler.into(),
            steps: STEPS,
            schedule: None,
            params: Default::default(),
        },
        seed: 0,
        first_index: 0,
        prompts: None,
        prompt_texts: None,
        trace: false,
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn repeats() -> usize {
    std::env::var("DLM_BENCH_REPEATS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

fn time<F: FnMut()>(mut f: F) -> f64 {
    median(
        (0..repeats())
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// Peak resident memory since the last reset, in MiB (VmHWM).
fn peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn reset_peak() {
    // "5" resets the peak RSS (Linux ≥ 4.0); without it the figures are cumulative.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn mdm(vocab: usize, device: &Device) -> MdmDenoiser {
    let config = NetConfig::cpu().resolved(LENGTH).unwrap();
    MdmDenoiser {
        net: Transformer::new(ModelKind::Mdm, &config, vocab, 0, device),
        device: device.clone(),
        label: "cpu".into(),
    }
}

fn case(vocab: usize, host_path: bool) {
    let device = Device::flex();
    let mut model = mdm(vocab, &device);
    let masked = vec![vocab as u32; BATCH * LENGTH];
    let forward = time(|| {
        let logits = model.logits(&masked, BATCH, LENGTH, 1.0).unwrap();
        let _ = logits.into_data(); // wait for the result
    });
    println!(
        "vocab {vocab}: one forward ({BATCH} × {LENGTH}): {:.3} s",
        forward
    );
    let logits = model.logits(&masked, BATCH, LENGTH, 1.0).unwrap();
    let mut fixed = Fixed {
        logits: logits.clone(),
        vocab,
    };
    for sampler in ["ddpm_cache", "low_confidence", "threshold", "eb"] {
        let req = request(sampler);
        let total = time(|| {
            device::generate(&mut fixed, &req).unwrap();
        });
        let per_step = total / STEPS as f64;
        println!(
            "  device path {sampler:>14}: {:.4} s per step = {:.2}% of a forward",
            per_step,
            100.0 * per_step / forward
        );
    }
    if host_path {
        let mut on_host = OnHost::new(fixed);
        for sampler in ["ddpm_cache", "low_confidence", "threshold", "eb"] {
            let req = request(sampler);
            let total = time(|| {
                dlm_sdk::sampler::generate(&mut on_host, &req).unwrap();
            });
            let per_step = total / STEPS as f64;
            println!(
                "  host path   {sampler:>14}: {:.4} s per step = {:.2}% of a forward",
                per_step,
                100.0 * per_step / forward
            );
        }
        fixed = on_host.0;
    }
    drop(fixed);
    drop(logits);
    // Peak memory of one whole generation (forwards included) on each path.
    let req = request("low_confidence");
    reset_peak();
    let base = peak_mib();
    let start = Instant::now();
    device::generate(&mut model, &req).unwrap();
    println!(
        "  device path low_confidence, {STEPS} steps with the network: {:.2} s, peak RSS {:.0} MiB (+{:.0} over the model)",
        start.elapsed().as_secs_f64(),
        peak_mib(),
        peak_mib() - base
    );
    if host_path {
        reset_peak();
        let start = Instant::now();
        dlm_sdk::sampler::generate(&mut OnHost::new(model), &req).unwrap();
        println!(
            "  host path   low_confidence, {STEPS} steps with the network: {:.2} s, peak RSS {:.0} MiB (+{:.0} over the model)",
            start.elapsed().as_secs_f64(),
            peak_mib(),
            peak_mib() - base
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // `cargo bench` passes `--bench`; any other filter argument is ignored.
    case(8, true);
    case(50_257, !quick);
}
