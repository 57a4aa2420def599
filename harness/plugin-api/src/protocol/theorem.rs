//! The theorem checks a task declares it is an instance of. Since API 1.4.

use serde::{Deserialize, Serialize};

/// A check of Feng et al.'s theorems that a task declares it is an instance of (see
/// [`TaskDescription::theorem_checks`](crate::TaskDescription::theorem_checks)). The harness
/// runs a check on the cells of tasks that declare it, sampled by a model with the `oracle`
/// capability (the exact denoiser), over several lengths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "theorem", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TheoremCheck {
    /// Theorem 4.2: on an n-gram language with full support, the excess token error rate of
    /// MDLM sampling at a fixed number of steps does not grow with the length.
    TerIndependentOfLength,
    /// Theorem 4.4: on this language, reaching a low sequence error rate needs a number of
    /// steps linear in the length.
    SerStepsLinearInLength {
        /// The task is one of the theorem's worst cases, so its fit decides the verdict;
        /// otherwise (e.g. a pruned n-gram) it is measured and shown beside it.
        primary: bool,
        /// The exact SER of the exact denoiser, where the task has a closed form for it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        closed_form: Option<IntervalSer>,
    },
}

/// The interval language's closed form: with `T` log-linear `ddpm` steps the exact denoiser's
/// SER is `1 − (1 − violation_probability / T)^complete_intervals`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IntervalSer {
    /// Probability that one interval's constrained pair is violated when both are drawn in
    /// the same step.
    pub violation_probability: f64,
    /// Intervals wholly inside the sequence (`⌊L/k⌋`).
    pub complete_intervals: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TaskDescription;

    #[test]
    fn a_description_from_an_older_plugin_reads_and_checks_round_trip() {
        // API 1.3 had no `theorem_checks`: its JSON still reads, with no checks.
        let old = r#"{"label": "x", "vocab_size": 8, "mask_id": 8, "length": 4,
            "entropy_nats": null, "optimal_ter": null, "support_log10_density": null}"#;
        let d: TaskDescription = serde_json::from_str(old).unwrap();
        assert_eq!(d, TaskDescription::new("x", 8, 4));
        assert!(d.theorem_checks.is_empty());
        let mut d = TaskDescription::new("interval", 2, 12);
        d.theorem_checks = vec![
            TheoremCheck::TerIndependentOfLength,
            TheoremCheck::SerStepsLinearInLength {
                primary: true,
                closed_form: Some(IntervalSer {
                    violation_probability: 0.5,
                    complete_intervals: 3,
                }),
            },
        ];
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(
            json["theorem_checks"][0],
            serde_json::json!({"theorem": "ter_independent_of_length"})
        );
        assert_eq!(
            json["theorem_checks"][1]["closed_form"]["complete_intervals"],
            3
        );
        assert_eq!(serde_json::from_value::<TaskDescription>(json).unwrap(), d);
    }
}
