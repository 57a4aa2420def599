//! The MDM's key/value cache ([`crate::kv_window`]) against the full forward pass, the truth it
//! approximates: the fill is the full pass; a window with no change since the fill gives the
//! full pass's rows; after a change inside the window a one-layer network's window is still
//! exact (its keys outside the window depend on their own tokens only) and a two-layer one's is
//! not; left padding is hidden as in the full padded pass; misuse is an error, not a panic.

use crate::kv_window::CachedMdm;
use crate::model::{to_host, tokens_tensor, ModelKind, NetConfig, Transformer};
use crate::plugin::MdmDenoiser;
use crate::tests::{random_tokens, sharpen, test_device, tiny, VOCAB};
use burn::tensor::{Device, Tensor};
use dlm_sdk::kv_cache::TensorKvCache;
use std::ops::Range;

/// Largest `|a − b| / (1 + |a|)` over two equally long vectors.
fn worst_gap(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / (1.0 + x.abs()))
        .fold(0f32, f32::max)
}

/// Rows `window` of every sequence of `[batch, length, vocab]` logits, flattened.
fn window_rows(full: &[f32], batch: usize, length: usize, window: &Range<usize>) -> Vec<f32> {
    (0..batch)
        .flat_map(|b| {
            let row = &full[b * length * VOCAB..(b + 1) * length * VOCAB];
            row[window.start * VOCAB..window.end * VOCAB].to_vec()
        })
        .collect()
}

fn net(layers: usize, length: usize, seed: u64, device: &Device) -> Transformer {
    let config = NetConfig {
        layers,
        ..tiny(length)
    };
    sharpen(Transformer::new(
        ModelKind::Mdm,
        &config,
        VOCAB,
        seed,
        device,
    ))
}

fn cached(net: Transformer, device: &Device) -> CachedMdm {
    CachedMdm::new(MdmDenoiser {
        net,
        device: device.clone(),
        label: "test".into(),
    })
}

fn host(t: Tensor<3>) -> Vec<f32> {
    to_host(t)
}

/// f32 rounding of a window whose attention runs over fewer query rows than the full pass (0
/// on flex, where every comparison below is bit-identical).
const TOLERANCE: f32 = 1e-5;

#[test]
fn the_fill_and_a_whole_canvas_window_are_the_full_forward_pass() {
    let device = test_device();
    let (batch, length) = (3, 12);
    let mut mdm = cached(net(2, length, 31, &device), &device);
    let tokens = random_tokens(batch * length, VOCAB, 0.5, 32);
    let full = host(
        mdm.mdm
            .net
            .forward_real(tokens_tensor(&tokens, batch, length, &device)),
    );
    let filled = host(mdm.logits_and_fill(&tokens, batch, length, 0.5).unwrap());
    // The same operations; bit-identical on flex, within rounding on a backend that may fuse
    // them differently.
    let gap = worst_gap(&full, &filled);
    eprintln!("fill vs full forward: worst gap {gap:.1e}");
    assert!(gap <= TOLERANCE, "fill: worst gap {gap}");
    let whole = host(
        mdm.logits_window(&tokens, batch, length, 0..length, 0.5)
            .unwrap(),
    );
    let gap = worst_gap(&full, &whole);
    eprintln!("window 0..{length} after a fill vs full forward: worst gap {gap:.1e}");
    assert!(gap <= TOLERANCE, "worst gap {gap}");
}

#[test]
fn windows_with_no_change_since_the_fill_give_the_full_forward_rows() {
    let device = test_device();
    let (batch, length) = (2, 16);
    let mut mdm = cached(net(3, length, 33, &device), &device);
    let tokens = random_tokens(batch * length, VOCAB, 0.5, 34);
    let full = host(mdm.logits_and_fill(&tokens, batch, length, 0.5).unwrap());
    // Dual-cache blocks, a prefix-cache suffix, one position, and a block again after the
    // others wrote their keys back.
    for window in [4..8, 12..16, 8..16, 0..1, 15..16, 4..8] {
        let got = host(
            mdm.logits_window(&tokens, batch, length, window.clone(), 0.5)
                .unwrap(),
        );
        let want = window_rows(&full, batch, length, &window);
        let gap = worst_gap(&want, &got);
        assert!(gap <= TOLERANCE, "window {window:?}: worst gap {gap}");
    }
}

