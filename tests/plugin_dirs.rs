//! Plugins found prebuilt (issue 32, item 7): with the libraries in `--plugin-dir` or
//! `$DLM_BENCH_PLUGIN_DIR`, `list`, `describe` and `run` never call cargo — checked with a
//! `cargo` on PATH that only leaves a marker — and the manifest says where each library came
//! from. A folder without the library falls back to cargo inside a source tree only; elsewhere
//! the error names the folders searched. A prebuilt library built against another plugin API
//! is refused naming its folder and the fix.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The debug library of plugin crate `krate`, built (by the harness, as every test does) if
/// needed, copied into a fresh plugin folder `name`.
fn plugin_folder(name: &str, crates: &[&str]) -> PathBuf {
    let dir = scratch(name).join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    for krate in crates {
        let out = run(&["describe", krate]);
        assert!(out.status.success(), "{}", text(&out));
        let file = format!(
            "{}{}{}",
            std::env::consts::DLL_PREFIX,
            krate.replace('-', "_"),
            std::env::consts::DLL_SUFFIX
        );
        std::fs::copy(root().join("target/debug").join(&file), dir.join(&file)).unwrap();
    }
    dir
}

/// A PATH holding only a `cargo` that writes `marker` and fails: whatever runs it is seen,
/// and nothing can build.
fn fake_cargo(dir: &Path) -> (PathBuf, PathBuf) {
    let bin = dir.join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = dir.join("cargo-was-called");
    let _ = std::fs::remove_file(&marker);
    let script = bin.join("cargo");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\nexit 1\n", marker.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, marker)
}

