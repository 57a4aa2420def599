//! Block diffusion: the masks against their definitions, block causality, block size L = the
//! MDM, the BD3 training pass against decoding's view, a few training steps, the checkpoint's
//! block size, and the refusals (sampler blocks, config keys).

use crate::block::{
    align_request, bd3_training_bias, block_causal_bias, block_causal_sees, BlockAligned,
};
use crate::model::{to_host, tokens_tensor, ModelKind, NetConfig, Transformer};
use crate::tests::{chain_batch, open, random_tokens, sharpen, task, test_device, tiny, VOCAB};
use crate::train::{mdm_loss_prompted, TrainConfig, Trainer};
use dlm_sdk::{
    GenerateRequest, ModelOpenConfig, Plugin, SamplerSpec, TaskBinding, TrainSettings,
    TrainedCheckpoint,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// bd3lms' `block_diff_mask` (models/dit.py at 1c3e8f43), transcribed term by term: the
/// definition the 2L training mask is checked against.
fn bd3lms_block_diff_mask(q: usize, kv: usize, block_size: usize, n: usize) -> bool {
    let (x0_q, x0_kv) = (q >= n, kv >= n);
    let block_q = if x0_q {
        (q - n) / block_size
    } else {
        q / block_size
    };
    let block_kv = if x0_kv {
        (kv - n) / block_size
    } else {
        kv / block_size
    };
    let block_diagonal = block_q == block_kv && x0_q == x0_kv;
    let offset_block_causal = block_q > block_kv && x0_kv && !x0_q;
    let block_causal = block_q >= block_kv && x0_kv && x0_q;
    block_diagonal || offset_block_causal || block_causal
}

#[test]
fn the_masks_are_their_definitions() {
    for (length, block_size) in [(1, 1), (8, 1), (8, 2), (8, 3), (9, 4), (12, 12), (7, 10)] {
        // Every query range, as a full pass (0..length) and a cache window (start..end) ask.
        for start in 0..length {
            for end in start..=length {
                let bias = block_causal_bias(start..end, length, block_size);
                assert_eq!(bias.len(), (end - start) * length);
                for (i, query) in (start..end).enumerate() {
                    for key in 0..length {
                        let seen = bias[i * length + key] == 0.0;
                        assert_eq!(seen, block_causal_sees(query, key, block_size));
                        assert!(seen || bias[i * length + key] == f32::NEG_INFINITY);
                    }
                }
            }
        }
        let span = 2 * length;
        let bias = bd3_training_bias(length, block_size);
        for q in 0..span {
            for kv in 0..span {
                let seen = bias[q * span + kv] == 0.0;
                assert_eq!(
                    seen,
                    bd3lms_block_diff_mask(q, kv, block_size, length),
                    "L {length}, block {block_size}: query {q}, key {kv}"
                );
            }
        }
    }
}

/// A sharpened tiny MDM (outputs far from uniform, every input visible in them) at `length`.
fn sharp_mdm(length: usize, block_size: Option<usize>) -> Transformer {
    let net = Transformer::new(ModelKind::Mdm, &tiny(length), VOCAB, 5, &test_device());
    sharpen(net).with_block_size(block_size)
}

fn real_logits(net: &Transformer, tokens: &[u32], batch: usize, length: usize) -> Vec<f32> {
    to_host(net.forward_real(tokens_tensor(tokens, batch, length, &test_device())))
}

#[test]
fn later_blocks_never_change_the_logits_of_earlier_ones() {
    let (batch, length, block_size) = (2, 14, 4);
    let before = random_tokens(batch * length, VOCAB, 0.4, 1);
    // Every position from 9 on (inside block 2, and block 3) redrawn, masks included.
    let mut after = before.clone();
    let redrawn = random_tokens(batch * length, VOCAB, 0.4, 2);
    for row in 0..batch {
        for j in 9..length {
            after[row * length + j] = redrawn[row * length + j];
        }
    }
    assert_ne!(before, after);
    let per_row = |logits: &[f32], row: usize, positions: std::ops::Range<usize>| {
        logits[(row * length + positions.start) * VOCAB..(row * length + positions.end) * VOCAB]
            .to_vec()
    };
    let block = sharp_mdm(length, Some(block_size));
    let (a, b) = (
        real_logits(&block, &before, batch, length),
        real_logits(&block, &after, batch, length),
    );
    let bidirectional = sharp_mdm(length, None);
    let (c, d) = (
        real_logits(&bidirectional, &before, batch, length),
        real_logits(&bidirectional, &after, batch, length),
    );
    for row in 0..batch {
        // Blocks 0 and 1 (positions 0..8) are bit-identical; block 2 sees the change.
        assert_eq!(per_row(&a, row, 0..8), per_row(&b, row, 0..8), "row {row}");
        assert_ne!(
            per_row(&a, row, 8..12),
            per_row(&b, row, 8..12),
            "row {row}"
        );
        // Without the mask the same change reaches position 0: the test can fail.
        assert_ne!(per_row(&c, row, 0..4), per_row(&d, row, 0..4), "row {row}");
    }
}

#[test]
fn block_size_l_is_the_mdm() {
    let (batch, length) = (3, 10);
    let tokens = random_tokens(batch * length, VOCAB, 0.5, 3);
    let mdm = sharp_mdm(length, None);
    let one_block = sharp_mdm(length, Some(length));
    assert_eq!(
        real_logits(&mdm, &tokens, batch, length),
        real_logits(&one_block, &tokens, batch, length)
    );
    // The training loss too: the same noise draws, the same value.
    let x0 = random_tokens(batch * length, VOCAB, 0.0, 4);
    let loss = |net: &Transformer| {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        mdm_loss_prompted(net, &x0, batch, &[], &mut rng, &test_device()).into_scalar::<f32>()
    };
    assert_eq!(loss(&mdm), loss(&one_block));
    // A smaller block changes both (the comparison can fail).
    let blocks = sharp_mdm(length, Some(3));
    assert_ne!(
        real_logits(&mdm, &tokens, batch, length),
        real_logits(&blocks, &tokens, batch, length)
    );
    assert_ne!(loss(&mdm), loss(&blocks));
}

#[test]
fn the_training_pass_sees_what_decoding_sees() {
    let device = test_device();
    // 10 positions in blocks of 4: the last block is short.
    for (length, block_size) in [(12, 4), (10, 4), (6, 1)] {
        let batch = 2;
        let net = sharp_mdm(length, Some(block_size));
        let x0 = random_tokens(batch * length, VOCAB, 0.0, 7);
        let xt: Vec<u32> = random_tokens(batch * length, VOCAB, 0.5, 8)
            .iter()
            .zip(&x0)
            .map(|(&noise, &clean)| {
                if noise as usize == VOCAB {
                    noise
                } else {
                    clean
                }
            })
            .collect();
        let training = to_host(net.forward_bd3(
            tokens_tensor(&xt, batch, length, &device),
            tokens_tensor(&x0, batch, length, &device),
        ));
        let scale = training.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(scale > 1.0, "sharpened logits are far from uniform");
        for b in 0..length.div_ceil(block_size) {
            let block = b * block_size..((b + 1) * block_size).min(length);
            // Decoding block b: earlier blocks clean, block b noisy (later blocks unseen).
            let mut view = xt.clone();
            for row in 0..batch {
                for j in 0..block.start {
                    view[row * length + j] = x0[row * length + j];
                }
            }
            let plain = real_logits(&net, &view, batch, length);
            for row in 0..batch {
                for j in block.clone() {
                    for v in 0..VOCAB {
                        let at = (row * length + j) * VOCAB + v;
                        assert!(
                            (training[at] - plain[at]).abs() <= 1e-4 * scale,
                            "L {length}, block {block_size}: row {row}, position {j}, token {v}: \
                             {} vs {}",
                            training[at],
                            plain[at]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_few_block_diffusion_steps_learn_a_two_gram_chain() {
    let (vocab, length, batch, block_size) = (4, 16, 32, 4);
    let net = NetConfig {
        hidden: 32,
        layers: 1,
        heads: 2,
        ff_mult: 2,
        max_length: None,
    };
    let mut config = TrainConfig::new(80, batch);
    config.lr = 3e-3;
    config.seed = 21;
    let device = test_device();
    let mut trainer = Trainer::new(ModelKind::Mdm, &net, &task(vocab, length), &config, &device)
        .unwrap()
        .with_block_size(Some(block_size))
        .unwrap();
    let mut val_rng = ChaCha8Rng::seed_from_u64(22);
    let validation = vec![chain_batch(batch, length, vocab, &mut val_rng)];
    let before = trainer.evaluate(&validation, &[]).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    for _ in 0..config.steps {
        let p = trainer
            .step(&chain_batch(batch, length, vocab, &mut rng), &[])
            .unwrap();
        assert!(p.loss.is_finite());
    }
    let after = trainer.evaluate(&validation, &[]).unwrap();
    let uniform = (vocab as f64).ln();
    eprintln!(
        "BD3 block {block_size}: validation ELBO {before:.3} -> {after:.3} (log V {uniform:.3})"
    );
    assert!(before > 0.9 * uniform, "untrained {before}");
    // The chain's entropy rate is about 0.35 nats; the ELBO of a model that has learned the
    // next-token rule from clean context drops far below uniform.
    assert!(after < 0.75 * uniform, "{before} -> {after}");
    let ckpt = trainer.checkpoint().unwrap();
    assert_eq!(ckpt.header.identity.block_size, Some(block_size));
    assert_eq!(ckpt.net.block_size(), Some(block_size));
}

fn request(
    sampler: &str,
    length: usize,
    params: serde_json::Value,
    prompts: Option<usize>,
) -> GenerateRequest {
    GenerateRequest {
        batch_size: 2,
        length,
        sampler: SamplerSpec {
            name: sampler.into(),
            steps: length,
            schedule: None,
            params: serde_json::from_value(params).unwrap(),
        },
        seed: 0,
        first_index: 0,
        prompts: prompts.map(|p| vec![vec![0; p]; 2]),
        prompt_texts: None,
        trace: false,
    }
}

#[test]
fn a_sampler_whose_blocks_are_not_the_models_is_refused() {
    let length = 12;
    let config =
        || serde_json::json!({"init": {"hidden": 16, "layers": 1, "heads": 2}, "block_size": 4});
    let mut model = open("mdm", config(), length).unwrap();
    // The model's blocks, given or by default: the reply records them.
    for params in [
        serde_json::json!({"block_length": 4}),
        serde_json::json!({}),
    ] {
        let (seqs, reply) = model
            .generate(&request("ddpm_cache", length, params, None))
            .unwrap();
        assert_eq!(seqs.len(), 2);
        let settings = reply.settings.unwrap();
        assert_eq!(settings["model"]["block_size"], 4);
        assert_eq!(settings["sampler"]["params"]["block_length"], 4);
    }
    let refused = |sampler: &str, params: serde_json::Value, prompts: Option<usize>| {
        let mut model = open("mdm", config(), length).unwrap();
        let e = model
            .generate(&request(sampler, length, params, prompts))
            .err()
            .unwrap();
        assert_eq!(e.kind, dlm_sdk::ErrorKind::BadConfig, "{e}");
        e.message
    };
    let e = refused("ddpm_cache", serde_json::json!({"block_length": 3}), None);
    assert!(
        e.contains("`block_length: 3`") && e.contains("`block_size: 4`"),
        "{e}"
    );
    assert!(e.contains("params: {block_length: 4}"), "{e}");
    // A sampler without blocks decodes the whole sequence as one.
    let e = refused("left_to_right", serde_json::json!({}), None);
    assert!(e.contains("takes `block_length`"), "{e}");
    // A prompt ending inside a block: the sampler's blocks start there.
    let e = refused(
        "ddpm_cache",
        serde_json::json!({"block_length": 4}),
        Some(2),
    );
    assert!(e.contains("prompt of 2 tokens"), "{e}");
    let at_boundary = request("ddpm_cache", length, serde_json::json!({}), Some(4));
    let aligned = align_request(4, &at_boundary).unwrap();
    assert_eq!(aligned.sampler.params["block_length"], 4);
    // One block over the whole sequence is the MDM: any sampler blocks, the request unchanged.
    let mdm_blocks = request(
        "ddpm_cache",
        length,
        serde_json::json!({"block_length": 3}),
        None,
    );
    assert_eq!(*align_request(12, &mdm_blocks).unwrap(), mdm_blocks);
    // Without a block size nothing is wrapped.
    let plain = serde_json::json!({"init": {"hidden": 16, "layers": 1, "heads": 2}});
    let mut plain = BlockAligned::wrap(open("mdm", plain, length).unwrap(), None);
    plain.generate(&mdm_blocks).unwrap();
}

#[test]
fn block_size_config_typos_and_bad_values_are_refused() {
    let info = &crate::plugin::NeuralPlugin::models()[0];
    assert!(info.config_keys.iter().any(|k| k.name == "block_size"));
    let init = |extra: serde_json::Value| {
        let mut c = serde_json::json!({"init": {"hidden": 16, "layers": 1, "heads": 2}});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let message = |name: &str, config: serde_json::Value| match open(name, config, 8) {
        Ok(_) => panic!("{name}: accepted"),
        Err(e) => e.message,
    };
    let e = message("mdm", init(serde_json::json!({"block_sise": 4})));
    assert!(e.contains("unknown") && e.contains("`block_sise`"), "{e}");
    let e = message("mdm", init(serde_json::json!({"blocksize": 4})));
    assert!(e.contains("`blocksize`"), "{e}");
    let e = message("ar", init(serde_json::json!({"block_size": 4})));
    assert!(e.contains("applies to the `mdm` model"), "{e}");
    for bad in [0, 9] {
        let e = message("mdm", init(serde_json::json!({"block_size": bad})));
        assert!(
            e.contains(&format!("`block_size: {bad}`")) && e.contains("length 8"),
            "{e}"
        );
    }
    let e = message("mdm", init(serde_json::json!({"block_size": "4"})));
    assert!(
        e.contains("block_size") || e.contains("invalid type"),
        "{e}"
    );
}

fn open_config(
    config: serde_json::Value,
    length: usize,
    train: Option<TrainSettings>,
    checkpoint: Option<TrainedCheckpoint>,
) -> ModelOpenConfig {
    ModelOpenConfig {
        config,
        task: TaskBinding {
            plugin: "test".into(),
            task: "chain".into(),
            config: serde_json::Value::Null,
            description: task(VOCAB, length),
        },
        train,
        checkpoint,
        base_dir: None,
    }
}

#[test]
fn a_checkpoint_keeps_its_block_size_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let length = 8;
    let with_block = |b: Option<usize>| {
        let mut c = serde_json::json!({"init": {"hidden": 16, "layers": 1, "heads": 2}});
        if let Some(b) = b {
            c["block_size"] = b.into();
        }
        if let Some(device) = crate::tests::device_name() {
            c["device"] = device.into();
        }
        c
    };
    let settings = TrainSettings {
        steps: 2,
        batch_size: 4,
        seed: 0,
        data: serde_json::Value::Null,
        options: serde_json::Value::Null,
    };
    let mut fingerprints = Vec::new();
    for block_size in [None, Some(2)] {
        let config = open_config(with_block(block_size), length, Some(settings.clone()), None);
        let mut trainer = crate::plugin::NeuralPlugin::open_model("mdm", config).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(30);
        for step in 0..2 {
            let batch = chain_batch(4, length, VOCAB, &mut rng);
            trainer.train_step(step, &batch, &[]).unwrap();
        }
        let path = dir.path().join(format!("{block_size:?}.ckpt"));
        let fingerprint = trainer.save(&path).unwrap().fingerprint;
        fingerprints.push(fingerprint.clone());
        let trained = TrainedCheckpoint {
            path: path.to_string_lossy().into_owned(),
            fingerprint,
        };
        // The header names the block size only when there is one (older files' fingerprints hold).
        let header = std::fs::read(&path).unwrap();
        let header = String::from_utf8_lossy(header.split(|&b| b == b'\n').nth(1).unwrap());
        assert_eq!(
            header.contains("block_size"),
            block_size.is_some(),
            "{header}"
        );
        let reopen = |b: Option<usize>| {
            crate::plugin::NeuralPlugin::open_model(
                "mdm",
                open_config(with_block(b), length, None, Some(trained.clone())),
            )
        };
        let mut model = reopen(block_size).unwrap();
        let params = match block_size {
            Some(b) => serde_json::json!({ "block_length": b }),
            None => serde_json::json!({}),
        };
        model
            .generate(&request("ddpm_cache", length, params, None))
            .unwrap();
        for other in [None, Some(2), Some(4)]
            .into_iter()
            .filter(|&o| o != block_size)
        {
            let e = reopen(other).err().unwrap().message;
            let named = |b: Option<usize>| match b {
                Some(b) => format!("block_size {b}"),
                None => "no block_size".to_string(),
            };
            assert!(
                e.contains(&format!("trained with {}", named(block_size)))
                    && e.contains(&format!("asks for {}", named(other))),
                "{e}"
            );
        }
    }
    assert_ne!(fingerprints[0], fingerprints[1]);
}

/// Block-causal attention makes the key/value cache exact where the sampler's blocks are the
/// model's: after committing tokens inside block `b`, a window from `b`'s start to the end
/// (prefix cache) or over `b` alone (dual cache) gives the full pass's logits, since no
/// position outside the window attends to it. The bidirectional MDM's cache is stale there.
#[test]
fn the_cache_is_exact_for_a_block_model() {
    use crate::kv_window::CachedMdm;
    use crate::plugin::MdmDenoiser;
    use dlm_sdk::kv_cache::TensorKvCache;
    let (batch, length, block_size) = (2, 12, 4);
    let mask = VOCAB as u32;
    // Block 0 decoded, block 1 half decoded, block 2 masked.
    let clean = random_tokens(batch * length, VOCAB, 0.0, 40);
    let mut before = vec![mask; batch * length];
    for row in 0..batch {
        for j in [0, 1, 2, 3, 4, 6] {
            before[row * length + j] = clean[row * length + j];
        }
    }
    // One step commits position 5 (and 7 in the second row).
    let mut after = before.clone();
    after[5] = clean[5];
    after[length + 5] = clean[length + 5];
    after[length + 7] = clean[length + 7];
    let worst_error = |block: Option<usize>, window: std::ops::Range<usize>| {
        let net = sharp_mdm(length, block);
        let full = real_logits(&net, &after, batch, length);
        let mut cached = CachedMdm::new(MdmDenoiser {
            net,
            device: test_device(),
            label: "test".into(),
        });
        cached.logits_and_fill(&before, batch, length, 1.0).unwrap();
        let windowed = to_host(
            cached
                .logits_window(&after, batch, length, window.clone(), 1.0)
                .unwrap(),
        );
        let scale = full.iter().fold(0f32, |m, v| m.max(v.abs()));
        let mut worst = 0f32;
        for row in 0..batch {
            for (i, j) in window.clone().enumerate() {
                for v in 0..VOCAB {
                    let a = windowed[(row * window.len() + i) * VOCAB + v];
                    let b = full[(row * length + j) * VOCAB + v];
                    worst = worst.max((a - b).abs() / scale);
                }
            }
        }
        worst
    };
    for window in [4..12, 4..8] {
        let exact = worst_error(Some(block_size), window.clone());
        assert!(exact < 1e-5, "block model, window {window:?}: {exact}");
        let stale = worst_error(None, window.clone());
        assert!(
            stale > 1e-3,
            "the MDM's cache is stale, window {window:?}: {stale}"
        );
    }
}
