//! The plugin's model `checkpoint` answers text tasks: opened like the harness opens it (a text
//! task without a vocabulary, as GSM8K), every SDK denoiser sampler fills the completions of
//! prompt texts, which come back as text. At the token level no sampler ever writes the
//! checkpoint's mask token (its probability is 0) or leaves the SDK's mask behind.

mod common;
use common::*;
use dlm_hf::HfPlugin;
use dlm_sdk::sampler::device::OnHost;
use dlm_sdk::{
    DenoiserModel, GenerateRequest, Model, ModelOpenConfig, Plugin, Prompt, SamplerSpec,
    TaskBinding, TaskDescription, TextTaskInfo,
};
use serde_json::json;

const LENGTH: usize = 64;

const PROMPTS: [&str; 3] = [
    "Question: Natalia sold 48 clips in April. How many in May?\nAnswer:",
    "Question: Weng earns $12 an hour.\nAnswer:",
    "2 + 3 =",
];

fn text_task(length: usize) -> TaskDescription {
    let mut d = TaskDescription::new("gsm8k-like", 0, length);
    d.details = json!({});
    d.text = Some(TextTaskInfo::new(vec!["Question:".into()]));
    d
}

fn open_config(config: serde_json::Value, task: TaskDescription) -> ModelOpenConfig {
    ModelOpenConfig {
        config,
        task: TaskBinding {
            plugin: "test".into(),
            task: "gsm8k-like".into(),
            config: serde_json::Value::Null,
            description: task,
        },
        train: None,
        checkpoint: None,
        base_dir: None,
    }
}

fn request(sampler: &str, steps: usize, params: serde_json::Value) -> GenerateRequest {
    GenerateRequest {
        batch_size: PROMPTS.len(),
        length: LENGTH,
        sampler: SamplerSpec {
            name: sampler.into(),
            steps,
            schedule: None,
            params: serde_json::from_value(params).unwrap(),
        },
        seed: 5,
        first_index: 0,
        prompts: None,
        prompt_texts: Some(
            PROMPTS
                .iter()
                .enumerate()
                .map(|(i, t)| Prompt {
                    id: format!("p{i}"),
                    text: t.to_string(),
                    reference: None,
                })
                .collect(),
        ),
        trace: false,
    }
}

fn samplers() -> Vec<(&'static str, usize, serde_json::Value)> {
    vec![
        ("ddpm", 8, json!({})),
        ("ddpm_cache", 8, json!({})),
        ("low_confidence", 8, json!({"block_length": 8})),
        ("random", 4, json!({})),
        ("threshold", 8, json!({"block_length": 16, "tau": 0.5})),
        ("factor", 8, json!({})),
        ("eb", 8, json!({"gamma": 0.5})),
        ("left_to_right", LENGTH, json!({})),
    ]
}

#[test]
fn every_sampler_answers_prompt_texts_with_text() {
    for name in ["llada-tiny", "dream-tiny"] {
        let config = json!({"path": fixture(name), "device": device_name()});
        let mut model =
            HfPlugin::open_model("checkpoint", open_config(config, text_task(LENGTH))).unwrap();
        for (sampler, steps, params) in samplers() {
            let req = request(sampler, steps, params);
            let (tokens, reply) = model.generate(&req).unwrap();
            assert!(tokens.is_empty(), "a text model answers with text");
            let texts = reply.texts.expect("texts");
            assert_eq!(texts.len(), PROMPTS.len(), "{name} {sampler}");
            for (text, stats) in texts.iter().zip(&reply.samples) {
                assert!(!text.contains("Question:"), "cut at the stop string");
                assert!(stats.generated_tokens <= LENGTH as u64);
                assert!(stats.nfe >= 1 && stats.nfe <= steps as u64, "{stats:?}");
            }
            // Same seed, same texts: the samples depend on (seed, index) only.
            let (_, again) = model.generate(&req).unwrap();
            assert_eq!(again.texts.unwrap(), texts, "{name} {sampler}");
        }
    }
}

