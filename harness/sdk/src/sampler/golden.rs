//! Regression record of every sampler's tokens and NFE on the exact chain oracle: each case's
//! output, written by the sampler code as it stood before the samplers became one type per
//! file, must not change (same seed, same random numbers in the same order, same tokens and
//! NFE). After a deliberate change of what a sampler draws, `cargo test -p dlm-sdk --features
//! burn golden -- --ignored` rewrites the record; review its diff.

use super::tests::{request, with_params, ChainAr, ChainOracle};
use super::{generate, generate_ar};
use crate::{GenerateReply, GenerateRequest, Result};
use serde_json::json;
use std::fmt::Write;
use std::path::PathBuf;

/// Every sampler with parameter sets that exercise its code paths, as `(name, steps, params,
/// schedule)`; each runs on two seeds, with and without prompts.
fn cases() -> Vec<(&'static str, usize, serde_json::Value, Option<&'static str>)> {
    vec![
        ("ddpm", 3, json!({}), None),
        (
            "ddpm",
            9,
            json!({"temperature": 0.7, "block_length": 3}),
            None,
        ),
        ("ddpm", 5, json!({"top_p": 0.8}), Some("linear")),
        ("ddpm", 20, json!({"top_k": 2}), Some("cosine")),
        ("ddpm_cache", 4, json!({}), None),
        ("ddpm_cache", 30, json!({"block_length": 4}), Some("cosine")),
        ("low_confidence", 3, json!({}), None),
        (
            "low_confidence",
            6,
            json!({"top_k": 2, "block_length": 4}),
            None,
        ),
        ("low_confidence", 4, json!({"temperature": 0}), None),
        ("random", 4, json!({"top_p": 0.8}), None),
        (
            "random",
            5,
            json!({"block_length": 2, "temperature": 1.4}),
            None,
        ),
        ("threshold", 8, json!({}), None),
        ("threshold", 8, json!({"tau": 0.5, "block_length": 4}), None),
        ("factor", 8, json!({}), None),
        ("factor", 8, json!({"factor": 2.5}), None),
        ("eb", 8, json!({}), None),
        ("eb", 8, json!({"gamma": 0.6, "proxy": "confidence"}), None),
        (
            "eb",
            8,
            json!({"gamma": 0.4, "proxy": "margin", "block_length": 3}),
            None,
        ),
        ("eb", 8, json!({"gamma": 0}), None),
        ("left_to_right", 8, json!({}), None),
        (
            "left_to_right",
            8,
            json!({"temperature": 0.5, "top_k": 2}),
            None,
        ),
        (
            "dream",
            8,
            json!({"temperature": 0, "alg": "maskgit_plus"}),
            None,
        ),
        ("dream", 5, json!({"alg": "entropy", "top_k": 2}), None),
        ("dream", 8, json!({"alg": "origin", "top_p": 0.8}), None),
        (
            "dream",
            6,
            json!({"alg": "topk_margin", "alg_temp": 0.5, "eps": 0.01}),
            None,
        ),
        ("ar", 8, json!({}), None),
        ("ar", 8, json!({"top_p": 0.7}), None),
    ]
}

/// A generate call over some model and path.
type Generate<'a> = dyn FnMut(&GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> + 'a;

/// One line per case: the request, then every sample's tokens and NFE and the batch NFE.
fn record(generate: &mut Generate<'_>) -> String {
    let (batch, length) = (4, 8);
    let prompts = vec![vec![0, 1], vec![], vec![2, 2, 2], vec![1]];
    let mut out = String::new();
    for (name, steps, params, schedule) in cases() {
        for with_prompts in [false, true] {
            for seed in [1u64, 2] {
                let mut r = with_params(request(name, steps, batch, length, 5), params.clone());
                r.seed = seed;
                r.sampler.schedule = schedule.map(str::to_string);
                if with_prompts {
                    r.prompts = Some(prompts.clone());
                }
                let (seqs, reply) = generate(&r).unwrap_or_else(|e| panic!("{name} {params}: {e}"));
                let tokens: Vec<String> = seqs
                    .iter()
                    .map(|s| s.iter().map(u32::to_string).collect())
                    .collect();
                let nfe: Vec<u64> = reply.samples.iter().map(|s| s.nfe).collect();
                writeln!(
                    out,
                    "{name} steps={steps} params={params} schedule={schedule:?} prompts={with_prompts} seed={seed}: tokens {} nfe {nfe:?} batch_nfe {}",
                    tokens.join(" "),
                    reply.batch_nfe
                )
                .unwrap();
            }
        }
    }
    out
}

