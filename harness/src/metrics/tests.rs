use super::*;

#[test]
fn ter_is_token_weighted_geometric_mean() {
    // Two sequences with per-token log-probs ln(1/2) and ln(1/4): TER = exp(mean NLL).
    let lq = [Some(2.0 * (0.5f64).ln()), Some(6.0 * (0.25f64).ln())];
    let t = ter(&lq, &[2, 6]).unwrap();
    let want = ((2.0 * 2f64.ln() + 6.0 * 4f64.ln()) / 8.0).exp();
    assert!((t - want).abs() < 1e-12);
    assert_eq!(ter(&[Some(-1.0), None], &[1, 1]), None);
}

#[test]
fn wilson_matches_known_values() {
    // k=0, n=10: upper bound z²/(n+z²) = 0.2775 (closed form at k=0).
    let (lo, hi) = wilson_ci(0, 10);
    assert_eq!(lo, 0.0);
    assert!((hi - Z95 * Z95 / (10.0 + Z95 * Z95)).abs() < 1e-12);
    // k=5, n=10: symmetric around 0.5, known 0.2366..0.7634.
    let (lo, hi) = wilson_ci(5, 10);
    assert!(
        (lo - 0.236_593).abs() < 1e-5 && (hi - 0.763_407).abs() < 1e-5,
        "{lo} {hi}"
    );
}

#[test]
fn bootstrap_ci_brackets_the_estimate_and_is_deterministic() {
    let lq: Vec<f64> = (0..200).map(|i| -10.0 - (i % 7) as f64).collect();
    let lens = vec![8; 200];
    let (lo, hi) = ter_bootstrap_ci(&lq, &lens, 1).unwrap();
    let t = ter(&lq.iter().map(|&x| Some(x)).collect::<Vec<_>>(), &lens).unwrap();
    assert!(lo < t && t < hi, "{lo} {t} {hi}");
    assert_eq!(Some((lo, hi)), ter_bootstrap_ci(&lq, &lens, 1));
    assert_eq!(ter_bootstrap_ci(&[], &[], 1), None);
}

/// A finished cell of `model` with `sampler` on task `t`, length 8, seed 0, batch 10.
fn cell(model: &str, sampler: &str, ar_model: bool, baseline: Option<&str>) -> CellRecord {
    use crate::suite::{CellSpec, ComponentSpec, PluginRef};
    let component = |name: &str| ComponentSpec {
        name: name.to_string(),
        plugin: PluginRef::Crate("p".into()),
        component: "c".into(),
        config: serde_json::Value::Null,
        train: None,
        baseline: None,
        docs: None,
        base_dir: None,
    };
    let spec = CellSpec {
        trace: false,
        task: component("t"),
        model: Some(ComponentSpec {
            baseline: baseline.map(str::to_string),
            ..component(model)
        }),
        sampler: Some(dlm_plugin_api::SamplerSpec {
            name: sampler.into(),
            steps: 4,
            schedule: None,
            params: Default::default(),
        }),
        length: 8,
        seed: 0,
        n: 10,
        part: None,
        batch_size: 10,
        timeout_seconds: 60.0,
    };
    CellRecord {
        unit: format!("{model}-{sampler}"),
        key: spec.key(),
        cell: spec,
        status: CellStatus::Ok,
        cause: None,
        task_description: None,
        task_plugin: None,
        model_plugin: None,
        model_autoregressive: ar_model,
        model_exact: false,
        error_kind: None,
        one_step_per_token: ar_model || sampler == "left_to_right",
        batches: Vec::new(),
        device: None,
        settings: None,
        documents: None,
        worker_seconds: 0.0,
        finished_at: String::new(),
    }
}

/// Baseline keys by cell key, for comparing resolutions of differently ordered cells.
fn baselines_by_key(cells: &[CellRecord]) -> BTreeMap<String, (Option<String>, String)> {
    resolve_baselines(cells)
        .into_iter()
        .zip(cells)
        .filter_map(|(b, c)| {
            b.map(|b| {
                (
                    c.key.clone(),
                    (b.cell.map(|i| cells[i].key.clone()), b.rule),
                )
            })
        })
        .collect()
}

#[test]
fn baselines_follow_the_rules_whatever_the_order() {
    let cells = vec![
        cell("oracle", "ddpm_cache", false, None),
        cell("oracle", "left_to_right", false, None),
        cell("mdm", "ddpm_cache", false, None),
        cell("ar", "ar", true, None),
        cell("named", "ddpm_cache", false, Some("oracle")),
    ];
    let b = baselines_by_key(&cells);
    let base = |k: &str| b[&cells.iter().find(|c| c.unit == k).unwrap().key].clone();
    // 2: the oracle's own left-to-right cell, not the AR model.
    assert_eq!(base("oracle-ddpm_cache").0, Some(cells[1].key.clone()));
    assert!(base("oracle-ddpm_cache").1.contains("own left-to-right"));
    // 3: an MDM without left-to-right gets the suite's only AR model.
    assert_eq!(base("mdm-ddpm_cache").0, Some(cells[3].key.clone()));
    assert!(base("mdm-ddpm_cache").1.contains("AR model ar"));
    // 1: a named baseline wins.
    assert_eq!(base("named-ddpm_cache").0, Some(cells[1].key.clone()));
    // AR cells are no one's diffusion series and get no baseline of their own.
    assert!(!b.contains_key(&cells[1].key) && !b.contains_key(&cells[3].key));
    // Every permutation of the cells resolves the same way (the old rule took the first).
    let mut reversed = cells.clone();
    reversed.reverse();
    assert_eq!(baselines_by_key(&reversed), b);
    let mut rotated = cells.clone();
    rotated.rotate_left(2);
    assert_eq!(baselines_by_key(&rotated), b);
}

