//! `compare` must not cry wolf between reruns of unchanged code, must still catch a real
//! slowdown, and `history` must say exactly what `compare` says.
//!
//! The run directories here are synthetic: written directly (manifest, cells, samples), with the
//! same samples in every run and batch timings of our choosing, and with `manifest.json`'s
//! `sessions` saying how the cells were timed (alone, or two at a time on a loaded machine). So
//! the outcome never depends on how busy the test machine is, the test costs no model run, and
//! every expected count follows from how the runs were built.

mod common;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Model cells per run; each has a wall-clock and a CPU-clock timing row.
const CELLS: usize = 12;
const SAMPLES: usize = 40;
const BATCH: usize = 4;
const LENGTH: usize = 8;
/// Wall (and CPU) seconds of one batch at nominal speed.
const BATCH_SECONDS: f64 = 0.01;

/// How a synthetic run's cells were timed, as its manifest records it.
#[derive(Clone, Copy)]
enum Machine {
    /// `--jobs 1` on 2 cores, load 0.2 → 1.1: each cell alone.
    Alone,
    /// `--jobs 2` on 2 cores with another job keeping both busy: load 3.1 → 3.4.
    Loaded,
    /// A run written before sessions were recorded (no `sessions` in the manifest).
    Unrecorded,
}

/// One synthetic run: when it started, how it was timed, how its timings came out.
struct Synthetic {
    started_at: &'static str,
    machine: Machine,
    /// Varies the ±2% batch-to-batch jitter between runs.
    jitter_seed: u64,
    /// Wall and CPU seconds of cell `c`'s batches relative to nominal.
    slowdown: fn(usize) -> (f64, f64),
    /// This many samples of cell 0 leave the language (a real quality regression).
    out_of_language: usize,
}

fn unchanged(_: usize) -> (f64, f64) {
    (1.0, 1.0)
}

/// What a shared machine does to timings: every cell off by a factor of 2 or more, consistently
/// across its batches (so that, judged, each would be significant), on both clocks.
fn contended(c: usize) -> (f64, f64) {
    if c.is_multiple_of(2) {
        (2.3, 2.3)
    } else {
        (0.45, 0.45)
    }
}

fn slower_by_30_percent(_: usize) -> (f64, f64) {
    (1.3, 1.3)
}

fn session(machine: Machine, started_at: &str) -> Option<Value> {
    let (jobs, load_start, load_end) = match machine {
        Machine::Alone => (1, 0.2, 1.1),
        Machine::Loaded => (2, 3.1, 3.4),
        Machine::Unrecorded => return None,
    };
    Some(json!({
        "started_at": started_at, "finished_at": started_at, "host": "synthetic",
        "jobs": jobs, "cells": CELLS, "cpu_model": "Synthetic CPU", "cores": 2,
        "load_start": load_start, "load_end": load_end,
    }))
}

/// Sample `i` of cell `c`: the same in every run (same seeds, same code).
fn sample(c: usize, i: usize, in_language: bool) -> Value {
    let tokens: Vec<usize> = (0..LENGTH).map(|k| (c + 3 * i + 5 * k) % 4).collect();
    json!({
        "unit": format!("unit{c:02}"), "key": key(c), "index": i, "tokens": tokens,
        "log_q": -(LENGTH as f64) * 4f64.ln(), "in_support": in_language,
        "first_invalid": if in_language { Value::Null } else { json!(0) },
        "invalid_transitions": u8::from(!in_language), "extra": {}, "nfe": 2 + c,
        "generated_tokens": LENGTH,
    })
}

fn key(c: usize) -> String {
    format!("iid/model/ddpm_cache@{}/L{LENGTH}/seed1", 2 + c)
}

