//! The benchmark data committed under `data/`: `data/SHA256SUMS` (the sums both plugins compile
//! in) against sums computed here from the files, every data file pinned, the README's table
//! in step with it, and the plugins reading `data/` when nothing names another folder.

mod common;
use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Files in `data/` that document the data rather than being it.
fn is_documentation(relative: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    matches!(name, "README.md" | "SHA256SUMS" | ".gitattributes") || name.starts_with("LICENSE")
}

/// `data/SHA256SUMS` as (sum, path relative to `data/`), in file order.
fn pinned() -> Vec<(String, String)> {
    let path = root().join("data/SHA256SUMS");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let (sum, name) = line
                .split_once("  ")
                .unwrap_or_else(|| panic!("data/SHA256SUMS:{}: not `<sum>  <file>`", i + 1));
            (sum.to_string(), name.to_string())
        })
        .collect()
}

/// Every file under `dir`, as a path relative to `base` with `/` separators.
fn files_under(base: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(base, &path, out);
        } else {
            let relative = path.strip_prefix(base).unwrap();
            out.push(relative.to_str().unwrap().replace('\\', "/"));
        }
    }
}

#[test]
fn sha256sums_pins_every_data_file_with_its_computed_sum() {
    let data = root().join("data");
    let pins = pinned();
    for (expected, file) in &pins {
        let bytes = std::fs::read(data.join(file)).unwrap_or_else(|e| panic!("data/{file}: {e}"));
        let actual: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            &actual, expected,
            "data/{file}: sha256 differs from data/SHA256SUMS"
        );
    }
    // Nothing in data/ escapes the check, and SHA256SUMS names no file twice.
    let mut files = Vec::new();
    files_under(&data, &data, &mut files);
    let mut data_files: Vec<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|f| !is_documentation(f))
        .collect();
    data_files.sort_unstable();
    let mut pinned_files: Vec<&str> = pins.iter().map(|(_, f)| f.as_str()).collect();
    pinned_files.sort_unstable();
    assert_eq!(pinned_files, data_files, "data/SHA256SUMS against data/");
    // Every benchmark folder carries its licence.
    for file in &data_files {
        let folder = file.split('/').next().unwrap();
        assert!(
            files
                .iter()
                .any(|f| f.starts_with(&format!("{folder}/LICENSE"))),
            "data/{folder}/ has no LICENSE file"
        );
    }
}

#[test]
fn the_readme_table_gives_the_pinned_sums() {
    let readme = std::fs::read_to_string(root().join("data/README.md")).unwrap();
    for (sum, file) in pinned() {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{file}` |")))
            .unwrap_or_else(|| panic!("data/README.md has no table row for {file}"));
        assert!(
            row.contains(&format!("`{sum}`")),
            "data/README.md's row for {file} lacks its pinned sum {sum}: {row}"
        );
    }
}

/// The harness runs without `$DLM_BENCH_DATA` (`common::command` removes it) and the suite
/// names no `data_dir`, so each plugin finds GSM8K, MBPP, sanitized MBPP and HumanEval in its
/// default folder: the reference rows (gold answers, canonical solutions) score perfectly.
#[test]
fn the_plugins_read_the_repository_data_by_default() {
    let dir = scratch("data-default");
    let suite = dir.join("suite.yaml");
    let code = "config: {allow_code_execution: true, limit: 2, jobs: 1}";
    std::fs::write(
        &suite,
        format!(
            "name: data-default
samples: 2
lengths: [512]
tasks:
  - {{name: gsm8k, plugin: dlm-reasoning, task: gsm8k, config: {{limit: 2}}}}
  - {{name: mbpp, plugin: dlm-code, task: mbpp, {code}}}
  - {{name: mbpp-sanitized, plugin: dlm-code, task: mbpp-sanitized, {code}}}
  - {{name: humaneval, plugin: dlm-code, task: humaneval, {code}}}
models:
  - {{name: unused, plugin: dlm-replay, model: replay, config: {{path: nowhere.jsonl}}}}
samplers:
  - sampler: replay
"
        ),
    )
    .unwrap();
    let run_dir = dir.join("run");
    let out = command()
        .args(["run", suite.to_str().unwrap(), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    let s = summary(&run_dir);
    let metric = |c: &Value, m: &str| c["metrics"][m]["value"].as_f64();

    let gsm8k = cell(&s, "gsm8k", "reference", None, None);
    assert_eq!(gsm8k["status"], "ok", "{gsm8k}\n{}", text(&out));
    assert_eq!(gsm8k["n"], 2, "{gsm8k}");
    assert_eq!(metric(gsm8k, "accuracy_strict"), Some(1.0), "{gsm8k}");

    for task in ["mbpp", "mbpp-sanitized", "humaneval"] {
        let c = cell(&s, task, "reference", None, None);
        let cause = c["cause"].as_str().unwrap_or_default();
        if cause.contains("the sandbox is unavailable") {
            skip::absent(&skip::SANDBOX, cause);
            return;
        }
        assert_eq!(c["status"], "ok", "{task}: {c}\n{}", text(&out));
        assert_eq!(c["n"], 2, "{task}: {c}");
        assert_eq!(metric(c, "passed"), Some(1.0), "{task}: {c}");
    }
}

/// The skip helper's rule (tests/common/skip.rs): a missing data file fails the test under
/// `CI=true`, a `DLM_BENCH_REQUIRE_*` variable set to anything but empty or `0` makes its
/// dependency required, and a library built by a separate step is not required by `CI=true`.
#[test]
fn skips_turn_into_failures_where_the_dependency_is_required() {
    // An environment of the given variables only.
    let env = |pairs: &[(&str, &str)]| {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    };
    assert_eq!(skip::requirement(&skip::DATA, env(&[])), None);
    assert_eq!(
        skip::requirement(&skip::DATA, env(&[("CI", "false")])),
        None
    );
    assert_eq!(
        skip::requirement(&skip::DATA, env(&[("CI", "true")])).as_deref(),
        Some("CI=true")
    );
    let sandbox_var = skip::SANDBOX.require_var.unwrap();
    for (value, required) in [("1", true), ("yes", true), ("0", false), ("", false)] {
        assert_eq!(
            skip::requirement(&skip::SANDBOX, env(&[(sandbox_var, value)])).is_some(),
            required,
            "{sandbox_var}={value:?}"
        );
    }
    let library = skip::Dependency {
        name: "a library",
        fix: "build it",
        require_var: Some("EXAMPLE_REQUIRE_LIBRARY"),
        required_in_ci: false,
    };
    assert_eq!(skip::requirement(&library, env(&[("CI", "true")])), None);
    assert_eq!(
        skip::requirement(&library, env(&[("EXAMPLE_REQUIRE_LIBRARY", "1")])).as_deref(),
        Some("EXAMPLE_REQUIRE_LIBRARY=1")
    );
}