#[test]
fn several_ar_models_are_ambiguous_unless_one_is_named() {
    let cells = vec![
        cell("mdm", "ddpm_cache", false, None),
        cell("ar-a", "ar", true, None),
        cell("ar-b", "ar", true, None),
        cell("picky", "ddpm_cache", false, Some("ar-b")),
        cell("lost", "ddpm_cache", false, Some("nowhere")),
    ];
    let b = baselines_by_key(&cells);
    let (cell0, rule0) = &b[&cells[0].key];
    assert_eq!(*cell0, None);
    assert!(
        rule0.contains("ambiguous") && rule0.contains("ar-a, ar-b"),
        "{rule0}"
    );
    assert_eq!(b[&cells[3].key].0, Some(cells[2].key.clone()));
    assert_eq!(b[&cells[4].key].0, None);
    // Speedups follow: none where there is no baseline.
    let rows = summarize(&cells, &[]);
    assert_eq!(rows[0].speedup_baseline, None);
    assert!(rows[0]
        .baseline_rule
        .as_deref()
        .unwrap()
        .contains("ambiguous"));
    assert_eq!(rows[3].speedup_baseline, Some(cells[2].key.clone()));
}

#[test]
fn warm_up_batch_is_not_timed_and_the_median_is_robust() {
    let mut c = cell("m", "ddpm_cache", false, None);
    // Four batches of 2 samples, 10 tokens each: 20 tokens per batch.
    c.batches = [5.0, 1.0, 2.0, 1.0]
        .iter()
        .enumerate()
        .map(|(i, &w)| crate::results::BatchRecord {
            first_index: 2 * i as u64,
            size: 2,
            nfe: 1,
            positions: None,
            wall_seconds: w,
            cpu_seconds: Some(w / 2.0),
        })
        .collect();
    let samples: Vec<SampleRecord> = (0..8)
        .map(|i| SampleRecord {
            unit: c.unit.clone(),
            key: c.key.clone(),
            index: i,
            tokens: vec![0; 10],
            log_q: Some(-1.0),
            in_support: true,
            first_invalid: None,
            invalid_transitions: 0,
            extra: Default::default(),
            nfe: 1,
            generated_tokens: 10,
            positions_computed: None,
            edits: None,
            template: None,
            trace: None,
        })
        .collect();
    let refs: Vec<&SampleRecord> = samples.iter().collect();
    // The slow first batch (warm-up) is left out: 20/1, 20/2, 20/1.
    assert_eq!(
        batch_throughputs(&c, &refs, Clock::Wall),
        vec![20.0, 10.0, 20.0]
    );
    assert_eq!(
        batch_throughputs(&c, &refs, Clock::Cpu),
        vec![40.0, 20.0, 40.0]
    );
    let s = summarize_cell(&c, &refs);
    assert_eq!(s.tokens_per_second, Some(20.0));
    assert_eq!(s.timed_batches, 3);
    assert_eq!(s.tokens_per_second_iqr, Some((15.0, 20.0)));
    assert_eq!(s.tokens_per_cpu_second, Some(40.0));
}

#[test]
fn unigram_entropy_of_uniform_and_constant() {
    assert!((unigram_entropy(&[0, 1, 2, 3]) - 4f64.ln()).abs() < 1e-12);
    assert_eq!(unigram_entropy(&[5, 5, 5]), 0.0);
}

/// The counting rule: a decoder that emits one token per forward is charged one forward per
/// token of its completion, however far past the completion's end it ran (AR's tokens per
/// forward is 1, not 36/47); a diffusion sampler is charged what it reports.
#[test]
fn one_token_per_forward_decoders_are_charged_their_completion() {
    let sample = |c: &CellRecord, index: u64, generated_tokens: u64| SampleRecord {
        unit: c.unit.clone(),
        key: c.key.clone(),
        index,
        tokens: vec![0; 47],
        log_q: None,
        in_support: true,
        first_invalid: None,
        invalid_transitions: 0,
        extra: Default::default(),
        nfe: 47,
        generated_tokens,
        positions_computed: None,
        edits: None,
        template: None,
        trace: None,
    };
    for (model, sampler, ar) in [("ar", "ar", true), ("mdm", "left_to_right", false)] {
        let c = cell(model, sampler, ar, None);
        let rows = [sample(&c, 0, 36), sample(&c, 1, 40), sample(&c, 2, 0)];
        let s = summarize_cell(&c, &rows.iter().collect::<Vec<_>>());
        // Forwards charged: 36 + 40 + 0 (the forward emitting the end marker is not charged).
        assert_eq!(s.nfe, Some(76.0 / 3.0), "{sampler}");
        assert_eq!(s.tokens_per_forward, Some(1.0), "{sampler}");
    }
    let c = cell("mdm", "ddpm_cache", false, None);
    let rows = [sample(&c, 0, 36), sample(&c, 1, 40)];
    let s = summarize_cell(&c, &rows.iter().collect::<Vec<_>>());
    assert_eq!(s.nfe, Some(47.0));
    assert_eq!(s.tokens_per_forward, Some(76.0 / 94.0));
}
