//! Exact `log q(continuation | context)`: what a likelihood request (`task.loglikelihood`,
//! plugin API 1.8) asks of the ground truth.
//!
//! Every language here generates left to right with no end token, so the marginal of a
//! sequence's first `k` tokens is the language's own probability of that sequence at length
//! `k`; below the shortest length (an n-gram's first `n − 2` tokens) it is the chain rule over
//! the exact conditional marginals with the rest of the shortest sequence masked.

use super::*;

impl Language {
    /// Exact `ln q(x_0 … x_{k−1})`, the probability that a sequence begins with `prefix`
    /// (0 for the empty prefix, `-inf` outside the support).
    pub fn log_prob_prefix(&self, prefix: &[u32]) -> Result<f64, LanguageError> {
        let min = self.min_length();
        if prefix.is_empty() {
            return Ok(0.0);
        }
        if prefix.len() >= min {
            return self.log_prob(prefix);
        }
        let vocab = self.vocab();
        let mut row = vec![self.mask_id(); min];
        let mut marginals = vec![0.0; min * vocab];
        let mut total = 0.0;
        for (j, &token) in prefix.iter().enumerate() {
            self.conditional_marginals(&row, 1, min, &mut marginals)?;
            if token as usize >= vocab {
                return Err(LanguageError::TokenOutOfRange {
                    position: j,
                    token,
                    vocab,
                    hint: "",
                });
            }
            total += marginals[j * vocab + token as usize].ln();
            if total == f64::NEG_INFINITY {
                return Ok(total);
            }
            row[j] = token;
        }
        Ok(total)
    }

    /// Exact `ln q(continuation | context)` in nats: `ln q(context ‖ continuation) − ln
    /// q(context)` on prefixes; `-inf` when the continuation cannot follow the context, and
    /// NaN when the context itself has probability 0 (the conditional does not exist).
    pub fn log_prob_continuation(
        &self,
        context: &[u32],
        continuation: &[u32],
    ) -> Result<f64, LanguageError> {
        let c = self.log_prob_prefix(context)?;
        if c == f64::NEG_INFINITY {
            return Ok(f64::NAN);
        }
        let whole: Vec<u32> = context.iter().chain(continuation).copied().collect();
        Ok(self.log_prob_prefix(&whole)? - c)
    }
}
