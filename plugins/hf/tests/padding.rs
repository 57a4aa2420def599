//! Batch-independent text generation. With `generation_length` every prompt gets exactly that
//! many completion positions whatever shares its batch: the batch is left-padded and the
//! padding hidden from attention (LLaDA: a padding bias on the scores; Dream: the 4-D mask and
//! position ids of its `generation_utils`). Checked two ways: the padded forward pass against
//! PyTorch references of the same padded batch (`padded.json`, from
//! `tools/hf-fixtures/make_padded.py`), and whole generations: the same prompts at batch sizes
//! 1, 3 and 8, and shuffled, give identical samples, as the SDK's samplers promise for
//! unconditional tasks.

mod common;
use common::*;
use dlm_hf::HfPlugin;
use dlm_sdk::{
    GenerateRequest, Model, ModelOpenConfig, Plugin, Prompt, SampleStats, SamplerSpec, TaskBinding,
    TaskDescription, TextTaskInfo,
};
use serde_json::json;

/// A sampler with its steps and parameters.
type SamplerCase = (&'static str, usize, serde_json::Value);

/// padded.json: a left-padded batch (checkpoint ids), its padding, and the reference logits of
/// every non-padding position, row after row.
struct Padded {
    input_ids: Vec<Vec<u32>>,
    left_padding: Vec<usize>,
    rows: usize,
    logits: Vec<f32>,
}

fn padded_reference(name: &str) -> Padded {
    let path = fixture(name).join("padded.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let shape: Vec<usize> = serde_json::from_value(v["shape"].clone()).unwrap();
    let p = Padded {
        input_ids: serde_json::from_value(v["input_ids"].clone()).unwrap(),
        left_padding: serde_json::from_value(v["left_padding"].clone()).unwrap(),
        rows: shape[1],
        logits: serde_json::from_value(v["logits"].clone()).unwrap(),
    };
    assert_eq!(p.logits.len(), shape[0] * shape[1]);
    p
}

#[test]
fn padded_logits_equal_the_references_non_padding_rows() {
    for name in ["llada-tiny", "dream-tiny"] {
        let ckpt = load(name);
        let net = &ckpt.denoiser.net;
        let reference = padded_reference(name);
        let (batch, length) = (reference.input_ids.len(), reference.input_ids[0].len());
        let ids: Vec<u32> = reference.input_ids.iter().flatten().copied().collect();
        let padded = net
            .forward_padded(
                net.ids_tensor(&ids, batch, length).unwrap(),
                &reference.left_padding,
            )
            .unwrap();
        let padded = to_host(padded);
        let rows = reference.rows;
        assert_eq!(padded.len(), batch * length * rows);
        let mut ours = Vec::new();
        for (b, &pad) in reference.left_padding.iter().enumerate() {
            ours.extend_from_slice(&padded[(b * length + pad) * rows..(b + 1) * length * rows]);
            // The same row alone, without its padding.
            let alone = &ids[b * length + pad..(b + 1) * length];
            let alone = to_host(net.forward(net.ids_tensor(alone, 1, length - pad).unwrap()));
            let diff = max_abs_diff(
                &alone,
                &padded[(b * length + pad) * rows..(b + 1) * length * rows],
            );
            assert!(
                diff < 1e-5,
                "{name} row {b}: padded vs alone differ by {diff}"
            );
        }
        let diff = max_abs_diff(&ours, &reference.logits);
        println!("{name}: padded batch vs PyTorch reference, non-padding rows: max |Δ| {diff:.3e}");
        assert!(diff < 1e-4, "{name}: max |Δ| {diff}");
    }
}

const GENERATE: usize = 6;

/// Prompts of different lengths (the tokenizers give them 1 to 25 tokens).
const PROMPTS: [&str; 8] = [
    "Natalia sold 48 clips in April. How many in May?",
    "2 + 3 =",
    "Question: Weng earns $12 an hour.\nAnswer:",
    "How much?",
    "She earns $12 an hour. How much did she earn in 50 minutes?",
    "Betty",
    "Julie is reading a 120-page book.",
    "James writes a 3-page letter to 2 different friends twice a week.",
];

fn open(model: &str, fixture_name: &str) -> Box<dyn Model> {
    let mut task = TaskDescription::new("gsm8k-like", 0, 8);
    task.details = json!({});
    task.text = Some(TextTaskInfo::new(Vec::new()));
    let config = json!({
        "path": fixture(fixture_name),
        "device": device_name(),
        "generation_length": GENERATE,
    });
    let open = ModelOpenConfig {
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
    };
    HfPlugin::open_model(model, open).unwrap()
}

/// Generate prompts `order` (indices into [`PROMPTS`]) as one batch whose samples are
/// `first_index..`: each prompt's text and statistics, keyed by its index.
fn generate(
    model: &mut dyn Model,
    sampler: &SamplerCase,
    order: &[usize],
    first_index: u64,
) -> Vec<(usize, String, SampleStats)> {
    let request = GenerateRequest {
        batch_size: order.len(),
        length: 8,
        sampler: SamplerSpec {
            name: sampler.0.into(),
            steps: sampler.1,
            schedule: None,
            params: serde_json::from_value(sampler.2.clone()).unwrap(),
        },
        seed: 11,
        first_index,
        prompts: None,
        prompt_texts: Some(
            order
                .iter()
                .map(|&i| Prompt {
                    id: format!("p{i}"),
                    text: PROMPTS[i].to_string(),
                    reference: None,
                })
                .collect(),
        ),
        trace: false,
    };
    let (_, reply) = model.generate(&request).unwrap();
    let texts = reply.texts.unwrap();
    order
        .iter()
        .zip(texts)
        .zip(reply.samples)
        .map(|((&i, text), stats)| (i, text, stats))
        .collect()
}

#[test]
fn samples_do_not_depend_on_batch_size_or_order() {
    let cases: Vec<(&str, &str, Vec<SamplerCase>)> = vec![
        ("checkpoint", "llada-tiny", denoiser_samplers()),
        ("checkpoint", "dream-tiny", denoiser_samplers()),
        ("ar-checkpoint", "qwen2-tiny", vec![("ar", 1, json!({}))]),
        (
            "ar-checkpoint",
            "llama-tiny",
            vec![("ar", 1, json!({"temperature": 0.0}))],
        ),
    ];
    let all: Vec<usize> = (0..PROMPTS.len()).collect();
    for (model_name, fixture_name, samplers) in cases {
        let mut model = open(model_name, fixture_name);
        for sampler in &samplers {
            let what = format!("{fixture_name} {}", sampler.0);
            // Each prompt alone, as sample i.
            let alone: Vec<_> = all
                .iter()
                .flat_map(|&i| generate(model.as_mut(), sampler, &[i], i as u64))
                .collect();
            for (_, _, stats) in &alone {
                assert!(
                    stats.generated_tokens <= GENERATE as u64,
                    "{what}: {stats:?}"
                );
                if ["low_confidence", "random", "left_to_right", "ar"].contains(&sampler.0) {
                    // One position per call here: NFE is the size of the prompt's region.
                    assert_eq!(stats.nfe, GENERATE as u64, "{what}: {stats:?}");
                }
            }
            // Batches of 3 (3 + 3 + 2) and of 8, samples numbered as alone.
            for size in [3, 8] {
                let batched: Vec<_> = all
                    .chunks(size)
                    .flat_map(|chunk| generate(model.as_mut(), sampler, chunk, chunk[0] as u64))
                    .collect();
                assert_eq!(batched, alone, "{what}: batch size {size} vs 1");
            }
            // Greedy decoding with a deterministic commit rule draws nothing from the sample's
            // stream, so a prompt's sample is the same whatever its place (and stream) in a
            // shuffled batch. (`random`, `ddpm` and `dream`'s `origin` commit by coin flips
            // from the stream.)
            let coin_flips = ["random", "ddpm"].contains(&sampler.0)
                || (sampler.0 == "dream" && sampler.2["alg"] == "origin");
            if coin_flips {
                continue;
            }
            let greedy = (sampler.0, sampler.1, {
                let mut p = sampler.2.clone();
                p["temperature"] = json!(0.0);
                p
            });
            let alone: Vec<_> = all
                .iter()
                .flat_map(|&i| generate(model.as_mut(), &greedy, &[i], i as u64))
                .collect();
            let shuffled = [5, 2, 7, 0, 3, 6, 1, 4];
            let mut mixed = generate(model.as_mut(), &greedy, &shuffled, 0);
            mixed.sort_by_key(|(i, _, _)| *i);
            let texts = |v: &[(usize, String, SampleStats)]| -> Vec<String> {
                v.iter().map(|(_, t, _)| t.clone()).collect()
            };
            assert_eq!(
                texts(&mixed),
                texts(&alone),
                "{what}: shuffled batch, greedy"
            );
        }
    }
}

fn denoiser_samplers() -> Vec<SamplerCase> {
    vec![
        ("low_confidence", 6, json!({"block_length": 3})),
        ("random", 6, json!({"block_length": 2})),
        ("threshold", 6, json!({"tau": 0.5})),
        ("ddpm", 4, json!({})),
        ("left_to_right", 1, json!({})),
        // Dream's decoder: `x0` drawn from each sample's stream (greedy in the shuffled
        // check), and `origin`'s unmasking coins from it too.
        ("dream", 4, json!({"alg": "entropy"})),
        ("dream", 5, json!({"alg": "origin", "top_k": 3})),
    ]
}
