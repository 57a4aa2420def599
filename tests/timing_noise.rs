//! `compare` must not cry wolf between identical reruns, and must catch a real slowdown.
//! Ten runs of one suite compared pairwise flag nothing (quality is "identical", timings within
//! noise); a run whose model is deliberately 30% slower per network call
//! (`DLM_FIXTURE_SLOWDOWN=1.3`) is flagged as a tokens/s regression against every one of them.
//!
//! The fixture's timing is synthetic (2 ms per call with a ±2% jitter that differs between
//! runs), so the outcome never depends on how loaded the machine is: the test checks the
//! comparison rule. The CPU-clock half of the rule is unit-tested in `compare.rs`.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SUITE: &str = "tests/suites/timing-noise.yaml";

fn one_run(dir: &Path, slowdown: Option<&str>) {
    let mut cmd = command();
    cmd.args(["run", SUITE, "--out", dir.to_str().unwrap()]);
    match slowdown {
        Some(f) => cmd.env("DLM_FIXTURE_SLOWDOWN", f),
        None => cmd.env_remove("DLM_FIXTURE_SLOWDOWN"),
    };
    let r = cmd.output().unwrap();
    assert!(r.status.success(), "{}", text(&r));
}

/// `compare BASE NEW` with the default noise floor: (exit code, rows).
fn compare(base: &Path, new: &Path, json: &Path) -> (Option<i32>, Vec<Value>) {
    let r = run(&[
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let twin: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (r.status.code(), twin["rows"].as_array().unwrap().clone())
}

#[test]
fn identical_reruns_flag_nothing_and_a_30_percent_slowdown_is_always_flagged() {
    let out = scratch("timing-noise");
    let runs: Vec<PathBuf> = (0..10).map(|i| out.join(format!("run{i}"))).collect();
    for dir in &runs {
        one_run(dir, None);
    }
    let slow = out.join("slow");
    one_run(&slow, Some("1.3"));
    let json = out.join("cmp.json");

    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            let (code, rows) = compare(a, b, &json);
            for r in &rows {
                let status = r["status"].as_str().unwrap();
                if r["metric"].as_str().unwrap().starts_with("tokens/") {
                    assert!(
                        status == "within_noise" || status == "changed_not_significant",
                        "{} vs {}: {} tokens/s {status} ({} → {}, {})",
                        a.display(),
                        b.display(),
                        r["key"],
                        r["base"],
                        r["new"],
                        r["method"]
                    );
                } else {
                    assert_eq!(status, "identical", "{} {}", r["key"], r["metric"]);
                }
            }
            assert_eq!(code, Some(0), "{} vs {}", a.display(), b.display());
        }
    }
    for a in &runs {
        let (code, rows) = compare(a, &slow, &json);
        assert_eq!(
            code,
            Some(4),
            "the slowdown against {} must gate",
            a.display()
        );
        let timing = |metric: &str| -> Vec<&Value> {
            rows.iter().filter(|r| r["metric"] == metric).collect()
        };
        // Its device is not the CPU: judged on the wall clock alone.
        assert!(timing("tokens/CPU-s").is_empty());
        let found = timing("tokens/s");
        assert_eq!(found.len(), 2);
        for r in found {
            assert_eq!(r["status"], "regressed", "{} {}", r["key"], r["method"]);
            let rel = r["rel"].as_f64().unwrap();
            // 1/1.3 − 1 = −23%, give or take the ±2% jitter.
            assert!((-0.27..-0.19).contains(&rel), "{}: {rel}", r["key"]);
        }
        // The samples themselves did not change.
        assert!(rows
            .iter()
            .filter(|r| !r["metric"].as_str().unwrap().starts_with("tokens/"))
            .all(|r| r["status"] == "identical"));
    }
}
