//! `run --tasks/--models/--limit`: run part of a suite. The filters are recorded in the run's
//! manifest (and a capped run's cells have other unit ids, since their sample count is part of
//! a cell's identity), so a filtered run is never taken for a full one.

use crate::suite::{did_you_mean, CellSpec, Suite};
use serde::{Deserialize, Serialize};

/// The name that selects a task's ground-truth reference rows in `--models` (the model part
/// of their cell key).
pub const REFERENCE_ROWS: &str = "reference";

/// What part of a suite a run covers. Empty: all of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFilters {
    /// Suite task names to run (empty: every task).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
    /// Suite model names to run, `reference` for the ground-truth rows (empty: every model
    /// and the reference rows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// At most this many samples per cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl RunFilters {
    /// No filter at all: the whole suite.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.models.is_empty() && self.limit.is_none()
    }

    /// The filters as the command line gives them, e.g. `--tasks a,b --limit 5`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.tasks.is_empty() {
            parts.push(format!("--tasks {}", self.tasks.join(",")));
        }
        if !self.models.is_empty() {
            parts.push(format!("--models {}", self.models.join(",")));
        }
        if let Some(limit) = self.limit {
            parts.push(format!("--limit {limit}"));
        }
        if parts.is_empty() {
            return "none".into();
        }
        parts.join(" ")
    }

    /// Refuse a name the suite does not define, listing the names it does, and a zero limit.
    pub fn check(&self, suite: &Suite) -> anyhow::Result<()> {
        let tasks: Vec<&str> = suite.tasks.iter().map(|t| t.name.as_str()).collect();
        let mut models: Vec<&str> = suite.models.iter().map(|m| m.name.as_str()).collect();
        if suite.reference {
            models.push(REFERENCE_ROWS);
        }
        for (flag, asked, known) in [
            ("--tasks", &self.tasks, &tasks),
            ("--models", &self.models, &models),
        ] {
            for name in asked {
                if !known.contains(&name.as_str()) {
                    anyhow::bail!(
                        "{flag}: the suite {} has no {} `{name}`{}; its names: {}",
                        suite.source.path.display(),
                        if flag == "--tasks" { "task" } else { "model" },
                        did_you_mean_other(name, known),
                        known.join(", ")
                    );
                }
            }
        }
        if self.limit == Some(0) {
            anyhow::bail!("--limit must be at least 1 (samples per cell)");
        }
        Ok(())
    }

    /// Cap the suite's samples per cell at `limit`.
    pub fn apply_limit(&self, suite: &mut Suite) {
        if let Some(limit) = self.limit {
            suite.samples = suite.samples.min(limit);
        }
    }

    /// Whether a cell is selected by `--tasks` and `--models`.
    pub fn keeps(&self, cell: &CellSpec) -> bool {
        let model = cell
            .model
            .as_ref()
            .map_or(REFERENCE_ROWS, |m| m.name.as_str());
        (self.tasks.is_empty() || self.tasks.contains(&cell.task.name))
            && (self.models.is_empty() || self.models.iter().any(|m| m == model))
    }
}

/// "; did you mean `x`?" for a close name, or nothing (the caller lists every name anyway).
fn did_you_mean_other(name: &str, known: &[&str]) -> String {
    let hint = did_you_mean(name, known.iter().copied());
    if hint.starts_with("; did you mean") {
        hint
    } else {
        String::new()
    }
}
