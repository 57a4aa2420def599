//! The harness's code stays in readable pieces (issue 13): no file under `harness/src` over
//! 800 lines, no function over 150. A function is measured from its `fn` line to the closing
//! brace at the same indentation, as rustfmt lays it out.

mod common;
use common::*;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 800;
const MAX_FUNCTION_LINES: usize = 150;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(name, first line, length)` of every function in `text`.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let rest = line.trim_start();
        let rest = rest
            .strip_prefix("pub(crate) ")
            .or_else(|| rest.strip_prefix("pub(super) "))
            .or_else(|| rest.strip_prefix("pub "))
            .unwrap_or(rest);
        let Some(signature) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((name, i + 1, end + 2));
        }
    }
    out
}

#[test]
fn the_measure_finds_functions_and_their_length() {
    let text = "fn a() {\n    1;\n}\n\nimpl X {\n    pub(super) fn b(&self) {\n        if x {\n        }\n    }\n}\n";
    let found = functions(text);
    assert_eq!(
        found,
        vec![("a".to_string(), 1, 3), ("b".to_string(), 6, 4)]
    );
}

#[test]
fn no_long_files_or_functions_in_the_harness() {
    let mut files = Vec::new();
    rust_files(&root().join("harness/src"), &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root()).unwrap_or(file).display();
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            problems.push(format!(
                "{shown}: {lines} lines (at most {MAX_FILE_LINES}; split it by concern)"
            ));
        }
        for (name, line, length) in functions(&text) {
            if length > MAX_FUNCTION_LINES {
                problems.push(format!(
                    "{shown}:{line}: fn {name} is {length} lines (at most {MAX_FUNCTION_LINES}; break it into named steps)"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