fn cell(run: &Synthetic, c: usize) -> Value {
    let (wall, cpu) = (run.slowdown)(c);
    let batches: Vec<Value> = (0..SAMPLES / BATCH)
        .map(|b| {
            // ±2% in steps of 0.5%, different per run, cell and batch.
            let jitter = 1.0
                + 0.005 * ((run.jitter_seed * 7 + c as u64 * 31 + b as u64 * 17) % 9) as f64
                - 0.02;
            json!({
                "first_index": b * BATCH, "size": BATCH, "nfe": 2 + c,
                "wall_seconds": BATCH_SECONDS * wall * jitter,
                "cpu_seconds": BATCH_SECONDS * cpu * jitter,
            })
        })
        .collect();
    let plugin = json!({"name": "synthetic", "version": "1.0.0"});
    json!({
        "unit": format!("unit{c:02}"), "key": key(c),
        "cell": {
            "task": {"name": "iid", "plugin": {"crate": "synthetic"}, "component": "iid", "config": {}},
            "model": {"name": "model", "plugin": {"crate": "synthetic"}, "component": "m", "config": {}},
            "sampler": {"name": "ddpm_cache", "steps": 2 + c, "schedule": null, "params": {}},
            "length": LENGTH, "seed": 1, "n": SAMPLES, "batch_size": BATCH, "timeout_seconds": 60.0,
        },
        "status": "ok", "cause": null,
        "task_description": {
            "label": "synthetic i.i.d. tokens", "vocab_size": 4, "mask_id": 4, "length": LENGTH,
            "entropy_nats": LENGTH as f64 * 4f64.ln(), "optimal_ter": 4.0, "support_log10_density": 0.0,
        },
        "task_plugin": plugin, "model_plugin": plugin, "batches": batches, "device": "cpu",
        "worker_seconds": 1.0, "finished_at": run.started_at,
    })
}

/// Write `run` as a run directory under `root`.
fn write_run(root: &Path, name: &str, run: &Synthetic) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut manifest = json!({
        "dlm_bench_version": "0.0.0", "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "git_dirty": false, "suite_name": "synthetic", "suite_path": "synthetic.yaml",
        "suite_hash": "0000000000000000", "suite_text": "", "plugins": [], "device": "cpu",
        "toolchain": "rustc", "host": "synthetic", "cpus": 2, "seeds": [1],
        "cells_total": CELLS, "started_at": run.started_at, "finished_at": run.started_at,
        "command": ["dlm-bench", "run"],
    });
    if let Some(s) = session(run.machine, run.started_at) {
        manifest["sessions"] = json!([s]);
    }
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    let (mut cells, mut samples) = (String::new(), String::new());
    for c in 0..CELLS {
        for i in 0..SAMPLES {
            let in_language = !(c == 0 && i < run.out_of_language);
            samples += &(sample(c, i, in_language).to_string() + "\n");
        }
        cells += &(cell(run, c).to_string() + "\n");
    }
    std::fs::write(dir.join("samples.jsonl"), samples).unwrap();
    std::fs::write(dir.join("cells.jsonl"), cells).unwrap();
    dir
}

fn run_alone(started_at: &'static str, jitter_seed: u64) -> Synthetic {
    Synthetic {
        started_at,
        machine: Machine::Alone,
        jitter_seed,
        slowdown: unchanged,
        out_of_language: 0,
    }
}