fn path(file: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "src/sampler/golden", file]
        .iter()
        .collect()
}

fn check(file: &str, got: String) {
    let path = path(file);
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (rewrite_the_golden_record writes it)",
            path.display()
        )
    });
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        assert_eq!(g, w, "{} line {}", path.display(), i + 1);
    }
    assert_eq!(
        got.lines().count(),
        want.lines().count(),
        "{}",
        path.display()
    );
}

/// Rewrites the record from the code as it is (run it only after a deliberate change).
#[test]
#[ignore = "rewrites the golden record"]
fn rewrite_the_golden_record() {
    let records = [("host.txt", host_record())].into_iter();
    #[cfg(feature = "burn")]
    let records = records.chain(device_records());
    for (file, text) in records {
        std::fs::write(path(file), text).unwrap();
    }
}

/// The host path: every denoiser sampler over [`ChainOracle::pruned`] (whose zero-probability
/// pairs exercise the oracle's fallback) and `ar` over the same chain.
#[test]
fn every_sampler_draws_the_recorded_tokens_and_nfe() {
    check("host.txt", host_record());
}

fn host_record() -> String {
    let mut host = |r: &GenerateRequest| {
        if r.sampler.name == "ar" {
            let mut ar = ChainAr {
                chain: ChainOracle::pruned(),
                last: vec![],
                calls: 0,
            };
            generate_ar(&mut ar, r)
        } else {
            generate(&mut ChainOracle::pruned(), r)
        }
    };
    record(&mut host)
}

/// The device path (flex, both kernels): the same chain as f32 logits.
#[cfg(feature = "burn")]
#[test]
fn every_sampler_draws_the_recorded_tokens_and_nfe_on_the_device() {
    for (file, text) in device_records() {
        check(file, text);
    }
}

#[cfg(feature = "burn")]
fn device_records() -> Vec<(&'static str, String)> {
    use super::device::{
        generate_ar_by, generate_by, Kernel, TensorAutoregressive, TensorDenoiser,
    };
    use super::{Autoregressive, Denoiser};
    use burn::tensor::{Device, Tensor, TensorData};

    fn log_tensor<const N: usize>(probs: &[f64], shape: [usize; N]) -> Tensor<N> {
        let logits: Vec<f32> = probs.iter().map(|&p| (p as f32).ln()).collect();
        Tensor::from_data(TensorData::new(logits, shape), &Device::default())
    }
    struct Logits(ChainOracle);
    impl TensorDenoiser for Logits {
        fn vocab_size(&self) -> usize {
            self.0.vocab
        }
        fn logits(
            &mut self,
            tokens: &[u32],
            batch: usize,
            length: usize,
            t: f64,
        ) -> Result<Tensor<3>> {
            let mut probs = vec![0.0; batch * length * self.0.vocab];
            self.0.denoise(tokens, batch, length, t, &mut probs)?;
            Ok(log_tensor(&probs, [batch, length, self.0.vocab]))
        }
    }
    struct ArLogits(ChainAr, usize);
    impl TensorAutoregressive for ArLogits {
        fn vocab_size(&self) -> usize {
            self.0.chain.vocab
        }
        fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
            self.1 = batch;
            self.0.begin(batch, length)
        }
        fn next_logits(&mut self, appended: Option<&[u32]>) -> Result<Tensor<2>> {
            let mut probs = vec![0.0; self.1 * self.0.chain.vocab];
            self.0.next(appended, &mut probs)?;
            Ok(log_tensor(&probs, [self.1, self.0.chain.vocab]))
        }
    }
    let mut records = Vec::new();
    for (kernel, file) in [
        (Kernel::Auto, "device_auto.txt"),
        (Kernel::Burn, "device_burn.txt"),
    ] {
        let mut device = |r: &GenerateRequest| {
            if r.sampler.name == "ar" {
                let ar = ChainAr {
                    chain: ChainOracle::pruned(),
                    last: vec![],
                    calls: 0,
                };
                generate_ar_by(&mut ArLogits(ar, 0), r, kernel)
            } else {
                generate_by(&mut Logits(ChainOracle::pruned()), r, kernel)
            }
        };
        records.push((file, record(&mut device)));
    }
    records
}
