//! The report's training table: one row per training, with the validation gap.

use serde::Serialize;

/// One row of the report's training table.
#[derive(Debug, Serialize)]
pub struct TrainingRow {
    pub key: String,
    pub ok: bool,
    pub reused: bool,
    pub cause: Option<String>,
    pub steps: Option<usize>,
    pub batch_size: Option<usize>,
    pub tokens: Option<u64>,
    pub wall_seconds: Option<f64>,
    pub tokens_per_second: Option<f64>,
    pub final_loss: Option<f64>,
    /// Held-out NLL per token and whether it is an upper bound (MDM ELBO).
    pub validation_nll: Option<f64>,
    pub bound: bool,
    pub optimal_nll: Option<f64>,
    /// `exp(validation NLL)` against the optimal TER `exp(H/L)`, and the gap in percent.
    pub perplexity: Option<f64>,
    pub optimal_perplexity: Option<f64>,
    /// `exp` of the task's exact NLL of the same held-out sequences: the gap's reference.
    pub reference_perplexity: Option<f64>,
    pub gap_percent: Option<f64>,
    pub checkpoint: Option<String>,
    /// The checkpoint's file name (the full path is its hover text).
    pub checkpoint_name: Option<String>,
}

pub(super) fn training_rows(lines: &[crate::training::TrainLine]) -> Vec<TrainingRow> {
    lines
        .iter()
        .map(|l| {
            let r = l.record.as_ref();
            let v = r.and_then(|r| r.final_validation());
            let o = r.and_then(|r| r.optimal_nll_per_token);
            // The gap is measured against the true model's NLL of the same held-out sequences
            // where the task gives it (a finite set can sit below or above the entropy rate).
            let reference = r.and_then(|r| r.reference_nll());
            let against = reference.or(o);
            TrainingRow {
                key: l.key.clone(),
                ok: r.is_some(),
                reused: l.reused,
                cause: l.cause.clone(),
                steps: r.map(|r| r.output.steps),
                batch_size: r.map(|r| r.train.batch_size),
                tokens: r.map(|r| r.output.tokens),
                wall_seconds: r.map(|r| r.output.wall_seconds),
                tokens_per_second: r.map(|r| r.output.tokens_per_second),
                final_loss: r.map(|r| r.output.final_loss),
                validation_nll: v,
                bound: r.is_some_and(|r| r.output.bound),
                optimal_nll: o,
                perplexity: v.map(f64::exp),
                optimal_perplexity: o.map(f64::exp),
                reference_perplexity: reference.map(f64::exp),
                gap_percent: v.zip(against).map(|(v, o)| ((v - o).exp() - 1.0) * 100.0),
                checkpoint: r.map(|r| r.checkpoint.display().to_string()),
                checkpoint_name: r.and_then(|r| {
                    r.checkpoint
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                }),
            }
        })
        .collect()
}
