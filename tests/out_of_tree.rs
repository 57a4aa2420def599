//! Plugins built out of tree — each its own cargo workspace, depending only on the SDK — load and
//! run exactly like the built-in ones. Their manifests and sources are docs/plugin-guide.md's
//! examples, taken from the guide as written (only the SDK's path is made real), so the guide's
//! promise is what gets tested.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const GUIDE: &str = "docs/plugin-guide.md";
/// The SDK path the guide's manifests use (a checkout beside the plugin).
const GUIDE_SDK_PATH: &str = "path = \"../dlm-bench/harness/sdk\"";

/// The first fenced block of `language` in the guide's section `heading` (up to the next `## `).
fn guide_block(heading: &str, language: &str) -> String {
    let guide = std::fs::read_to_string(root().join(GUIDE)).unwrap();
    let start = guide
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("{GUIDE} has no section `{heading}`"));
    let section = &guide[start + heading.len() + 2..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let fence = format!("```{language}\n");
    let begin = section
        .find(&fence)
        .unwrap_or_else(|| panic!("{GUIDE}, `{heading}`: no ```{language} block"))
        + fence.len();
    let end = begin + section[begin..].find("```").unwrap();
    section[begin..end].to_string()
}

/// The `key = "value"` of the guide's manifest `[package]`.
fn package_field(manifest: &str, key: &str) -> String {
    let line = manifest
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no `{key}` in\n{manifest}"));
    line.split('"').nth(1).unwrap().to_string()
}

/// Writes the guide's crate of section `heading` under `dir` (its `src/lib.rs` is the section's
/// first ```rust block), builds it into `target` and returns its manifest and library.
fn build_guide_crate(heading: &str, dir: &Path, target: &Path) -> (String, PathBuf) {
    build_guide_crate_from(heading, &[("lib.rs", "rust")], dir, target)
}

/// As [`build_guide_crate`], with the section's sources: each `(file under src/, language of
/// its fenced block)`.
fn build_guide_crate_from(
    heading: &str,
    sources: &[(&str, &str)],
    dir: &Path,
    target: &Path,
) -> (String, PathBuf) {
    let manifest = guide_block(heading, "toml");
    assert!(
        manifest.contains(GUIDE_SDK_PATH) && manifest.contains("\n[workspace]"),
        "`{heading}`: the guide's manifest depends on the SDK by {GUIDE_SDK_PATH} and is its own workspace"
    );
    let name = package_field(&manifest, "name");
    let krate = dir.join(&name);
    std::fs::create_dir_all(krate.join("src")).unwrap();
    let sdk = format!("path = {:?}", root().join("harness/sdk"));
    std::fs::write(
        krate.join("Cargo.toml"),
        manifest.replace(GUIDE_SDK_PATH, &sdk),
    )
    .unwrap();
    for (file, language) in sources {
        std::fs::write(krate.join("src").join(file), guide_block(heading, language)).unwrap();
    }
    // Same dependency versions as ours, without touching our target directory.
    std::fs::copy(root().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet"])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(&krate)
        .status()
        .unwrap();
    assert!(
        built.success(),
        "{GUIDE}, `{heading}`: the example must build as a standalone plugin crate"
    );
    let lib = target.join("debug").join(format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ));
    assert!(lib.is_file(), "{} was not built", lib.display());
    (manifest, lib)
}

