//! Cached decoding and block diffusion in the run directory and the report, on run directories
//! written here through the harness's own `RunDir` (no plugin runs, so these take
//! milliseconds): `positions_computed` and `edits` round-trip through `samples.jsonl` (and
//! rows without them read as before), the summary's forward equivalents are positions ÷
//! length, and the report's "price of speed" section is there, with one series per decoding
//! configuration and the verdict the rule gives, exactly when the suite varies the cache or a
//! model's block size.

mod common;
use common::*;
use dlm_bench::metrics::wilson_ci;
use dlm_bench::results::{now_rfc3339, CellRecord, CellStatus, Manifest, RunDir, SampleRecord};
use dlm_bench::suite::{CellSpec, Suite};
use serde_json::{json, Value};
use std::path::Path;

/// What a constructed cell holds: errors among its samples, its throughput, what the model
/// reported per sample, and the settings it states.
struct Shape {
    errors: usize,
    tokens_per_second: f64,
    positions: Option<u64>,
    edits: Option<u64>,
}

fn manifest(suite: &Suite, path: &Path, text: &str) -> Manifest {
    Manifest {
        dlm_bench_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: None,
        git_dirty: None,
        suite_name: suite.name.clone(),
        suite_path: path.to_path_buf(),
        suite_hash: "constructed".into(),
        suite_text: text.to_string(),
        plugins: Vec::new(),
        device: "cpu".into(),
        toolchain: String::new(),
        host: String::new(),
        cpus: 2,
        seeds: suite.seeds.clone(),
        cells_total: 0,
        started_at: now_rfc3339(),
        finished_at: Some(now_rfc3339()),
        command: Vec::new(),
        filters: Default::default(),
        text_cells: Vec::new(),
        sessions: Vec::new(),
    }
}

/// The settings a model states: the sampler's params as given, and the model's `block_size`
/// where its config has one.
fn settings(cell: &CellSpec) -> Value {
    let sampler = cell.sampler.as_ref().expect("a model cell");
    let mut s = json!({"sampler": {"name": sampler.name, "steps": sampler.steps, "params": sampler.params}});
    if let Some(b) = cell.model.as_ref().and_then(|m| m.config.get("block_size")) {
        s["model"] = json!({"block_size": b});
    }
    s
}

/// A run directory of `text`'s cells that `shape` keeps (`None`: not run), each cell written
/// as the worker would: two batches (the first a warm-up), samples outside the support first.
fn write_run(dir: &Path, text: &str, shape: impl Fn(&CellSpec) -> Option<Shape>) -> RunDir {
    let path = dir.join("suite.yaml");
    let suite = Suite::parse(&path, text.to_string()).expect("the suite parses");
    let run = RunDir::create(&dir.join("run")).expect("run directory");
    run.write_manifest(&manifest(&suite, &path, text))
        .expect("manifest");
    let mut rows = Vec::new();
    for cell in suite.cells() {
        let model = cell.model.as_ref().map(|m| m.name.clone());
        let shape = match &model {
            None => Shape {
                errors: 0,
                tokens_per_second: 0.0,
                positions: None,
                edits: None,
            },
            Some(_) => match shape(&cell) {
                Some(s) => s,
                None => continue,
            },
        };
        let steps = cell.sampler.as_ref().map_or(0, |s| s.steps as u64);
        let half = (cell.n / 2) as u64;
        let tokens = (half as usize * cell.length) as f64;
        let record = CellRecord {
            unit: cell.unit_id(),
            key: cell.key(),
            cell: cell.clone(),
            status: CellStatus::Ok,
            cause: None,
            task_description: None,
            task_plugin: None,
            model_plugin: None,
            model_autoregressive: model.as_deref() == Some("ar"),
            model_exact: model.as_deref() == Some("oracle"),
            error_kind: None,
            one_step_per_token: model.as_deref() == Some("ar"),
            batches: (0..2)
                .filter(|_| model.is_some())
                .map(|b| dlm_bench::results::BatchRecord {
                    first_index: b * half,
                    size: half as usize,
                    nfe: steps,
                    positions: shape.positions.map(|p| p * half),
                    wall_seconds: tokens / shape.tokens_per_second,
                    cpu_seconds: None,
                })
                .collect(),
            device: Some("cpu".into()),
            settings: model.is_some().then(|| settings(&cell)),
            documents: None,
            worker_seconds: 0.0,
            finished_at: now_rfc3339(),
        };
        let samples: Vec<SampleRecord> = (0..cell.n as u64)
            .map(|index| {
                let out = (index as usize) < shape.errors;
                SampleRecord {
                    unit: record.unit.clone(),
                    key: record.key.clone(),
                    index,
                    tokens: vec![0; cell.length],
                    log_q: (!out).then_some(-(cell.length as f64)),
                    in_support: !out,
                    first_invalid: out.then_some(0),
                    invalid_transitions: usize::from(out),
                    extra: Default::default(),
                    nfe: steps,
                    generated_tokens: cell.length as u64,
                    positions_computed: shape.positions,
                    edits: shape.edits,
                    template: None,
                    trace: None,
                }
            })
            .collect();
        rows.push((samples, record));
    }
    let rows: Vec<_> = rows.iter().map(|(s, r)| (s.as_slice(), r)).collect();
    run.append_cells(&rows).expect("cell records");
    run
}

