//! Prompt-template robustness end to end through the real plugins: `dlm-reasoning`'s `arith`
//! task writes every problem in three templates, two `dlm-replay` models answer them (one
//! right under `plain` and wrong under `bare`, the other the reverse, both right under
//! `space`), and the report's "Prompt templates" section shows each model's accuracy per
//! template as recounted from `samples.jsonl`, the paired difference per template with
//! Agresti–Min's interval in closed form, and the pair flagged as one whose winner depends on
//! the template. No training: the first run only collects the prompts and their gold
//! solutions (the reference row).

mod common;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

const Z95: f64 = 1.959_963_984_540_054;

fn suite(dir: &Path, models: &str, reference: bool) -> std::path::PathBuf {
    let path = dir.join(format!("suite-{reference}.yaml"));
    std::fs::write(
        &path,
        format!(
            "name: templates
samples: 12
batch_size: 6
lengths: [40]
reference: {reference}
tasks:
  - {{name: arith, plugin: dlm-reasoning, task: arith,
     config: {{steps: 1, max_operand: 9, templates: [plain, space, bare]}}}}
models:
{models}
samplers:
  - sampler: replay
"
        ),
    )
    .unwrap();
    path
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn replay_model(name: &str) -> String {
    format!(
        "  - {{name: {name}, plugin: dlm-replay, model: replay, config: {{path: {name}.jsonl}}}}\n"
    )
}

#[test]
fn the_report_shows_accuracy_per_template_and_flags_a_flip() {
    let dir = scratch("prompt-templates");
    // Run 1: the gold solutions of the 12 prompts (4 problems × 3 templates); the replay
    // model has no file yet and fails, which leaves the reference row alone.
    let first = dir.join("first");
    let s = suite(&dir, &replay_model("missing"), true);
    let _ = run(&["run", s.to_str().unwrap(), "--out", first.to_str().unwrap()]);
    let gold: Vec<(String, String, String)> = lines(&first.join("samples.jsonl"))
        .iter()
        .map(|r| {
            let e = &r["extra"];
            let id = e["prompt_id"].as_str().unwrap().to_string();
            (
                id,
                e["reference"].as_str().unwrap().to_string(),
                r["template"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(gold.len(), 12, "the reference row's 12 samples");
    let templates: Vec<&str> = gold.iter().map(|g| g.2.as_str()).collect();
    assert_eq!(templates, ["plain", "space", "bare"].repeat(4));
    // Each model is right where its list says and answers `#### -1` elsewhere.
    let write = |name: &str, right_under: &[&str]| {
        let rows: Vec<String> = gold
            .iter()
            .map(|(id, solution, template)| {
                let text = match right_under.contains(&template.as_str()) {
                    true => solution.clone(),
                    false => "#### -1".to_string(),
                };
                json!({"doc_id": id, "generation": text}).to_string()
            })
            .collect();
        std::fs::write(dir.join(format!("{name}.jsonl")), rows.join("\n") + "\n").unwrap();
    };
    write("first-model", &["plain", "space"]);
    write("second-model", &["space", "bare"]);
    let out = dir.join("run");
    let models = replay_model("first-model") + &replay_model("second-model");
    let s = suite(&dir, &models, false);
    let r = run(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r));

    // Accuracy per template as recounted from the samples.
    let mut counted: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    let model_of_unit: BTreeMap<String, String> = summary(&out)
        .iter()
        .map(|c| {
            (
                c["unit"].as_str().unwrap().into(),
                c["model"].as_str().unwrap().into(),
            )
        })
        .collect();
    for r in lines(&out.join("samples.jsonl")) {
        let model = model_of_unit[r["unit"].as_str().unwrap()].clone();
        let entry = counted
            .entry((model, r["template"].as_str().unwrap().into()))
            .or_default();
        entry.0 += 1;
        entry.1 += usize::from(r["extra"]["accuracy_strict"] == json!(true));
    }
    let twin: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let sections = twin["prompt_templates"].as_array().unwrap();
    assert_eq!(sections.len(), 1);
    let t = &sections[0];
    assert_eq!(t["templates"], json!(["plain", "space", "bare"]));
    assert_eq!(t["metric"], "accuracy_strict");
    let cells = t["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for (cell, model) in cells.iter().zip(["first-model", "second-model"]) {
        assert!(
            cell["series"].as_str().unwrap().starts_with(model),
            "{cell}"
        );
        for a in cell["per_template"].as_array().unwrap() {
            let key = (
                model.to_string(),
                a["template"].as_str().unwrap().to_string(),
            );
            let (n, right) = counted[&key];
            assert_eq!(
                (a["n"].as_u64(), a["correct"].as_u64()),
                (Some(n as u64), Some(right as u64))
            );
            assert_eq!(n, 4);
        }
    }
    let right = |cell: &Value| -> Vec<u64> {
        cell["per_template"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["correct"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(right(&cells[0]), [4, 4, 0]);
    assert_eq!(right(&cells[1]), [0, 4, 4]);

    // No AR cell: the second model against the first, per template. Four discordant pairs of
    // four give 2/3 ± z·√(7/108) cut at ±1; none give 0 ± z/6.
    let pairs = t["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1);
    let p = &pairs[0];
    assert_eq!(p["against"], "first cell");
    assert!(p["a"].as_str().unwrap().starts_with("second-model"), "{p}");
    assert_eq!(p["flip"], true);
    let edge = 2.0 / 3.0 - Z95 * (7.0f64 / 108.0).sqrt();
    let close = |v: &Value, x: f64| (v.as_f64().unwrap() - x).abs() < 1e-9;
    let per: Vec<&Value> = p["per_template"].as_array().unwrap().iter().collect();
    let outcomes: Vec<&str> = per.iter().map(|d| d["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["worse", "unclear", "better"]);
    let plain = &per[0]["difference"];
    assert_eq!(
        (plain["n"].as_u64(), plain["difference"].as_f64()),
        (Some(4), Some(-1.0))
    );
    assert!(
        close(&plain["ci"][0], -1.0) && close(&plain["ci"][1], -edge),
        "{plain}"
    );
    let space = &per[1]["difference"];
    assert!(
        close(&space["ci"][0], -Z95 / 6.0) && close(&space["ci"][1], Z95 / 6.0),
        "{space}"
    );
    let bare = &per[2]["difference"];
    assert!(
        close(&bare["ci"][0], edge) && close(&bare["ci"][1], 1.0),
        "{bare}"
    );
    let flips = t["flips"].as_array().unwrap();
    assert_eq!(flips.len(), 1);
    let sentence = flips[0].as_str().unwrap();
    assert!(
        sentence.contains("better under bare") && sentence.contains("worse under plain"),
        "{sentence}"
    );

    // The manifest's provenance lists every template; the page shows the section.
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    for cell in manifest["text_cells"].as_array().unwrap() {
        let listed: Vec<&str> = cell["provenance"]["templates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(listed, ["plain", "space", "bare"]);
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Prompt templates — arith"), "no section");
    assert!(
        html.contains("The winner depends on the template"),
        "no flip banner"
    );
}