#[test]
fn the_plugin_guide_examples_built_out_of_tree_run_from_a_suite() {
    let dir = scratch("out-of-tree");
    // One target directory for both crates: the SDK and its dependencies build once.
    let target = dir.join("target");
    let (model_manifest, model_lib) = build_guide_crate("## A model plugin", &dir, &target);
    let (task_manifest, task_lib) =
        build_guide_crate("## A task plugin with its own metric", &dir, &target);

    let p_heads = 0.8;
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: oot\nsamples: 200\nbatch_size: 50\nlengths: [8]\nseeds: [3]\ntasks:\n  - {{name: bigram, plugin: dlm-formal, task: ngram, config: {{order: 2, variant: ser}}}}\n  - {{name: coin, plugin: {:?}, task: coin, config: {{p_heads: {p_heads}}}}}\nmodels:\n  - {{name: mine, plugin: {:?}, model: uniform}}\nsamplers:\n  - {{sampler: ddpm_cache, steps: [2]}}\n  - {{sampler: left_to_right}}\n",
            task_lib, model_lib
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let r = run(&[
        "run",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let s = summary(&out);
    for sampler in ["ddpm_cache", "left_to_right"] {
        let c = cell(&s, "bigram", "mine", Some(sampler), None);
        assert_eq!(c["status"], "ok");
        // A uniform model ignores the language, so most of its samples leave the pruned support.
        assert!(
            c["ser"].as_f64().unwrap() > 0.5,
            "{sampler}: SER {}",
            c["ser"]
        );
        // On the coin its tokens are fair flips: about half heads (1600 flips per cell, so a
        // standard error of 0.0125), whatever the task's own bias.
        let heads = &cell(&s, "coin", "mine", Some(sampler), None)["metrics"]["heads"];
        let v = heads["value"].as_f64().unwrap();
        assert!((v - 0.5).abs() < 0.06, "{sampler}: heads {heads}");
    }
    // The task's declared metric on its own ground truth: the share of heads is the bias.
    let reference = cell(&s, "coin", "reference", None, None);
    let heads = &reference["metrics"]["heads"];
    assert_eq!(heads["declared"]["kind"], "mean", "{heads}");
    let v = heads["value"].as_f64().unwrap();
    assert!((v - p_heads).abs() < 0.05, "reference heads {heads}");
    // Every coin sequence is in the support.
    assert_eq!(reference["ser"].as_f64(), Some(0.0), "{reference}");

    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    for krate in [&model_manifest, &task_manifest] {
        let (name, version) = (
            package_field(krate, "name"),
            package_field(krate, "version"),
        );
        assert!(
            manifest.contains(&format!("\"{name}\""))
                && manifest.contains(&format!("\"{version}\"")),
            "the manifest records the out-of-tree plugin {name} {version}"
        );
    }
}

/// The guide's sampler crate (a sampler in its own file, one registry line) builds out of tree,
/// and its `ordered` sampler runs from a suite: with `from: right` every step commits the
/// quota of masked positions nearest the end, whatever the model says, so three steps over
/// eight positions cost three network calls; a parameter outside its options fails the cell
/// with the message the guide promises.
#[test]
fn the_plugin_guide_sampler_built_out_of_tree_runs_from_a_suite() {
    let dir = scratch("out-of-tree-sampler");
    let target = dir.join("target");
    let (_, lib) = build_guide_crate_from(
        "## A sampler",
        &[("ordered.rs", "rust"), ("lib.rs", "rust,ignore")],
        &dir,
        &target,
    );
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: oot-sampler\nsamples: 20\nbatch_size: 10\nlengths: [8]\nseeds: [1]\nreference: false\ntasks:\n  - {{name: bigram, plugin: dlm-formal, task: ngram, config: {{order: 2, variant: ter}}}}\nmodels:\n  - {{name: mine, plugin: {lib:?}, model: uniform}}\nsamplers:\n  - {{sampler: ordered, steps: [3], params: {{from: right}}}}\n  - {{sampler: ordered, steps: [3], params: {{from: up}}}}\n"
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let r = run(&[
        "run",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(3), "one cell fails: {}", text(&r));
    let s = summary(&out);
    let rows: Vec<_> = s
        .iter()
        .filter(|c| c["sampler"] == "ordered" && c["model"] == "mine")
        .collect();
    assert_eq!(rows.len(), 2, "{s:?}");
    let ok: Vec<_> = rows.iter().filter(|c| c["status"] == "ok").collect();
    assert_eq!(ok.len(), 1, "{rows:?}");
    assert_eq!(ok[0]["nfe"], 3.0, "one network call per step: {}", ok[0]);
    let failed = rows.iter().find(|c| c["status"] == "failed").unwrap();
    let cause = failed["cause"].as_str().unwrap();
    assert!(
        cause.contains("from must be one of: left, right"),
        "{cause}"
    );
    assert_eq!(failed["error_kind"], "bad_config", "{failed}");
}
