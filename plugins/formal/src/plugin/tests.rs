//! The plugin glue: tasks, the oracle through the SDK's samplers, the closed-form SER of the
//! interval language.

use super::*;
use dlm_sdk::sampler::generate;
use dlm_sdk::{GenerateRequest, SamplerSpec, TaskBinding};
use serde_json::Value;

fn open(task: &str, config: Value, length: usize) -> (LanguageTask, ModelOpenConfig) {
    let mut t = LanguageTask::new(task, &config).unwrap();
    let description = t.describe(length).unwrap();
    let open = ModelOpenConfig {
        config: Value::Null,
        task: TaskBinding {
            plugin: PLUGIN_NAME.into(),
            task: task.into(),
            config,
            description,
        },
        train: None,
        checkpoint: None,
        base_dir: None,
    };
    (t, open)
}

fn request(sampler: &str, steps: usize, batch: usize, length: usize, seed: u64) -> GenerateRequest {
    GenerateRequest {
        batch_size: batch,
        length,
        sampler: SamplerSpec {
            name: sampler.into(),
            steps,
            schedule: None,
            params: Default::default(),
        },
        seed,
        first_index: 0,
        prompts: None,
        prompt_texts: None,
        trace: false,
    }
}

/// Generates `n` samples with the oracle through the SDK and returns the empirical SER.
fn oracle_ser(
    task: &mut LanguageTask,
    oracle: &mut Oracle,
    sampler: &str,
    steps: usize,
    n: usize,
    length: usize,
) -> f64 {
    let (seqs, reply) = generate(oracle, &request(sampler, steps, n, length, 17)).unwrap();
    assert_eq!(seqs.len(), n);
    assert!(reply.batch_nfe as usize <= steps);
    let scores = task.score(&seqs).unwrap();
    scores.iter().filter(|s| !s.in_support).count() as f64 / n as f64
}

/// `|empirical - p| <= 4` standard errors of a proportion from `n` samples.
fn assert_within_4se(got: f64, p: f64, n: usize, what: &str) {
    let se = (p * (1.0 - p) / n as f64).sqrt();
    println!("{what}: empirical SER {got:.4}, closed form {p:.4}, SE {se:.4}");
    assert!(
        (got - p).abs() <= 4.0 * se,
        "{what}: empirical {got} vs closed form {p} (4 SE = {})",
        4.0 * se
    );
}

#[test]
fn interval_oracle_left_to_right_has_ser_zero() {
    for (config, length) in [
        (json!({"interval": 6, "vocab": 3}), 20),
        (json!({"interval": 8}), 64),
        (json!({"interval": 5, "vocab": 6, "modulus": 3}), 23),
    ] {
        let (mut task, open) = open("interval", config.clone(), length);
        let mut oracle = Oracle::new(&open).unwrap();
        let ser = oracle_ser(
            &mut task,
            &mut oracle,
            "left_to_right",
            length,
            2000,
            length,
        );
        assert_eq!(ser, 0.0, "{config}");
    }
}

/// One step: every position is drawn independently from its all-masked (uniform) marginal, so
/// SER = 1 - (1 - p_v)^⌊L/k⌋ (module documentation of `language`).
#[test]
fn interval_oracle_one_step_ser_matches_the_closed_form() {
    let n = 20_000;
    for (config, length, closed_form) in [
        // V = 3, parity: p_v = 4/9; L = 20, k = 6: 3 complete intervals and a partial one.
        (
            json!({"interval": 6, "vocab": 3}),
            20,
            1.0 - (5.0f64 / 9.0).powi(3),
        ),
        // V = 8, parity: p_v = 1/2; two intervals: 3/4.
        (json!({"interval": 8}), 16, 0.75),
    ] {
        let (mut task, open) = open("interval", config.clone(), length);
        let p = task.language().interval_ddpm_ser(length, 1).unwrap();
        assert!((p - closed_form).abs() < 1e-14);
        let described = task.describe(length).unwrap();
        assert_eq!(described.details["oracle_ddpm_ser_one_step"], json!(p));
        let mut oracle = Oracle::new(&open).unwrap();
        let ser = oracle_ser(&mut task, &mut oracle, "ddpm", 1, n, length);
        assert_within_4se(ser, p, n, &format!("{config} ddpm@1"));
    }
}

