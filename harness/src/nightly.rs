//! The nightly job's one piece of logic of its own: which earlier run of a suite to compare a
//! new one with.

use crate::results::RunDir;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The latest finished run of the suite named `suite` under `runs_dir` (by start time), if any.
/// Unreadable directories are skipped: a broken night must not stop the next one.
pub fn latest_run(runs_dir: &Path, suite: &str) -> Result<Option<PathBuf>> {
    let mut best: Option<(String, PathBuf)> = None;
    for dir in crate::history::find_runs(runs_dir) {
        let Ok(manifest) = RunDir::open_read_only(&dir).and_then(|d| d.read_manifest()) else {
            continue;
        };
        if manifest.suite_name != suite || manifest.finished_at.is_none() {
            continue;
        }
        if best.as_ref().is_none_or(|(t, _)| manifest.started_at > *t) {
            best = Some((manifest.started_at, dir));
        }
    }
    Ok(best.map(|(_, d)| d))
}
