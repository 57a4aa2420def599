//! Batch-independent text generation for models with a tokenizer: with `generation_length`
//! every prompt gets exactly that many completion positions whatever shares its batch (the
//! SDK's `TextModel` left-pads the batch; the MDM hides the padding from attention and counts
//! positions from each row's first real token; the AR model, causal, needs no mask). The same
//! prompts at batch sizes 1, 3 and 8, and shuffled, give identical samples.

use burn::tensor::{Int, Tensor, TensorData};
use dlm_neural::{ModelKind, NetConfig, NeuralPlugin, Transformer};
use dlm_sdk::{
    GenerateRequest, Model, ModelOpenConfig, Plugin, Prompt, SampleStats, SamplerSpec, TaskBinding,
    TaskDescription, TextTaskInfo,
};
use serde_json::json;

/// A sampler with its steps and parameters.
type SamplerCase = (&'static str, usize, serde_json::Value);
use std::path::PathBuf;

const LENGTH: usize = 40;
const GENERATE: usize = 5;

const PROMPTS: [&str; 8] = [
    "Question: She has 3 and 4 more. how many ? Answer:",
    "a",
    "Question: He has 12 and 2 . how many ?",
    "each day",
    "The total is 20",
    "Question: 5 + 7 = ?",
    "so 2 * 3 = 6",
    "Answer:",
];

fn tokenizer_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer.json")
}

fn device_name() -> Option<String> {
    std::env::var("DLM_NEURAL_TEST_DEVICE").ok()
}

fn open(
    kind: &str,
    generation_length: Option<usize>,
    tokenizer: bool,
) -> dlm_sdk::Result<Box<dyn Model>> {
    let mut task = TaskDescription::new("words", 0, LENGTH);
    task.details = json!({"task": "words"});
    task.text = Some(TextTaskInfo::new(Vec::new()));
    let mut config = json!({"init": {"hidden": 16, "layers": 2, "heads": 2}, "seed": 3, "device": device_name()});
    if tokenizer {
        config["tokenizer"] = json!(tokenizer_path());
    }
    if let Some(g) = generation_length {
        config["generation_length"] = json!(g);
    }
    NeuralPlugin::open_model(
        kind,
        ModelOpenConfig {
            config,
            task: TaskBinding {
                plugin: "test".into(),
                task: "words".into(),
                config: serde_json::Value::Null,
                description: task,
            },
            train: None,
            checkpoint: None,
            base_dir: None,
        },
    )
}

/// Prompts `order` (indices into [`PROMPTS`]) as one batch of samples `first_index..`: each
/// prompt's index, text and statistics.
fn generate(
    model: &mut dyn Model,
    sampler: &SamplerCase,
    order: &[usize],
    first_index: u64,
) -> Vec<(usize, String, SampleStats)> {
    let request = GenerateRequest {
        batch_size: order.len(),
        length: LENGTH,
        sampler: SamplerSpec {
            name: sampler.0.into(),
            steps: sampler.1,
            schedule: None,
            params: serde_json::from_value(sampler.2.clone()).unwrap(),
        },
        seed: 7,
        first_index,
        prompts: None,
        prompt_texts: Some(
            order
                .iter()
                .map(|&i| Prompt {
                    id: format!("q{i}"),
                    text: PROMPTS[i].to_string(),
                    reference: None,
                })
                .collect(),
        ),
        trace: false,
    };
    let (_, reply) = model.generate(&request).unwrap();
    order
        .iter()
        .zip(reply.texts.unwrap())
        .zip(reply.samples)
        .map(|((&i, text), stats)| (i, text, stats))
        .collect()
}

#[test]
fn samples_do_not_depend_on_batch_size_or_order() {
    let cases: Vec<(&str, Vec<SamplerCase>)> = vec![
        (
            "mdm",
            vec![
                ("low_confidence", 5, json!({"block_length": 2})),
                ("ddpm", 3, json!({})),
                ("threshold", 5, json!({"tau": 0.3})),
                ("left_to_right", 1, json!({})),
            ],
        ),
        ("ar", vec![("ar", 1, json!({}))]),
    ];
    let all: Vec<usize> = (0..PROMPTS.len()).collect();
    for (kind, samplers) in cases {
        let mut model = open(kind, Some(GENERATE), true).unwrap();
        for sampler in &samplers {
            let what = format!("{kind} {}", sampler.0);
            let alone: Vec<_> = all
                .iter()
                .flat_map(|&i| generate(model.as_mut(), sampler, &[i], i as u64))
                .collect();
            for (_, _, stats) in &alone {
                assert!(
                    stats.generated_tokens <= GENERATE as u64,
                    "{what}: {stats:?}"
                );
                if sampler.0 != "ddpm" && sampler.0 != "threshold" {
                    // One position per call here: NFE is the size of the prompt's region.
                    assert_eq!(stats.nfe, GENERATE as u64, "{what}: {stats:?}");
                }
            }
            for size in [3, 8] {
                let batched: Vec<_> = all
                    .chunks(size)
                    .flat_map(|chunk| generate(model.as_mut(), sampler, chunk, chunk[0] as u64))
                    .collect();
                assert_eq!(batched, alone, "{what}: batch size {size} vs 1");
            }
            if sampler.0 == "ddpm" {
                continue; // its unmasking coins come from the sample's stream
            }
            // Greedy, with a deterministic commit rule: nothing is drawn from the sample's
            // stream, so a prompt's sample is the same at any place of a shuffled batch.
            let mut params = sampler.2.clone();
            params["temperature"] = json!(0.0);
            let greedy = (sampler.0, sampler.1, params);
            let alone: Vec<String> = all
                .iter()
                .flat_map(|&i| generate(model.as_mut(), &greedy, &[i], i as u64))
                .map(|(_, text, _)| text)
                .collect();
            let mut mixed = generate(model.as_mut(), &greedy, &[5, 2, 7, 0, 3, 6, 1, 4], 0);
            mixed.sort_by_key(|(i, _, _)| *i);
            let mixed: Vec<String> = mixed.into_iter().map(|(_, text, _)| text).collect();
            assert_eq!(mixed, alone, "{what}: shuffled batch, greedy");
        }
    }
}

