//! A model that owns a Hugging Face tokenizer answers a text task without a vocabulary
//! (`dlm-reasoning`'s `gsm8k`) end to end through the real binary: `dlm-neural`'s untrained
//! `mdm` with the fixture `tokenizer.json` gets the prompts as text and answers with text, which
//! the task scores; a malformed tokenizer file fails its own cell with the file named, and the
//! reference row is unaffected.

mod common;
use common::*;
use serde_json::Value;

#[test]
fn a_model_with_its_own_tokenizer_answers_gsm8k() {
    let dir = scratch("tokenizer");
    let fixtures = root().join("plugins/neural/tests/fixtures");
    let suite = dir.join("suite.yaml");
    // GSM8K's questions take up to ~100 tokens of the fixture's word-level tokenizer: the length
    // leaves room for a completion after every prompt.
    std::fs::write(
        &suite,
        format!(
            "name: tokenizer
samples: 4
batch_size: 2
lengths: [192]
tasks:
  - {{name: gsm8k, plugin: dlm-reasoning, task: gsm8k, config: {{limit: 4}}}}
models:
  - name: words
    plugin: dlm-neural
    model: mdm
    config: {{init: {{hidden: 16, layers: 1, heads: 2}}, tokenizer: {good}}}
  - name: broken
    plugin: dlm-neural
    model: mdm
    config: {{init: {{hidden: 16, layers: 1, heads: 2}}, tokenizer: {bad}}}
samplers:
  - sampler: low_confidence
    steps: [16]
",
            good = fixtures.join("tokenizer.json").display(),
            bad = fixtures.join("malformed-tokenizer.json").display(),
        ),
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    // The malformed tokenizer fails its own cell only (exit 3: some cells failed).
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&run_dir);

    let c = cell(&s, "gsm8k", "words", None, None);
    assert_eq!(c["status"], "ok", "{c}");
    assert_eq!(c["n"], 4, "{c}");
    assert_eq!(c["ter"], Value::Null, "text tasks have no TER");
    let key = c["key"].as_str().unwrap();
    let samples = std::fs::read_to_string(run_dir.join("samples.jsonl")).unwrap();
    let rows: Vec<Value> = samples
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["key"] == key)
        .collect();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert!(r["extra"]["completion"].is_string(), "{r}");
        assert!(
            r["extra"]["prompt_id"]
                .as_str()
                .unwrap()
                .starts_with("test-"),
            "{r}"
        );
        // An untrained model answers wrong: scored, not an error.
        assert!(
            r["extra"]["accuracy_strict"].is_boolean() || r["extra"]["accuracy_strict"].is_number(),
            "{r}"
        );
    }
    let generated: u64 = rows
        .iter()
        .map(|r| r["generated_tokens"].as_u64().unwrap())
        .sum();
    assert!(generated > 0, "no generated tokens in {rows:?}");
    // Prompt tokens never count: no completion is longer than the generation region.
    assert!(rows
        .iter()
        .all(|r| r["generated_tokens"].as_u64().unwrap() < 192));

    let c = cell(&s, "gsm8k", "broken", None, None);
    assert_eq!(c["status"], "failed", "{c}");
    let cause = c["cause"].as_str().unwrap();
    assert!(
        cause.contains("malformed-tokenizer.json")
            && cause.contains("not a Hugging Face tokenizer.json"),
        "{cause}"
    );
    assert_eq!(cell(&s, "gsm8k", "reference", None, None)["status"], "ok");
}
