//! The device path against the host path: the same tokens for the same seeds (every sampler,
//! every parameter), every disagreement a rounding case at a category boundary, and the same
//! distributions (χ² tests on a small exact language).

use super::*;
use crate::sampler::tests::{chain_prob, request, with_params, ChainAr, ChainOracle};
use crate::sampler::{generate as host_generate, generate_ar as host_generate_ar, host_draw};
use crate::sampler::{Autoregressive, LowConfidence, Params};
use burn::tensor::Device;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

/// A host [`Denoiser`] seen as a [`TensorDenoiser`]: its probabilities, as log-probabilities,
/// become the logits tensor (zero probabilities become `-inf`). So both paths sample the same
/// exact distributions and differ only in where and in what precision they draw.
struct AsLogits<D>(D);

fn log_tensor<const N: usize>(probs: &[f64], shape: [usize; N]) -> Tensor<N> {
    let logits: Vec<f32> = probs.iter().map(|&p| (p as f32).ln()).collect();
    Tensor::from_data(TensorData::new(logits, shape), &Device::default())
}

impl<D: Denoiser> TensorDenoiser for AsLogits<D> {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn time_conditioned(&self) -> bool {
        self.0.time_conditioned()
    }
    fn logits(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<Tensor<3>> {
        let vocab = self.0.vocab_size();
        let mut probs = vec![0.0; batch * length * vocab];
        self.0.denoise(tokens, batch, length, t, &mut probs)?;
        Ok(log_tensor(&probs, [batch, length, vocab]))
    }
}

/// A host [`Autoregressive`] model seen as a [`TensorAutoregressive`], as [`AsLogits`].
struct ArAsLogits<A> {
    model: A,
    batch: usize,
}

impl<A: Autoregressive> TensorAutoregressive for ArAsLogits<A> {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }
    fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
        self.batch = batch;
        self.model.begin(batch, length)
    }
    fn next_logits(&mut self, appended: Option<&[u32]>) -> Result<Tensor<2>> {
        let vocab = self.model.vocab_size();
        let mut probs = vec![0.0; self.batch * vocab];
        self.model.next(appended, &mut probs)?;
        Ok(log_tensor(&probs, [self.batch, vocab]))
    }
}

/// Every denoiser sampler with the parameter sets that exercise its code paths.
fn sampler_cases() -> Vec<(&'static str, usize, serde_json::Value)> {
    vec![
        ("ddpm", 4, json!({})),
        ("ddpm", 8, json!({"temperature": 0.7, "block_length": 4})),
        ("ddpm_cache", 16, json!({})),
        ("low_confidence", 6, json!({})),
        ("low_confidence", 12, json!({"top_k": 2, "block_length": 4})),
        ("random", 6, json!({"top_p": 0.8})),
        ("threshold", 12, json!({"tau": 0.6})),
        ("factor", 12, json!({"factor": 1.5})),
        ("eb", 12, json!({"gamma": 0.5})),
        ("eb", 12, json!({"gamma": 0.5, "proxy": "confidence"})),
        ("eb", 12, json!({"gamma": 0.5, "proxy": "margin"})),
        ("low_confidence", 12, json!({"temperature": 0})),
        ("left_to_right", 12, json!({"temperature": 1.3, "top_k": 2})),
    ]
}

/// The same model (the exact chain as f32 logits) on both paths, for each device kernel: the
/// host path reads its probabilities as f64 copies (`OnHost`, normalised as that kernel
/// normalises), the device path draws from the logits in place.
/// Confidences are the same f32 values on both, so rankings agree; the draws agree except
/// where f32 running sums move a category boundary across a uniform.
#[test]
fn every_sampler_draws_the_host_paths_tokens_on_the_device() {
    let (batch, length) = (64, 12);
    for kernel in [Kernel::Auto, Kernel::Burn] {
        let (mut same, mut total) = (0usize, 0usize);
        for oracle in [ChainOracle::pruned(), ChainOracle::full()] {
            for (name, steps, params) in sampler_cases() {
                let req = with_params(request(name, steps, batch, length, 0), params.clone());
                let (host, host_reply) = host_generate(
                    &mut OnHost::normalising_as(AsLogits(oracle_copy(&oracle)), kernel),
                    &req,
                )
                .unwrap();
                let (dev, dev_reply) =
                    generate_by(&mut AsLogits(oracle_copy(&oracle)), &req, kernel).unwrap();
                let agree: usize = host
                    .iter()
                    .zip(&dev)
                    .map(|(h, d)| h.iter().zip(d).filter(|(a, b)| a == b).count())
                    .sum();
                eprintln!(
                    "{kernel:?} {name} {params}: {agree} of {} positions agree",
                    batch * length
                );
                same += agree;
                total += batch * length;
                if host == dev {
                    assert_eq!(host_reply.batch_nfe, dev_reply.batch_nfe, "{name} {params}");
                    assert_eq!(host_reply.samples, dev_reply.samples, "{name} {params}");
                }
            }
        }
        assert!(
            same * 1000 >= total * 999,
            "{kernel:?}: {same} of {total} positions agree"
        );
    }
}

