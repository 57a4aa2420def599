//! `dlm-bench compare` on real runs: two runs of the same suite and seeds compare as unchanged
//! (exit 0); a run in which the fixture model was made worse on purpose (`DLM_FIXTURE_WORSE=1`,
//! same suite, same plugin version) is reported as regressed (exit 4) with paired CIs; edited
//! copies of a run show new failures, not-comparable cells and removed cells.
//!
//! Timing never decides a test: every comparison here passes `--timing-noise 1000`, so tokens/s
//! rows are within noise, or not judged at all when the machine was busy (tests/timing_noise.rs
//! checks the timing rules on synthetic runs).

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const SUITE: &str = "tests/suites/compare-degradable.yaml";

/// Three runs of the suite: `a` and `b` identical settings, `worse` with the degraded model.
fn runs() -> &'static (PathBuf, PathBuf, PathBuf) {
    static RUNS: OnceLock<(PathBuf, PathBuf, PathBuf)> = OnceLock::new();
    RUNS.get_or_init(|| {
        let out = scratch("compare-runs");
        let dirs = (out.join("a"), out.join("b"), out.join("worse"));
        for (dir, worse) in [(&dirs.0, false), (&dirs.1, false), (&dirs.2, true)] {
            let mut cmd = command();
            cmd.args(["run", SUITE, "--out", dir.to_str().unwrap()]);
            if worse {
                cmd.env("DLM_FIXTURE_WORSE", "1");
            } else {
                cmd.env_remove("DLM_FIXTURE_WORSE");
            }
            let r = cmd.output().unwrap();
            assert!(r.status.success(), "{}", text(&r));
        }
        dirs
    })
}

fn compare(base: &Path, new: &Path, extra: &[&str]) -> (std::process::Output, Value) {
    let json = std::env::temp_dir().join(format!(
        "dlm-compare-{}-{}.json",
        std::process::id(),
        new.file_name().unwrap().to_string_lossy()
    ));
    let mut args = vec![
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--timing-noise",
        "1000",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no JSON comparison\n{}", text(&out)));
    let _ = std::fs::remove_file(&json);
    (out, v)
}

fn rows<'a>(c: &'a Value, key_part: &str, metric: &str) -> Vec<&'a Value> {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["key"].as_str().unwrap().contains(key_part) && r["metric"] == metric)
        .collect()
}

