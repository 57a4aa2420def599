//! The likelihood experiment (a suite's `likelihood:` section, plugin API 1.8): how far a
//! diffusion model's Monte-Carlo ELBO lies from the exact log-likelihood of a formal
//! language, as a function of `mc_num`, and which multiple-choice answers it implies.
//!
//! After the cells, `dlm-bench run` samples `rows` reference sequences of each task, splits
//! each into a context and a continuation, asks the task for the exact `log q(y | c)`
//! (`task.loglikelihood`) and every model for its answer (`model.loglikelihood`): the ELBO,
//! `repeats` independent estimates at each `mc_num`, or the exact value of an autoregressive
//! model. Each multiple-choice item offers the continuations of `choices` sequences after one
//! context; its gold answer is the one the language prefers. One line per (task, model,
//! `mc_num`) goes to `likelihood.jsonl` as it finishes; `report::likelihood` reads them.

mod run;

pub use run::run;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The run directory's likelihood results, one [`LikelihoodRecord`] a line.
pub const LIKELIHOOD_FILE: &str = "likelihood.jsonl";

/// One (task, model, `mc_num`) measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LikelihoodRecord {
    pub task: String,
    pub model: String,
    /// Draws per estimate; `None` for an exact answer (an autoregressive model).
    pub mc_num: Option<usize>,
    /// `"elbo"` or `"exact"`, as the model said.
    #[serde(default)]
    pub method: String,
    pub length: usize,
    pub context: usize,
    /// Options per multiple-choice item.
    #[serde(default)]
    pub choices: usize,
    /// Whether the model is the task's exact oracle.
    #[serde(default)]
    pub oracle: bool,
    /// The task's exact `log q(y | c)` of each row (`None`: probability 0).
    #[serde(default)]
    pub exact: Vec<Option<f64>>,
    /// `estimates[k][i]`: repeat `k`'s answer for row `i` (mask seed `k`).
    #[serde(default)]
    pub estimates: Vec<Vec<Option<f64>>>,
    /// The mean over rows and repeats of the standard error the model reported.
    #[serde(default)]
    pub mean_std_error: Option<f64>,
    /// Each multiple-choice item's gold option (the exact argmax) and the option the
    /// model's answer picks (from repeat 0's masks).
    #[serde(default)]
    pub gold: Vec<usize>,
    #[serde(default)]
    pub picked: Vec<usize>,
    /// Network calls of all repeats and the choices, as the model counted them.
    #[serde(default)]
    pub nfe: u64,
    pub wall_seconds: f64,
    /// Why the measurement failed (then the value fields are empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl LikelihoodRecord {
    /// What identifies a measurement across a resumed run.
    pub fn key(&self) -> (String, String, Option<usize>) {
        (self.task.clone(), self.model.clone(), self.mc_num)
    }
}

/// The run directory's records in file order; none if the run had no likelihood section. A
/// line cut short by a crash is skipped.
pub fn read_records(dir: &Path) -> Result<Vec<LikelihoodRecord>> {
    let path = dir.join(LIKELIHOOD_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}