fn oracle_copy(o: &ChainOracle) -> ChainOracle {
    ChainOracle {
        vocab: o.vocab,
        init: o.init.clone(),
        trans: o.trans.clone(),
        time_conditioned: o.time_conditioned,
    }
}

#[test]
fn ar_draws_the_host_paths_tokens_on_the_device() {
    let (batch, length) = (256, 9);
    let chain = || ChainAr {
        chain: ChainOracle::pruned(),
        last: Vec::new(),
        calls: 0,
    };
    for params in [
        json!({}),
        json!({"temperature": 0.5}),
        json!({"temperature": 0.5, "top_p": 0.9}),
    ] {
        let req = with_params(request("ar", length, batch, length, 3), params.clone());
        let (host, _) = host_generate_ar(&mut chain(), &req).unwrap();
        for kernel in [Kernel::Auto, Kernel::Burn] {
            let mut model = ArAsLogits {
                model: chain(),
                batch: 0,
            };
            let (dev, reply) = generate_ar_by(&mut model, &req, kernel).unwrap();
            assert_eq!(host, dev, "{kernel:?} {params}");
            assert_eq!(reply.batch_nfe, length as u64);
        }
    }
}

/// Random logits over a large vocabulary, drawn row by row on both paths: each disagreement is
/// a uniform within f32 rounding of the boundary between the two categories (the host's running
/// sum in f64 at that boundary), and at least 99.8% of tokens agree. (The share grows with the
/// vocabulary: an f32 running sum over 4,099 weights is off by up to ≈ 4,099 · 2⁻²⁴ of the
/// total; the sampler tests above hold 99.9% at the formal languages' vocabulary. Seen over these
/// 4,000 rows: the fused kernel 0–1, the Burn chain 4–6, and 8 for both under top-p, where
/// the nucleus edge adds its own flips.) Scores agree to f32 precision.
#[test]
fn large_vocabulary_draws_agree_except_at_rounding_boundaries() {
    let (rows, vocab) = (4_000, 4_099); // not a multiple of any SIMD width or block
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    // Peaked rows (a few large logits) and flat ones, as a language model's are.
    let logits: Vec<f32> = (0..rows * vocab)
        .map(|i| {
            let scale = if (i / vocab) % 2 == 0 { 8.0 } else { 1.0 };
            scale * (rng.random::<f32>() - 0.5) * 2.0
        })
        .collect();
    let device = Device::default();
    let tensor = Tensor::<2>::from_data(TensorData::new(logits, [rows, vocab]), &device);
    let probs: Vec<f64> = host_f32(probabilities(tensor.clone()))
        .into_iter()
        .map(f64::from)
        .collect();
    let all: Vec<usize> = (0..rows).collect();
    let uniforms: Vec<f64> = (0..rows).map(|_| rng.random::<f64>()).collect();
    for params in [
        json!({}),
        json!({"temperature": 0.8}),
        json!({"top_k": 50}),
        json!({"top_p": 0.9, "temperature": 1.2}),
    ] {
        let p = Params::parse(
            &LowConfidence,
            &params.as_object().unwrap().clone().into_iter().collect(),
        )
        .unwrap()
        .shaping;
        let want = Want {
            confidence: true,
            entropy: true,
            max_prob: true,
            margin: true,
        };
        let host = host_draw(&probs, vocab, &all, &uniforms, &p, want).unwrap();
        for kernel in [Kernel::Auto, Kernel::Burn] {
            let dev = device_draw(&tensor, &all, &uniforms, &p, want, kernel).unwrap();
            let mut differ = 0;
            for i in 0..rows {
                let row = &probs[i * vocab..(i + 1) * vocab];
                let (h, d) = (host.tokens[i] as usize, dev.tokens[i] as usize);
                if h != d {
                    differ += 1;
                    let mut shaped = Vec::new();
                    crate::sampler::shape_distribution(row, &p, &mut shaped);
                    let total: f64 = shaped.iter().sum();
                    let boundary: f64 = shaped[..=h.min(d)].iter().sum::<f64>() / total;
                    // Under top-p the entry at the nucleus edge may be kept on one path only,
                    // which moves every boundary by up to its weight.
                    let edge = if p.top_p.is_some() {
                        shaped
                            .iter()
                            .filter(|&&w| w > 0.0)
                            .fold(1.0f64, |a, &w| a.min(w))
                            / total
                    } else {
                        0.0
                    };
                    assert!(
                    (boundary - uniforms[i]).abs() < 1e-4 + edge,
                    "{kernel:?} row {i} {params}: host {h}, device {d}, u {} is {} from the boundary",
                    uniforms[i],
                    (boundary - uniforms[i]).abs()
                );
                }
                // Scores are of the untempered distribution at the drawn token; compare each path's
                // score of its own token where the tokens agree.
                if h == d {
                    assert!((host.confidence[i] - dev.confidence[i]).abs() < 1e-6);
                }
                assert!(
                    (host.entropy[i] - dev.entropy[i]).abs() < 1e-4,
                    "entropy row {i}"
                );
                assert!((host.max_prob[i] - dev.max_prob[i]).abs() < 1e-6);
                assert!((host.margin[i] - dev.margin[i]).abs() < 1e-6);
            }
            eprintln!("{kernel:?} {params}: {differ} of {rows} draws differ");
            assert!(
                differ * 500 <= rows,
                "{kernel:?} {params}: {differ} of {rows} draws differ"
            );
        }
    }
}

