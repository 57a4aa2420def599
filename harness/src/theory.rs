//! The paper's two theorems as measured checks: pure functions from a run's cells and summary
//! rows to a [`TheoryReport`] (serialisable; the report renders it and `report.json` carries it).
//!
//! # Which cells count
//!
//! A theorem check is declared by the suite through its **task configurations**, never by task
//! names. A cell enters a check when all of these hold:
//!
//! * its task comes from the `dlm-formal` plugin and its configuration is one of
//!   * Theorem 4.2 (TER): `task: ngram` with full support, i.e. `variant` absent or `ter` and no
//!     positive `threshold`;
//!   * Theorem 4.4 (SER), *primary*: `task: interval` (the theorem's worst case) or `task: hmm`
//!     with `variant: sparse` (an HMM whose support density is below 1);
//!   * Theorem 4.4, *supplementary* (measured and shown, not part of the theorem's verdict):
//!     `task: ngram` with `variant: ser` or a positive `threshold`;
//! * its model is the exact denoiser `oracle` of `dlm-formal` (the theorems bound the error
//!   that parallel sampling adds; only the exact oracle isolates it from training error);
//! * its sampler is `ddpm` or `ddpm_cache` (MDLM ancestral sampling, which the theorems
//!   analyse; both draw the same distribution) without `params`;
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
use serde_json::Value;

use crate::metrics::CellSummary;
use crate::results::{CellRecord, CellStatus};
use crate::suite::PluginRef;

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

/// An ordinary least-squares line `y = intercept + slope·x`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearFit {
    pub slope: f64,
    /// The slope's confidence interval at `confidence` (see the module docs: the wider of the
    /// residual t interval and the propagated measurement interval).
    pub slope_ci: (f64, f64),
    /// Its confidence level, e.g. 0.95.
    pub confidence: f64,
    pub intercept: f64,
    /// Coefficient of determination (1 for two points; `None` when every `y` is equal).
    pub r_squared: Option<f64>,
    /// Points in the fit.
    pub n: usize,
    /// Residual degrees of freedom (`n − 2`).
    pub df: usize,
    /// The slope's standard error from the residuals (`None` below three points).
    pub slope_se_residual: Option<f64>,
    /// The slope's standard error propagated from the points' own uncertainties (`None` when
    /// they are unknown).
    pub slope_se_measurement: Option<f64>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    NgramTer,
    NgramSer,
    Interval,
    SparseHmm,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::NgramTer => "ngram_ter",
            Kind::NgramSer => "ngram_ser",
            Kind::Interval => "interval",
            Kind::SparseHmm => "sparse_hmm",
        }
    }
}

const FORMAL_PLUGIN: &str = "dlm-formal";

fn from_formal(plugin: &PluginRef, loaded: Option<&str>) -> bool {
    match loaded {
        Some(name) => name == FORMAL_PLUGIN,
        None => matches!(plugin, PluginRef::Crate(c) if c == FORMAL_PLUGIN),
    }
}

/// The theorem role of a task, from its configuration (module docs, "Which cells count").
fn task_kind(cell: &CellRecord) -> Option<Kind> {
    let task = &cell.cell.task;
    if !from_formal(
        &task.plugin,
        cell.task_plugin.as_ref().map(|p| p.name.as_str()),
    ) {
        return None;
    }
    let cfg = &task.config;
    let variant = cfg.get("variant").and_then(Value::as_str);
    let threshold = cfg.get("threshold").and_then(Value::as_f64);
    match task.component.as_str() {
        "interval" => Some(Kind::Interval),
        "hmm" if variant == Some("sparse") => Some(Kind::SparseHmm),
        "ngram" => match (variant, threshold) {
            (_, Some(t)) if t > 0.0 => Some(Kind::NgramSer),
            (Some("ser"), _) => Some(Kind::NgramSer),
            (None | Some("ter"), _) => Some(Kind::NgramTer),
            _ => None,
        },
        _ => None,
    }
}