/// More steps: SER = 1 - (1 - p_v/T)^⌊L/k⌋ for `ddpm` and `ddpm_cache` (log-linear schedule).
/// This also exercises the oracle's fallback: broken intervals must not disturb the others.
#[test]
fn interval_oracle_ddpm_ser_matches_the_closed_form_for_several_steps() {
    let n = 20_000;
    let (length, config) = (20, json!({"interval": 6, "vocab": 3}));
    let (mut task, open) = open("interval", config, length);
    let mut oracle = Oracle::new(&open).unwrap();
    for (sampler, steps) in [("ddpm", 4), ("ddpm_cache", 3), ("ddpm_cache", 20)] {
        let p = task.language().interval_ddpm_ser(length, steps).unwrap();
        let ser = oracle_ser(&mut task, &mut oracle, sampler, steps, n, length);
        assert_within_4se(ser, p, n, &format!("{sampler}@{steps}"));
    }
}

#[test]
fn interval_task_describes_itself_exactly() {
    let mut task = LanguageTask::new("interval", &json!({"interval": 16})).unwrap();
    let d = task.describe(512).unwrap();
    assert_eq!((d.vocab_size, d.mask_id, d.length), (8, 8, 512));
    assert!(d.entropy_exact && d.entropy_std_error == 0.0);
    let want = 32.0 * (16.0 * 8f64.ln() - 2f64.ln());
    assert!((d.entropy_nats.unwrap() - want).abs() < 1e-9);
    assert!((d.support_log10_density.unwrap() - 32.0 * 0.5f64.log10()).abs() < 1e-12);
    assert_eq!(d.details["complete_intervals"], json!(32));
    assert_eq!(d.details["violation_probability"], json!(0.5));
    assert!(d.label.contains("interval-16"));
    // Reference samples are in the support and reproducible.
    let req = SampleReferenceRequest {
        n: 50,
        length: 100,
        seed: 1,
        first_index: 0,
    };
    let a = task.sample_reference(&req).unwrap();
    assert_eq!(a, task.sample_reference(&req).unwrap());
    assert!(task.score(&a).unwrap().iter().all(|s| s.in_support));
    for bad in [
        json!({}),
        json!({"interval": 1}),
        json!({"interval": 4, "modulus": 9}),
        json!({"interval": 4, "variant": "ser"}),
    ] {
        assert!(LanguageTask::new("interval", &bad).is_err(), "{bad}");
    }
}

const BIGRAM: &str = "\
kind: ngram
vocab: 3
order: 2
initial: [1/2, 1/2, 0]
transitions:
  - [0, 1/2, 1/2]
  - [1, 0, 0]
  - [1/3, 1/3, 1/3]
";

