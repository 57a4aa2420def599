//! A plugin that panics, aborts, segfaults, hangs, returns garbage, or was built against
//! another plugin API costs only its own cells: the run finishes, the summary names each cause,
//! and the exit code says some cells failed.

mod common;
use common::*;

#[test]
fn misbehaving_plugins_fail_only_their_cells() {
    let out = scratch("faults-run");
    let dir = out.join("run");
    let result = run(&[
        "run",
        "tests/suites/faults.yaml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        result.status.code(),
        Some(3),
        "exit code 3 = some cells failed\n{}",
        text(&result)
    );
    let s = summary(&dir);
    // Each failure is grouped by what the user has to do: the plugin's own classification
    // crosses the boundary; a reply the harness refuses is bad data; a crash, a limit or a
    // library that does not load has no plugin classification.
    let kind = |model: &str| cell(&s, "bigram", model, None, None)["error_kind"].clone();
    assert_eq!(kind("panics"), "internal");
    assert_eq!(kind("bad-tokens"), "bad_data");
    assert_eq!(kind("bad-config"), "bad_config");
    for model in ["aborts", "segfaults", "hangs", "wrong-api", "healthy"] {
        assert!(kind(model).is_null(), "{model}: {}", kind(model));
    }
    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for heading in [
        "bad configuration (1)",
        "bad data (1)",
        "internal error (1)",
        "not run, or the worker failed (4)",
    ] {
        assert!(report.contains(heading), "report lacks `{heading}`");
    }
    let cause = |model: &str| {
        let c = cell(&s, "bigram", model, None, None);
        assert_eq!(c["status"], "failed", "{model} should fail");
        c["cause"].as_str().unwrap().to_string()
    };
    assert!(
        cause("panics").contains("plugin panicked in model.generate: deliberate panic"),
        "{}",
        cause("panics")
    );
    assert!(cause("aborts").contains("SIGABRT"), "{}", cause("aborts"));
    assert!(
        cause("segfaults").contains("SIGSEGV"),
        "{}",
        cause("segfaults")
    );
    assert!(
        cause("hangs").contains("timed out after 5 s"),
        "{}",
        cause("hangs")
    );
    assert!(
        cause("bad-tokens").contains("outside the task's vocabulary"),
        "{}",
        cause("bad-tokens")
    );
    let wrong = cause("wrong-api");
    assert!(
        wrong.contains("built against plugin API 2.0")
            && wrong.contains(&format!(
                "speaks plugin API {}",
                dlm_plugin_api::API_VERSION
            )),
        "{wrong}"
    );
    // The healthy model and the reference row finished with real results.
    for model in ["healthy", "reference"] {
        let c = cell(&s, "bigram", model, None, None);
        assert_eq!(c["status"], "ok", "{model}");
        assert_eq!(c["n"], 8);
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("Failed cells (7 of 9)"),
        "report lists failures"
    );
}

#[test]
fn wrong_api_plugin_is_refused_before_any_call() {
    // Loaded in this very process: every function of the fixture aborts if called, so getting
    // an error back (and not dying) proves the host refused it from the descriptor alone.
    let built = std::process::Command::new(env!("CARGO"))
        .args(["build", "-p", "dlm-fixture-wrong-api"])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(built.success());
    let lib = PathBufExt::lib("dlm_fixture_wrong_api");
    let err = dlm_plugin_api::LoadedPlugin::load(&lib).expect_err("must be refused");
    let msg = err.to_string();
    assert!(
        matches!(err, dlm_plugin_api::LoadError::ApiMismatch { .. }),
        "{msg}"
    );
    assert!(
        msg.contains("dlm-fixture-wrong-api")
            && msg.contains("2.0")
            && msg.contains(&dlm_plugin_api::API_VERSION.to_string()),
        "{msg}"
    );
    // A file that is not a plugin at all gets a clear error too.
    let not_plugin = scratch("not-a-plugin").join("libnothing.so");
    std::fs::write(&not_plugin, b"not an ELF file").unwrap();
    let err = dlm_plugin_api::LoadedPlugin::load(&not_plugin).expect_err("not a library");
    assert!(
        err.to_string().contains("cannot open plugin library"),
        "{err}"
    );
}

struct PathBufExt;
impl PathBufExt {
    fn lib(stem: &str) -> std::path::PathBuf {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| root().join("target"));
        target.join("debug").join(format!(
            "{}{stem}{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ))
    }
}

/// Processes whose command line contains `marker` (zombies have an empty one, so only live
/// processes count).
fn processes_marked(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().filter(|n| n.parse::<u32>().is_ok()) else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push(format!("{pid}: {cmdline}"));
            }
        }
    }
    found
}

