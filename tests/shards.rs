//! Shards and merge (issue 20): `run --shard K/N` runs a stable subset of the suite's cells,
//! `merge` puts the shards back together exactly once, and the merged summary equals a
//! single-machine run's apart from timings. A missing, duplicated or foreign shard is refused
//! with the units named.

mod common;
use common::*;
use std::path::{Path, PathBuf};

const SUITE: &str = "tests/suites/tiny.yaml";

fn run_ok(args: &[&str]) {
    let r = run(args);
    assert!(r.status.success(), "{}", text(&r));
}

fn shard(dir: &Path, k: usize) -> PathBuf {
    let out = dir.join(format!("shard{k}"));
    run_ok(&[
        "run",
        SUITE,
        "--shard",
        &format!("{k}/3"),
        "--out",
        out.to_str().unwrap(),
    ]);
    out
}

fn cells_in(dir: &Path) -> usize {
    summary(dir).len()
}

#[test]
fn shards_merge_into_the_single_machine_run() {
    let dir = scratch("shards");
    let single = dir.join("single");
    run_ok(&["run", SUITE, "--out", single.to_str().unwrap()]);
    let shards: Vec<PathBuf> = (0..3).map(|k| shard(&dir, k)).collect();
    let sizes: Vec<usize> = shards.iter().map(|s| cells_in(s)).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 10, "{sizes:?}");
    assert!(sizes.iter().all(|&n| n > 0), "{sizes:?}");

    // A missing shard: refused, with the units named; --allow-partial merges what exists.
    let partial = dir.join("partial");
    let r = run(&[
        "merge",
        partial.to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    assert!(
        err.contains(&format!("{} unit(s) of the plan are in no shard", sizes[2])),
        "{err}"
    );
    run_ok(&[
        "merge",
        dir.join("partial-ok").to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
        "--allow-partial",
    ]);
    assert_eq!(cells_in(&dir.join("partial-ok")), sizes[0] + sizes[1]);

    // A shard given twice: its units are duplicated.
    let r = run(&[
        "merge",
        dir.join("dup").to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
        shards[2].to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("in more than one shard"),
        "{}",
        text(&r)
    );

    // All three: the single run's summary, timings aside.
    let merged = dir.join("merged");
    let mut args = vec!["merge", merged.to_str().unwrap()];
    let names: Vec<String> = shards.iter().map(|s| s.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    run_ok(&args);
    assert_eq!(
        without_timings(&summary(&merged)),
        without_timings(&summary(&single))
    );
    assert!(merged.join("report.html").exists());
}

#[test]
fn a_shard_of_another_suite_is_refused() {
    let dir = scratch("shards-foreign");
    let ours = shard(&dir, 0);
    let foreign = dir.join("foreign");
    // Another suite (some of its cells fail on purpose, so the run exits 3).
    let r = run(&[
        "run",
        "tests/suites/report-small.yaml",
        "--out",
        foreign.to_str().unwrap(),
    ]);
    assert!(foreign.join("summary.json").exists(), "{}", text(&r));
    let r = run(&[
        "merge",
        dir.join("m").to_str().unwrap(),
        ours.to_str().unwrap(),
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("another suite"),
        "{}",
        text(&r)
    );
}
