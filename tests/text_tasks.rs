//! Text tasks end to end through the real plugin libraries: `dlm-reasoning`'s `gsm8k` task
//! scores generations replayed by `dlm-replay`. Gold solutions score perfectly; planted errors
//! are counted exactly as planted; a malformed replay line fails its cell with the line named,
//! and the run's other cells are unaffected.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// GSM8K's first 12 test problems as (question, answer, gold).
fn gsm8k_head(n: usize) -> Vec<(String, String, String)> {
    let path = root().join("data/gsm8k/test.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the repository's data/, see data/README.md)",
            path.display()
        )
    });
    text.lines()
        .take(n)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let answer = v["answer"].as_str().unwrap().to_string();
            let gold = answer.rsplit("#### ").next().unwrap().trim().to_string();
            (v["question"].as_str().unwrap().to_string(), answer, gold)
        })
        .collect()
}

fn write_replay(path: &Path, rows: &[(usize, String)]) {
    let lines: Vec<String> = rows
        .iter()
        .map(|(i, g)| json!({"doc_id": i, "generation": g}).to_string())
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn suite(dir: &Path, models: &str) -> std::path::PathBuf {
    let path = dir.join("suite.yaml");
    std::fs::write(
        &path,
        format!(
            "name: text
samples: 12
batch_size: 5
lengths: [512]
tasks:
  - {{name: gsm8k, plugin: dlm-reasoning, task: gsm8k, config: {{limit: 12}}}}
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

#[test]
fn gold_and_planted_replays_score_exactly() {
    let dir = scratch("text-tasks");
    let problems = gsm8k_head(12);
    // Gold: every solution as written.
    let gold: Vec<(usize, String)> = problems
        .iter()
        .enumerate()
        .map(|(i, (_, a, _))| (i, format!(" {a}")))
        .collect();
    write_replay(&dir.join("gold.jsonl"), &gold);
    // Planted: 0-5 gold; 6 a wrong intermediate with the right answer; 7 right steps but a wrong
    // final answer; 8 no `####`; 9 garbage; 10 empty; 11 gold.
    let mut planted = gold.clone();
    planted[6].1 = " 2+2=<<2+2=5>>5\n#### ".to_string() + &problems[6].2;
    planted[7].1 = format!(
        " {}",
        problems[7]
            .1
            .replace(&format!("#### {}", problems[7].2), "#### 999999",)
    );
    planted[8].1 = format!(" {}", problems[8].1.replace("#### ", ""));
    planted[9].1 = "%%% <<<>>> ###".into();
    planted[10].1 = String::new();
    write_replay(&dir.join("planted.jsonl"), &planted);
    // Malformed: line 3 is not JSON.
    std::fs::write(
        dir.join("bad.jsonl"),
        "{\"doc_id\": 0, \"generation\": \"x\"}\n{\"doc_id\": 1, \"generation\": \"y\"}\nnot json\n",
    )
    .unwrap();
    let models = format!(
        "  - {{name: gold, plugin: dlm-replay, model: replay, config: {{path: {g}, doc_id_prefix: test-}}}}
  - {{name: planted, plugin: dlm-replay, model: replay, config: {{path: {p}, doc_id_prefix: test-}}}}
  - {{name: bad, plugin: dlm-replay, model: replay, config: {{path: {b}, doc_id_prefix: test-}}}}",
        g = dir.join("gold.jsonl").display(),
        p = dir.join("planted.jsonl").display(),
        b = dir.join("bad.jsonl").display(),
    );
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite(&dir, &models).to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    // The malformed file fails its own cell only (exit 3: some cells failed).
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&run_dir);

    let metric = |c: &Value, m: &str| c["metrics"][m]["value"].as_f64();
    for model in ["reference", "gold"] {
        let c = cell(&s, "gsm8k", model, None, None);
        assert_eq!(c["status"], "ok", "{c}");
        assert_eq!(c["ser"], 0.0, "{model}: {c}");
        assert_eq!(metric(c, "accuracy_strict"), Some(1.0));
        assert_eq!(metric(c, "step_error_rate"), Some(0.0));
        assert_eq!(c["ter"], Value::Null, "text tasks have no TER");
    }

    let c = cell(&s, "gsm8k", "planted", None, None);
    assert_eq!(c["status"], "ok", "{c}");
    // Wrong chains: 6 (wrong step), 7 (wrong answer), 8 (no ####), 9, 10 → 5 of 12.
    assert_eq!(c["ser"], 5.0 / 12.0, "{c}");
    // Strictly right answers: 0-5, 6, 11 → 8 of 12; flexible also finds 8's last number.
    assert_eq!(metric(c, "accuracy_strict"), Some(8.0 / 12.0));
    assert_eq!(metric(c, "accuracy_flexible"), Some(9.0 / 12.0));
    // Trace error among the 8 right answers: exactly problem 6.
    assert_eq!(metric(c, "trace_error"), Some(1.0 / 8.0));
    assert_eq!(metric(c, "first_error_step"), Some(1.0));
    assert_eq!(metric(c, "empty_completion"), Some(1.0 / 12.0));
    assert_eq!(c["metrics"]["trace_error"]["n"], 8);

    let c = cell(&s, "gsm8k", "bad", None, None);
    assert_eq!(c["status"], "failed");
    let cause = c["cause"].as_str().unwrap();
    assert!(cause.contains("bad.jsonl:3"), "{cause}");

    report_shows_text_samples_and_replays_without_costs(&run_dir, &problems);
}

/// The `<tr id="cell-UNIT">…</tr>` row of a cell in the report.
fn row<'a>(html: &'a str, unit: &Value) -> &'a str {
    let start = html
        .find(&format!("<tr id=\"cell-{}\"", unit.as_str().unwrap()))
        .unwrap_or_else(|| panic!("no table row for cell {unit}"));
    let end = start + html[start..].find("</tr>").expect("row end");
    &html[start..end]
}

/// The report of the gold/planted run: the cells table has no formal-language columns, each
/// sample shows its prompt, gold and extracted answers, outcome and cause, and its completion
/// in `<pre>` with the first wrong step marked. Then, with the `gold` cell's samples given
/// forwards (4 per sample, 8 tokens: 2 tokens per forward), the replayed `planted` cell shows
/// "—" for steps and costs and stays out of the AUP pool, whose AUP is the closed form.
fn report_shows_text_samples_and_replays_without_costs(
    run_dir: &Path,
    problems: &[(String, String, String)],
) {
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    let table_at = html
        .find("<table class=\"full compact cells-table\">")
        .expect("the cells table");
    let table = &html[table_at..table_at + html[table_at..].find("</table>").unwrap()];
    for column in [
        "<th>TER</th>",
        "TER 95% CI",
        "unigram H",
        "first error",
        "log q",
    ] {
        assert!(!table.contains(column), "text task table has `{column}`");
    }
    assert!(
        table.contains("accuracy (strict"),
        "the task's metrics are columns"
    );
    // Sample 6 of `planted`: a wrong step (marked), the right final answer.
    let sample_at = html
        .find("#6 · <span class=\"mono\">test-6</span>")
        .expect("planted sample 6 is shown");
    let sample = &html[sample_at..sample_at + html[sample_at..].find("</div></div>").unwrap()];
    let gold = &problems[6].2;
    assert!(sample.contains(">incorrect<"), "{sample}");
    assert!(
        sample.contains("first wrong step: line 1: 2+2 = 5"),
        "{sample}"
    );
    assert!(sample.contains(&format!(
        "gold answer <code>{}</code>",
        common::html_escaped(gold)
    )));
    assert!(sample.contains(&format!(
        "extracted (strict) <code>{}</code>",
        common::html_escaped(gold)
    )));
    assert!(
        sample.contains(&common::html_escaped(&problems[6].0)),
        "the question is in the prompt"
    );
    assert!(
        sample.contains(&format!(
            "<pre class=\"completion\"><mark title=\"first wrong step\">{}</mark>{}</pre>",
            common::html_escaped(" 2+2=<<2+2=5>>5"),
            common::html_escaped(&format!("\n#### {gold}"))
        )),
        "{sample}"
    );
    // Scoring fields as a key/value table, not JSON.
    assert!(sample.contains("<th class=\"l\">steps_wrong</th><td class=\"l\">1</td>"));
    assert!(!sample.contains("{&quot;"), "no JSON blob");

    // The gold replay as if a model had made 4 forwards (per sample and per batch) for 8
    // tokens per sample.
    let s = summary(run_dir);
    let gold_key = cell(&s, "gsm8k", "gold", None, None)["key"].clone();
    let samples = run_dir.join("samples.jsonl");
    let edited: Vec<String> = std::fs::read_to_string(&samples)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["key"] == gold_key {
                v["nfe"] = json!(4);
                v["generated_tokens"] = json!(8);
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&samples, edited.join("\n") + "\n").unwrap();
    let cells = run_dir.join("cells.jsonl");
    let edited: Vec<String> = std::fs::read_to_string(&cells)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["key"] == gold_key {
                for b in v["batches"].as_array_mut().unwrap() {
                    b["nfe"] = json!(4);
                }
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&cells, edited.join("\n") + "\n").unwrap();
    let out = command().arg("report").arg(run_dir).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    let s = summary(run_dir);
    let gold_row = row(&html, &cell(&s, "gsm8k", "gold", None, None)["unit"]);
    assert!(
        gold_row.contains("<td class=\"nfe\">4.0</td>"),
        "{gold_row}"
    );
    assert!(
        gold_row.contains("<td class=\"tpf\">2.00</td>"),
        "{gold_row}"
    );
    let planted_row = row(&html, &cell(&s, "gsm8k", "planted", None, None)["unit"]);
    // (No tokens/s column: the edited cell's batches have no timing of their own.)
    for class in ["steps", "nfe", "tpf", "wall"] {
        assert!(
            planted_row.contains(&format!("<td class=\"{class}\">—</td>")),
            "replay's {class}: {planted_row}"
        );
    }
    // AUP: the replay is left out; gold alone at (2 tokens/forward, 100%) is 2·100, and every
    // document is right, so each resample gives the same.
    let twin: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("report.json")).unwrap())
            .unwrap();
    let aup = &twin["tasks"][0]["aup"];
    assert_eq!(aup["pool"], json!(["gold · replay"]), "{aup}");
    assert_eq!(aup["left_out"], json!(["planted · replay"]), "{aup}");
    assert_eq!(aup["y_max"], 100.0);
    assert_eq!(aup["documents"], 12);
    assert_eq!(aup["rows"][0]["aup"], 200.0);
    assert_eq!(aup["rows"][0]["ci"], json!([200.0, 200.0]));
}

