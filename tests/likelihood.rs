//! A suite's `likelihood:` section end to end through the real plugins: the exact oracle of a
//! 2-gram language answers likelihood requests with its Monte-Carlo ELBO, whose expectation
//! is the exact log-likelihood (every decoding order of exact conditionals factorises the
//! same joint), so the mean estimate over rows and seeds must lie within 3 standard errors of
//! the task's exact value. The run's `likelihood.jsonl`, `report.json` and page carry it.

mod common;
use common::*;
use serde_json::Value;

const SUITE: &str = "name: likelihood-tiny
samples: 4
batch_size: 4
lengths: [16]
reference: false
tasks:
  - {name: 2gram, plugin: dlm-formal, task: ngram, config: {order: 2, variant: ter}}
models:
  - {name: oracle, plugin: dlm-formal, model: oracle}
samplers:
  - {sampler: ddpm_cache, steps: [16]}
likelihood:
  mc_num: [1, 32]
  rows: 24
  context: 4
  repeats: 4
  choices: 3
";

#[test]
fn the_oracle_elbo_is_unbiased_for_the_exact_log_likelihood_and_the_report_shows_it() {
    let dir = scratch("likelihood");
    let suite = dir.join("suite.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let lines = std::fs::read_to_string(run_dir.join("likelihood.jsonl")).unwrap();
    let records: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "one line per mc_num: {lines}");
    let largest = records
        .iter()
        .find(|r| r["mc_num"] == 32)
        .expect("the mc_num 32 line");
    assert_eq!(largest["error"], Value::Null, "{largest}");
    assert_eq!(largest["method"], "elbo");
    let exact: Vec<f64> = largest["exact"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().expect("a full-support language: finite"))
        .collect();
    assert_eq!(exact.len(), 24);
    let estimates: Vec<Vec<f64>> = largest["estimates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            k.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(estimates.len(), 4, "four repeats");
    // Per row: mean over the repeats minus the exact value; the rows are independent, so the
    // standard error of their mean is their SD / sqrt(rows).
    let diffs: Vec<f64> = (0..exact.len())
        .map(|i| estimates.iter().map(|e| e[i]).sum::<f64>() / 4.0 - exact[i])
        .collect();
    let n = diffs.len() as f64;
    let bias = diffs.iter().sum::<f64>() / n;
    let se = (diffs.iter().map(|d| (d - bias).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
    assert!(se > 0.0, "the estimates vary with the masks");
    assert!(
        bias.abs() <= 3.0 * se,
        "oracle ELBO bias {bias} nats, standard error {se}"
    );
    // The exact choice of every item is the gold answer; the estimates pick one of 3 options.
    let picked = largest["picked"].as_array().unwrap();
    assert_eq!(picked.len(), 24);
    assert!(picked.iter().all(|p| p.as_u64().unwrap() < 3));

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("report.json")).unwrap())
            .unwrap();
    let section = &report["likelihood"][0];
    assert_eq!(section["task"], "2gram");
    let row = section["table"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["mc_num"] == 32)
        .expect("the table's mc_num 32 row");
    assert!((row["bias"].as_f64().unwrap() - bias).abs() < 1e-9);
    assert!((row["bias_se"].as_f64().unwrap() - se).abs() < 1e-9);
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("Likelihood estimates — 2gram"));
    assert!(html.contains("ELBO bias vs mc_num"));
}

/// A mistaken `likelihood:` section fails when the suite is read, naming the place and the fix.
#[test]
fn a_bad_likelihood_section_is_refused_with_its_place_and_the_fix() {
    let cases = [
        (
            "mc_num: [1, 32]",
            "mc_nums: [1, 32]",
            "did you mean `mc_num`?",
        ),
        ("mc_num: [1, 32]", "mc_num: [1, 1]", "lists 1 twice"),
        (
            "repeats: 4",
            "repeats: 4\n  tasks: [2gramm]",
            "did you mean `2gram`?",
        ),
        (
            "context: 4",
            "context: 4\n  length: 24",
            "not one of the suite's `lengths`",
        ),
        ("context: 4", "context: 16", "between 0 and 15"),
    ];
    for (i, (from, to, expected)) in cases.into_iter().enumerate() {
        let dir = scratch(&format!("likelihood-bad-{i}"));
        let suite = dir.join("suite.yaml");
        std::fs::write(&suite, SUITE.replace(from, to)).unwrap();
        let out = command()
            .args(["run", suite.to_str().unwrap(), "--out"])
            .arg(dir.join("run"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{to}: {}", text(&out));
        assert!(
            stderr.contains(expected) && stderr.contains("suite.yaml:"),
            "{to}: expected `{expected}` at a place in suite.yaml, got {stderr}"
        );
    }
}
