//! SIGKILL the harness in the middle of a run, `--resume` it, and get exactly the summary and
//! samples of an uninterrupted run with the same seeds (timings aside).

mod common;
use common::*;
use std::time::{Duration, Instant};

/// Summary fields that measure time and so legitimately differ between two runs.
const TIMING_FIELDS: [&str; 3] = ["wall_seconds", "tokens_per_second", "speedup"];

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
