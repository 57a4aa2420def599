//! `dlm-reasoning`'s `prompts` task end to end through the real binary: a user's JSONL of
//! prompts, answered by `dlm-replay`, scored by completion length (characters, after the stop
//! strings) and exact match against the rows that carry a reference; a bad row fails its cell
//! naming the file and line, and the run's other cells are unaffected.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

fn write_lines(path: &Path, rows: &[Value]) {
    let lines: Vec<String> = rows.iter().map(Value::to_string).collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn own_prompts_are_scored_by_length_and_exact_match() {
    let dir = scratch("prompts-task");
    // Three rows with a reference (one with a numeric id), two without.
    write_lines(
        &dir.join("prompts.jsonl"),
        &[
            json!({"id": "capital", "prompt": "The capital of France is", "reference": "Paris"}),
            json!({"id": "sum", "prompt": "2 + 2 =", "reference": "4"}),
            json!({"id": 3, "prompt": "Say x:", "reference": "x"}),
            json!({"id": "poem", "prompt": "Write a line about rain."}),
            json!({"id": "empty", "prompt": "Say nothing.", "reference": null}),
        ],
    );
    // The generations: a match up to surrounding whitespace, a miss, a match once cut at the
    // stop string, free text, and nothing.
    let generations = [
        ("capital", " Paris \n"),
        ("sum", " 5"),
        ("3", "x END and more"),
        ("poem", "Rain taps on the glass, ünïcode."),
        ("empty", ""),
    ];
    write_lines(
        &dir.join("generations.jsonl"),
        &generations
            .iter()
            .map(|(id, g)| match id.parse::<u64>() {
                Ok(n) => json!({"doc_id": n, "generation": g}),
                Err(_) => json!({"doc_id": id, "generation": g}),
            })
            .collect::<Vec<_>>(),
    );
    // A file whose second row repeats the first's id.
    std::fs::write(
        dir.join("bad.jsonl"),
        "{\"id\": \"a\", \"prompt\": \"x\"}\n{\"id\": \"a\", \"prompt\": \"y\"}\n",
    )
    .unwrap();
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: own-prompts
samples: 5
batch_size: 2
lengths: [64]
reference: false
tasks:
  - {{name: mine, plugin: dlm-reasoning, task: prompts, config: {{path: {p}, stop: [END]}}}}
  - {{name: broken, plugin: dlm-reasoning, task: prompts, config: {{path: {b}}}}}
models:
  - {{name: replayed, plugin: dlm-replay, model: replay, config: {{path: {g}}}}}
samplers:
  - sampler: replay
",
            p = dir.join("prompts.jsonl").display(),
            b = dir.join("bad.jsonl").display(),
            g = dir.join("generations.jsonl").display(),
        ),
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    // The broken file fails its own cell only (exit 3: some cells failed).
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&run_dir);

    let c = cell(&s, "mine", "replayed", None, None);
    assert_eq!(c["status"], "ok", "{c}");
    // Completions as the harness cuts them: before the first stop string.
    let completions: Vec<&str> = generations
        .iter()
        .map(|(_, g)| g.split("END").next().unwrap())
        .collect();
    let chars: Vec<f64> = completions
        .iter()
        .map(|c| c.chars().count() as f64)
        .collect();
    let mean_chars = chars.iter().sum::<f64>() / chars.len() as f64;
    let metric = |name: &str| &c["metrics"][name];
    let value = metric("completion_chars")["value"].as_f64().unwrap();
    assert!(
        (value - mean_chars).abs() < 1e-12,
        "{value} vs {mean_chars}"
    );
    assert_eq!(metric("completion_chars")["n"], 5);
    // Exact match over the three rows with a reference: `capital` and `3` match, `sum` not.
    assert_eq!(metric("exact_match")["value"].as_f64(), Some(2.0 / 3.0));
    assert_eq!(metric("exact_match")["n"], 3);
    // SER: only the referenced miss counts as wrong.
    assert_eq!(c["ser"], 1.0 / 5.0, "{c}");

    // Per sample: the recorded completion is the cut one, and its length is the figure.
    let samples = std::fs::read_to_string(run_dir.join("samples.jsonl")).unwrap();
    let mut seen = 0;
    for line in samples.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        if !row["key"].as_str().unwrap().starts_with("mine/") {
            continue;
        }
        let extra = &row["extra"];
        let completion = extra["completion"].as_str().unwrap();
        assert_eq!(
            extra["completion_chars"].as_u64(),
            Some(completion.chars().count() as u64),
            "{row}"
        );
        assert!(!completion.contains("END"), "{row}");
        seen += 1;
    }
    assert_eq!(seen, 5);

    let c = cell(&s, "broken", "replayed", None, None);
    assert_eq!(c["status"], "failed", "{c}");
    let cause = c["cause"].as_str().unwrap();
    assert!(
        cause.contains("bad.jsonl:2: duplicate id `a` (first at line 1)"),
        "{cause}"
    );
}
