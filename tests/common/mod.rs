//! Helpers shared by the integration tests: run the real `dlm-bench` binary, which loads the
//! real plugin libraries (built by the harness itself, in the debug profile to reuse this
//! test build's dependencies).
#![allow(dead_code)]

pub mod backend;
pub mod humaneval;
pub mod skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory under cargo's per-test temporary folder (inside the workspace, so suites
/// written there can name workspace plugin crates).
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dlm-bench"));
    cmd.current_dir(root())
        // The plugins read the repository's data/ (a test that wants another folder names it
        // in the suite), whatever data folder the developer's shell points at.
        .env_remove("DLM_BENCH_DATA")
        .env("DLM_BENCH_PLUGIN_PROFILE", "debug")
        .env("DLM_BENCH_LOG", "warn")
        // One cell at a time unless a test asks for more (`--jobs`): tests that kill a run
        // mid-way or read timings assume it.
        .env("DLM_BENCH_JOBS", "1")
        .env(
            "DLM_BENCH_CHECKPOINTS",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("checkpoints"),
        );
    cmd
}

pub fn run(args: &[&str]) -> Output {
    command().args(args).output().expect("dlm-bench starts")
}

pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn summary(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary is JSON")
}

pub fn cell<'a>(
    summary: &'a [serde_json::Value],
    task: &str,
    model: &str,
    sampler: Option<&str>,
    steps: Option<u64>,
) -> &'a serde_json::Value {
    summary
        .iter()
        .find(|c| {
            c["task"] == task
                && c["model"] == model
                && sampler.is_none_or(|s| c["sampler"] == s)
                && steps.is_none_or(|s| c["steps"] == s)
        })
        .unwrap_or_else(|| panic!("no cell {task}/{model}/{sampler:?}/{steps:?}"))
}

/// Summary fields that measure time: runs that should agree on everything else may differ here.
pub const TIMING_FIELDS: &[&str] = &[
    "wall_seconds",
    "tokens_per_second",
    "tokens_per_second_iqr",
    "tokens_per_cpu_second",
    "speedup",
    "timed_batches",
];

/// A summary without its timing fields.
pub fn without_timings(summary: &[serde_json::Value]) -> Vec<serde_json::Value> {
    summary
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if let Some(o) = c.as_object_mut() {
                for k in TIMING_FIELDS {
                    o.remove(*k);
                }
            }
            c
        })
        .collect()
}

/// A run's `samples.jsonl` rows, sorted by unit and sample index (cells finish in any order
/// under `--jobs`, and a merge writes them in suite order).
pub fn sorted_samples(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("samples.jsonl")).expect("samples.jsonl");
    let mut rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a samples.jsonl row is JSON"))
        .collect();
    rows.sort_by(|a, b| {
        (a["unit"].as_str(), a["index"].as_u64()).cmp(&(b["unit"].as_str(), b["index"].as_u64()))
    });
    rows
}

/// A run's `training.jsonl`: one line per model trained or reused.
pub fn training_lines(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("training.jsonl"))
        .expect("training.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a training.jsonl line is JSON"))
        .collect()
}

/// Text as the report's templates write it (minijinja's HTML auto-escaping), to find a
/// sample's text in a rendered page.
pub fn html_escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}
