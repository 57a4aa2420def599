//! Closed-form accuracies a task declares for decoding with its exact denoiser. Since API 1.8.

use serde::{Deserialize, Serialize};

/// What a task knows exactly about one of its rate metrics under one sampler: the value the
/// exact denoiser (a model with the `oracle` capability) reaches in expectation, for each
/// number of steps. Parallel-decoding tasks declare it (committing several tokens in one
/// step draws them independently from their marginals, so the accuracy has a closed form);
/// the report shows it as the reference every model of the task is measured against. Set in
/// [`TaskDescription::closed_forms`](crate::TaskDescription::closed_forms). Since API 1.8.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClosedFormAccuracy {
    /// The task's rate metric it predicts (a name in `TaskDescription::metrics`).
    pub metric: String,
    /// The sampler whose commit rule it assumes (e.g. `random`).
    pub sampler: String,
    /// How it is derived, in one or two sentences: the unmasking order and what one step
    /// commits (for the report).
    pub assumption: String,
    /// The predicted value at each number of steps, in increasing steps. (A list, not a map
    /// keyed by steps: the harness reads descriptions inside internally tagged events, where
    /// serde cannot read integer map keys.)
    pub by_steps: Vec<StepsValue>,
}

/// The closed form's value at one number of steps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepsValue {
    /// The cell's `steps`.
    pub steps: usize,
    /// The metric's exact expected value there.
    pub value: f64,
}

impl ClosedFormAccuracy {
    /// A closed form of `metric` under `sampler`, with its derivation and its `(steps, value)`
    /// pairs.
    pub fn new(
        metric: impl Into<String>,
        sampler: impl Into<String>,
        assumption: impl Into<String>,
        by_steps: impl IntoIterator<Item = (usize, f64)>,
    ) -> Self {
        let mut by_steps: Vec<StepsValue> = by_steps
            .into_iter()
            .map(|(steps, value)| StepsValue { steps, value })
            .collect();
        by_steps.sort_by_key(|p| p.steps);
        ClosedFormAccuracy {
            metric: metric.into(),
            sampler: sampler.into(),
            assumption: assumption.into(),
            by_steps,
        }
    }

    /// The value at `steps`, where it is declared.
    pub fn at(&self, steps: usize) -> Option<f64> {
        self.by_steps
            .iter()
            .find(|p| p.steps == steps)
            .map(|p| p.value)
    }
}

#[cfg(test)]
mod tests {
    use crate::TaskDescription;

    #[test]
    fn a_description_without_closed_forms_reads_as_none_and_they_round_trip() {
        let old = r#"{"label": "t", "vocab_size": 2, "mask_id": 2, "length": 4,
                     "entropy_nats": null, "optimal_ter": null, "support_log10_density": null}"#;
        let d: TaskDescription = serde_json::from_str(old).unwrap();
        assert!(d.closed_forms.is_empty());
        assert!(!serde_json::to_string(&d).unwrap().contains("closed_forms"));
        let mut with = d.clone();
        with.closed_forms.push(super::ClosedFormAccuracy::new(
            "correct",
            "random",
            "uniform order",
            [(4, 0.25), (1, 1.0)],
        ));
        assert_eq!(with.closed_forms[0].at(4), Some(0.25));
        assert_eq!(with.closed_forms[0].by_steps[0].steps, 1);
        let back: TaskDescription =
            serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back, with);
        // The harness reads descriptions inside internally tagged events (buffered content,
        // where serde reads no integer map keys): that must work too.
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(tag = "event")]
        enum Event {
            Finished { description: TaskDescription },
        }
        let text = serde_json::to_string(&Event::Finished {
            description: with.clone(),
        })
        .unwrap();
        let Event::Finished { description } = serde_json::from_str(&text).unwrap();
        assert_eq!(description, with);
    }
}
