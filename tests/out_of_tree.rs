//! A plugin built out of tree — its own cargo workspace, depending only on the published SDK —
//! loads and runs exactly like the built-in ones. Its source is the README's plugin example,
//! so the README's promise is what gets tested.

mod common;
use common::*;
use std::process::Command;

/// The first ```rust block of the README.
fn readme_example() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("```rust\n").expect("README has a rust example") + "```rust\n".len();
    let end = start + readme[start..].find("```").unwrap();
    readme[start..end].to_string()
}

#[test]
fn the_readme_plugin_built_out_of_tree_runs_from_a_suite() {
    let dir = scratch("out-of-tree");
    let krate = dir.join("my-mdm");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    // An empty [workspace] table makes this crate its own workspace, detached from ours.
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"my-mdm\"\nversion = \"0.3.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\ndlm-sdk = {{ path = {:?} }}\n\n[workspace]\n",
            root().join("harness/sdk")
        ),
    )
    .unwrap();
    std::fs::write(krate.join("src/lib.rs"), readme_example()).unwrap();
    // Same dependency versions as ours, without touching our target directory.
    std::fs::copy(root().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let target = dir.join("target");
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&krate)
        .status()
        .unwrap();
    assert!(
        built.success(),
        "the README example must build as a standalone plugin crate"
    );
    let lib = target.join("debug").join(format!(
        "{}my_mdm{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(lib.is_file());

    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: oot\nsamples: 50\nlengths: [8]\ntasks:\n  - {{name: bigram, plugin: dlm-formal, task: ngram, config: {{order: 2, variant: ser}}}}\nmodels:\n  - {{name: mine, plugin: {:?}, model: uniform}}\nsamplers:\n  - {{sampler: ddpm_cache, steps: [2]}}\n  - {{sampler: left_to_right}}\n",
            lib
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
    }
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"my-mdm\"") && manifest.contains("\"0.3.0\""),
        "manifest records the out-of-tree plugin"
    );
}
