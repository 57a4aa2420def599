//! The crate graph's architecture invariants (ARCHITECTURE.md, "Architecture invariant"
//! lines), checked on the workspace's manifests through `cargo metadata`:
//!
//! * the harness (`dlm-bench`) never depends on `dlm-sdk`, on a crate under `plugins/`, or on a
//!   test fixture under `tests/fixtures/` — not directly, and not through another workspace
//!   crate: it knows plugins only through `dlm-plugin-api` and JSON;
//! * no plugin or fixture depends on the harness (with any kind of dependency);
//! * `dlm-sdk` depends on no workspace crate but `dlm-plugin-api`, and `dlm-plugin-api` on none;
//! * only `dlm-plugin-api` depends on the FFI crates `abi_stable` and `libloading`.
//!
//! The check is a pure function of the metadata JSON, so the tests below also feed it doctored
//! copies of the real metadata to prove that each rule fails when broken.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const HARNESS: &str = "dlm-bench";
const SDK: &str = "dlm-sdk";
const PLUGIN_API: &str = "dlm-plugin-api";
const FFI_CRATES: &[&str] = &["abi_stable", "libloading"];

/// Where a workspace crate sits in the architecture, from its manifest's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Harness,
    PluginApi,
    Sdk,
    /// A crate under `plugins/`.
    Plugin,
    /// A crate under `tests/fixtures/`.
    Fixture,
    Other,
}

struct Crate {
    role: Role,
    /// Workspace crates it depends on: (name, kind) with kind `normal`, `dev` or `build`.
    workspace_deps: Vec<(String, String)>,
    /// Every dependency name with its kind (external crates included).
    all_deps: Vec<(String, String)>,
}

fn workspace_crates(meta: &Value) -> BTreeMap<String, Crate> {
    let root = meta["workspace_root"].as_str().expect("workspace_root");
    let packages = meta["packages"].as_array().expect("packages");
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut out = BTreeMap::new();
    for p in packages {
        let name = p["name"].as_str().expect("package name").to_string();
        let manifest = p["manifest_path"].as_str().expect("manifest_path");
        let rel = manifest
            .strip_prefix(root)
            .unwrap_or(manifest)
            .trim_start_matches('/');
        let role = if name == HARNESS {
            Role::Harness
        } else if name == PLUGIN_API {
            Role::PluginApi
        } else if name == SDK {
            Role::Sdk
        } else if rel.starts_with("plugins/") {
            Role::Plugin
        } else if rel.starts_with("tests/fixtures/") {
            Role::Fixture
        } else {
            Role::Other
        };
        let all_deps: Vec<(String, String)> = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| {
                (
                    d["name"].as_str().unwrap_or_default().to_string(),
                    d["kind"].as_str().unwrap_or("normal").to_string(),
                )
            })
            .collect();
        let workspace_deps = all_deps
            .iter()
            .filter(|(n, _)| members.contains(n.as_str()))
            .cloned()
            .collect();
        out.insert(
            name,
            Crate {
                role,
                workspace_deps,
                all_deps,
            },
        );
    }
    out
}

/// Workspace crates reachable from `from` over normal and build dependencies (what ends up
/// linked into it), excluding `from` itself, each with the path that reaches it.
fn reachable(crates: &BTreeMap<String, Crate>, from: &str) -> BTreeMap<String, Vec<String>> {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut stack = vec![vec![from.to_string()]];
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap();
        let Some(c) = crates.get(last) else { continue };
        for (dep, kind) in &c.workspace_deps {
            if kind == "dev" || dep == from || seen.contains_key(dep) {
                continue;
            }
            let mut next = path.clone();
            next.push(dep.clone());
            seen.insert(dep.clone(), next.clone());
            stack.push(next);
        }
    }
    seen
}

