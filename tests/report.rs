//! The run report: a real run of a small suite (exact 2-gram languages, the oracle, and a model
//! that always panics) through the real binary; the HTML must carry one plot per task and kind,
//! the numbers of summary.json, the failed cells with their causes, the run's identity, and
//! show model outputs and causes escaped.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

fn fmt(v: &Value, digits: usize) -> Option<String> {
    v.as_f64().map(|x| format!("{x:.digits$}"))
}

/// The `<tr id="cell-UNIT">…</tr>` row of a cell in the report.
fn row<'a>(html: &'a str, unit: &str) -> &'a str {
    let start = html
        .find(&format!("<tr id=\"cell-{unit}\""))
        .unwrap_or_else(|| panic!("no table row for cell {unit}"));
    let end = start + html[start..].find("</tr>").expect("row end");
    &html[start..end]
}

/// Text as minijinja's HTML auto-escaping writes it.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}

fn rewrite_jsonl(path: &Path, edit: impl Fn(usize, &mut Value)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        edit(i, &mut v);
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn report_has_plots_per_task_the_summary_numbers_failures_and_escaped_outputs() {
    let out = scratch("report-small");
    let dir = out.join("run");
    let r = run(&[
        "run",
        "tests/suites/report-small.yaml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        r.status.code(),
        Some(3),
        "cells of `broken` fail by design\n{}",
        text(&r)
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let s = summary(&dir);
    assert_eq!(s.len(), 2 * (4 + 3 + 1));

    // Self-contained: no scripts, no external resources.
    assert!(
        !html.contains("<script"),
        "the report must not need JavaScript"
    );
    for bad in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(
            !html.contains(bad),
            "external resource `{bad}` in the report"
        );
    }

    // One plot of each kind per task (inline SVG), and the exact optimum drawn.
    for task in ["bigram-ter", "bigram-ser"] {
        for kind in [
            "TER vs steps",
            "speedup vs steps",
            "TER vs NFE",
            "SER vs wall",
        ] {
            let label = format!("aria-label=\"{task}: {kind}\"");
            if kind == "SER vs wall" && task == "bigram-ter" {
                continue; // SER is 0 everywhere on the full-support language: a note instead.
            }
            assert_eq!(html.matches(&label).count(), 1, "{label}");
        }
    }
    assert_eq!(
        html.matches("aria-label=\"bigram-ser: SER vs steps\"")
            .count(),
        1
    );
    assert!(
        html.contains("SER is 0 in every cell"),
        "no SER plot note for the TER variant"
    );
    assert!(
        html.contains(">optimal "),
        "the optimal-TER reference line is labelled"
    );
    // Infinite TER (samples with q = 0) is not drawn but said.
    let one_step = cell(&s, "bigram-ser", "oracle", Some("ddpm_cache"), Some(1));
    assert!(one_step["ter"].is_null() && one_step["zero_probability_samples"].as_u64() > Some(0));
    assert!(
        html.contains("Not drawn — TER is infinite"),
        "no note on infinite TER"
    );
    assert!(row(&html, one_step["unit"].as_str().unwrap()).contains("∞"));

    // Every finished cell's figures in its table row equal summary.json's.
    for c in s.iter().filter(|c| c["status"] == "ok") {
        let tr = row(&html, c["unit"].as_str().unwrap());
        for (field, digits) in [
            ("ter", 4),
            ("ser", 3),
            ("nfe", 1),
            ("tokens_per_forward", 2),
        ] {
            if let Some(v) = fmt(&c[field], digits) {
                assert!(
                    tr.contains(&format!(">{v}<")),
                    "{} {field} {v} not in row {tr}",
                    c["key"]
                );
            }
        }
        for (i, ci) in ["ter_ci", "ser_ci"].iter().enumerate() {
            if let Some(lo) = fmt(&c[*ci][0], if i == 0 { 4 } else { 3 }) {
                let hi = fmt(&c[*ci][1], if i == 0 { 4 } else { 3 }).unwrap();
                assert!(
                    tr.contains(&format!("{lo} – {hi}")),
                    "{} {ci} not in row",
                    c["key"]
                );
            }
        }
        assert!(tr.contains(&format!(">{}<", c["n"])), "n of {}", c["key"]);
    }
    // The verdict comes first and is backed by report.json.
    let verdict_at = html.find("id=\"verdict\"").expect("verdict section");
    let first_task = html.find("id=\"task-bigram-ter\"").expect("task section");
    assert!(verdict_at < first_task);
    let twin: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        twin["verdicts"].as_array().unwrap().len(),
        2,
        "one per task for oracle · ddpm_cache"
    );
    assert_eq!(twin["cells"].as_array().unwrap().len(), s.len());
    let v = &twin["verdicts"][0];
    let escaped = esc(v["sentence"].as_str().unwrap());
    assert!(
        html.contains(&escaped),
        "verdict sentence {escaped} not in the page"
    );

    // Failed cells with their causes; the run's identity.
    let failed: Vec<&Value> = s.iter().filter(|c| c["status"] == "failed").collect();
    assert_eq!(failed.len(), 6);
    assert!(html.contains("6 of 16 cells failed"));
    for f in &failed {
        assert!(html.contains(&esc(f["key"].as_str().unwrap())));
        assert!(f["cause"].as_str().unwrap().contains("deliberate panic"));
    }
    assert!(html.contains("deliberate panic from the faulty fixture"));
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    if let Some(commit) = m["git_commit"].as_str() {
        assert!(html.contains(commit));
    }
    assert!(html.contains("dlm-formal 0.1.0") && html.contains("dlm-fixture-faulty 0.1.0"));
    assert!(html.contains(&m["suite_hash"].as_str().unwrap()[..12]));

    // Inject markup into a model output's task fields and into a failure cause: both must
    // come out escaped after `report` regenerates the page.
    let first_unit = {
        let text = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
        let v: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        v["unit"].as_str().unwrap().to_string()
    };
    rewrite_jsonl(&dir.join("samples.jsonl"), |i, v| {
        if i == 0 {
            v["extra"] = serde_json::json!({"answer": "<script>alert(1)</script>"});
        }
    });
    rewrite_jsonl(&dir.join("cells.jsonl"), |_, v| {
        if v["status"] == "failed" {
            v["cause"] = Value::String(format!(
                "{} <script>alert(2)</script>",
                v["cause"].as_str().unwrap()
            ));
        }
    });
    let r = run(&["report", dir.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        !html.contains("<script"),
        "injected markup came out unescaped"
    );
    assert!(
        html.contains("&lt;script&gt;alert(1)"),
        "the sample's field is not shown escaped"
    );
    assert!(
        html.contains("&lt;script&gt;alert(2)"),
        "the cause is not shown escaped"
    );
    assert!(first_unit.len() == 16);
}
