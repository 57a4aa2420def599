//! Finding, building and describing plugins.
//!
//! A suite names a plugin either by its crate name or by a path to a library built anywhere
//! (e.g. out of tree). A crate name is looked for prebuilt first — in `--plugin-dir` (or
//! `$DLM_BENCH_PLUGIN_DIR`), then beside the running binary (where `tools/install.sh` puts the
//! plugins), so an installed binary never runs cargo — and else built in a source checkout
//! with `cargo build -p CRATE` (cargo itself decides whether anything is stale), so a fresh
//! clone needs no separate build step.

use crate::results::LibraryOrigin;
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
        self.target_dir.join(dir).join(library_file_name(krate))
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

/// Where prebuilt plugin libraries are looked for, and the cargo profile a workspace crate is
/// built with when none is found.
#[derive(Debug, Clone)]
pub struct PluginSearch {
    /// Cargo profile for `cargo build -p` (see [`default_profile`]).
    pub profile: String,
    /// `--plugin-dir`, else `$DLM_BENCH_PLUGIN_DIR`: searched first.
    pub dir: Option<PathBuf>,
}

/// The environment variable naming a folder of prebuilt plugin libraries.
pub const PLUGIN_DIR_ENV: &str = "DLM_BENCH_PLUGIN_DIR";

impl PluginSearch {
    /// `profile` or [`default_profile`]; `dir` or `$DLM_BENCH_PLUGIN_DIR` (when set and not
    /// empty).
    pub fn new(profile: Option<String>, dir: Option<PathBuf>) -> PluginSearch {
        let from_env = || {
            std::env::var_os(PLUGIN_DIR_ENV)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
        };
        PluginSearch {
            profile: profile.unwrap_or_else(default_profile),
            dir: dir.or_else(from_env),
        }
    }

    /// The folders searched for prebuilt libraries, in order: the explicit folder, then
    /// `plugins/` beside the running binary and the binary's own folder. A binary still in cargo's build
    /// output (its folder has `.fingerprint/`, as `target/release` does) is left out: there the
    /// libraries are cargo's, possibly stale, and `cargo build -p` keeps them fresh. An explicit
    /// folder that does not exist is an error (a typo should not fall through to a build).
    pub fn folders(&self) -> Result<Vec<PathBuf>> {
        let mut folders = Vec::new();
        if let Some(dir) = &self.dir {
            if !dir.is_dir() {
                anyhow::bail!(
                    "plugin folder {} (--plugin-dir or ${PLUGIN_DIR_ENV}) is not a directory; give the folder that holds the plugin libraries (e.g. {}dlm_formal{})",
                    dir.display(),
                    std::env::consts::DLL_PREFIX,
                    std::env::consts::DLL_SUFFIX
                );
            }
            // Absolute, so the manifest and the workers see the same file from any folder.
            folders.push(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
        }
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.canonicalize().ok())
            .and_then(|exe| exe.parent().map(Path::to_owned));
        if let Some(exe_dir) = exe_dir.filter(|d| !d.join(".fingerprint").is_dir()) {
            folders.push(exe_dir.join("plugins"));
            folders.push(exe_dir);
        }
        Ok(folders)
    }

    /// The prebuilt library of plugin crate `krate` in the first of `folders` that has it.
    pub fn prebuilt(folders: &[PathBuf], krate: &str) -> Option<PathBuf> {
        folders
            .iter()
            .map(|f| f.join(library_file_name(krate)))
            .find(|lib| lib.is_file())
    }

    /// Every plugin library in `folders` (for `list`), by file name, first folder first.
    pub fn prebuilt_libraries(folders: &[PathBuf]) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = Vec::new();
        for folder in folders {
            let Ok(entries) = std::fs::read_dir(folder) else {
                continue;
            };
            let mut here: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && is_library_name(p))
                .filter(|p| !found.iter().any(|f| f.file_name() == p.file_name()))
                .collect();
            here.sort();
            found.extend(here);
        }
        found
    }
}

