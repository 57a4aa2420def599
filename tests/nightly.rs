//! `nightly SUITE RUNS_DIR`: each night a new run directory, compared with the suite's previous
//! run (compare.html beside it) and a refreshed history; exit 4 on a regression.

mod common;
use common::*;

const SUITE: &str = "tests/suites/compare-degradable.yaml";

#[test]
fn nights_compare_with_the_previous_run_and_gate_on_regressions() {
    let runs = scratch("nightly").join("runs");
    let night = |worse: &str| {
        command()
            .args(["nightly", SUITE, runs.to_str().unwrap()])
            .env("DLM_FIXTURE_WORSE", worse)
            .output()
            .unwrap()
    };
    let first = night("0");
    assert!(first.status.success(), "{}", text(&first));
    assert!(String::from_utf8_lossy(&first.stdout).contains("nothing to compare"));
    // Run directories are named by the second; make sure the next one gets a new name.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let same = night("0");
    assert!(same.status.success(), "{}", text(&same));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let worse = night("1");
    assert_eq!(worse.status.code(), Some(4), "{}", text(&worse));
    let dirs: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("manifest.json").exists())
        .collect();
    assert_eq!(dirs.len(), 3);
    assert_eq!(
        dirs.iter()
            .filter(|d| d.path().join("compare.html").exists())
            .count(),
        2
    );
    let history: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(runs.join("history.json")).unwrap()).unwrap();
    assert_eq!(history["runs"].as_array().unwrap().len(), 3);
}
