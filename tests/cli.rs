//! The command line through the real binary: bad input exits 1 with its message on stderr (a
//! missing or non-library file given to `describe`, an invalid `--jobs` or `--shard`), a
//! malformed command line exits 2; did-you-mean never offers the user's own spelling back;
//! every command and option has help text; `run --tasks/--models/--limit` runs exactly the
//! selected cells and says so in the manifest; `export` writes summary.json's figures.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Output;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit 1, nothing on stdout, and stderr containing every one of `expected`.
fn assert_bad_input(out: &Output, expected: &[&str]) {
    assert_eq!(out.status.code(), Some(1), "{}", text(out));
    assert!(stdout(out).trim().is_empty(), "{}", text(out));
    for e in expected {
        assert!(
            stderr(out).contains(e),
            "expected `{e}` on stderr: {}",
            text(out)
        );
    }
}

#[test]
fn bad_libraries_and_option_values_exit_1_on_stderr() {
    let dir = scratch("cli-bad-input");
    let missing = dir.join("libnothing.so");
    assert_bad_input(
        &run(&["describe", missing.to_str().unwrap()]),
        &["libnothing.so", "no such file"],
    );
    // A text file named like a library, and one named like a crate: both are files.
    let fake = dir.join("libfake.so");
    std::fs::write(&fake, "not a shared library\n").unwrap();
    assert_bad_input(
        &run(&["describe", fake.to_str().unwrap()]),
        &["libfake.so", "cannot be loaded as a dlm-bench plugin"],
    );
    assert_bad_input(
        &run(&["list", missing.to_str().unwrap()]),
        &["libnothing.so", "no such file"],
    );
    let out = command()
        .current_dir(&dir)
        .args(["describe", "libfake.so"])
        .output()
        .unwrap();
    assert_bad_input(&out, &["cannot be loaded as a dlm-bench plugin"]);

    let suite = root().join("tests/suites/tiny.yaml");
    let suite = suite.to_str().unwrap();
    assert_bad_input(&run(&["run", suite, "--jobs", "0"]), &["--jobs", "0"]);
    assert_bad_input(&run(&["run", suite, "--shard", "5/3"]), &["--shard", "5/3"]);
    assert_bad_input(&run(&["run", suite, "--limit", "0"]), &["--limit"]);
    // A malformed command line is clap's usage error, 2, also on stderr.
    let out = run(&["run", suite, "--no-such-option"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("--no-such-option"), "{}", text(&out));
    // Help is not an error.
    let out = run(&["run", "--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stdout(&out).contains("--tasks"), "{}", text(&out));
}

#[test]
fn did_you_mean_never_suggests_the_input() {
    for (name, candidates) in [
        ("ddpm-cache", vec!["ddpm-cache", "ddpm_cache"]),
        ("abc", vec!["abc"]),
        ("gsm8k", vec!["gsm8k", "gsm8k-cot", "arith"]),
    ] {
        let hint = dlm_bench::suite::did_you_mean(name, candidates.iter().copied());
        assert!(!hint.contains(&format!("`{name}`?")), "{name}: {hint}");
    }
    // The case seen: the suite's sampler list misspells `ddpm_cache` as `ddpm-cache` and a model
    // asks for `ddpm_cache`; the close name is the user's own typo, so the message points at it.
    let dir = scratch("cli-did-you-mean");
    let text_of = std::fs::read_to_string(root().join("tests/suites/tiny.yaml")).unwrap();
    let edited = text_of
        .replace("model: oracle", "model: oracle\n    samplers: [ddpm_cache]")
        .replace("- sampler: ddpm_cache", "- sampler: ddpm-cache");
    let suite = dir.join("typo.yaml");
    std::fs::write(&suite, &edited).unwrap();
    let line = edited
        .lines()
        .position(|l| l.contains("- sampler: ddpm-cache"))
        .unwrap()
        + 1;
    let out = run(&["plan", suite.to_str().unwrap()]);
    assert_bad_input(
        &out,
        &[
            "asks for sampler `ddpm_cache`",
            &format!("defines `ddpm-cache` (line {line})"),
        ],
    );
    assert!(
        !stderr(&out).contains("did you mean `ddpm-cache`"),
        "{}",
        text(&out)
    );
}

/// The entries of one section (`Arguments:`, `Options:`, `Commands:`) of clap's short help
/// that have no help text: an entry (indented 2 to 6) has its text on its line after two
/// spaces or more, or on the next line, indented further (clap's next-line layout: 10).
fn entries_without_help(help: &str, section: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == section) else {
        return Vec::new();
    };
    let body: Vec<&str> = lines[start + 1..]
        .iter()
        .take_while(|l| l.starts_with(' '))
        .copied()
        .collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut missing = Vec::new();
    for (i, line) in body.iter().enumerate() {
        let entry_indent = indent(line);
        if entry_indent > 6 {
            continue; // a continuation line
        }
        let rest = line.trim_start();
        let has_text_here = rest
            .find("  ")
            .is_some_and(|at| !rest[at..].trim().is_empty());
        let has_text_below = body.get(i + 1).is_some_and(|next| indent(next) > 6);
        if !has_text_here && !has_text_below {
            missing.push(rest.to_string());
        }
    }
    missing
}

#[test]
fn every_command_and_option_has_help_text() {
    // The reader finds a missing text in both of clap's layouts.
    let same_line = "Options:\n      --a <A>  Text\n      --b <B>\n  -h, --help  Print help\n";
    assert_eq!(entries_without_help(same_line, "Options:"), ["--b <B>"]);
    let next_line =
        "Options:\n      --a <A>\n          Text\n      --b <B>\n  -h, --help\n          Print help\n";
    assert_eq!(entries_without_help(next_line, "Options:"), ["--b <B>"]);
    let top = run(&["--help"]);
    assert_eq!(top.status.code(), Some(0), "{}", text(&top));
    let top = stdout(&top);
    assert!(entries_without_help(&top, "Commands:").is_empty(), "{top}");
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| l.trim_end() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    for expected in ["run", "train", "describe", "report", "slurm", "export"] {
        assert!(
            commands.iter().any(|c| c == expected),
            "{expected}: {commands:?}"
        );
    }
    let mut missing = BTreeMap::new();
    for command in &commands {
        let out = run(&[command, "-h"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let help = stdout(&out);
        for section in ["Arguments:", "Options:"] {
            let m = entries_without_help(&help, section);
            if !m.is_empty() {
                missing.insert(format!("{command} {section}"), m);
            }
        }
    }
    assert!(missing.is_empty(), "no help text: {missing:#?}");
}

/// The tiny suite with a small sample count, run with `args` added, into `name`.
fn filtered_run(name: &str, args: &[&str]) -> (std::path::PathBuf, Output) {
    let dir = scratch(name);
    let run_dir = dir.join("run");
    let out = command()
        .args([
            "run",
            root().join("tests/suites/tiny.yaml").to_str().unwrap(),
            "--out",
        ])
        .arg(&run_dir)
        .args(args)
        .output()
        .unwrap();
    (run_dir, out)
}

fn manifest(run_dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn filters_run_exactly_the_selected_cells_and_say_so() {
    // tiny.yaml: tasks bigram-ter and bigram-ser; the oracle with ddpm_cache at 1, 4 and 12
    // steps and left_to_right; reference rows; 300 samples per cell.
    let (run_dir, out) = filtered_run(
        "cli-filters",
        &[
            "--tasks",
            "bigram-ter",
            "--models",
            "oracle",
            "--limit",
            "20",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stdout(&out).contains("filtered run (--tasks bigram-ter --models oracle --limit 20)"));
    let s = summary(&run_dir);
    let mut keys: Vec<(String, String, String, u64)> = s
        .iter()
        .map(|c| {
            assert_eq!(c["n"], 20, "{c}");
            (
                c["task"].as_str().unwrap().to_string(),
                c["model"].as_str().unwrap().to_string(),
                c["sampler"].as_str().unwrap().to_string(),
                c["steps"].as_u64().unwrap(),
            )
        })
        .collect();
    keys.sort();
    let expected: Vec<(String, String, String, u64)> = [
        ("ddpm_cache", 1),
        ("ddpm_cache", 4),
        ("ddpm_cache", 12),
        ("left_to_right", 12),
    ]
    .iter()
    .map(|(s, n)| ("bigram-ter".into(), "oracle".into(), s.to_string(), *n))
    .collect();
    assert_eq!(keys, expected);
    let m = manifest(&run_dir);
    assert_eq!(
        m["filters"],
        serde_json::json!({"tasks": ["bigram-ter"], "models": ["oracle"], "limit": 20})
    );

    // A resume must keep the filters: without them it would mix parts of the suite.
    let out = run(&[
        "run",
        root().join("tests/suites/tiny.yaml").to_str().unwrap(),
        "--resume",
        run_dir.to_str().unwrap(),
    ]);
    assert_bad_input(
        &out,
        &[
            "cannot resume",
            "--tasks bigram-ter --models oracle --limit 20",
        ],
    );

    // `reference` selects the ground-truth rows alone.
    let (run_dir, out) = filtered_run(
        "cli-filters-reference",
        &["--models", "reference", "--limit", "10"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = summary(&run_dir);
    let mut tasks: Vec<&str> = s.iter().map(|c| c["task"].as_str().unwrap()).collect();
    tasks.sort();
    assert_eq!(tasks, ["bigram-ser", "bigram-ter"]);
    assert!(s.iter().all(|c| c["model"] == "reference"), "{s:?}");

    // An unknown name fails before anything runs, listing the suite's names.
    let (run_dir, out) = filtered_run("cli-filters-unknown", &["--tasks", "bigram-tr"]);
    assert_bad_input(
        &out,
        &[
            "--tasks",
            "`bigram-tr`",
            "did you mean `bigram-ter`",
            "bigram-ter, bigram-ser",
        ],
    );
    assert!(!run_dir.exists());
    let (_, out) = filtered_run("cli-filters-unknown-model", &["--models", "orcale"]);
    assert_bad_input(&out, &["--models", "`orcale`", "oracle, reference"]);
}

/// `summary.json`'s figure for an export column: a top-level field or a task metric, and the
/// ends of its interval.
fn summary_figure(cell: &Value, column: &str) -> Option<Option<f64>> {
    let interval = [
        ("_ci_low", "_ci", 0, "ci"),
        ("_ci_high", "_ci", 1, "ci"),
        ("_q1", "_iqr", 0, ""),
        ("_q3", "_iqr", 1, ""),
    ];
    for (suffix, field, end, metric_ci) in interval {
        if let Some(base) = column.strip_suffix(suffix) {
            if let Some(v) = cell.get(format!("{base}{field}")) {
                return Some(v[end].as_f64());
            }
            if let Some(m) = cell["metrics"].get(base) {
                if !metric_ci.is_empty() {
                    return Some(m[metric_ci][end].as_f64());
                }
            }
        }
    }
    if let Some(v) = cell.get(column) {
        return Some(v.as_f64());
    }
    cell["metrics"].get(column).map(|m| m["value"].as_f64())
}

#[test]
fn export_writes_the_summary_figures() {
    let (run_dir, out) = filtered_run("cli-export", &["--tasks", "bigram-ser", "--limit", "40"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = summary(&run_dir);

    let out = run(&["export", run_dir.to_str().unwrap(), "--csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let csv = stdout(&out);
    assert!(!csv.contains('"'), "no field here needs quoting: {csv}");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        &header[..8],
        ["task", "model", "sampler", "steps", "length", "seed", "samples", "status"]
    );
    for needed in [
        "ter",
        "ter_ci_low",
        "ter_ci_high",
        "ser",
        "ser_ci_low",
        "ser_ci_high",
        "nfe",
    ] {
        assert!(header.contains(&needed), "{needed}: {header:?}");
    }
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), s.len());
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
        let field = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        let cell = s
            .iter()
            .find(|c| {
                c["task"] == field("task")
                    && c["model"] == field("model")
                    && c["sampler"].as_str().unwrap_or("") == field("sampler")
                    && c["steps"]
                        .as_u64()
                        .map(|x| x.to_string())
                        .unwrap_or_default()
                        == field("steps")
            })
            .unwrap_or_else(|| panic!("no summary cell for {row:?}"));
        assert_eq!(field("length"), cell["length"].to_string());
        assert_eq!(field("samples"), "40");
        assert_eq!(field("status"), cell["status"].as_str().unwrap());
        for (i, column) in header.iter().enumerate().skip(8) {
            let expected = summary_figure(cell, column)
                .unwrap_or_else(|| panic!("column `{column}` is not a summary figure"));
            let got = (!row[i].is_empty()).then(|| row[i].parse::<f64>().unwrap());
            assert_eq!(got, expected, "{column} of {row:?}");
        }
    }

    let out = run(&["export", run_dir.to_str().unwrap(), "--markdown"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = stdout(&out);
    assert!(
        md.starts_with("Filtered run of suite `tiny` (--tasks bigram-ser --limit 40)"),
        "{md}"
    );
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), s.len() + 2, "{md}");
    assert!(table[0].contains("TER [95% CI]"), "{md}");

    // Neither format, or a folder that is not a run: bad input.
    let out = run(&["export", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = run(&["export", root().join("tests").to_str().unwrap(), "--csv"]);
    assert_bad_input(&out, &["not a dlm-bench run directory"]);
}