/// `libdlm_formal.so` (the platform's dynamic library name) for crate `dlm-formal`.
pub fn library_file_name(krate: &str) -> String {
    format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        krate.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    )
}

/// `dlm-formal` for `.../libdlm_formal.so` (the inverse of [`library_file_name`]).
fn crate_name_of(library: &Path) -> Option<String> {
    let name = library.file_name()?.to_str()?;
    let stem = name
        .strip_prefix(std::env::consts::DLL_PREFIX)?
        .strip_suffix(std::env::consts::DLL_SUFFIX)?;
    Some(stem.replace('_', "-"))
}

fn is_library_name(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        n.starts_with(std::env::consts::DLL_PREFIX) && n.ends_with(std::env::consts::DLL_SUFFIX)
    })
}

/// "no WHAT in A, B or C", naming the folders searched, or saying that there were none.
fn not_found_in(what: &str, folders: &[PathBuf]) -> String {
    let names: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
    match names.split_last() {
        None => format!("no {what}: no plugin folder to look in (no --plugin-dir, ${PLUGIN_DIR_ENV} unset, and the binary is in cargo's build output)"),
        Some((last, [])) => format!("no {what} in {last}"),
        Some((last, rest)) => format!("no {what} in {} or {last}", rest.join(", ")),
    }
}

/// Each plugin a suite names, with its library.
pub type Libraries = BTreeMap<PluginRef, PathBuf>;
/// How each library of [`Libraries`] was found.
pub type Origins = BTreeMap<PluginRef, LibraryOrigin>;

/// Resolve every plugin a suite names to a library path: a crate name to its library prebuilt
/// in a plugin folder ([`PluginSearch::folders`]), else to the one `cargo build -p` makes in
/// the workspace around the suite file or dlm-bench's own checkout; a path as given. Cargo is
/// run only for crates found in no plugin folder.
pub fn resolve(suite: &Suite, search: &PluginSearch) -> Result<(Libraries, Origins)> {
    let mut refs: Vec<(&PluginRef, &marked_yaml::Span)> = Vec::new();
    for t in &suite.tasks {
        refs.push((&t.plugin, &t.plugin_span));
    }
    for m in &suite.models {
        refs.push((&m.plugin, &m.plugin_span));
    }
    let folders = search.folders()?;
    let (mut libraries, mut origins) = (Libraries::new(), Origins::new());
    let mut to_build: Vec<(&str, &marked_yaml::Span)> = Vec::new();
    for (r, span) in &refs {
        match r {
            PluginRef::Crate(name) => match PluginSearch::prebuilt(&folders, name) {
                Some(lib) => {
                    tracing::debug!("plugin {name}: prebuilt {}", lib.display());
                    libraries.insert((*r).clone(), lib);
                    origins.insert((*r).clone(), LibraryOrigin::Prebuilt);
                }
                None => to_build.push((name, span)),
            },
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
                libraries.insert((*r).clone(), p.clone());
                origins.insert((*r).clone(), LibraryOrigin::Path);
            }
        }
    }
    if !to_build.is_empty() {
        for (r, lib) in build_crates(suite, &to_build, &folders, &search.profile)? {
            libraries.insert(r.clone(), lib);
            origins.insert(r, LibraryOrigin::Built);
        }
    }
    Ok((libraries, origins))
}

