//! The metric registry: every figure a cell reports, declared once — its name in
//! `summary.json`, label, digits, better direction, how per-sample values combine, and how to
//! read it from a summary row or a sample. `summary.json`, the report's tables, `compare` and
//! `history` all iterate over it, so a new metric is one entry here — or one
//! [`MetricDecl`] in a task's description, which needs no harness change at all.

use crate::results::{CellRecord, SampleRecord};
use crate::summary::CellSummary;
pub use dlm_plugin_api::{Better, MetricDecl, MetricKind};
use serde::Serialize;

/// How a metric's per-sample values combine into a cell's figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// `exp(−Σ log q / Σ |x|)` over samples (TER); infinite when some sample has `q = 0`.
    Perplexity,
    /// Share of samples with the property, Wilson 95% CI.
    Rate,
    /// Mean over samples, bootstrap 95% CI.
    Mean,
    /// Throughput over repeated timed batches (never paired, never "identical").
    Timing,
    /// pass@k over the problems of a cell (`MetricKind::PassAtK`).
    PassAtK(u64),
}

type ValueFn = fn(&CellSummary) -> Option<f64>;
type CiFn = fn(&CellSummary) -> Option<(f64, f64)>;
type SampleFn = fn(&SampleRecord) -> Option<f64>;

/// Where a metric's values come from.
#[derive(Debug, Clone)]
enum Source {
    /// A field of [`CellSummary`] (and, for per-sample comparisons, of [`SampleRecord`]).
    Builtin {
        value: ValueFn,
        ci: CiFn,
        per_sample: Option<SampleFn>,
    },
    /// Declared by a task: `CellSummary::metrics[name]` and `SampleRecord::extra[name]`.
    Task,
}

/// One metric.
#[derive(Debug, Clone, Serialize)]
pub struct MetricDef {
    /// Key in `summary.json` (built-in) or in its `metrics` map (task-declared).
    pub name: String,
    /// Label in tables, plots and comparisons.
    pub label: String,
    /// Digits after the decimal point.
    pub digits: usize,
    pub better: Better,
    pub aggregate: Aggregate,
    /// Only cells that ran a model have it (NFE, timings), not ground-truth rows.
    pub model_only: bool,
    /// Declared by a task rather than built in.
    pub task_declared: bool,
    #[serde(skip)]
    source: Source,
}

impl MetricDef {
    fn builtin(
        name: &str,
        label: &str,
        digits: usize,
        better: Better,
        aggregate: Aggregate,
        (value, ci, per_sample): (ValueFn, CiFn, Option<SampleFn>),
    ) -> MetricDef {
        MetricDef {
            name: name.into(),
            label: label.into(),
            digits,
            better,
            aggregate,
            model_only: false,
            task_declared: false,
            source: Source::Builtin {
                value,
                ci,
                per_sample,
            },
        }
    }

    fn model_only(mut self) -> MetricDef {
        self.model_only = true;
        self
    }

    /// A task's declaration as a registry entry.
    pub fn declared(d: &MetricDecl) -> MetricDef {
        MetricDef {
            name: d.name.clone(),
            label: d.label.clone(),
            digits: d.digits,
            better: d.better,
            aggregate: match d.kind {
                MetricKind::Rate => Aggregate::Rate,
                MetricKind::Mean => Aggregate::Mean,
                MetricKind::PassAtK { k } => Aggregate::PassAtK(k),
            },
            model_only: false,
            task_declared: true,
            source: Source::Task,
        }
    }

    /// The cell's figure.
    pub fn value(&self, s: &CellSummary) -> Option<f64> {
        match &self.source {
            Source::Builtin { value, .. } => value(s),
            Source::Task => s.metrics.get(&self.name).and_then(|m| m.value),
        }
    }

    /// Its 95% CI, where the metric has one.
    pub fn ci(&self, s: &CellSummary) -> Option<(f64, f64)> {
        match &self.source {
            Source::Builtin { ci, .. } => ci(s),
            Source::Task => s.metrics.get(&self.name).and_then(|m| m.ci),
        }
    }

    /// One sample's value (rates as 0/1), for per-sample aggregation and paired comparison;
    /// `None` for aggregates that are not per-sample means (TER, timings).
    pub fn per_sample(&self, r: &SampleRecord) -> Option<f64> {
        match &self.source {
            Source::Builtin { per_sample, .. } => per_sample.and_then(|f| f(r)),
            Source::Task => r.extra.get(&self.name).and_then(json_number),
        }
    }
}

/// A per-sample value from a task's `extra`: numbers as they are, booleans as 1/0.
pub fn json_number(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Bool(b) => Some(f64::from(u8::from(*b))),
        serde_json::Value::Number(n) => n.as_f64().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// The built-in metrics, in display order.
pub fn builtin() -> Vec<MetricDef> {
    use Aggregate::*;
    vec![
        MetricDef::builtin(
            "ter",
            "TER",
            4,
            Better::Lower,
            Perplexity,
            (|s| s.ter, |s| s.ter_ci, None),
        ),
        MetricDef::builtin(
            "ser",
            "SER",
            3,
            Better::Lower,
            Rate,
            (
                |s| s.ser,
                |s| s.ser_ci,
                Some(|r| Some(if r.in_support { 0.0 } else { 1.0 })),
            ),
        ),
        MetricDef::builtin(
            "nfe",
            "NFE",
            2,
            Better::Lower,
            Mean,
            (|s| s.nfe, |_| None, Some(|r| Some(r.nfe as f64))),
        )
        .model_only(),
        MetricDef::builtin(
            "unigram_entropy",
            "unigram entropy",
            3,
            Better::Neither,
            Mean,
            (
                |s| s.unigram_entropy,
                |_| None,
                Some(|r| Some(crate::stats::unigram_entropy(&r.tokens))),
            ),
        ),
        MetricDef::builtin(
            "tokens_per_second",
            "tokens/s",
            0,
            Better::Higher,
            Timing,
            (|s| s.tokens_per_second, |s| s.tokens_per_second_iqr, None),
        )
        .model_only(),
    ]
}

/// The metrics of a run: the built-in ones, then every metric a task of the run declares (the
/// first declaration of a name wins; a task cannot shadow a built-in name).
pub fn for_cells(cells: &[CellRecord]) -> Vec<MetricDef> {
    let mut defs = builtin();
    for c in cells {
        for d in c.task_description.iter().flat_map(|t| t.metrics.iter()) {
            if !defs.iter().any(|m| m.name == d.name) {
                defs.push(MetricDef::declared(d));
            }
        }
    }
    defs
}

/// The metrics of summary rows alone (for `history`, which reads `summary.json`): the
/// built-in ones, then the task-declared ones the rows carry.
pub fn for_summaries(rows: &[CellSummary]) -> Vec<MetricDef> {
    let mut defs = builtin();
    for m in rows.iter().flat_map(|r| r.metrics.values()) {
        if !defs.iter().any(|d| d.name == m.declared.name) {
            defs.push(MetricDef::declared(&m.declared));
        }
    }
    defs
}

/// The task-declared metrics of a run.
pub fn declared(cells: &[CellRecord]) -> Vec<MetricDef> {
    for_cells(cells)
        .into_iter()
        .filter(|m| m.task_declared)
        .collect()
}
