//! One real run of a small suite through the real binary, real worker processes and the real
//! `dlm-formal` plugin library, checked against exact ground truth.

mod common;
use common::*;

#[test]
fn tiny_suite_runs_end_to_end_with_exact_metrics() {
    let out = scratch("tiny-run");
    let dir = out.join("run");
    let result = run(&[
        "run",
        "tests/suites/tiny.yaml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(result.status.success(), "{}", text(&result));
    for f in [
        "manifest.json",
        "samples.jsonl",
        "summary.json",
        "report.html",
        "cells.jsonl",
    ] {
        assert!(dir.join(f).is_file(), "missing {f}");
    }
    let s = summary(&dir);
    assert_eq!(s.len(), 10);
    assert!(s.iter().all(|c| c["status"] == "ok"));
    // One place for cell logs (work/), and no empty files: a clean run leaves no log at all.
    assert!(!dir.join("logs").exists(), "no separate logs/ folder");
    for entry in walk(&dir) {
        assert!(
            std::fs::metadata(&entry).unwrap().len() > 0,
            "empty file {}",
            entry.display()
        );
    }

    for task in ["bigram-ter", "bigram-ser"] {
        // Ground-truth samples: SER exactly 0, and the exact optimal TER inside the TER CI.
        let r = cell(&s, task, "reference", None, None);
        assert_eq!(r["ser"], 0.0, "{task}: reference SER");
        let (lo, hi) = (
            r["ter_ci"][0].as_f64().unwrap(),
            r["ter_ci"][1].as_f64().unwrap(),
        );
        let opt = r["optimal_ter"].as_f64().unwrap();
        assert!(
            lo <= opt && opt <= hi,
            "{task}: optimum {opt} outside the reference CI [{lo}, {hi}]"
        );
        // The exact oracle decoded left to right samples the language exactly.
        let l2r = cell(&s, task, "oracle", Some("left_to_right"), Some(12));
        assert_eq!(l2r["ser"], 0.0, "{task}: left-to-right SER");
        assert_eq!(l2r["nfe"], 12.0);
        assert_eq!(l2r["tokens_per_forward"], 1.0);
        let (lo, hi) = (
            l2r["ter_ci"][0].as_f64().unwrap(),
            l2r["ter_ci"][1].as_f64().unwrap(),
        );
        assert!(
            lo <= opt && opt <= hi,
            "{task}: left-to-right TER CI [{lo}, {hi}] misses {opt}"
        );
        // ddpm_cache: never more network calls per sample than min(steps, L); one step is one call.
        for steps in [1u64, 4, 12] {
            let c = cell(&s, task, "oracle", Some("ddpm_cache"), Some(steps));
            assert!(c["nfe"].as_f64().unwrap() <= steps.min(12) as f64);
            assert!(
                c["speedup"].as_f64().is_some(),
                "speedup against the left-to-right cell"
            );
        }
        assert_eq!(
            cell(&s, task, "oracle", Some("ddpm_cache"), Some(1))["nfe"],
            1.0
        );
    }
    // On the pruned language, one fully parallel step leaves most samples outside the support,
    // and more steps help: the sequence error rate the paper is about.
    let ser = |steps| {
        cell(&s, "bigram-ser", "oracle", Some("ddpm_cache"), Some(steps))["ser"]
            .as_f64()
            .unwrap()
    };
    assert!(ser(1) > 0.5, "SER at one step {}", ser(1));
    assert!(
        ser(1) > ser(4) && ser(4) > ser(12),
        "SER must fall with steps: {} {} {}",
        ser(1),
        ser(4),
        ser(12)
    );
    // On the full-support language TER is finite everywhere and approaches the optimum.
    let ter = |steps| {
        cell(&s, "bigram-ter", "oracle", Some("ddpm_cache"), Some(steps))["ter"]
            .as_f64()
            .unwrap()
    };
    assert!(ter(1) > ter(4) && ter(4) > ter(12));

    // The manifest records the run's identity.
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["suite_name"], "tiny");
    assert_eq!(m["plugins"][0]["name"], "dlm-formal");
    assert!(m["finished_at"].is_string());
    assert_eq!(m["suite_hash"].as_str().unwrap().len(), 64);

    // The report shows every cell and `report` regenerates the same summary from samples.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("bigram-ser") && html.contains("left_to_right"));
    let before = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let again = run(&["report", dir.to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again));
    let after = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    assert!(
        before == after,
        "`report` recomputed a different summary from the same samples"
    );
}

#[test]
fn list_and_describe_show_plugin_descriptors() {
    let out = run(&["describe", "dlm-formal"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "dlm-formal 0.1.0 (plugin API {})",
            dlm_plugin_api::API_VERSION
        )),
        "{stdout}"
    );
    assert!(stdout.contains("model oracle"), "{stdout}");
    assert!(stdout.contains("task  ngram"), "{stdout}");
    let out = run(&["describe", "dlm-formall"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("did you mean `dlm-formal`"),
        "{}",
        text(&out)
    );

    // `list` shows the real plugins only: the test fixtures (`fixture = true` in their
    // manifests' `[package.metadata.dlm-bench]`) are not plugins for users.
    let out = run(&["list"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("dlm-formal 0.1.0 (plugin API"), "{stdout}");
    assert!(stdout.contains("model oracle"), "{stdout}");
    assert!(!stdout.contains("fixture"), "{stdout}");
    assert!(!stdout.contains("cannot be loaded"), "{stdout}");
    // `--all` adds them, marked; the fixture built against another plugin API on purpose is
    // reported as refused, not as an error.
    let out = run(&["list", "--all"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("dlm-formal 0.1.0 (plugin API"), "{stdout}");
    let faulty = stdout
        .lines()
        .find(|l| l.starts_with("dlm-fixture-faulty "))
        .unwrap_or_else(|| panic!("no faulty fixture in {stdout}"));
    assert!(faulty.contains("[test fixture]"), "{faulty}");
    let wrong_api = stdout
        .lines()
        .find(|l| l.contains("dlm_fixture_wrong_api"))
        .unwrap_or_else(|| panic!("no wrong-api fixture in {stdout}"));
    assert!(
        wrong_api.contains("[test fixture]: not loadable by this host")
            && wrong_api.contains("was built against plugin API"),
        "{wrong_api}"
    );
    assert!(!stdout.contains("cannot be loaded"), "{stdout}");
}

#[test]
fn left_to_right_with_the_exact_oracle_never_leaves_any_pruned_language() {
    let out = scratch("l2r-ser");
    let dir = out.join("run");
    let result = run(&[
        "run",
        "tests/suites/l2r-ser.yaml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(result.status.success(), "{}", text(&result));
    let s = summary(&dir);
    for task in [
        "2gram-ser",
        "3gram-ser",
        "4gram-ser",
        "hmm-ser",
        "hmm-pruned",
        "interval-4",
    ] {
        let l2r = cell(&s, task, "oracle", Some("left_to_right"), None);
        assert_eq!(
            l2r["ser"], 0.0,
            "{task}: left-to-right with the exact oracle"
        );
        assert_eq!(l2r["n"], 300);
    }
    // The same languages sampled fully in parallel do leave the support (except the Table 1
    // HMM, whose threshold prunes table entries but no whole sequences).
    for task in [
        "2gram-ser",
        "3gram-ser",
        "4gram-ser",
        "hmm-pruned",
        "interval-4",
    ] {
        let one = cell(&s, task, "oracle", Some("ddpm_cache"), Some(1));
        assert!(
            one["ser"].as_f64().unwrap() > 0.3,
            "{task}: one parallel step, SER {}",
            one["ser"]
        );
    }
    assert_eq!(
        cell(&s, "hmm-ser", "oracle", Some("ddpm_cache"), Some(1))["ser"],
        0.0
    );
}

/// A suite kept outside the repository still names the built-in plugin crates (they resolve in
/// dlm-bench's own checkout), records the commit of that checkout, and a crate that exists
/// nowhere gets a located error that offers the library path instead.
#[test]
fn a_suite_outside_the_repository_uses_the_harness_checkout() {
    let outside = tempfile::tempdir().unwrap();
    let suite = std::fs::read_to_string(root().join("tests/suites/tiny.yaml"))
        .unwrap()
        .replace("samples: 300", "samples: 20");
    let path = outside.path().join("mine.yaml");
    std::fs::write(&path, &suite).unwrap();
    let dir = outside.path().join("run");
    let r = run(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        Some(head) => assert_eq!(manifest["git_commit"], head.as_str()),
        None => skip::absent(
            &skip::GIT_CHECKOUT,
            format!("{} is not a git checkout", root().display()),
        ),
    }

    std::fs::write(
        &path,
        suite.replace(
            "plugin: dlm-formal\n    model",
            "plugin: dlm-formall\n    model",
        ),
    )
    .unwrap();
    let r = run(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        outside.path().join("bad").to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("mine.yaml:") && err.contains("no plugin crate `dlm-formall`"),
        "{err}"
    );
    assert!(err.contains("did you mean `dlm-formal`"), "{err}");
    assert!(err.contains("name the built library by path"), "{err}");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