#[test]
fn file_task_and_its_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bigram.yaml");
    std::fs::write(&path, BIGRAM).unwrap();
    let path = path.to_str().unwrap().to_string();
    let length = 12;
    let (mut task, open) = open("file", json!({ "path": path }), length);
    let d = task.describe(length).unwrap();
    assert!(d.label.starts_with("bigram.yaml (2-gram"), "{}", d.label);
    assert!(d.support_log10_density.unwrap() < 0.0 && d.entropy_exact);
    assert_eq!(d.details["variant"], "ser");
    // q by hand through the task's score: q(0,1,0) = 1/2 · 1/2 · 1.
    let s = task.score(&[vec![0, 1, 0], vec![1, 1, 0]]).unwrap();
    assert!((s[0].log_q.unwrap() - 0.25f64.ln()).abs() < 1e-15);
    assert!(!s[1].in_support && s[1].log_q.is_none());

    let mut oracle = Oracle::new(&open).unwrap();
    assert_eq!(
        oracle_ser(&mut task, &mut oracle, "left_to_right", length, 500, length),
        0.0
    );
    // Parallel decoding breaks sequences; the smoothed fallback keeps the oracle answering.
    let ser = oracle_ser(&mut task, &mut oracle, "ddpm", 2, 500, length);
    assert!(ser > 0.2, "{ser}");

    // The TER variant: smoothed tables, full support.
    let mut ter = LanguageTask::new(
        "file",
        &json!({"path": path, "variant": "ter", "smoothing": 0.01}),
    )
    .unwrap();
    let d = ter.describe(length).unwrap();
    assert!(d.support_log10_density.unwrap().abs() < 1e-12);
    assert!(d.label.contains("TER variant"));
    let s = ter.score(&[vec![1, 1, 0]]).unwrap();
    assert!(s[0].in_support);

    // The oracle refuses a file that changed since the task was described.
    std::fs::write(&path, BIGRAM.replace("[1/3, 1/3, 1/3]", "[1/2, 1/4, 1/4]")).unwrap();
    let e = Oracle::new(&open).err().unwrap().message;
    assert!(e.contains("changed since the task was described"), "{e}");

    // Errors name the file.
    for (config, fragment) in [
        (json!({"path": dir.path().join("none.yaml")}), "none.yaml"),
        (json!({}), "missing field `path`"),
        (json!({"path": path, "smoothing": 0}), "smoothing"),
        (json!({"path": path, "variant": "both"}), "unknown variant"),
        (json!({"path": path, "seed": 1}), "unknown field `seed`"),
    ] {
        let e = LanguageTask::new("file", &config).err().unwrap().message;
        assert!(e.contains(fragment), "{e}");
    }
    std::fs::write(&path, BIGRAM.replace("[1, 0, 0]", "[1, 0, 0.5]")).unwrap();
    let e = LanguageTask::new("file", &json!({ "path": path }))
        .err()
        .unwrap()
        .message;
    assert!(
        e.contains(&format!("{path}:7:")) && e.contains("row 1 of the transition table"),
        "{e}"
    );
    // Too short for the language: the error names the file.
    std::fs::write(
        &path,
        BIGRAM.replace("order: 2", "order: 3").replace(
            "initial: [1/2, 1/2, 0]",
            "initial: [1/9, 1/9, 1/9, 1/9, 1/9, 1/9, 1/9, 1/9, 1/9]",
        ),
    )
    .unwrap();
    let mut t = LanguageTask::new("file", &json!({ "path": path }));
    assert!(t.is_err()); // 9 contexts need 9 transition rows
    std::fs::write(&path, HMM).unwrap();
    t = LanguageTask::new("file", &json!({ "path": path }));
    let e = t.unwrap().describe(0).err().unwrap().message;
    assert!(e.contains(&path) && e.contains("too short"), "{e}");
}

const HMM: &str = "\
kind: hmm
vocab: 2
initial: [0.6, 0.4]
transitions: [[0.7, 0.3], [0.2, 0.8]]
emissions: [[0.9, 0.1], [0, 1]]
";

#[test]
fn ngram_and_hmm_configs_keep_working() {
    let mut t =
        LanguageTask::new("ngram", &json!({"order": 2, "variant": "ser", "seed": 3})).unwrap();
    let d = t.describe(12).unwrap();
    assert_eq!(d.label, "2-gram (SER variant)");
    assert_eq!(d.details["threshold"], json!(0.008));
    assert_eq!(d.details["temperature"], json!(2.0));
    assert_eq!(d.details["seed"], json!(3));
    let t = LanguageTask::new(
        "hmm",
        &json!({"states": 4, "vocab": 3, "temperature": 1.5, "threshold": 0.01, "seed": 2}),
    )
    .unwrap();
    assert_eq!(t.language().hidden_states(), Some(4));
    assert_eq!(t.language().threshold(), Some(0.01));
    let built = build_language("hmm", &Value::Null).unwrap();
    assert_eq!(built.language.kind_label(), "hmm-32");
    assert!(built.fallback.is_none());
    let built = build_language("ngram", &json!({"order": 3, "variant": "ser"})).unwrap();
    assert_eq!(built.fallback.unwrap().threshold(), Some(0.0));
    let e = build_language("pcfg", &Value::Null).err().unwrap().message;
    assert!(e.contains("ngram, hmm, file, interval"), "{e}");
    assert!(build_language("ngram", &json!({})).is_err());
    let names: Vec<String> = FormalPlugin::tasks().into_iter().map(|c| c.name).collect();
    assert_eq!(names, TASKS);
}

