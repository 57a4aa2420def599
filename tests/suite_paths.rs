//! Every path in a suite is relative to the suite file, for tasks and models alike (issue 29):
//! a suite in a subfolder, run from another working directory, finds its task's prompts and
//! its model's replay file, and its cells keep the ids of the config as written. The report
//! says how many of the task's documents were scored and that the run was filtered. A config
//! key the component does not declare fails before any cell runs, at its line, with the
//! declared key it is closest to.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// A `prompts` task over three prompts and a replay file answering two of them: the first
/// right, the second wrong, so exact match is 1 and 0.
fn write_suite(sub: &Path) {
    std::fs::create_dir_all(sub.join("data")).unwrap();
    let prompts = [
        json!({"id": "a", "prompt": "1 + 1 =", "reference": "2"}),
        json!({"id": "b", "prompt": "2 + 2 =", "reference": "4"}),
        json!({"id": "c", "prompt": "3 + 3 =", "reference": "6"}),
    ];
    let generations = [
        json!({"doc_id": "c", "generation": " 6"}),
        json!({"doc_id": "a", "generation": " 3"}),
    ];
    let lines = |rows: &[Value]| rows.iter().map(|r| format!("{r}\n")).collect::<String>();
    std::fs::write(sub.join("data/prompts.jsonl"), lines(&prompts)).unwrap();
    std::fs::write(sub.join("data/generations.jsonl"), lines(&generations)).unwrap();
    std::fs::write(
        sub.join("suite.yaml"),
        "name: relative-paths
samples: 2
lengths: [32]
reference: false
tasks:
  - {name: mine, plugin: dlm-reasoning, task: prompts, config: {path: data/prompts.jsonl},
     docs_from_replay: true}
models:
  - {name: elsewhere, plugin: dlm-replay, model: replay,
     config: {path: data/generations.jsonl}}
samplers:
  - sampler: replay
",
    )
    .unwrap();
}

#[test]
fn task_and_model_paths_resolve_against_the_suite_file_from_any_working_directory() {
    let dir = scratch("suite-paths");
    let sub = dir.join("suites/sub");
    write_suite(&sub);
    // The working directory is neither the suite's folder nor the repository.
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .current_dir(&elsewhere)
        .args([
            "run",
            "../suites/sub/suite.yaml",
            "--tasks",
            "mine",
            "--out",
        ])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let s = summary(&run_dir);
    let c = cell(&s, "mine", "elsewhere", None, None);
    assert_eq!(c["status"], "ok", "{c}");
    // Sample i answers selected document i mod 2; the selection is the replay file's
    // documents in the task's order: a (answered 3, wrong), then c (answered 6, right).
    let samples = sorted_samples(&run_dir);
    let matched: Vec<(String, bool)> = samples
        .iter()
        .map(|r| {
            let id = r["extra"]["prompt_id"].as_str().unwrap().to_string();
            (id, r["extra"]["exact_match"].as_bool().unwrap())
        })
        .collect();
    assert_eq!(matched, [("a".into(), false), ("c".into(), true)]);
    assert_eq!(c["documents"], json!({"scored": 2, "of": 3}), "{c}");

    // The unit id is the config as written, not the absolute path the plugin saw.
    let cells = std::fs::read_to_string(run_dir.join("cells.jsonl")).unwrap();
    let record: Value = serde_json::from_str(cells.lines().next().unwrap()).unwrap();
    assert_eq!(
        record["cell"]["task"]["config"],
        json!({"path": "data/prompts.jsonl"})
    );
    assert_eq!(
        record["cell"]["model"]["config"],
        json!({"path": "data/generations.jsonl"})
    );

    let report = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        report.contains("2 of 3 documents scored"),
        "no document count in the report"
    );
    assert!(
        report.contains("filtered with <code>--tasks mine</code>"),
        "no filter note in the report"
    );
}

#[test]
fn an_undeclared_task_config_key_fails_before_any_cell_at_its_line() {
    let dir = scratch("suite-config-keys");
    let suite = dir.join("typo.yaml");
    let text_of_suite = "name: typo
samples: 2
lengths: [8]
tasks:
  - name: bigram
    plugin: dlm-formal
    task: ngram
    config:
      order: 2
      varient: ser
models:
  - {name: oracle, plugin: dlm-formal, model: oracle}
samplers:
  - {sampler: ddpm, steps: [2]}
";
    std::fs::write(&suite, text_of_suite).unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!("{}:10:7:", suite.display());
    assert!(stderr.contains(&expected), "no {expected}: {}", text(&out));
    assert!(
        stderr.contains("takes no config key `varient`; did you mean `variant`?"),
        "{}",
        text(&out)
    );
    assert!(!run_dir.join("cells.jsonl").exists(), "a cell ran");
}