fn qualifies(cell: &CellRecord) -> bool {
    let Some(model) = &cell.cell.model else {
        return false;
    };
    let Some(sampler) = &cell.cell.sampler else {
        return false;
    };
    cell.status == CellStatus::Ok
        && model.component == "oracle"
        && from_formal(
            &model.plugin,
            cell.model_plugin.as_ref().map(|p| p.name.as_str()),
        )
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
    let ter = groups(cells, summary, &[Kind::NgramTer]);
    let ser = groups(
        cells,
        summary,
        &[Kind::Interval, Kind::SparseHmm, Kind::NgramSer],
    );
    if ter.is_empty() && ser.is_empty() {
        return None;
    }
    Some(TheoryReport {
        theorem_4_2: (!ter.is_empty()).then(|| theorem_4_2(&ter)),
        theorem_4_4: (!ser.is_empty()).then(|| theorem_4_4(&ser)),
    })
}

// ---------------------------------------------------------------------------------------------
// Theorem 4.2.

fn theorem_4_2(groups: &[(Kind, Vec<Obs>)]) -> Theorem42 {
    let tasks: Vec<TerTask> = groups.iter().map(|(_, obs)| ter_task(obs)).collect();
    let verdict = combine(
        tasks.iter().map(|t| (t.task.as_str(), &t.verdict)),
        "every TER n-gram task",
    );
    Theorem42 {
        claim: "Theorem 4.2 (Feng et al.): for an n-gram language, an MDM reaches a token error \
                rate (generative perplexity) within ε of the optimum with a number of sampling \
                steps that does not depend on the sequence length L."
            .into(),
        check: format!(
            "Exact oracle, MDLM ancestral sampling: at each fixed step count the excess TER \
             (TER/optimum − 1) is fitted against ln L by least squares; the check holds when, at \
             every step count, the slope's confidence interval contains 0 or lies below it \
             (Bonferroni intervals at level 1 − {FAMILY_ALPHA}/m over a task's m step counts)."
        ),
        tasks,
        verdict,
    }
}

