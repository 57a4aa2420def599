//! The harness never interprets a sampler's name: what it needs to know (one step per token,
//! parameters) comes from the plugin's descriptor (`ComponentInfo::sampler_info`, filled in by
//! the SDK). This test fails when a sampler name appears as a string literal in the harness's
//! code outside its test modules.

mod common;
use common::*;

/// The SDK's sampler names, asked of the SDK itself (its registry and the AR sampler, printed
/// by its `sampler_names` example: the harness may not depend on the SDK, even for tests).
fn sampler_names() -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "-p",
            "dlm-sdk",
            "--example",
            "sampler_names",
        ])
        .current_dir(root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(
        names.len() >= 9 && names.iter().any(|n| n == "ar"),
        "{names:?}"
    );
    names
}

/// Every `.rs` file under `dir`, subfolders included.
fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn no_sampler_name_in_the_harness_code() {
    let names = sampler_names();
    let mut found = Vec::new();
    let files = rust_files(&root().join("harness/src"));
    assert!(
        files.len() > 13,
        "the harness's sources, subfolders included: {files:?}"
    );
    for path in files {
        // A folder's unit tests (`tests.rs`, `tests/…`) are test modules as a whole.
        if path
            .components()
            .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Code before the unit tests.
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (i, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for n in &names {
                // A config key that happens to share a sampler's name (`.get("threshold")`)
                // is not a sampler name.
                let literal = format!("\"{n}\"");
                let keyed = format!("get({literal})");
                if line.contains(&literal) && !line.contains(&keyed) {
                    found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "sampler names interpreted by the harness (describe them in the SDK instead):\n{}",
        found.join("\n")
    );
}
