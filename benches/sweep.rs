//! Sweep-level scaling (issue 20): `plan` and `merge` of a synthetic 100,000-unit suite —
//! 10 tasks × 100 step counts × 10 lengths × 10 seeds (and the 1,000 reference rows of those
//! tasks, lengths and seeds). They must take seconds, not minutes.
//!
//! `plan` is what `dlm-bench plan --shards 64` does: parse the suite, expand its cells, hash
//! them into units, assign the shards. `merge` merges four shard run directories holding every
//! unit once (each a finished cell of two samples, written through the harness's own
//! `RunDir`): reading, the exactly-once check, writing, the summary and the report.
//!
//! Run with `cargo bench --bench sweep`. No plugin is loaded: neither step needs one.
//!
//! Figures (2 cores, other work running): plan 0.39–0.63 s; merge 20.2 s, of which summary
//! and report 11.3 s. Before grouping baseline candidates by place, choosing the AR baselines
//! compared every cell with every other and the merge did not finish in 10 minutes; before
//! `append_cells`, two fsyncs per cell made it 49 s.

use criterion::{criterion_group, criterion_main, Criterion};
use dlm_bench::results::{now_rfc3339, CellRecord, CellStatus, Manifest, RunDir, SampleRecord};
use dlm_bench::shard;
use dlm_bench::suite::Suite;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SHARDS: usize = 4;

fn suite_text() -> String {
    let mut s = String::from(
        "name: sweep-100k\nsamples: 2\nbatch_size: 2\n\
         lengths: [16, 32, 48, 64, 80, 96, 112, 128, 144, 160]\n\
         seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\ntasks:\n",
    );
    for t in 0..10 {
        s.push_str(&format!(
            "  - {{name: t{t}, plugin: dlm-formal, task: ngram, \
             config: {{order: 2, variant: ser, seed: {t}}}}}\n"
        ));
    }
    let steps: Vec<String> = (1..=100).map(|k| k.to_string()).collect();
    s.push_str(&format!(
        "models:\n  - {{name: oracle, plugin: dlm-formal, model: oracle, samplers: [ddpm_cache]}}\n\
         samplers:\n  - sampler: ddpm_cache\n    steps: [{}]\n",
        steps.join(", ")
    ));
    s
}

fn plan(path: &Path, text: &str) -> Vec<usize> {
    let suite = Suite::parse(path, text.to_string()).expect("the synthetic suite parses");
    let cells = suite.cells();
    shard::assign(&shard::units(&cells), 64)
}

/// Four shard run directories that hold every unit of the plan exactly once.
fn write_shards(dir: &Path, path: &Path, text: &str) -> Vec<PathBuf> {
    let suite = Suite::parse(path, text.to_string()).expect("parses");
    let cells = suite.cells();
    // 100,000 sampled cells plus one reference row per task, length and seed.
    assert_eq!(cells.len(), 101_000);
    let assigned = shard::assign(&shard::units(&cells), SHARDS);
    let manifest = Manifest {
        dlm_bench_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: None,
        git_dirty: None,
        suite_name: suite.name.clone(),
        suite_path: path.to_path_buf(),
        suite_hash: "synthetic".into(),
        suite_text: text.to_string(),
        plugins: Vec::new(),
        device: "cpu".into(),
        toolchain: String::new(),
        host: String::new(),
        cpus: 1,
        seeds: suite.seeds.clone(),
        cells_total: cells.len(),
        started_at: now_rfc3339(),
        finished_at: Some(now_rfc3339()),
        command: Vec::new(),
        filters: Default::default(),
        text_cells: Vec::new(),
        sessions: Vec::new(),
    };
    (0..SHARDS)
        .map(|k| {
            let shard_dir = dir.join(format!("shard-{k}"));
            let run = RunDir::create(&shard_dir).expect("shard directory");
            run.write_manifest(&manifest).expect("manifest");
            let mut rows = Vec::new();
            for (cell, _) in cells.iter().zip(&assigned).filter(|(_, &s)| s == k) {
                let record = CellRecord {
                    unit: cell.unit_id(),
                    key: cell.key(),
                    cell: cell.clone(),
                    status: CellStatus::Ok,
                    cause: None,
                    task_description: None,
                    task_plugin: None,
                    model_plugin: None,
                    model_autoregressive: false,
                    model_exact: false,
                    error_kind: None,
                    one_step_per_token: false,
                    batches: Vec::new(),
                    device: Some("cpu".into()),
                    settings: None,
                    documents: None,
                    worker_seconds: 0.0,
                    finished_at: now_rfc3339(),
                };
                let samples: Vec<SampleRecord> = (0..cell.n as u64)
                    .map(|index| SampleRecord {
                        unit: record.unit.clone(),
                        key: record.key.clone(),
                        index,
                        tokens: vec![0; cell.length],
                        log_q: Some(-(cell.length as f64)),
                        in_support: index == 0,
                        first_invalid: None,
                        invalid_transitions: 0,
                        extra: Default::default(),
                        nfe: cell.sampler.as_ref().map_or(0, |s| s.steps as u64),
                        generated_tokens: cell.length as u64,
                        positions_computed: None,
                        edits: None,
                        template: None,
                        trace: None,
                    })
                    .collect();
                rows.push((samples, record));
            }
            let rows: Vec<_> = rows.iter().map(|(s, r)| (s.as_slice(), r)).collect();
            run.append_cells(&rows).expect("cell records");
            shard_dir
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("dlm-bench-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join("sweep-100k.yaml");
    let text = suite_text();
    std::fs::write(&path, &text).expect("suite file");

    let mut group = c.benchmark_group("sweep-100k");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("plan (parse, expand, hash, 64 shards)", |b| {
        b.iter(|| plan(&path, &text))
    });

    let started = Instant::now();
    let shards = write_shards(&dir, &path, &text);
    eprintln!(
        "wrote {SHARDS} shard directories with 101,000 cell records in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    group.finish();

    // One merge takes minutes at this size, so it is timed once rather than sampled: first the
    // whole command, then its summary and report alone, again, on the merged directory.
    let out = dir.join("merged");
    let started = Instant::now();
    let merged = shard::merge(&out, &shards, false).expect("merge");
    let total = started.elapsed().as_secs_f64();
    assert_eq!(merged.cells, 101_000);
    let run = RunDir::open(&out).expect("merged run directory");
    let started = Instant::now();
    dlm_bench::report::write_all(&run, None).expect("report");
    let report = started.elapsed().as_secs_f64();
    eprintln!(
        "merge of 101,000 units from {SHARDS} shards: {total:.1} s in all, of which the summary \
         and report {report:.1} s (timed once each)"
    );
    std::fs::remove_dir_all(&dir).ok();
}

criterion_group!(benches, bench);
criterion_main!(benches);