/// Unmask some positions inside `window` of every row (the sampler's commits) and return the
/// new canvas.
fn commit_inside(tokens: &[u32], length: usize, window: &Range<usize>, seed: u64) -> Vec<u32> {
    let drawn = random_tokens(tokens.len(), VOCAB, 0.0, seed);
    let mut next = tokens.to_vec();
    for (i, t) in next.iter_mut().enumerate() {
        if window.contains(&(i % length)) && (*t as usize == VOCAB || i % 3 == 0) {
            *t = drawn[i];
        }
    }
    assert_ne!(next, tokens);
    next
}

#[test]
fn after_changes_inside_the_window_only_a_one_layer_window_stays_exact() {
    let device = test_device();
    let (batch, length) = (3, 16);
    let window = 4..10;
    let tokens = random_tokens(batch * length, VOCAB, 0.6, 36);
    let step1 = commit_inside(&tokens, length, &window, 37);
    let step2 = commit_inside(&step1, length, &window, 38);
    for layers in [1, 2] {
        let mut mdm = cached(net(layers, length, 35, &device), &device);
        mdm.logits_and_fill(&tokens, batch, length, 0.5).unwrap();
        let mut worst = 0f32;
        for canvas in [&step1, &step2] {
            let got = host(
                mdm.logits_window(canvas, batch, length, window.clone(), 0.5)
                    .unwrap(),
            );
            let full = host(
                mdm.mdm
                    .net
                    .forward_real(tokens_tensor(canvas, batch, length, &device)),
            );
            worst = worst.max(worst_gap(&window_rows(&full, batch, length, &window), &got));
        }
        eprintln!("{layers} layer(s): stale-cache window vs full forward, worst gap {worst:.1e}");
        if layers == 1 {
            assert!(worst <= TOLERANCE, "one layer: worst gap {worst}");
        } else {
            // The second block's keys outside the window saw the old window.
            assert!(
                worst > 1e-3,
                "two layers: the stale cache changed nothing ({worst})"
            );
        }
    }
}

#[test]
fn left_padding_is_hidden_in_the_fill_and_the_window() {
    use crate::text::Padded;
    use dlm_sdk::sampler::device::TensorDenoiser;
    let device = test_device();
    let (batch, length) = (3, 12);
    let padding = [0, 3, 5];
    let net = net(2, length, 39, &device);
    let unpadded = random_tokens(batch * length, VOCAB, 0.5, 40);
    // Row b is row b of `unpadded` shifted right by its padding (a real token as filler).
    let mut tokens = vec![0u32; batch * length];
    for (b, &pad) in padding.iter().enumerate() {
        let row = &unpadded[b * length..(b + 1) * length - pad];
        tokens[b * length + pad..(b + 1) * length].copy_from_slice(row);
    }
    let padded_full =
        host(net.forward_real_padded(tokens_tensor(&tokens, batch, length, &device), &padding));
    let mut model = Padded::new(cached(net.clone(), &device));
    model.set_left_padding(&padding).unwrap();
    let cache = model.kv_cache().expect("the mdm has a cache");
    let filled = host(cache.logits_and_fill(&tokens, batch, length, 0.5).unwrap());
    let gap = worst_gap(&padded_full, &filled);
    assert!(gap <= TOLERANCE, "padded fill: worst gap {gap}");
    let window = 6..12;
    let got = host(
        cache
            .logits_window(&tokens, batch, length, window.clone(), 0.5)
            .unwrap(),
    );
    let gap = worst_gap(&window_rows(&padded_full, batch, length, &window), &got);
    assert!(gap <= TOLERANCE, "padded window: worst gap {gap}");
    // Each row's window is that row alone, unpadded, at its own positions.
    for (b, &pad) in padding.iter().enumerate() {
        let alone = host(net.forward_real(tokens_tensor(
            &unpadded[b * length..(b + 1) * length - pad],
            1,
            length - pad,
            &device,
        )));
        let rows = window.start - pad..window.end - pad;
        let want = window_rows(&alone, 1, length - pad, &rows);
        let mine = &got[b * window.len() * VOCAB..(b + 1) * window.len() * VOCAB];
        let gap = worst_gap(&want, mine);
        assert!(gap <= 1e-4, "row {b} (padding {pad}): worst gap {gap}");
    }
    // A window under other padding than the fill's is refused.
    model.set_left_padding(&[]).unwrap();
    let cache = model.kv_cache().unwrap();
    let err = cache
        .logits_window(&tokens, batch, length, window, 0.5)
        .unwrap_err();
    assert!(err.message.contains("fill again"), "{err:?}");
}

