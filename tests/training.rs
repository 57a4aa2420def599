//! Harness-driven training through the real binary and the real `dlm-neural` and `dlm-formal`
//! libraries: train, cache, reuse, retrain on change, refuse a corrupt checkpoint.

mod common;
use common::*;
use std::path::Path;

const SUITE: &str = "tests/suites/train-tiny.yaml";

fn line<'a>(lines: &'a [serde_json::Value], key: &str) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|l| l["key"] == key)
        .unwrap_or_else(|| panic!("no training line {key} in {lines:?}"))
}

fn sorted_samples(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn training_learns_caches_retrains_on_change_and_refuses_corrupt_checkpoints() {
    let tmp = scratch("training");
    let ckpts = tmp.join("checkpoints");
    let ck = ckpts.to_str().unwrap();

    // 1. First run trains both models, then samples them.
    let first = tmp.join("first");
    let out = run(&[
        "run",
        SUITE,
        "--out",
        first.to_str().unwrap(),
        "--checkpoints",
        ck,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let lines = training_lines(&first);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for key in ["mdm/bigram-ser/L12", "ar/bigram-ser/L12"] {
        let l = line(&lines, key);
        assert_eq!(l["reused"], false);
        let record = &l["record"];
        let validation = record["output"]["validation"].as_array().unwrap();
        assert_eq!(validation.len(), 3, "every 50 of 150 steps: {validation:?}");
        let first_v = validation[0]["nll_per_token"].as_f64().unwrap();
        let last_v = validation[2]["nll_per_token"].as_f64().unwrap();
        assert!(
            last_v < first_v,
            "{key}: validation did not improve: {validation:?}"
        );
        assert_eq!(record["output"]["losses"].as_array().unwrap().len(), 150);
        // Uniform guessing costs ln 8 nats per token; training must beat it clearly.
        assert!(last_v < 8f64.ln() - 0.2, "{key}: {last_v}");
        assert!(Path::new(record["checkpoint"].as_str().unwrap()).exists());
    }
    // The AR model's held-out NLL is exact, so it cannot be far below the entropy rate of the
    // language (sampling error of 128 sequences aside), and after 150 steps it is close to it.
    let ar = &line(&lines, "ar/bigram-ser/L12")["record"];
    let optimum = ar["optimal_nll_per_token"].as_f64().unwrap();
    let ar_nll = ar["output"]["validation"][2]["nll_per_token"]
        .as_f64()
        .unwrap();
    assert_eq!(ar["output"]["bound"], false);
    assert!(
        ar_nll > optimum - 0.05 && ar_nll < optimum + 0.2,
        "AR validation NLL {ar_nll} vs optimum {optimum}"
    );
    assert_eq!(
        line(&lines, "mdm/bigram-ser/L12")["record"]["output"]["bound"],
        true
    );
    // Both are compared with the task's exact NLL of the same held-out sequences, which neither
    // an exact NLL nor a bound on it can fall below by more than its estimation noise.
    for key in ["mdm/bigram-ser/L12", "ar/bigram-ser/L12"] {
        let output = &line(&lines, key)["record"]["output"];
        let reference = output["reference_nll_per_token"].as_f64().unwrap();
        let last = output["validation"][2]["nll_per_token"].as_f64().unwrap();
        eprintln!(
            "{key}: validation {last:.4}, reference {reference:.4}, entropy rate {optimum:.4}"
        );
        assert!(
            (reference - optimum).abs() < 0.1,
            "{key}: reference {reference} vs entropy rate {optimum}"
        );
        assert!(
            last > reference - 0.01,
            "{key}: validation {last} below the reference {reference}"
        );
    }
    // Figure 1's shape, even this small: one-step MDM sampling leaves the language far more
    // often than the AR model.
    let s = summary(&first);
    let ar_ser = cell(&s, "bigram-ser", "ar", Some("ar"), None)["ser"]
        .as_f64()
        .unwrap();
    let mdm1_ser = cell(&s, "bigram-ser", "mdm", Some("ddpm_cache"), Some(1))["ser"]
        .as_f64()
        .unwrap();
    assert!(
        mdm1_ser > ar_ser + 0.3,
        "MDM@1 SER {mdm1_ser}, AR SER {ar_ser}"
    );
    assert!(first.join("report.html").exists());
    let html = std::fs::read_to_string(first.join("report.html")).unwrap();
    assert!(
        html.contains("Training"),
        "the report has a training section"
    );

    // 2. A second run reuses both checkpoints and reproduces the samples exactly.
    let second = tmp.join("second");
    let out = run(&[
        "run",
        SUITE,
        "--out",
        second.to_str().unwrap(),
        "--checkpoints",
        ck,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let lines = training_lines(&second);
    assert!(lines.iter().all(|l| l["reused"] == true), "{lines:?}");
    assert_eq!(sorted_samples(&first), sorted_samples(&second));

    // 3. Changing one model's training retrains that model only.
    let changed = std::fs::read_to_string(root().join(SUITE))
        .unwrap()
        .replacen("steps: 150", "steps: 120", 1);
    let changed_suite = tmp.join("changed.yaml");
    std::fs::write(
        &changed_suite,
        changed.replace("validation_every: 50", "validation_every: 40"),
    )
    .unwrap();
    let third = tmp.join("third");
    let out = run(&[
        "run",
        changed_suite.to_str().unwrap(),
        "--out",
        third.to_str().unwrap(),
        "--checkpoints",
        ck,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let lines = training_lines(&third);
    assert_eq!(line(&lines, "mdm/bigram-ser/L12")["reused"], false);
    assert_eq!(
        line(&lines, "mdm/bigram-ser/L12")["record"]["train"]["steps"],
        120
    );
    // (validation_every changed for both, but it does not change the weights)
    assert_eq!(line(&lines, "ar/bigram-ser/L12")["reused"], true);

    // 4. A corrupted checkpoint is refused with a message naming the file; only that model's
    // cells fail, the rest finish, and the exit code says so.
    let ar_ckpt = line(&training_lines(&first), "ar/bigram-ser/L12")["record"]["checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    let mut bytes = std::fs::read(&ar_ckpt).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&ar_ckpt, bytes).unwrap();
    let fourth = tmp.join("fourth");
    let out = run(&[
        "run",
        SUITE,
        "--out",
        fourth.to_str().unwrap(),
        "--checkpoints",
        ck,
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&fourth);
    let ar_cell = cell(&s, "bigram-ser", "ar", Some("ar"), None);
    assert_eq!(ar_cell["status"], "failed");
    let cause = ar_cell["cause"].as_str().unwrap();
    assert!(
        cause.contains("corrupted") && cause.contains(&ar_ckpt) && cause.contains("delete"),
        "{cause}"
    );
    assert_eq!(
        cell(&s, "bigram-ser", "mdm", Some("ddpm_cache"), Some(12))["status"],
        "ok"
    );

    // 5. `dlm-bench train` alone: the MDM comes from the cache, the AR checkpoint is still
    // refused at the next open, so delete it and train again.
    std::fs::remove_file(&ar_ckpt).unwrap();
    let out = run(&["train", SUITE, "--checkpoints", ck]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ar/bigram-ser/L12") && stdout.contains("vs optimum"),
        "{stdout}"
    );
    assert!(
        Path::new(&ar_ckpt).exists(),
        "retrained into the same cache entry"
    );
}

#[test]
fn training_settings_are_checked_with_locations() {
    let tmp = scratch("training-errors");
    let base = std::fs::read_to_string(root().join(SUITE)).unwrap();
    let cases = [
        // No `steps`.
        (
            base.replacen(
                "train: {steps: 150, batch_size: 32",
                "train: {batch_size: 32",
                1,
            ),
            "`train` needs `steps`",
        ),
        // A negative batch size.
        (
            base.replacen("batch_size: 32", "batch_size: -1", 1),
            "train.batch_size must be at least 1",
        ),
        // A model without the `train` capability.
        (
            base.replacen("model: mdm\n", "model: oracle\n", 1)
                .replacen(
                    "plugin: dlm-neural\n    model: oracle",
                    "plugin: dlm-formal\n    model: oracle",
                    1,
                ),
            "cannot be trained by the harness",
        ),
        // A task the suite does not define.
        (
            base.replacen(
                "samplers: [ar]",
                "samplers: [ar]\n    tasks: [bigram-sr]",
                1,
            ),
            "did you mean `bigram-ser`",
        ),
    ];
    for (i, (suite, expected)) in cases.iter().enumerate() {
        let path = tmp.join(format!("bad{i}.yaml"));
        std::fs::write(&path, suite).unwrap();
        let out = run(&[
            "run",
            path.to_str().unwrap(),
            "--out",
            tmp.join(format!("run{i}")).to_str().unwrap(),
            "--checkpoints",
            tmp.join("ck").to_str().unwrap(),
        ]);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "case {i}: {all}");
        assert!(
            all.contains(expected),
            "case {i}: expected `{expected}` in {all}"
        );
        assert!(
            all.contains(&format!("bad{i}.yaml:")),
            "case {i}: located: {all}"
        );
    }
    // An unknown training option reaches the plugin, which names the valid ones; the model's
    // cells fail with that cause and nothing else does.
    let path = tmp.join("badopt.yaml");
    std::fs::write(&path, base.replacen("lr: 0.003", "learning_rate: 0.003", 1)).unwrap();
    let out = run(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        tmp.join("runopt").to_str().unwrap(),
        "--checkpoints",
        tmp.join("ck").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = summary(&tmp.join("runopt"));
    let cause = cell(&s, "bigram-ser", "mdm", Some("ddpm_cache"), Some(1))["cause"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        cause.contains("learning_rate") && cause.contains("warmup_fraction"),
        "{cause}"
    );
    assert_eq!(
        cell(&s, "bigram-ser", "ar", Some("ar"), None)["status"],
        "ok"
    );
}

/// Two runs started together on one checkpoint cache (as parallel runs or the shards of a Slurm
/// array on a shared file system do) train each model once: one process trains it under the
/// entry's lock, the other waits and reuses the checkpoint, and both sample the same weights.
#[test]
fn runs_sharing_a_checkpoint_cache_train_each_model_once() {
    let tmp = scratch("training-shared-cache");
    let ckpts = tmp.join("checkpoints");
    let outs = [tmp.join("a"), tmp.join("b")];
    let children: Vec<_> = outs
        .iter()
        .map(|out| {
            command()
                .args(["run", SUITE, "--out", out.to_str().unwrap()])
                .args(["--checkpoints", ckpts.to_str().unwrap()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("dlm-bench starts")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    let (a, b) = (training_lines(&outs[0]), training_lines(&outs[1]));
    for key in ["mdm/bigram-ser/L12", "ar/bigram-ser/L12"] {
        let trained = [&a, &b]
            .iter()
            .filter(|lines| line(lines, key)["reused"] == false)
            .count();
        assert_eq!(trained, 1, "{key} trained by {trained} runs: {a:?} {b:?}");
        assert_eq!(
            line(&a, key)["record"]["cache_id"],
            line(&b, key)["record"]["cache_id"]
        );
    }
    assert_eq!(sorted_samples(&outs[0]), sorted_samples(&outs[1]));
}
