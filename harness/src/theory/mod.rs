//! The paper's two theorems as measured checks: pure functions from a run's cells and summary
//! rows to a [`TheoryReport`] (serialisable; the report renders it and `report.json` carries it).
//!
//! # Which cells count
//!
//! A theorem check is declared by the **task**, never inferred by the harness from plugin,
//! component or configuration names: a task's description lists the checks it is an instance
//! of ([`TheoremCheck`] in `TaskDescription::theorem_checks`, with their constants). A cell
//! enters a check when all of these hold:
//!
//! * its task declares the check:
//!   * Theorem 4.2 (TER): [`TheoremCheck::TerIndependentOfLength`] (dlm-formal: an n-gram
//!     language with full support);
//!   * Theorem 4.4 (SER), *primary*: [`TheoremCheck::SerStepsLinearInLength`] with `primary`
//!     (dlm-formal: the interval language, which also gives its exact closed form, and the
//!     sparse HMM);
//!   * Theorem 4.4, *supplementary* (measured and shown, not part of the theorem's verdict):
//!     the same check without `primary` (dlm-formal: a pruned n-gram);
//! * its model has the `oracle` capability, i.e. it is the task's exact denoiser (the theorems
//!   bound the error that parallel sampling adds; only the exact denoiser isolates it from
//!   training error);
//! * its sampler is a diffusion sampler (not one step per token, as the model's plugin
//!   describes it) run without `params`: MDLM ancestral sampling as the theorems analyse it;
//! * it finished (`status: ok`).
//!
//! Cells are grouped by (task, model, sampler, schedule, seed). A run gets a theorem section
//! only when some group has at least two lengths; otherwise [`analyse`] returns `None` (a
//! one-length suite such as `quick.yaml` has nothing to fit).
//!
//! # Theorem 4.2: excess TER does not grow with L
//!
//! For every step count `T` the excess `TER/optimum − 1` (the optimum is the task's exact
//! entropy rate at that length) is fitted against `ln L` by ordinary least squares. The check
//! holds for the task when, at every `T`, the slope's confidence interval contains 0 or lies
//! below it. With `m` step counts per task the per-`T` verdicts use Bonferroni intervals at
//! level `1 − 0.05/m` (the family of `m` tests then raises a false alarm with probability at
//! most 5%); the plain 95% interval is reported too.
//!
//! # Theorem 4.4: SER needs steps linear in L
//!
//! For every length, the smallest number of steps with `SER <= 0.1` is read off the swept step
//! grid (a suite is a static sweep, so the "bisection" brackets the crossing between two grid
//! points and interpolates):
//!
//! * the *point estimate* uses the SER point estimates: the crossing lies between the last grid
//!   point above the target and the first one at or below it from which every larger grid point
//!   stays at or below it; between them it interpolates linearly in
//!   `(ln T, ln(−ln(1 − SER)))`, the coordinates in which the compounding of independent
//!   violations, `SER_T ≈ 1 − exp(−c·L/T)`, is a straight line (so the interpolation is exact
//!   for the interval language up to `O(1/T)`); where an endpoint has SER 0 or 1 it interpolates
//!   SER linearly in `ln T` instead;
//! * the *range* `[steps_low, steps_high]` repeats this with the lower and upper Wilson 95%
//!   bounds of every grid point: `steps_high` is the CI-aware answer (from there on the data
//!   exclude `SER > 0.1`), `steps_low` the most optimistic one. The half-width of this range,
//!   divided by 1.96, is the estimate's standard error in the fit;
//! * for the interval language the exact answer is known in closed form
//!   (`SER_T = 1 − (1 − p_v/T)^⌊L/k⌋`, from the task description) and is shown beside it.
//!
//! The steps are fitted against `L` by ordinary least squares; the check holds for a task when
//! `R² > 0.95` with at least three lengths and the slope's 95% interval lies above 0. A log–log
//! fit (`ln steps` against `ln L`) gives the growth exponent (1 = linear) as supporting
//! evidence. The theorem's verdict is over the primary tasks: it holds when every primary task
//! holds.
//!
//! # Statistics
//!
//! [`fit_line`] is ordinary least squares. Its slope interval is the **wider** of (i) the
//! t interval from the residuals (`df = n − 2`, needs three points) and (ii) the interval
//! propagated from the points' own uncertainties (`se(slope)² = Σ w_i² se_i²` with the OLS
//! weights `w_i = (x_i − x̄)/Sxx`, normal quantile), which is all that two points allow and
//! which keeps a fit whose few points fall on a line by chance from being declared exact.
//! Quantiles are computed, not tabulated: Student's t by inverting its CDF (the regularized
//! incomplete beta function, Lentz's continued fraction), the normal one by inverting
//! `Φ(z) = ½·erfc(−z/√2)` with `erfc` from the regularized incomplete gamma function.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::CellSummary;
use crate::results::{CellRecord, CellStatus};
pub use crate::stats::LinearFit;
use crate::stats::{fit_line, Z95};
use dlm_plugin_api::TheoremCheck;