/// Containment (issue 14, item 7): a plugin's child processes die with its cell, whether the
/// cell timed out, finished, or the child left the worker's process group; a plugin that grows
/// without bound fails with "memory limit"; one that floods its log fails with "output limit"
/// and leaves a log no bigger than the limit. The other cells of the run are untouched.
#[test]
fn workers_are_contained() {
    let out = scratch("containment");
    let dir = out.join("run");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let marker = format!("dlm-containment-{}-{nanos}", std::process::id());
    // The fixture appends DLM_FIXTURE_MARKER to the children's marker, so this run's children
    // are told apart from any other run's.
    let result = command()
        .env("DLM_FIXTURE_MARKER", &marker)
        .args([
            "run",
            "tests/suites/containment.yaml",
            "--out",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    // Whatever happened, leave no marked process behind for the next test.
    let mut left = processes_marked(&marker);
    for _ in 0..40 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = processes_marked(&marker);
    }
    for p in &left {
        let pid = p.split(':').next().unwrap();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", pid])
            .status();
    }
    assert!(
        left.is_empty(),
        "a plugin's child processes outlived their cells:\n{}\n{}",
        left.join("\n"),
        text(&result)
    );
    assert_eq!(result.status.code(), Some(3), "{}", text(&result));
    let s = summary(&dir);
    let status = |model: &str| {
        let c = cell(&s, "iid", model, None, None);
        (
            c["status"].as_str().unwrap().to_string(),
            c["cause"].as_str().unwrap_or_default().to_string(),
        )
    };
    for model in ["healthy", "reference", "daemon", "escape"] {
        assert_eq!(status(model).0, "ok", "{model}: {:?}", status(model));
    }
    let (orphan, cause) = status("orphan");
    assert!(
        orphan == "failed" && cause.contains("timed out after 4 s"),
        "{cause}"
    );
    let (grow, cause) = status("grow");
    assert!(
        grow == "failed"
            && cause.contains("memory limit (300 MiB, the suite's `memory_limit`) exceeded"),
        "{cause}"
    );
    let (chatter, cause) = status("chatter");
    assert!(
        chatter == "failed" && cause.contains("output limit (10 MiB of log) exceeded"),
        "{cause}"
    );
    // Every log on disk stays within the limit (plus the note where it was cut).
    for entry in std::fs::read_dir(dir.join("work")).unwrap().flatten() {
        let len = entry.metadata().unwrap().len();
        assert!(
            len <= dlm_bench::worker::OUTPUT_LIMIT + 4096,
            "{} holds {len} bytes",
            entry.path().display()
        );
    }
}

/// A bad `memory_limit` is a located suite error.
#[test]
fn bad_memory_limit_is_located() {
    let out = scratch("bad-memory-limit");
    let suite = out.join("bad.yaml");
    let text_in = std::fs::read_to_string(root().join("tests/suites/faults.yaml"))
        .unwrap()
        .replace(
            "timeout_seconds: 5\n",
            "timeout_seconds: 5\nmemory_limit: lots\n",
        );
    std::fs::write(&suite, text_in).unwrap();
    let result = run(&[
        "run",
        suite.to_str().unwrap(),
        "--out",
        out.join("run").to_str().unwrap(),
    ]);
    let all = text(&result);
    assert_ne!(result.status.code(), Some(0), "{all}");
    assert!(
        all.contains("bad.yaml:6:15") && all.contains("memory_limit must be a size"),
        "{all}"
    );
}
