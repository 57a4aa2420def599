use super::*;
use serde_json::{json, Value};

/// A summary row as `summary.json` holds it (fields the row does not name are absent there).
fn row(
    task: &str,
    model: &str,
    sampler: Option<&str>,
    steps: Option<usize>,
    extra: Value,
) -> CellSummary {
    let label = match (sampler, steps) {
        (Some(s), Some(n)) => format!("{s}@{n}"),
        _ => "ground-truth".into(),
    };
    let mut v = json!({
        "key": format!("{task}/{model}/{label}/L12/seed3"),
        "unit": format!("{task}-{model}-{label}"),
        "task": task, "model": model, "sampler": sampler, "steps": steps,
        "length": 12, "seed": 3, "batch_size": 64, "status": "ok", "n": 300,
        "zero_probability_samples": 0,
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    serde_json::from_value(v).expect("a summary row")
}

/// The table's lines, less the blank line that ends each task.
fn lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.is_empty()).collect()
}

#[test]
fn a_formal_task_shows_ter_and_ser_with_their_intervals() {
    let summary = vec![
        row(
            "bigram",
            "reference",
            None,
            None,
            json!({"ter": 1.04321, "ter_ci": [1.0401, 1.0467], "ser": 0.0, "ser_ci": [0.0, 0.0123]}),
        ),
        row(
            "bigram",
            "oracle",
            Some("ddpm_cache"),
            Some(4),
            json!({"zero_probability_samples": 7, "ser": 0.0233, "ser_ci": [0.0113, 0.0474]}),
        ),
        row(
            "bigram",
            "oracle",
            Some("left_to_right"),
            Some(12),
            json!({"one_step_per_token": true, "ter": 1.0441, "ser": 0.0}),
        ),
    ];
    let text = render(&summary);
    let l = lines(&text);
    assert_eq!(l[0], "bigram: 95% CIs in brackets");
    assert!(
        l[1].starts_with("  model · sampler") && l[1].contains("TER") && l[1].contains("SER"),
        "{text}"
    );
    assert!(l[2].trim_start().starts_with('─'));
    assert_eq!(
        l.len(),
        6,
        "title, header, rule and one line per cell:\n{text}"
    );
    assert!(
        l[3].contains("reference · ground truth")
            && l[3].contains("1.0432 [1.0401, 1.0467]")
            && l[3].contains("0.000 [0.000, 0.012]"),
        "{text}"
    );
    // Samples outside the support make TER infinite.
    assert!(
        l[4].contains("oracle · ddpm_cache")
            && l[4].contains(" 4 ")
            && l[4].contains('∞')
            && l[4].contains("0.023 [0.011, 0.047]"),
        "{text}"
    );
    assert!(
        l[5].contains("1/token") && l[5].contains("1.0441") && !l[5].contains('['),
        "{text}"
    );
    // Columns line up: every figure column ends where its header ends.
    let end = |s: &str| s.chars().count();
    assert_eq!(end(l[1]), end(l[3]));
}

#[test]
fn a_text_task_shows_its_headline_metrics_and_failures() {
    let accuracy = json!({"ser": 0.0, "ser_ci": [0.0, 0.1], "metrics": {
        "accuracy": {
            "value": 0.25, "ci": [0.1, 0.5], "n": 20,
            "declared": {"name": "accuracy", "label": "accuracy (strict)", "kind": "rate",
                         "better": "higher", "digits": 2, "headline": true}
        },
        "answer_length": {
            "value": 31.0, "ci": [29.0, 33.0], "n": 20,
            "declared": {"name": "answer_length", "label": "answer length", "kind": "mean",
                         "better": "neither"}
        }
    }});
    let mut failed = row("gsm8k", "tiny", Some("low_confidence"), Some(64), json!({}));
    failed.status = CellStatus::Failed;
    let summary = vec![
        row("gsm8k", "tiny", Some("low_confidence"), Some(32), accuracy),
        failed,
    ];
    let text = render(&summary);
    let l = lines(&text);
    assert!(
        l[1].contains("accuracy (strict)") && !l[1].contains("TER") && !l[1].contains("SER"),
        "{text}"
    );
    // The headline metric only (the task marks one), and no SER: the task has its own metrics.
    assert!(!l[1].contains("answer length"), "{text}");
    assert!(l[3].contains("0.25 [0.10, 0.50]"), "{text}");
    assert!(l[4].contains(" 64 ") && l[4].ends_with("failed"), "{text}");
}

#[test]
fn many_step_counts_keep_the_fewest_and_the_most_and_say_so() {
    let mut summary: Vec<CellSummary> = [1, 2, 4, 8, 16]
        .iter()
        .map(|&s| row("t", "m", Some("eb"), Some(s), json!({"ser": 0.5})))
        .collect();
    summary.push(row("t", "m", Some("ddpm"), Some(3), json!({"ser": 0.25})));
    summary.push(row("t", "m", Some("ddpm"), Some(9), json!({"ser": 0.125})));
    // A failed cell in the middle of a series is shown all the same.
    summary[2].status = CellStatus::Failed;
    let text = render(&summary);
    let l = lines(&text);
    assert!(l[0].contains("fewest and most steps shown"), "{text}");
    let steps: Vec<&str> = l[3..]
        .iter()
        .map(|r| r.split_whitespace().nth(3).unwrap())
        .collect();
    assert_eq!(steps, ["1", "4", "16", "3", "9"], "{text}");
    assert!(!render(&summary[5..]).contains("fewest"));
}

#[test]
fn without_headline_metrics_every_declared_metric_shows() {
    let metric = |name: &str, value: f64| {
        json!({"value": value, "n": 20, "ci": null,
               "declared": {"name": name, "label": name, "kind": "mean", "better": "higher", "digits": 1}})
    };
    let metrics = json!({"metrics": {"alpha": metric("alpha", 1.5), "beta": metric("beta", 2.0)}});
    let text = render(&[row("t", "m", Some("eb"), Some(8), metrics)]);
    let l = lines(&text);
    assert!(l[1].contains("alpha") && l[1].contains("beta"), "{text}");
    let figures: Vec<&str> = l[3].split_whitespace().skip(4).collect();
    assert_eq!(figures, ["1.5", "2.0"], "{text}");
}

#[test]
fn tasks_come_in_summary_order_and_sampler_settings_stay_apart() {
    let mut a = row(
        "second",
        "m",
        Some("low_confidence"),
        Some(8),
        json!({"ser": 0.5}),
    );
    a.key = "second/m/low_confidence@8,block_length=4/L12/seed3".into();
    let b = row("first", "m", Some("eb"), Some(8), json!({"ser": 0.5}));
    let c = row(
        "second",
        "m",
        Some("low_confidence"),
        Some(8),
        json!({"ser": 0.25}),
    );
    let text = render(&[a, b, c]);
    let titles: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        titles,
        ["second: 95% CIs in brackets", "first: 95% CIs in brackets"]
    );
    assert!(
        text.contains("m · low_confidence,block_length=4") && text.contains("m · low_confidence "),
        "{text}"
    );
    assert_eq!(render(&[]), "");
}