#[test]
fn same_suite_and_seeds_compare_as_unchanged_and_exit_zero() {
    let (a, b, _) = runs();
    let out_dir = scratch("compare-same");
    let html = out_dir.join("same.html");
    let bmf = out_dir.join("same.bmf.json");
    let (out, c) = compare(
        a,
        b,
        &[
            "--html",
            html.to_str().unwrap(),
            "--bmf",
            bmf.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(c["regressions"], 0);
    let all = c["rows"].as_array().unwrap();
    assert!(all.len() >= 14 * 3, "{} rows", all.len());
    for r in all {
        assert!(
            ["identical", "within_noise", "not_judged"].contains(&r["status"].as_str().unwrap()),
            "{} {} is {}",
            r["key"],
            r["metric"],
            r["status"]
        );
        // Same seeds, same plugin: the samples are identical, so quality deltas are exactly 0.
        if ["TER", "SER", "NFE"].contains(&r["metric"].as_str().unwrap()) {
            assert_eq!(r["status"], "identical", "{} {}", r["key"], r["metric"]);
            assert_eq!(r["delta"], 0.0);
            assert!(r["method"].as_str().unwrap().starts_with("paired"));
        }
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("no regressions"));
    // HTML and its JSON twin next to it; BMF of the new run.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("No regressions."));
    assert!(!page.contains("<script"));
    assert!(
        out_dir.join("same.json").is_file(),
        "JSON twin next to the HTML"
    );
    let bmf: Value = serde_json::from_str(&std::fs::read_to_string(&bmf).unwrap()).unwrap();
    let summary = summary(b);
    for cell in summary.iter() {
        let key = cell["key"].as_str().unwrap();
        let m = &bmf[key];
        assert_eq!(m["ser"]["value"], cell["ser"], "{key}");
        assert_eq!(m["ser"]["lower_value"], cell["ser_ci"][0], "{key}");
        assert_eq!(m["ser"]["upper_value"], cell["ser_ci"][1], "{key}");
        if cell["ter"].is_number() {
            assert_eq!(m["ter"]["value"], cell["ter"], "{key}");
        }
    }
}

#[test]
fn a_deliberately_worse_model_is_reported_as_regressed_with_exit_code_4() {
    let (a, _, worse) = runs();
    let out_dir = scratch("compare-worse");
    let html = out_dir.join("worse.html");
    let (out, c) = compare(a, worse, &["--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert!(c["regressions"].as_u64().unwrap() >= 6);
    // The degraded model: SER (forbidden token now sampled) and TER (rare token) regress, with a
    // paired CI of the delta entirely above 0.
    for steps in ["ddpm_cache@2", "ddpm_cache@8", "left_to_right@8"] {
        let ser = rows(&c, &format!("iid-ser/degradable/{steps}/"), "SER");
        assert_eq!(ser.len(), 1);
        assert_eq!(ser[0]["status"], "regressed", "{}", ser[0]);
        assert_eq!(ser[0]["base"], 0.0);
        assert!(ser[0]["ci"][0].as_f64().unwrap() > 0.0);
        assert!(
            !ser[0]["flips"].as_array().unwrap().is_empty(),
            "flipped samples listed"
        );
        let ter = rows(&c, &format!("iid-ter/degradable/{steps}/"), "TER");
        assert_eq!(ter[0]["status"], "regressed", "{}", ter[0]);
        assert!(ter[0]["ci"][0].as_f64().unwrap() > 0.0);
        assert!(ter[0]["method"]
            .as_str()
            .unwrap()
            .starts_with("paired bootstrap"));
        // On the SER variant TER went from finite to infinite.
        let ter_ser = rows(&c, &format!("iid-ser/degradable/{steps}/"), "TER");
        assert_eq!(ter_ser[0]["status"], "regressed");
    }
    // The untouched model and the ground truth are unchanged.
    for r in c["rows"].as_array().unwrap() {
        let key = r["key"].as_str().unwrap();
        if (key.contains("/uniform/") || key.contains("/reference/"))
            && !r["metric"].as_str().unwrap().starts_with("tokens/")
        {
            assert_eq!(r["status"], "identical", "{key} {}", r["metric"]);
        }
    }
    // Sorted by severity: regressions first.
    assert_eq!(c["rows"][0]["status"], "regressed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("regressed") && stdout.contains("exit code 4"),
        "{stdout}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("chip regressed"));
    assert!(page.contains("Samples that left the language"));

    // --only-changed keeps only changes.
    let (out, c) = compare(a, worse, &["--only-changed"]);
    assert_eq!(out.status.code(), Some(4));
    for r in c["rows"].as_array().unwrap() {
        assert!(
            !["identical", "within_noise", "not_judged"].contains(&r["status"].as_str().unwrap()),
            "{r}"
        );
    }
    assert!(c["only_changed"].as_bool().unwrap());
}

fn copy_run(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for f in [
        "manifest.json",
        "cells.jsonl",
        "samples.jsonl",
        "summary.json",
    ] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

fn edit_cells(dir: &Path, edit: impl Fn(&mut Vec<Value>)) {
    let path = dir.join("cells.jsonl");
    let mut cells: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    edit(&mut cells);
    let text: String = cells
        .iter()
        .map(|c| serde_json::to_string(c).unwrap() + "\n")
        .collect();
    std::fs::write(path, text).unwrap();
}

#[test]
fn new_failures_version_changes_and_removed_cells_are_flagged() {
    let (a, b, _) = runs();
    let edited = scratch("compare-edited").join("b-edited");
    copy_run(b, &edited);
    let key_of = |c: &Value| c["key"].as_str().unwrap().to_string();
    let (mut failed_key, mut bumped_key) = (String::new(), String::new());
    edit_cells(&edited, |cells| {
        let models: Vec<usize> = (0..cells.len())
            .filter(|&i| cells[i]["cell"]["model"].is_object())
            .collect();
        // A cell that now fails.
        let c = &mut cells[models[0]];
        c["status"] = "failed".into();
        c["cause"] = "worker died: SIGSEGV <b>".into();
        // A cell whose model plugin version changed.
        cells[models[1]]["model_plugin"]["version"] = "9.9.9".into();
    });
    let cells_now: Vec<Value> = std::fs::read_to_string(edited.join("cells.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for c in &cells_now {
        if c["status"] == "failed" {
            failed_key = key_of(c);
        } else if c["model_plugin"]["version"] == "9.9.9" {
            bumped_key = key_of(c);
        }
    }
    // And one cell removed (the last one).
    let removed_key = key_of(cells_now.last().unwrap());
    edit_cells(&edited, |cells| {
        cells.pop();
    });

    let (out, c) = compare(a, &edited, &[]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "a new failure gates\n{}",
        text(&out)
    );
    let find = |key: &str| -> Vec<&Value> {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["key"] == key)
            .collect()
    };
    let f = find(&failed_key);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["status"], "new_failure");
    assert!(f[0]["note"].as_str().unwrap().contains("SIGSEGV"));
    let v = find(&bumped_key);
    assert!(v.len() >= 3);
    for r in v {
        assert_eq!(r["status"], "not_comparable", "{r}");
        assert!(r["note"].as_str().unwrap().contains("9.9.9"));
    }
    let r = find(&removed_key);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["status"], "removed");
    assert_eq!(
        c["rows"][0]["status"], "new_failure",
        "the most severe row comes first"
    );

    // And the other way round: the failure is "fixed", the removed cell "added".
    let (out, c) = compare(&edited, a, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let statuses: Vec<&str> = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert!(
        statuses.contains(&"fixed") && statuses.contains(&"added"),
        "{statuses:?}"
    );
}
