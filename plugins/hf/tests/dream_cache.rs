//! Fast-dLLM's Dream block loop with its prefix and dual caches (`dream/model/
//! generation_utils_block.py`, run on dream-tiny by tools/hf-fixtures/
//! make_dream_cached_generations.py into `dream-tiny/cached_generations.json`), reproduced by
//! the SDK's `dream_cache` sampler:
//!
//! * call by call on the device path: every network call (fill or window, its positions, the
//!   tokens the network saw), the output token for token, the NFE and the positions computed;
//!   the host path (`OnHost`) gives the same outputs;
//! * as text through the plugin's `checkpoint` model (what `dlm-bench run` opens), each prompt
//!   alone and both prompts of a setting in one left-padded batch;
//! * `refresh: 1` (a fill at every step) decodes exactly as `cache: none`.

mod common;
use common::*;
use dlm_hf::{CheckpointDenoiser, HfPlugin};
use dlm_sdk::sampler::device::{generate, OnHost, TensorDenoiser};
use dlm_sdk::{
    GenerateRequest, Model, ModelOpenConfig, Plugin, Prompt, SamplerSpec, TaskBinding,
    TaskDescription, TextTaskInfo,
};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
struct Cached {
    decoder: String,
    mask_token_id: u32,
    cases: Vec<Case>,
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
    mask_commits: usize,
    min_gap: f64,
}

#[derive(Deserialize)]
struct Settings {
    cache: String,
    alg: String,
    steps: usize,
    block_length: usize,
    threshold: Option<f64>,
    eps: f64,
}

