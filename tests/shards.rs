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

fn merge_ok(out: &Path, shards: &[PathBuf]) {
    let mut args = vec!["merge", out.to_str().unwrap()];
    args.extend(shards.iter().map(|s| s.to_str().unwrap()));
    run_ok(&args);
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
    merge_ok(&merged, &shards);
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

fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// A shard killed with SIGKILL mid-way: `merge` names exactly the units it did not finish, and
/// re-running (resuming) that shard completes the merge.
#[test]
fn a_killed_shard_is_named_by_merge_and_its_rerun_completes_it() {
    let dir = scratch("shards-killed");
    const RESUME: &str = "tests/suites/resume.yaml";
    let single = dir.join("single");
    run_ok(&["run", RESUME, "--out", single.to_str().unwrap()]);
    let shard_dir = |k: usize| dir.join(format!("shard{k}"));
    run_ok(&[
        "run",
        RESUME,
        "--shard",
        "0/2",
        "--out",
        shard_dir(0).to_str().unwrap(),
    ]);
    let killed = shard_dir(1);
    let mut child = command()
        .args(["run", RESUME, "--shard", "1/2", "--out"])
        .arg(&killed)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while lines_in(&killed.join("cells.jsonl")) < 2 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the shard finished before it could be killed"
        );
        assert!(std::time::Instant::now() < deadline, "no cell recorded");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let done = lines_in(&killed.join("cells.jsonl"));
    let planned = {
        let r = run(&["plan", RESUME, "--shards", "2", "--json"]);
        let units: Vec<serde_json::Value> = serde_json::from_slice(&r.stdout).unwrap();
        units.iter().filter(|u| u["shard"] == 1).count()
    };
    assert!(
        done < planned,
        "the kill must land before the shard ends ({done}/{planned})"
    );

    let merged = dir.join("merged");
    let r = run(&[
        "merge",
        merged.to_str().unwrap(),
        shard_dir(0).to_str().unwrap(),
        killed.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    // A torn last cell counts as unfinished, so at least the unrecorded ones are missing.
    let missing: usize = err
        .split(" unit(s) of the plan are in no shard")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(missing >= planned - done && missing <= planned, "{err}");

    run_ok(&[
        "run",
        RESUME,
        "--shard",
        "1/2",
        "--resume",
        killed.to_str().unwrap(),
    ]);
    run_ok(&[
        "merge",
        merged.to_str().unwrap(),
        shard_dir(0).to_str().unwrap(),
        killed.to_str().unwrap(),
    ]);
    assert_eq!(
        without_timings(&summary(&merged)),
        without_timings(&summary(&single))
    );
}

/// `shard_samples`: large cells split by sample range, so that no shard waits on one huge
/// cell. The parts spread over the shards, and merge joins them into the cells of a
/// single-machine run: the same samples (same indices, tokens and scores) and the same summary.
#[test]
fn cells_split_by_sample_range_merge_into_the_single_machine_run() {
    const SPLIT: &str = "tests/suites/tiny-split.yaml";
    let dir = scratch("shards-split");
    let single = dir.join("single");
    run_ok(&["run", SPLIT, "--out", single.to_str().unwrap()]);
    assert_eq!(
        cells_in(&single),
        10,
        "a run without shards keeps cells whole"
    );

    let r = run(&["plan", SPLIT, "--shards", "3", "--json"]);
    assert!(r.status.success(), "{}", text(&r));
    let units: Vec<serde_json::Value> = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(units.len(), 30, "10 cells in 3 parts each");
    let keys: Vec<&str> = units.iter().map(|u| u["key"].as_str().unwrap()).collect();
    for range in ["/samples0-127", "/samples128-255", "/samples256-299"] {
        assert_eq!(
            keys.iter().filter(|k| k.ends_with(range)).count(),
            10,
            "{keys:?}"
        );
    }
    // One cell's parts do not all land on one shard.
    let shards_of_first: std::collections::BTreeSet<u64> = units
        .iter()
        .filter(|u| {
            u["key"]
                .as_str()
                .unwrap()
                .starts_with("bigram-ter/reference/")
        })
        .map(|u| u["shard"].as_u64().unwrap())
        .collect();
    assert!(shards_of_first.len() > 1, "{units:?}");

    let shards: Vec<PathBuf> = (0..3)
        .map(|k| {
            let out = dir.join(format!("shard{k}"));
            run_ok(&[
                "run",
                SPLIT,
                "--shard",
                &format!("{k}/3"),
                "--out",
                out.to_str().unwrap(),
            ]);
            out
        })
        .collect();
    let merged = dir.join("merged");
    merge_ok(&merged, &shards);
    assert_eq!(
        without_timings(&summary(&merged)),
        without_timings(&summary(&single))
    );
    assert_eq!(sorted_samples(&merged), sorted_samples(&single));

    // Without one shard, --allow-partial leaves out every cell that lost a part.
    let partial = dir.join("partial");
    run_ok(&[
        "merge",
        partial.to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
        "--allow-partial",
    ]);
    let complete = units
        .chunks(3)
        .filter(|parts| parts.iter().all(|u| u["shard"] != 2))
        .count();
    assert_eq!(cells_in(&partial), complete);
}
