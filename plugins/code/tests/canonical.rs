//! Reference solutions pass in the real sandbox: every MBPP task (974, `test_list`), every
//! sanitized MBPP task (427), every HumanEval task (164). MBPP's `challenge_test_list` is run
//! and reported separately. Skips (with a visible message) when the data directory
//! (`$DLM_BENCH_DATA`, default the repository's `data/`) lacks a file, and fails instead under
//! `CI=true` (tests/common/skip.rs).
mod common;
use common::skip;

use std::path::{Path, PathBuf};
use std::time::Instant;

use dlm_code::data::{DataDir, HUMANEVAL_FILE, MBPP_FILE, MBPP_SANITIZED_FILE};
use dlm_code::{ExecResult, Sandbox, SandboxConfig, TestProgram};

/// The data directory, or `None` (after a visible skip line) when it lacks a file.
fn data() -> Option<DataDir> {
    let d = DataDir::from_env();
    for f in [MBPP_FILE, MBPP_SANITIZED_FILE, HUMANEVAL_FILE] {
        if !d.has(f) {
            skip::absent(&skip::DATA, format!("{} not found", d.path(f).display()));
            return None;
        }
    }
    Some(d)
}

fn run(sandbox: &Sandbox, name: &str, ids: &[String], programs: &[TestProgram]) -> Vec<String> {
    run_keep(sandbox, name, ids, programs).0
}

fn run_keep(
    sandbox: &Sandbox,
    name: &str,
    ids: &[String],
    programs: &[TestProgram],
) -> (Vec<String>, Vec<ExecResult>) {
    let t = Instant::now();
    let results: Vec<ExecResult> = sandbox.run_many(programs);
    let failed: Vec<String> = ids
        .iter()
        .zip(&results)
        .filter(|(_, r)| !r.outcome.passed())
        .map(|(id, r)| {
            let last = r
                .stderr_tail
                .trim()
                .lines()
                .last()
                .unwrap_or("")
                .to_string();
            format!("{id}: {} ({last})", r.outcome.summary())
        })
        .collect();
    println!(
        "{name}: {}/{} passed in {:.1} s ({} in parallel)",
        programs.len() - failed.len(),
        programs.len(),
        t.elapsed().as_secs_f64(),
        sandbox.parallelism()
    );
    for f in &failed {
        println!("  FAILED {f}");
    }
    (failed, results)
}

#[test]
fn canonical_solutions_pass() {
    let Some(data) = data() else { return };
    let Some(sandbox) = common::sandbox(SandboxConfig::default()) else {
        return;
    };
    let mbpp = data.load_mbpp().unwrap();
    assert_eq!(mbpp.len(), 974);
    assert_eq!(dlm_code::data::mbpp_test_split(&mbpp).len(), 500);
    let sanitized = data.load_mbpp_sanitized().unwrap();
    assert_eq!(sanitized.len(), 427);
    let humaneval = data.load_humaneval().unwrap();
    assert_eq!(humaneval.len(), 164);

    let ids: Vec<String> = mbpp.iter().map(|t| format!("MBPP/{}", t.task_id)).collect();
    let programs: Vec<TestProgram> = mbpp
        .iter()
        .map(|t| TestProgram::mbpp(t, &t.code, false))
        .collect();
    let mut failures = run(&sandbox, "MBPP (test_list)", &ids, &programs);

    let challenge: Vec<_> = mbpp
        .iter()
        .filter(|t| !t.challenge_test_list.is_empty())
        .collect();
    let ids: Vec<String> = challenge
        .iter()
        .map(|t| format!("MBPP/{} challenge", t.task_id))
        .collect();
    let programs: Vec<TestProgram> = challenge
        .iter()
        .map(|t| TestProgram::mbpp_challenge(t, &t.code))
        .collect();
    // Reported, not asserted: see KNOWN_CHALLENGE_FAILURES.
    let challenge_failed = run(&sandbox, "MBPP (challenge_test_list)", &ids, &programs);
    for f in &challenge_failed {
        let id = f.split(':').next().unwrap();
        if !KNOWN_CHALLENGE_FAILURES.contains(&id) {
            failures.push(format!("unexpected challenge failure {f}"));
        }
    }

    let ids: Vec<String> = sanitized
        .iter()
        .map(|t| format!("sanitized MBPP/{}", t.task_id))
        .collect();
    let programs: Vec<TestProgram> = sanitized
        .iter()
        .map(|t| TestProgram::mbpp_sanitized(t, &t.code))
        .collect();
    failures.extend(run(&sandbox, "sanitized MBPP", &ids, &programs));

    let ids: Vec<String> = humaneval.iter().map(|t| t.task_id.clone()).collect();
    let programs: Vec<TestProgram> = humaneval
        .iter()
        .map(|t| TestProgram::humaneval(t, &t.canonical_solution))
        .collect();
    let (failed, parallel) = run_keep(&sandbox, "HumanEval", &ids, &programs);
    failures.extend(failed);

    // The same verdicts one at a time as in parallel (each run has its own sandbox and nonce).
    let serial_box = Sandbox::new(
        true,
        SandboxConfig {
            parallelism: 1,
            ..SandboxConfig::default()
        },
    )
    .unwrap();
    let some: Vec<TestProgram> = programs.iter().take(24).cloned().collect();
    let serial = serial_box.run_many(&some);
    for (i, (a, b)) in serial.iter().zip(&parallel).enumerate() {
        assert_eq!(a.outcome, b.outcome, "HumanEval/{i}: serial vs parallel");
    }

    assert!(
        failures.is_empty(),
        "reference solutions failed:\n{}",
        failures.join("\n")
    );
}