#[test]
fn misuse_of_the_cache_is_an_error() {
    let device = test_device();
    let (batch, length) = (2, 8);
    let mut mdm = cached(net(1, length, 41, &device), &device);
    let tokens = random_tokens(batch * length, VOCAB, 0.5, 42);
    let err = mdm
        .logits_window(&tokens, batch, length, 0..4, 0.5)
        .unwrap_err();
    assert!(err.message.contains("before any fill"), "{err:?}");
    mdm.logits_and_fill(&tokens, batch, length, 0.5).unwrap();
    for bad in [3..3, 4..9] {
        let err = mdm
            .logits_window(&tokens, batch, length, bad.clone(), 0.5)
            .unwrap_err();
        assert!(err.message.contains("outside 0..8"), "{bad:?}: {err:?}");
    }
    let err = mdm
        .logits_window(&tokens[..length], 1, length, 0..4, 0.5)
        .unwrap_err();
    assert!(err.message.contains("fill again"), "{err:?}");
    let mut bad_ids = tokens.clone();
    bad_ids[3] = VOCAB as u32 + 1;
    assert!(mdm
        .logits_window(&bad_ids, batch, length, 0..4, 0.5)
        .is_err());
    // The AR network's causal attention is not what the window computes.
    let ar = Transformer::new(ModelKind::Ar, &tiny(length), VOCAB, 41, &device);
    let err = cached(ar, &device)
        .logits_and_fill(&tokens, batch, length, 0.5)
        .unwrap_err();
    assert!(err.message.contains("causal"), "{err:?}");
}

/// For a block-causal network (block diffusion) whose blocks are the sampler's, both caches are
/// exact at any depth: the positions before the block never attend to it, and the dual cache's
/// stale positions after it are hidden from the block's queries.
#[test]
fn block_causal_windows_are_exact_after_changes_at_any_depth() {
    let device = test_device();
    let (batch, length, block_size) = (2, 16, 4);
    let net = net(3, length, 43, &device).with_block_size(Some(block_size));
    let mut mdm = cached(net, &device);
    let tokens = random_tokens(batch * length, VOCAB, 0.7, 44);
    let block = 4..8;
    let cases = [("dual", block.clone()), ("prefix", block.start..length)];
    for (name, window) in cases {
        mdm.logits_and_fill(&tokens, batch, length, 0.5).unwrap();
        let mut canvas = tokens.clone();
        for seed in [45, 46] {
            canvas = commit_inside(&canvas, length, &window, seed);
            let got = host(
                mdm.logits_window(&canvas, batch, length, window.clone(), 0.5)
                    .unwrap(),
            );
            let full = host(
                mdm.mdm
                    .net
                    .forward_real(tokens_tensor(&canvas, batch, length, &device)),
            );
            let gap = worst_gap(&window_rows(&full, batch, length, &window), &got);
            eprintln!("block-causal {name} window {window:?}: worst gap {gap:.1e}");
            assert!(
                gap <= TOLERANCE,
                "{name} window {window:?}: worst gap {gap}"
            );
        }
    }
}

/// `request` with sampler `name`, `steps` and `params`.
fn with_sampler(
    mut request: dlm_sdk::GenerateRequest,
    name: &str,
    steps: usize,
    params: serde_json::Value,
) -> dlm_sdk::GenerateRequest {
    request.sampler.name = name.into();
    request.sampler.steps = steps;
    request.sampler.params = params.as_object().unwrap().clone().into_iter().collect();
    request
}

