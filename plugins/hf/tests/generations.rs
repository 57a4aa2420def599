//! The reference decoders' generations, replayed step by step: `generations.json` beside each
//! tiny diffusion fixture holds, per case, what LLaDA's `generate` and Dream's `_sample` fed
//! the network at every forward pass and what they returned (tools/hf-fixtures/
//! make_generations.py). Each case runs through the SDK's sampler on the checkpoint (full
//! row, as the references) and every forward pass's input must be the reference's, token for
//! token, and so must the output.
//!
//! Cases whose tokens depend on torch's random stream (`random_draws`: Dream's `origin`,
//! `alg_temp > 0`) or whose low-temperature draws were not all the argmax (`decided: false`)
//! are not comparable token for token; they are counted and named, never silently dropped.

mod common;
use common::*;
use dlm_hf::CheckpointDenoiser;
use dlm_sdk::sampler::device::{generate, TensorDenoiser};
use dlm_sdk::{GenerateRequest, SamplerSpec};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct Generations {
    mask_token_id: u32,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    settings: BTreeMap<String, Value>,
    prompt: Vec<u32>,
    states: Vec<Vec<u32>>,
    #[serde(rename = "final")]
    output: Vec<u32>,
    random_draws: bool,
    decided: bool,
}

/// The checkpoint, recording the checkpoint ids of every forward pass's input.
struct Recording {
    inner: CheckpointDenoiser,
    inputs: Vec<Vec<u32>>,
}

impl TensorDenoiser for Recording {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn logits(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
    ) -> dlm_sdk::Result<burn::tensor::Tensor<3>> {
        self.inputs
            .push(self.inner.checkpoint_ids(tokens).expect("ids in range"));
        TensorDenoiser::logits(&mut self.inner, tokens, batch, length, t)
    }
}

/// The SDK sampler and parameters a reference case's settings map to (the mapping
/// docs/user-guide.md documents).
pub fn sampler_for(arch: &str, settings: &BTreeMap<String, Value>) -> (String, usize, Value) {
    let get = |k: &str| settings.get(k).cloned().unwrap_or(Value::Null);
    let steps = get("steps").as_u64().unwrap() as usize;
    let mut params = json!({"temperature": get("temperature")});
    if arch == "llada" {
        params["block_length"] = get("block_length");
        return ("low_confidence".into(), steps, params);
    }
    for key in ["alg", "eps", "alg_temp", "top_k", "top_p"] {
        if !get(key).is_null() {
            params[key] = get(key);
        }
    }
    ("dream".into(), steps, params)
}

fn replay(arch: &str) -> (usize, Vec<String>) {
    let name = format!("{arch}-tiny");
    let path = fixture(&name).join("generations.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let generations: Generations = serde_json::from_str(&text).unwrap();
    let (mut reproduced, mut skipped) = (0, Vec::new());
    for (i, case) in generations.cases.iter().enumerate() {
        let (sampler, steps, params) = sampler_for(arch, &case.settings);
        let label = format!("{name} case {i} ({sampler} {params})");
        if case.random_draws || !case.decided {
            skipped.push(label);
            continue;
        }
        let ckpt = load(&name);
        assert_eq!(ckpt.denoiser.mask_token_id(), generations.mask_token_id);
        let mut net = Recording {
            inner: ckpt.denoiser.with_full_row(true),
            inputs: Vec::new(),
        };
        let length = case.output.len();
        let request = GenerateRequest {
            batch_size: 1,
            length,
            sampler: SamplerSpec {
                name: sampler,
                steps,
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
        let ours = net.inner.checkpoint_ids(&seqs[0]).unwrap();
        for (step, (got, want)) in net.inputs.iter().zip(&case.states).enumerate() {
            assert_eq!(
                got, want,
                "{label}: the input of forward pass {step} differs"
            );
        }
        assert_eq!(
            net.inputs.len(),
            case.states.len(),
            "{label}: number of forward passes"
        );
        assert_eq!(reply.batch_nfe as usize, case.states.len(), "{label}");
        assert_eq!(ours, case.output, "{label}: the output differs");
        reproduced += 1;
    }
    (reproduced, skipped)
}

/// Every greedy case whose tokens torch's random stream does not decide: the least the replay
/// must reproduce (decided low-temperature cases come on top).
fn greedy_cases(arch: &str) -> usize {
    let path = fixture(&format!("{arch}-tiny")).join("generations.json");
    let generations: Generations =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    generations
        .cases
        .iter()
        .filter(|c| !c.random_draws && c.settings["temperature"].as_f64() == Some(0.0))
        .count()
}

#[test]
fn llada_generate_is_reproduced_at_every_step() {
    let (reproduced, skipped) = replay("llada");
    eprintln!("llada: {reproduced} reproduced; not comparable: {skipped:#?}");
    assert!(reproduced >= greedy_cases("llada") && reproduced > 0);
}

#[test]
fn dream_sample_is_reproduced_at_every_step() {
    let (reproduced, skipped) = replay("dream");
    eprintln!("dream: {reproduced} reproduced; not comparable: {skipped:#?}");
    assert!(reproduced >= greedy_cases("dream") && reproduced > 0);
}