/// Every broken invariant, as a sentence; empty when the graph is sound.
fn violations(meta: &Value) -> Vec<String> {
    let crates = workspace_crates(meta);
    let mut out = Vec::new();
    for required in [HARNESS, SDK, PLUGIN_API] {
        if !crates.contains_key(required) {
            out.push(format!("the workspace has no `{required}` crate"));
        }
    }
    for (dep, path) in reachable(&crates, HARNESS) {
        let role = crates[&dep].role;
        if matches!(role, Role::Sdk | Role::Plugin | Role::Fixture) {
            out.push(format!(
                "the harness must not depend on `{dep}` ({role:?}); it knows plugins only through dlm-plugin-api and JSON (path: {})",
                path.join(" → ")
            ));
        }
    }
    for (name, c) in &crates {
        match c.role {
            Role::Plugin | Role::Fixture => {
                for (dep, kind) in &c.workspace_deps {
                    if dep == HARNESS {
                        out.push(format!(
                            "`{name}` ({:?}) must not depend on the harness ({kind} dependency on `{dep}`); plugins link dlm-sdk only",
                            c.role
                        ));
                    }
                }
            }
            Role::Sdk => {
                for (dep, kind) in &c.workspace_deps {
                    if dep != PLUGIN_API {
                        out.push(format!(
                            "`{SDK}` may depend on no workspace crate but `{PLUGIN_API}`; it has a {kind} dependency on `{dep}`"
                        ));
                    }
                }
            }
            Role::PluginApi => {
                for (dep, kind) in &c.workspace_deps {
                    out.push(format!(
                        "`{PLUGIN_API}` may depend on no workspace crate; it has a {kind} dependency on `{dep}`"
                    ));
                }
            }
            Role::Harness | Role::Other => {}
        }
        if c.role != Role::PluginApi {
            for (dep, kind) in &c.all_deps {
                if kind != "dev" && FFI_CRATES.contains(&dep.as_str()) {
                    out.push(format!(
                        "`{name}` depends on `{dep}`; only `{PLUGIN_API}` may use the FFI crates"
                    ));
                }
            }
        }
    }
    out
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn the_workspace_crate_graph_keeps_its_architecture_invariants() {
    let meta = metadata();
    let crates = workspace_crates(&meta);
    // The roles are found (a renamed directory must not silently empty a rule).
    assert!(crates.values().any(|c| c.role == Role::Plugin));
    assert!(crates.values().any(|c| c.role == Role::Fixture));
    assert_eq!(crates["dlm-formal"].role, Role::Plugin);
    assert_eq!(crates["dlm-fixture-faulty"].role, Role::Fixture);
    let v = violations(&meta);
    assert!(
        v.is_empty(),
        "architecture invariants broken:\n{}",
        v.join("\n")
    );
}

/// Add a dependency `dep` of `kind` (`None` = normal) to package `to` in a copy of `meta`.
fn with_dep(meta: &Value, to: &str, dep: &str, kind: Option<&str>) -> Value {
    let mut meta = meta.clone();
    let package = meta["packages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["name"] == to)
        .unwrap_or_else(|| panic!("no package {to}"));
    package["dependencies"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "name": dep, "kind": kind, "req": "*" }));
    meta
}

#[test]
fn each_rule_fails_on_a_doctored_graph() {
    let meta = metadata();
    assert!(violations(&meta).is_empty());
    let broken = |m: &Value, needle: &str| {
        let v = violations(m);
        assert!(
            v.iter().any(|s| s.contains(needle)),
            "expected a violation mentioning {needle:?}, got {v:#?}"
        );
    };
    // The harness on the SDK, a plugin, a fixture: directly…
    broken(
        &with_dep(&meta, HARNESS, SDK, None),
        "the harness must not depend on `dlm-sdk`",
    );
    broken(
        &with_dep(&meta, HARNESS, "dlm-formal", Some("build")),
        "the harness must not depend on `dlm-formal`",
    );
    broken(
        &with_dep(&meta, HARNESS, "dlm-fixture-faulty", None),
        "the harness must not depend on `dlm-fixture-faulty`",
    );
    // …and through another workspace crate.
    broken(
        &with_dep(&meta, PLUGIN_API, SDK, None),
        "dlm-bench → dlm-plugin-api → dlm-sdk",
    );
    // A test may use a plugin crate as a dev-dependency without linking it into the harness.
    assert!(violations(&with_dep(&meta, HARNESS, "dlm-formal", Some("dev"))).is_empty());
    // Plugins and fixtures never on the harness, whatever the kind.
    broken(
        &with_dep(&meta, "dlm-formal", HARNESS, Some("dev")),
        "`dlm-formal` (Plugin) must not depend on the harness",
    );
    broken(
        &with_dep(&meta, "dlm-fixture-wrong-api", HARNESS, None),
        "`dlm-fixture-wrong-api` (Fixture) must not depend on the harness",
    );
    // The SDK on nothing of the workspace but the plugin API; the plugin API on nothing.
    broken(
        &with_dep(&meta, SDK, "dlm-formal", None),
        "`dlm-sdk` may depend on no workspace crate but `dlm-plugin-api`",
    );
    broken(
        &with_dep(&meta, PLUGIN_API, HARNESS, None),
        "`dlm-plugin-api` may depend on no workspace crate",
    );
    // The FFI crates stay inside the plugin API.
    broken(
        &with_dep(&meta, SDK, "libloading", None),
        "`dlm-sdk` depends on `libloading`",
    );
    broken(
        &with_dep(&meta, HARNESS, "abi_stable", None),
        "`dlm-bench` depends on `abi_stable`",
    );
}
