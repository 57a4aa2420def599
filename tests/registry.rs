//! A metric declared by a task plugin (the fixture's `iid` task declares `has_zero`, a rate, and
//! `mean_token`, a mean, in its description) reaches `summary.json`, the report, `compare` and
//! `history` through the metric registry, with no harness code naming it.

mod common;
use common::*;
use serde_json::Value;

const SUITE: &str = "tests/suites/compare-degradable.yaml";

#[test]
fn a_task_declared_metric_is_everywhere_without_harness_changes() {
    let out = scratch("registry");
    let runs = out.join("runs");
    let (good, worse) = (runs.join("a-good"), runs.join("b-worse"));
    for (dir, env) in [(&good, "0"), (&worse, "1")] {
        let r = command()
            .args(["run", SUITE, "--out", dir.to_str().unwrap()])
            .env("DLM_FIXTURE_WORSE", env)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", text(&r));
    }

    // summary.json: the figure, its CI and its declaration, per cell.
    let s = summary(&good);
    let c = cell(&s, "iid-ser", "degradable", Some("ddpm_cache"), Some(8));
    let m = &c["metrics"]["has_zero"];
    // The degradable model samples iid-ser exactly: token 0 never appears.
    assert_eq!(m["value"], 0.0, "{c}");
    assert_eq!(m["n"], 200);
    assert_eq!(m["declared"]["kind"], "rate");
    let ci = m["ci"].as_array().unwrap();
    assert_eq!(ci[0], 0.0);
    assert!(ci[1].as_f64().unwrap() > 0.0 && ci[1].as_f64().unwrap() < 0.03);
    let mean = &c["metrics"]["mean_token"];
    let (lo, hi) = (
        mean["ci"][0].as_f64().unwrap(),
        mean["ci"][1].as_f64().unwrap(),
    );
    let v = mean["value"].as_f64().unwrap();
    // Tokens 1..3 uniformly: mean 2.
    assert!(lo < v && v < hi && (v - 2.0).abs() < 0.1, "{mean}");
    // The ground-truth row has it too (the task scores every sample the same way).
    let r = cell(&s, "iid-ser", "reference", None, None);
    assert_eq!(r["metrics"]["has_zero"]["value"], 0.0);

    // The report: a column per declared metric, with values.
    let html = std::fs::read_to_string(good.join("report.html")).unwrap();
    assert!(html.contains(">share with token 0</th>"), "report column");
    assert!(html.contains(">mean token id</th>"), "report column");

    // compare: the declared rate regresses with the deliberately worse model (uniform tokens put
    // token 0 in most samples), paired per sample like SER.
    let json = out.join("cmp.json");
    let r = run(&[
        "compare",
        good.to_str().unwrap(),
        worse.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--timing-noise",
        "1000",
    ]);
    assert_eq!(r.status.code(), Some(4), "{}", text(&r));
    let twin: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = twin["rows"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| {
            r["metric"] == "share with token 0"
                && r["key"]
                    .as_str()
                    .unwrap()
                    .starts_with("iid-ser/degradable/ddpm_cache@8")
        })
        .expect("a compare row for the declared metric");
    assert_eq!(row["status"], "regressed", "{row}");
    assert_eq!(row["paired"], true);
    // Unchanged cells compare as identical on it.
    assert!(rows
        .iter()
        .filter(|r| r["metric"] == "share with token 0" && r["model"] == "uniform")
        .all(|r| r["status"] == "identical"));
    // The informational mean is reported, never gated.
    assert!(rows
        .iter()
        .filter(|r| r["metric"] == "mean token id")
        .all(|r| r["status"] != "regressed" && r["status"] != "improved"));

    // history: a sparkline and a change point for the declared rate.
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
    let metrics: Vec<&str> = h["tasks"][0]["cells"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert!(metrics.contains(&"share with token 0"), "{metrics:?}");
    assert!(h["changes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["metric"] == "share with token 0"));
}
