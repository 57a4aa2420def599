//! The reference decoders' generations through the real binary (issue 29): LLaDA's
//! `generate` and Dream's `_sample`, run by tools/hf-fixtures/make_generations.py on dlm-hf's
//! tiny checkpoints (plugins/hf/tests/fixtures/*/generations.json), are reproduced by
//! `dlm-bench run` — the `prompts` task with the references' prompt texts, the `checkpoint`
//! model with `generation_length` (its default full output row, as the references), and the
//! SDK sampler each reference setting maps to (docs/user-guide.md, "Reference decoders") —
//! completion for completion. dlm-hf's tests/generations.rs checks the same cases at every
//! step; cases whose tokens torch's random stream decides are flagged in the fixture and left
//! out of both.

mod common;
use common::*;
use dlm_plugin_api::SamplerSpec;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// A reference case: its settings, prompt text and the completion a text task receives.
struct Case {
    settings: Map<String, Value>,
    prompt: String,
    completion: String,
    comparable: bool,
}

fn cases(arch: &str) -> Vec<Case> {
    let path = root()
        .join("plugins/hf/tests/fixtures")
        .join(format!("{arch}-tiny/generations.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let file: Value = serde_json::from_str(&text).unwrap();
    file["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            settings: c["settings"].as_object().unwrap().clone(),
            prompt: c["prompt_text"].as_str().unwrap().to_string(),
            completion: c["completion"].as_str().unwrap().to_string(),
            comparable: c["decided"] == true && c["random_draws"] == false,
        })
        .collect()
}

/// The SDK sampler a reference setting maps to: LLaDA's `generate(steps, block_length,
/// temperature, remasking='low_confidence')` is `low_confidence`; Dream's
/// `diffusion_generate(steps, alg, eps, alg_temp, temperature, top_k, top_p)` is `dream`.
fn sampler(arch: &str, settings: &Map<String, Value>) -> SamplerSpec {
    let keys: &[&str] = if arch == "llada" {
        &["temperature", "block_length"]
    } else {
        &["temperature", "alg", "eps", "alg_temp", "top_k", "top_p"]
    };
    let params: BTreeMap<String, Value> = keys
        .iter()
        .filter(|k| !settings[**k].is_null())
        .map(|k| (k.to_string(), settings[*k].clone()))
        .collect();
    SamplerSpec {
        name: if arch == "llada" {
            "low_confidence"
        } else {
            "dream"
        }
        .into(),
        steps: settings["steps"].as_u64().unwrap() as usize,
        schedule: None,
        params,
    }
}

#[test]
fn dlm_bench_run_reproduces_the_reference_decoders() {
    let dir = scratch("reference-generations");
    let archs = ["llada", "dream"];
    let all: Vec<(&str, Vec<Case>)> = archs.iter().map(|a| (*a, cases(a))).collect();
    // The prompts file: the references' prompt texts, in order of first appearance.
    let mut prompts: Vec<String> = Vec::new();
    for case in all.iter().flat_map(|(_, c)| c) {
        if !prompts.contains(&case.prompt) {
            prompts.push(case.prompt.clone());
        }
    }
    write_prompts(&dir, &prompts);
    // One sampler entry per comparable setting; each model runs its own sampler's entries.
    let mut entries: Vec<(&str, SamplerSpec)> = Vec::new();
    for (arch, cases) in &all {
        for case in cases.iter().filter(|c| c.comparable) {
            let spec = sampler(arch, &case.settings);
            if !entries.iter().any(|(a, s)| a == arch && *s == spec) {
                entries.push((arch, spec));
            }
        }
    }
    let sampler_lines = sampler_lines(entries.iter().map(|(_, s)| s));
    let fixtures = root().join("plugins/hf/tests/fixtures");
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: reference-generations
samples: {samples}
batch_size: 1
lengths: [64]
seeds: [0]
reference: false
tasks:
  - {{name: mine, plugin: dlm-reasoning, task: prompts, config: {{path: {prompts}}}}}
models:
  - {{name: llada, plugin: dlm-hf, model: checkpoint, samplers: [low_confidence],
      config: {{path: {llada}, generation_length: 16}}}}
  - {{name: dream, plugin: dlm-hf, model: checkpoint, samplers: [dream],
      config: {{path: {dream}, generation_length: 16}}}}
samplers:
{sampler_lines}",
            samples = prompts.len(),
            prompts = dir.join("prompts.jsonl").display(),
            llada = fixtures.join("llada-tiny").display(),
            dream = fixtures.join("dream-tiny").display(),
        ),
    )
    .unwrap();
    let samples = run_and_read_samples(&dir, &suite);
    let mut compared = 0;
    for (arch, cases) in &all {
        for case in cases.iter().filter(|c| c.comparable) {
            let key = format!("mine/{arch}/{}/", sampler(arch, &case.settings).label());
            let id = format!(
                "p{}",
                prompts.iter().position(|p| *p == case.prompt).unwrap()
            );
            assert_completion(&samples, &key, &id, &case.completion);
            compared += 1;
        }
    }
    let comparable = all
        .iter()
        .flat_map(|(_, c)| c)
        .filter(|c| c.comparable)
        .count();
    assert!(compared == comparable && compared > 0);
}

