//! Trajectories (API 1.8): what a sampler records about one sample's way to its output when
//! the request asks for it ([`crate::GenerateRequest::trace`]).

use serde::{Deserialize, Serialize};

/// One sample's trajectory, in [`crate::SampleStats::trace`]. Steps count the network calls
/// the sample needed (its `nfe`): step `k` is the sampler's `k`-th call for it, 1-based.
/// Since API 1.8.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SampleTrace {
    /// The sample's last step (its `nfe`).
    pub steps: u64,
    /// Per position of the sequence: the step whose network output the position's final token
    /// was committed from; 0 for a position the sampler never committed (a prompt token).
    pub commit_steps: Vec<u64>,
    /// The model's prediction after each step, recorded only at the steps where it changed
    /// (the first step always): the tokens committed so far, and at every still-masked
    /// position the argmax of the latest network output that covered it (the mask id where
    /// none has yet). The last entry is the sample's output. `None`: the sampler cannot say
    /// (an autoregressive model has no prediction for positions it has not reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predictions: Option<Vec<TracePrediction>>,
}

impl SampleTrace {
    /// A trajectory of `steps` steps with each position's commit step and no predictions.
    pub fn new(steps: u64, commit_steps: Vec<u64>) -> Self {
        SampleTrace {
            steps,
            commit_steps,
            predictions: None,
        }
    }

    /// The same trajectory with its predictions.
    pub fn with_predictions(mut self, predictions: Vec<TracePrediction>) -> Self {
        self.predictions = Some(predictions);
        self
    }

    /// How left-to-right the commit order was: Kendall's τ-b between position and commit step
    /// over the committed positions (1: strictly in order, −1: strictly reversed; positions
    /// committed at one step are ties). `None` with fewer than two committed positions or all
    /// committed at one step, where τ is undefined.
    pub fn left_to_right_tau(&self) -> Option<f64> {
        let (positions, steps): (Vec<f64>, Vec<f64>) = self
            .commit_steps
            .iter()
            .enumerate()
            .filter(|(_, &step)| step > 0)
            .map(|(j, &step)| (j as f64, step as f64))
            .unzip();
        kendall_tau_b(&positions, &steps)
    }
}

/// Kendall's τ-b of the pairs `(x[i], y[i])`: `(C − D) / √((n₀ − n₁)(n₀ − n₂))` over all
/// `n₀ = n(n−1)/2` pairs, `C` and `D` the concordant and discordant ones, `n₁` and `n₂` those
/// tied in `x` and in `y` (Kendall 1945). `None` when a denominator factor is 0 (fewer than
/// two points, or every `x` or every `y` equal) or the lengths differ. Quadratic, which is
/// fine at a sequence's length.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() {
        return None;
    }
    let n = x.len();
    let (mut concordant, mut discordant, mut tied_x, mut tied_y) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..n {
        for j in i + 1..n {
            let (dx, dy) = (x[i] - x[j], y[i] - y[j]);
            if dx == 0.0 {
                tied_x += 1;
            }
            if dy == 0.0 {
                tied_y += 1;
            }
            let sign = dx * dy;
            if sign > 0.0 {
                concordant += 1;
            } else if sign < 0.0 {
                discordant += 1;
            }
        }
    }
    let pairs = (n * n.saturating_sub(1) / 2) as u64;
    let denominator = ((pairs - tied_x) as f64 * (pairs - tied_y) as f64).sqrt();
    (denominator > 0.0).then(|| (concordant as f64 - discordant as f64) / denominator)
}

/// The model's predicted sequence after step `step` ([`SampleTrace::predictions`]).
/// Since API 1.8.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TracePrediction {
    /// The step after which the model predicted this sequence.
    pub step: u64,
    /// The whole sequence (prompt included), the mask id where nothing is predicted yet.
    pub tokens: Vec<u32>,
}

impl TracePrediction {
    /// The prediction `tokens` after step `step`.
    pub fn new(step: u64, tokens: Vec<u32>) -> Self {
        TracePrediction { step, tokens }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau_b_matches_hand_computed_cases() {
        // Positions 0..4 committed at steps 1, 1, 2, 2: pairs (0,1) and (2,3) tie in the
        // step, the other 4 are concordant: τ-b = 4 / √(6 · 4).
        let trace = SampleTrace::new(2, vec![1, 1, 2, 2]);
        let tau = trace.left_to_right_tau().unwrap();
        assert!((tau - 4.0 / 24f64.sqrt()).abs() < 1e-12, "{tau}");
        // Strictly in order and strictly reversed; the prompt (step 0) is left out.
        assert_eq!(
            SampleTrace::new(3, vec![0, 0, 1, 2, 3]).left_to_right_tau(),
            Some(1.0)
        );
        assert_eq!(
            SampleTrace::new(3, vec![0, 3, 2, 1]).left_to_right_tau(),
            Some(-1.0)
        );
        // One step for everything, or a single position: undefined.
        assert_eq!(SampleTrace::new(1, vec![1, 1, 1]).left_to_right_tau(), None);
        assert_eq!(SampleTrace::new(1, vec![0, 1]).left_to_right_tau(), None);
        // Ties on both sides: x = (1, 1, 2, 3), y = (1, 2, 2, 3). Pairs: (0,1) tied in x,
        // (1,2) tied in y, the other 4 concordant: n₀ = 6, τ-b = 4 / √(5 · 5) = 0.8.
        let tau = kendall_tau_b(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 2.0, 3.0]).unwrap();
        assert!((tau - 0.8).abs() < 1e-12, "{tau}");
        // One discordant pair of three: (C − D) / n₀ = (2 − 1) / 3.
        let tau = kendall_tau_b(&[0.0, 1.0, 2.0], &[1.0, 3.0, 2.0]).unwrap();
        assert!((tau - 1.0 / 3.0).abs() < 1e-12, "{tau}");
    }

    #[test]
    fn a_reply_without_a_trace_and_a_trace_without_predictions_round_trip() {
        let old: crate::SampleStats =
            serde_json::from_str(r#"{"nfe": 3, "generated_tokens": 4}"#).unwrap();
        assert_eq!(old.trace, None);
        let traced = SampleTrace::new(2, vec![0, 1, 2]);
        let json = serde_json::to_string(&traced).unwrap();
        assert!(!json.contains("predictions"), "{json}");
        assert_eq!(serde_json::from_str::<SampleTrace>(&json).unwrap(), traced);
    }
}