/// `dlm-bench` with no cargo but the fake one (`$CARGO`, which cargo sets for tests, removed).
fn without_cargo(bin: &Path, args: &[&str]) -> Output {
    command()
        .env("PATH", bin)
        .env_remove("CARGO")
        .env_remove("DLM_BENCH_PLUGIN_DIR")
        .args(args)
        .output()
        .expect("dlm-bench starts")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn prebuilt_plugins_list_describe_and_run_without_cargo() {
    let plugins = plugin_folder("plugin-dirs-prebuilt", &["dlm-formal"]);
    let dir = plugins.parent().unwrap().to_owned();
    let (bin, marker) = fake_cargo(&dir);
    let folder = plugins.to_str().unwrap();

    let out = without_cargo(&bin, &["list", "--plugin-dir", folder]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("dlm-formal") && stdout.contains("task  ngram"),
        "{stdout}"
    );

    // The environment variable does what the flag does.
    let out = command()
        .env("PATH", &bin)
        .env_remove("CARGO")
        .env("DLM_BENCH_PLUGIN_DIR", &plugins)
        .args(["describe", "dlm-formal"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(folder),
        "{}",
        text(&out)
    );

    // A tiny suite, kept anywhere, runs end to end on the prebuilt library.
    let suite = dir.join("tiny.yaml");
    let tiny = std::fs::read_to_string(root().join("tests/suites/tiny.yaml")).unwrap();
    std::fs::write(&suite, tiny.replace("samples: 300", "samples: 8")).unwrap();
    let run_dir = dir.join("run");
    let out = without_cargo(
        &bin,
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            run_dir.to_str().unwrap(),
            "--plugin-dir",
            folder,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !marker.exists(),
        "cargo was called: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    let recorded = &manifest["plugins"][0];
    assert_eq!(recorded["name"], "dlm-formal", "{manifest}");
    assert_eq!(recorded["origin"], "prebuilt", "{recorded}");
    let library = PathBuf::from(recorded["library"].as_str().unwrap());
    assert_eq!(library.parent(), Some(plugins.as_path()), "{recorded}");
    // Every cell ran: 2 tasks × (reference + 3 steps of ddpm_cache + left_to_right).
    assert_eq!(summary(&run_dir).len(), 10, "{}", text(&out));

    // A misspelt plugin is answered from the folder's plugins, where no workspace can be.
    let typo = tiny.replace(
        "plugin: dlm-formal\n    model",
        "plugin: dlm-formall\n    model",
    );
    assert_ne!(typo, tiny);
    std::fs::write(&suite, typo).unwrap();
    let out = without_cargo(
        &bin,
        &["plan", suite.to_str().unwrap(), "--plugin-dir", folder],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("did you mean `dlm-formal`?"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_folder_without_the_library_builds_only_in_a_source_tree() {
    let dir = scratch("plugin-dirs-empty");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let empty_arg = empty.to_str().unwrap();

    // In the checkout, with cargo: the crate is built (cargo finds it fresh) as before.
    let out = run(&["describe", "dlm-formal", "--plugin-dir", empty_arg]);
    assert!(out.status.success(), "{}", text(&out));

    // No cargo to build with: a clear error naming the folders searched, exit 1.
    let (bin, _) = fake_cargo(&dir);
    let out = without_cargo(&bin, &["describe", "dlm-formal", "--plugin-dir", empty_arg]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("no {}dlm_formal", std::env::consts::DLL_PREFIX))
            && err.contains(empty_arg)
            && err.contains("no source checkout"),
        "{err}"
    );

    // The same for a suite, located at the plugin's line.
    let suite = dir.join("tiny.yaml");
    std::fs::copy(root().join("tests/suites/tiny.yaml"), &suite).unwrap();
    let out = without_cargo(
        &bin,
        &["run", suite.to_str().unwrap(), "--plugin-dir", empty_arg],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("tiny.yaml:9:")
            && err.contains(&format!("prebuilt in {empty_arg}"))
            && err.contains("--plugin-dir"),
        "{err}"
    );

    // A plugin folder that does not exist is a typo, not a reason to build.
    let out = run(&[
        "list",
        "--plugin-dir",
        dir.join("nowhere").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("is not a directory"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_prebuilt_library_of_another_plugin_api_is_refused_naming_its_folder() {
    let plugins = plugin_folder(
        "plugin-dirs-wrong-api",
        &["dlm-formal", "dlm-fixture-wrong-api"],
    );
    let dir = plugins.parent().unwrap().to_owned();
    let (bin, marker) = fake_cargo(&dir);
    let folder = plugins.to_str().unwrap();
    let suite = dir.join("s.yaml");
    std::fs::write(
        &suite,
        "name: s\nsamples: 4\nlengths: [6]\ntasks:\n  - {name: t, plugin: dlm-formal, task: ngram, config: {order: 2}}\nmodels:\n  - {name: m, plugin: dlm-fixture-wrong-api, model: anything}\nsamplers:\n  - {sampler: ddpm_cache, steps: [2]}\n",
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = without_cargo(
        &bin,
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            run_dir.to_str().unwrap(),
            "--plugin-dir",
            folder,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("found prebuilt in {folder}"))
            && err.contains("was built against plugin API")
            && err.contains("tools/install.sh"),
        "{err}"
    );
    assert!(!run_dir.exists(), "no run directory for a refused plugin");
    assert!(!marker.exists(), "cargo was called");
}

/// `tools/install.sh`'s layout works: its copies (here of this test build's binary and
/// debug plugins, with a `cargo` that builds nothing) give a `PREFIX/bin/dlm-bench` that finds
/// its plugins beside it — no `--plugin-dir`, no cargo — and reads the installed data.
#[test]
fn the_installed_layout_runs_without_cargo() {
    let plugins = plugin_folder("plugin-dirs-install", &["dlm-formal"]);
    let dir = plugins.parent().unwrap().to_owned();
    // What `cargo build --release` would have left: the binary and every plugin crate's
    // library (only dlm-formal's is loaded below; the others are placeholders).
    let release = dir.join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_dlm-bench"), release.join("dlm-bench")).unwrap();
    for entry in std::fs::read_dir(root().join("plugins")).unwrap() {
        let manifest = std::fs::read_to_string(entry.unwrap().path().join("Cargo.toml")).unwrap();
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap()
            .replace('-', "_");
        let file = format!("lib{name}.so");
        match std::fs::copy(plugins.join(&file), release.join(&file)) {
            Ok(_) => {}
            Err(_) => std::fs::write(release.join(&file), b"placeholder").unwrap(),
        }
    }
    let builds_nothing = dir.join("cargo-ok");
    std::fs::create_dir_all(&builds_nothing).unwrap();
    let script = builds_nothing.join("cargo");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prefix = dir.join("prefix");
    let out = Command::new(root().join("tools/install.sh"))
        .arg(&prefix)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", builds_nothing.display()),
        )
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let (bin, marker) = fake_cargo(&dir);
    let installed = prefix.join("bin/dlm-bench");
    let suite = dir.join("tiny.yaml");
    let tiny = std::fs::read_to_string(root().join("tests/suites/tiny.yaml")).unwrap();
    std::fs::write(&suite, tiny.replace("samples: 300", "samples: 8")).unwrap();
    let run_dir = dir.join("run");
    let out = Command::new(&installed)
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .env("PATH", &bin)
        .env_remove("CARGO")
        .env_remove("DLM_BENCH_PLUGIN_DIR")
        .env_remove("DLM_BENCH_DATA")
        .env_remove("DLM_BENCH_WORKER_EXE")
        .env("DLM_BENCH_LOG", "warn")
        .env("DLM_BENCH_JOBS", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!marker.exists(), "cargo was called");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    let recorded = &manifest["plugins"][0];
    assert_eq!(recorded["origin"], "prebuilt", "{recorded}");
    let library = PathBuf::from(recorded["library"].as_str().unwrap());
    assert_eq!(
        library.parent(),
        Some(
            prefix
                .join("lib/dlm-bench/plugins")
                .canonicalize()
                .unwrap()
                .as_path()
        ),
        "{recorded}"
    );
    // The wrapper points the plugins at the installed copy of the data.
    let data = prefix.join("lib/dlm-bench/data");
    assert!(data.join("SHA256SUMS").is_file());
    let wrapper = std::fs::read_to_string(&installed).unwrap();
    assert!(
        wrapper.contains(&format!("{}", data.display())),
        "{wrapper}"
    );
}
