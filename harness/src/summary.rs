//! One row of `summary.json` ([`CellSummary`]): the data that `metrics` computes and the
//! registry, the report, `compare` and `history` read. Its own module so that the registry can
//! read summaries without depending on how they are computed.

use crate::results::CellStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One row of `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    pub key: String,
    pub unit: String,
    pub task: String,
    /// `reference` for the ground-truth row.
    pub model: String,
    pub sampler: Option<String>,
    pub steps: Option<usize>,
    pub length: usize,
    pub seed: u64,
    pub batch_size: usize,
    pub status: CellStatus,
    pub cause: Option<String>,
    /// What kind of failure a failed cell met (the plugin's classification); `None` for a cell
    /// that did not fail, or whose worker itself failed (a crash, a limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<dlm_plugin_api::ErrorKind>,
    pub n: usize,
    /// Token error rate; `None` if infinite (some sample outside the support) or failed.
    pub ter: Option<f64>,
    pub ter_ci: Option<(f64, f64)>,
    /// Samples with `q(x) = 0` (make TER infinite).
    pub zero_probability_samples: usize,
    /// The task's exact optimum for this length.
    pub optimal_ter: Option<f64>,
    pub ser: Option<f64>,
    pub ser_ci: Option<(f64, f64)>,
    pub unigram_entropy: Option<f64>,
    /// Mean first zero-probability position among samples outside the support.
    pub mean_first_error: Option<f64>,
    /// Zero-probability transitions per generated token.
    pub invalid_transition_rate: Option<f64>,
    /// Mean network calls per sample.
    pub nfe: Option<f64>,
    /// Network calls actually made, summed over batches.
    pub batch_nfe: Option<u64>,
    /// Generated tokens per network call of a sample.
    pub tokens_per_forward: Option<f64>,
    /// Mean query positions the network computed per sample (a cached step computes only its
    /// window); `None` when some sample's model did not count them (then each of its calls
    /// was a full forward pass) and in runs before the models reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions_computed: Option<f64>,
    /// `positions_computed ÷ length`: the work per sample in full forward passes over the
    /// sequence (an uncached sampler's NFE; less for a cached one, 1 for an AR model with its
    /// KV cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_equivalents: Option<f64>,
    /// Mean edits per sample (commits beyond the first at a position: remasking samplers);
    /// `None` when no sample of the cell reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits: Option<f64>,
    pub wall_seconds: Option<f64>,
    /// Median over the cell's timed batches of generated tokens / wall seconds (the first
    /// batch is a warm-up and not timed when there are at least two); see
    /// [`batch_throughputs`](crate::metrics::batch_throughputs).
    pub tokens_per_second: Option<f64>,
    /// First and third quartile of the per-batch throughputs: the run's own timing spread.
    #[serde(default)]
    pub tokens_per_second_iqr: Option<(f64, f64)>,
    /// Batches whose timing counts (the repeated measurements behind `tokens_per_second`).
    #[serde(default)]
    pub timed_batches: usize,
    /// Median over timed batches of generated tokens per CPU second of the worker process.
    #[serde(default)]
    pub tokens_per_cpu_second: Option<f64>,
    /// Throughput relative to this cell's AR baseline (`speedup_baseline`).
    pub speedup: Option<f64>,
    /// Key of the AR cell that speedups and verdicts of this cell are measured against.
    pub speedup_baseline: Option<String>,
    /// The sampler decodes one token per step (`steps` is the length, not a choice).
    #[serde(default)]
    pub one_step_per_token: bool,
    /// Why that cell (or why none): the rule of
    /// [`resolve_baselines`](crate::metrics::resolve_baselines) that chose it.
    #[serde(default)]
    pub baseline_rule: Option<String>,
    pub device: Option<String>,
    /// Metrics the task declares (`TaskDescription::metrics`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, MetricValue>,
    /// How the task's numbers are made, as it declares it (text tasks, API 1.5): data files and
    /// their sums, prompt template, few-shot count, answer filters, the scoring mode
    /// (`provenance.scoring`), and deliberate differences from the reference tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<dlm_plugin_api::TaskProvenance>,
    /// Text cells whose suite selects documents (`doc_ids:`, `docs_from_replay:`): how many
    /// of the task's documents were scored, from the cell's record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<crate::suite::DocumentCount>,
    /// Trajectories of a traced cell (suite `trace: true`, `crate::trace`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::TraceSummary>,
}

/// A task-declared metric of one cell, with its declaration (so `summary.json` explains itself
/// and `history` can plot it from summaries alone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    /// Samples that carried a value.
    pub n: usize,
    pub declared: dlm_plugin_api::MetricDecl,
    /// Why there is no value, where the harness knows (pass@k with fewer than `k` samples of
    /// some problem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
