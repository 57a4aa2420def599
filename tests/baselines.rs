//! Speedups and verdicts are measured against an explicit, order-independent AR baseline
//! (`metrics::resolve_baselines`): a model's own left-to-right cell, or the model the suite names
//! with `baseline:`. Swapping the models in the suite changes no baseline and no verdict, and the
//! report and `summary.json` say which cell each speedup used.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;

/// (baseline key, rule) per cell key, timings left out.
fn baselines(summary: &[Value]) -> BTreeMap<String, (Value, Value)> {
    summary
        .iter()
        .map(|c| {
            (
                c["key"].as_str().unwrap().to_string(),
                (c["speedup_baseline"].clone(), c["baseline_rule"].clone()),
            )
        })
        .collect()
}

#[test]
fn baselines_are_explicit_and_independent_of_model_order() {
    let out = scratch("baselines");
    let suite = std::fs::read_to_string(root().join("tests/suites/baselines.yaml")).unwrap();
    // The same suite with the two model lines swapped (the scratch folder is inside the
    // workspace, so the plugin crates resolve from there).
    let lines: Vec<&str> = suite.lines().collect();
    let oracle = lines
        .iter()
        .position(|l| l.contains("name: oracle"))
        .unwrap();
    let mut swapped: Vec<&str> = lines.clone();
    swapped.swap(oracle, oracle + 1);
    let swapped_path = out.join("baselines-swapped.yaml");
    std::fs::write(&swapped_path, swapped.join("\n")).unwrap();

    let mut summaries = Vec::new();
    for (name, path) in [
        ("a", "tests/suites/baselines.yaml"),
        ("b", swapped_path.to_str().unwrap()),
    ] {
        let dir = out.join(name);
        let r = run(&["run", path, "--out", dir.to_str().unwrap()]);
        assert!(r.status.success(), "{}", text(&r));
        summaries.push((dir.clone(), summary(&dir)));
    }

    let (dir_a, a) = &summaries[0];
    let (dir_b, b) = &summaries[1];
    assert_eq!(
        baselines(a),
        baselines(b),
        "model order must not change baselines"
    );

    let l2r = cell(a, "bigram-ser", "oracle", Some("left_to_right"), None);
    let own = cell(a, "bigram-ser", "oracle", Some("ddpm_cache"), Some(8));
    assert_eq!(own["speedup_baseline"], l2r["key"]);
    assert!(own["baseline_rule"]
        .as_str()
        .unwrap()
        .contains("own left-to-right"));
    assert!(own["speedup"].as_f64().is_some());
    let named = cell(a, "bigram-ser", "uniform", Some("ddpm_cache"), Some(1));
    assert_eq!(named["speedup_baseline"], l2r["key"]);
    assert!(named["baseline_rule"]
        .as_str()
        .unwrap()
        .contains("baseline: oracle"));
    // The AR cell itself has no speedup against anything.
    assert!(l2r["speedup"].is_null() && l2r["speedup_baseline"].is_null());

    // Quality figures are identical too (same seeds); timings are the only difference.
    assert_eq!(a.len(), b.len());
    for x in a {
        let y = b.iter().find(|c| c["key"] == x["key"]).expect("same cells");
        for f in ["ter", "ser", "nfe", "n", "unit", "speedup_baseline"] {
            assert_eq!(x[f], y[f], "{} {f}", x["key"]);
        }
    }

    // The verdicts name the same baseline cell in both runs, and the report shows it.
    let verdicts = |dir: &std::path::Path| -> Vec<(String, Value, Value)> {
        let twin: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        let mut v: Vec<(String, Value, Value)> = twin["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["series"].as_str().unwrap().to_string(),
                    v["baseline"].clone(),
                    v["match_steps"].clone(),
                )
            })
            .collect();
        v.sort_by(|x, y| x.0.cmp(&y.0));
        v
    };
    let (va, vb) = (verdicts(dir_a), verdicts(dir_b));
    assert_eq!(va, vb);
    assert_eq!(va.len(), 2);
    for (_, baseline, _) in &va {
        assert_eq!(*baseline, l2r["key"]);
    }
    let html = std::fs::read_to_string(dir_a.join("report.html")).unwrap();
    assert!(
        html.contains("oracle · left_to_right"),
        "the verdict table names the baseline"
    );
    assert!(html.contains("baseline: oracle"), "and why it was chosen");
    assert!(
        !html.contains("No AR baseline"),
        "every series has its baseline"
    );

    // The manifest records how the cells were timed, and the report says it in one line.
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir_a.join("manifest.json")).unwrap())
            .unwrap();
    let session = &manifest["sessions"][0];
    assert_eq!(manifest["sessions"].as_array().map(Vec::len), Some(1));
    let jobs = session["jobs"].as_u64().expect("jobs");
    assert!(
        jobs >= 1 && session["cells"] == manifest["cells_total"],
        "{session}"
    );
    assert!(
        session["cores"].as_u64().is_some_and(|c| c >= 1),
        "{session}"
    );
    if std::path::Path::new("/proc/loadavg").exists() {
        assert!(
            session["load_start"].as_f64().is_some_and(|l| l >= 0.0),
            "{session}"
        );
        assert!(
            session["load_end"].as_f64().is_some_and(|l| l >= 0.0),
            "{session}"
        );
    }
    assert!(
        html.contains(&format!("ran with --jobs {jobs} on ")),
        "the timing line"
    );
    assert_eq!(
        html.contains("Timings shared cores"),
        jobs > 1,
        "the speed caveat appears exactly when cells ran several at a time"
    );

    // Without the oracle's cells, `uniform`'s named baseline is missing: a visible warning in
    // the report and on stderr, not a quiet "none (optimum)".
    let filtered = out.join("filtered");
    let r = run(&[
        "run",
        "tests/suites/baselines.yaml",
        "--models",
        "uniform",
        "--out",
        filtered.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(
        stderr.contains("warning: bigram-ser: 2 diffusion cell(s) have no AR baseline")
            && stderr.contains("--models uniform"),
        "{stderr}"
    );
    let twin: Value =
        serde_json::from_str(&std::fs::read_to_string(filtered.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(twin["baseline_warnings"][0]["task"], "bigram-ser", "{twin}");
    let html = std::fs::read_to_string(filtered.join("report.html")).unwrap();
    assert!(
        html.contains("No AR baseline") && html.contains("none — see the warning above"),
        "the verdict flags the missing baseline"
    );
}
