//! The network: SUBS, one optimiser step of each loss, causality; and the helpers every test
//! module of the crate shares (the test device, tiny configs, data).

use crate::checkpoint::Checkpoint;
use crate::model::{subs_log_probs, to_host, tokens_tensor, ModelKind, NetConfig, Transformer};
use crate::plugin::{MdmDenoiser, NeuralPlugin};
use crate::train::{self, ar_loss, mdm_loss_given, mdm_noise, optimizer, TrainConfig};
use burn::optim::GradientsParams;
use burn::tensor::Device;
use dlm_sdk::{
    Denoiser, GenerateRequest, Model, ModelOpenConfig, Plugin, SamplerSpec, TaskBinding,
    TaskDescription,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub(super) const VOCAB: usize = 5;

/// The device the tests run on: `flex`, or the one `DLM_NEURAL_TEST_DEVICE` names (`.ci/run`
/// runs them all again with `wgpu`, on Mesa's software Vulkan, in a build with that feature).
pub(super) fn test_device() -> Device {
    crate::plugin::parse_device(device_name().as_deref())
        .expect("DLM_NEURAL_TEST_DEVICE names a device this build of dlm-neural supports")
}

pub(super) fn device_name() -> Option<String> {
    std::env::var("DLM_NEURAL_TEST_DEVICE").ok()
}

pub(super) fn task(vocab: usize, length: usize) -> TaskDescription {
    let mut d = TaskDescription::new(format!("test chain (vocab {vocab})"), vocab, length);
    d.details = serde_json::json!({"kind": "test"});
    d
}

pub(super) fn tiny(length: usize) -> NetConfig {
    NetConfig {
        hidden: 16,
        layers: 2,
        heads: 2,
        ff_mult: 2,
        max_length: Some(length),
    }
}

/// Scale the weights up so that outputs are far from uniform and depend on every input:
/// a wrong position or a stale cache entry then changes the probabilities visibly.
pub(super) fn sharpen(mut net: Transformer) -> Transformer {
    net.token_embedding = net.token_embedding.map(|t| t.mul_scalar(20.0));
    net.position_embedding = net.position_embedding.map(|t| t.mul_scalar(20.0));
    for b in &mut net.blocks {
        b.qkv.weight = b.qkv.weight.clone().map(|t| t.mul_scalar(20.0));
        b.proj.weight = b.proj.weight.clone().map(|t| t.mul_scalar(20.0));
    }
    net.head.weight = net.head.weight.map(|t| t.mul_scalar(100.0));
    net
}

/// A 2-gram-like chain: the next token is `prev + 1 (mod V)` with probability 0.9, else uniform.
pub(super) fn chain_batch(
    batch: usize,
    length: usize,
    vocab: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<u32>> {
    (0..batch)
        .map(|_| {
            let mut x = vec![rng.random_range(0..vocab as u32)];
            while x.len() < length {
                let prev = *x.last().unwrap();
                let next = if rng.random::<f64>() < 0.9 {
                    (prev + 1) % vocab as u32
                } else {
                    rng.random_range(0..vocab as u32)
                };
                x.push(next);
            }
            x
        })
        .collect()
}

pub(super) fn random_tokens(n: usize, vocab: usize, mask_share: f64, seed: u64) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            if rng.random::<f64>() < mask_share {
                vocab as u32
            } else {
                rng.random_range(0..vocab as u32)
            }
        })
        .collect()
}

pub(super) fn ar_request(batch: usize, length: usize, seed: u64) -> GenerateRequest {
    GenerateRequest {
        batch_size: batch,
        length,
        sampler: SamplerSpec {
            name: "ar".into(),
            steps: length,
            schedule: None,
            params: Default::default(),
        },
        seed,
        first_index: 0,
        prompts: None,
        prompt_texts: None,
        trace: false,
    }
}

