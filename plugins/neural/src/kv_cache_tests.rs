//! The AR model's KV cache: cached against uncached generation, several positions at once, the
//! preallocated cache against the full forward, and the bf16 cache's rounding.

use crate::model::{to_host, tokens_tensor, ModelKind, Transformer};
use crate::plugin::ArGenerator;
use crate::tests::{ar_request, open, random_tokens, sharpen, test_device, tiny, VOCAB};
use dlm_sdk::sampler::device::OnHost;
use dlm_sdk::sampler::{generate_ar, Autoregressive};
use dlm_sdk::Model;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

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
    let mut cached = OnHost::new(ArGenerator::new(
        net.clone(),
        device.clone(),
        "cpu".into(),
        true,
    ));
    let mut uncached = OnHost::new(ArGenerator::new(net, device, "cpu".into(), false));

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
        Err(e) => e.message,
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
