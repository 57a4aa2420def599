//! Malformed suites produce an error naming file, line and column — never a panic, never a
//! half-created run directory.

mod common;
use common::*;

const BASE: &str = "name: s
samples: 4
lengths: [8]
tasks:
  - name: bigram
    plugin: dlm-formal
    task: ngram
    config: {order: 2}
models:
  - name: oracle
    plugin: dlm-formal
    model: oracle
samplers:
  - sampler: ddpm_cache
    steps: [1, 2]
";

/// Run a suite with `from` replaced by `to`; expect exit code 1 and return stderr.
fn error_for(name: &str, from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    let dir = scratch(&format!("suite-errors-{name}"));
    let suite = dir.join("s.yaml");
    std::fs::write(&suite, BASE.replace(from, to)).unwrap();
    let out_dir = dir.join("run");
    let r = run(&[
        "run",
        suite.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        r.status.code(),
        Some(1),
        "{name}: expected a clean error exit\n{}",
        text(&r)
    );
    assert!(
        !out_dir.exists(),
        "{name}: no run directory for a bad suite"
    );
    let stderr = String::from_utf8_lossy(&r.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    stderr
}

fn assert_located(stderr: &str, line: usize, col: usize, needle: &str) {
    let at = format!("s.yaml:{line}:{col}: ");
    assert!(stderr.contains(&at), "expected location {at} in:\n{stderr}");
    assert!(stderr.contains(needle), "expected `{needle}` in:\n{stderr}");
}

#[test]
fn zero_steps() {
    assert_located(
        &error_for("zero-steps", "steps: [1, 2]", "steps: [1, 0]"),
        15,
        16,
        "steps must be at least 1",
    );
}

#[test]
fn unknown_plugin_crate_suggests_the_right_one() {
    let e = error_for(
        "unknown-plugin",
        "    plugin: dlm-formal\n    model",
        "    plugin: dlm-formall\n    model",
    );
    assert_located(&e, 11, 13, "did you mean `dlm-formal`?");
}

#[test]
fn unknown_task_component_suggests() {
    assert_located(
        &error_for("unknown-task", "task: ngram", "task: ngrm"),
        7,
        11,
        "did you mean `ngram`?",
    );
}

#[test]
fn unsupported_sampler_suggests() {
    assert_located(
        &error_for("bad-sampler", "sampler: ddpm_cache", "sampler: ddpm_cahce"),
        14,
        14,
        "did you mean `ddpm_cache`?",
    );
}

#[test]
fn syntax_error_is_located() {
    let e = error_for("syntax", "lengths: [8]", "lengths: [8");
    assert_located(&e, 4, 6, "invalid YAML");
    let e = error_for("duplicate", "samples: 4", "samples: 4\nsamples: 5");
    assert_located(&e, 3, 1, "duplicate key `samples`");
}

#[test]
fn wrong_type_and_unknown_key_are_located() {
    assert_located(
        &error_for("type", "samples: 4", "samples: four"),
        2,
        10,
        "invalid digit",
    );
    assert_located(
        &error_for("unknown-key", "samples: 4", "sample: 4"),
        2,
        1,
        "sample",
    );
}

#[test]
fn missing_plugin_library_path() {
    assert_located(
        &error_for(
            "missing-lib",
            "    plugin: dlm-formal\n    model",
            "    plugin: ./nowhere/libx.so\n    model",
        ),
        11,
        13,
        "does not exist",
    );
}

#[test]
fn missing_suite_file() {
    let r = run(&["run", "suites/does-not-exist.yaml"]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("cannot read suite file"),
        "{}",
        text(&r)
    );
}
