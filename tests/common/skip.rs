//! The one way a test skips when something it needs is absent (benchmark data, bubblewrap,
//! Chromium, Slurm, a dlm-neural library built for another backend).
//!
//! A skip must be seen: libtest captures `print!`/`eprint!` of a passing test, so the skip line
//! is written to the process's stderr directly (`writeln!(std::io::stderr(), ..)` bypasses the
//! capture) and shows in plain `cargo test` output. And a skip must not hide a broken machine:
//! where the dependency is required — `CI=true` for what a CI machine always has, or the
//! dependency's `DLM_BENCH_REQUIRE_*` variable — the test fails instead.
//!
//! One file for every crate: the root crate's tests reach it through `tests/common/mod.rs`,
//! the plugin crates' tests with `#[path = "../../../tests/common/skip.rs"] mod skip;` (the
//! number of `..` depending on where the declaring file lies).
#![allow(dead_code)]

use std::fmt::Display;
use std::io::Write;

/// Something a test needs that a machine may lack.
#[derive(Clone, Copy, Debug)]
pub struct Dependency<'a> {
    /// What it is, for messages.
    pub name: &'a str,
    /// How to get it.
    pub fix: &'a str,
    /// A variable that, set to anything but empty or `0`, makes the dependency required.
    pub require_var: Option<&'a str>,
    /// Whether `CI=true` makes it required: true for what a CI machine always has (the data
    /// committed with the repository, the system packages `.ci/run` installs); false for a
    /// library that a separate build step makes (CI asks for it with its `require_var`).
    pub required_in_ci: bool,
}

/// GSM8K, MBPP and HumanEval: committed under `data/`, so CI always has them.
pub const DATA: Dependency<'static> = Dependency {
    name: "the benchmark data",
    fix: "restore the repository's data/ folder, or set DLM_BENCH_DATA to a folder laid out \
          like it",
    require_var: None,
    required_in_ci: true,
};

/// bubblewrap, the code-execution sandbox (plugins/code).
pub const SANDBOX: Dependency<'static> = Dependency {
    name: "the code sandbox (bubblewrap)",
    fix: "run tools/install-sandbox.sh",
    require_var: Some("DLM_BENCH_REQUIRE_SANDBOX"),
    required_in_ci: true,
};

/// Headless Chromium, for tests/browser.rs.
pub const CHROMIUM: Dependency<'static> = Dependency {
    name: "Chromium",
    fix: "apt-get install -y chromium; .ci/run installs it",
    require_var: Some("DLM_BENCH_REQUIRE_BROWSER"),
    required_in_ci: true,
};

/// A git checkout of the repository (CI always clones one), for the run identity's commit.
pub const GIT_CHECKOUT: Dependency<'static> = Dependency {
    name: "a git checkout",
    fix: "run the tests from a clone of the repository",
    require_var: None,
    required_in_ci: true,
};

/// A one-node Slurm cluster (and root to start it), for tests/slurm.rs.
pub const SLURM: Dependency<'static> = Dependency {
    name: "Slurm (and root)",
    fix: "run tools/install-slurm.sh as root",
    require_var: Some("DLM_BENCH_REQUIRE_SLURM"),
    required_in_ci: true,
};

/// Why `dep` is required here, if it is, given a way to read environment variables.
pub fn requirement(dep: &Dependency, var: impl Fn(&str) -> Option<String>) -> Option<String> {
    if dep.required_in_ci && var("CI").as_deref() == Some("true") {
        return Some("CI=true".into());
    }
    let name = dep.require_var?;
    let value = var(name)?;
    (!value.is_empty() && value != "0").then(|| format!("{name}={value}"))
}

/// Call when `dep` is absent (`why`: what was looked for and not found), then return from the
/// test. Where `dep` is required this panics, naming the requirement and the fix; elsewhere it
/// writes `SKIPPED <test>: <why> (<fix>)` to stderr, past libtest's capture.
pub fn absent(dep: &Dependency, why: impl Display) {
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("this test")
        .to_owned();
    if let Some(required) = requirement(dep, |name| std::env::var(name).ok()) {
        panic!(
            "{test}: {} is required here ({required}) but absent: {why}; {}",
            dep.name, dep.fix
        );
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why} ({})", dep.fix);
}
