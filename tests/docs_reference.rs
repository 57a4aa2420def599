//! docs/reference.md against the code: every key the suite parser accepts is documented and
//! every documented key is accepted; every exit code the CLI defines is documented (and the
//! command-line and input errors give the codes the page says); every `DLM_*` environment
//! variable named in the source is documented and every documented one exists; every output file
//! the harness names is listed.

mod common;
use common::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn reference() -> String {
    std::fs::read_to_string(root().join("docs/reference.md")).unwrap()
}

/// The text of the section that starts with the line `heading` (up to the next heading of the
/// same or a higher level).
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let level = heading.split(' ').next().unwrap();
    let start = doc
        .lines()
        .scan(0, |at, line| {
            let here = *at;
            *at += line.len() + 1;
            Some((here, line))
        })
        .find(|(_, line)| line.starts_with(heading))
        .unwrap_or_else(|| panic!("docs/reference.md has no heading `{heading}`"))
        .0;
    let body = &doc[start..];
    let body_start = body.find('\n').map_or(body.len(), |i| i + 1);
    let end = body[body_start..]
        .lines()
        .scan(body_start, |at, line| {
            let here = *at;
            *at += line.len() + 1;
            Some((here, line))
        })
        .find(|(_, line)| {
            let hashes = line.chars().take_while(|c| *c == '#').count();
            hashes > 0 && hashes <= level.len() && line[hashes..].starts_with(' ')
        })
        .map_or(body.len(), |(at, _)| at);
    &body[..end]
}

/// The first column of a section's table rows, without backticks (header and rule excluded).
fn first_column(section: &str) -> Vec<String> {
    section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("|---"))
        .skip(1)
        .map(|l| {
            l.split('|')
                .nth(1)
                .unwrap()
                .trim()
                .trim_matches('`')
                .to_string()
        })
        .collect()
}

#[test]
fn every_suite_key_is_documented_and_every_documented_key_exists() {
    let doc = reference();
    for (place, keys) in dlm_bench::suite::suite_keys() {
        assert!(
            !keys.is_empty(),
            "the parser's key list for `{place}` is empty"
        );
        let documented: BTreeSet<String> = first_column(section(&doc, &format!("### `{place}`")))
            .into_iter()
            .collect();
        let accepted: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
        let missing: Vec<_> = accepted.difference(&documented).collect();
        let unknown: Vec<_> = documented.difference(&accepted).collect();
        assert!(
            missing.is_empty(),
            "docs/reference.md, `{place}`: keys the parser accepts but the page does not document: {missing:?}"
        );
        assert!(
            unknown.is_empty(),
            "docs/reference.md, `{place}`: documented keys the parser refuses: {unknown:?}"
        );
    }
}

/// `train` keys are matched one by one in the parser (every other key goes to the plugin), so
/// there is no list to compare with: each documented key must be one the harness checks, which
/// shows when a bad value is refused naming `train.KEY` (a plugin's key is passed on unread).
#[test]
fn every_documented_train_key_is_read_by_the_harness() {
    let doc = reference();
    let keys = first_column(section(&doc, "### `train`"));
    assert!(keys.contains(&"steps".to_string()), "{keys:?}");
    for key in &keys {
        let train = if key == "steps" || key == "batch_size" {
            format!("{{{key}: -1}}")
        } else {
            format!("{{steps: 10, batch_size: 4, {key}: -1}}")
        };
        let text = format!(
            "name: t\nlengths: [8]\ntasks: [{{name: a, plugin: dlm-formal, task: ngram}}]\nmodels: [{{name: m, plugin: dlm-neural, model: mdm, train: {train}}}]\nsamplers: [{{sampler: ddpm_cache, steps: [2]}}]\n"
        );
        let error = match dlm_bench::suite::Suite::parse(Path::new("t.yaml"), text) {
            Ok(_) => panic!("`train.{key}: -1` was accepted: the harness does not read `{key}`"),
            Err(e) => e.to_string(),
        };
        assert!(
            error.contains(&format!("train.{key}")),
            "`train.{key}: -1` should be refused by the harness naming `train.{key}`: {error}"
        );
    }
}

/// Rust source files under the harness, in `(path, text)` pairs.
fn harness_sources() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    walk(&root().join("harness/src"), &mut |p| {
        if p.extension().is_some_and(|e| e == "rs") {
            out.push((p.to_owned(), std::fs::read_to_string(p).unwrap()));
        }
    });
    out
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            if name != "target" && (!name.starts_with('.') || name == ".ci") {
                walk(&p, f);
            }
        } else {
            f(&p);
        }
    }
}

