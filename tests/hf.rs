//! Hugging Face checkpoints through the real binary (issue 21): `suites/hf-tiny.yaml` runs
//! dlm-hf's tiny LLaDA and Dream fixture checkpoints on GSM8K and the arithmetic chains with
//! LLaDA's semi-AR low-confidence sampler and Fast-dLLM's threshold sampler, and the tiny
//! Qwen2 checkpoint with the `ar` sampler as their speedup baseline; every cell finishes with
//! text completions scored by the task. A checkpoint folder without its
//! tokenizer fails its own cell only, with the file named, and the manifest records the
//! settings a suite left out (dtype, full row, every sampler parameter) as the model resolved
//! them.

mod common;
use common::*;
use serde_json::Value;

fn rows(run_dir: &std::path::Path, key: &str) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["key"] == key)
        .collect()
}

#[test]
fn the_tiny_checkpoint_suite_runs_every_cell() {
    let dir = scratch("hf-tiny");
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", "suites/hf-tiny.yaml", "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let s = summary(&run_dir);
    let mut checked = 0;
    for task in ["gsm8k", "arith"] {
        for model in ["llada-tiny", "dream-tiny"] {
            for (sampler, steps) in [
                ("low_confidence", 16u64),
                ("low_confidence", 64),
                ("threshold", 64),
            ] {
                let c = cell(&s, task, model, Some(sampler), Some(steps));
                assert_eq!(c["status"], "ok", "{c}");
                assert_eq!(c["n"], 4, "{c}");
                let samples = rows(&run_dir, c["key"].as_str().unwrap());
                assert_eq!(samples.len(), 4);
                for r in &samples {
                    assert!(r["extra"]["completion"].is_string(), "{r}");
                    let nfe = r["nfe"].as_u64().unwrap();
                    assert!(nfe >= 1 && nfe <= steps, "{r}");
                    assert!(r["generated_tokens"].as_u64().unwrap() < 256, "{r}");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 12);
    for task in ["gsm8k", "arith"] {
        let ar = cell(&s, task, "qwen2-tiny", Some("ar"), None);
        assert_eq!(ar["status"], "ok", "{ar}");
        assert_eq!(ar["n"], 4, "{ar}");
        let c = cell(&s, task, "llada-tiny", Some("low_confidence"), Some(16));
        assert_eq!(c["speedup_baseline"], ar["key"], "{c}");
    }
}

#[test]
fn a_checkpoint_without_its_tokenizer_fails_its_own_cell() {
    let dir = scratch("hf-broken");
    let fixtures = root().join("plugins/hf/tests/fixtures");
    let broken = dir.join("no-tokenizer");
    std::fs::create_dir_all(&broken).unwrap();
    for file in ["config.json", "model.safetensors"] {
        std::fs::copy(fixtures.join("dream-tiny").join(file), broken.join(file)).unwrap();
    }
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: hf-broken
samples: 2
batch_size: 2
lengths: [128]
tasks:
  - {{name: arith, plugin: dlm-reasoning, task: arith, config: {{steps: 1, max_operand: 9}}}}
models:
  - {{name: good, plugin: dlm-hf, model: checkpoint, config: {{path: {good}}}}}
  - {{name: broken, plugin: dlm-hf, model: checkpoint, config: {{path: {broken}}}}}
samplers:
  - {{sampler: low_confidence, steps: [8]}}
",
            good = fixtures.join("llada-tiny").display(),
            broken = broken.display(),
        ),
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&run_dir);
    assert_eq!(cell(&s, "arith", "good", None, None)["status"], "ok");
    let c = cell(&s, "arith", "broken", None, None);
    assert_eq!(c["status"], "failed", "{c}");
    let cause = c["cause"].as_str().unwrap();
    assert!(
        cause.contains("no-tokenizer/tokenizer.json") && cause.contains("missing"),
        "{cause}"
    );
    // The suite leaves out the dtype, `full_row`, `generation_length` and every sampler
    // parameter: the manifest still records what the cell ran with, defaults filled in by
    // the model (dlm-hf: f32, the full output row) and the SDK's sampler (its documented
    // defaults: temperature 1, the rest unset, one block, no key/value cache).
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    let text_cells = manifest["text_cells"].as_array().expect("text_cells");
    let good = text_cells
        .iter()
        .find(|c| c["model"]["name"] == "good")
        .expect("the good cell's record");
    let settings = &good["settings"];
    assert_eq!(
        settings["model"],
        serde_json::json!({"dtype": "f32", "device": good["device"], "full_row": true, "generation_length": null}),
        "{good}"
    );
    assert_eq!(
        settings["sampler"],
        serde_json::json!({
            "name": "low_confidence",
            "steps": 8,
            "params": {"temperature": 1.0, "top_k": null, "top_p": null, "block_length": null, "cache": "none", "refresh": "every_block"},
        }),
        "{good}"
    );
    // The suite's own words stay beside it, unchanged.
    assert_eq!(good["sampler"]["params"], serde_json::json!({}), "{good}");
    assert!(good["model"]["config"].get("dtype").is_none(), "{good}");
}

/// The GPU suites are valid suites (their cells expand; nothing runs without the checkpoint).
#[test]
fn the_gpu_checkpoint_suites_are_valid() {
    for (suite, units) in [
        ("suites/gsm8k-llada.yaml", 12),
        ("suites/mbpp-llada.yaml", 12),
    ] {
        let out = run(&["plan", suite]);
        assert!(out.status.success(), "{suite}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("{units} units")),
            "{suite}: {stdout}"
        );
        assert!(
            stdout.contains("low_confidence@256,block_length=32"),
            "{stdout}"
        );
    }
}