pub(super) fn open(
    name: &str,
    mut config: serde_json::Value,
    length: usize,
) -> dlm_sdk::Result<Box<dyn Model>> {
    if let (Some(device), Some(map)) = (device_name(), config.as_object_mut()) {
        map.entry("device").or_insert(device.into());
    }
    NeuralPlugin::open_model(
        name,
        ModelOpenConfig {
            config,
            task: TaskBinding {
                plugin: "test".into(),
                task: "chain".into(),
                config: serde_json::Value::Null,
                description: task(VOCAB, length),
            },
            train: None,
            checkpoint: None,
            base_dir: None,
        },
    )
}

pub(super) fn trained_checkpoint(kind: ModelKind) -> Checkpoint {
    let length = 8;
    let t = task(VOCAB, length);
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let mut config = TrainConfig::new(3, 4);
    config.seed = 15;
    train::train(
        kind,
        &tiny(length),
        &t,
        &config,
        &test_device(),
        |b, _| Ok(chain_batch(b, length, VOCAB, &mut rng)),
        |_| {},
    )
    .unwrap()
}

#[test]
fn subs_never_puts_mass_on_mask_and_keeps_unmasked_tokens() {
    let device = test_device();
    let (batch, length) = (3, 10);
    let net = sharpen(Transformer::new(
        ModelKind::Mdm,
        &tiny(length),
        VOCAB,
        1,
        &device,
    ));
    let tokens = random_tokens(batch * length, VOCAB, 0.5, 2);
    assert!(tokens.iter().any(|&t| t as usize == VOCAB));
    assert!(tokens.iter().any(|&t| (t as usize) < VOCAB));

    // The full SUBS distribution over vocab + 1 (mask included).
    let xt = tokens_tensor(&tokens, batch, length, &device);
    let logits = to_host(net.forward(xt.clone()));
    let probs = to_host(subs_log_probs(net.forward(xt.clone()), xt, VOCAB).exp());
    for (pos, &tok) in tokens.iter().enumerate() {
        let row = &probs[pos * (VOCAB + 1)..(pos + 1) * (VOCAB + 1)];
        assert_eq!(row[VOCAB], 0.0, "mass on the mask token at {pos}");
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "row {pos} sums to {sum}");
        if (tok as usize) < VOCAB {
            for (v, &p) in row.iter().enumerate() {
                let want = if v == tok as usize { 1.0 } else { 0.0 };
                assert_eq!(p, want, "unmasked position {pos} (token {tok}), token {v}");
            }
        } else {
            // A masked position gets the softmax of the network's logits over the real tokens.
            let z = &logits[pos * (VOCAB + 1)..pos * (VOCAB + 1) + VOCAB];
            let max = z.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let norm: f32 = z.iter().map(|&l| (l - max).exp()).sum();
            for (v, &p) in row[..VOCAB].iter().enumerate() {
                let want = (z[v] - max).exp() / norm;
                assert!(
                    (p - want).abs() < 1e-5,
                    "masked position {pos}, token {v}: {p} vs {want}"
                );
            }
        }
    }

    // The Denoiser's output (real tokens only) agrees.
    let mut denoiser = MdmDenoiser {
        net,
        device,
        label: "cpu".into(),
    };
    let mut out = vec![f64::NAN; batch * length * VOCAB];
    denoiser
        .denoise(&tokens, batch, length, 0.5, &mut out)
        .unwrap();
    for (pos, &tok) in tokens.iter().enumerate() {
        let row = &out[pos * VOCAB..(pos + 1) * VOCAB];
        let sum: f64 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "row {pos} sums to {sum}");
        if (tok as usize) < VOCAB {
            assert_eq!(row[tok as usize], 1.0);
        }
    }
    // Ids beyond the mask are refused.
    let mut bad = tokens.clone();
    bad[0] = VOCAB as u32 + 1;
    assert!(denoiser
        .denoise(&bad, batch, length, 0.5, &mut out)
        .is_err());
}