const LENGTH: usize = 16;

/// A formal task; the oracle, an MDM with no, prefix and dual caches, an AR model, and
/// block-diffusion models of block size 4 and 16 (= L).
fn cache_suite() -> String {
    format!(
        "name: caches-constructed\nsamples: 40\nbatch_size: 20\nlengths: [{LENGTH}]\n\
         tasks:\n  - {{name: bigram, plugin: dlm-formal, task: ngram, config: {{order: 2, variant: ser}}}}\n\
         models:\n\
         \x20 - {{name: oracle, plugin: dlm-formal, model: oracle, samplers: [low_confidence]}}\n\
         \x20 - {{name: mdm, plugin: dlm-neural, model: mdm, samplers: [low_confidence]}}\n\
         \x20 - {{name: ar, plugin: dlm-neural, model: ar, samplers: [ar]}}\n\
         \x20 - {{name: bd-4, plugin: dlm-neural, model: mdm, config: {{block_size: 4}}, samplers: [random]}}\n\
         \x20 - {{name: bd-16, plugin: dlm-neural, model: mdm, config: {{block_size: {LENGTH}}}, samplers: [random]}}\n\
         samplers:\n\
         \x20 - {{sampler: low_confidence, steps: [4, 16], params: {{cache: none, block_length: 4}}}}\n\
         \x20 - {{sampler: low_confidence, steps: [4, 16], params: {{cache: prefix, refresh: every_block, block_length: 4}}}}\n\
         \x20 - {{sampler: low_confidence, steps: [4, 16], params: {{cache: dual, refresh: 2, block_length: 4}}}}\n\
         \x20 - {{sampler: random, steps: [{LENGTH}], params: {{block_length: 4}}}}\n\
         \x20 - {{sampler: random, steps: [{LENGTH}], params: {{block_length: {LENGTH}}}}}\n\
         \x20 - {{sampler: ar}}\n"
    )
}

fn param<'c>(cell: &'c CellSpec, name: &str) -> Option<&'c Value> {
    cell.sampler.as_ref()?.params.get(name)
}

/// The cells the suite above runs, shaped so that the dual cache at 16 steps is the fastest
/// configuration whose SER interval reaches AR's (`ar_errors` of 40) — unless `ar_errors` is
/// so low that none does. A cached step computes a block of 4 (dual) or the rest of the
/// sequence (prefix); an uncached model does not count positions. Throughputs are powers of
/// two times 10 so that tokens ÷ seconds comes back exact (320 tokens per timed batch).
fn shape(ar_errors: usize) -> impl Fn(&CellSpec) -> Option<Shape> {
    move |cell| {
        let model = cell.model.as_ref()?;
        let steps = cell.sampler.as_ref()?.steps as u64;
        let cache = param(cell, "cache").and_then(Value::as_str);
        let block_length = param(cell, "block_length").and_then(Value::as_u64);
        let block_size = model.config.get("block_size").and_then(Value::as_u64);
        if block_size.is_some() && block_length != block_size {
            return None;
        }
        let fewer = steps == 4;
        Some(match (model.name.as_str(), cache) {
            ("oracle", Some("none")) => Shape {
                errors: if fewer { 6 } else { 2 },
                tokens_per_second: 80.0,
                positions: None,
                edits: None,
            },
            ("oracle", _) => return None,
            ("ar", _) => Shape {
                errors: ar_errors,
                tokens_per_second: 160.0,
                positions: Some(LENGTH as u64),
                edits: None,
            },
            ("mdm", Some("none")) => Shape {
                errors: if fewer { 30 } else { 9 },
                tokens_per_second: 320.0,
                positions: None,
                edits: None,
            },
            ("mdm", Some("prefix")) => Shape {
                errors: if fewer { 32 } else { 10 },
                tokens_per_second: 640.0,
                positions: Some(steps * 10),
                edits: None,
            },
            ("mdm", Some("dual")) => Shape {
                errors: if fewer { 34 } else { 11 },
                tokens_per_second: 1280.0,
                positions: Some(steps * 4),
                edits: Some(3),
            },
            (_, _) => Shape {
                errors: if block_size == Some(4) { 8 } else { 12 },
                tokens_per_second: 80.0,
                positions: None,
                edits: None,
            },
        })
    }
}

