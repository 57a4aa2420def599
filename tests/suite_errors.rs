//! Malformed suites produce an error naming file, line and column — never a panic, never a
//! half-created run directory.

mod common;
use common::*;

const BASE: &str = "name: s
samples: 4
lengths: [8]
tasks:
  - name: bigram
    plugin: dlm-formal
    task: ngram
    config: {order: 2}
models:
  - name: oracle
    plugin: dlm-formal
    model: oracle
samplers:
  - sampler: ddpm_cache
    steps: [1, 2]
";

/// Run a suite with `from` replaced by `to`; expect exit code 1 and return stderr.
fn error_for(name: &str, from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    let dir = scratch(&format!("suite-errors-{name}"));
    let suite = dir.join("s.yaml");
    std::fs::write(&suite, BASE.replace(from, to)).unwrap();
    let out_dir = dir.join("run");
    let r = run(&[
        "run",
        suite.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        r.status.code(),
        Some(1),
        "{name}: expected a clean error exit\n{}",
        text(&r)
    );
    assert!(
        !out_dir.exists(),
        "{name}: no run directory for a bad suite"
    );
    let stderr = String::from_utf8_lossy(&r.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    stderr
}

fn assert_located(stderr: &str, line: usize, col: usize, needle: &str) {
    let at = format!("s.yaml:{line}:{col}: ");
    assert!(stderr.contains(&at), "expected location {at} in:\n{stderr}");
    assert!(stderr.contains(needle), "expected `{needle}` in:\n{stderr}");
}

/// Whether `steps` applies is the plugin's to say (its descriptor's `sampler_info`); the
/// harness checks it once plugins are described, still located.
#[test]
fn steps_follow_the_samplers_descriptor() {
    let e = error_for(
        "l2r-steps",
        "samplers:\n",
        "samplers:\n  - sampler: left_to_right\n    steps: [8]\n",
    );
    assert_located(&e, 15, 12, "takes exactly one step per token");
    let e = error_for("missing-steps", "    steps: [1, 2]\n", "");
    assert_located(&e, 14, 14, "sampler `ddpm_cache` needs `steps: [...]`");
}

#[test]
fn zero_steps() {
    assert_located(
        &error_for("zero-steps", "steps: [1, 2]", "steps: [1, 0]"),
        15,
        16,
        "steps must be at least 1",
    );
}

#[test]
fn unknown_plugin_crate_suggests_the_right_one() {
    let e = error_for(
        "unknown-plugin",
        "    plugin: dlm-formal\n    model",
        "    plugin: dlm-formall\n    model",
    );
    assert_located(&e, 11, 13, "did you mean `dlm-formal`?");
}

#[test]
fn unknown_task_component_suggests() {
    assert_located(
        &error_for("unknown-task", "task: ngram", "task: ngrm"),
        7,
        11,
        "did you mean `ngram`?",
    );
}

#[test]
fn unsupported_sampler_suggests() {
    assert_located(
        &error_for("bad-sampler", "sampler: ddpm_cache", "sampler: ddpm_cahce"),
        14,
        14,
        "did you mean `ddpm_cache`?",
    );
}

#[test]
fn syntax_error_is_located() {
    let e = error_for("syntax", "lengths: [8]", "lengths: [8");
    assert_located(&e, 4, 6, "invalid YAML");
    let e = error_for("duplicate", "samples: 4", "samples: 4\nsamples: 5");
    assert_located(&e, 3, 1, "duplicate key `samples`");
}

#[test]
fn wrong_type_and_unknown_key_are_located() {
    assert_located(
        &error_for("type", "samples: 4", "samples: four"),
        2,
        10,
        "samples must be a whole number from 1 to 100000000, e.g. `samples: 400`; got `four`",
    );
    assert_located(
        &error_for("unknown-key", "samples: 4", "sample: 4"),
        2,
        1,
        "sample",
    );
}

#[test]
fn missing_plugin_library_path() {
    assert_located(
        &error_for(
            "missing-lib",
            "    plugin: dlm-formal\n    model",
            "    plugin: ./nowhere/libx.so\n    model",
        ),
        11,
        13,
        "does not exist",
    );
}

#[test]
fn missing_suite_file() {
    let r = run(&["run", "suites/does-not-exist.yaml"]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("cannot read suite file"),
        "{}",
        text(&r)
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 14 (items 5 and 6): bad numbers and types never panic, every refusal is located.

use dlm_bench::suite::{Suite, MAX_CELLS, MAX_TIMEOUT_SECONDS};
use std::path::{Path, PathBuf};

#[test]
fn huge_timeouts_are_refused_before_a_run_directory_exists() {
    assert_located(
        &error_for(
            "timeout-1e20",
            "samples: 4",
            "samples: 4\ntimeout_seconds: 1e20",
        ),
        3,
        18,
        "timeout_seconds must be at most 604800 seconds (7 days)",
    );
    let e = error_for(
        "train-timeout-1e300",
        "    model: oracle\n",
        "    model: oracle\n    train: {steps: 10, batch_size: 4, timeout_seconds: 1e300}\n",
    );
    assert_located(
        &e,
        13,
        56,
        "train.timeout_seconds must be at most 604800 seconds (7 days)",
    );
}

#[test]
fn type_errors_are_located_with_a_hint() {
    let e = error_for("samples-many", "samples: 4", "samples: \"many\"");
    assert_located(&e, 2, 10, "samples must be a whole number from 1 to");
    assert!(e.contains("e.g. `samples: 400`"), "{e}");
    let e = error_for("samples-fraction", "samples: 4", "samples: 1.5");
    assert_located(&e, 2, 10, "samples must be a whole number");
    assert!(!e.contains("invalid digit"), "{e}");
    assert_located(
        &error_for("lengths-scalar", "lengths: [8]", "lengths: 16"),
        3,
        10,
        "`lengths` must be a list, e.g. `lengths: [64]`",
    );
    assert_located(
        &error_for("steps-scalar", "steps: [1, 2]", "steps: 4"),
        15,
        12,
        "`steps` must be a list, e.g. `steps: [1, 4, 16]`",
    );
    assert_located(
        &error_for(
            "model-scalar",
            "  - name: oracle\n    plugin: dlm-formal\n    model: oracle\n",
            "  - oracle\n",
        ),
        10,
        5,
        "each entry of `models` must be a mapping",
    );
    assert_located(
        &error_for(
            "model-missing-plugin",
            "  - name: oracle\n    plugin: dlm-formal\n",
            "  - name: oracle\n",
        ),
        10,
        5,
        "has no `plugin` (the plugin: a workspace crate such as `dlm-formal`",
    );
    assert_located(
        &error_for("samples-power", "samples: 4", "samples: 10^12"),
        2,
        10,
        "samples must be a whole number",
    );
    assert_located(
        &error_for("samples-trillion", "samples: 4", "samples: 1000000000000"),
        2,
        10,
        "samples must be at most 100000000",
    );
}

#[test]
fn repeated_values_and_empty_models_are_refused() {
    assert_located(
        &error_for("dup-steps", "steps: [1, 2]", "steps: [1, 2, 1]"),
        15,
        19,
        "`steps` lists 1 twice (first at line 15:13)",
    );
    assert_located(
        &error_for("dup-lengths", "lengths: [8]", "lengths: [8, 8]"),
        3,
        14,
        "`lengths` lists 8 twice",
    );
    assert_located(
        &error_for("dup-seeds", "lengths: [8]", "lengths: [8]\nseeds: [0, 0]"),
        4,
        12,
        "`seeds` lists 0 twice",
    );
    assert_located(
        &error_for(
            "no-models",
            "models:\n  - name: oracle\n    plugin: dlm-formal\n    model: oracle\n",
            "models: []\n",
        ),
        9,
        9,
        "`models` is empty",
    );
}

#[test]
fn memory_is_checked_up_front() {
    let e = error_for(
        "cell-tokens",
        "samples: 4",
        "samples: 100000000\nbatch_size: 4",
    );
    assert_located(
        &e,
        2,
        10,
        "samples × length = 100000000 × 8 = 800000000 tokens in one cell",
    );
    assert!(e.contains("GiB"), "{e}");
}

#[test]
fn a_byte_order_mark_is_accepted_at_the_start_and_named_elsewhere() {
    let suite = Suite::parse(Path::new("bom.yaml"), format!("\u{feff}{BASE}")).unwrap();
    assert_eq!(suite.name, "s");
    let e = error_for("bom-key", "samples: 4", "\u{feff}samples: 4");
    assert_located(&e, 2, 1, "byte-order mark");
    assert!(e.contains("\\u{feff}samples"), "{e}");
}

/// The corpus: `tests/suites/malformed/*.yaml`, each with `# expect:` and `# at:` lines
/// (written by `generate.py` there).
fn corpus() -> Vec<(PathBuf, String, String)> {
    let dir = root().join("tests/suites/malformed");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            let text = text.trim_start_matches('\u{feff}');
            let header = |key: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("# {key}: ")))
                    .unwrap_or_else(|| panic!("{}: no `# {key}:` line", path.display()))
                    .to_string()
            };
            let (expect, at) = (header("expect"), header("at"));
            (path, expect, at)
        })
        .collect()
}