/// Fast-dLLM's cached generations (`generate_with_prefix_cache`, `generate_with_dual_cache`,
/// fixed quota and threshold), run by tools/hf-fixtures/make_cached_generations.py on the
/// tiny LLaDA checkpoint, reproduced by `dlm-bench run` with `cache: prefix|dual`: the
/// reference's fixed quota is `low_confidence`, its `threshold` is `threshold` with `tau`, both
/// at temperature 0 (argmax, as the reference). dlm-hf's tests/kv_cache.rs checks the same cases
/// call by call.
#[test]
fn dlm_bench_run_reproduces_fast_dllm_cached_generations() {
    let dir = scratch("fast-dllm-cached-generations");
    let path = root().join("plugins/hf/tests/fixtures/llada-tiny/cached_generations.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases: Vec<(SamplerSpec, String, String)> = file["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = &c["settings"];
            let mut params: BTreeMap<String, Value> = BTreeMap::new();
            params.insert("block_length".into(), s["block_length"].clone());
            params.insert("cache".into(), s["cache"].clone());
            params.insert("temperature".into(), json!(0.0));
            let name = if s["threshold"].is_null() {
                "low_confidence"
            } else {
                params.insert("tau".into(), s["threshold"].clone());
                "threshold"
            };
            assert_eq!(s["gen_length"], 16, "the suite below generates 16 tokens");
            let spec = SamplerSpec {
                name: name.into(),
                steps: s["steps"].as_u64().unwrap() as usize,
                schedule: None,
                params,
            };
            let prompt = c["prompt_text"].as_str().unwrap().to_string();
            (spec, prompt, c["completion"].as_str().unwrap().to_string())
        })
        .collect();
    let mut prompts: Vec<String> = Vec::new();
    let mut specs: Vec<SamplerSpec> = Vec::new();
    for (spec, prompt, _) in &cases {
        if !prompts.contains(prompt) {
            prompts.push(prompt.clone());
        }
        if !specs.contains(spec) {
            specs.push(spec.clone());
        }
    }
    write_prompts(&dir, &prompts);
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: fast-dllm-cached-generations
samples: {samples}
batch_size: 1
lengths: [64]
seeds: [0]
reference: false
tasks:
  - {{name: mine, plugin: dlm-reasoning, task: prompts, config: {{path: {prompts}}}}}
models:
  - {{name: llada, plugin: dlm-hf, model: checkpoint, samplers: [low_confidence, threshold],
      config: {{path: {llada}, generation_length: 16}}}}
samplers:
{lines}",
            samples = prompts.len(),
            prompts = dir.join("prompts.jsonl").display(),
            llada = root()
                .join("plugins/hf/tests/fixtures/llada-tiny")
                .display(),
            lines = sampler_lines(specs.iter()),
        ),
    )
    .unwrap();
    let samples = run_and_read_samples(&dir, &suite);
    for (spec, prompt, completion) in &cases {
        let key = format!("mine/llada/{}/", spec.label());
        let id = format!("p{}", prompts.iter().position(|p| p == prompt).unwrap());
        assert_completion(&samples, &key, &id, completion);
    }
    assert!(cases.len() >= 24, "{} cases", cases.len());
}