fn ter_task(obs: &[Obs]) -> TerTask {
    let first = &obs[0];
    let lengths = distinct(obs.iter().map(|o| o.cell.cell.length));
    let steps = distinct(obs.iter().map(steps_of));
    let mut points: Vec<TerPoint> = obs
        .iter()
        .filter_map(|o| {
            let s = o.summary;
            let (ter, opt) = (s.ter?, s.optimal_ter?);
            if !(ter.is_finite() && opt.is_finite() && opt > 0.0) {
                return None;
            }
            let ratio = ter / opt;
            Some(TerPoint {
                steps: steps_of(o),
                length: o.cell.cell.length,
                n: s.n,
                ter,
                ter_ci: s.ter_ci,
                optimal_ter: opt,
                ratio,
                ratio_ci: s.ter_ci.map(|(lo, hi)| (lo / opt, hi / opt)),
                excess: ratio - 1.0,
            })
        })
        .collect();
    points.sort_by_key(|p| (p.steps, p.length));
    let m = steps.len().max(1);
    let family_confidence = 1.0 - FAMILY_ALPHA / m as f64;
    let fits: Vec<TerFit> = steps
        .iter()
        .map(|&st| {
            let at: Vec<&TerPoint> = points.iter().filter(|p| p.steps == st).collect();
            let x: Vec<f64> = at.iter().map(|p| (p.length as f64).ln()).collect();
            let y: Vec<f64> = at.iter().map(|p| p.excess).collect();
            let se: Option<Vec<f64>> = at
                .iter()
                .map(|p| p.ratio_ci.map(|(lo, hi)| (hi - lo) / (2.0 * Z95)))
                .collect();
            let fit = fit_line(&x, &y, se.as_deref(), 0.95);
            let family = fit_line(&x, &y, se.as_deref(), family_confidence);
            let growth = fit.as_ref().map(|f| {
                let (lo, hi) = (x.iter().cloned().fold(f64::INFINITY, f64::min), x.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
                f.slope * (hi - lo)
            });
            let slope_ci_family = family.as_ref().map(|f| f.slope_ci);
            let verdict = match (&fit, slope_ci_family) {
                (Some(f), Some((lo, hi))) if f.n >= 3 => {
                    if lo <= 0.0 {
                        Verdict {
                            status: VerdictStatus::Holds,
                            reason: format!(
                                "slope {} per ln L, {:.1}% CI [{}, {}] {} 0",
                                sig(f.slope),
                                100.0 * family_confidence,
                                sig(lo),
                                sig(hi),
                                if hi < 0.0 { "below" } else { "contains" }
                            ),
                        }
                    } else {
                        Verdict {
                            status: VerdictStatus::DoesNotHold,
                            reason: format!(
                                "excess TER grows with L: slope {} per ln L, {:.1}% CI [{}, {}] above 0",
                                sig(f.slope),
                                100.0 * family_confidence,
                                sig(lo),
                                sig(hi)
                            ),
                        }
                    }
                }
                (Some(f), _) => Verdict {
                    status: VerdictStatus::NotEnoughData,
                    reason: format!(
                        "{} lengths; a verdict needs at least 3 (slope {})",
                        f.n,
                        sig(f.slope)
                    ),
                },
                (None, _) => Verdict {
                    status: VerdictStatus::NotEnoughData,
                    reason: format!(
                        "{} length(s) with a finite TER at {st} steps; a fit needs 2",
                        at.len()
                    ),
                },
            };
            TerFit {
                steps: st,
                fit,
                slope_ci_family,
                family_confidence,
                growth_over_range: growth,
                verdict,
            }
        })
        .collect();
    let names: Vec<String> = fits.iter().map(|f| format!("{} steps", f.steps)).collect();
    let verdict = combine(
        names
            .iter()
            .map(String::as_str)
            .zip(fits.iter().map(|f| &f.verdict)),
        "every step count",
    );
    TerTask {
        task: first.cell.cell.task.name.clone(),
        label: label_of(obs),
        model: first.summary.model.clone(),
        sampler: sampler_label(first.cell),
        seed: first.cell.cell.seed,
        lengths,
        steps,
        points,
        fits,
        verdict,
    }
}

/// Holds when every part holds; does not hold when some part does not; otherwise not enough
/// data. The reason names the parts that decided.
fn combine<'a>(parts: impl Iterator<Item = (&'a str, &'a Verdict)>, what: &str) -> Verdict {
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

// ---------------------------------------------------------------------------------------------
// Theorem 4.4.

fn theorem_4_4(groups: &[(Kind, Vec<Obs>)]) -> Theorem44 {
    let tasks: Vec<SerTask> = groups.iter().map(|(k, obs)| ser_task(*k, obs)).collect();
    let primary: Vec<&SerTask> = tasks
        .iter()
        .filter(|t| t.role == SerRole::Primary)
        .collect();
    let verdict = if primary.is_empty() {
        Verdict {
            status: VerdictStatus::NotEnoughData,
            reason: "no primary task (interval language or sparse HMM) at two or more lengths"
                .into(),
        }
    } else {
        combine(
            primary.iter().map(|t| (t.task.as_str(), &t.verdict)),
            "every primary task",
        )
    };
    Theorem44 {
        claim: "Theorem 4.4 (Feng et al.): there is an HMM language for which an MDM needs a \
                number of sampling steps linear in the sequence length L to reach a low sequence \
                error rate, so its speed advantage over autoregressive decoding disappears."
            .into(),
        check: format!(
            "Exact oracle, MDLM ancestral sampling: for each L, the smallest number of steps with \
             SER ≤ {SER_TARGET} (interpolated between grid points; range from the Wilson 95% \
             bounds), fitted against L by least squares. Holds for a task when R² > {LINEAR_R2} \
             over at least 3 lengths and the slope's 95% CI lies above 0; the theorem's verdict \
             is over the interval language and the sparse HMM, the n-gram SER variants are \
             shown for comparison."
        ),
        target_ser: SER_TARGET,
        tasks,
        verdict,
    }
}

/// The interval language's closed form from its task description:
/// `(violation probability p_v, complete intervals ⌊L/k⌋)`.
fn interval_params(o: &Obs) -> Option<(f64, usize)> {
    let d = &o.cell.task_description.as_ref()?.details;
    let p = d.get("violation_probability")?.as_f64()?;
    let n = d.get("complete_intervals")?.as_u64()? as usize;
    let schedule_ok = o
        .cell
        .cell
        .sampler
        .as_ref()
        .is_some_and(|s| s.schedule.as_deref().is_none_or(|x| x == "loglinear"));
    schedule_ok.then_some((p, n))
}

/// Exact SER of the exact oracle on the interval language with `steps` log-linear steps.
pub fn interval_exact_ser(violation: f64, intervals: usize, steps: usize) -> f64 {
    1.0 - (1.0 - violation / steps as f64).powi(intervals as i32)
}

/// The exact smallest integer number of steps with `SER <= target` on the interval language.
pub fn interval_exact_steps(violation: f64, intervals: usize, target: f64) -> usize {
    if intervals == 0 || violation <= 0.0 {
        return 1;
    }
    let bound = violation / (1.0 - (1.0 - target).powf(1.0 / intervals as f64));
    let mut t = (bound.ceil() as usize).max(1);
    // Guard the rounding of the closed form in both directions.
    while t > 1 && interval_exact_ser(violation, intervals, t - 1) <= target {
        t -= 1;
    }
    while interval_exact_ser(violation, intervals, t) > target {
        t += 1;
    }
    t
}

fn ser_task(kind: Kind, obs: &[Obs]) -> SerTask {
    let first = &obs[0];
    let role = if kind == Kind::NgramSer {
        SerRole::Supplementary
    } else {
        SerRole::Primary
    };
    let lengths = distinct(obs.iter().map(|o| o.cell.cell.length));
    let steps = distinct(obs.iter().map(steps_of));
    let mut exact_by_length: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    let mut points: Vec<SerPoint> = obs
        .iter()
        .filter_map(|o| {
            let ser = o.summary.ser?;
            let exact = if kind == Kind::Interval {
                interval_params(o)
            } else {
                None
            };
            if let Some(e) = exact {
                exact_by_length.insert(o.cell.cell.length, e);
            }
            Some(SerPoint {
                length: o.cell.cell.length,
                steps: steps_of(o),
                n: o.summary.n,
                ser,
                ser_ci: o.summary.ser_ci,
                exact_ser: exact.map(|(p, n)| interval_exact_ser(p, n, steps_of(o))),
            })
        })
        .collect();
    points.sort_by_key(|p| (p.length, p.steps));
    let steps_needed: Vec<StepsNeeded> = lengths
        .iter()
        .map(|&l| {
            let at: Vec<&SerPoint> = points.iter().filter(|p| p.length == l).collect();
            let grid: Vec<(f64, f64)> = at.iter().map(|p| (p.steps as f64, p.ser)).collect();
            let lower: Vec<(f64, f64)> = at
                .iter()
                .map(|p| (p.steps as f64, p.ser_ci.map_or(p.ser, |c| c.0)))
                .collect();
            let upper: Vec<(f64, f64)> = at
                .iter()
                .map(|p| (p.steps as f64, p.ser_ci.map_or(p.ser, |c| c.1)))
                .collect();
            let point = crossing(&grid, SER_TARGET);
            let exact_steps = exact_by_length
                .get(&l)
                .map(|&(p, n)| interval_exact_steps(p, n, SER_TARGET));
            let note = match &point {
                Crossing::At { .. } => None,
                Crossing::NeverAbove => Some(format!(
                    "SER ≤ {SER_TARGET} already at the smallest grid step"
                )),
                Crossing::NotReached => Some(format!(
                    "SER ≤ {SER_TARGET} not reached within the grid (largest step {})",
                    at.last().map_or(0, |p| p.steps)
                )),
                Crossing::Empty => Some("no measured SER at this length".into()),
            };
            StepsNeeded {
                length: l,
                steps: point.value(),
                steps_low: crossing(&lower, SER_TARGET).value(),
                steps_high: crossing(&upper, SER_TARGET).value(),
                bracket: point.bracket(),
                exact_steps,
                note,
            }
        })
        .collect();
    let reached: Vec<&StepsNeeded> = steps_needed.iter().filter(|s| s.steps.is_some()).collect();
    let x: Vec<f64> = reached.iter().map(|s| s.length as f64).collect();
    let y: Vec<f64> = reached.iter().map(|s| s.steps.unwrap_or(0.0)).collect();
    let se: Option<Vec<f64>> = reached
        .iter()
        .map(|s| match (s.steps_low, s.steps_high) {
            (Some(lo), Some(hi)) => Some(((hi - lo) / (2.0 * Z95)).max(0.0)),
            _ => None,
        })
        .collect();
    let fit = fit_line(&x, &y, se.as_deref(), 0.95);
    let lx: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let ly: Vec<f64> = y.iter().map(|v| v.ln()).collect();
    let lse: Option<Vec<f64>> = se
        .as_ref()
        .map(|se| se.iter().zip(&y).map(|(s, v)| s / v).collect());
    let power_fit = fit_line(&lx, &ly, lse.as_deref(), 0.95);
    let exact_fit = if kind == Kind::Interval && !exact_by_length.is_empty() {
        let ex: Vec<f64> = steps_needed
            .iter()
            .filter(|s| s.exact_steps.is_some())
            .map(|s| s.length as f64)
            .collect();
        let ey: Vec<f64> = steps_needed
            .iter()
            .filter_map(|s| s.exact_steps.map(|v| v as f64))
            .collect();
        fit_line(&ex, &ey, None, 0.95)
    } else {
        None
    };
    let unreached: Vec<usize> = steps_needed
        .iter()
        .filter(|s| s.steps.is_none())
        .map(|s| s.length)
        .collect();
    let verdict = match &fit {
        Some(f) if f.n >= 3 => {
            let r2 = f.r_squared.unwrap_or(0.0);
            let linear = r2 > LINEAR_R2;
            let positive = f.slope_ci.0 > 0.0;
            let text = format!(
                "steps ≈ {} + {}·L (slope 95% CI [{}, {}]), R² = {:.3} over {} lengths",
                sig(f.intercept),
                sig(f.slope),
                sig(f.slope_ci.0),
                sig(f.slope_ci.1),
                r2,
                f.n
            );
            let skipped = if unreached.is_empty() {
                String::new()
            } else {
                format!("; lengths without an estimate: {unreached:?}")
            };
            if linear && positive {
                Verdict {
                    status: VerdictStatus::Holds,
                    reason: format!("{text}{skipped}"),
                }
            } else {
                Verdict {
                    status: VerdictStatus::DoesNotHold,
                    reason: format!(
                        "{text}{skipped}: {}",
                        match (linear, positive) {
                            (false, false) => "not linear and no positive slope",
                            (false, true) => "not linear",
                            _ => "no positive slope",
                        }
                    ),
                }
            }
        }
        Some(f) => Verdict {
            status: VerdictStatus::NotEnoughData,
            reason: format!(
                "{} lengths with an estimate; a verdict needs at least 3 (slope {}){}",
                f.n,
                sig(f.slope),
                if unreached.is_empty() {
                    String::new()
                } else {
                    format!("; lengths without an estimate: {unreached:?}")
                }
            ),
        },
        None => Verdict {
            status: VerdictStatus::NotEnoughData,
            reason: format!(
                "{} length(s) with an estimate; a fit needs 2{}",
                reached.len(),
                if unreached.is_empty() {
                    String::new()
                } else {
                    format!(" (widen the step grid: no estimate at {unreached:?})")
                }
            ),
        },
    };
    SerTask {
        task: first.cell.cell.task.name.clone(),
        label: label_of(obs),
        kind: kind.name().into(),
        role,
        model: first.summary.model.clone(),
        sampler: sampler_label(first.cell),
        seed: first.cell.cell.seed,
        lengths,
        steps,
        points,
        steps_needed,
        fit,
        power_fit,
        exact_fit,
        verdict,
    }
}

/// Where a measured SER curve crosses the target.
#[derive(Debug, Clone, PartialEq)]
enum Crossing {
    /// Between grid steps `lo` (SER above the target) and `hi` (at or below it from there on).
    At {
        value: f64,
        lo: usize,
        hi: usize,
    },
    /// At or below the target already at the first grid step.
    NeverAbove,
    /// Above the target at the last grid step.
    NotReached,
    Empty,
}

impl Crossing {
    fn value(&self) -> Option<f64> {
        match self {
            Crossing::At { value, .. } => Some(*value),
            _ => None,
        }
    }
    fn bracket(&self) -> (Option<usize>, Option<usize>) {
        match self {
            Crossing::At { lo, hi, .. } => (Some(*lo), Some(*hi)),
            _ => (None, None),
        }
    }
}

/// The crossing of `(steps, ser)` points (ascending steps) with `target` (module docs).
fn crossing(curve: &[(f64, f64)], target: f64) -> Crossing {
    let Some(last) = curve.last() else {
        return Crossing::Empty;
    };
    if last.1 > target {
        return Crossing::NotReached;
    }
    // The first index from which every point is at or below the target.
    let mut j = curve.len() - 1;
    while j > 0 && curve[j - 1].1 <= target {
        j -= 1;
    }
    if j == 0 {
        return Crossing::NeverAbove;
    }
    let (t0, s0) = curve[j - 1];
    let (t1, s1) = curve[j];
    let (x0, x1) = (t0.ln(), t1.ln());
    let transformed = |s: f64| (-(1.0 - s).ln()).ln();
    let x = if s0 < 1.0 && s1 > 0.0 {
        let (y0, y1, yt) = (transformed(s0), transformed(s1), transformed(target));
        x0 + (yt - y0) * (x1 - x0) / (y1 - y0)
    } else {
        x0 + (target - s0) * (x1 - x0) / (s1 - s0)
    };
    Crossing::At {
        value: x.exp().clamp(t0, t1),
        lo: t0 as usize,
        hi: t1 as usize,
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics.

/// The normal 97.5% quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Ordinary least squares of `y` on `x` (module docs, "Statistics"); `se` are the points' own
/// standard errors, when known. `None` with fewer than two points or a constant `x`.
pub fn fit_line(x: &[f64], y: &[f64], se: Option<&[f64]>, confidence: f64) -> Option<LinearFit> {
    let n = x.len();
    if n < 2 || y.len() != n || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let syy: f64 = y.iter().map(|v| (v - my).powi(2)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let sse: f64 = x
        .iter()
        .zip(y)
        .map(|(a, b)| (b - intercept - slope * a).powi(2))
        .sum();
    let r_squared = (syy > 0.0).then(|| (1.0 - sse / syy).clamp(0.0, 1.0));
    let df = n - 2;
    let tail = 0.5 + confidence / 2.0;
    let se_resid = (df > 0).then(|| (sse / df as f64 / sxx).sqrt());
    let se_meas = se
        .filter(|s| s.len() == n && s.iter().all(|v| v.is_finite()))
        .map(|s| {
            x.iter()
                .zip(s)
                .map(|(a, e)| ((a - mx) / sxx * e).powi(2))
                .sum::<f64>()
                .sqrt()
        });
    let half_resid = se_resid.map(|s| t_quantile(tail, df as f64) * s);
    let half_meas = se_meas.map(|s| normal_quantile(tail) * s);
    let half = match (half_resid, half_meas) {
        (Some(a), Some(b)) => a.max(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => 0.0,
    };
    Some(LinearFit {
        slope,
        slope_ci: (slope - half, slope + half),
        confidence,
        intercept,
        r_squared: if n == 2 { Some(1.0) } else { r_squared },
        n,
        df,
        slope_se_residual: se_resid,
        slope_se_measurement: se_meas,
    })
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, 9 terms; relative error below 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function `I_x(a, b)`.
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Student's t CDF with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The regularized upper incomplete gamma function `Q(a, x)`.
fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        // Series for P.
        let (mut ap, mut sum) = (a, 1.0 / a);
        let mut del = sum;
        for _ in 0..10_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        1.0 - sum * ln_front.exp()
    } else {
        // Continued fraction for Q (modified Lentz).
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        ln_front.exp() * h
    }
}

/// The standard normal CDF, `½·erfc(−z/√2)`.
pub fn normal_cdf(z: f64) -> f64 {
    let erfc = |x: f64| {
        if x >= 0.0 {
            gamma_q(0.5, x * x)
        } else {
            2.0 - gamma_q(0.5, x * x)
        }
    };
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Inverts an increasing CDF by bracketing and bisection.
fn invert(cdf: impl Fn(f64) -> f64, p: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    let (sign, p) = if p < 0.5 { (-1.0, 1.0 - p) } else { (1.0, p) };
    let mut hi = 1.0;
    while cdf(hi) < p && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-15 * hi {
            break;
        }
    }
    sign * 0.5 * (lo + hi)
}

/// The `p` quantile of Student's t with `df` degrees of freedom (`0 < p < 1`, `df > 0`).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    invert(|t| t_cdf(t, df), p)
}

/// The `p` quantile of the standard normal distribution (`0 < p < 1`).
pub fn normal_quantile(p: f64) -> f64 {
    invert(normal_cdf, p)
}

/// Four significant digits for the verdict texts.
fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{v:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b} (tolerance {tol})");
    }

    #[test]
    fn t_quantiles_match_published_tables() {
        // Two-sided 95% (p = 0.975) and 99% (p = 0.995) critical values.
        for (df, q975, q995) in [
            (1.0, 12.706_204_736, 63.656_741_163),
            (2.0, 4.302_652_730, 9.924_843_201),
            (3.0, 3.182_446_305, 5.840_909_310),
            (5.0, 2.570_581_836, 4.032_142_984),
            (10.0, 2.228_138_852, 3.169_272_673),
            (30.0, 2.042_272_456, 2.749_995_652),
            (120.0, 1.979_930_405, 2.617_421_145),
        ] {
            close(t_quantile(0.975, df), q975, 1e-7 * q975);
            close(t_quantile(0.995, df), q995, 1e-7 * q995);
            close(t_quantile(0.025, df), -q975, 1e-7 * q975);
        }
        // Closed forms: df = 1 is Cauchy (tan), df = 2 is t = (2p−1)·sqrt(2/(4p(1−p))).
        for p in [0.6, 0.9, 0.99, 0.9995] {
            close(
                t_quantile(p, 1.0),
                (std::f64::consts::PI * (p - 0.5)).tan(),
                1e-9 * (std::f64::consts::PI * (p - 0.5)).tan(),
            );
            let t2 = (2.0 * p - 1.0) * (2.0 / (4.0 * p * (1.0 - p))).sqrt();
            close(t_quantile(p, 2.0), t2, 1e-9 * t2);
        }
        close(t_quantile(0.5, 7.0), 0.0, 0.0);
    }

    #[test]
    fn normal_quantiles_match_published_values() {
        close(normal_quantile(0.975), Z95, 1e-12);
        close(normal_quantile(0.995), 2.575_829_303_549, 1e-10);
        close(normal_quantile(0.9995), 3.290_526_731_492, 1e-10);
        close(normal_quantile(0.841_344_746_068_543), 1.0, 1e-10);
        close(normal_cdf(-1.0), 0.158_655_253_931_457, 1e-14);
        // Student's t approaches the normal.
        close(t_quantile(0.975, 1e6), Z95, 1e-5);
    }

    #[test]
    fn incomplete_beta_closed_forms() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 − (1−x)^b.
        for x in [0.01, 0.3, 0.5, 0.77, 0.999] {
            close(incomplete_beta(1.0, 1.0, x), x, 1e-14);
            close(incomplete_beta(3.5, 1.0, x), x.powf(3.5), 1e-13);
            close(
                incomplete_beta(1.0, 2.5, x),
                1.0 - (1.0 - x).powf(2.5),
                1e-13,
            );
        }
        // Gamma function: Γ(5) = 24, Γ(1/2) = √π.
        close(ln_gamma(5.0), 24f64.ln(), 1e-13);
        close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-13);
    }

    #[test]
    fn least_squares_matches_hand_computation() {
        // y = 1 + 2x exactly: slope 2, intercept 1, R² 1, zero-width residual interval.
        let x = [1.0, 2.0, 3.0, 4.0];
        let y = [3.0, 5.0, 7.0, 9.0];
        let f = fit_line(&x, &y, None, 0.95).unwrap();
        close(f.slope, 2.0, 1e-12);
        close(f.intercept, 1.0, 1e-12);
        close(f.r_squared.unwrap(), 1.0, 1e-12);
        close(f.slope_ci.1 - f.slope_ci.0, 0.0, 1e-12);
        // A textbook case: x = 1..5, y = (2, 4, 5, 4, 5): slope 0.6, intercept 2.2,
        // SSE = 2.4, se(slope) = sqrt(2.4/3/10) = 0.28284, R² = 3.6/6 = 0.6,
        // 95% CI 0.6 ± 3.182446·0.28284.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [2.0, 4.0, 5.0, 4.0, 5.0];
        let f = fit_line(&x, &y, None, 0.95).unwrap();
        close(f.slope, 0.6, 1e-12);
        close(f.intercept, 2.2, 1e-12);
        close(f.r_squared.unwrap(), 0.6, 1e-12);
        assert_eq!((f.n, f.df), (5, 3));
        let se = (2.4f64 / 3.0 / 10.0).sqrt();
        close(f.slope_se_residual.unwrap(), se, 1e-12);
        close(f.slope_ci.0, 0.6 - 3.182_446_305 * se, 1e-8);
        close(f.slope_ci.1, 0.6 + 3.182_446_305 * se, 1e-8);
        // The measurement interval wins when it is wider: two points with known errors.
        let f = fit_line(&[0.0, 2.0], &[1.0, 2.0], Some(&[0.3, 0.4]), 0.95).unwrap();
        close(f.slope, 0.5, 1e-12);
        close(f.slope_se_measurement.unwrap(), 0.25, 1e-12); // sqrt(0.3² + 0.4²) / 2
        close(f.slope_ci.0, 0.5 - Z95 * 0.25, 1e-12);
        assert_eq!(f.df, 0);
        assert!(fit_line(&[1.0], &[1.0], None, 0.95).is_none());
        assert!(fit_line(&[1.0, 1.0], &[1.0, 2.0], None, 0.95).is_none());
    }

    #[test]
    fn crossing_interpolates_exactly_for_compounding_failures() {
        // SER_T = 1 − exp(−c/T) is a straight line in (ln T, ln(−ln(1−SER))): the
        // interpolated crossing is exact between any two grid points that bracket it.
        let c: f64 = 30.0;
        let curve: Vec<(f64, f64)> = [4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0]
            .iter()
            .map(|&t| (t, 1.0 - (-c / t).exp()))
            .collect();
        let exact = c / -(0.9f64).ln();
        let got = crossing(&curve, 0.1);
        close(got.value().unwrap(), exact, 1e-9 * exact);
        assert_eq!(got.bracket(), (Some(256), Some(512)));
        assert_eq!(crossing(&curve[..3], 0.1), Crossing::NotReached);
        assert_eq!(crossing(&curve[7..], 0.1), Crossing::NeverAbove);
        // A noisy dip below the target before the real crossing is skipped.
        let noisy = [
            (4.0, 0.5),
            (8.0, 0.09),
            (16.0, 0.2),
            (32.0, 0.05),
            (64.0, 0.0),
        ];
        let got = crossing(&noisy, 0.1);
        assert_eq!(got.bracket(), (Some(16), Some(32)));
        // SER 0 at the upper end: linear in ln T.
        let got = crossing(&[(8.0, 0.3), (16.0, 0.0)], 0.1).value().unwrap();
        close(got, (8f64.ln() + (0.2 / 0.3) * 2f64.ln()).exp(), 1e-9);
    }

    #[test]
    fn interval_closed_form_steps() {
        // Parity (p_v = 1/2), 64 intervals: T ≥ 0.5 / (1 − 0.9^(1/64)) = 303.9…
        let t = interval_exact_steps(0.5, 64, 0.1);
        assert_eq!(t, 304);
        assert!(interval_exact_ser(0.5, 64, t) <= 0.1);
        assert!(interval_exact_ser(0.5, 64, t - 1) > 0.1);
        // One interval: SER_T = p_v/T ≤ 0.1 ⇔ T ≥ 5.
        assert_eq!(interval_exact_steps(0.5, 1, 0.1), 5);
    }
}