#[test]
fn malformed_corpus_is_refused_with_located_messages() {
    let files = corpus();
    assert!(files.len() >= 100, "only {} malformed suites", files.len());
    let mut failures = Vec::new();
    for (path, expect, at) in &files {
        let name = path.file_name().unwrap().to_string_lossy();
        let e = match Suite::load(path) {
            Ok(_) => {
                failures.push(format!("{name}: accepted"));
                continue;
            }
            Err(e) => e,
        };
        let shown = e.to_string();
        if !e.message.contains(expect.as_str()) {
            failures.push(format!("{name}: expected `{expect}` in:\n{shown}"));
        }
        match (&e.location, at.as_str()) {
            (None, _) => failures.push(format!("{name}: not located:\n{shown}")),
            (Some(_), "any") => {}
            (Some(l), want) => {
                if format!("{}:{}", l.line, l.column) != want {
                    failures.push(format!(
                        "{name}: located at {}:{}, expected {want}:\n{shown}",
                        l.line, l.column
                    ));
                }
                let prefix = format!("{}:{}:{}: ", path.display(), l.line, l.column);
                if !shown.starts_with(&prefix) {
                    failures.push(format!("{name}: does not start with {prefix}:\n{shown}"));
                }
                let lines = String::from_utf8_lossy(&std::fs::read(path).unwrap())
                    .lines()
                    .count();
                if l.line <= lines && !shown.contains(&format!("{:>5} | ", l.line)) {
                    failures.push(format!("{name}: the line is not quoted:\n{shown}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} malformed suites:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// The same corpus through the real binary: exit code 1, the located message, no panic and no
/// run directory.
#[test]
fn malformed_corpus_fails_the_cli_cleanly() {
    let dir = scratch("suite-errors-corpus");
    for (i, (path, expect, _)) in corpus().iter().enumerate() {
        let out_dir = dir.join(format!("run-{i}"));
        let r = run(&[
            "run",
            path.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{}\n{}", path.display(), text(&r));
        assert!(!stderr.contains("panicked"), "{}\n{stderr}", path.display());
        assert!(
            stderr.contains(expect.as_str()),
            "{}\n{stderr}",
            path.display()
        );
        assert!(!out_dir.exists(), "{}: a run directory", path.display());
    }
}

/// `lengths` keeps one meaning per task (issue 32, item 8): a text model with
/// `generation_length` (which its plugin declares as replacing the suite's `lengths`) beside
/// one of the same task without it, or beside several lengths, is refused before any cell —
/// by `plan` as by `run` — at the key, saying which key wins and what to change.
#[test]
fn lengths_and_generation_length_are_refused_when_they_would_mean_different_things() {
    let fixtures = root().join("plugins/hf/tests/fixtures");
    let suite_text = |lengths: &str, qwen2_extra: &str| {
        format!(
            "name: s
samples: 2
lengths: {lengths}
reference: false
tasks:
  - {{name: gsm8k, plugin: dlm-reasoning, task: gsm8k, config: {{limit: 2}}}}
models:
  - name: llada
    plugin: dlm-hf
    model: checkpoint
    config: {{path: {llada}, generation_length: 32}}
    samplers: [low_confidence]
  - name: qwen2
    plugin: dlm-hf
    model: ar-checkpoint
    config: {{path: {qwen2}{qwen2_extra}}}
    samplers: [ar]
samplers:
  - {{sampler: low_confidence, steps: [8], params: {{block_length: 32}}}}
  - {{sampler: ar}}
",
            llada = fixtures.join("llada-tiny").display(),
            qwen2 = fixtures.join("qwen2-tiny").display(),
        )
    };
    let dir = scratch("suite-errors-lengths");
    let suite = dir.join("s.yaml");
    // Refused by `plan` and by `run` at the first `key` in the suite; `run`'s message.
    let refused = |yaml: String, key: &str| -> String {
        std::fs::write(&suite, &yaml).unwrap();
        let (row, line) = yaml
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(key))
            .unwrap();
        let at = format!(
            "s.yaml:{}:{}: ",
            row + 1,
            line.find("generation_length").unwrap() + 1
        );
        let out_dir = dir.join("run");
        let plan = run(&["plan", suite.to_str().unwrap()]);
        let full = run(&[
            "run",
            suite.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        for out in [&plan, &full] {
            assert_eq!(out.status.code(), Some(1), "{}", text(out));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(&at), "expected {at} in:\n{err}");
        }
        assert!(!out_dir.exists(), "no run directory for a refused suite");
        String::from_utf8_lossy(&full.stderr).to_string()
    };

    // The AR model has no completion region: `lengths` is its whole sequence.
    let err = refused(suite_text("[64]", ""), "generation_length: 32");
    assert!(
        err.contains(
            "model `llada` sets `generation_length: 32`, which replaces the suite's `lengths`"
        ) && err.contains(
            "model `qwen2` (line 15), which also runs task `gsm8k`, has no `generation_length`"
        ) && err.contains("give `qwen2` `generation_length: 32` too"),
        "{err}"
    );
    // Another completion region for the AR model.
    let err = refused(
        suite_text("[64]", ", generation_length: 48"),
        "generation_length: 48",
    );
    assert!(
        err.contains("model `qwen2` sets `generation_length: 48`, but model `llada` (line 11), which also runs task `gsm8k`, sets `generation_length: 32`")
            && err.contains("give both models the same value"),
        "{err}"
    );
    // One region for both, but two lengths: the cells would repeat each other.
    let err = refused(
        suite_text("[64, 128]", ", generation_length: 32"),
        "generation_length: 32",
    );
    assert!(
        err.contains("its cells at each length would be the same generations"),
        "{err}"
    );
    // One region for both and one length: planned.
    std::fs::write(&suite, suite_text("[64]", ", generation_length: 32")).unwrap();
    let out = run(&["plan", suite.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// Values that replace a scalar: wrong types, huge and odd numbers, invisible characters.
    fn odd_value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("1e20".to_string()),
            Just("1e300".to_string()),
            Just("-1e300".to_string()),
            Just("1e999".to_string()),
            Just(".inf".to_string()),
            Just("NaN".to_string()),
            Just("99999999999999999999999".to_string()),
            Just("-9223372036854775808".to_string()),
            Just("9223372036854775807".to_string()),
            Just("1000000000000".to_string()),
            Just("0".to_string()),
            Just("-1".to_string()),
            Just("1.5".to_string()),
            Just("10^12".to_string()),
            Just("\"many\"".to_string()),
            Just("many".to_string()),
            Just("~".to_string()),
            Just("".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
            Just("[1, 1]".to_string()),
            Just("[[[[[[1]]]]]]".to_string()),
            Just("{a: {b: {c: 1}}}".to_string()),
            Just("\u{feff}x".to_string()),
            Just("&a 1".to_string()),
            Just("*a".to_string()),
            Just("!!str 1".to_string()),
            (0i64..5_000_000).prop_map(|n| n.to_string()),
            "[ -~]{0,12}",
            "\\PC{0,8}",
        ]
    }

    #[derive(Debug, Clone)]
    enum Mutation {
        /// Replace what follows the first `: ` (or `- `) of a line.
        Value(usize, String),
        DeleteLine(usize),
        DuplicateLine(usize),
        /// Insert text (random bytes, read as UTF-8) at a character position.
        Insert(usize, String),
        Bom,
        /// A value nested this deep, in flow (`[[…]]`) or block (`- - …`) style.
        Nest(usize, usize, bool),
        Indent(usize, usize),
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        prop_oneof![
            4 => (any::<usize>(), odd_value()).prop_map(|(l, v)| Mutation::Value(l, v)),
            1 => any::<usize>().prop_map(Mutation::DeleteLine),
            1 => any::<usize>().prop_map(Mutation::DuplicateLine),
            1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..16))
                .prop_map(|(i, b)| Mutation::Insert(i, String::from_utf8_lossy(&b).into_owned())),
            1 => (any::<usize>(), "[-:\\[\\]{},#&*!|>'\"%@` \n\t]{1,6}")
                .prop_map(|(i, s)| Mutation::Insert(i, s)),
            1 => Just(Mutation::Bom),
            1 => (any::<usize>(), 1usize..3000, any::<bool>())
                .prop_map(|(l, d, flow)| Mutation::Nest(l, d, flow)),
            1 => (any::<usize>(), 0usize..6).prop_map(|(l, n)| Mutation::Indent(l, n)),
        ]
    }

    fn apply(text: &str, m: &Mutation) -> String {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.is_empty() {
            lines.push(String::new());
        }
        let n = lines.len();
        match m {
            Mutation::Value(l, v) => {
                let line = &mut lines[l % n];
                if let Some(i) = line.find(": ").or_else(|| line.find("- ")) {
                    line.truncate(i + 2);
                    line.push_str(v);
                }
            }
            Mutation::DeleteLine(l) => {
                lines.remove(l % n);
            }
            Mutation::DuplicateLine(l) => {
                let copy = lines[l % n].clone();
                lines.insert(l % n, copy);
            }
            Mutation::Insert(i, s) => {
                let joined = lines.join("\n");
                let at = joined
                    .char_indices()
                    .map(|(b, _)| b)
                    .nth(i % joined.chars().count().max(1))
                    .unwrap_or(joined.len());
                return format!("{}{s}{}", &joined[..at], &joined[at..]);
            }
            Mutation::Bom => return format!("\u{feff}{}", lines.join("\n")),
            Mutation::Nest(l, d, flow) => {
                let line = &mut lines[l % n];
                if let Some(i) = line.find(": ") {
                    line.truncate(i + 2);
                    if *flow {
                        line.push_str(&format!("{}1{}", "[".repeat(*d), "]".repeat(*d)));
                    } else {
                        line.push_str(&format!("\n{}1", "- ".repeat(*d)));
                    }
                }
            }
            Mutation::Indent(l, k) => {
                let line = &mut lines[l % n];
                *line = format!("{}{line}", " ".repeat(*k));
            }
        }
        lines.join("\n") + "\n"
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// `Suite::parse` never panics on a mutated suite; what it refuses is located, and what
        /// it accepts holds only sane numbers (the harness turns them into `Duration`s and
        /// allocations without further checks).
        #[test]
        fn parse_never_panics_and_locates_refusals(ms in proptest::collection::vec(mutation(), 1..4)) {
            let text = ms.iter().fold(BASE.to_string(), |t, m| apply(&t, m));
            match Suite::parse(Path::new("fuzz.yaml"), text.clone()) {
                Err(e) => {
                    prop_assert!(e.location.is_some(), "unlocated: {e}\n--- suite\n{text}");
                    prop_assert!(!e.message.is_empty());
                }
                Ok(suite) => {
                    prop_assert!(suite.timeout_seconds > 0.0 && suite.timeout_seconds <= MAX_TIMEOUT_SECONDS);
                    let _ = std::time::Duration::from_secs_f64(suite.timeout_seconds);
                    prop_assert!(suite.samples >= 1 && suite.batch_size >= 1);
                    let cells = suite.cells();
                    prop_assert!(!cells.is_empty() && cells.len() as u128 <= MAX_CELLS);
                    let ids: std::collections::HashSet<_> = cells.iter().map(|c| c.unit_id()).collect();
                    prop_assert_eq!(ids.len(), cells.len(), "a cell runs twice\n{}", text);
                    for m in &suite.models {
                        if let Some(t) = &m.train {
                            let _ = std::time::Duration::from_secs_f64(t.timeout_seconds);
                            prop_assert!(t.timeout_seconds <= MAX_TIMEOUT_SECONDS);
                        }
                    }
                }
            }
        }
    }
}