/// Fast-dLLM's Dream block loop (`dream/model/generation_utils_block.py`, prefix and dual
/// cache, `alg` entropy and confidence_threshold), run by
/// tools/hf-fixtures/make_dream_cached_generations.py on the tiny Dream checkpoint, reproduced
/// by `dlm-bench run` with the SDK's `dream_cache` sampler at temperature 0. dlm-hf's
/// tests/dream_cache.rs checks the same cases call by call.
#[test]
fn dlm_bench_run_reproduces_fast_dllm_dream_cached_generations() {
    let dir = scratch("fast-dllm-dream-cached-generations");
    let fixture = root().join("plugins/hf/tests/fixtures/dream-tiny");
    let path = fixture.join("cached_generations.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases: Vec<(SamplerSpec, String, String)> = file["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = &c["settings"];
            let mut params: BTreeMap<String, Value> = BTreeMap::new();
            for key in ["block_length", "cache", "alg", "eps"] {
                params.insert(key.into(), s[key].clone());
            }
            if !s["threshold"].is_null() {
                params.insert("tau".into(), s["threshold"].clone());
            }
            params.insert("temperature".into(), json!(0.0));
            assert_eq!(s["gen_length"], 16, "the suite below generates 16 tokens");
            let spec = SamplerSpec {
                name: "dream_cache".into(),
                steps: s["steps"].as_u64().unwrap() as usize,
                schedule: None,
                params,
            };
            let prompt = c["prompt_text"].as_str().unwrap().to_string();
            (spec, prompt, c["completion"].as_str().unwrap().to_string())
        })
        .collect();
    let mut prompts: Vec<String> = Vec::new();
    let mut specs: Vec<SamplerSpec> = Vec::new();
    for (spec, prompt, _) in &cases {
        if !prompts.contains(prompt) {
            prompts.push(prompt.clone());
        }
        if !specs.contains(spec) {
            specs.push(spec.clone());
        }
    }
    write_prompts(&dir, &prompts);
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: fast-dllm-dream-cached-generations
samples: {samples}
batch_size: 1
lengths: [64]
seeds: [0]
reference: false
tasks:
  - {{name: mine, plugin: dlm-reasoning, task: prompts, config: {{path: {prompts}}}}}
models:
  - {{name: dream, plugin: dlm-hf, model: checkpoint, samplers: [dream_cache],
      config: {{path: {dream}, generation_length: 16}}}}
samplers:
{lines}",
            samples = prompts.len(),
            prompts = dir.join("prompts.jsonl").display(),
            dream = fixture.display(),
            lines = sampler_lines(specs.iter()),
        ),
    )
    .unwrap();
    let samples = run_and_read_samples(&dir, &suite);
    for (spec, prompt, completion) in &cases {
        let key = format!("mine/dream/{}/", spec.label());
        let id = format!("p{}", prompts.iter().position(|p| p == prompt).unwrap());
        assert_completion(&samples, &key, &id, completion);
    }
    assert!(cases.len() >= 32, "{} cases", cases.len());
}

/// The `prompts` task's file: one `{id: pI, prompt}` line per prompt text.
fn write_prompts(dir: &std::path::Path, prompts: &[String]) {
    let lines: Vec<String> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| json!({"id": format!("p{i}"), "prompt": p}).to_string())
        .collect();
    std::fs::write(dir.join("prompts.jsonl"), lines.join("\n") + "\n").unwrap();
}

/// The suite's `samplers:` lines, one per sampler setting.
fn sampler_lines<'a>(specs: impl Iterator<Item = &'a SamplerSpec>) -> String {
    specs
        .map(|s| {
            format!(
                "  - {{sampler: {}, steps: [{}], params: {}}}\n",
                s.name,
                s.steps,
                serde_json::to_string(&s.params).unwrap()
            )
        })
        .collect()
}

/// `dlm-bench run SUITE` into `dir/run`, then its samples.jsonl rows.
fn run_and_read_samples(dir: &std::path::Path, suite: &std::path::Path) -> Vec<Value> {
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    std::fs::read_to_string(run_dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The completion recorded for prompt `id` in the cell whose key starts with `key`.
fn assert_completion(samples: &[Value], key: &str, id: &str, completion: &str) {
    let row = samples
        .iter()
        .find(|r| r["key"].as_str().unwrap().starts_with(key) && r["extra"]["prompt_id"] == id)
        .unwrap_or_else(|| panic!("no sample of cell {key} for prompt {id}"));
    assert_eq!(
        row["extra"]["completion"].as_str(),
        Some(completion),
        "{key} prompt {id}: {row}"
    );
}
