//! Trajectories (suite `trace: true`, plugin API 1.8): what a run keeps of each traced sample
//! (`samples.jsonl`'s `trace`), and their summary per cell (`summary.json`'s `trace`).
//!
//! The model's reply carries each sample's commit steps and its predictions after each step
//! (`dlm_plugin_api::SampleTrace`); the worker scores every prediction with the task's own
//! scorer and keeps only the verdicts ([`TraceRecord::correct`]), so a run stays small. A
//! prediction is **correct** when the task says the answer is right: a text task's first
//! headline rate metric (GSM8K and arith: strict accuracy), else the sample's `in_support`
//! (formal languages: the sequence is valid). A prediction with masks left is a formal
//! sequence that is not one yet, so it is not correct; a text prediction is scored as the text
//! it reads as, masks shown as marks, as a final completion with masks would be.

use crate::stats::quantile;
use dlm_plugin_api::SampleTrace;
use serde::{Deserialize, Serialize};

/// One sample's trajectory as the run keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// The sample's steps (its NFE).
    pub steps: u64,
    /// Per position: the step its final token was committed from (0: never committed, a prompt
    /// token).
    pub commit_steps: Vec<u64>,
    /// Kendall's τ-b between position and commit step (`None` where undefined: all positions
    /// committed at one step).
    pub tau: Option<f64>,
    /// Whether the answer was correct after each step, as `[step, correct]` at the steps where
    /// that changed (the first prediction's always); the state holds until the next entry.
    /// `None` where the predictions were not scored ([`TraceRecord::not_scored`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<Vec<(u64, bool)>>,
    /// Why the predictions were not scored (an autoregressive model predicts nothing ahead; a
    /// model that answers with text of its own tokenizer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_scored: Option<String>,
}

impl TraceRecord {
    /// The record of `trace` with the verdict on each of its predictions (in order), or the
    /// reason there are none.
    pub fn new(trace: &SampleTrace, verdicts: Result<Vec<bool>, String>) -> TraceRecord {
        let (correct, not_scored) = match (verdicts, &trace.predictions) {
            (Ok(verdicts), Some(predictions)) => {
                let mut changes: Vec<(u64, bool)> = Vec::new();
                for (p, ok) in predictions.iter().zip(verdicts) {
                    if changes.last().is_none_or(|&(_, last)| last != ok) {
                        changes.push((p.step, ok));
                    }
                }
                (Some(changes), None)
            }
            (Ok(_), None) => (
                None,
                Some("the model recorded no predictions (an autoregressive model predicts nothing at positions it has not reached)".to_string()),
            ),
            (Err(why), _) => (None, Some(why)),
        };
        TraceRecord {
            steps: trace.steps,
            commit_steps: trace.commit_steps.clone(),
            tau: trace.left_to_right_tau(),
            correct,
            not_scored,
        }
    }

    /// The first step after which the answer was correct.
    pub fn first_correct_step(&self) -> Option<u64> {
        self.correct.as_ref()?.iter().find(|c| c.1).map(|c| c.0)
    }

    /// Whether the final answer (the output) is correct.
    pub fn final_correct(&self) -> Option<bool> {
        self.correct.as_ref()?.last().map(|c| c.1)
    }

    /// Correct after some step, wrong at the end.
    pub fn lost(&self) -> Option<bool> {
        let last = self.final_correct()?;
        Some(self.first_correct_step().is_some() && !last)
    }
}

/// A cell's trajectories in `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Samples with a trace.
    pub traced: usize,
    /// Of those, samples whose predictions were scored.
    pub scored: usize,
    /// Share of scored samples correct at the end.
    pub final_correct: Option<f64>,
    /// Share of scored samples correct after some step.
    pub ever_correct: Option<f64>,
    /// Share of scored samples correct after some step and wrong at the end.
    pub lost: Option<f64>,
    /// Mean first step at which the answer was correct, over the samples ever correct.
    pub mean_first_correct_step: Option<f64>,
    /// The same as a fraction of each sample's steps.
    pub mean_first_correct_fraction: Option<f64>,
    /// Mean steps per traced sample.
    pub mean_steps: f64,
    /// Samples whose τ is defined, and its mean and quartiles over them.
    pub tau_n: usize,
    pub tau_mean: Option<f64>,
    /// τ's minimum, quartiles and maximum.
    pub tau_quartiles: Option<[f64; 5]>,
    /// Why predictions were not scored, where none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_scored: Option<String>,
}