/// The plugin crates no plugin folder had, built with cargo in the workspace around the suite
/// file or in dlm-bench's own checkout (the first that has the crate).
fn build_crates(
    suite: &Suite,
    crates: &[(&str, &marked_yaml::Span)],
    folders: &[PathBuf],
    profile: &str,
) -> Result<Vec<(PluginRef, PathBuf)>> {
    let suite_dir = match suite.source.path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    // Crates resolve in the workspace around the suite file first, then in dlm-bench's own
    // checkout, so a suite kept anywhere can still name the built-in plugins.
    let mut workspaces: Vec<Workspace> = Vec::new();
    let mut not_found: Vec<String> = Vec::new();
    for dir in [suite_dir, harness_checkout()] {
        match Workspace::find(&dir) {
            Ok(ws) if !workspaces.iter().any(|w| w.root == ws.root) => workspaces.push(ws),
            Ok(_) => {}
            Err(e) => not_found.push(format!("{e:#}")),
        }
    }
    let mut to_build: Vec<Vec<String>> = vec![Vec::new(); workspaces.len()];
    let mut out = Vec::new();
    // The plugins a folder does hold, as crate names, for the did-you-mean of a typo.
    let prebuilt_names: Vec<String> = PluginSearch::prebuilt_libraries(folders)
        .iter()
        .filter_map(|lib| crate_name_of(lib))
        .collect();
    for &(name, span) in crates {
        let Some(wi) = workspaces
            .iter()
            .position(|w| w.plugin_crates.iter().any(|c| c == name))
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
                    "no plugin crate `{name}`: {}, and no such crate in {searched}{}; a plugin is looked for prebuilt in --plugin-dir (or ${PLUGIN_DIR_ENV}) and beside the binary (tools/install.sh puts it there), then as a crate of the workspace around the suite file or of dlm-bench's own checkout — or name the built library by path instead, e.g. `plugin: path/to/{}` (relative to the suite file)",
                    not_found_in(&format!("{} prebuilt", library_file_name(name)), folders),
                    did_you_mean(
                        name,
                        workspaces
                            .iter()
                            .flat_map(|w| w.plugin_crates.iter().map(String::as_str))
                            .chain(prebuilt_names.iter().map(String::as_str))
                    ),
                    library_file_name(name),
                ),
            )
            .into());
        };
        if !to_build[wi].iter().any(|c| c == name) {
            to_build[wi].push(name.to_string());
        }
        out.push((
            PluginRef::Crate(name.to_string()),
            workspaces[wi].library_path(name, profile),
        ));
    }
    for (ws, crates) in workspaces.iter().zip(&to_build) {
        ws.build(crates, profile)?;
    }
    Ok(out)
}

/// The first plugin library the suite names by a path that does not exist (`plan` then skips
/// the checks against plugins that `run` would fail on anyway).
pub fn missing_path_library(suite: &Suite) -> Option<&Path> {
    let tasks = suite.tasks.iter().map(|t| &t.plugin);
    tasks
        .chain(suite.models.iter().map(|m| &m.plugin))
        .find_map(|r| match r {
            PluginRef::Path(p) if !p.is_file() => Some(p.as_path()),
            _ => None,
        })
}

/// A library found prebuilt that the host cannot load (built against another plugin API, or
/// not a plugin) is refused before any cell runs, naming the folder and the fix; a built one
/// or one named by path is left to fail its cells as before.
pub fn refuse_unloadable_prebuilt(
    what: impl std::fmt::Display,
    library: &Path,
    origin: Option<LibraryOrigin>,
    cause: &str,
) -> Result<()> {
    if origin != Some(LibraryOrigin::Prebuilt) {
        return Ok(());
    }
    anyhow::bail!(
        "{what}: the library found prebuilt in {} ({}) cannot be loaded: {cause}; \
         replace it with one built from the same dlm-bench version as this binary \
         (tools/install.sh installs both together), or remove it from that folder so that the \
         plugin is built from a source checkout",
        library
            .parent()
            .map_or_else(|| ".".into(), |d| d.display().to_string()),
        library.display()
    )
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
pub fn print_descriptor(library: &Path, fixture: bool, origin: LibraryOrigin) -> Result<()> {
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
        Err(cause) => {
            refuse_unloadable_prebuilt("plugin", library, Some(origin), &cause)?;
            anyhow::bail!(
                "{}: cannot be loaded as a dlm-bench plugin: {cause}",
                library.display()
            )
        }
    }
}

