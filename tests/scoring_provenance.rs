//! How text tasks score, stated and checked through the real binary: pass@k for every `k` the
//! suite asks for, equal to Chen et al.'s closed form 1 − C(n−c, k)/C(n, k) (exact binomials
//! here, not the estimator's product), a clear note where a `k` exceeds the samples per
//! problem; the scoring mode and provenance in `summary.json`, `manifest.json` and the report
//! for code tasks (MBPP's setup-code difference from lm-eval named exactly when `setup_code` is
//! on) and for GSM8K (`scoring: numeric` named as a difference, `lm-eval` not).
//!
//! The code tests need bubblewrap: they skip with a message where the sandbox cannot run, and
//! fail instead under `CI=true` or `DLM_BENCH_REQUIRE_SANDBOX=1`.

mod common;
use common::humaneval::sandbox_unavailable;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// HumanEval's first `n` task ids.
fn humaneval_ids(n: usize) -> Vec<String> {
    humaneval::problems()
        .iter()
        .take(n)
        .map(|v| humaneval::field(v, "task_id"))
        .collect()
}

/// HumanEval's canonical solution of the first `n` problems.
fn humaneval_canonical(n: usize) -> Vec<String> {
    humaneval::problems()
        .iter()
        .take(n)
        .map(|v| humaneval::field(v, "canonical_solution"))
        .collect()
}

/// C(n, k) exactly.
fn binomial(n: u64, k: u64) -> u128 {
    if k > n {
        return 0;
    }
    (0..k).fold(1u128, |acc, i| acc * u128::from(n - i) / u128::from(i + 1))
}

/// pass@k of one problem by the closed form, 1 − C(n−c, k)/C(n, k).
fn closed_form(n: u64, c: u64, k: u64) -> f64 {
    1.0 - binomial(n - c, k) as f64 / binomial(n, k) as f64
}

fn run_suite(dir: &Path, suite: &str) -> (std::process::Output, std::path::PathBuf) {
    let path = dir.join("suite.yaml");
    std::fs::write(&path, suite).unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", path.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    (out, run_dir)
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the file exists")).unwrap()
}

#[test]
fn pass_at_k_for_every_k_matches_the_closed_form() {
    let dir = scratch("code-scoring-pass-at-k");
    // Four problems, five samples each, of which 0, 1, 3 and 5 pass (the others return None,
    // which fails every one of these problems' first assert).
    let (ids, canonical) = (humaneval_ids(4), humaneval_canonical(4));
    let passing = [0u64, 1, 3, 5];
    let mut lines = Vec::new();
    for ((id, solution), &c) in ids.iter().zip(&canonical).zip(&passing) {
        for j in 0..5 {
            let completion = if j < c {
                solution.as_str()
            } else {
                "    return None\n"
            };
            lines.push(json!({"task_id": id, "completion": completion}).to_string());
        }
    }
    let samples = dir.join("samples.jsonl");
    std::fs::write(&samples, lines.join("\n") + "\n").unwrap();
    let (out, run_dir) = run_suite(
        &dir,
        &format!(
            "name: pass-at-k
samples: 20
batch_size: 10
lengths: [512]
reference: false
tasks:
  - {{name: humaneval, plugin: dlm-code, task: humaneval,
     config: {{allow_code_execution: true, limit: 4, k: [5, 1, 2, 6]}}}}
models:
  - {{name: replayed, plugin: dlm-replay, model: replay,
     config: {{path: {}, format: human-eval}}}}
samplers:
  - sampler: replay
",
            samples.display()
        ),
    );
    let s = summary(&run_dir);
    let c = cell(&s, "humaneval", "replayed", None, None);
    if sandbox_unavailable(c) {
        return;
    }
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(c["status"], "ok", "{c}");
    for k in [1u64, 2, 5] {
        let expected =
            passing.iter().map(|&p| closed_form(5, p, k)).sum::<f64>() / passing.len() as f64;
        let m = &c["metrics"][format!("pass_at_{k}")];
        let got = m["value"]
            .as_f64()
            .unwrap_or_else(|| panic!("pass@{k}: {m}"));
        assert!(
            (got - expected).abs() < 1e-12,
            "pass@{k}: {got} vs {expected}"
        );
        assert_eq!(m["n"], 4, "four problems: {m}");
        assert_eq!(m["declared"]["label"], format!("pass@{k}"));
    }
    // pass@1 is the plain pass rate; pass@5 with five samples is "any passed" (3 of 4).
    assert_eq!(c["metrics"]["pass_at_1"]["value"], json!(9.0 / 20.0));
    assert_eq!(c["metrics"]["pass_at_5"]["value"], json!(0.75));
    // k = 6 > n = 5: no value, and a note naming the fix.
    let six = &c["metrics"]["pass_at_6"];
    assert_eq!(six["value"], Value::Null, "{six}");
    let note = six["note"].as_str().expect("a note says why");
    assert!(
        note.starts_with("pass@6 needs at least 6 samples of every problem")
            && note.contains("this cell has 5 per problem (20 samples over 4 problems)")
            && note.contains("set `samples` to at least 24"),
        "{note}"
    );
    let report = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        report.contains("No value: pass@6 needs at least 6"),
        "the report shows the note"
    );
}

