//! `trace: true` end to end on a tiny run: a barely trained dlm-neural MDM on the arithmetic
//! chains (a text task: answers scored by the task's strict accuracy) and the exact oracle on
//! a formal language (answers scored by validity), each with low_confidence and left_to_right.
//! The recorded trajectories are checked against what else the run knows: the last answer's
//! verdict is the sample's own score, steps are its NFE, left_to_right commits in order (τ = 1),
//! and the summary, `report.json` and the page show them.

mod common;
use common::*;
use serde_json::Value;

const SUITE: &str = "name: trace-tiny
samples: 6
batch_size: 3
lengths: [48]
trace: true
tasks:
  - {name: arith, plugin: dlm-reasoning, task: arith, config: {steps: 1, max_operand: 9}}
  - {name: 2gram-ser, plugin: dlm-formal, task: ngram, config: {order: 2, variant: ser}}
models:
  - name: mdm
    plugin: dlm-neural
    model: mdm
    config: {init: {hidden: 16, layers: 1, heads: 2}}
    train: {steps: 4, batch_size: 4, lr: 0.003, seed: 0}
    tasks: [arith]
    samplers: [low_confidence, left_to_right]
  - {name: oracle, plugin: dlm-formal, model: oracle, tasks: [2gram-ser], samplers: [low_confidence, left_to_right]}
samplers:
  - {sampler: low_confidence, steps: [4]}
  - sampler: left_to_right
";

/// The verdict after the last step: the last change's.
fn final_correct(trace: &Value) -> bool {
    let changes = trace["correct"].as_array().expect("scored predictions");
    changes.last().unwrap()[1].as_bool().unwrap()
}

#[test]
fn traced_cells_record_trajectories_that_agree_with_their_samples() {
    let dir = scratch("trajectories");
    let suite = dir.join("suite.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let samples = sorted_samples(&run_dir);
    let mut seen = 0;
    for s in &samples {
        let key = s["key"].as_str().unwrap();
        if key.contains("/reference/") {
            assert!(
                s.get("trace").is_none(),
                "{key}: the reference row is not traced"
            );
            continue;
        }
        seen += 1;
        let t = &s["trace"];
        assert_eq!(t["steps"], s["nfe"], "{key}: steps are the sample's NFE");
        let own = match key.starts_with("arith/") {
            true => s["extra"]["accuracy_strict"].as_bool().unwrap(),
            false => s["in_support"].as_bool().unwrap(),
        };
        assert_eq!(
            final_correct(t),
            own,
            "{key}: the last answer is the output"
        );
        let steps: Vec<u64> = t["commit_steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(steps.len(), 48, "{key}");
        if key.contains("left_to_right") {
            let prompt = steps.iter().take_while(|&&x| x == 0).count();
            let expected: Vec<u64> = (1..=(48 - prompt) as u64).collect();
            assert_eq!(steps[prompt..], expected[..], "{key}");
            assert_eq!(t["tau"], 1.0, "{key}");
        }
    }
    assert_eq!(seen, 24, "4 model cells of 6 samples");

    let summary = summary(&run_dir);
    for task in ["arith", "2gram-ser"] {
        for sampler in ["low_confidence", "left_to_right"] {
            let c = &cell(
                &summary,
                task,
                if task == "arith" { "mdm" } else { "oracle" },
                Some(sampler),
                None,
            )["trace"];
            assert_eq!(
                (c["traced"].as_u64(), c["scored"].as_u64()),
                (Some(6), Some(6))
            );
            // The summary's shares are the samples' own.
            let rows: Vec<&Value> = samples
                .iter()
                .filter(|s| s["key"].as_str().unwrap().starts_with(&format!("{task}/")))
                .filter(|s| s["key"].as_str().unwrap().contains(&format!("/{sampler}@")))
                .collect();
            let lost = rows
                .iter()
                .filter(|s| {
                    let changes = s["trace"]["correct"].as_array().unwrap();
                    changes.iter().any(|c| c[1] == true) && !final_correct(&s["trace"])
                })
                .count();
            assert_eq!(
                c["lost"].as_f64(),
                Some(lost as f64 / 6.0),
                "{task} {sampler}"
            );
        }
    }
    assert_eq!(
        cell(&summary, "2gram-ser", "oracle", Some("left_to_right"), None)["trace"]["tau_mean"],
        1.0
    );
    assert!(cell(&summary, "arith", "reference", None, None)
        .get("trace")
        .is_none());

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("report.json")).unwrap())
            .unwrap();
    let tasks: Vec<&str> = report["trajectories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, ["arith", "2gram-ser"]);
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("Trajectories — arith") && html.contains("Trajectories — 2gram-ser"));
    assert!(html.contains("commit order τ vs steps"));
}
