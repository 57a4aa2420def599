//! The networks' logits match the PyTorch forward passes of the architectures' reference
//! modelling code (`tools/hf-fixtures/make_fixtures.py`) on the committed tiny checkpoints,
//! in f32 on `flex`: max |Δ| ≤ 1e-4 (the logits are of size ~4; the differences come from
//! f32 summation order and RoPE's sin/cos: 1.7e-6 measured for both architectures).

mod common;
use common::*;
use dlm_hf::{Architecture, Checkpoint};

/// Largest |ours − reference| the tests accept, in f32.
const TOLERANCE: f32 = 1e-4;

fn compare(name: &str, architecture: Architecture) {
    let reference = Reference::load(name);
    let ckpt = load(name);
    assert_eq!(ckpt.denoiser.net.config.architecture, architecture);
    let net = &ckpt.denoiser.net;
    let [batch, length, rows] = reference.shape;
    let ids = net
        .ids_tensor(&reference.flat_ids(), batch, length)
        .unwrap();
    let ours = to_host(net.forward(ids));
    assert_eq!(ours.len(), batch * length * rows);
    let diff = max_abs_diff(&ours, &reference.logits);
    let scale = reference.logits.iter().fold(0f32, |m, x| m.max(x.abs()));
    eprintln!("{name}: max |Δ logits| = {diff:.3e} (largest |logit| {scale:.2})");
    assert!(
        diff <= TOLERANCE,
        "{name}: logits differ from the reference by up to {diff}"
    );
    assert!(scale > 1.0, "the reference logits are not trivial");
    // On another device (DLM_HF_TEST_DEVICE: wgpu, tch), also against flex's logits, the
    // figure docs/user-guide.md quotes per backend.
    if device_name() != "flex" {
        let on_flex = Checkpoint::open(
            &fixture(name),
            &burn::tensor::Device::flex(),
            "flex",
            burn::tensor::DType::F32,
            None,
        )
        .unwrap();
        let net = &on_flex.denoiser.net;
        let ids = net
            .ids_tensor(&reference.flat_ids(), batch, length)
            .unwrap();
        let flex = to_host(net.forward(ids));
        let gap = max_abs_diff(&ours, &flex);
        eprintln!("{name}: max |{} − flex| = {gap:.3e}", device_name());
        assert!(gap <= TOLERANCE, "{name}: {gap} from flex's logits");
    }
}

#[test]
fn llada_logits_match_the_reference_implementation() {
    compare("llada-tiny", Architecture::Llada);
}

#[test]
fn dream_logits_match_the_reference_implementation() {
    compare("dream-tiny", Architecture::Dream);
}

/// The denoiser's view: the SDK's mask id mapped to the checkpoint's, Dream's logits shifted
/// right by one, the tokenizer's ids only, the mask token at probability 0 — each checked
/// against the reference logits transformed the same way on the host.
#[test]
fn denoiser_probabilities_are_the_reference_softmax_over_real_tokens() {
    for (name, shifted) in [("llada-tiny", false), ("dream-tiny", true)] {
        let reference = Reference::load(name);
        let ckpt = load(name);
        let d = &ckpt.denoiser;
        let vocab = d.vocab();
        assert_eq!(vocab, ckpt.tokenizer.vocab_size());
        assert_eq!(d.mask_token_id(), reference.mask_token_id);
        let [batch, length, rows] = reference.shape;
        assert!(
            vocab < rows,
            "the fixture pads its embedding past the tokenizer"
        );
        // SDK ids: the checkpoint's mask id becomes `vocab`.
        let sdk: Vec<u32> = reference
            .flat_ids()
            .iter()
            .map(|&t| {
                if t == reference.mask_token_id {
                    vocab as u32
                } else {
                    t
                }
            })
            .collect();
        let ours = d.probabilities(&sdk, batch, length).unwrap();
        assert_eq!(ours.len(), batch * length * vocab);
        let mut worst = 0f32;
        for b in 0..batch {
            for p in 0..length {
                let src = if shifted && p > 0 { p - 1 } else { p };
                let row = &reference.logits[(b * length + src) * rows..][..vocab];
                let mask = reference.mask_token_id as usize;
                let max = row
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != mask)
                    .fold(f32::MIN, |m, (_, &x)| m.max(x));
                let z: f64 = row
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != mask)
                    .map(|(_, &x)| ((x - max) as f64).exp())
                    .sum();
                let got = &ours[(b * length + p) * vocab..][..vocab];
                assert_eq!(got[mask], 0.0, "{name}: the mask token has probability 0");
                for (i, (&g, &x)) in got.iter().zip(row).enumerate() {
                    if i != mask {
                        let want = (((x - max) as f64).exp() / z) as f32;
                        worst = worst.max((g - want).abs());
                    }
                }
            }
        }
        eprintln!("{name}: max |Δ probability| = {worst:.3e}");
        assert!(worst <= 1e-5, "{name}: probabilities differ by {worst}");
    }
}

/// `dtype: bf16` and `f16` compute on flex too: the logits stay within the rounding of those
/// formats (8 and 11 significant bits) of the f32 reference, and the probabilities (softmax
/// in f32) sum to 1. (On flex only: lavapipe's Vulkan has no 16-bit floats.)
#[test]
fn half_precision_compute_stays_near_the_reference() {
    use burn::tensor::{DType, Device};
    for (dtype, tolerance) in [(DType::BF16, 0.15), (DType::F16, 0.02)] {
        for name in ["llada-tiny", "dream-tiny"] {
            let reference = Reference::load(name);
            let ckpt =
                dlm_hf::Checkpoint::open(&fixture(name), &Device::flex(), "cpu", dtype, None)
                    .unwrap();
            let diff = max_abs_diff(&reference_logits(&ckpt, &reference), &reference.logits);
            eprintln!("{name} computed in {dtype:?}: max |Δ logits| = {diff:.3e}");
            assert!(diff <= tolerance, "{name} {dtype:?}: {diff}");
            assert!(diff > 0.0, "{name} {dtype:?}: not computed in {dtype:?}");
            let [batch, length, _] = reference.shape;
            let vocab = ckpt.denoiser.vocab();
            let sdk: Vec<u32> = reference
                .flat_ids()
                .iter()
                .map(|&t| {
                    if t == reference.mask_token_id {
                        vocab as u32
                    } else {
                        t
                    }
                })
                .collect();
            let probs = ckpt.denoiser.probabilities(&sdk, batch, length).unwrap();
            for row in probs.chunks(vocab) {
                let sum: f32 = row.iter().sum();
                assert!(
                    (sum - 1.0).abs() < 1e-4,
                    "{name} {dtype:?}: a row sums to {sum}"
                );
            }
        }
    }
}
