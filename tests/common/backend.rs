//! A tiny suite end to end on another backend, compared with flex: what tests/wgpu.rs (wgpu on
//! Mesa's software Vulkan) and tests/tch.rs (LibTorch) run.

use super::*;
use std::path::Path;

/// The tiny suite: a bigram task, an MDM (ddpm_cache, 4 steps) and an AR model on `device`.
fn suite(device: &str, neural: &str) -> String {
    let model = |name: &str, kind: &str, sampler: &str| {
        format!(
            "  - name: {name}\n    plugin: {neural}\n    model: {kind}\n    \
             config: {{init: {{hidden: 32, layers: 1, heads: 2}}, device: {device}}}\n    \
             train: {{steps: 60, batch_size: 32, lr: 0.003, seed: 5, validation_every: 30, \
             validation_samples: 64}}\n    samplers: [{sampler}]\n"
        )
    };
    format!(
        "name: backend-{}\nsamples: 64\nbatch_size: 32\nlengths: [12]\nseeds: [1]\n\
         timeout_seconds: 600\ntasks:\n  - {{name: bigram, plugin: dlm-formal, task: ngram, \
         config: {{order: 2, variant: ser, seed: 0}}}}\nmodels:\n{}{}samplers:\n  \
         - sampler: ddpm_cache\n    steps: [4]\n  - sampler: ar\n",
        device.replace(':', "-"),
        model("mdm", "mdm", "ddpm_cache"),
        model("ar", "ar", "ar"),
    )
}

fn samples(dir: &Path) -> Vec<(String, u64, Vec<u64>)> {
    let mut rows: Vec<(String, u64, Vec<u64>)> = std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let tokens = v["tokens"].as_array().unwrap();
            (
                v["key"].as_str().unwrap().to_string(),
                v["index"].as_u64().unwrap(),
                tokens.iter().map(|t| t.as_u64().unwrap()).collect(),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// The real harness trains and samples a tiny MDM and AR model with `device: {device}` through
/// the `dlm-neural` library `library_var` names (built with `--features {feature}`), and again
/// with `device: flex`: the training curves agree to 1e-3 and at least 99% of the sampled tokens
/// are identical. Without the library the test is skipped (visibly), unless `require_var` is set
/// (to anything but empty or `0`), where it fails.
pub fn tiny_suite_matches_flex(device: &str, feature: &str, library_var: &str, require_var: &str) {
    let Some(library) = std::env::var_os(library_var) else {
        let fix = format!("point it at a dlm-neural library built with --features {feature}");
        let backend = skip::Dependency {
            name: &format!("a dlm-neural library for {device}"),
            fix: &fix,
            require_var: Some(require_var),
            // Built by a separate step (.ci/run's wgpu phase, tools/tch/test.sh), which sets
            // `require_var`; a plain `cargo test` on a CI machine has no such library.
            required_in_ci: false,
        };
        skip::absent(&backend, format!("{library_var} is not set"));
        return;
    };
    let library = std::path::PathBuf::from(library);
    assert!(library.exists(), "{} does not exist", library.display());
    let dir = scratch(&format!("backend-{}", device.replace(':', "-")));
    let mut runs = Vec::new();
    for device in ["flex", device] {
        let file = device.replace(':', "-");
        let suite_path = dir.join(format!("{file}.yaml"));
        std::fs::write(&suite_path, suite(device, library.to_str().unwrap())).unwrap();
        let out = dir.join(&file);
        let r = run(&[
            "run",
            suite_path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--checkpoints",
            dir.join(format!("{file}-checkpoints")).to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{device}: {}", text(&r));
        let cells = summary(&out);
        // The label runs record (dlm-sdk's `DeviceName::label`): `cpu` for flex, `tch:cpu` for
        // `tch`, any other name as given.
        let label = match device {
            "flex" => "cpu",
            "tch" => "tch:cpu",
            other => other,
        };
        let models: Vec<_> = cells.iter().filter(|c| c["model"] != "reference").collect();
        assert_eq!(models.len(), 2);
        assert!(models.iter().all(|c| c["device"] == label), "{models:?}");
        runs.push(out);
    }
    // The training curves agree to f32 rounding: same initial weights, data and noise.
    let (flex, other) = (training_lines(&runs[0]), training_lines(&runs[1]));
    assert_eq!(flex.len(), other.len());
    for (a, b) in flex.iter().zip(&other) {
        let curve = |l: &serde_json::Value| -> Vec<f64> {
            l["record"]["output"]["validation"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["nll_per_token"].as_f64().unwrap())
                .collect()
        };
        let (ca, cb) = (curve(a), curve(b));
        assert_eq!(ca.len(), cb.len(), "{}", a["key"]);
        for (x, y) in ca.iter().zip(&cb) {
            assert!(
                (x - y).abs() < 1e-3 * x.abs().max(1.0),
                "{}: validation NLL {x} on flex, {y} on {device}",
                a["key"]
            );
        }
        eprintln!("{}: validation NLL flex {ca:?}, {device} {cb:?}", a["key"]);
    }
    // The samples agree except where a draw falls within rounding of a category boundary.
    let (sa, sb) = (samples(&runs[0]), samples(&runs[1]));
    assert_eq!(sa.len(), sb.len());
    let (mut same, mut total) = (0usize, 0usize);
    for (a, b) in sa.iter().zip(&sb) {
        assert_eq!((&a.0, a.1), (&b.0, b.1));
        total += a.2.len();
        same += a.2.iter().zip(&b.2).filter(|(x, y)| x == y).count();
    }
    eprintln!("{same} of {total} sampled tokens identical on flex and {device}");
    assert!(
        same as f64 >= 0.99 * total as f64,
        "only {same} of {total} tokens agree"
    );
}