#[test]
fn no_sampler_writes_a_mask_token() {
    for name in ["llada-tiny", "dream-tiny"] {
        let ckpt = load(name);
        let vocab = ckpt.denoiser.vocab() as u32;
        let mask = ckpt.denoiser.mask_token_id();
        let prompts: Vec<Vec<u32>> = PROMPTS
            .iter()
            .map(|p| ckpt.tokenizer.encode(p).unwrap())
            .collect();
        let mut model = DenoiserModel::new(OnHost::new(ckpt.denoiser));
        for (sampler, steps, params) in samplers() {
            // A high temperature spreads the draws over the whole vocabulary.
            let mut params = params;
            params["temperature"] = json!(3.0);
            let req = GenerateRequest {
                prompts: Some(prompts.clone()),
                prompt_texts: None,
                ..request(sampler, steps, params)
            };
            let (seqs, _) = model.generate(&req).unwrap();
            for (seq, prompt) in seqs.iter().zip(&prompts) {
                assert_eq!(&seq[..prompt.len()], &prompt[..], "prompts stay fixed");
                assert!(
                    seq.iter().all(|&t| t < vocab && t != mask),
                    "{name} {sampler}: a mask token in {seq:?}"
                );
            }
        }
    }
}

#[test]
fn the_plugin_refuses_what_it_cannot_run() {
    let path = fixture("llada-tiny");
    let open = |config: serde_json::Value, task: TaskDescription| {
        HfPlugin::open_model("checkpoint", open_config(config, task))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let mut not_text = text_task(LENGTH);
    not_text.text = None;
    not_text.label = "2gram".into();
    let e = open(json!({"path": path}), not_text);
    assert!(e.contains("`2gram` is not a text task"), "{e}");
    let e = open(json!({"path": path}), text_task(5000));
    assert!(e.contains("5000") && e.contains("4096"), "{e}");
    let e = open(json!({"path": path, "dtype": "f8"}), text_task(LENGTH));
    assert!(e.contains("dtype `f8`"), "{e}");
    let e = open(json!({"path": path, "device": "tpu"}), text_task(LENGTH));
    assert!(e.contains("device `tpu`"), "{e}");
    let e = open(json!({"path": path, "tokenizer": "x"}), text_task(LENGTH));
    assert!(e.contains("unknown field `tokenizer`"), "{e}");
    let e = open(
        json!({"path": path, "eos_token": "<nope>"}),
        text_task(LENGTH),
    );
    assert!(e.contains("<nope>") && e.contains("tokenizer.json"), "{e}");
    let e = HfPlugin::open_model("mdm", open_config(json!({"path": path}), text_task(LENGTH)))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("`checkpoint`"), "{e}");
}

/// `generation_length` (LLaDA's `gen_length`): the region after every prompt is exactly that
/// long, whatever the request's length and whatever shares the batch (it is left-padded; see
/// `tests/padding.rs`). With more steps than positions, `low_confidence` commits one token per
/// call, so a sample's NFE is its region's size: `generation_length`, for every prompt.
#[test]
fn generation_length_fixes_the_completion_region() {
    const GENERATE: usize = 12;
    let path = fixture("dream-tiny");
    let config = json!({"path": path, "generation_length": GENERATE, "device": device_name()});
    // The cell's length (8) is shorter than the prompts: only the generation length counts.
    let mut model = HfPlugin::open_model("checkpoint", open_config(config, text_task(8))).unwrap();
    let mut req = request("low_confidence", 256, json!({}));
    req.length = 8;
    let (_, reply) = model.generate(&req).unwrap();
    let tok = load("dream-tiny").tokenizer;
    let lengths: Vec<usize> = PROMPTS
        .iter()
        .map(|p| tok.encode(p).unwrap().len())
        .collect();
    assert!(
        lengths.iter().any(|&l| l != lengths[0]),
        "prompts of different lengths"
    );
    for stats in &reply.samples {
        assert_eq!(stats.nfe as usize, GENERATE, "{stats:?}");
        assert!(stats.generated_tokens as usize <= GENERATE, "{stats:?}");
    }
    // One position per step: left to right takes as many steps as the region has positions,
    // whatever the steps the cell's length implied.
    let mut l2r = request("left_to_right", 8, json!({}));
    l2r.length = 8;
    let (_, reply) = model.generate(&l2r).unwrap();
    for stats in &reply.samples {
        assert_eq!(stats.nfe as usize, GENERATE, "{stats:?}");
    }
    let e = HfPlugin::open_model(
        "checkpoint",
        open_config(
            json!({"path": path, "generation_length": 5000}),
            text_task(8),
        ),
    )
    .unwrap()
    .generate(&req)
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("generation_length 5000") && e.contains("2048"),
        "{e}"
    );
}
