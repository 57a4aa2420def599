//! What the plugin boundary costs: one call across the ABI (JSON request and reply, token
//! buffer, catch_unwind) and the start-up of a worker process (spawn, dlopen, descriptor
//! check, abi_stable layout check, describe).
//!
//! Run with `cargo bench --bench plugin_call`. It builds the `dlm-formal` plugin in release.

use criterion::{criterion_group, criterion_main, Criterion};
use dlm_bench::worker::{run_job, Job, Outcome};
use dlm_plugin_api::{method, ComponentKind, DescribeTaskRequest, LoadedPlugin, TokenBatch};
use std::path::PathBuf;
use std::time::Duration;

fn formal_library() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "dlm-formal"])
        .current_dir(&root)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building dlm-formal failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    target.join("release").join(format!(
        "{}dlm_formal{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ))
}

fn bench(c: &mut Criterion) {
    let library = formal_library();
    let plugin = LoadedPlugin::load(&library).expect("dlm-formal loads");
    let task = plugin
        .open(
            ComponentKind::Task,
            "ngram",
            r#"{"order": 2, "variant": "ser"}"#,
        )
        .expect("task opens");
    let describe = serde_json::to_string(&DescribeTaskRequest { length: 64 }).unwrap();
    // Warm the task's description cache so the call measures the boundary, not the entropy.
    task.call(method::TASK_DESCRIBE, &describe, &[]).unwrap();

    let mut group = c.benchmark_group("abi");
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("call task.describe (cached, ~600-byte JSON reply)", |b| {
        b.iter(|| task.call(method::TASK_DESCRIBE, &describe, &[]).unwrap())
    });
    let (shape, tokens) = TokenBatch::pack(&[vec![1, 2, 3, 4, 5, 6, 7, 0]]);
    let shape = serde_json::to_string(&shape).unwrap();
    group.bench_function("call task.score (one sequence of 8 tokens)", |b| {
        b.iter(|| task.call(method::TASK_SCORE, &shape, &tokens).unwrap())
    });
    group.finish();

    // Worker start-up: the cost every cell pays once for its own process.
    std::env::set_var("DLM_BENCH_WORKER_EXE", env!("CARGO_BIN_EXE_dlm-bench"));
    let scratch = std::env::temp_dir().join(format!("dlm-bench-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let job = Job::Describe {
        library: library.clone(),
    };
    let mut group = c.benchmark_group("worker");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("start-up: spawn + load plugin + describe", |b| {
        b.iter(|| {
            match run_job(
                &job,
                &scratch,
                "bench",
                Duration::from_secs(30),
                |_, _, _, _| {},
            )
            .unwrap()
            {
                Outcome::Described(_) => {}
                _ => panic!("describe failed"),
            }
        })
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&scratch);
}

criterion_group!(benches, bench);
criterion_main!(benches);