mod ser;
mod ter;
#[cfg(test)]
mod tests;

use ser::theorem_4_4;
pub use ser::{interval_exact_ser, interval_exact_steps};
use ter::theorem_4_2;

/// The SER target of Theorem 4.4's check.
pub const SER_TARGET: f64 = 0.1;
/// `R²` above which the steps-against-`L` fit counts as linear.
pub const LINEAR_R2: f64 = 0.95;
/// Family-wise error rate of Theorem 4.2's per-step-count tests.
pub const FAMILY_ALPHA: f64 = 0.05;

/// Both theorem checks of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TheoryReport {
    /// Theorem 4.2 (TER needs no more steps as L grows); `None` when the run has no TER n-gram
    /// task at two or more lengths.
    pub theorem_4_2: Option<Theorem42>,
    /// Theorem 4.4 (SER needs steps linear in L); `None` when the run has no SER task at two or
    /// more lengths.
    pub theorem_4_4: Option<Theorem44>,
}

/// Whether a check holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictStatus {
    Holds,
    DoesNotHold,
    NotEnoughData,
}

impl VerdictStatus {
    /// `holds`, `does not hold`, `not enough data`.
    pub fn label(self) -> &'static str {
        match self {
            VerdictStatus::Holds => "holds",
            VerdictStatus::DoesNotHold => "does not hold",
            VerdictStatus::NotEnoughData => "not enough data",
        }
    }
}

/// A verdict and the measured reason for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub status: VerdictStatus,
    pub reason: String,
}

// ---------------------------------------------------------------------------------------------
// Theorem 4.2.

/// Theorem 4.2's check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Theorem42 {
    pub claim: String,
    /// How the run checks it.
    pub check: String,
    pub tasks: Vec<TerTask>,
    pub verdict: Verdict,
}

/// One TER n-gram task (one model, sampler and seed) of Theorem 4.2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TerTask {
    pub task: String,
    /// The task's label from its description, e.g. `2-gram (TER variant)`.
    pub label: String,
    pub model: String,
    /// Sampler label without steps, e.g. `ddpm_cache`.
    pub sampler: String,
    pub seed: u64,
    /// Lengths present, ascending.
    pub lengths: Vec<usize>,
    /// Step counts present, ascending.
    pub steps: Vec<usize>,
    /// One point per (steps, length), ordered by steps then length: the figure's lines are the
    /// points of one length.
    pub points: Vec<TerPoint>,
    /// One fit of excess against `ln L` per step count, ascending steps.
    pub fits: Vec<TerFit>,
    pub verdict: Verdict,
}

/// A measured TER against the optimum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TerPoint {
    pub steps: usize,
    pub length: usize,
    /// Samples.
    pub n: usize,
    pub ter: f64,
    pub ter_ci: Option<(f64, f64)>,
    pub optimal_ter: f64,
    /// `ter / optimal_ter` and its CI (the figure's y axis).
    pub ratio: f64,
    pub ratio_ci: Option<(f64, f64)>,
    /// `ratio − 1`: the excess TER that the fit uses.
    pub excess: f64,
}

/// Excess TER against `ln L` at one step count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TerFit {
    pub steps: usize,
    /// `None` with fewer than two lengths.
    pub fit: Option<LinearFit>,
    /// The slope interval at the family level `1 − 0.05/m` that decides the verdict.
    pub slope_ci_family: Option<(f64, f64)>,
    pub family_confidence: f64,
    /// The fit's excess predicted at the largest minus at the smallest length: how much the
    /// excess grows across the measured range (negative: it shrinks).
    pub growth_over_range: Option<f64>,
    pub verdict: Verdict,
}

// ---------------------------------------------------------------------------------------------
// Theorem 4.4.

/// Theorem 4.4's check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Theorem44 {
    pub claim: String,
    pub check: String,
    pub target_ser: f64,
    pub tasks: Vec<SerTask>,
    /// Over the primary tasks.
    pub verdict: Verdict,
}