#[test]
fn missing_and_unknown_replay_rows_name_the_document_and_line() {
    let dir = scratch("text-tasks-missing");
    let problems = gsm8k_head(12);
    let all: Vec<(usize, String)> = problems
        .iter()
        .enumerate()
        .map(|(i, (_, a, _))| (i, format!(" {a}")))
        .collect();
    let holes: Vec<(usize, String)> = all.iter().filter(|(i, _)| *i != 4).cloned().collect();
    write_replay(&dir.join("holes.jsonl"), &holes);
    // Every row the task needs, plus two the task (limit 12: test-0 … test-11) does not have.
    let mut strangers = all.clone();
    strangers.push((12, " #### 1".into()));
    strangers.push((5000, " #### 2".into()));
    write_replay(&dir.join("strangers.jsonl"), &strangers);
    let models = format!(
        "  - {{name: holes, plugin: dlm-replay, model: replay, config: {{path: {}, doc_id_prefix: test-}}}}
  - {{name: strangers, plugin: dlm-replay, model: replay, config: {{path: {}, doc_id_prefix: test-}}}}",
        dir.join("holes.jsonl").display(),
        dir.join("strangers.jsonl").display()
    );
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite(&dir, &models).to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&run_dir);
    let c = cell(&s, "gsm8k", "holes", None, None);
    let cause = c["cause"].as_str().unwrap();
    assert!(cause.contains("doc_id `4`"), "{cause}");
    let c = cell(&s, "gsm8k", "strangers", None, None);
    assert_eq!(c["status"], "failed", "{c}");
    let cause = c["cause"].as_str().unwrap();
    assert!(
        cause.contains("2 row(s) name 2 doc_id(s) the task does not have")
            && cause.contains("doc_id `12` on line 13")
            && cause.contains("doc_id `5000` on line 14"),
        "{cause}"
    );
    // The reference row is unaffected.
    assert_eq!(cell(&s, "gsm8k", "reference", None, None)["status"], "ok");
}

