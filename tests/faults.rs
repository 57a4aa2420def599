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
        wrong.contains("built against plugin API 2.0") && wrong.contains("speaks plugin API 1.1"),
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
        html.contains("Failed cells (6 of 8)"),
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
        msg.contains("dlm-fixture-wrong-api") && msg.contains("2.0") && msg.contains("1.1"),
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
