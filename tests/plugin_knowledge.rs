//! The harness knows plugins only through what they declare (descriptors, task descriptions,
//! capabilities): it never recognises a plugin, one of its components or one of its
//! configuration keys by name. This test fails when the name of a workspace plugin, a task of
//! `dlm-formal` (read from its `TASKS`) or one of the formal languages' configuration keys
//! appears as a string literal in the harness's code outside its test modules.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
            out.push(path);
        }
    }
}

/// The names the harness must not know: plugin crate names, dlm-formal's tasks and the
/// language configuration keys the theorem checks once read.
fn plugin_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("plugins"))
        .unwrap()
        .map(|e| e.unwrap().path().join("Cargo.toml"))
        .filter(|toml| toml.exists())
        .map(|toml| {
            let text = std::fs::read_to_string(toml).unwrap();
            let line = text.lines().find(|l| l.starts_with("name = ")).unwrap();
            line.trim_start_matches("name = ")
                .trim_matches('"')
                .to_string()
        })
        .collect();
    assert!(names.contains(&"dlm-formal".to_string()), "{names:?}");
    let formal = std::fs::read_to_string(root().join("plugins/formal/src/plugin.rs")).unwrap();
    let start = formal
        .find("pub const TASKS: &[&str] = &[")
        .expect("TASKS in dlm-formal");
    let end = start + formal[start..].find("];").unwrap();
    let tasks: Vec<String> = formal[start..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    assert!(tasks.len() >= 4, "{tasks:?}");
    names.extend(tasks);
    names.extend(["variant", "threshold", "sparse"].map(String::from));
    names
}

/// `file:line: text` of every code line (comments and test modules left out) holding one of
/// `names` as a string literal.
fn literals(text: &str, names: &[String]) -> Vec<(usize, String)> {
    let code = text.split("#[cfg(test)]").next().unwrap();
    let mut found = Vec::new();
    for (i, line) in code.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        if names.iter().any(|n| line.contains(&format!("\"{n}\""))) {
            found.push((i + 1, line.trim().to_string()));
        }
    }
    found
}

#[test]
fn the_measure_finds_a_plugin_name() {
    let names = vec!["interval".to_string()];
    let text = "// \"interval\" in a comment\nfn f(c: &str) -> bool {\n    c == \"interval\"\n}\n#[cfg(test)]\nmod tests { const X: &str = \"interval\"; }\n";
    assert_eq!(
        literals(text, &names),
        vec![(3, "c == \"interval\"".to_string())]
    );
}

#[test]
fn the_harness_names_no_plugin_component_or_config_key() {
    let names = plugin_names();
    let mut files = Vec::new();
    rust_files(&root().join("harness/src"), &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, code) in literals(&text, &names) {
            found.push(format!("{}:{line}: {code}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "the harness recognises plugins by name (let the plugin declare it instead):\n{}",
        found.join("\n")
    );
}