/// Through the `mdm` model as the plugin builds it (`TensorDenoiserModel` over
/// `Padded<CachedMdm>`): a cache filled at every step (`refresh: 1`) samples exactly what no
/// cache samples, and the prefix and dual caches run, with fewer positions computed.
#[test]
fn a_cache_refreshed_every_step_samples_exactly_what_no_cache_samples() {
    use crate::tests::ar_request;
    use crate::text::Padded;
    use dlm_sdk::sampler::device::TensorDenoiserModel;
    use dlm_sdk::Model;
    use serde_json::json;
    let device = test_device();
    let (batch, length) = (6, 16);
    // Sharper than at initialisation, so that the confidence rules rank real differences (the
    // fully sharpened test network draws one token everywhere under `threshold`).
    let mut net = Transformer::new(ModelKind::Mdm, &tiny(length), VOCAB, 47, &device);
    net.head.weight = net.head.weight.map(|t| t.mul_scalar(8.0));
    let mut model = TensorDenoiserModel {
        denoiser: Padded::new(cached(net, &device)),
    };
    let cases = [
        ("low_confidence", length, json!({"block_length": 4})),
        ("threshold", 16, json!({"block_length": 8, "tau": 0.7})),
    ];
    for (name, steps, params) in cases {
        let run = |model: &mut TensorDenoiserModel<_>, cache: serde_json::Value| {
            let mut params = params.clone();
            params
                .as_object_mut()
                .unwrap()
                .extend(cache.as_object().unwrap().clone());
            let request = with_sampler(ar_request(batch, length, 48), name, steps, params);
            model.generate(&request).unwrap()
        };
        let (plain, plain_reply) = run(&mut model, json!({}));
        let distinct: std::collections::BTreeSet<u32> = plain.iter().flatten().copied().collect();
        assert!(distinct.len() > 1, "{name}: a degenerate sample {plain:?}");
        for mode in ["prefix", "dual"] {
            let (every_step, reply) = run(&mut model, json!({"cache": mode, "refresh": 1}));
            assert_eq!(every_step, plain, "{name}, cache: {mode}, refresh: 1");
            assert_eq!(reply.batch_positions, plain_reply.batch_positions);
            let (cached, reply) = run(&mut model, json!({"cache": mode}));
            assert_eq!(cached.len(), batch);
            let (fewer, all) = (reply.batch_positions, plain_reply.batch_positions);
            eprintln!("{name}, cache: {mode}: {fewer:?} positions computed, uncached {all:?}");
            assert!(
                fewer.unwrap() < all.unwrap(),
                "{name}, cache: {mode}: {fewer:?} positions vs {all:?} uncached"
            );
            if name == "low_confidence" {
                // Blocks of 4, one step per token: per block a fill of the whole canvas, then
                // three windows of the block (dual) or from the block to the end (prefix).
                let per_row: usize = (0..length / 4)
                    .map(|k| match mode {
                        "dual" => length + 3 * 4,
                        _ => length + 3 * (length - 4 * k),
                    })
                    .sum();
                assert_eq!(fewer, Some((batch * per_row) as u64), "cache: {mode}");
            }
        }
    }
}

