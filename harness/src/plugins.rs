//! Finding, building and describing plugins.
//!
//! A suite names a plugin either by the workspace crate that builds it — the harness then runs
//! `cargo build -p CRATE` (cargo itself decides whether anything is stale), so a fresh clone
//! needs no separate build step — or by a path to a library built anywhere, e.g. out of tree.

use crate::suite::{did_you_mean, PluginRef, Suite, SuiteError};
use crate::worker::{self, Job, Outcome};
use anyhow::{Context, Result};
use dlm_plugin_api::PluginDescriptor;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The cargo workspace that holds plugin crates.
pub struct Workspace {
    pub root: PathBuf,
    pub target_dir: PathBuf,
    /// Packages with a `cdylib` target, i.e. plugins (test fixtures included: suites may name
    /// them).
    pub plugin_crates: Vec<String>,
    /// The plugin crates that are test fixtures (`fixture = true` under
    /// `[package.metadata.dlm-bench]` in their `Cargo.toml`): plugins that misbehave on
    /// purpose for the integration tests. `dlm-bench list` shows them only with `--all`.
    pub fixture_crates: Vec<String>,
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// Cargo profile plugins are built with: `DLM_BENCH_PLUGIN_PROFILE` or `release`.
pub fn default_profile() -> String {
    std::env::var("DLM_BENCH_PLUGIN_PROFILE").unwrap_or_else(|_| "release".to_string())
}

impl Workspace {
    /// The workspace containing `dir`, via `cargo metadata`.
    pub fn find(dir: &Path) -> Result<Workspace> {
        let out = Command::new(cargo())
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .current_dir(dir)
            .output()
            .context("cannot run `cargo metadata` (is cargo installed and on PATH?)")?;
        if !out.status.success() {
            anyhow::bail!(
                "{} is not inside a cargo workspace: {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        let root = PathBuf::from(meta["workspace_root"].as_str().unwrap_or("."));
        let target_dir = PathBuf::from(meta["target_directory"].as_str().unwrap_or("target"));
        let mut plugin_crates = Vec::new();
        let mut fixture_crates = Vec::new();
        for p in meta["packages"].as_array().into_iter().flatten() {
            let is_plugin = p["targets"].as_array().into_iter().flatten().any(|t| {
                t["crate_types"]
                    .as_array()
                    .is_some_and(|ct| ct.iter().any(|c| c == "cdylib"))
            });
            if is_plugin {
                let name = p["name"].as_str().unwrap_or_default().to_string();
                if is_fixture_package(p) {
                    fixture_crates.push(name.clone());
                }
                plugin_crates.push(name);
            }
        }
        plugin_crates.sort();
        fixture_crates.sort();
        Ok(Workspace {
            root,
            target_dir,
            plugin_crates,
            fixture_crates,
        })
    }

    /// Whether the plugin crate `krate` is a test fixture (see [`Workspace::fixture_crates`]).
    pub fn is_fixture(&self, krate: &str) -> bool {
        self.fixture_crates.iter().any(|c| c == krate)
    }

    /// Path of the library `cargo build -p CRATE --profile PROFILE` produces.
    pub fn library_path(&self, krate: &str, profile: &str) -> PathBuf {
        let dir = if profile == "dev" || profile == "debug" {
            "debug"
        } else {
            profile
        };
        self.target_dir.join(dir).join(format!(
            "{}{}{}",
            std::env::consts::DLL_PREFIX,
            krate.replace('-', "_"),
            std::env::consts::DLL_SUFFIX
        ))
    }

    /// Build the given plugin crates (cargo skips what is fresh).
    pub fn build(&self, crates: &[String], profile: &str) -> Result<()> {
        if crates.is_empty() {
            return Ok(());
        }
        let profile_arg = if profile == "debug" { "dev" } else { profile };
        tracing::info!("building plugins {} ({profile})", crates.join(", "));
        let mut cmd = Command::new(cargo());
        cmd.arg("build")
            .arg("--profile")
            .arg(profile_arg)
            .current_dir(&self.root);
        for c in crates {
            cmd.arg("-p").arg(c);
        }
        let status = cmd.status().context("cannot run cargo to build plugins")?;
        if !status.success() {
            anyhow::bail!(
                "building plugins {} failed (cargo's messages are above)",
                crates.join(", ")
            );
        }
        Ok(())
    }
}

/// Whether a package of `cargo metadata` declares itself a test fixture:
/// `[package.metadata.dlm-bench] fixture = true` in its manifest. An explicit marker rather than
/// a path rule, so a fixture can live anywhere and a real plugin under `tests/` is still listed.
fn is_fixture_package(package: &serde_json::Value) -> bool {
    package["metadata"]["dlm-bench"]["fixture"].as_bool() == Some(true)
}

/// Resolve every plugin a suite names to a library path, building workspace crates.
pub fn resolve(suite: &Suite, profile: &str) -> Result<BTreeMap<PluginRef, PathBuf>> {
    let mut refs: Vec<(&PluginRef, &marked_yaml::Span)> = Vec::new();
    for t in &suite.tasks {
        refs.push((&t.plugin, &t.plugin_span));
    }
    for m in &suite.models {
        refs.push((&m.plugin, &m.plugin_span));
    }
    let mut out = BTreeMap::new();
    let needs_workspace = refs.iter().any(|(r, _)| matches!(r, PluginRef::Crate(_)));
    let suite_dir = suite
        .source
        .path
        .parent()
        .unwrap_or(Path::new("."))
        .to_owned();
    let suite_dir = if suite_dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        suite_dir
    };
    // Crates resolve in the workspace around the suite file first, then in dlm-bench's own
    // checkout, so a suite kept anywhere can still name the built-in plugins.
    let mut workspaces: Vec<Workspace> = Vec::new();
    let mut not_found: Vec<String> = Vec::new();
    if needs_workspace {
        for dir in [suite_dir.clone(), harness_checkout()] {
            match Workspace::find(&dir) {
                Ok(ws) if !workspaces.iter().any(|w| w.root == ws.root) => workspaces.push(ws),
                Ok(_) => {}
                Err(e) => not_found.push(format!("{e:#}")),
            }
        }
    }
    let mut to_build: Vec<Vec<String>> = vec![Vec::new(); workspaces.len()];
    for (r, span) in &refs {
        match r {
            PluginRef::Crate(name) => {
                let Some(wi) = workspaces
                    .iter()
                    .position(|w| w.plugin_crates.contains(name))
                else {
                    let searched = if workspaces.is_empty() {
                        format!("no cargo workspace ({})", not_found.join("; "))
                    } else {
                        workspaces
                            .iter()
                            .map(|w| w.root.display().to_string())
                            .collect::<Vec<_>>()
                            .join(" and ")
                    };
                    return Err(SuiteError::at(
                        &suite.source,
                        span,
                        format!(
                            "no plugin crate `{name}` in {searched}{}; a workspace crate is looked up in the workspace around the suite file, then in dlm-bench's own checkout — or name the built library by path instead, e.g. `plugin: path/to/{}{}{}` (relative to the suite file)",
                            did_you_mean(
                                name,
                                workspaces
                                    .iter()
                                    .flat_map(|w| w.plugin_crates.iter().map(String::as_str))
                            ),
                            std::env::consts::DLL_PREFIX,
                            name.replace('-', "_"),
                            std::env::consts::DLL_SUFFIX
                        ),
                    )
                    .into());
                };
                if !to_build[wi].contains(name) {
                    to_build[wi].push(name.clone());
                }
                out.insert((*r).clone(), workspaces[wi].library_path(name, profile));
            }
            PluginRef::Path(p) => {
                if !p.is_file() {
                    return Err(SuiteError::at(
                        &suite.source,
                        span,
                        format!(
                            "plugin library {} does not exist; build it first or fix the path",
                            p.display()
                        ),
                    )
                    .into());
                }
                out.insert((*r).clone(), p.clone());
            }
        }
    }
    for (ws, crates) in workspaces.iter().zip(&to_build) {
        ws.build(crates, profile)?;
    }
    Ok(out)
}

/// The checkout dlm-bench was built from (its workspace root), where the built-in plugin crates
/// live. A binary moved away from its checkout simply finds nothing there.
pub fn harness_checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Ask a worker process to load a library and report its descriptor, so a plugin that crashes
/// on load cannot take the harness down.
pub fn describe(
    library: &Path,
    scratch: &Path,
) -> Result<std::result::Result<PluginDescriptor, String>> {
    let name = format!(
        "describe-{}",
        library
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("plugin")
    );
    let job = Job::Describe {
        library: library.to_owned(),
    };
    Ok(
        match worker::run_job(
            &job,
            scratch,
            &name,
            Duration::from_secs(60),
            |_, _, _, _| {},
        )? {
            Outcome::Described(d) => Ok(d),
            Outcome::Failed(cause, _) => Err(cause),
            Outcome::Finished(_) | Outcome::Trained(_) => {
                Err("worker answered a describe job with something else".into())
            }
        },
    )
}

/// Refuse a path that is not a file, before anything is built or started.
pub fn check_library_file(library: &Path) -> Result<()> {
    if !library.is_file() {
        anyhow::bail!(
            "{}: no such file; pass a built plugin library (e.g. target/release/{}dlm_formal{}) or a workspace plugin crate name (e.g. dlm-formal; `dlm-bench list` shows them)",
            library.display(),
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        );
    }
    Ok(())
}

/// Describe a library in a worker and print its descriptor to stdout (`list`, `describe`).
/// A test fixture (`fixture`) is marked as such, and one the host refuses (some are built
/// against another plugin API on purpose) is reported as a fact about the fixture. Any other
/// library that is missing, not a shared library or refused is an error, for stderr and exit 1.
pub fn print_descriptor(library: &Path, fixture: bool) -> Result<()> {
    check_library_file(library)?;
    let scratch = std::env::temp_dir().join(format!("dlm-bench-describe-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let described = describe(library, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    match described? {
        Ok(d) => {
            println!(
                "{} {} (plugin API {}){} — {}",
                d.name,
                d.version,
                d.api_version,
                if fixture { " [test fixture]" } else { "" },
                library.display()
            );
            if !d.description.is_empty() {
                println!("  {}", d.description);
            }
            for t in &d.tasks {
                println!("  task  {:<16} {}", t.name, t.description);
            }
            for m in &d.models {
                println!(
                    "  model {:<16} {} [samplers: {}; capabilities: {}]",
                    m.name,
                    m.description,
                    m.samplers.join(", "),
                    m.capabilities.join(", ")
                );
            }
            Ok(())
        }
        Err(cause) if fixture => {
            println!(
                "{} [test fixture]: not loadable by this host (some fixtures are built to be refused): {cause}",
                library.display()
            );
            Ok(())
        }
        Err(cause) => anyhow::bail!(
            "{}: cannot be loaded as a dlm-bench plugin: {cause}",
            library.display()
        ),
    }
}