/// `list`: the plugins found prebuilt in the plugin folders — an installed binary's, listed
/// without cargo — or, when those hold none, the plugin crates of the workspace around the
/// working directory, built (test fixtures only with `all`); then `libraries`, named by path.
/// Every library is described; any that cannot be fails the command at the end.
pub fn list(search: &PluginSearch, libraries: &[PathBuf], all: bool) -> Result<()> {
    // A library that is not there fails now, not after the workspace is built.
    for l in libraries {
        check_library_file(l)?;
    }
    let folders = search.folders()?;
    let prebuilt = PluginSearch::prebuilt_libraries(&folders);
    let mut shown: Vec<(PathBuf, bool, LibraryOrigin)> = Vec::new();
    if prebuilt.is_empty() {
        let ws = Workspace::find(&std::env::current_dir()?).with_context(|| {
            format!(
                "{}, and no source checkout to build plugins in",
                not_found_in("plugin library", &folders)
            )
        })?;
        let crates: Vec<String> = ws
            .plugin_crates
            .iter()
            .filter(|c| all || !ws.is_fixture(c))
            .cloned()
            .collect();
        ws.build(&crates, &search.profile)?;
        for c in &crates {
            let library = ws.library_path(c, &search.profile);
            shown.push((library, ws.is_fixture(c), LibraryOrigin::Built));
        }
    } else {
        shown.extend(
            prebuilt
                .into_iter()
                .map(|l| (l, false, LibraryOrigin::Prebuilt)),
        );
    }
    shown.extend(
        libraries
            .iter()
            .map(|l| (l.clone(), false, LibraryOrigin::Path)),
    );
    let mut bad = 0;
    for (library, fixture, origin) in &shown {
        if let Err(e) = print_descriptor(library, *fixture, *origin) {
            eprintln!("error: {e:#}");
            bad += 1;
        }
    }
    if bad > 0 {
        anyhow::bail!("{bad} plugin(s) cannot be described (above)");
    }
    Ok(())
}

/// `describe`: one plugin's descriptor, named by library path or crate name (found prebuilt in
/// the plugin folders, else built in the workspace around the working directory).
pub fn describe_named(plugin: &str, search: &PluginSearch) -> Result<()> {
    let cwd = std::env::current_dir()?;
    let (library, fixture, origin) = match PluginRef::parse(plugin, &cwd) {
        PluginRef::Path(p) => (p, false, LibraryOrigin::Path),
        // An existing file is a library, whatever its name looks like.
        PluginRef::Crate(name) if Path::new(&name).is_file() => {
            (name.into(), false, LibraryOrigin::Path)
        }
        PluginRef::Crate(name) => {
            let folders = search.folders()?;
            match PluginSearch::prebuilt(&folders, &name) {
                Some(library) => (library, false, LibraryOrigin::Prebuilt),
                None => {
                    let ws = Workspace::find(&cwd).with_context(|| {
                        format!(
                            "no plugin `{name}`: {}, and no source checkout to build it in",
                            not_found_in(
                                &format!("{} prebuilt", library_file_name(&name)),
                                &folders
                            )
                        )
                    })?;
                    if !ws.plugin_crates.contains(&name) {
                        anyhow::bail!(
                            "no plugin crate `{name}` in the workspace {}, and {}{}",
                            ws.root.display(),
                            not_found_in(
                                &format!("{} prebuilt", library_file_name(&name)),
                                &folders
                            ),
                            did_you_mean(&name, ws.plugin_crates.iter().map(String::as_str))
                        );
                    }
                    ws.build(std::slice::from_ref(&name), &search.profile)?;
                    let library = ws.library_path(&name, &search.profile);
                    (library, ws.is_fixture(&name), LibraryOrigin::Built)
                }
            }
        }
    };
    print_descriptor(&library, fixture, origin)
}
