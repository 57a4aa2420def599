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
            // TER is infinite in most cells of the sparse language: no nearly empty TER chart.
            let expected = usize::from(!(kind.starts_with("TER") && task == "bigram-ser"));
            assert_eq!(html.matches(&label).count(), expected, "{label}");
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
        html.contains("No TER plots: TER is infinite (samples with q(x) = 0) in 3 of the 3"),
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
    let escaped = common::html_escaped(v["sentence"].as_str().unwrap());
    assert!(
        html.contains(&escaped),
        "verdict sentence {escaped} not in the page"
    );
    // The summary opens the verdict: one sentence per task, the formal tasks judged on TER and
    // SER against their AR baseline (the oracle's left-to-right decoding).
    let headline = twin["headline"].as_array().expect("headline lines");
    assert_eq!(headline.len(), 2, "{headline:?}");
    let summary_at = html.find("class=\"headline\"").expect("the summary list");
    let table_at = html
        .find("<table class=\"full compact verdict-table")
        .unwrap();
    assert!(verdict_at < summary_at && summary_at < table_at);
    for (line, task) in headline.iter().zip(["bigram-ter", "bigram-ser"]) {
        let sentence = line["sentence"].as_str().unwrap();
        assert!(sentence.starts_with(&format!("{task}: ")), "{sentence}");
        assert!(
            sentence.contains("AR's TER") && sentence.contains("SER"),
            "{sentence}"
        );
        // In the page the series names are set as code, the rest as text.
        for piece in sentence[task.len()..].split('`') {
            assert!(
                html.contains(&common::html_escaped(piece)),
                "{piece} of {sentence}"
            );
        }
    }
    assert!(
        twin["no_ar_model"].is_null(),
        "the suite has an AR baseline"
    );

    // Failed cells with their causes; the run's identity.
    let failed: Vec<&Value> = s.iter().filter(|c| c["status"] == "failed").collect();
    assert_eq!(failed.len(), 6);
    assert!(html.contains("6 of 16 cells failed"));
    for f in &failed {
        assert!(html.contains(&common::html_escaped(f["key"].as_str().unwrap())));
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

/// A text task's verdict is about its headline metrics (arith: accuracy and step error rate, as
/// dlm-reasoning marks them), never TER or SER; a metric at 0% for AR and the sampler alike is
/// "no signal", not a match. Checked against the run's own summary.json.
#[test]
fn a_text_task_is_judged_on_its_headline_metrics_against_ar() {
    let out = scratch("report-text");
    let dir = out.join("run");
    let r = run(&[
        "run",
        "tests/suites/browser-text.yaml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let s = summary(&dir);
    let twin: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let verdicts = twin["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 1, "mdm · ddpm_cache on arith");
    let v = &verdicts[0];
    assert_eq!(v["kind"], "text");
    for field in [
        "baseline_ter",
        "baseline_ser",
        "ter_match_steps",
        "ser_match_steps",
    ] {
        assert!(v[field].is_null(), "{field} on a text task: {v}");
    }
    let ar = s
        .iter()
        .find(|c| c["key"] == v["baseline"])
        .expect("the AR baseline");
    let points: Vec<&Value> = s
        .iter()
        .filter(|c| c["model"] == "mdm" && c["sampler"] == "ddpm_cache" && c["status"] == "ok")
        .collect();
    assert_eq!(points.len(), 4);
    // The metrics judged are the ones the task marks as headline and some model cell has.
    let marked: Vec<&str> = ar["metrics"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, m)| m["declared"]["headline"] == true)
        .filter(|(name, _)| {
            points
                .iter()
                .chain([&ar])
                .any(|c| c["metrics"][name.as_str()]["value"].is_number())
        })
        .map(|(name, _)| name.as_str())
        .collect();
    let judged: Vec<&str> = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(!judged.is_empty());
    let mut sorted = judged.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, marked, "{v}");
    assert!(judged.contains(&"accuracy_strict"), "{judged:?}");
    for m in v["metrics"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        let value = |c: &Value| c["metrics"][name]["value"].as_f64();
        let both_zero = value(ar) == Some(0.0) && points.iter().all(|p| value(p) == Some(0.0));
        assert_eq!(m["no_signal"].is_string(), both_zero, "{name}: {m}");
        if both_zero {
            assert!(
                m["match_steps"].is_null(),
                "0% beside AR's 0% is no match: {m}"
            );
        }
    }
    // The page: a verdict table with the headline metrics as columns and no TER or SER.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let start = html.find("id=\"verdict\"").unwrap();
    let verdict = &html[start..start + html[start..].find("class=\"toc\"").unwrap()];
    assert!(verdict.contains("verdict-table text"), "{verdict}");
    assert!(verdict.contains("accuracy (strict"), "{verdict}");
    for foreign in [">TER<", ">SER<", "optimal"] {
        assert!(
            !verdict.contains(foreign),
            "{foreign} in a text task's verdict"
        );
    }
    let line = twin["headline"][0]["sentence"].as_str().unwrap();
    assert!(
        line.starts_with("arith: ") && !line.contains("TER"),
        "{line}"
    );
}
