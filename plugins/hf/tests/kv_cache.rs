//! The key/value cache of the diffusion checkpoints (`TensorKvCache`: fill, then windows),
//! checked four ways:
//!
//! * against the uncached forward pass where they must agree: a fill returns the plain logits;
//!   a window over a canvas unchanged since the fill gives the plain logits at its positions
//!   (any window, LLaDA and Dream, with and without left padding), to 1e-5 on flex — the same
//!   arithmetic in another grouping (the keys are spliced, not recomputed); and decoding with
//!   `refresh: 1` (a fill at every step) gives the samples and NFE of decoding without a cache;
//! * against Fast-dLLM's cached forward pass (`cached_windows.json` beside llada-tiny and
//!   dream-tiny, tools/hf-fixtures/make_cached_generations.py): a canvas changed inside the
//!   window after the fill, so the keys and values outside are stale, for the prefix and the
//!   dual cache, to 1e-4 as tests/reference.rs;
//! * Fast-dLLM's `generate_with_prefix_cache` / `generate_with_dual_cache` replayed through the
//!   SDK's samplers with `cache: prefix | dual`: every network call (fill or window, its
//!   positions, the tokens) and the output, token for token;
//! * the same generations as text through the plugin's `checkpoint` model (what `dlm-bench
//!   run` opens), each prompt alone and both in one left-padded batch.

mod common;
use burn::tensor::Tensor;
use common::*;
use dlm_hf::CheckpointDenoiser;
use dlm_hf::HfPlugin;
use dlm_sdk::sampler::device::{generate, TensorDenoiser};
use dlm_sdk::{
    GenerateRequest, Model, ModelOpenConfig, Plugin, Prompt, SamplerSpec, TaskBinding,
    TaskDescription, TextTaskInfo,
};
use serde::Deserialize;
use serde_json::{json, Value};
use std::ops::Range;

/// How far the spliced window may stray from the plain pass on an unchanged canvas: f32
/// rounding of the same sums in another grouping (1.9e-6 seen on flex); a GPU's kernels tile
/// their reductions by shape, so there the PyTorch tolerance applies.
fn same_canvas() -> f32 {
    if device_name() == "flex" {
        1e-5
    } else {
        AGAINST_PYTORCH
    }
}
/// As tests/reference.rs: our pass against PyTorch's.
const AGAINST_PYTORCH: f32 = 1e-4;

/// A 2 × 24 canvas (SDK ids, masks = `mask`) with different tokens in each row.
fn canvas(mask: u32) -> Vec<u32> {
    (0..48u32)
        .map(|i| {
            if i % 24 >= 12 && i % 3 != 0 {
                mask
            } else {
                (i * 37 + 5) % 470
            }
        })
        .collect()
}

fn host(t: Tensor<3>) -> (Vec<f32>, [usize; 3]) {
    let dims = t.dims();
    (to_host(t), dims)
}

/// Rows `window` of every sequence of `logits` (`[batch, length, vocab]`, row-major).
fn rows(logits: &[f32], [batch, length, vocab]: [usize; 3], window: &Range<usize>) -> Vec<f32> {
    (0..batch)
        .flat_map(|b| {
            &logits[(b * length + window.start) * vocab..(b * length + window.end) * vocab]
        })
        .copied()
        .collect()
}

#[test]
fn windows_over_an_unchanged_canvas_give_the_plain_logits() {
    let (batch, length) = (2, 24);
    let windows = [0..24, 0..8, 12..24, 12..20, 5..6, 23..24];
    let mut worst = 0f32;
    for name in ["llada-tiny", "dream-tiny"] {
        for padding in [vec![], vec![0, 3]] {
            let mut den = load(name).denoiser;
            den.set_left_padding(&padding).unwrap();
            let tokens = canvas(den.vocab() as u32);
            let (plain, dims) = host(den.logits(&tokens, batch, length).unwrap());
            let (filled, _) = host(den.logits_and_fill(&tokens, batch, length).unwrap());
            let diff = max_abs_diff(&filled, &plain);
            assert!(
                diff <= same_canvas(),
                "{name} {padding:?}: fill vs plain {diff}"
            );
            for window in &windows {
                let got = den.logits_window(&tokens, batch, length, window.clone());
                let (got, got_dims) = host(got.unwrap());
                assert_eq!(
                    got_dims,
                    [batch, window.len(), dims[2]],
                    "{name} {window:?}"
                );
                let diff = max_abs_diff(&got, &rows(&plain, dims, window));
                worst = worst.max(diff);
                assert!(
                    diff <= same_canvas(),
                    "{name} padding {padding:?} window {window:?}: max |Δ| {diff}"
                );
            }
        }
    }
    println!("windows over unchanged canvases: max |Δ| vs the plain pass {worst:.2e}");
}

