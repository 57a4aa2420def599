//! `dlm-bench history`: three real runs of one suite (the last with the fixture model made worse
//! and, in its manifest, a different commit) give one page of sparklines per cell and metric,
//! with the change marked at the third run and nowhere else in quality. (That history's
//! changes are exactly `compare`'s is checked on synthetic runs in tests/timing_noise.rs.)

mod common;
use common::*;
use serde_json::Value;

#[test]
fn history_marks_the_run_where_quality_changed_and_the_commit_change() {
    let out = scratch("history");
    let runs = out.join("nightly");
    for (name, worse) in [
        ("2026-01-01", false),
        ("2026-01-02", false),
        ("2026-01-03", true),
    ] {
        let dir = runs.join(name);
        let mut cmd = command();
        cmd.args([
            "run",
            "tests/suites/compare-degradable.yaml",
            "--out",
            dir.to_str().unwrap(),
        ]);
        if worse {
            cmd.env("DLM_FIXTURE_WORSE", "1");
        } else {
            cmd.env_remove("DLM_FIXTURE_WORSE");
        }
        let r = cmd.output().unwrap();
        assert!(r.status.success(), "{}", text(&r));
        if worse {
            // Pretend the nightly job built a new commit.
            let path = dir.join("manifest.json");
            let mut m: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            m["git_commit"] = "feedfacefeedfacefeedfacefeedfacefeedface".into();
            std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
        }
    }
    // Something that is not a run is ignored.
    std::fs::create_dir_all(runs.join("not-a-run")).unwrap();

    let html = out.join("history.html");
    let r = run(&[
        "history",
        runs.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let h: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("history.json")).unwrap()).unwrap();
    let runs_v = h["runs"].as_array().unwrap();
    assert_eq!(runs_v.len(), 3);
    let started: Vec<&str> = runs_v
        .iter()
        .map(|r| r["started_at"].as_str().unwrap())
        .collect();
    assert!(
        started.windows(2).all(|w| w[0] <= w[1]),
        "sorted by start time"
    );
    assert!(!runs_v[1]["commit_changed"].as_bool().unwrap());
    assert!(runs_v[2]["commit_changed"].as_bool().unwrap());

    // Quality changes: only in run 3, only for the degraded model.
    let changes = h["changes"].as_array().unwrap();
    let quality: Vec<&Value> = changes
        .iter()
        .filter(|c| c["metric"] == "SER" || c["metric"] == "TER")
        .collect();
    assert!(!quality.is_empty());
    for c in &quality {
        assert_eq!(c["run"], 2, "{c}");
        assert!(c["key"].as_str().unwrap().contains("/degradable/"), "{c}");
    }
    for steps in ["ddpm_cache@2", "ddpm_cache@8", "left_to_right@8"] {
        let key = format!("iid-ser/degradable/{steps}/L8/seed1");
        let ser = quality
            .iter()
            .find(|c| c["key"] == key.as_str() && c["metric"] == "SER")
            .unwrap_or_else(|| panic!("no SER change for {key}"));
        // Judged as `compare` judges it: regressed, its paired CI above 0.
        assert_eq!(ser["status"], "regressed", "{ser}");
        assert_eq!(ser["base"], 1, "compared with the run before");
        let key = format!("iid-ter/degradable/{steps}/L8/seed1");
        assert!(
            quality
                .iter()
                .any(|c| c["key"] == key.as_str() && c["metric"] == "TER"),
            "no TER change for {key}"
        );
    }

    // The page: one sparkline per cell and metric that has values, the change marked.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("<script"));
    let cells = h["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cells"].as_array().unwrap().len())
        .sum::<usize>();
    assert_eq!(cells, 14);
    assert!(page.matches("class=\"spark\"").count() >= 14 * 3);
    assert!(page.contains("chip regressed"));
    assert!(page.contains("new commit"));
    assert!(page.contains("#d62728"), "changed points are drawn in red");
    // Red means a change and nothing else: no sparkline is drawn in a red or pink series colour.
    for red in ["#e15759", "#ff9da7", "#f28e2b\" stroke-width=\"1.5\""] {
        assert!(!page.contains(red), "a sparkline uses {red}");
    }
}