/// Cells of a histogram over whole sequences, pooled so every cell expects at least 10.
fn chi_square(observed: &[f64], expected: &[f64]) -> (f64, usize) {
    let (mut stat, mut cells, mut pool_o, mut pool_e) = (0.0, 0usize, 0.0, 0.0);
    for (&o, &e) in observed.iter().zip(expected) {
        if e < 10.0 {
            pool_o += o;
            pool_e += e;
            continue;
        }
        stat += (o - e) * (o - e) / e;
        cells += 1;
    }
    if pool_e > 0.0 {
        stat += (pool_o - pool_e) * (pool_o - pool_e) / pool_e.max(1e-9);
        cells += 1;
    }
    (stat, cells.saturating_sub(1))
}

/// Upper 0.1% point of χ² with `df` degrees of freedom (Wilson–Hilferty; z = 3.09).
fn chi_square_critical(df: usize) -> f64 {
    let k = df as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + 3.09 * h.sqrt()).powi(3)
}

fn histogram(seqs: &[Vec<u32>], vocab: usize) -> Vec<f64> {
    let mut counts = vec![0.0; vocab.pow(seqs[0].len() as u32)];
    for s in seqs {
        let index = s.iter().fold(0, |acc, &x| acc * vocab + x as usize);
        counts[index] += 1.0;
    }
    counts
}

/// `left_to_right` with an exact oracle samples the language exactly: the device path's
/// sequences fit the chain's probabilities (χ² goodness of fit).
#[test]
fn device_left_to_right_fits_the_exact_language() {
    let (n, length) = (6_000, 4);
    let oracle = ChainOracle::full();
    let req = request("left_to_right", length, n, length, 1_000_000);
    let (seqs, _) = generate(&mut AsLogits(oracle_copy(&oracle)), &req).unwrap();
    let observed = histogram(&seqs, 3);
    let expected: Vec<f64> = (0..observed.len())
        .map(|i| {
            let s: Vec<u32> = (0..length)
                .rev()
                .map(|k| (i / 3usize.pow(k as u32) % 3) as u32)
                .collect();
            n as f64 * chain_prob(&oracle, &s)
        })
        .collect();
    let (stat, df) = chi_square(&observed, &expected);
    assert!(
        stat < chi_square_critical(df),
        "χ² {stat:.1} on {df} degrees of freedom"
    );
}

