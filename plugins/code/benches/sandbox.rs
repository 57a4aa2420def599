//! Sandbox throughput and overhead.
//!
//! * `sandbox/run_many/N`: N small MBPP-like programs at the default parallelism (the number
//!   of cores); samples per second = N / time.
//! * `sandbox/one_sample`: one benign program through the full sandbox (bwrap + prlimit +
//!   `python3 -I -` + the driver), versus `bare/python3 -c pass` (a plain child process):
//!   the difference is the sandbox's overhead per sample.
//!
//! Skips (with a message) when bubblewrap cannot run here.
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dlm_code::{Sandbox, SandboxConfig, TestProgram};

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
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