#[test]
fn every_exit_code_is_documented() {
    let doc = reference();
    let table = section(&doc, "## Exit codes");
    let documented: BTreeSet<u8> = first_column(table)
        .iter()
        .map(|c| c.parse().expect("an exit code"))
        .collect();
    // The codes the harness names: `const EXIT_…: u8 = N;`, and the standard ones main uses.
    let mut defined = BTreeSet::new();
    for (path, text) in harness_sources() {
        for line in text.lines() {
            let line = line.trim_start().trim_start_matches("pub ");
            let Some(rest) = line.strip_prefix("const EXIT_") else {
                continue;
            };
            let (name, value) = rest.split_once(": u8 = ").unwrap_or_else(|| {
                panic!(
                    "{}: an exit code constant not of the form `const EXIT_NAME: u8 = N;`: {line}",
                    path.display()
                )
            });
            let code: u8 = value.trim_end_matches(';').parse().unwrap();
            assert!(
                table.contains(&format!("`EXIT_{name}`")),
                "docs/reference.md, exit codes: `EXIT_{name}` ({}) is not named",
                path.display()
            );
            defined.insert(code);
        }
    }
    let main = std::fs::read_to_string(root().join("harness/src/main.rs")).unwrap();
    if main.contains("ExitCode::SUCCESS") {
        defined.insert(0);
    }
    if main.contains("ExitCode::FAILURE") {
        defined.insert(1);
    }
    // clap exits with 2 on a bad command line.
    defined.insert(2);
    assert_eq!(
        documented, defined,
        "docs/reference.md's exit codes against the codes the CLI defines"
    );

    // The two the page promises for input and usage errors, from the binary itself.
    let bad_suite = scratch("docs-reference").join("missing.yaml");
    let r = run(&["plan", bad_suite.to_str().unwrap()]);
    assert_eq!(
        r.status.code(),
        Some(1),
        "a missing suite file: {}",
        text(&r)
    );
    let r = run(&["plan", "--no-such-option"]);
    assert_eq!(r.status.code(), Some(2), "an unknown option: {}", text(&r));
}

/// Every `DLM_…` name in `text` (ASCII upper case, digits and `_`).
fn dlm_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("DLM_") {
        let start = i + at;
        let preceded =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let mut end = start + 4;
        while end < bytes.len()
            && (bytes[end].is_ascii_uppercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'_')
        {
            end += 1;
        }
        // A name ending in `_` is a prefix (`DLM_BENCH_REQUIRE_*`), not a variable.
        if !preceded && end > start + 4 && bytes[end - 1] != b'_' {
            out.insert(text[start..end].to_string());
        }
        i = end;
    }
    out
}

#[test]
fn every_environment_variable_in_the_source_is_documented() {
    let doc = reference();
    // Source, scripts and build files of every crate, the tools and CI (not docs, not patches/,
    // which is a vendored upstream crate).
    let mut in_source = BTreeSet::new();
    for top in ["harness", "plugins", "tests", "benches", "tools", ".ci"] {
        let dir = root().join(top);
        if !dir.is_dir() {
            continue;
        }
        walk(&dir, &mut |p| {
            let name = p.file_name().unwrap().to_string_lossy();
            let source = matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("rs" | "sh" | "py" | "toml")
            ) || (top == ".ci" && name == "run");
            if source {
                if let Ok(text) = std::fs::read_to_string(p) {
                    in_source.extend(dlm_names(&text));
                }
            }
        });
    }
    assert!(
        in_source.contains("DLM_BENCH_LOG") && in_source.contains("DLM_BENCH_DATA"),
        "the scan found the harness's and the plugins' variables: {in_source:?}"
    );
    let missing: Vec<_> = in_source
        .iter()
        .filter(|name| !doc.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "DLM_* names in the source that docs/reference.md does not document: {missing:?}"
    );
    let documented = dlm_names(section(&doc, "## Environment variables"));
    let unknown: Vec<_> = documented.difference(&in_source).collect();
    assert!(
        unknown.is_empty(),
        "docs/reference.md documents DLM_* names no source file uses: {unknown:?}"
    );
}

#[test]
fn every_output_file_of_a_run_is_documented() {
    let doc = reference();
    let files = first_column(section(&doc, "## Output files of a run"));
    for name in [
        dlm_bench::results::MANIFEST,
        dlm_bench::results::SAMPLES,
        dlm_bench::results::CELLS,
        dlm_bench::results::SUMMARY,
        dlm_bench::results::REPORT,
        dlm_bench::results::LOCK,
        dlm_bench::report::REPORT_JSON,
        dlm_bench::training::TRAINING,
    ] {
        assert!(
            files.iter().any(|f| f == name),
            "docs/reference.md, output files: `{name}` is not listed ({files:?})"
        );
    }
}
