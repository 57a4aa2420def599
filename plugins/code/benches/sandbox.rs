//! Sandbox throughput and overhead.
//!
//! * `sandbox/run_many/N`: N small MBPP-like programs at the default parallelism (the number
//!   of cores); samples per second = N / time.
//! * `sandbox/one_sample`: one benign program through the full sandbox (bwrap + prlimit +
//!   `python3 -I -` + the driver), versus `bare/python3 -c pass` (a plain child process):
//!   the difference is the sandbox's overhead per sample; `bare/python3 -I - (driver)` runs the
//!   same rendered program without the sandbox, which splits that difference into the
//!   sandbox's own cost and the driver's.
//! * `plugin/mbpp_score_text/N`: the plugin's whole scoring path (`task.score_text`:
//!   extraction, test program, sandbox) on the canonical solutions of the first N problems of
//!   MBPP's test split, at the default `jobs` (the number of cores); samples per second =
//!   N / time. Skipped when the data directory is absent.
//!
//! Skips (with a message) when bubblewrap cannot run here.
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dlm_code::data::{DataDir, MBPP_FILE};
use dlm_code::plugin::CodePlugin;
use dlm_code::{Sandbox, SandboxConfig, TestProgram};
use dlm_sdk::{Completion, Plugin, PromptsRequest};

fn program(i: usize) -> TestProgram {
    TestProgram {
        sample: format!("def f(x):\n    return x * x + {i}\n"),
        tests: vec![
            format!("assert f(2) == {}", 4 + i),
            format!("assert f(3) == {}", 9 + i),
            format!("assert f(0) == {i}"),
        ],
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    let sandbox = match Sandbox::new(true, SandboxConfig::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("SKIPPED: {e}");
            return;
        }
    };
    let mut g = c.benchmark_group("sandbox");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    let n = 32;
    let programs: Vec<TestProgram> = (0..n).map(program).collect();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(format!("run_many/{n}"), |b| {
        b.iter(|| {
            let r = sandbox.run_many(&programs);
            assert!(r.iter().all(|r| r.outcome.passed()));
        })
    });
    g.throughput(Throughput::Elements(1));
    let one = program(0);
    g.bench_function("one_sample", |b| {
        b.iter(|| assert!(sandbox.run(&one).outcome.passed()))
    });
    g.finish();
    let mut g = c.benchmark_group("bare");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.bench_function("python3 -c pass", |b| {
        b.iter(|| {
            let st = Command::new(&sandbox.config().python)
                .args(["-I", "-c", "pass"])
                .status()
                .unwrap();
            assert!(st.success());
        })
    });
    let driver = one.render().source;
    g.bench_function("python3 -I - (driver)", |b| {
        b.iter(|| {
            let mut child = Command::new(&sandbox.config().python)
                .args(["-I", "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(driver.as_bytes())
                .unwrap();
            assert!(child.wait().unwrap().success());
        })
    });
    g.finish();
    plugin_mbpp(c);
}

/// `task.score_text` on MBPP's canonical solutions at the default `jobs`.
fn plugin_mbpp(c: &mut Criterion) {
    if !DataDir::from_env().has(MBPP_FILE) {
        eprintln!("SKIPPED plugin/mbpp_score_text: no {MBPP_FILE} in the data directory");
        return;
    }
    let n = 100;
    let config = serde_json::json!({"allow_code_execution": true, "limit": n});
    let mut task = CodePlugin::open_task("mbpp", config)
        .map_err(|e| e.message)
        .unwrap();
    let completions: Vec<Completion> = task
        .prompts(&PromptsRequest {
            first_index: 0,
            n,
            seed: 0,
        })
        .unwrap()
        .into_iter()
        .map(|p| Completion {
            prompt_id: p.id,
            text: p.reference.unwrap(),
        })
        .collect();
    let mut g = c.benchmark_group("plugin");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(format!("mbpp_score_text/{n}"), |b| {
        b.iter(|| {
            let scores = task.score_text(&completions).unwrap();
            assert!(scores.iter().all(|s| s.in_support));
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