/// Challenge tests the reference solutions fail (investigated; see the crate README).
const KNOWN_CHALLENGE_FAILURES: &[&str] = &[];

#[test]
fn broken_solutions_fail() {
    // A few wrong completions of real tasks, so the data test cannot pass vacuously.
    let Some(data) = data() else { return };
    let Some(sandbox) = common::sandbox(SandboxConfig::default()) else {
        return;
    };
    let mbpp = data.load_mbpp().unwrap();
    let humaneval = data.load_humaneval().unwrap();
    let t = mbpp.iter().find(|t| t.task_id == 11).unwrap();
    let programs = vec![
        TestProgram::mbpp(t, "def remove_Occ(s, ch):\n    return s", false),
        TestProgram::mbpp(t, "", false),
        TestProgram::humaneval(&humaneval[0], "    return False\n"),
        TestProgram::humaneval(&humaneval[0], "    return True\n"),
        TestProgram::humaneval(&humaneval[0], &humaneval[0].canonical_solution),
    ];
    let r = sandbox.run_many(&programs);
    let verdicts: Vec<String> = r.iter().map(|r| r.outcome.summary()).collect();
    assert_eq!(
        verdicts,
        [
            "test 0: AssertionError",
            "test 0: NameError",
            "test 0: AssertionError",
            "test 0: AssertionError",
            "passed"
        ]
    );
}

/// The repository's `data/` (`<workspace root>/data`) holds the three pinned files and is the
/// data directory unless `$DLM_BENCH_DATA` names another (tests/data.rs runs the plugin with
/// the variable removed).
#[test]
fn the_default_data_directory_is_the_repository_data() {
    let workspace_data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    assert_eq!(
        DataDir::default_root().canonicalize().unwrap(),
        workspace_data.canonicalize().unwrap()
    );
    let from_env = DataDir::from_env();
    match std::env::var_os("DLM_BENCH_DATA") {
        Some(dir) if !dir.is_empty() => assert_eq!(from_env.root(), PathBuf::from(dir)),
        _ => assert_eq!(from_env.root(), DataDir::default_root()),
    }
    let repository = DataDir::new(DataDir::default_root());
    let counts = (
        repository.load_mbpp().unwrap().len(),
        repository.load_mbpp_sanitized().unwrap().len(),
        repository.load_humaneval().unwrap().len(),
    );
    // The row counts data/README.md gives.
    assert_eq!(counts, (974, 427, 164));
}