/// Why a task is in Theorem 4.4's check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SerRole {
    /// The interval language or a sparse HMM: decides the theorem's verdict.
    Primary,
    /// An n-gram SER variant: measured and shown, not part of the verdict.
    Supplementary,
}

/// One SER task (one model, sampler and seed) of Theorem 4.4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SerTask {
    pub task: String,
    pub label: String,
    /// `interval`, `sparse_hmm` or `ngram_ser`.
    pub kind: String,
    pub role: SerRole,
    pub model: String,
    pub sampler: String,
    pub seed: u64,
    pub lengths: Vec<usize>,
    pub steps: Vec<usize>,
    /// One point per (length, steps), ordered by length then steps.
    pub points: Vec<SerPoint>,
    /// Steps needed for `SER <= target`, one per length, ascending.
    pub steps_needed: Vec<StepsNeeded>,
    /// Steps needed against `L` (over the lengths where the target was reached inside the grid).
    pub fit: Option<LinearFit>,
    /// `ln(steps needed)` against `ln L`: the slope is the growth exponent (1 = linear).
    pub power_fit: Option<LinearFit>,
    /// Interval language only: the same linear fit through the exact steps needed.
    pub exact_fit: Option<LinearFit>,
    pub verdict: Verdict,
}

/// A measured SER.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SerPoint {
    pub length: usize,
    pub steps: usize,
    pub n: usize,
    pub ser: f64,
    /// Wilson 95%.
    pub ser_ci: Option<(f64, f64)>,
    /// Interval language only: the exact SER of the oracle at these steps (closed form).
    pub exact_ser: Option<f64>,
}

/// The smallest number of steps reaching the SER target at one length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepsNeeded {
    pub length: usize,
    /// Point estimate (interpolated); `None` when the target is not reached inside the grid.
    pub steps: Option<f64>,
    /// From the lower Wilson bounds (most optimistic); `None` when not reached.
    pub steps_low: Option<f64>,
    /// From the upper Wilson bounds (CI-aware: from here on the data exclude `SER > target`);
    /// `None` when not reached inside the grid.
    pub steps_high: Option<f64>,
    /// The grid bracket of the point estimate: the last grid step above the target and the
    /// first at or below it (`None` for a side outside the grid).
    pub bracket: (Option<usize>, Option<usize>),
    /// Interval language only: the exact smallest integer number of steps (closed form).
    pub exact_steps: Option<usize>,
    /// Why no estimate, when `steps` is `None`.
    pub note: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Selection.

/// A task's role in the checks, from the [`TheoremCheck`] it declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Theorem 4.2's TER check.
    Ter,
    /// Theorem 4.4, measured beside the verdict.
    SerSupplementary,
    /// Theorem 4.4, a worst case with an exact closed form for the oracle's SER.
    SerClosedForm,
    /// Theorem 4.4, a worst case without a closed form.
    SerPrimary,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Ter => "ter",
            Kind::SerSupplementary => "ser_supplementary",
            Kind::SerClosedForm => "ser_closed_form",
            Kind::SerPrimary => "ser_primary",
        }
    }
}

/// The theorem role the cell's task declares (module docs, "Which cells count").
fn task_kind(cell: &CellRecord) -> Option<Kind> {
    let checks = &cell.task_description.as_ref()?.theorem_checks;
    checks.iter().find_map(|check| match check {
        TheoremCheck::TerIndependentOfLength => Some(Kind::Ter),
        TheoremCheck::SerStepsLinearInLength { primary: false, .. } => Some(Kind::SerSupplementary),
        TheoremCheck::SerStepsLinearInLength {
            closed_form: Some(_),
            ..
        } => Some(Kind::SerClosedForm),
        TheoremCheck::SerStepsLinearInLength { .. } => Some(Kind::SerPrimary),
        // A check this harness does not know yet (a newer plugin API).
        _ => None,
    })
}

fn qualifies(cell: &CellRecord) -> bool {
    let Some(sampler) = &cell.cell.sampler else {
        return false;
    };
    cell.status == CellStatus::Ok
        && cell.model_exact
        // A diffusion sampler (not one token per step, as the plugin describes it) with its
        // default rule: each sampler gets its own fits.
        && !cell.one_step_per_token
        && sampler.params.is_empty()
}

/// Sampler label without steps: name and schedule.
fn sampler_label(cell: &CellRecord) -> String {
    let s = cell
        .cell
        .sampler
        .as_ref()
        .expect("qualifying cells have a sampler");
    match &s.schedule {
        Some(sched) => format!("{},{sched}", s.name),
        None => s.name.clone(),
    }
}