/// A left-padded batch (prompts of different lengths padded to one, as a text model with
/// `generation_length` runs them) under `cache: dual`: `refresh: 1` samples exactly what no
/// cache samples, and each row's cached sample is that of the row generated alone, unpadded.
#[test]
fn left_padded_batches_run_with_the_cache_as_rows_alone() {
    use crate::tests::ar_request;
    use crate::text::Padded;
    use dlm_sdk::sampler::device::TensorDenoiserModel;
    use dlm_sdk::Model;
    use serde_json::json;
    let device = test_device();
    let (length, prompt_len) = (16, 6);
    let padding = [0, 2, 3];
    let prompts: Vec<Vec<u32>> = (0..padding.len() as u64)
        .map(|b| random_tokens(prompt_len, VOCAB, 0.0, 50 + b))
        .collect();
    let mut net = Transformer::new(ModelKind::Mdm, &tiny(length), VOCAB, 49, &device);
    net.head.weight = net.head.weight.map(|t| t.mul_scalar(8.0));
    let mut model = TensorDenoiserModel {
        denoiser: Padded::new(cached(net, &device)),
    };
    let request = |batch: usize, length: usize, cache: serde_json::Value| {
        let mut params = json!({"block_length": 5});
        params
            .as_object_mut()
            .unwrap()
            .extend(cache.as_object().unwrap().clone());
        with_sampler(ar_request(batch, length, 51), "low_confidence", 10, params)
    };
    let mut batched = request(padding.len(), length, json!({}));
    batched.prompts = Some(prompts.clone());
    let (plain, _) = model.generate_left_padded(&batched, &padding).unwrap();
    for cache in [
        json!({"cache": "dual", "refresh": 1}),
        json!({"cache": "dual"}),
    ] {
        let mut batched = request(padding.len(), length, cache.clone());
        batched.prompts = Some(prompts.clone());
        let (rows, _) = model.generate_left_padded(&batched, &padding).unwrap();
        if cache.get("refresh").is_some() {
            assert_eq!(rows, plain, "refresh: 1 under left padding");
        }
        for (b, &pad) in padding.iter().enumerate() {
            let mut alone = request(1, length - pad, cache.clone());
            alone.prompts = Some(vec![prompts[b][pad..].to_vec()]);
            alone.first_index = b as u64;
            let (row, _) = model.generate(&alone).unwrap();
            assert_eq!(row[0], rows[b][pad..], "row {b} (padding {pad}), {cache}");
        }
    }
}

/// The host path (f64 copies of the cached logits, `OnHost`) and the device path sample the
/// same tokens under `cache: prefix` and `dual`, up to f32 draws at category boundaries (as for
/// the uncached paths in `plugin_tests`: at least 99.9% of positions).
#[test]
fn host_and_device_paths_agree_with_the_cache() {
    use crate::tests::ar_request;
    use dlm_sdk::sampler::device::{self, OnHost};
    use serde_json::json;
    let device = test_device();
    let (batch, length) = (16, 16);
    let mut net = Transformer::new(ModelKind::Mdm, &tiny(length), VOCAB, 52, &device);
    net.head.weight = net.head.weight.map(|t| t.mul_scalar(8.0));
    let mut on_host = OnHost::new(cached(net.clone(), &device));
    let mut on_device = cached(net, &device);
    let (mut same, mut total) = (0, 0);
    for mode in ["prefix", "dual"] {
        let params = json!({"block_length": 4, "cache": mode});
        let request = with_sampler(ar_request(batch, length, 53), "low_confidence", 16, params);
        let (host, host_reply) = dlm_sdk::sampler::generate(&mut on_host, &request).unwrap();
        let (dev, dev_reply) = device::generate(&mut on_device, &request).unwrap();
        assert_eq!(host_reply.batch_positions, dev_reply.batch_positions);
        same += host
            .iter()
            .flatten()
            .zip(dev.iter().flatten())
            .filter(|(a, b)| a == b)
            .count();
        total += batch * length;
    }
    eprintln!("cached host vs device paths: {same} of {total} positions agree");
    assert!(same * 1000 >= total * 999, "{same} of {total} agree");
}

/// The plugin's `mdm` answers `cache: dual` with its cache (a model without one is refused).
#[test]
fn the_plugins_mdm_model_has_the_cache() {
    use crate::tests::{ar_request, open};
    use serde_json::json;
    let length = 12;
    let config = json!({"init": {"hidden": 16, "layers": 2, "heads": 2}, "seed": 3});
    let mut model = open("mdm", config, length).unwrap();
    let params = json!({"block_length": 4, "cache": "dual"});
    let request = with_sampler(ar_request(2, length, 54), "low_confidence", 12, params);
    let (tokens, reply) = model.generate(&request).unwrap();
    assert_eq!(tokens.len(), 2);
    // Per row and block: a fill of 12 positions and three windows of 4.
    assert_eq!(reply.batch_positions, Some(2 * 3 * (12 + 3 * 4)));
}
