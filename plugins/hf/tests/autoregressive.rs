//! Autoregressive checkpoints (model `ar-checkpoint`): the tiny Qwen2 and LLaMA fixtures'
//! logits match transformers' own `Qwen2ForCausalLM` and `LlamaForCausalLM` (the reference
//! implementations, run by `tools/hf-fixtures/make_fixtures.py`) within 1e-4 — the full causal
//! forward pass, the incremental pass through the KV cache one token at a time, and the
//! `Autoregressive` distributions the `ar` sampler draws from (LLaMA's conditioned on its BOS,
//! Qwen2's uniform at position 0) — and the plugin answers text tasks with them.

mod common;
use burn::tensor::{DType, Int, Tensor, TensorData};
use common::*;
use dlm_hf::{ArCheckpoint, Architecture, HfPlugin};
use dlm_sdk::sampler::device::OnHost;
use dlm_sdk::sampler::Autoregressive;
use dlm_sdk::{
    GenerateRequest, ModelOpenConfig, Plugin, Prompt, SamplerSpec, TaskBinding, TaskDescription,
    TextTaskInfo,
};
use serde_json::json;

const TOLERANCE: f32 = 1e-4;

const FIXTURES: [(&str, Architecture); 2] = [
    ("qwen2-tiny", Architecture::Qwen2),
    ("llama-tiny", Architecture::Llama),
];

fn load_ar(name: &str) -> ArCheckpoint {
    ArCheckpoint::open(&fixture(name), &device(), "test", DType::F32, None).unwrap()
}

#[test]
fn causal_logits_match_transformers() {
    for (name, architecture) in FIXTURES {
        let reference = Reference::load(name);
        let ckpt = load_ar(name);
        assert_eq!(ckpt.generator.net.config.architecture, architecture);
        let net = &ckpt.generator.net;
        let [batch, length, rows] = reference.shape;

        let full = to_host(
            net.forward(
                net.ids_tensor(&reference.flat_ids(), batch, length)
                    .unwrap(),
            ),
        );
        let diff = max_abs_diff(&full, &reference.logits);
        eprintln!("{name}: full causal pass, max |Δ logits| = {diff:.3e}");
        assert!(diff <= TOLERANCE, "{diff}");

        // One token at a time through the KV cache: the same logits at every position.
        let mut cache = net.empty_cache(batch, length).unwrap();
        let mut cached = vec![0f32; batch * length * rows];
        for p in 0..length {
            let column: Vec<i64> = reference.input_ids.iter().map(|r| r[p] as i64).collect();
            let ids =
                Tensor::<2, Int>::from_data(TensorData::new(column, [batch, 1]), net.device());
            let step = to_host(net.forward_cached(ids, &mut cache).unwrap());
            for b in 0..batch {
                cached[(b * length + p) * rows..][..rows]
                    .copy_from_slice(&step[b * rows..][..rows]);
            }
        }
        let diff = max_abs_diff(&cached, &reference.logits);
        eprintln!("{name}: KV-cached pass, max |Δ logits| = {diff:.3e}");
        assert!(diff <= TOLERANCE, "{diff}");
        // A prefill of several positions, then one more: the causal mask inside the new block.
        let mut cache = net.empty_cache(batch, length).unwrap();
        let first: Vec<u32> = reference
            .input_ids
            .iter()
            .flat_map(|r| r[..7].to_vec())
            .collect();
        let prefill = to_host(
            net.forward_cached(net.ids_tensor(&first, batch, 7).unwrap(), &mut cache)
                .unwrap(),
        );
        for b in 0..batch {
            for p in 0..7 {
                let ours = &prefill[(b * 7 + p) * rows..][..rows];
                let theirs = &reference.logits[(b * length + p) * rows..][..rows];
                assert!(max_abs_diff(ours, theirs) <= TOLERANCE, "prefill {b} {p}");
            }
        }
        assert_eq!(cache.len, 7);
    }
}