struct Obs<'a> {
    cell: &'a CellRecord,
    summary: &'a CellSummary,
}

type GroupKey = (String, String, String, u64);

/// The qualifying cells of one theorem kind, grouped by (task, model, sampler, seed) in the
/// order of first appearance.
fn groups<'a>(
    cells: &'a [CellRecord],
    summary: &'a [CellSummary],
    kinds: &[Kind],
) -> Vec<(Kind, Vec<Obs<'a>>)> {
    let by_unit: BTreeMap<&str, &CellSummary> =
        summary.iter().map(|s| (s.unit.as_str(), s)).collect();
    let mut order: Vec<GroupKey> = Vec::new();
    let mut out: BTreeMap<GroupKey, (Kind, Vec<Obs<'a>>)> = BTreeMap::new();
    for cell in cells {
        let Some(kind) = task_kind(cell).filter(|k| kinds.contains(k)) else {
            continue;
        };
        if !qualifies(cell) {
            continue;
        }
        let Some(s) = by_unit.get(cell.unit.as_str()) else {
            continue;
        };
        let key = (
            cell.cell.task.name.clone(),
            cell.cell
                .model
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default(),
            sampler_label(cell),
            cell.cell.seed,
        );
        if !out.contains_key(&key) {
            order.push(key.clone());
        }
        out.entry(key)
            .or_insert_with(|| (kind, Vec::new()))
            .1
            .push(Obs { cell, summary: s });
    }
    order
        .into_iter()
        .filter_map(|k| out.remove(&k))
        .filter(|(_, obs)| distinct(obs.iter().map(|o| o.cell.cell.length)).len() >= 2)
        .collect()
}

fn distinct(values: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut v: Vec<usize> = values.collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn steps_of(o: &Obs) -> usize {
    o.cell.cell.sampler.as_ref().map(|s| s.steps).unwrap_or(0)
}

fn label_of(obs: &[Obs]) -> String {
    obs.iter()
        .find_map(|o| o.cell.task_description.as_ref().map(|d| d.label.clone()))
        .unwrap_or_else(|| obs[0].cell.cell.task.name.clone())
}

/// Both theorem checks of a run, or `None` when it has no theorem task at two or more lengths
/// (module docs).
pub fn analyse(cells: &[CellRecord], summary: &[CellSummary]) -> Option<TheoryReport> {
    let ter = groups(cells, summary, &[Kind::Ter]);
    let ser = groups(
        cells,
        summary,
        &[
            Kind::SerClosedForm,
            Kind::SerPrimary,
            Kind::SerSupplementary,
        ],
    );
    if ter.is_empty() && ser.is_empty() {
        return None;
    }
    Some(TheoryReport {
        theorem_4_2: (!ter.is_empty()).then(|| theorem_4_2(&ter)),
        theorem_4_4: (!ser.is_empty()).then(|| theorem_4_4(&ser)),
    })
}

/// Four significant digits for the verdict texts.
fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{v:.digits$}")
}

/// Holds when every part holds; does not hold when some part does not; otherwise not enough
/// data. The reason names the parts that decided.
pub(super) fn combine<'a>(
    parts: impl Iterator<Item = (&'a str, &'a Verdict)>,
    what: &str,
) -> Verdict {
    let parts: Vec<(&str, &Verdict)> = parts.collect();
    let failing: Vec<&str> = parts
        .iter()
        .filter(|(_, v)| v.status == VerdictStatus::DoesNotHold)
        .map(|(n, _)| *n)
        .collect();
    let missing: Vec<&str> = parts
        .iter()
        .filter(|(_, v)| v.status == VerdictStatus::NotEnoughData)
        .map(|(n, _)| *n)
        .collect();
    if parts.is_empty() {
        Verdict {
            status: VerdictStatus::NotEnoughData,
            reason: format!("nothing to check ({what})"),
        }
    } else if !failing.is_empty() {
        Verdict {
            status: VerdictStatus::DoesNotHold,
            reason: format!("does not hold at {}", failing.join(", ")),
        }
    } else if !missing.is_empty() {
        Verdict {
            status: VerdictStatus::NotEnoughData,
            reason: format!("not enough data at {}", missing.join(", ")),
        }
    } else {
        Verdict {
            status: VerdictStatus::Holds,
            reason: format!("holds at {what} ({})", parts.len()),
        }
    }
}