/// The summary of a cell's traced samples' `traces`; `None` when none was traced (a run
/// before API 1.8 or without `trace: true`).
pub fn summarize<'a>(traces: impl Iterator<Item = &'a TraceRecord>) -> Option<TraceSummary> {
    let traces: Vec<&TraceRecord> = traces.collect();
    if traces.is_empty() {
        return None;
    }
    let scored: Vec<&TraceRecord> = traces
        .iter()
        .copied()
        .filter(|t| t.correct.is_some())
        .collect();
    let share = |f: &dyn Fn(&TraceRecord) -> bool| {
        (!scored.is_empty())
            .then(|| scored.iter().filter(|t| f(t)).count() as f64 / scored.len() as f64)
    };
    let firsts: Vec<(u64, u64)> = scored
        .iter()
        .filter_map(|t| Some((t.first_correct_step()?, t.steps)))
        .collect();
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let first_steps: Vec<f64> = firsts.iter().map(|&(s, _)| s as f64).collect();
    let first_fractions: Vec<f64> = firsts
        .iter()
        .map(|&(s, n)| s as f64 / n.max(1) as f64)
        .collect();
    let mut taus: Vec<f64> = traces.iter().filter_map(|t| t.tau).collect();
    taus.sort_by(f64::total_cmp);
    let steps: Vec<f64> = traces.iter().map(|t| t.steps as f64).collect();
    Some(TraceSummary {
        traced: traces.len(),
        scored: scored.len(),
        final_correct: share(&|t| t.final_correct() == Some(true)),
        ever_correct: share(&|t| t.first_correct_step().is_some()),
        lost: share(&|t| t.lost() == Some(true)),
        mean_first_correct_step: mean(&first_steps),
        mean_first_correct_fraction: mean(&first_fractions),
        mean_steps: mean(&steps).unwrap_or(0.0),
        tau_n: taus.len(),
        tau_mean: mean(&taus),
        tau_quartiles: (!taus.is_empty())
            .then(|| [0.0, 0.25, 0.5, 0.75, 1.0].map(|q| quantile(&taus, q))),
        not_scored: scored
            .is_empty()
            .then(|| traces.iter().find_map(|t| t.not_scored.clone()))
            .flatten(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlm_plugin_api::TracePrediction;

    fn trace(steps: &[u64]) -> SampleTrace {
        let predictions = steps
            .iter()
            .map(|&s| TracePrediction::new(s, vec![s as u32]))
            .collect();
        SampleTrace::new(4, vec![0, 1, 2, 3, 4]).with_predictions(predictions)
    }

    #[test]
    fn a_record_keeps_the_changes_of_correctness_and_reads_them_back() {
        // Correct after step 2, wrong from 3 on: right earlier, lost at the end.
        let r = TraceRecord::new(&trace(&[1, 2, 3, 4]), Ok(vec![false, true, false, false]));
        assert_eq!(r.correct, Some(vec![(1, false), (2, true), (3, false)]));
        assert_eq!(
            (r.first_correct_step(), r.final_correct(), r.lost()),
            (Some(2), Some(false), Some(true))
        );
        assert_eq!(r.tau, Some(1.0));
        let kept = TraceRecord::new(&trace(&[1, 3]), Ok(vec![false, true]));
        assert_eq!(
            (kept.first_correct_step(), kept.lost()),
            (Some(3), Some(false))
        );
        let never = TraceRecord::new(&trace(&[1]), Ok(vec![false]));
        assert_eq!(
            (never.first_correct_step(), never.lost()),
            (None, Some(false))
        );
        let ar = TraceRecord::new(&SampleTrace::new(2, vec![1, 2]), Ok(Vec::new()));
        assert!(ar.correct.is_none() && ar.not_scored.is_some() && ar.lost().is_none());
    }
}
