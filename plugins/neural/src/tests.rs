use crate::checkpoint::{Checkpoint, CheckpointHeader};
use crate::model::{subs_log_probs, to_host, tokens_tensor, ModelKind, NetConfig, Transformer};
use crate::plugin::{ArGenerator, MdmDenoiser, NeuralPlugin};
use crate::train::{self, ar_loss, mdm_loss_given, mdm_noise, optimizer, TrainConfig};
use burn::optim::GradientsParams;
use burn::tensor::Device;
use dlm_sdk::sampler::{generate_ar, Autoregressive};
use dlm_sdk::{
    Denoiser, GenerateRequest, Model, ModelOpenConfig, Plugin, SamplerSpec, TaskBinding,
    TaskDescription,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const VOCAB: usize = 5;

/// The device the tests run on: `flex`, or the one `DLM_NEURAL_TEST_DEVICE` names (`.ci/run`
/// runs them all again with `wgpu`, on Mesa's software Vulkan, in a build with that feature).
fn test_device() -> Device {
    crate::plugin::parse_device(device_name().as_deref())
        .expect("DLM_NEURAL_TEST_DEVICE names a device this build of dlm-neural supports")
}

fn device_name() -> Option<String> {
    std::env::var("DLM_NEURAL_TEST_DEVICE").ok()
}

fn task(vocab: usize, length: usize) -> TaskDescription {
    TaskDescription {
        label: format!("test chain (vocab {vocab})"),
        vocab_size: vocab,
        mask_id: vocab as u32,
        length,
        entropy_nats: None,
        entropy_exact: false,
        entropy_std_error: 0.0,
        optimal_ter: None,
        support_log10_density: None,
        details: serde_json::json!({"kind": "test"}),
        metrics: Vec::new(),
        text: None,
    }
}

fn tiny(length: usize) -> NetConfig {
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
fn sharpen(mut net: Transformer) -> Transformer {
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
fn chain_batch(batch: usize, length: usize, vocab: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<u32>> {
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

fn random_tokens(n: usize, vocab: usize, mask_share: f64, seed: u64) -> Vec<u32> {
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

fn ar_request(batch: usize, length: usize, seed: u64) -> GenerateRequest {
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
    }
}

#[test]
fn kv_cached_generation_matches_uncached_generation() {
    let device = test_device();
    let (batch, length) = (3, 14);
    let net = sharpen(Transformer::new(
        ModelKind::Ar,
        &tiny(length),
        VOCAB,
        9,
        &device,
    ));
    let mut cached = ArGenerator::new(net.clone(), device.clone(), "cpu".into(), true);
    let mut uncached = ArGenerator::new(net, device, "cpu".into(), false);

    // Step by step, the distributions agree (and are far from uniform).
    cached.begin(batch, length).unwrap();
    uncached.begin(batch, length).unwrap();
    let mut a = vec![0.0; batch * VOCAB];
    let mut b = vec![0.0; batch * VOCAB];
    let mut max_p: f64 = 0.0;
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    for j in 0..length {
        let appended: Option<Vec<u32>> = (j > 0).then(|| {
            (0..batch)
                .map(|_| rng.random_range(0..VOCAB as u32))
                .collect()
        });
        cached.next(appended.as_deref(), &mut a).unwrap();
        uncached.next(appended.as_deref(), &mut b).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() < 1e-4,
                "position {j}: cached {x} vs uncached {y}"
            );
        }
        max_p = a.iter().fold(max_p, |m, &p| m.max(p));
    }
    assert!(max_p > 0.5, "the test model is too flat ({max_p})");

    // Whole generations with the same seed give the same tokens.
    let request = ar_request(batch, length, 11);
    let (ta, ra) = generate_ar(&mut cached, &request).unwrap();
    let (tb, rb) = generate_ar(&mut uncached, &request).unwrap();
    assert_eq!(ta, tb);
    assert_eq!(ra.batch_nfe, length as u64);
    assert_eq!(rb.batch_nfe, length as u64);
    // Not a degenerate sample.
    let distinct: std::collections::BTreeSet<u32> = ta.iter().flatten().copied().collect();
    assert!(distinct.len() > 1);
}

#[test]
fn kv_cache_handles_several_positions_at_once() {
    // Feeding a prefix in one incremental call equals feeding it token by token.
    let device = test_device();
    let length = 10;
    let net = sharpen(Transformer::new(
        ModelKind::Ar,
        &tiny(length),
        VOCAB,
        12,
        &device,
    ));
    let tokens = random_tokens(2 * length, VOCAB, 0.0, 13);
    let full = to_host(net.forward(tokens_tensor(&tokens, 2, length, &device)));
    let mut cache = crate::model::ArCache::default();
    let head = |t: &[u32], n: usize| -> Vec<u32> {
        t.chunks(length).flat_map(|r| r[..n].to_vec()).collect()
    };
    let first = head(&tokens, 4);
    let part1 = to_host(net.forward_cached(tokens_tensor(&first, 2, 4, &device), &mut cache));
    let rest: Vec<u32> = tokens
        .chunks(length)
        .flat_map(|r| r[4..].to_vec())
        .collect();
    let part2 =
        to_host(net.forward_cached(tokens_tensor(&rest, 2, length - 4, &device), &mut cache));
    let v1 = VOCAB + 1;
    for row in 0..2 {
        for j in 0..length {
            let got = if j < 4 {
                &part1[(row * 4 + j) * v1..(row * 4 + j + 1) * v1]
            } else {
                let k = j - 4;
                &part2[(row * (length - 4) + k) * v1..(row * (length - 4) + k + 1) * v1]
            };
            let want = &full[(row * length + j) * v1..(row * length + j + 1) * v1];
            for (x, y) in got.iter().zip(want) {
                assert!((x - y).abs() < 1e-3, "row {row} position {j}: {x} vs {y}");
            }
        }
    }
}

#[test]
fn the_preallocated_kv_cache_matches_the_full_forward_and_clones_do_not_interfere() {
    // Token by token through a cache sized for the sequence, every position's logits equal the
    // full causal forward pass; a clone taken halfway shares the buffers until written, and
    // writing either one leaves the other intact.
    let device = test_device();
    let (batch, length, half) = (2, 24, 11);
    let net = sharpen(Transformer::new(
        ModelKind::Ar,
        &tiny(length),
        VOCAB,
        21,
        &device,
    ));
    let a = random_tokens(batch * length, VOCAB, 0.0, 22);
    // `b` shares the first `half` positions of every row with `a`.
    let mut b = random_tokens(batch * length, VOCAB, 0.0, 23);
    for row in 0..batch {
        b[row * length..row * length + half].copy_from_slice(&a[row * length..row * length + half]);
    }
    let column =
        |t: &[u32], j: usize| -> Vec<u32> { (0..batch).map(|r| t[r * length + j]).collect() };
    let v1 = VOCAB + 1;
    let check = |full: &[f32], got: &[f32], j: usize, what: &str| {
        for row in 0..batch {
            let want = &full[(row * length + j) * v1..(row * length + j + 1) * v1];
            for (x, y) in got[row * v1..(row + 1) * v1].iter().zip(want) {
                assert!(
                    (x - y).abs() < 1e-3,
                    "{what}: row {row} position {j}: {x} vs {y}"
                );
            }
        }
    };
    let full_a = to_host(net.forward(tokens_tensor(&a, batch, length, &device)));
    let full_b = to_host(net.forward(tokens_tensor(&b, batch, length, &device)));
    let mut cache_a = crate::model::ArCache::with_capacity(length);
    for j in 0..half {
        let got = to_host(net.forward_cached(
            tokens_tensor(&column(&a, j), batch, 1, &device),
            &mut cache_a,
        ));
        check(&full_a, &got, j, "a");
    }
    let mut cache_b = cache_a.clone();
    let mut cache_c = cache_a.deep_clone();
    for j in half..length {
        let got = to_host(net.forward_cached(
            tokens_tensor(&column(&b, j), batch, 1, &device),
            &mut cache_b,
        ));
        check(&full_b, &got, j, "b (shared clone)");
        let got = to_host(net.forward_cached(
            tokens_tensor(&column(&a, j), batch, 1, &device),
            &mut cache_a,
        ));
        check(&full_a, &got, j, "a (original)");
        let got = to_host(net.forward_cached(
            tokens_tensor(&column(&b, j), batch, 1, &device),
            &mut cache_c,
        ));
        check(&full_b, &got, j, "b (deep clone)");
    }
    assert_eq!((cache_a.len, cache_a.capacity), (length, length));
}

#[test]
fn the_multi_draw_validation_elbo_is_far_less_noisy_than_one_draw() {
    // The same bound, estimated from one noise draw or from eight stratified ones per sequence,
    // over 24 seeds: same mean (within sampling error), a much smaller spread.
    let device = test_device();
    let (batch, length) = (8, 16);
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let x0: Vec<u32> = chain_batch(batch, length, VOCAB, &mut rng).concat();
    let net = Transformer::new(ModelKind::Mdm, &tiny(length), VOCAB, 32, &device);
    let spread = |draws: usize| {
        let values: Vec<f64> = (0..24)
            .map(|seed| {
                let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
                train::mdm_elbo(&net, &x0, batch, draws, &mut rng, &device)
            })
            .collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let var =
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
        (mean, var.sqrt())
    };
    let (mean1, sd1) = spread(1);
    let (mean8, sd8) = spread(train::VALIDATION_DRAWS);
    eprintln!(
        "one draw {mean1:.4} ± {sd1:.4}, {} draws {mean8:.4} ± {sd8:.4}",
        train::VALIDATION_DRAWS
    );
    assert!(sd8 < 0.5 * sd1, "spread {sd1} -> {sd8}");
    assert!(
        (mean1 - mean8).abs() < 3.0 * sd1 / (24f64).sqrt(),
        "{mean1} vs {mean8}"
    );
}

fn trained_checkpoint(kind: ModelKind) -> Checkpoint {
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
fn a_saved_and_reloaded_checkpoint_gives_identical_logits() {
    let dir = tempfile::tempdir().unwrap();
    let device = test_device();
    for kind in [ModelKind::Mdm, ModelKind::Ar] {
        let ckpt = trained_checkpoint(kind);
        let path = dir.path().join(format!("{}.ckpt", kind.as_str()));
        ckpt.save(&path).unwrap();
        let loaded = Checkpoint::load(&path, None, &device).unwrap();
        assert_eq!(loaded.header.identity, ckpt.header.identity);
        assert_eq!(
            loaded.header.fingerprint,
            ckpt.header.identity.fingerprint()
        );
        let tokens = random_tokens(16, VOCAB, 0.4, 16);
        let x = |d: &Device| tokens_tensor(&tokens, 2, 8, d);
        let a = to_host(ckpt.net.forward(x(&device)));
        let b = to_host(loaded.net.forward(x(&device)));
        assert_eq!(a, b, "{kind:?}");
        // Sanity: training changed the weights (the record is not the seed's initialisation).
        let init = Transformer::new(kind, &loaded.header.identity.net, VOCAB, 15, &device);
        assert_ne!(to_host(init.forward(x(&device))), a);
        // The expected fingerprint is accepted.
        Checkpoint::load(&path, Some(&ckpt.header.identity.fingerprint()), &device).unwrap();
    }
}

#[test]
fn corrupted_or_mismatched_checkpoints_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let device = test_device();
    let ckpt = trained_checkpoint(ModelKind::Mdm);
    let path = dir.path().join("m.ckpt");
    ckpt.save(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let refuse = |bytes: &[u8], expect: Option<&str>| -> String {
        let p = dir.path().join("bad.ckpt");
        std::fs::write(&p, bytes).unwrap();
        match Checkpoint::load(&p, expect, &device) {
            Ok(_) => panic!("a bad checkpoint was accepted"),
            Err(e) => e,
        }
    };

    // A flipped byte in the weights.
    let mut bad = good.clone();
    let last = bad.len() - 10;
    bad[last] ^= 0x55;
    let e = refuse(&bad, None);
    assert!(e.contains("weights are corrupted"), "{e}");

    // Truncated weights.
    let e = refuse(&good[..good.len() - 100], None);
    assert!(e.contains("corrupted"), "{e}");

    // An edited header (another seed) no longer matches its fingerprint.
    let text = String::from_utf8_lossy(&good).into_owned();
    let header_start = text.find('\n').unwrap() + 1;
    let header_end = header_start + text[header_start..].find('\n').unwrap();
    let mut header: CheckpointHeader =
        serde_json::from_str(&text[header_start..header_end]).unwrap();
    header.identity.seed += 1;
    let mut edited = good[..header_start].to_vec();
    edited.extend_from_slice(serde_json::to_string(&header).unwrap().as_bytes());
    edited.extend_from_slice(&good[header_end..]);
    let e = refuse(&edited, None);
    assert!(e.contains("does not match its fingerprint"), "{e}");

    // Another plugin version.
    let mut header2: CheckpointHeader =
        serde_json::from_str(&text[header_start..header_end]).unwrap();
    header2.identity.plugin_version = "0.0.1".into();
    header2.fingerprint = header2.identity.fingerprint();
    let mut other = good[..header_start].to_vec();
    other.extend_from_slice(serde_json::to_string(&header2).unwrap().as_bytes());
    other.extend_from_slice(&good[header_end..]);
    let e = refuse(&other, None);
    assert!(e.contains("retrain"), "{e}");

    // The caller expected another model.
    let e = refuse(&good, Some("0123abcd"));
    assert!(e.contains("fingerprint mismatch"), "{e}");

    // Not a checkpoint at all.
    let e = refuse(b"hello\nworld\n", None);
    assert!(e.contains("not a dlm-neural checkpoint"), "{e}");
    let e = refuse(b"", None);
    assert!(e.contains("not a dlm-neural checkpoint"), "{e}");
}

#[test]
fn a_tiny_training_run_learns_a_two_gram_chain() {
    // A few seconds per model. MDM training with batch 16 sometimes sits on a plateau (the
    // 1/t-weighted loss is noisy at small batches); batch 32 learned on every seed tried.
    let (vocab, length, batch) = (4, 16, 32);
    let t = task(vocab, length);
    let net = NetConfig {
        hidden: 64,
        layers: 2,
        heads: 2,
        ff_mult: 2,
        max_length: None,
    };
    let uniform = (vocab as f64).ln();
    let mut val_rng = ChaCha8Rng::seed_from_u64(99);
    let validation: Vec<Vec<Vec<u32>>> = (0..4)
        .map(|_| chain_batch(batch, length, vocab, &mut val_rng))
        .collect();
    for kind in [ModelKind::Mdm, ModelKind::Ar] {
        let mut config = TrainConfig::new(300, batch);
        config.lr = 3e-3;
        config.seed = 17;
        let mut rng = ChaCha8Rng::seed_from_u64(18);
        let mut steps = 0;
        let mut first_loss = None;
        let ckpt = train::train(
            kind,
            &net,
            &t,
            &config,
            &test_device(),
            |b, _| Ok(chain_batch(b, length, vocab, &mut rng)),
            |p| {
                steps = p.step;
                first_loss.get_or_insert(p.loss);
                assert!(p.tokens_per_second > 0.0 && p.lr > 0.0 || p.step == p.steps);
            },
        )
        .unwrap();
        assert_eq!(steps, 300);
        assert!(ckpt.header.final_loss.is_some());
        let device = test_device();
        let untrained = Transformer::new(kind, &ckpt.header.identity.net, vocab, 17, &device);
        let before = train::evaluate(kind, &untrained, &validation, &[], 1, &device).unwrap();
        let after = train::evaluate(kind, &ckpt.net, &validation, &[], 1, &device).unwrap();
        eprintln!("{kind:?}: validation loss {before:.3} -> {after:.3} (log V = {uniform:.3})");
        // Entropy rate of the chain ≈ 0.35 nats; uniform = log 4 ≈ 1.39.
        assert!(before > 0.9 * uniform, "{kind:?}: untrained loss {before}");
        assert!(after < 0.6 * uniform, "{kind:?}: {before} -> {after}");
    }
}

#[test]
fn training_refuses_bad_data() {
    let t = task(VOCAB, 8);
    let config = TrainConfig::new(2, 2);
    let run = |seqs: Vec<Vec<u32>>| {
        train::train(
            ModelKind::Mdm,
            &tiny(8),
            &t,
            &config,
            &test_device(),
            move |_, _| Ok(seqs.clone()),
            |_| {},
        )
        .unwrap_err()
    };
    assert!(run(vec![vec![0; 8]]).contains("1 sequences, expected 2"));
    assert!(run(vec![vec![0; 8], vec![0; 7]]).contains("length 7"));
    assert!(run(vec![vec![0; 8], vec![VOCAB as u32; 8]]).contains("outside the vocabulary"));
}

#[test]
fn learning_rate_warms_up_then_decays() {
    let c = TrainConfig::new(100, 1);
    assert!((c.learning_rate(0) - 3e-5).abs() < 1e-12);
    assert!((c.learning_rate(9) - 3e-4).abs() < 1e-12);
    assert!((c.learning_rate(10) - 3e-4).abs() < 1e-12);
    assert!(c.learning_rate(55) < 1.6e-4 && c.learning_rate(55) > 1.4e-4);
    assert!(c.learning_rate(99) < 1e-6);
}

fn open(
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
        },
    )
}

#[test]
fn the_plugin_opens_and_generates_with_both_models() {
    let models = NeuralPlugin::models();
    assert_eq!(models.len(), 2);
    assert!(models[0].samplers.iter().any(|s| s == "ddpm_cache"));
    assert!(models[1].has("autoregressive"));
    assert_eq!(models[1].samplers, vec!["ar".to_string()]);

    let length = 12;
    let init = serde_json::json!({"init": {"hidden": 16, "layers": 1, "heads": 2}, "seed": 3});
    let mut mdm = open("mdm", init.clone(), length).unwrap();
    let request = GenerateRequest {
        batch_size: 2,
        length,
        sampler: SamplerSpec {
            name: "ddpm_cache".into(),
            steps: 4,
            schedule: None,
            params: Default::default(),
        },
        seed: 0,
        first_index: 0,
        prompts: None,
        prompt_texts: None,
    };
    let (seqs, reply) = mdm.generate(&request).unwrap();
    assert_eq!(seqs.len(), 2);
    assert!(seqs.iter().flatten().all(|&t| (t as usize) < VOCAB));
    assert!(reply.batch_nfe >= 1);

    let mut ar = open("ar", init, length).unwrap();
    let (seqs, reply) = ar.generate(&ar_request(2, length, 0)).unwrap();
    assert_eq!(seqs.len(), 2);
    assert!(seqs.iter().all(|s| s.len() == length));
    assert_eq!(reply.batch_nfe, length as u64);
}

#[test]
fn the_plugin_refuses_bad_configs() {
    let msg = |r: dlm_sdk::Result<Box<dyn Model>>| match r {
        Ok(_) => panic!("accepted"),
        Err(e) => e.0,
    };
    assert!(msg(open("mdm", serde_json::json!({}), 8)).contains("exactly one of"));
    assert!(
        msg(open("mdm", serde_json::json!({"init": "huge"}), 8)).contains("unknown model preset")
    );
    assert!(msg(open(
        "mdm",
        serde_json::json!({"init": "cpu", "colour": 1}),
        8
    ))
    .contains("colour"));
    assert!(msg(open(
        "mdm",
        serde_json::json!({"init": "cpu", "device": "tpu"}),
        8
    ))
    .contains("tpu"));
    assert!(msg(open("gpt", serde_json::json!({"init": "cpu"}), 8)).contains("not `gpt`"));
    assert!(msg(open(
        "mdm",
        serde_json::json!({"init": {"hidden": 10, "layers": 1, "heads": 3}}),
        8
    ))
    .contains("divisible"));

    // A checkpoint of the other kind, or for another task, is refused.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ar.ckpt");
    trained_checkpoint(ModelKind::Ar).save(&path).unwrap();
    let cfg = serde_json::json!({"checkpoint": path});
    assert!(msg(open("mdm", cfg.clone(), 8)).contains("holds an `ar` model"));
    assert!(open("ar", cfg.clone(), 8).is_ok());
    assert!(msg(open("ar", cfg, 9)).contains("max_length"));
}

/// Text tasks: the prompt is never masked or counted, and without prompts the noise (and so
/// every formal-language training) is exactly what it was before prompts existed.
#[test]
fn mdm_noise_keeps_prompts_and_is_unchanged_without_them() {
    let (batch, length) = (3, 10);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let x0: Vec<u32> = chain_batch(batch, length, VOCAB, &mut rng).concat();
    let times = [0.99, 0.99, 0.99];
    let plain = train::mdm_noise_at(&x0, &times, VOCAB, &mut ChaCha8Rng::seed_from_u64(1));
    let zero = train::mdm_noise_prompted(
        &x0,
        &times,
        &[0, 0, 0],
        VOCAB,
        &mut ChaCha8Rng::seed_from_u64(1),
    );
    assert_eq!(plain.xt, zero.xt);
    assert_eq!(plain.counted, batch * length);
    let prompts = [4, 0, 10];
    let p = train::mdm_noise_prompted(
        &x0,
        &times,
        &prompts,
        VOCAB,
        &mut ChaCha8Rng::seed_from_u64(1),
    );
    for (i, &prompt) in prompts.iter().enumerate() {
        let row = &p.xt[i * length..(i + 1) * length];
        assert_eq!(
            &row[..prompt],
            &x0[i * length..i * length + prompt],
            "row {i}"
        );
        assert!(p.weights[i * length..i * length + prompt]
            .iter()
            .all(|&w| w == 0.0));
        if prompt < length {
            // At t = 0.99 nearly every completion token is masked.
            assert!(
                row[prompt..].iter().filter(|&&t| t == VOCAB as u32).count()
                    >= (length - prompt) / 2
            );
        }
    }
    assert_eq!(p.counted, 6 + 10);
}

#[test]
fn the_ar_loss_counts_only_completion_positions() {
    let device = test_device();
    let (batch, length) = (4, 9);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let x0: Vec<u32> = chain_batch(batch, length, VOCAB, &mut rng).concat();
    let net = Transformer::new(ModelKind::Ar, &tiny(length), VOCAB, 2, &device);
    let plain = ar_loss(&net, &x0, batch, &device).into_scalar::<f32>();
    let zero = train::ar_loss_prompted(&net, &x0, batch, &[0; 4], &device).into_scalar::<f32>();
    assert_eq!(plain, zero);
    // With prompts, their positions are left out of the mean.
    let prompted = train::ar_loss_prompted(&net, &x0, batch, &[3; 4], &device).into_scalar::<f32>();
    assert!(prompted.is_finite() && prompted > 0.0);
    assert!(
        (prompted - plain).abs() > 1e-6,
        "the prompt must be left out: {prompted} vs {plain}"
    );
}

/// The GPU path computes what the CPU path computes: one checkpoint's logits on `wgpu` (Mesa's
/// software Vulkan in CI) and on `flex` agree up to `f32` rounding in a different order.
#[cfg(feature = "wgpu")]
#[test]
fn wgpu_logits_match_flex() {
    logits_match_flex("wgpu");
}

/// LibTorch computes what flex computes: the same checkpoint's logits on `tch` (LibTorch's CPU
/// kernels; `DLM_NEURAL_TEST_DEVICE=tch:cuda` in tools/tch/test.sh adds a GPU) and on `flex`.
#[cfg(feature = "tch")]
#[test]
fn tch_logits_match_flex() {
    logits_match_flex("tch");
    if let Some(name) = device_name().filter(|n| n.starts_with("tch:cuda")) {
        logits_match_flex(&name);
    }
}

/// LibTorch's device names: `tch:cpu` is `tch`; a CUDA index LibTorch does not see, or a name
/// it does not know, is refused with a message rather than a panic at the first tensor.
#[cfg(feature = "tch")]
#[test]
fn tch_device_names_are_checked() {
    use crate::plugin::parse_device;
    assert_eq!(
        parse_device(Some("tch:cpu")).unwrap(),
        parse_device(Some("tch")).unwrap()
    );
    let gpus = tch::Cuda::device_count();
    let err = parse_device(Some(&format!("tch:cuda:{gpus}"))).unwrap_err();
    assert!(err.0.contains("CUDA device"), "{err:?}");
    for bad in ["tch:gpu", "tch:cuda:x", "tch:cuda0"] {
        let err = parse_device(Some(bad)).unwrap_err();
        assert!(err.0.contains("tch:cuda:N"), "{bad}: {err:?}");
    }
}

/// A trained checkpoint's logits on `device` and on `flex` agree to 1e-4 relative to `1 + |flex|`.
#[cfg(any(feature = "wgpu", feature = "tch"))]
fn logits_match_flex(device: &str) {
    let dir = tempfile::tempdir().unwrap();
    let other = crate::plugin::parse_device(Some(device)).unwrap();
    for kind in [ModelKind::Mdm, ModelKind::Ar] {
        let path = dir.path().join(format!("{}.ckpt", kind.as_str()));
        trained_checkpoint(kind).save(&path).unwrap();
        let tokens = random_tokens(32, VOCAB, 0.4, 17);
        let logits = |d: &Device| {
            let ckpt = Checkpoint::load(&path, None, d).unwrap();
            to_host(ckpt.net.forward(tokens_tensor(&tokens, 4, 8, d)))
        };
        let (cpu, theirs) = (logits(&Device::flex()), logits(&other));
        assert_eq!(cpu.len(), theirs.len());
        let worst = cpu
            .iter()
            .zip(&theirs)
            .map(|(a, b)| (a - b).abs() / (1.0 + a.abs()))
            .fold(0f32, f32::max);
        eprintln!("{kind:?}: largest |flex − {device}| / (1 + |flex|) = {worst:.2e}");
        assert!(worst < 1e-4, "{kind:?}: logits differ by up to {worst}");
    }
}

/// Every sampler on the device path (what `mdm` and `ar` sample with) against the host path (f64
/// copies of every distribution) on the same network and seeds: at least 99.9% of positions
/// agree. The two differ only in rounding: the host draws in f64 from `exp(log p)` copied out,
/// the device in f32 from `softmax(log p)` in place.
#[test]
fn device_and_host_sampling_paths_agree() {
    use dlm_sdk::sampler::device;
    let device = test_device();
    let (batch, length) = (32, 16);
    let mut net = Transformer::new(ModelKind::Mdm, &tiny(length), VOCAB, 21, &device);
    // Sharper than at initialisation, so the confidence rules have something to rank.
    net.head.weight = net.head.weight.map(|t| t.mul_scalar(8.0));
    let mut mdm = MdmDenoiser {
        net,
        device: device.clone(),
        label: "test".into(),
    };
    let cases: Vec<(&str, usize, serde_json::Value)> = vec![
        ("ddpm", 8, serde_json::json!({})),
        ("ddpm_cache", 16, serde_json::json!({"temperature": 0.8})),
        ("low_confidence", 8, serde_json::json!({"block_length": 8})),
        ("random", 8, serde_json::json!({"top_k": 3})),
        ("threshold", 16, serde_json::json!({"tau": 0.7})),
        ("factor", 16, serde_json::json!({})),
        ("eb", 16, serde_json::json!({"gamma": 0.3})),
        (
            "eb",
            16,
            serde_json::json!({"proxy": "margin", "top_p": 0.9}),
        ),
        ("left_to_right", length, serde_json::json!({})),
    ];
    let (mut same, mut total) = (0, 0);
    for (name, steps, params) in cases {
        let mut request = ar_request(batch, length, 5);
        request.sampler.name = name.into();
        request.sampler.steps = steps;
        request.sampler.params = params.as_object().unwrap().clone().into_iter().collect();
        let (host, _) = dlm_sdk::sampler::generate(&mut mdm, &request).unwrap();
        let (dev, reply) = device::generate(&mut mdm, &request).unwrap();
        assert_eq!(reply.device, "test");
        let agree: usize = host
            .iter()
            .zip(&dev)
            .map(|(h, d)| h.iter().zip(d).filter(|(a, b)| a == b).count())
            .sum();
        eprintln!(
            "mdm {name} {params}: {agree} of {} positions agree",
            batch * length
        );
        same += agree;
        total += batch * length;
    }
    let mut ar = ArGenerator::new(
        sharpen(Transformer::new(
            ModelKind::Ar,
            &tiny(length),
            VOCAB,
            9,
            &device,
        )),
        device,
        "test".into(),
        true,
    );
    let request = ar_request(batch, length, 6);
    let (host, _) = generate_ar(&mut ar, &request).unwrap();
    let (dev, _) = device::generate_ar(&mut ar, &request).unwrap();
    let agree: usize = host
        .iter()
        .zip(&dev)
        .map(|(h, d)| h.iter().zip(d).filter(|(a, b)| a == b).count())
        .sum();
    eprintln!("ar: {agree} of {} positions agree", batch * length);
    same += agree;
    total += batch * length;
    assert!(
        same * 1000 >= total * 999,
        "{same} of {total} positions agree"
    );
}

#[test]
fn real_token_logits_are_the_full_forward_without_its_mask_column() {
    let device = test_device();
    let (batch, length) = (3, 10);
    let net = sharpen(Transformer::new(
        ModelKind::Mdm,
        &tiny(length),
        VOCAB,
        4,
        &device,
    ));
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let ids: Vec<u32> = (0..batch * length)
        .map(|_| rng.random_range(0..=VOCAB as u32))
        .collect();
    let x = tokens_tensor(&ids, batch, length, &device);
    let full = to_host(net.forward(x.clone()).narrow(2, 0, VOCAB));
    let real = to_host(net.forward_real(x));
    assert_eq!(full.len(), real.len());
    for (i, (a, b)) in full.iter().zip(&real).enumerate() {
        assert!(
            (a - b).abs() <= 1e-4 * a.abs().max(1.0),
            "logit {i}: {a} vs {b}"
        );
    }
}

#[test]
fn a_bf16_kv_cache_stays_within_its_rounding_of_the_f32_cache() {
    // The same prompt (three positions at once) and tokens (one at a time) through an f32 and a
    // bf16 cache, on flex (the only device that reads a bf16 cache): the bf16 buffers hold the
    // keys (transposed) and values, and every step's probabilities agree with the f32 cache's
    // within the rounding of keys and values to 8 significant bits, but are not the same bits
    // (so the bf16 path is the one that ran).
    use crate::model::{ArCache, KvDtype};
    use burn::tensor::activation::softmax;
    use burn::tensor::DType;
    let device = crate::plugin::parse_device(None).unwrap();
    let (batch, length) = (3, 40);
    let net = sharpen(Transformer::new(
        ModelKind::Ar,
        &tiny(length),
        VOCAB,
        41,
        &device,
    ));
    let tokens = random_tokens(batch * length, VOCAB, 0.0, 42);
    let column = |j: usize| -> Vec<u32> { (0..batch).map(|r| tokens[r * length + j]).collect() };
    let prompt: Vec<u32> = tokens
        .chunks(length)
        .flat_map(|row| row[..3].to_vec())
        .collect();
    let mut caches = [
        ArCache::with_capacity(length),
        ArCache::with_capacity(length).with_dtype(KvDtype::Bf16),
    ];
    let (mut largest, mut sharpest) = (0f32, 0f32);
    for step in 2..length {
        let probs: Vec<Vec<f32>> = caches
            .iter_mut()
            .map(|cache| {
                let logits = if step == 2 {
                    net.forward_cached(tokens_tensor(&prompt, batch, 3, &device), cache)
                } else {
                    net.forward_cached(tokens_tensor(&column(step), batch, 1, &device), cache)
                };
                let n = logits.dims()[1];
                to_host(softmax(logits.narrow(1, n - 1, 1).narrow(2, 0, VOCAB), 2))
            })
            .collect();
        for (x, y) in probs[0].iter().zip(&probs[1]) {
            assert!(
                (x - y).abs() < 5e-2,
                "step {step}: f32 cache {x}, bf16 cache {y}"
            );
            largest = largest.max((x - y).abs());
            sharpest = sharpest.max(*x);
        }
    }
    let block = &caches[1].blocks[0];
    assert_eq!(block.k.dtype(), DType::BF16);
    assert_eq!(block.v.dtype(), DType::BF16);
    // Keys `[batch, heads, head_dim, capacity]`, values `[batch, heads, capacity, head_dim]`.
    assert_eq!(block.k.dims()[3], length);
    assert_eq!(block.v.dims()[2], length);
    assert_eq!(caches[0].blocks[0].k.dtype(), DType::F32);
    assert!(largest > 0.0, "the bf16 cache gave the f32 cache's bits");
    assert!(sharpest > 0.5, "the test model is too flat ({sharpest})");
    eprintln!("largest probability difference, bf16 against f32 cache: {largest:.2e}");
}

#[test]
fn the_bf16_kv_cache_is_an_ar_flex_option_and_generates() {
    let msg = |r: dlm_sdk::Result<Box<dyn Model>>| match r {
        Ok(_) => panic!("accepted"),
        Err(e) => e.0,
    };
    let length = 12;
    let init = serde_json::json!({"init": {"hidden": 16, "layers": 1, "heads": 2}, "seed": 3,
        "kv_cache_dtype": "bf16"});
    assert!(msg(open("mdm", init.clone(), length)).contains("applies to the `ar` model"));
    let mut uncached = init.clone();
    uncached["kv_cache"] = false.into();
    assert!(msg(open("ar", uncached, length)).contains("`kv_cache: true`"));
    let mut on_wgpu = init.clone();
    on_wgpu["device"] = "wgpu".into();
    assert!(msg(open("ar", on_wgpu, length)).contains("`flex` device only"));
    let mut fp8 = init.clone();
    fp8["kv_cache_dtype"] = "fp8".into();
    assert!(msg(open("ar", fp8, length)).contains("fp8"));

    let mut on_flex = init;
    on_flex["device"] = "flex".into();
    let mut ar = open("ar", on_flex, length).unwrap();
    let (seqs, reply) = ar.generate(&ar_request(2, length, 0)).unwrap();
    assert_eq!(seqs.len(), 2);
    assert!(seqs.iter().all(|s| s.len() == length));
    assert!(seqs.iter().flatten().all(|&t| (t as usize) < VOCAB));
    assert_eq!(reply.batch_nfe, length as u64);
}