#[test]
fn the_ar_distributions_are_the_softmax_of_the_reference_next_token_logits() {
    for (name, architecture) in FIXTURES {
        let reference = Reference::load(name);
        let mut g = OnHost::new(load_ar(name).generator);
        let vocab = g.vocab_size();
        let [batch, length, rows] = reference.shape;
        let softmax_row = |b: usize, p: usize| -> Vec<f64> {
            let row = &reference.logits[(b * length + p) * rows..][..vocab];
            let max = row.iter().fold(f32::MIN, |m, &x| m.max(x));
            let z: f64 = row.iter().map(|&x| ((x - max) as f64).exp()).sum();
            row.iter().map(|&x| ((x - max) as f64).exp() / z).collect()
        };
        let mut worst = 0f64;
        let mut check = |out: &[f64], p: usize| {
            for b in 0..batch {
                for (got, want) in out[b * vocab..][..vocab].iter().zip(softmax_row(b, p)) {
                    worst = worst.max((got - want).abs());
                }
            }
        };
        g.begin(batch, length).unwrap();
        let mut out = vec![0f64; batch * vocab];
        g.next(None, &mut out).unwrap();
        // LLaMA conditions position 0 on its BOS (the reference input starts with it); Qwen2
        // has none, so position 0 has nothing to condition on.
        let first = match architecture {
            Architecture::Llama => {
                assert!(reference.input_ids.iter().all(|r| r[0] == 482), "BOS first");
                check(&out, 0);
                1
            }
            _ => {
                assert!(out.iter().all(|&p| p == out[0] && p > 0.0), "uniform");
                0
            }
        };
        for p in first..length - 1 {
            let column: Vec<u32> = reference.input_ids.iter().map(|r| r[p]).collect();
            g.next(Some(&column), &mut out).unwrap();
            check(&out, p);
        }
        eprintln!("{name}: max |Δ next-token probability| = {worst:.3e}");
        assert!(worst <= 1e-5, "{name}: {worst}");
        let e = g
            .next(Some(&[vocab as u32, 0]), &mut out)
            .unwrap_err()
            .to_string();
        assert!(e.contains("outside"), "{e}");
    }
}

fn text_task() -> TaskDescription {
    let mut d = TaskDescription::new("gsm8k-like", 0, 48);
    d.details = json!({});
    d.text = Some(TextTaskInfo::new(vec!["Question:".into()]));
    d
}

fn open(model: &str, path: &str) -> dlm_sdk::Result<Box<dyn dlm_sdk::Model>> {
    HfPlugin::open_model(
        model,
        ModelOpenConfig {
            config: json!({"path": fixture(path), "device": device_name()}),
            task: TaskBinding {
                plugin: "test".into(),
                task: "gsm8k-like".into(),
                config: serde_json::Value::Null,
                description: text_task(),
            },
            train: None,
            checkpoint: None,
            base_dir: None,
        },
    )
}

#[test]
fn the_ar_checkpoint_answers_text_tasks_and_each_model_name_its_own_kind() {
    let mut model = open("ar-checkpoint", "qwen2-tiny").unwrap();
    let request = GenerateRequest {
        batch_size: 2,
        length: 48,
        sampler: SamplerSpec {
            name: "ar".into(),
            steps: 48,
            schedule: None,
            params: Default::default(),
        },
        seed: 1,
        first_index: 0,
        prompts: None,
        prompt_texts: Some(
            ["Question: 2 + 3 = ?\\nAnswer:", "Weng earns $12 an hour."]
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
    };
    let (_, reply) = model.generate(&request).unwrap();
    assert_eq!(reply.texts.unwrap().len(), 2);
    // One network call per position, the prompt's included (the ar sampler feeds it).
    assert_eq!(reply.batch_nfe, 48);

    let e = open("checkpoint", "qwen2-tiny").err().unwrap().to_string();
    assert!(
        e.contains("Qwen2ForCausalLM") && e.contains("`ar-checkpoint`"),
        "{e}"
    );
    let e = open("ar-checkpoint", "llada-tiny")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("LLaDAModelLM") && e.contains("`checkpoint`"),
        "{e}"
    );
}