/// For the parallel samplers the sequence distribution is not the language's; the device path's
/// must still be the host path's: a two-sample χ² test on disjoint seeds (so the samples are
/// independent) for every sampler.
#[test]
fn every_sampler_has_the_host_paths_distribution_on_the_device() {
    let (n, length) = (4_000, 4);
    for (name, _, params) in sampler_cases() {
        let steps = if name == "left_to_right" { length } else { 2 };
        let host_req = with_params(request(name, steps, n, length, 0), params.clone());
        let dev_req = with_params(request(name, steps, n, length, n as u64), params.clone());
        let (host, _) = host_generate(&mut ChainOracle::full(), &host_req).unwrap();
        for kernel in [Kernel::Auto, Kernel::Burn] {
            let (dev, _) =
                generate_by(&mut AsLogits(ChainOracle::full()), &dev_req, kernel).unwrap();
            let (h, d) = (histogram(&host, 3), histogram(&dev, 3));
            // Equal sample sizes: expected count of each path in a cell is the pooled mean.
            let pooled: Vec<f64> = h.iter().zip(&d).map(|(a, b)| (a + b) / 2.0).collect();
            let (sh, df) = chi_square(&h, &pooled);
            let (sd, _) = chi_square(&d, &pooled);
            let stat = sh + sd;
            if df == 0 {
                // A deterministic sampler (argmax): one sequence, the same on both paths.
                assert_eq!(h, d, "{kernel:?} {name} {params}");
                continue;
            }
            assert!(
                stat < chi_square_critical(df),
                "{kernel:?} {name} {params}: χ² {stat:.1} on {df} degrees of freedom"
            );
        }
    }
}

#[test]
fn invalid_logits_are_an_error_naming_the_position() {
    /// Every logit of the first position of the first sample is `bad`; the rest are finite.
    struct Bad(f32);
    impl TensorDenoiser for Bad {
        fn vocab_size(&self) -> usize {
            4
        }
        fn logits(&mut self, _: &[u32], batch: usize, length: usize, _: f64) -> Result<Tensor<3>> {
            let mut values = vec![0.5f32; batch * length * 4];
            values[..4].fill(self.0);
            values[1] = if self.0.is_nan() { 0.0 } else { self.0 };
            Ok(Tensor::from_data(
                TensorData::new(values, [batch, length, 4]),
                &Device::default(),
            ))
        }
    }
    for kernel in [Kernel::Auto, Kernel::Burn] {
        for (bad, params) in [
            (f32::NAN, json!({})),
            (f32::NAN, json!({"temperature": 0})),
            (f32::INFINITY, json!({})),
            (f32::NEG_INFINITY, json!({})),
            (f32::NEG_INFINITY, json!({"temperature": 0.5})),
        ] {
            let req = with_params(request("low_confidence", 2, 2, 3, 0), params.clone());
            let err = generate_by(&mut Bad(bad), &req, kernel).unwrap_err();
            assert!(
                err.message
                    .contains("sample 0, position 0: invalid distribution"),
                "{kernel:?} {bad} {params}: {err}"
            );
        }
    }
    struct WrongShape;
    impl TensorDenoiser for WrongShape {
        fn vocab_size(&self) -> usize {
            4
        }
        fn logits(&mut self, _: &[u32], batch: usize, length: usize, _: f64) -> Result<Tensor<3>> {
            Ok(Tensor::zeros([batch, length, 5], &Device::default()))
        }
    }
    let err = generate(&mut WrongShape, &request("ddpm", 2, 2, 3, 0)).unwrap_err();
    assert!(
        err.message.contains("shape [2, 3, 5], expected [2, 3, 4]"),
        "{err}"
    );
}

/// Per-sample blocks on the device path, both kernels: prompts of different lengths with
/// `block_length` give each sample the tokens and NFE it gets alone.
#[test]
fn blocks_start_at_each_samples_own_prompt_end_on_the_device() {
    use crate::sampler::tests::{blocks_do_not_depend_on_the_batch, TimeMixed};
    for kernel in [Kernel::Auto, Kernel::Burn] {
        blocks_do_not_depend_on_the_batch(
            &mut |r| generate_by(&mut AsLogits(ChainOracle::full()), r, kernel),
            false,
        );
        blocks_do_not_depend_on_the_batch(
            &mut |r| generate_by(&mut AsLogits(TimeMixed(ChainOracle::full())), r, kernel),
            true,
        );
    }
}