/// The suite of two MBPP tasks (`setup_code` on and off) over problem 11 with a replayed
/// completion that passes under both.
fn mbpp_suite(replay: &Path) -> String {
    format!(
        "name: mbpp-provenance
samples: 1
lengths: [512]
tasks:
  - {{name: mbpp, plugin: dlm-code, task: mbpp,
     config: {{allow_code_execution: true, limit: 1}}}}
  - {{name: mbpp-lm-eval, plugin: dlm-code, task: mbpp,
     config: {{allow_code_execution: true, limit: 1, setup_code: false, shots: 1}}}}
models:
  - {{name: replayed, plugin: dlm-replay, model: replay, config: {{path: {}}}}}
samplers:
  - sampler: replay
",
        replay.display()
    )
}

#[test]
fn summary_manifest_and_report_state_scoring_and_provenance() {
    let dir = scratch("code-scoring-provenance");
    let replay = dir.join("generations.jsonl");
    // Problem 11's own solution, as a model would write it before `[DONE]`.
    let mbpp = std::fs::read_to_string(root().join("data/mbpp/mbpp.jsonl")).unwrap();
    let solution = mbpp
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|t| t["task_id"] == 11)
        .expect("MBPP task 11")["code"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(
        &replay,
        json!({"doc_id": 11, "generation": format!("{solution}\n[DONE]")}).to_string() + "\n",
    )
    .unwrap();
    let (out, run_dir) = run_suite(&dir, &mbpp_suite(&replay));
    let s = summary(&run_dir);
    if sandbox_unavailable(cell(&s, "mbpp", "reference", None, None)) {
        return;
    }
    assert!(out.status.success(), "{}", text(&out));
    let mbpp_sum = std::fs::read_to_string(root().join("data/SHA256SUMS"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_suffix("  mbpp/mbpp.jsonl").map(str::to_string))
        .expect("data/SHA256SUMS pins mbpp.jsonl");

    // summary.json: every row states its scoring mode and provenance.
    for model in ["reference", "replayed"] {
        let kept = cell(&s, "mbpp", model, None, None);
        assert_eq!(kept["metrics"]["passed"]["value"], json!(1.0), "{kept}");
        let p = &kept["provenance"];
        assert_eq!(
            p["scoring"],
            "execution: completion + test_setup_code + test_list, all must pass"
        );
        assert_eq!(
            p["datasets"],
            json!([{"path": "mbpp/mbpp.jsonl", "sha256": mbpp_sum}])
        );
        assert_eq!(p["shots"], 3);
        assert!(
            p["differences"][0].as_str().unwrap().contains("NameError"),
            "{p}"
        );
        let dropped = cell(&s, "mbpp-lm-eval", model, None, None);
        let p = &dropped["provenance"];
        assert_eq!(
            p["scoring"],
            "execution: completion + test_list, all must pass (lm-eval's mbpp program)"
        );
        assert_eq!(p["shots"], 1);
        assert_eq!(p.get("differences"), None, "{p}");
    }

    // manifest.json: one record per text cell, in suite order, with what its numbers rest on.
    let manifest = json_file(&run_dir.join("manifest.json"));
    let cells = manifest["text_cells"].as_array().expect("text_cells");
    assert_eq!(cells.len(), 4, "{cells:?}");
    let replayed = cells
        .iter()
        .find(|c| c["task"]["name"] == "mbpp-lm-eval" && c["model"]["name"] == "replayed")
        .expect("the replayed lm-eval cell");
    assert_eq!(replayed["task"]["plugin"]["name"], "dlm-code");
    assert_eq!(replayed["task"]["config"]["setup_code"], false);
    assert_eq!(
        replayed["provenance"]["datasets"][0]["sha256"],
        mbpp_sum.as_str()
    );
    assert_eq!(
        replayed["provenance"]["template"],
        cell(&s, "mbpp-lm-eval", "replayed", None, None)["provenance"]["template"]
    );
    assert!(replayed["provenance"]["filters"][0]
        .as_str()
        .unwrap()
        .contains("[DONE]"));
    assert_eq!(replayed["model"]["plugin"]["name"], "dlm-replay");
    assert_eq!(
        replayed["model"]["config"]["path"],
        replay.to_str().unwrap()
    );
    assert_eq!(replayed["sampler"]["name"], "replay");
    assert!(replayed["device"].is_string(), "{replayed}");
    assert_eq!(
        (replayed["n"].clone(), replayed["length"].clone()),
        (json!(1), json!(512))
    );
    assert!(replayed["counting"]
        .as_str()
        .unwrap()
        .contains("prompt and padding tokens are never counted"));
    let reference = cells
        .iter()
        .find(|c| c["task"]["name"] == "mbpp" && c["model"].is_null())
        .expect("the reference row of mbpp");
    assert_eq!(reference["sampler"], Value::Null);

    // The report names the mode and the setup-code difference (once: only `mbpp` has it).
    let report = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(report.contains("scoring <strong>execution: completion + test_setup_code"));
    assert!(report.contains("scoring <strong>execution: completion + test_list, all must pass (lm-eval&#x27;s mbpp program)"), "{report}");
    assert_eq!(report.matches("Differs from the reference tool").count(), 1);
    assert!(report.contains("set `setup_code: false` for lm-eval"));
}

#[test]
fn gsm8k_rows_state_their_scoring_mode() {
    let dir = scratch("gsm8k-scoring-provenance");
    let replay = dir.join("generations.jsonl");
    // The gold answer of test problem 0 is 18: right under either mode.
    std::fs::write(
        &replay,
        json!({"doc_id": 0, "generation": " She makes 18 dollars.\n#### 18"}).to_string() + "\n",
    )
    .unwrap();
    let (out, run_dir) = run_suite(
        &dir,
        &format!(
            "name: gsm8k-provenance
samples: 1
lengths: [256]
reference: false
tasks:
  - {{name: gsm8k, plugin: dlm-reasoning, task: gsm8k, config: {{limit: 1}}}}
  - {{name: gsm8k-numeric, plugin: dlm-reasoning, task: gsm8k,
     config: {{limit: 1, scoring: numeric}}}}
models:
  - {{name: replayed, plugin: dlm-replay, model: replay,
     config: {{path: {}, doc_id_prefix: test-}}}}
samplers:
  - sampler: replay
",
            replay.display()
        ),
    );
    assert!(out.status.success(), "{}", text(&out));
    let s = summary(&run_dir);
    let lm_eval = cell(&s, "gsm8k", "replayed", None, None);
    assert_eq!(
        lm_eval["metrics"]["accuracy_strict"]["value"],
        json!(1.0),
        "{lm_eval}"
    );
    assert_eq!(lm_eval["provenance"]["scoring"], "lm-eval");
    assert_eq!(lm_eval["provenance"].get("differences"), None);
    let numeric = cell(&s, "gsm8k-numeric", "replayed", None, None);
    assert_eq!(numeric["provenance"]["scoring"], "numeric");
    assert!(numeric["provenance"]["differences"][0]
        .as_str()
        .unwrap()
        .contains("`scoring: lm-eval`"));
    let manifest = json_file(&run_dir.join("manifest.json"));
    let modes: Vec<(&str, &str)> = manifest["text_cells"]
        .as_array()
        .expect("text_cells")
        .iter()
        .map(|c| {
            (
                c["task"]["name"].as_str().unwrap(),
                c["provenance"]["scoring"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(modes, [("gsm8k", "lm-eval"), ("gsm8k-numeric", "numeric")]);
    let test_file = &manifest["text_cells"][0]["provenance"]["datasets"][0];
    assert_eq!(test_file["path"], "gsm8k/test.jsonl");
    let report = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(report.contains("scoring <strong>lm-eval</strong>"));
    assert!(report.contains("scoring <strong>numeric</strong>"));
    assert_eq!(report.matches("Differs from the reference tool").count(), 1);
}