#[test]
fn one_optimizer_step_reduces_the_mdm_loss_on_a_fixed_batch() {
    let device = test_device().autodiff();
    let (batch, length) = (8, 12);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let x0: Vec<u32> = chain_batch(batch, length, VOCAB, &mut rng).concat();
    let noise = mdm_noise(&x0, batch, VOCAB, &mut rng);
    let net = Transformer::new(ModelKind::Mdm, &tiny(length), VOCAB, 4, &device);
    let before = mdm_loss_given(&net, &x0, &noise, batch, length, &device);
    let before_value = before.clone().into_scalar::<f32>();
    let mut optim = optimizer(&TrainConfig::new(1, batch));
    let grads = GradientsParams::from_grads(before.backward(), &net);
    let net = optim.step(1e-2, net, grads);
    let after = mdm_loss_given(&net, &x0, &noise, batch, length, &device).into_scalar::<f32>();
    eprintln!("mdm: loss {before_value} -> {after} after one step");
    assert!(before_value.is_finite() && before_value > 0.0);
    assert!(
        after < before_value * 0.99,
        "loss did not fall: {before_value} -> {after}"
    );
}

#[test]
fn one_optimizer_step_reduces_the_ar_loss_on_a_fixed_batch() {
    let device = test_device().autodiff();
    let (batch, length) = (8, 12);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let x0: Vec<u32> = chain_batch(batch, length, VOCAB, &mut rng).concat();
    let net = Transformer::new(ModelKind::Ar, &tiny(length), VOCAB, 6, &device);
    let before = ar_loss(&net, &x0, batch, &device);
    let before_value = before.clone().into_scalar::<f32>();
    // An untrained model is close to uniform.
    assert!((before_value - (VOCAB as f32).ln()).abs() < 0.1);
    let mut optim = optimizer(&TrainConfig::new(1, batch));
    let grads = GradientsParams::from_grads(before.backward(), &net);
    let net = optim.step(1e-2, net, grads);
    let after = ar_loss(&net, &x0, batch, &device).into_scalar::<f32>();
    eprintln!("ar: loss {before_value} -> {after} after one step");
    assert!(
        after < before_value * 0.99,
        "loss did not fall: {before_value} -> {after}"
    );
}

#[test]
fn the_ar_model_is_causal_and_the_mdm_is_not() {
    let device = test_device();
    let length = 8;
    for (kind, causal) in [(ModelKind::Ar, true), (ModelKind::Mdm, false)] {
        let net = sharpen(Transformer::new(kind, &tiny(length), VOCAB, 7, &device));
        let a = random_tokens(length, VOCAB, 0.0, 8);
        let mut b = a.clone();
        b[length - 1] = (b[length - 1] + 1) % VOCAB as u32;
        let la = to_host(net.forward(tokens_tensor(&a, 1, length, &device)));
        let lb = to_host(net.forward(tokens_tensor(&b, 1, length, &device)));
        // Position 0's output must not depend on the last token iff causal.
        let first = VOCAB + 1;
        let diff: f32 = la[..first]
            .iter()
            .zip(&lb[..first])
            .map(|(x, y)| (x - y).abs())
            .sum();
        assert_eq!(diff < 1e-5, causal, "{kind:?}: diff {diff}");
    }
}

/// `q`, `k`, `v` `[2, 2, n, 4]` and an ALiBi-like bias `[1, 2, n, n]` (slopes 4 and 0.5, so
/// the far keys of the first head sit hundreds below their row's maximum), on `device`.
fn attention_inputs(n: usize, device: &Device) -> [burn::tensor::Tensor<4>; 4] {
    use burn::tensor::{Tensor, TensorData};
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut random =
        |len: usize| -> Vec<f32> { (0..len).map(|_| rng.random_range(-2.0..2.0)).collect() };
    let shape = [2, 2, n, 4];
    let [q, k, v] =
        [(); 3].map(|_| Tensor::from_data(TensorData::new(random(2 * 2 * n * 4), shape), device));
    let bias: Vec<f32> = (0..2 * n * n)
        .map(|i| {
            let (head, row, col) = (i / (n * n), i / n % n, i % n);
            -[4.0, 0.5][head] * (row as f32 - col as f32).abs()
        })
        .collect();
    let bias = Tensor::from_data(TensorData::new(bias, [1, 2, n, n]), device);
    [q, k, v, bias]
}