/// `compare BASE NEW` with default options: (exit code, stdout, JSON twin).
fn compare(base: &Path, new: &Path) -> (Option<i32>, String, Value) {
    let json = new.with_extension("cmp.json");
    let out = run(&[
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let twin: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no comparison\n{}", text(&out)));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), stdout, twin)
}

fn rows_with(c: &Value, pick: impl Fn(&Value) -> bool) -> Vec<&Value> {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| pick(r))
        .collect()
}

fn is_timing(r: &Value) -> bool {
    r["metric"] == "tokens/s" || r["metric"] == "tokens/CPU-s"
}

fn count(c: &Value, status: &str) -> usize {
    rows_with(c, |r| r["status"] == status).len()
}

/// The largest |relative difference| among `rows`, as the summary line prints it.
fn largest_percent(rows: &[&Value]) -> String {
    let largest = rows
        .iter()
        .map(|r| r["rel"].as_f64().unwrap().abs())
        .fold(0.0, f64::max);
    format!("(largest ±{:.0}%)", 100.0 * largest)
}

#[test]
fn a_rerun_on_a_loaded_machine_reports_no_timing_change_and_says_why_in_one_line() {
    let root = scratch("timing-noise-loaded");
    let quiet = write_run(&root, "quiet", &run_alone("2026-01-01T02:00:00Z", 1));
    let contended_run = Synthetic {
        started_at: "2026-01-02T02:00:00Z",
        machine: Machine::Loaded,
        jitter_seed: 2,
        slowdown: contended,
        out_of_language: 0,
    };
    let loaded = write_run(&root, "loaded", &contended_run);
    let (code, stdout, c) = compare(&quiet, &loaded);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(c["regressions"], 0);
    assert_eq!(
        count(&c, "regressed") + count(&c, "improved"),
        0,
        "{stdout}"
    );
    let timing = rows_with(&c, is_timing);
    assert_eq!(timing.len(), 2 * CELLS);
    assert!(
        timing.iter().all(|r| r["status"] == "not_judged"),
        "{stdout}"
    );
    // Every quality row is compared as usual: the same samples, so identical.
    let quality = rows_with(&c, |r| !is_timing(r));
    assert!(!quality.is_empty());
    assert!(quality.iter().all(|r| r["status"] == "identical"));
    // One line says why, with the figures of the run that shared its cores.
    let t = &c["timing"];
    assert_eq!(t["judged"], false);
    assert_eq!(t["not_judged"], 2 * CELLS);
    let line = t["line"].as_str().unwrap();
    assert!(
        line.starts_with(
            "timings not compared: the new run ran 2 cells at a time (load 3.1 → 3.4 on 2 cores)"
        ) && line.contains(&format!(
            "{} timing rows not judged {}",
            2 * CELLS,
            largest_percent(&timing)
        )) && line.ends_with("quality rows compared as usual"),
        "{line}"
    );
    // The terminal shows that line once and no timing row; so does the page.
    assert_eq!(
        stdout.matches("timings not compared").count(),
        1,
        "{stdout}"
    );
    assert!(!stdout.contains("tokens/s"), "{stdout}");
    let html = root.join("loaded.html");
    let r = run(&[
        "compare",
        quiet.to_str().unwrap(),
        loaded.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let page = std::fs::read_to_string(&html).unwrap();
    let changes =
        &page[page.find("id=\"changes\"").unwrap()..page.find("<summary>All rows").unwrap()];
    assert!(changes.contains("Changes (0)") && !changes.contains("tokens/s"));
    assert_eq!(page.matches("timings not compared: the new run").count(), 1);

    // The control: the very same timings, recorded as taken alone, are judged — each cell
    // regressed or improved on both clocks — so it is the record of the machine that decided.
    let alone = write_run(
        &root,
        "same-timings-alone",
        &Synthetic {
            machine: Machine::Alone,
            ..contended_run
        },
    );
    let (code, _, c) = compare(&quiet, &alone);
    assert_eq!(code, Some(4));
    assert_eq!(
        count(&c, "regressed"),
        CELLS,
        "the slower half, on both clocks"
    );
    assert_eq!(
        count(&c, "improved"),
        CELLS,
        "the faster half, on both clocks"
    );
    assert_eq!(c["timing"]["judged"], true);
}

#[test]
fn quiet_reruns_sum_their_noise_in_one_line_and_a_real_slowdown_still_regresses() {
    let root = scratch("timing-noise-quiet");
    let a = write_run(&root, "a", &run_alone("2026-01-01T02:00:00Z", 1));
    let b = write_run(&root, "b", &run_alone("2026-01-02T02:00:00Z", 2));
    let (code, stdout, c) = compare(&a, &b);
    assert_eq!(code, Some(0), "{stdout}");
    let timing = rows_with(&c, is_timing);
    assert_eq!(timing.len(), 2 * CELLS);
    assert!(
        timing.iter().all(|r| r["status"] == "within_noise"),
        "{stdout}"
    );
    let line = c["timing"]["line"].as_str().unwrap();
    assert_eq!(
        line,
        format!(
            "{} timing rows within noise {}",
            2 * CELLS,
            largest_percent(&timing)
        )
    );
    assert!(stdout.contains(&format!("timing: {line}")), "{stdout}");
    assert!(
        !stdout.contains("tokens/s"),
        "no timing row listed\n{stdout}"
    );

    // 30% more time per batch on both clocks, timed alone: every timing row regresses.
    let slow = write_run(
        &root,
        "slow",
        &Synthetic {
            slowdown: slower_by_30_percent,
            ..run_alone("2026-01-03T02:00:00Z", 3)
        },
    );
    let (code, stdout, c) = compare(&a, &slow);
    assert_eq!(code, Some(4), "{stdout}");
    assert_eq!(c["regressions"], 2 * CELLS);
    for r in rows_with(&c, is_timing) {
        assert_eq!(r["status"], "regressed", "{r}");
        // 1/1.3 − 1 = −23%, give or take the ±2% jitter of both runs.
        let rel = r["rel"].as_f64().unwrap();
        assert!((-0.27..-0.19).contains(&rel), "{rel}");
    }
    assert!(rows_with(&c, |r| !is_timing(r))
        .iter()
        .all(|r| r["status"] == "identical"));
}

#[test]
fn a_run_that_did_not_record_how_it_was_timed_is_not_judged() {
    let root = scratch("timing-noise-unrecorded");
    let old = write_run(
        &root,
        "old",
        &Synthetic {
            machine: Machine::Unrecorded,
            ..run_alone("2026-01-01T02:00:00Z", 1)
        },
    );
    let slow = write_run(
        &root,
        "slow",
        &Synthetic {
            slowdown: slower_by_30_percent,
            ..run_alone("2026-01-02T02:00:00Z", 2)
        },
    );
    let (code, stdout, c) = compare(&old, &slow);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(count(&c, "not_judged"), 2 * CELLS);
    let line = c["timing"]["line"].as_str().unwrap();
    assert!(
        line.starts_with(
            "timings not compared: the base run has no record of how its cells were timed"
        ),
        "{line}"
    );
}

/// The changed rows of a comparison (or of one run of a history) as comparable tuples.
fn changes(rows: &[Value]) -> BTreeSet<(String, String, String)> {
    rows.iter()
        .filter(|r| {
            !["identical", "within_noise", "not_judged"].contains(&r["status"].as_str().unwrap())
        })
        .map(|r| {
            (
                r["key"].as_str().unwrap().to_string(),
                r["metric"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn history_flags_exactly_the_changes_compare_reports() {
    let root = scratch("timing-noise-history");
    let runs_dir = root.join("nightly");
    let nights = [
        run_alone("2026-01-01T02:00:00Z", 1),
        // Unchanged code on a loaded machine: nothing changes.
        Synthetic {
            machine: Machine::Loaded,
            slowdown: contended,
            ..run_alone("2026-01-02T02:00:00Z", 2)
        },
        // Timed alone, 30% slower, and cell 0 now leaves the language in 10 samples.
        Synthetic {
            slowdown: slower_by_30_percent,
            out_of_language: 10,
            ..run_alone("2026-01-03T02:00:00Z", 3)
        },
        // Back to normal, timed alone: timings and SER improve.
        run_alone("2026-01-04T02:00:00Z", 4),
    ];
    let dirs: Vec<PathBuf> = nights
        .iter()
        .enumerate()
        .map(|(i, n)| write_run(&runs_dir, &format!("night{i}"), n))
        .collect();
    let html = root.join("history.html");
    let out = run(&[
        "history",
        runs_dir.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let h: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("history.json")).unwrap()).unwrap();
    let events = h["changes"].as_array().unwrap();
    let mut seen = Vec::new();
    for i in 1..dirs.len() {
        let run = &h["runs"][i];
        // Each night is compared with the one before (same suite, finished), as nightly does.
        assert_eq!(run["base"], i - 1);
        let (_, _, c) = compare(&dirs[i - 1], &dirs[i]);
        let from_compare = changes(c["rows"].as_array().unwrap());
        let at_run: Vec<Value> = events.iter().filter(|e| e["run"] == i).cloned().collect();
        assert_eq!(changes(&at_run), from_compare, "night {i}");
        assert_eq!(run["timing"], c["timing"]["line"], "night {i}");
        assert_eq!(run["regressions"], c["regressions"], "night {i}");
        seen.push(from_compare.len());
    }
    // The nights changed as they were built to: nothing on the loaded one; on the slow one
    // SER of cell 0 regressed (its timings are not judged against the loaded night); on the
    // last, every timing row and that SER improved.
    assert_eq!(seen, [0, 1, 2 * CELLS + 1]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("timings not compared"));
    assert!(!page.contains("<script"));
}