/// The pruned Table 1 bigram: the oracle's left-to-right samples are in the support, and
/// parallel decoding goes through the TER fallback without errors.
#[test]
fn oracle_for_a_pruned_bigram() {
    let (mut task, open) = open("ngram", json!({"order": 2, "variant": "ser"}), 16);
    let mut oracle = Oracle::new(&open).unwrap();
    assert_eq!(
        oracle_ser(&mut task, &mut oracle, "left_to_right", 16, 200, 16),
        0.0
    );
    let ser = oracle_ser(&mut task, &mut oracle, "ddpm", 1, 200, 16);
    assert!(ser > 0.0);
    let mut other = open.clone();
    other.task.plugin = "someone-else".into();
    assert!(Oracle::new(&other).is_err());
}

/// The sparse HMM task: exact support density below 1 in the description, configuration
/// errors, the oracle's left-to-right samples all in the support, and its one-step parallel
/// samples out of it at the exact rate the description states.
#[test]
fn sparse_hmm_task_and_its_oracle() {
    let length = 64;
    let (mut task, open) = open("hmm", json!({"variant": "sparse"}), length);
    let d = task.describe(length).unwrap();
    assert_eq!(
        d.label,
        "hmm-32 (sparse variant, at most 4 successors per state)"
    );
    assert_eq!(d.details["variant"], "sparse");
    assert_eq!(d.details["max_successors"], json!(4));
    assert_eq!(d.details["emission_threshold"], json!(0.05));
    assert_eq!(d.details["threshold"], json!(0.003));
    assert_eq!(d.details["temperature"], json!(3.2));
    let density = d.support_log10_density.unwrap();
    assert!(density < 0.5f64.log10() && density > -6.0, "{density}");
    let p = d.details["oracle_one_step_ser"].as_f64().unwrap();
    assert!(p > 0.5 && p < 1.0, "{p}");
    let built = build_language("hmm", &json!({"variant": "sparse"})).unwrap();
    let fallback = built.fallback.unwrap();
    assert_eq!(fallback.threshold(), Some(0.0));
    assert!(fallback.sparse_params().is_none());

    let mut oracle = Oracle::new(&open).unwrap();
    let ser = oracle_ser(&mut task, &mut oracle, "left_to_right", length, 300, length);
    assert_eq!(ser, 0.0);
    let n = 3000;
    let ser = oracle_ser(&mut task, &mut oracle, "ddpm", 1, n, length);
    assert_within_4se(ser, p, n, "sparse hmm ddpm@1");
    // More parallel steps: fewer broken sequences, still some.
    let ser8 = oracle_ser(&mut task, &mut oracle, "ddpm", 8, 500, length);
    assert!(ser8 > 0.0 && ser8 < p, "{ser8}");

    // Overrides, and Table 1's other variants untouched by the new keys.
    let t = LanguageTask::new(
        "hmm",
        &json!({"variant": "sparse", "max_successors": 2, "emission_threshold": 0.1, "seed": 3}),
    )
    .unwrap();
    let sp = t.language().sparse_params().unwrap();
    assert_eq!((sp.max_successors, sp.emission_threshold), (2, 0.1));
    assert_eq!(t.language().seed(), Some(3));
    for (config, task_name, fragment) in [
        (
            json!({"order": 2, "variant": "sparse"}),
            "ngram",
            "only for the `hmm` task",
        ),
        (
            json!({"max_successors": 4}),
            "hmm",
            "only to `variant: sparse`",
        ),
        (
            json!({"variant": "ser", "emission_threshold": 0.05}),
            "hmm",
            "only to `variant: sparse`",
        ),
        (
            json!({"variant": "sparse", "max_successors": 0}),
            "hmm",
            "max_successors must be",
        ),
        (
            json!({"variant": "sparse", "max_successors": 33}),
            "hmm",
            "max_successors must be",
        ),
        (
            json!({"variant": "sparse", "emission_threshold": 1.5}),
            "hmm",
            "threshold",
        ),
        (
            json!({"variant": "sparse", "successors": 4}),
            "hmm",
            "unknown field `successors`",
        ),
        (json!({"variant": "dense"}), "hmm", "unknown variant"),
    ] {
        let e = LanguageTask::new(task_name, &config).err().unwrap().message;
        assert!(e.contains(fragment), "{config}: {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.yaml");
    std::fs::write(&path, HMM).unwrap();
    let e = LanguageTask::new("file", &json!({"path": path, "variant": "sparse"}))
        .err()
        .unwrap()
        .message;
    assert!(e.contains("only for the `hmm` task"), "{e}");
    let d = LanguageTask::new("hmm", &json!({"variant": "ser"}))
        .unwrap()
        .describe(16)
        .unwrap();
    assert!(d.details.get("oracle_one_step_ser").is_none());
    assert!(d.details.get("max_successors").is_none());
    assert_eq!(d.label, "hmm-32 (SER variant)");
}

#[test]
fn every_task_declares_exactly_the_config_keys_it_accepts() {
    for info in FormalPlugin::tasks() {
        info.check_config_keys(|config| {
            FormalPlugin::open_task(&info.name, config)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    }
    let file = FormalPlugin::tasks().into_iter().find(|t| t.name == "file");
    let paths: Vec<String> = file
        .into_iter()
        .flat_map(|t| t.config_keys)
        .filter(|k| k.path)
        .map(|k| k.name)
        .collect();
    assert_eq!(paths, ["path"]);
}

/// The oracle's cache is exact: `cache: prefix` and `dual` give the samples and NFE of
/// `cache: none` (the pruned bigram, so parallel steps also reach the fallback), and count
/// fewer positions: for `low_confidence` (every step runs) per block of `S` steps one fill of
/// `L` and `S − 1` windows of the block (`dual`) or of `L − start` (`prefix`).
#[test]
fn the_oracles_cache_changes_no_sample_and_counts_its_windows() {
    let (length, block, steps, batch) = (16, 4, 8, 6);
    let (_, open) = open("ngram", json!({"order": 2, "variant": "ser"}), length);
    let starts: Vec<usize> = (0..length).step_by(block).collect();
    let per_block = steps / starts.len();
    let expected = |mode: &str| -> u64 {
        let windows = per_block - 1;
        let width = |s: usize| if mode == "dual" { block } else { length - s };
        match mode {
            "none" => (steps * length) as u64,
            _ => starts
                .iter()
                .map(|&s| length + windows * width(s))
                .sum::<usize>() as u64,
        }
    };
    for sampler in ["low_confidence", "threshold"] {
        let mut uncached = None;
        for mode in ["none", "prefix", "dual"] {
            let mut req = request(sampler, steps, batch, length, 5);
            req.sampler.params = [
                ("block_length".to_string(), json!(block)),
                ("cache".to_string(), json!(mode)),
            ]
            .into_iter()
            .collect();
            let mut oracle = Oracle::new(&open).unwrap();
            let (seqs, reply) = generate(&mut oracle, &req).unwrap();
            let stats: Vec<(u64, u64)> = reply
                .samples
                .iter()
                .map(|s| (s.nfe, s.positions_computed.unwrap()))
                .collect();
            if sampler == "low_confidence" {
                assert!(
                    stats.iter().all(|&s| s == (steps as u64, expected(mode))),
                    "{mode}: {stats:?}"
                );
            }
            match &uncached {
                None => uncached = Some((seqs, stats)),
                Some((plain, plain_stats)) => {
                    assert_eq!(&seqs, plain, "{sampler} {mode}: tokens");
                    for ((nfe, positions), (plain_nfe, plain_positions)) in
                        stats.iter().zip(plain_stats)
                    {
                        assert_eq!(nfe, plain_nfe, "{sampler} {mode}");
                        assert!(positions < plain_positions, "{sampler} {mode}: {stats:?}");
                    }
                }
            }
        }
    }
}
