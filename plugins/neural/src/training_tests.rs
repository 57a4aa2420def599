//! Training: the validation ELBO's noise, checkpoints saved, reloaded and refused, a tiny
//! training run, bad data, the learning-rate schedule, prompt-aware noising and the AR loss.

use crate::checkpoint::{Checkpoint, CheckpointHeader};
use crate::model::{to_host, tokens_tensor, ModelKind, NetConfig, Transformer};
use crate::tests::{
    chain_batch, random_tokens, task, test_device, tiny, trained_checkpoint, VOCAB,
};
use crate::train::{self, ar_loss, TrainConfig};
use burn::tensor::Device;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

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
