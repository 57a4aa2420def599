//! SIGKILL the harness in the middle of a run, `--resume` it, and get exactly the summary and
//! samples of an uninterrupted run with the same seeds (timings aside).

mod common;
use common::*;
use std::time::{Duration, Instant};

/// Summary fields that measure time and so legitimately differ between two runs.
const TIMING_FIELDS: [&str; 5] = [
    "wall_seconds",
    "tokens_per_second",
    "tokens_per_second_iqr",
    "tokens_per_cpu_second",
    "speedup",
];

fn without_timings(summary: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    summary
        .into_iter()
        .map(|mut c| {
            for f in TIMING_FIELDS {
                c.as_object_mut().unwrap().remove(f);
            }
            c
        })
        .collect()
}

fn sorted_sample_lines(dir: &std::path::Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

fn lines_in(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn sigkill_then_resume_equals_an_uninterrupted_run() {
    let out = scratch("resume");
    let whole = out.join("whole");
    let r = run(&[
        "run",
        "tests/suites/resume.yaml",
        "--out",
        whole.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let total_cells = lines_in(&whole.join("cells.jsonl"));
    assert_eq!(total_cells, 2 * 9);

    let killed = out.join("killed");
    let mut child = command()
        .args([
            "run",
            "tests/suites/resume.yaml",
            "--out",
            killed.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until a few cells are recorded, then kill -9 the harness mid-run.
    let start = Instant::now();
    while lines_in(&killed.join("cells.jsonl")) < 4 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "run finished before it could be killed"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "run made no progress"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let recorded = lines_in(&killed.join("cells.jsonl"));
    assert!(
        recorded < total_cells,
        "the kill must land before the end ({recorded} cells recorded)"
    );
    assert!(
        !killed.join("summary.json").exists(),
        "an interrupted run has no summary yet"
    );

    let r = run(&[
        "run",
        "tests/suites/resume.yaml",
        "--resume",
        killed.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let log = String::from_utf8_lossy(&r.stderr);
    assert!(log.is_empty() || !log.contains("error"), "{log}");

    assert_eq!(
        without_timings(summary(&whole)),
        without_timings(summary(&killed))
    );
    assert_eq!(sorted_sample_lines(&whole), sorted_sample_lines(&killed));
    assert_eq!(
        lines_in(&killed.join("cells.jsonl")),
        total_cells,
        "every cell exactly once"
    );

    // Resuming a finished run redoes nothing and changes nothing.
    let before = std::fs::read_to_string(killed.join("samples.jsonl")).unwrap();
    let r = run(&[
        "run",
        "tests/suites/resume.yaml",
        "--resume",
        killed.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    assert!(before == std::fs::read_to_string(killed.join("samples.jsonl")).unwrap());
}

#[test]
fn resume_refuses_a_changed_suite() {
    let out = scratch("resume-changed");
    let suite = out.join("s.yaml");
    let text0 = std::fs::read_to_string(root().join("tests/suites/tiny.yaml"))
        .unwrap()
        .replace("samples: 300", "samples: 20");
    std::fs::write(&suite, &text0).unwrap();
    let dir = out.join("run");
    let r = run(&[
        "run",
        suite.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    std::fs::write(&suite, text0.replace("samples: 20", "samples: 21")).unwrap();
    let r = run(&[
        "run",
        suite.to_str().unwrap(),
        "--resume",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("changed since that run started"),
        "{}",
        text(&r)
    );
    // And --out refuses to overwrite an existing run.
    let r = run(&[
        "run",
        suite.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("already holds a run"),
        "{}",
        text(&r)
    );
}

/// A crash can tear the last row of `samples.jsonl` after its cell's line was written by an
/// earlier attempt (or a disk can lose the tail of the file): the cell is then short. It must not
/// be kept as finished: `--resume` redoes it, and the result equals an untouched run.
#[test]
fn a_torn_sample_row_makes_its_cell_be_redone() {
    let out = scratch("resume-torn");
    let dir = out.join("run");
    let r = run(&[
        "run",
        "tests/suites/tiny.yaml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let whole = without_timings(summary(&dir));
    let samples_path = dir.join("samples.jsonl");
    let full = std::fs::read(&samples_path).unwrap();
    // Cut a few bytes off the last row (it belongs to the last finished cell).
    std::fs::write(&samples_path, &full[..full.len() - 7]).unwrap();
    let r = run(&[
        "run",
        "tests/suites/tiny.yaml",
        "--resume",
        dir.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let resumed = without_timings(summary(&dir));
    assert_eq!(whole, resumed, "the torn cell is redone in full");
    for c in &resumed {
        if c["status"] == "ok" {
            assert_eq!(c["n"], 300, "{}", c["key"]);
        }
    }
    assert_eq!(std::fs::read(&samples_path).unwrap().len(), full.len());
    // Every cell appears once in the summary, and the redone cell has all its rows again.
    assert_eq!(
        sorted_sample_lines(&dir).len(),
        full.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
    );
}

/// Two processes on one run directory would run the same cells twice and rewrite each other's
/// files; the second gets a clear error naming the holder, and the lock dies with its holder.
#[test]
fn a_run_directory_in_use_is_refused_with_the_holders_pid() {
    let out = scratch("resume-lock");
    let dir = out.join("run");
    let mut first = command()
        .args([
            "run",
            "tests/suites/resume.yaml",
            "--out",
            dir.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while lines_in(&dir.join("cells.jsonl")) < 1 {
        assert!(
            first.try_wait().unwrap().is_none(),
            "run finished too early"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "run made no progress"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    for args in [
        vec![
            "run",
            "tests/suites/resume.yaml",
            "--resume",
            dir.to_str().unwrap(),
        ],
        vec!["report", dir.to_str().unwrap()],
    ] {
        let r = run(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{}", text(&r));
        assert!(
            err.contains("is in use by PID") && err.contains(&first.id().to_string()),
            "{}",
            text(&r)
        );
    }
    // Reading a run that is still going is fine (compare and history take no lock).
    let r = run(&[
        "compare",
        dir.to_str().unwrap(),
        dir.to_str().unwrap(),
        "--timing-noise",
        "1000",
    ]);
    assert!(r.status.code() == Some(0), "{}", text(&r));
    first.kill().unwrap(); // SIGKILL: the lock must die with it
    first.wait().unwrap();
    let r = run(&[
        "run",
        "tests/suites/resume.yaml",
        "--resume",
        dir.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
}