#[test]
fn training_attention_gives_the_fused_kernels_values() {
    // The composed attention the autodiff device trains with against the backend's own
    // attention (flex's fused kernel, or wgpu's): the keys it drops weigh below e^-40, which
    // no f32 output can show.
    use burn::tensor::module::attention;
    use burn::tensor::ops::AttentionModuleOptions;
    let n = 40;
    let device = test_device();
    let train_device = device.clone().autodiff();
    for causal in [false, true] {
        let [q, k, v, bias] = attention_inputs(n, &device);
        let options = AttentionModuleOptions {
            is_causal: causal,
            ..Default::default()
        };
        let fused = to_host(attention(q, k, v, None, Some(bias), options));
        let [q, k, v, bias] = attention_inputs(n, &train_device);
        assert!(q.is_autodiff());
        let composed = to_host(crate::model::attention_for_training(q, k, v, bias, causal));
        let worst = fused
            .iter()
            .zip(&composed)
            .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
            .fold(0f32, f32::max);
        eprintln!("causal {causal}: worst difference {worst:e}");
        assert!(worst < 1e-5, "causal {causal}: {worst:e}");
    }
}

#[test]
fn training_attention_gives_keys_past_the_cutoff_no_weight() {
    // One query over four keys, all scored 0 but one biased 45 below (e^-45 ≈ 2.9e-20, past
    // the cutoff) or 35 below (e^-35 ≈ 6.3e-16, inside it). The values are 0 except that key's
    // 1e20: the output is that key's weight times 1e20, 0 only if it was dropped.
    use burn::tensor::{Tensor, TensorData};
    let device = test_device().autodiff();
    for (far, counted) in [(-45.0f32, false), (-35.0, true)] {
        assert_eq!(far < crate::model::TRAINING_WEIGHT_CUTOFF, !counted);
        let tensor = |data: Vec<f32>, shape: [usize; 4]| {
            Tensor::<4>::from_data(TensorData::new(data, shape), &device)
        };
        let q = tensor(vec![0.0], [1, 1, 1, 1]);
        let k = tensor(vec![0.0; 4], [1, 1, 4, 1]);
        let v = tensor(vec![0.0, 1e20, 0.0, 0.0], [1, 1, 4, 1]);
        let bias = tensor(vec![0.0, far, 0.0, 0.0], [1, 1, 1, 4]);
        let out = to_host(crate::model::attention_for_training(q, k, v, bias, false))[0];
        let expected = if counted {
            far.exp() / (3.0 + far.exp()) * 1e20
        } else {
            0.0
        };
        assert!(
            (out - expected).abs() <= 1e-5 * expected.abs(),
            "bias {far}: {out:e} against {expected:e}"
        );
    }
}

#[test]
fn training_attention_has_burns_gradients() {
    // Against Burn's own composition on the autodiff device (`attention_fallback`): the
    // gradients of q, k and v of a weighted sum of the outputs agree.
    use burn::tensor::module::attention;
    use burn::tensor::ops::AttentionModuleOptions;
    let n = 40;
    let device = test_device().autodiff();
    for causal in [false, true] {
        let grads_of = |ours: bool| {
            let [q, k, v, bias] = attention_inputs(n, &device);
            let [q, k, v] = [q, k, v].map(|t| t.require_grad());
            let out = if ours {
                crate::model::attention_for_training(q.clone(), k.clone(), v.clone(), bias, causal)
            } else {
                let options = AttentionModuleOptions {
                    is_causal: causal,
                    ..Default::default()
                };
                attention(q.clone(), k.clone(), v.clone(), None, Some(bias), options)
            };
            let weights = out.clone().cos().detach();
            let grads = (out * weights).sum().backward();
            [q, k, v].map(|t| {
                let grad = t.grad(&grads).expect("a gradient");
                grad.into_data()
                    .try_into_vec::<f32>()
                    .expect("f32 gradients")
            })
        };
        let (ours, burns) = (grads_of(true), grads_of(false));
        for (name, (a, b)) in ["q", "k", "v"].iter().zip(ours.iter().zip(&burns)) {
            let scale = b.iter().fold(0f32, |m, x| m.max(x.abs()));
            let worst = a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max);
            assert!(
                worst <= 1e-5 * scale,
                "causal {causal}, d{name}: {worst:e} of {scale:e}"
            );
        }
    }
}
