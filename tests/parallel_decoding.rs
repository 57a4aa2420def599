//! Parallel-decoding tasks (dlm-parallel, loaded as users load it): each task's closed-form
//! accuracy of the `random` sampler with the exact oracle against the sampled accuracy at
//! k = 1, 2, 4, 8 tokens per step, and the report carries the closed forms.
//!
//! Where nothing is random (copy, reverse, sort, and one token per step on every task) the
//! closed form is 1 and every sample must be right. Elsewhere (replace_one, shuffle, line at
//! k = 2, 4, 8: nine cells) the closed form must lie in the sampled accuracy's 95% CI, taken
//! simultaneously over the nine (Wilson intervals at the Bonferroni level 1 − 0.05/9): nine
//! separate 95% intervals would miss one of nine true values with probability 1 − 0.95⁹ ≈ 37%,
//! and a test that fails by chance that often checks nothing. The samples come from fixed
//! seeds, so the outcome is reproducible.

mod common;
use common::*;
use dlm_bench::stats::normal_quantile;

const TASKS: [&str; 6] = ["copy", "reverse", "sort", "replace_one", "shuffle", "line"];
const SAMPLES: f64 = 2000.0;

/// Wilson's score interval for `p_hat` of `n` samples at normal quantile `z`.
fn wilson(p_hat: f64, n: f64, z: f64) -> (f64, f64) {
    let z2 = z * z;
    let centre = (p_hat + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p_hat * (1.0 - p_hat) / n + z2 / (4.0 * n * n)).sqrt();
    (centre - half, centre + half)
}

#[test]
fn each_closed_form_is_within_the_oracles_95_percent_ci_at_every_k() {
    let out = scratch("parallel_decoding");
    let r = run(&[
        "run",
        "tests/suites/parallel-decoding.yaml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let cells = summary(&out);
    let descriptions = descriptions(&out);
    let random_cells = 9.0;
    let z = normal_quantile(1.0 - 0.05 / (2.0 * random_cells));
    let (mut exact, mut random, mut misses, mut table) = (0, 0, Vec::new(), Vec::new());
    for task in TASKS {
        let closed = &descriptions[task]["closed_forms"][0];
        assert_eq!(closed["metric"], "correct");
        assert_eq!(closed["sampler"], "random");
        for k in [1u64, 2, 4, 8] {
            let steps = 8 / k;
            let c = cell(&cells, task, "oracle", Some("random"), Some(steps));
            let metric = &c["metrics"]["correct"];
            let value = metric["value"].as_f64().unwrap();
            assert_eq!(metric["n"].as_f64(), Some(SAMPLES), "{task} k={k}");
            let expected = closed["by_steps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["steps"] == steps)
                .and_then(|p| p["value"].as_f64())
                .unwrap();
            if k == 1 || matches!(task, "copy" | "reverse" | "sort") {
                assert_eq!(expected, 1.0, "{task} k={k}: the closed form");
                assert_eq!(value, 1.0, "{task} k={k}: every sample must be right");
                exact += 1;
                continue;
            }
            assert!(expected < 1.0, "{task} k={k}: {expected}");
            let (lo, hi) = wilson(value, SAMPLES, z);
            let harness_ci = &metric["ci"];
            table.push(format!(
                "{task} k={k}: closed form {expected:.4}, sampled {value:.4}, 95% CI [{:.4}, {:.4}], simultaneous [{lo:.4}, {hi:.4}]",
                harness_ci[0].as_f64().unwrap(),
                harness_ci[1].as_f64().unwrap()
            ));
            random += 1;
            if !(lo <= expected && expected <= hi) {
                misses.push(table.last().unwrap().clone());
            }
        }
    }
    assert_eq!((exact, random), (15, 9));
    println!("{}", table.join("\n"));
    assert!(
        misses.is_empty(),
        "outside the simultaneous 95% CI:\n{}",
        misses.join("\n")
    );
    // The report shows the closed forms as the reference for these tasks.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let sections = report["closed_forms"]
        .as_array()
        .expect("report.json: closed_forms");
    assert_eq!(sections.len(), TASKS.len());
    for s in sections {
        assert_eq!(s["rows"].as_array().map(Vec::len), Some(4), "{s}");
        assert_eq!(s["compared"], 4, "{s}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Closed-form accuracy — shuffle"),
        "report.html has no closed-form section"
    );
}

/// Each task's description as its cells recorded it, by task name.
fn descriptions(dir: &std::path::Path) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    for line in std::fs::read_to_string(dir.join("cells.jsonl"))
        .unwrap()
        .lines()
    {
        let c: serde_json::Value = serde_json::from_str(line).unwrap();
        let task = c["cell"]["task"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        out.entry(task).or_insert(c["task_description"].clone());
    }
    out
}