#[derive(Deserialize)]
struct Cached {
    mask_token_id: u32,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct WindowLogits {
    fill: Vec<u32>,
    window: Vec<u32>,
    cases: Vec<WindowCase>,
}

#[derive(Deserialize)]
struct WindowCase {
    cache: String,
    window: [usize; 2],
    shape: [usize; 3],
    logits: Vec<f32>,
}

#[derive(Deserialize)]
struct Case {
    settings: Settings,
    prompt_text: String,
    completion: String,
    prompt: Vec<u32>,
    calls: Vec<Call>,
    #[serde(rename = "final")]
    output: Vec<u32>,
    nfe: usize,
    min_gap: f64,
}

#[derive(Deserialize)]
struct Settings {
    cache: String,
    steps: usize,
    block_length: usize,
    threshold: Option<f64>,
}

fn fast_dllm() -> Cached {
    let path = fixture("llada-tiny").join("cached_generations.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// SDK ids of checkpoint ids: the mask token becomes the SDK's mask id.
fn sdk_ids(den: &CheckpointDenoiser, ids: &[u32]) -> Vec<u32> {
    let mask = den.sampler_vocab() as u32;
    ids.iter()
        .map(|&t| if t == den.mask_token_id() { mask } else { t })
        .collect()
}

/// The checkpoint with the full output row, as Fast-dLLM reads it.
fn full_row(name: &str) -> CheckpointDenoiser {
    load(name).denoiser.with_full_row(true)
}

/// Dream's window logits at the window's first position: Fast-dLLM's Dream shifts inside the
/// window (its first position gets its own output, a value its loop never reads), ours reads
/// the output one position before (module documentation of dlm_hf::denoiser); the other
/// positions must agree. Fast-dLLM's LLaDA has no shift: every position is compared.
fn first_compared(name: &str) -> usize {
    usize::from(name == "dream-tiny")
}

#[test]
fn stale_windows_match_fast_dllm_cached_forward() {
    for name in ["llada-tiny", "dream-tiny"] {
        let path = fixture(name).join("cached_windows.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let cases: WindowLogits = serde_json::from_str(&text).unwrap();
        let length = cases.fill.len();
        for case in &cases.cases {
            let mut den = full_row(name);
            let fill = sdk_ids(&den, &cases.fill);
            let changed = sdk_ids(&den, &cases.window);
            den.logits_and_fill(&fill, 1, length).unwrap();
            let window = case.window[0]..case.window[1];
            let got = den.logits_window(&changed, 1, length, window.clone());
            let (got, dims) = host(got.unwrap());
            assert_eq!(dims, case.shape, "{name} {}", case.cache);
            let skip = first_compared(name) * dims[2];
            let diff = max_abs_diff(&got[skip..], &case.logits[skip..]);
            println!(
                "{name} {} cache, window {window:?}: max |Δ| vs Fast-dLLM {diff:.2e}",
                case.cache
            );
            assert!(
                diff <= AGAINST_PYTORCH,
                "{name} {}: max |Δ| {diff}",
                case.cache
            );
            // The keys outside the window are really the stale ones: the fresh pass differs.
            let (fresh, fresh_dims) = host(den.logits(&changed, 1, length).unwrap());
            let fresh_diff = max_abs_diff(&got, &rows(&fresh, fresh_dims, &window));
            assert!(
                fresh_diff > 100.0 * AGAINST_PYTORCH,
                "{name} {}: the window equals the fresh pass ({fresh_diff}): is the cache used?",
                case.cache
            );
        }
    }
}

#[test]
fn a_window_needs_a_matching_fill() {
    let mut den = full_row("llada-tiny");
    let tokens = canvas(den.sampler_vocab() as u32);
    let err = den.logits_window(&tokens, 2, 24, 0..8).unwrap_err();
    assert!(err.to_string().contains("before any fill"), "{err}");
    den.logits_and_fill(&tokens, 2, 24).unwrap();
    let err = den.logits_window(&tokens[..24], 1, 24, 0..8).unwrap_err();
    assert!(
        err.to_string().contains("fill it for this canvas first"),
        "{err}"
    );
    for window in [8..8, 20..25] {
        let err = den.logits_window(&tokens, 2, 24, window).unwrap_err();
        assert!(err.to_string().contains("outside the canvas"), "{err}");
    }
    den.set_left_padding(&[0, 2]).unwrap();
    let err = den.logits_window(&tokens, 2, 24, 0..8).unwrap_err();
    assert!(err.to_string().contains("fill it again"), "{err}");
}

/// Whether a reference window call could commit nothing: its block (the window's first
/// `block_length` positions; the whole window for the dual cache) holds no mask. Fast-dLLM's
/// loop tests for a finished block only after a window step, so when the fill step finishes
/// the block (threshold mode) it still makes one window call, which changes nothing; the SDK's
/// samplers stop at the finished block. Those calls are left out of the comparison (and of the
/// NFE), counted and reported.
fn idle(call: &Call, block_length: usize, mask: u32) -> bool {
    call.kind == "window" && !call.tokens.iter().take(block_length).any(|&t| t == mask)
}

/// The SDK sampler of a Fast-dLLM case: `low_confidence` for the fixed quota (LLaDA's
/// `generate` with its cache), `threshold` for the confidence threshold; `cache` as the case's.
fn sampler_for(s: &Settings) -> (String, Value) {
    let mut params = json!({"block_length": s.block_length, "cache": s.cache, "temperature": 0.0});
    match s.threshold {
        None => ("low_confidence".into(), params),
        Some(tau) => {
            params["tau"] = json!(tau);
            ("threshold".into(), params)
        }
    }
}

#[test]
fn fast_dllm_cached_generations_are_reproduced_call_by_call() {
    let reference = fast_dllm();
    let (mut reproduced, mut wasted) = (0, 0);
    for (i, case) in reference.cases.iter().enumerate() {
        let (sampler, params) = sampler_for(&case.settings);
        let label = format!(
            "case {i} ({sampler} {params}, steps {})",
            case.settings.steps
        );
        // Fast-dLLM decides in f64 from f32 logits: a step that came this close to a tie is
        // not comparable across implementations (none of the committed cases does).
        assert!(
            case.min_gap > 1e-6,
            "{label}: too close to a tie to compare"
        );
        let inner = full_row("llada-tiny");
        assert_eq!(inner.mask_token_id(), reference.mask_token_id);
        let mut net = Recording {
            inner,
            calls: Vec::new(),
            plain_calls: 0,
        };
        let request = GenerateRequest {
            batch_size: 1,
            length: case.output.len(),
            sampler: SamplerSpec {
                name: sampler,
                steps: case.settings.steps,
                schedule: None,
                params: serde_json::from_value(params).unwrap(),
            },
            seed: 7,
            first_index: 0,
            prompts: Some(vec![case.prompt.clone()]),
            prompt_texts: None,
            trace: false,
        };
        let (seqs, reply) = generate(&mut net, &request).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(
            net.plain_calls, 0,
            "{label}: a plain forward pass in a cached run"
        );
        let mask = reference.mask_token_id;
        let block = case.settings.block_length;
        let want: Vec<&Call> = case
            .calls
            .iter()
            .filter(|c| !idle(c, block, mask))
            .collect();
        wasted += case.calls.len() - want.len();
        for (step, (got, want)) in net.calls.iter().zip(&want).enumerate() {
            assert_eq!(got, *want, "{label}: network call {step} differs");
        }
        assert_eq!(net.calls.len(), want.len(), "{label}: number of calls");
        assert_eq!(case.nfe, case.calls.len(), "{label}: the reference's NFE");
        assert_eq!(reply.batch_nfe as usize, want.len(), "{label}: NFE");
        let ours = net.inner.checkpoint_ids(&seqs[0]).unwrap();
        assert_eq!(ours, case.output, "{label}: the output differs");
        reproduced += 1;
    }
    println!(
        "Fast-dLLM cached generations reproduced: {reproduced}; its idle window calls: {wasted}"
    );
    assert!(reproduced > 0 && reproduced == reference.cases.len());
}

/// One generation on the device path: the samples and the NFE.
fn run(
    den: &mut impl TensorDenoiser,
    sampler: &str,
    params: Value,
    prompts: &[Vec<u32>],
) -> (Vec<Vec<u32>>, u64) {
    let request = GenerateRequest {
        batch_size: prompts.len(),
        length: prompts[0].len() + 16,
        sampler: SamplerSpec {
            name: sampler.into(),
            steps: 8,
            schedule: None,
            params: serde_json::from_value(params).unwrap(),
        },
        seed: 11,
        first_index: 0,
        prompts: Some(prompts.to_vec()),
        prompt_texts: None,
        trace: false,
    };
    let (seqs, reply) = generate(den, &request).unwrap_or_else(|e| panic!("{sampler}: {e}"));
    (seqs, reply.batch_nfe)
}

#[test]
fn refreshing_at_every_step_is_decoding_without_a_cache() {
    for name in ["llada-tiny", "dream-tiny"] {
        let mut den = load(name).denoiser;
        // Two prompts of one length (one window serves the batch), different tokens.
        let prompts = vec![vec![45, 290, 285, 72, 64, 381], vec![12, 7, 300, 41, 9, 77]];
        for (sampler, extra) in [
            ("low_confidence", json!({})),
            ("threshold", json!({"tau": 0.02})),
        ] {
            for mode in ["prefix", "dual"] {
                let mut plain = json!({"block_length": 8, "temperature": 0.0});
                plain
                    .as_object_mut()
                    .unwrap()
                    .extend(extra.as_object().unwrap().clone());
                let mut cached = plain.clone();
                cached["cache"] = json!(mode);
                cached["refresh"] = json!(1);
                let (want, want_nfe) = run(&mut den, sampler, plain, &prompts);
                let mut recording = Recording {
                    inner: den,
                    calls: Vec::new(),
                    plain_calls: 0,
                };
                let (got, got_nfe) = run(&mut recording, sampler, cached, &prompts);
                den = recording.inner;
                let label = format!("{name} {sampler} cache {mode}, refresh 1");
                assert_eq!(got, want, "{label}");
                assert_eq!(got_nfe, want_nfe, "{label}: NFE");
                // Every step went through the cache, as a fill.
                assert_eq!(recording.plain_calls, 0, "{label}");
                assert_eq!(recording.calls.len() as u64, got_nfe, "{label}");
                assert!(recording.calls.iter().all(|c| c.kind == "fill"), "{label}");
            }
        }
    }
}

/// The plugin's `checkpoint` model (full output row, its default) answering a text task whose
/// completions are 16 tokens, as `dlm-bench run` opens it.
fn text_model() -> Box<dyn Model> {
    let mut task = TaskDescription::new("prompts", 0, 2);
    task.details = json!({});
    task.text = Some(TextTaskInfo::new(Vec::new()));
    let open = ModelOpenConfig {
        config: json!({
            "path": fixture("llada-tiny"),
            "device": device_name(),
            "generation_length": 16,
        }),
        task: TaskBinding {
            plugin: "test".into(),
            task: "prompts".into(),
            config: Value::Null,
            description: task,
        },
        train: None,
        checkpoint: None,
        base_dir: None,
    };
    HfPlugin::open_model("checkpoint", open).unwrap()
}

/// Fast-dLLM's cached generations as text, through the plugin's text model: each case's
/// prompt alone, and both prompts of a setting in one batch (left-padded to one length, so the
/// cache runs with the padding hidden), must give the reference's completions.
#[test]
fn fast_dllm_cached_completions_through_the_text_model() {
    let reference = fast_dllm();
    let mut model = text_model();
    let mut compared = 0;
    // The cases come in pairs: one setting, the two prompts.
    for pair in reference.cases.chunks(2) {
        let (sampler, params) = sampler_for(&pair[0].settings);
        let label = format!("{sampler} {params}, steps {}", pair[0].settings.steps);
        let request = |cases: &[Case]| GenerateRequest {
            batch_size: cases.len(),
            length: 16,
            sampler: SamplerSpec {
                name: sampler.clone(),
                steps: pair[0].settings.steps,
                schedule: None,
                params: serde_json::from_value(params.clone()).unwrap(),
            },
            seed: 3,
            first_index: 0,
            prompts: None,
            prompt_texts: Some(
                cases
                    .iter()
                    .enumerate()
                    .map(|(i, c)| Prompt {
                        id: format!("p{i}"),
                        text: c.prompt_text.clone(),
                        reference: None,
                    })
                    .collect(),
            ),
            trace: false,
        };
        let want: Vec<&str> = pair.iter().map(|c| c.completion.as_str()).collect();
        for case in pair {
            let (_, reply) = model
                .generate(&request(std::slice::from_ref(case)))
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!(
                reply.texts.unwrap(),
                std::slice::from_ref(&case.completion),
                "{label} alone"
            );
            compared += 1;
        }
        let (_, reply) = model
            .generate(&request(pair))
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(
            reply.texts.unwrap(),
            want,
            "{label}: both prompts in one batch"
        );
    }
    assert!(compared > 0 && compared == reference.cases.len());
}