fn fast_dllm() -> Cached {
    let path = fixture("dream-tiny").join("cached_generations.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let cached: Cached = serde_json::from_str(&text).unwrap();
    assert!(
        cached.decoder.contains("generation_utils_block.py"),
        "{}",
        cached.decoder
    );
    cached
}

/// The `dream_cache` parameters of a reference setting, at temperature 0 (argmax, as the
/// reference's `sample_tokens` at temperature 0).
fn params(s: &Settings) -> Value {
    let mut params = json!({
        "block_length": s.block_length,
        "cache": s.cache,
        "alg": s.alg,
        "eps": s.eps,
        "temperature": 0.0,
    });
    if let Some(tau) = s.threshold {
        params["tau"] = json!(tau);
    }
    params
}

fn request(s: &Settings, length: usize, prompts: Vec<Vec<u32>>) -> GenerateRequest {
    GenerateRequest {
        batch_size: prompts.len(),
        length,
        sampler: SamplerSpec {
            name: "dream_cache".into(),
            steps: s.steps,
            schedule: None,
            params: serde_json::from_value(params(s)).unwrap(),
        },
        seed: 7,
        first_index: 0,
        prompts: Some(prompts),
        prompt_texts: None,
        trace: false,
    }
}

/// The checkpoint with the full output row, as Fast-dLLM reads it.
fn full_row() -> CheckpointDenoiser {
    load("dream-tiny").denoiser.with_full_row(true)
}

/// Query positions of a reference call: the canvas for a fill, the window's width otherwise.
fn width(call: &Call, length: usize) -> usize {
    match (call.start, call.end) {
        (Some(start), Some(end)) => end - start,
        _ => length,
    }
}

#[test]
fn fast_dllm_dream_cached_generations_are_reproduced_call_by_call() {
    let reference = fast_dllm();
    let mut reproduced = 0;
    for (i, case) in reference.cases.iter().enumerate() {
        let s = &case.settings;
        let label = format!("case {i} (dream_cache {}, steps {})", params(s), s.steps);
        // Float rounding elsewhere (f32 logits here, another summation order) must not be able
        // to flip a step's choice; and a commit of the mask token itself (which the reference
        // reads as masked again, the SDK as decided) would make the case incomparable.
        assert!(case.min_gap > 1e-6, "{label}: too close to a tie");
        assert_eq!(case.mask_commits, 0, "{label}: commits the mask token");
        let inner = full_row();
        assert_eq!(inner.mask_token_id(), reference.mask_token_id);
        let mut net = Recording {
            inner,
            calls: Vec::new(),
            plain_calls: 0,
        };
        let length = case.output.len();
        let req = request(s, length, vec![case.prompt.clone()]);
        let (seqs, reply) = generate(&mut net, &req).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(net.plain_calls, 0, "{label}: a plain pass in a cached run");
        for (step, (got, want)) in net.calls.iter().zip(&case.calls).enumerate() {
            assert_eq!(got, want, "{label}: network call {step} differs");
        }
        assert_eq!(
            net.calls.len(),
            case.calls.len(),
            "{label}: number of calls"
        );
        assert_eq!(case.nfe, case.calls.len(), "{label}: the reference's NFE");
        assert_eq!(reply.batch_nfe as usize, case.nfe, "{label}: NFE");
        assert_eq!(reply.samples[0].nfe as usize, case.nfe, "{label}: NFE");
        let positions: usize = case.calls.iter().map(|c| width(c, length)).sum();
        assert_eq!(
            reply.samples[0].positions_computed,
            Some(positions as u64),
            "{label}: positions computed"
        );
        let ours = net.inner.checkpoint_ids(&seqs[0]).unwrap();
        assert_eq!(ours, case.output, "{label}: the output differs");
        // The host path (f64 distributions of the same logits) decides alike.
        let (host, _) = dlm_sdk::sampler::generate(&mut OnHost::new(net.inner), &req)
            .unwrap_or_else(|e| panic!("{label} on the host path: {e}"));
        assert_eq!(host, seqs, "{label}: host path");
        reproduced += 1;
    }
    println!("Fast-dLLM's Dream cached generations reproduced call by call: {reproduced}");
    assert!(reproduced > 0 && reproduced == reference.cases.len());
}

/// The plugin's `checkpoint` model (full output row, its default) answering a text task whose
/// completions are 16 tokens, as `dlm-bench run` opens it.
fn text_model() -> Box<dyn Model> {
    let mut task = TaskDescription::new("prompts", 0, 2);
    task.details = json!({});
    task.text = Some(TextTaskInfo::new(Vec::new()));
    let open = ModelOpenConfig {
        config: json!({
            "path": fixture("dream-tiny"),
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

/// The reference's completions through the text model: each case's prompt alone, and both
/// prompts of a setting in one batch (left-padded to one length, the padding hidden from the
/// fill and the windows).
#[test]
fn fast_dllm_dream_cached_completions_through_the_text_model() {
    let reference = fast_dllm();
    let mut model = text_model();
    let mut compared = 0;
    // The cases come in pairs: one setting, the two prompts.
    for pair in reference.cases.chunks(2) {
        let s = &pair[0].settings;
        let label = format!("dream_cache {}, steps {}", params(s), s.steps);
        let request = |cases: &[Case]| GenerateRequest {
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
            ..request(s, 16, vec![Vec::new(); cases.len()])
        };
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
        let want: Vec<&str> = pair.iter().map(|c| c.completion.as_str()).collect();
        let (_, reply) = model
            .generate(&request(pair))
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(reply.texts.unwrap(), want, "{label}: both in one batch");
    }
    assert!(compared > 0 && compared == reference.cases.len());
}

/// One generation on the device path: the samples and the NFE.
fn run(den: &mut impl TensorDenoiser, params: Value, prompts: &[Vec<u32>]) -> (Vec<Vec<u32>>, u64) {
    let request = GenerateRequest {
        batch_size: prompts.len(),
        length: prompts[0].len() + 16,
        sampler: SamplerSpec {
            name: "dream_cache".into(),
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
    let (seqs, reply) = generate(den, &request).unwrap_or_else(|e| panic!("{e}"));
    (seqs, reply.batch_nfe)
}

#[test]
fn refreshing_at_every_step_is_decoding_without_a_cache() {
    let mut den = load("dream-tiny").denoiser;
    // Two prompts of one length (one window serves the batch), different tokens.
    let prompts = vec![vec![45, 290, 285, 72, 64, 381], vec![12, 7, 300, 41, 9, 77]];
    for alg in [
        json!({"alg": "entropy"}),
        json!({"alg": "confidence_threshold", "tau": 0.018}),
        // Drawn tokens and positions: the same uniforms in the same order either way.
        json!({"alg": "entropy", "temperature": 0.8, "alg_temp": 0.5}),
    ] {
        for mode in ["prefix", "dual"] {
            let mut plain = json!({"block_length": 8, "temperature": 0.0});
            plain
                .as_object_mut()
                .unwrap()
                .extend(alg.as_object().unwrap().clone());
            let mut cached = plain.clone();
            cached["cache"] = json!(mode);
            cached["refresh"] = json!(1);
            let (want, want_nfe) = run(&mut den, plain, &prompts);
            let mut recording = Recording {
                inner: den,
                calls: Vec::new(),
                plain_calls: 0,
            };
            let (got, got_nfe) = run(&mut recording, cached, &prompts);
            den = recording.inner;
            let label = format!("{alg} cache {mode}, refresh 1");
            assert_eq!(got, want, "{label}");
            assert_eq!(got_nfe, want_nfe, "{label}: NFE");
            assert_eq!(recording.plain_calls, 0, "{label}");
            assert_eq!(recording.calls.len() as u64, got_nfe, "{label}");
            assert!(recording.calls.iter().all(|c| c.kind == "fill"), "{label}");
        }
    }
}
