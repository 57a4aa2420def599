//! Counts over many verified completions, and the rates the design asks for.
//!
//! * step error = wrong steps / checked steps;
//! * sequence error = completions with at least one wrong step / completions;
//! * trace error (Uesato et al. 2022) = completions with a wrong step among those whose final
//!   answer is correct / final-correct completions (strict and flexible extraction separately);
//! * coverage = checked steps / candidate steps.

use serde::Serialize;

use crate::verify::{ModeReport, Verification};

/// Counts of one mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModeSummary {
    /// Candidate steps.
    pub candidates: usize,
    /// Checked steps.
    pub checked: usize,
    /// Wrong steps.
    pub wrong: usize,
    /// Steps accepted by the rounding rule.
    pub rounded: usize,
    /// Unparseable steps.
    pub unparseable: usize,
    /// Skipped steps.
    pub skipped: usize,
    /// Completions with at least one wrong step.
    pub sequences_with_error: usize,
    /// Of those, how many have a strict-correct final answer.
    pub trace_errors_strict: usize,
    /// Of those, how many have a flexible-correct final answer.
    pub trace_errors_flexible: usize,
}

impl ModeSummary {
    fn add(&mut self, r: &ModeReport, strict_ok: bool, flexible_ok: bool) {
        self.candidates += r.candidates();
        self.checked += r.checked;
        self.wrong += r.wrong;
        self.rounded += r.rounded;
        self.unparseable += r.unparseable.len();
        self.skipped += r.skipped;
        if r.wrong > 0 {
            self.sequences_with_error += 1;
            self.trace_errors_strict += usize::from(strict_ok);
            self.trace_errors_flexible += usize::from(flexible_ok);
        }
    }

    /// Wrong / checked steps.
    pub fn step_error(&self) -> Option<f64> {
        ratio(self.wrong, self.checked)
    }

    /// Checked / candidate steps.
    pub fn coverage(&self) -> Option<f64> {
        ratio(self.checked, self.candidates)
    }
}

/// Counts over completions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Completions added.
    pub completions: usize,
    /// Strict-correct final answers.
    pub strict_correct: usize,
    /// Flexible-correct final answers.
    pub flexible_correct: usize,
    /// Annotation mode.
    pub annotation: ModeSummary,
    /// Free-text mode.
    pub free_text: ModeSummary,
}

impl Summary {
    /// Adds one completion (a missing gold answer counts as incorrect).
    pub fn add(&mut self, v: &Verification) {
        let strict_ok = v.strict_correct == Some(true);
        let flexible_ok = v.flexible_correct == Some(true);
        self.completions += 1;
        self.strict_correct += usize::from(strict_ok);
        self.flexible_correct += usize::from(flexible_ok);
        self.annotation.add(&v.annotation, strict_ok, flexible_ok);
        self.free_text.add(&v.free_text, strict_ok, flexible_ok);
    }

    /// Strict accuracy.
    pub fn strict_accuracy(&self) -> Option<f64> {
        ratio(self.strict_correct, self.completions)
    }

    /// Flexible accuracy.
    pub fn flexible_accuracy(&self) -> Option<f64> {
        ratio(self.flexible_correct, self.completions)
    }

    /// Sequence error of a mode: completions with a wrong step / completions.
    pub fn sequence_error(&self, mode: &ModeSummary) -> Option<f64> {
        ratio(mode.sequences_with_error, self.completions)
    }

    /// Trace error of a mode under strict extraction: wrong-chain among strict-correct.
    pub fn trace_error_strict(&self, mode: &ModeSummary) -> Option<f64> {
        ratio(mode.trace_errors_strict, self.strict_correct)
    }
}

fn ratio(a: usize, b: usize) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}