#[test]
fn a_missing_or_altered_data_file_fails_its_cells_with_the_path() {
    let dir = scratch("text-tasks-data");
    // A data folder whose test.jsonl is GSM8K with one byte changed: the sha256 check refuses it.
    let data = dir.join("data");
    std::fs::create_dir_all(data.join("gsm8k")).unwrap();
    let real = std::fs::read(root().join("data/gsm8k/test.jsonl")).unwrap();
    let mut altered = real.clone();
    altered[10] ^= 0x20;
    std::fs::write(data.join("gsm8k/test.jsonl"), altered).unwrap();
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: data
samples: 4
lengths: [512]
tasks:
  - {{name: altered, plugin: dlm-reasoning, task: gsm8k, config: {{data_dir: {d}}}}}
  - {{name: missing, plugin: dlm-reasoning, task: gsm8k, config: {{data_dir: {m}}}}}
  - {{name: fine, plugin: dlm-reasoning, task: arith}}
models:
  - {{name: gold, plugin: dlm-replay, model: replay, config: {{path: nowhere.jsonl}}}}
samplers:
  - sampler: replay
",
            d = data.display(),
            m = dir.join("empty").display()
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
    let cause = |task: &str| {
        cell(&s, task, "reference", None, None)["cause"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let altered = cause("altered");
    assert!(
        altered.contains("test.jsonl") && altered.contains("sha256"),
        "{altered}"
    );
    let missing = cause("missing");
    assert!(
        missing.contains("test.jsonl") && missing.contains("not found"),
        "{missing}"
    );
    // The arith task's reference row is unaffected.
    assert_eq!(cell(&s, "fine", "reference", None, None)["status"], "ok");
}