fn report_json(run: &RunDir) -> Value {
    serde_json::from_slice(&std::fs::read(run.file("report.json")).unwrap()).unwrap()
}

#[test]
fn positions_and_edits_round_trip_and_old_rows_read_as_before() {
    let dir = scratch("speed-round-trip");
    let run = write_run(&dir, &cache_suite(), shape(10));
    let (_, samples) = run.load_consistent().unwrap();
    let text = std::fs::read_to_string(run.file("samples.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), samples.len());
    for (line, sample) in lines.iter().zip(&samples) {
        // Written only when the model said: rows of a model that does not count read as
        // rows of a run before API 1.7.
        assert_eq!(
            line.get("positions_computed").and_then(Value::as_u64),
            sample.positions_computed
        );
        assert_eq!(line.get("edits").and_then(Value::as_u64), sample.edits);
        assert_eq!(
            line.get("positions_computed").is_some(),
            sample.positions_computed.is_some()
        );
    }
    assert!(samples.iter().any(|s| s.positions_computed.is_some()));
    assert!(samples.iter().any(|s| s.positions_computed.is_none()));
    assert!(samples.iter().any(|s| s.edits == Some(3)));
    // A row as the harness wrote it before: no such keys.
    let mut old = lines
        .iter()
        .find(|l| l.get("positions_computed").is_some())
        .unwrap()
        .clone();
    old.as_object_mut().unwrap().remove("positions_computed");
    old.as_object_mut().unwrap().remove("edits");
    let parsed: SampleRecord = serde_json::from_value(old).unwrap();
    assert_eq!((parsed.positions_computed, parsed.edits), (None, None));
}

#[test]
fn forward_equivalents_are_positions_over_length() {
    let dir = scratch("speed-forward-equivalents");
    let run = write_run(&dir, &cache_suite(), shape(10));
    dlm_bench::report::write_all(&run, None).unwrap();
    let s = summary(&dir.join("run"));
    for steps in [4u64, 16] {
        let cells: Vec<&Value> = s
            .iter()
            .filter(|c| c["model"] == "mdm" && c["steps"] == steps)
            .collect();
        assert_eq!(cells.len(), 3);
        let dual = cells
            .iter()
            .find(|c| c["key"].as_str().unwrap().contains("dual"))
            .unwrap();
        let prefix = cells
            .iter()
            .find(|c| c["key"].as_str().unwrap().contains("prefix"))
            .unwrap();
        let none = cells
            .iter()
            .find(|c| c["key"].as_str().unwrap().contains("none"))
            .unwrap();
        // Dual: a window of 4 per step; prefix: 10 per step (as shaped); both over L = 16.
        assert_eq!(
            dual["positions_computed"].as_f64(),
            Some((steps * 4) as f64)
        );
        assert_eq!(
            dual["forward_equivalents"].as_f64(),
            Some((steps * 4) as f64 / LENGTH as f64)
        );
        assert_eq!(
            prefix["forward_equivalents"].as_f64(),
            Some((steps * 10) as f64 / LENGTH as f64)
        );
        assert_eq!(dual["edits"].as_f64(), Some(3.0));
        // Not counted: absent, not zero.
        assert!(
            none.get("positions_computed").is_none() && none.get("forward_equivalents").is_none()
        );
        assert!(none.get("edits").is_none());
    }
    // The AR model computes one position per call: one forward equivalent per sample.
    let ar = cell(&s, "bigram", "ar", Some("ar"), None);
    assert_eq!(ar["forward_equivalents"].as_f64(), Some(1.0));
}

#[test]
fn the_report_prices_speed_per_configuration_with_the_verdict_rule() {
    let dir = scratch("speed-report");
    let run = write_run(&dir, &cache_suite(), shape(10));
    dlm_bench::report::write_all(&run, None).unwrap();
    let report = report_json(&run);
    let sections = report["price_of_speed"].as_array().unwrap();
    assert_eq!(sections.len(), 1);
    let section = &sections[0];
    assert_eq!(section["task"], "bigram");
    assert_eq!(section["caches"], json!(["dual", "none", "prefix"]));
    assert_eq!(section["block_sizes"], json!([4, LENGTH]));
    let mut series: Vec<&str> = section["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["series"].as_str().unwrap())
        .collect();
    series.sort();
    series.dedup();
    assert_eq!(
        series,
        vec![
            "ar · ar",
            "bd-16 · random · block 16",
            "bd-4 · random · block 4",
            "mdm · low_confidence · dual cache · refresh every 2 steps · block 4",
            "mdm · low_confidence · no cache · block 4",
            "mdm · low_confidence · prefix cache · refresh every block · block 4",
            "oracle · low_confidence · no cache · block 4",
        ]
    );
    // AR: 10 of 40. The dual cache at 16 steps (11 of 40) overlaps it and is the fastest that
    // does; at 4 steps (34 of 40) it is faster per step count but far worse.
    let (ar_lo, ar_hi) = wilson_ci(10, 40);
    assert!(wilson_ci(11, 40).0 <= ar_hi && wilson_ci(34, 40).0 > ar_hi);
    let verdicts = section["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 1);
    let v = &verdicts[0];
    assert_eq!(v["ar_ser_ci"], json!([ar_lo, ar_hi]));
    assert!(v["best"]["series"].as_str().unwrap().contains("dual cache"));
    assert_eq!(v["best"]["steps"], 16);
    assert_eq!(v["speedup"].as_f64(), Some(1280.0 / 160.0));
    assert_eq!(v["better"], false);
    // The oracle's uncounted positions are placed at its NFE, and said so.
    let oracle = section["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["exact"] == true)
        .unwrap();
    assert_eq!(oracle["forward_equivalents"], oracle["nfe"]);
    assert_eq!(oracle["forward_equivalents_from_nfe"], true);

    let html = std::fs::read_to_string(run.file("report.html")).unwrap();
    assert!(html.contains("The price of speed — bigram"));
    let mut kinds = vec!["SER vs block size".to_string()];
    for group in ["caches", "block diffusion"] {
        for cost in ["tokens/s", "NFE", "forward equivalents"] {
            kinds.push(format!("SER vs {cost} — {group}"));
        }
    }
    for kind in &kinds {
        assert_eq!(
            html.matches(&format!("aria-label=\"bigram: {kind} (price of speed)\""))
                .count(),
            1,
            "{kind}"
        );
    }
    // Every configuration has samples with q(x) = 0: TER is infinite everywhere, and said.
    assert!(!html.contains("bigram: TER vs tokens/s — caches (price of speed)"));
    assert!(html.contains("No TER charts: no cell has a finite TER."));
    assert!(html.contains("No TER vs block size chart: no finite TER."));
    // The cache charts carry the MDM's configurations, the oracle's reference and the AR
    // cell; the block-diffusion charts the block models and the AR cell.
    let chart = |title: &str| -> &str {
        let start = html
            .find(&format!("aria-label=\"bigram: {title} (price of speed)\""))
            .unwrap_or_else(|| panic!("no chart {title}"));
        // Up to the end of its plot box (the chart nests `<svg>` elements).
        &html[start..start + html[start..].find("</div>").unwrap()]
    };
    for s in &series {
        let in_caches = chart("SER vs NFE — caches").contains(s);
        let in_blocks = chart("SER vs NFE — block diffusion").contains(s);
        let block_model = s.starts_with("bd-");
        let ar = *s == "ar · ar";
        assert_eq!(in_caches, ar || !block_model, "{s} in the cache charts");
        assert_eq!(in_blocks, ar || block_model, "{s} in the block charts");
    }
}

#[test]
fn no_configuration_reaching_ar_is_said_as_none() {
    let dir = scratch("speed-report-none");
    let run = write_run(&dir, &cache_suite(), shape(0));
    dlm_bench::report::write_all(&run, None).unwrap();
    let report = report_json(&run);
    let v = &report["price_of_speed"][0]["verdicts"][0];
    assert!(v["best"].is_null(), "{v}");
    assert!(v["sentence"].as_str().unwrap().starts_with("none:"), "{v}");
    let html = std::fs::read_to_string(run.file("report.html")).unwrap();
    assert!(html.contains(&html_escaped(v["sentence"].as_str().unwrap())));
}

#[test]
fn a_suite_without_caches_or_block_sizes_has_no_price_of_speed() {
    let dir = scratch("speed-report-absent");
    let text = format!(
        "name: plain\nsamples: 40\nbatch_size: 20\nlengths: [{LENGTH}]\n\
         tasks:\n  - {{name: bigram, plugin: dlm-formal, task: ngram, config: {{order: 2, variant: ser}}}}\n\
         models:\n\
         \x20 - {{name: mdm, plugin: dlm-neural, model: mdm, samplers: [low_confidence]}}\n\
         \x20 - {{name: ar, plugin: dlm-neural, model: ar, samplers: [ar]}}\n\
         samplers:\n\
         \x20 - {{sampler: low_confidence, steps: [4, 16], params: {{block_length: 4}}}}\n\
         \x20 - {{sampler: ar}}\n"
    );
    let run = write_run(&dir, &text, |cell| {
        Some(Shape {
            errors: 5,
            tokens_per_second: if cell.model.as_ref()?.name == "ar" {
                100.0
            } else {
                150.0
            },
            positions: None,
            edits: None,
        })
    });
    dlm_bench::report::write_all(&run, None).unwrap();
    assert_eq!(report_json(&run)["price_of_speed"], json!([]));
    let html = std::fs::read_to_string(run.file("report.html")).unwrap();
    assert!(!html.contains("The price of speed"));
    assert!(!html.contains("(price of speed)"));
}
