//! The plugin: opening and generating with both models, bad configs refused, and the devices
//! (logits on each backend against flex, device names, the device and host sampling paths).

use crate::model::{to_host, tokens_tensor, ModelKind, Transformer};
use crate::plugin::{ArGenerator, MdmDenoiser, NeuralPlugin};
use crate::tests::{ar_request, open, sharpen, test_device, tiny, trained_checkpoint, VOCAB};
use dlm_sdk::sampler::device::OnHost;
use dlm_sdk::sampler::generate_ar;
use dlm_sdk::{GenerateRequest, Model, Plugin, SamplerSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

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
        trace: false,
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
        Err(e) => e.message,
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
    use crate::tests::device_name;
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
    assert!(err.message.contains("CUDA device"), "{err:?}");
    for bad in ["tch:gpu", "tch:cuda:x", "tch:cuda0"] {
        let err = parse_device(Some(bad)).unwrap_err();
        assert!(err.message.contains("tch:cuda:N"), "{bad}: {err:?}");
    }
}

/// A trained checkpoint's logits on `device` and on `flex` agree to 1e-4 relative to `1 + |flex|`.
#[cfg(any(feature = "wgpu", feature = "tch"))]
fn logits_match_flex(device: &str) {
    use crate::checkpoint::Checkpoint;
    use crate::tests::random_tokens;
    use burn::tensor::Device;
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
    let ar = ArGenerator::new(
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
    let mut ar = OnHost::new(ar);
    let (host, _) = generate_ar(&mut ar, &request).unwrap();
    let (dev, _) = device::generate_ar(&mut ar.0, &request).unwrap();
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