/// The padded forward pass itself: every non-padding position of a left-padded batch gets the
/// logits of its row run alone.
#[test]
fn padded_rows_get_the_logits_of_the_row_alone() {
    let device = dlm_neural::plugin::parse_device(device_name().as_deref()).unwrap();
    let config: NetConfig =
        serde_json::from_value(json!({"hidden": 16, "layers": 2, "heads": 2})).unwrap();
    let vocab = 11;
    let net = Transformer::new(
        ModelKind::Mdm,
        &config.resolved(12).unwrap(),
        vocab,
        5,
        &device,
    );
    let rows: [&[u32]; 3] = [
        &[1, 2, 3, 4, 11, 11, 5, 11],
        &[7, 11, 11],
        &[3, 3, 11, 9, 11],
    ];
    let length = 8;
    let padding: Vec<usize> = rows.iter().map(|r| length - r.len()).collect();
    let ids: Vec<i64> = rows
        .iter()
        .flat_map(|r| std::iter::repeat_n(0, length - r.len()).chain(r.iter().copied()))
        .map(i64::from)
        .collect();
    let tokens = Tensor::<2, Int>::from_data(TensorData::new(ids, [3, length]), &device);
    let padded = host(net.forward_real_padded(tokens, &padding));
    for (b, row) in rows.iter().enumerate() {
        let ids: Vec<i64> = row.iter().map(|&t| i64::from(t)).collect();
        let alone = Tensor::<2, Int>::from_data(TensorData::new(ids, [1, row.len()]), &device);
        let alone = host(net.forward_real(alone));
        let start = (b * length + padding[b]) * vocab;
        let ours = &padded[start..(b + 1) * length * vocab];
        let diff = alone
            .iter()
            .zip(ours)
            .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
        assert!(diff < 1e-5, "row {b}: padded vs alone differ by {diff}");
    }
}

fn host(t: Tensor<3>) -> Vec<f32> {
    t.into_data_as::<f32>().try_into_vec::<f32>().unwrap()
}

#[test]
fn a_generation_length_needs_a_tokenizer_and_room() {
    let e = open("mdm", Some(4), false).err().unwrap().to_string();
    assert!(
        e.contains("`generation_length`") && e.contains("tokenizer"),
        "{e}"
    );
    let e = open("mdm", Some(0), true).err().unwrap().to_string();
    assert!(e.contains("at least 1"), "{e}");
    let mut model = open("mdm", Some(LENGTH), true).unwrap();
    let sampler = ("low_confidence", 4, json!({}));
    let request = GenerateRequest {
        batch_size: 1,
        length: LENGTH,
        sampler: SamplerSpec {
            name: sampler.0.into(),
            steps: sampler.1,
            schedule: None,
            params: Default::default(),
        },
        seed: 7,
        first_index: 0,
        prompts: None,
        prompt_texts: Some(vec![Prompt {
            id: "q0".into(),
            text: PROMPTS[0].into(),
            reference: None,
        }]),
        trace: false,
    };
    let e = model.generate(&request).err().unwrap().to_string();
    assert!(
        e.contains(&format!("generation_length {LENGTH}"))
            && e.contains(&format!("{LENGTH} positions")),
        "{e}"
    );
}

/// Every reply states what generated it, defaults filled in: the model's dtype, device,
/// generation length and (for `ar`) its cache, beside the sampler's every parameter.
#[test]
fn replies_state_the_models_resolved_settings() {
    let mut model = open("ar", Some(GENERATE), true).unwrap();
    let request = GenerateRequest {
        batch_size: 1,
        length: LENGTH,
        sampler: SamplerSpec {
            name: "ar".into(),
            steps: 1,
            schedule: None,
            params: Default::default(),
        },
        seed: 7,
        first_index: 0,
        prompts: None,
        prompt_texts: Some(vec![Prompt {
            id: "q0".into(),
            text: PROMPTS[0].to_string(),
            reference: None,
        }]),
        trace: false,
    };
    let (_, reply) = model.generate(&request).unwrap();
    let settings = reply.settings.expect("settings");
    assert_eq!(
        settings["model"],
        json!({"dtype": "f32", "device": reply.device, "generation_length": GENERATE,
               "kv_cache": true, "kv_cache_dtype": "f32"}),
        "{settings}"
    );
    assert_eq!(settings["sampler"]["name"], "ar", "{settings}");
    assert_eq!(
        settings["sampler"]["params"],
        json!({"temperature": 1.0, "top_k": null, "top_p": null}),
        "{settings}"
    );
}
