//! The verdict of one MDM series: from how many steps it matches its AR baseline (or the
//! exact optimum without one), and what it costs there.

use super::{anchor, fmt_num, overlaps, series_label};
use crate::filter::RunFilters;
use crate::metrics::{CellSummary, NO_AR_RULE};
use crate::results::CellStatus;
use serde::Serialize;

mod text;

pub use text::{basis_line, headline_metrics, select_headline, Headline, MetricVerdict};

/// What a verdict judges: TER and SER (formal tasks, against AR or the exact optimum) or the
/// task's headline metrics (text and code tasks, against AR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Formal,
    Text,
}

/// The verdict for one model × sampler series of a task.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub task: String,
    pub anchor: String,
    pub series: String,
    pub kind: VerdictKind,
    /// Every cell of the series replayed generations made elsewhere (no network call): it
    /// has no step count or speed to compare.
    pub replay: bool,
    /// Text tasks: each headline metric against the baseline (empty for formal tasks).
    pub metrics: Vec<MetricVerdict>,
    /// The quality at the fewest steps matches the baseline, so its speedup compares like
    /// with like; otherwise the table leaves that speedup out.
    pub fewest_matches: bool,
    /// Text tasks: every headline metric sits at its worst value in the baseline and the
    /// series alike ("both 0%"), so nothing can be judged.
    pub no_signal: bool,
    pub baseline: Option<String>,
    pub baseline_unit: Option<String>,
    /// `model · sampler` of the baseline cell.
    pub baseline_label: Option<String>,
    /// Why that baseline (or why none): see `metrics::resolve_baselines`.
    pub baseline_rule: Option<String>,
    pub baseline_ter: Option<f64>,
    pub baseline_ser: Option<f64>,
    pub optimal_ter: Option<f64>,
    /// Fewest steps from which TER (SER) matches the baseline at every larger step count.
    pub ter_match_steps: Option<usize>,
    pub ser_match_steps: Option<usize>,
    /// Fewest steps matching in both, and the speedup and NFE there.
    pub match_steps: Option<usize>,
    pub match_speedup: Option<f64>,
    pub match_nfe: Option<f64>,
    pub fewest_steps: Option<usize>,
    pub fewest_ter: Option<f64>,
    pub fewest_ter_infinite: bool,
    pub fewest_ser: Option<f64>,
    pub fewest_speedup: Option<f64>,
    pub sentence: String,
    /// No AR baseline although one was expected or nothing else can stand in for it (see
    /// [`baseline_warnings`]): the report flags the row instead of a quiet "none (optimum)".
    pub baseline_missing: bool,
}

/// One series' points (ascending steps) and what they are judged against.
struct Judged<'a> {
    points: &'a [&'a CellSummary],
    baseline: Option<&'a CellSummary>,
    optimal_ter: Option<f64>,
}

impl Judged<'_> {
    /// TER matches: inside the baseline's CI, or the optimum inside the point's CI.
    fn ter_ok(&self, r: &CellSummary) -> bool {
        match self.baseline {
            Some(b) => r.ter.is_some() && overlaps(r.ter_ci, b.ter_ci),
            None => match (r.ter_ci, self.optimal_ter) {
                (Some((lo, hi)), Some(o)) => lo <= o && o <= hi,
                _ => false,
            },
        }
    }

    /// SER matches: overlapping the baseline's CI, or 0 inside the point's CI.
    fn ser_ok(&self, r: &CellSummary) -> bool {
        match self.baseline {
            Some(b) => overlaps(r.ser_ci, b.ser_ci),
            None => r.ser_ci.is_some_and(|(lo, _)| lo == 0.0),
        }
    }

    /// Fewest steps from which the test holds at every larger step count.
    fn from(&self, test: impl Fn(&CellSummary) -> bool) -> Option<usize> {
        let mut best = None;
        for r in self.points.iter().rev() {
            if test(r) {
                best = r.steps;
            } else {
                break;
            }
        }
        best
    }

    /// The finite point closest to `target`, for "never" verdicts.
    fn closest(
        &self,
        value: impl Fn(&CellSummary) -> Option<f64>,
        target: Option<f64>,
        digits: usize,
    ) -> String {
        let Some(target) = target else {
            return String::new();
        };
        self.points
            .iter()
            .filter_map(|r| value(r).filter(|v| v.is_finite()).map(|v| (r, v)))
            .min_by(|a, b| (a.1 - target).abs().total_cmp(&(b.1 - target).abs()))
            .map(|(r, v)| {
                format!(
                    " (closest: {} at {} vs {})",
                    fmt_num(Some(v), digits),
                    steps_word(r.steps.unwrap_or(0)),
                    fmt_num(Some(target), digits)
                )
            })
            .unwrap_or_default()
    }

    /// "TER within the AR's 95% CI from 8 steps on", and the like.
    fn describe(&self, matched: Option<usize>, what: &str, closest: String) -> String {
        let within = if self.baseline.is_some() {
            "within the AR's 95% CI"
        } else {
            "consistent with the optimum"
        };
        let fewest = self.points[0].steps;
        match matched {
            Some(s) if Some(s) == fewest && self.points.len() > 1 => {
                format!("{what} {within} at every step count")
            }
            Some(s) if Some(s) == fewest => format!("{what} {within}"),
            Some(s) => format!("{what} {within} from {} on", steps_word(s)),
            None => format!("{what} never {within}{closest}"),
        }
    }
}

/// A cell's speedup where it means something: measured, positive, and from a cell that made
/// network calls (a replay's "0.00×" is not a speed).
fn speed(r: &CellSummary) -> Option<f64> {
    r.speedup
        .filter(|s| s.is_finite() && *s > 0.0)
        .filter(|_| r.nfe.is_some_and(|n| n > 0.0))
}

/// A series whose cells made no network call: generations replayed from a file.
/// Every point replayed (no network call made): one definition with the plots and tables.
fn is_replay(points: &[&CellSummary]) -> bool {
    points.iter().all(|r| super::replayed(r))
}

fn steps_word(s: usize) -> String {
    if s == 1 {
        "1 step".to_string()
    } else {
        format!("{s} steps")
    }
}

/// What the series is judged against, for the sentence.
fn against(baseline: Option<&CellSummary>, rule: Option<&str>, qualify: bool) -> String {
    match (baseline, rule) {
        (Some(b), Some(rule)) => format!("AR ({}; {rule})", series_label(b, qualify, qualify)),
        (Some(b), None) => format!("AR ({})", series_label(b, qualify, qualify)),
        (None, Some(rule)) => format!("the exact optimum (no AR baseline: {rule})"),
        (None, None) => "the exact optimum (no AR cell)".to_string(),
    }
}

/// ". With both, from 8 steps: 8 network calls per sample (AR: 64), 1.20× AR's tokens/s".
fn matched_clause(m: &CellSummary, baseline: Option<&CellSummary>) -> String {
    format!(
        ". With both, from {}: {} network calls per sample{}",
        steps_word(m.steps.unwrap_or(0)),
        fmt_num(m.nfe, 1),
        match (speed(m), baseline.and_then(|b| b.nfe)) {
            (Some(sp), Some(bn)) =>
                format!(" (AR: {}), {:.2}× AR's tokens/s", fmt_num(Some(bn), 0), sp),
            (Some(sp), None) => format!(", {sp:.2}× AR's tokens/s"),
            _ => String::new(),
        }
    )
}

/// ". At 1 step: TER …, SER …, 3.1× AR's tokens/s" (`matches`: at AR's quality there; the
/// speed of worse samples is said to be so).
fn fewest_clause(fewest: &CellSummary, matches: bool) -> String {
    format!(
        ". At {}: TER {}, SER {}{}",
        steps_word(fewest.steps.unwrap_or(0)),
        match fewest.ter {
            Some(t) => fmt_num(Some(t), 3),
            None if fewest.zero_probability_samples > 0 => format!(
                "∞ ({} of {} samples with q = 0)",
                fewest.zero_probability_samples, fewest.n
            ),
            None => "—".into(),
        },
        fmt_num(fewest.ser, 3),
        speed(fewest)
            .map(|s| if matches {
                format!(", {s:.2}× AR's tokens/s")
            } else {
                format!(", {s:.2}× AR's tokens/s at a quality that does not match AR's")
            })
            .unwrap_or_default()
    )
}

/// A warning when some step counts have TER significantly below the optimum.
fn below_optimum_clause(points: &[&CellSummary], optimal_ter: Option<f64>) -> String {
    let Some(o) = optimal_ter else {
        return String::new();
    };
    let below: Vec<String> = points
        .iter()
        .filter(|r| r.ter_ci.is_some_and(|(_, hi)| hi < o))
        .map(|r| r.steps.unwrap_or(0).to_string())
        .collect();
    if below.is_empty() {
        return String::new();
    }
    format!(
        " TER below the optimum (at {} steps): those samples are less diverse than the language — generative perplexity rewards repetition.",
        below.join(", ")
    )
}

/// The verdict of one MDM series against its AR baseline (or the exact optimum without one):
/// on TER and SER for a formal task, on `headline` for a text task (`Some`).
pub(super) fn verdict(
    task: &str,
    label: &str,
    points: &[&CellSummary],
    baseline: Option<&CellSummary>,
    optimal_ter: Option<f64>,
    qualify_baseline: bool,
    headline: Option<&[Headline]>,
) -> Verdict {
    if let Some(headline) = headline {
        let rule = points[0].baseline_rule.as_deref();
        let against = match baseline {
            Some(b) => against(Some(b), rule, qualify_baseline),
            None => "no AR baseline".to_string(),
        };
        return text::text_verdict(task, label, points, baseline, headline, against);
    }
    let judged = Judged {
        points,
        baseline,
        optimal_ter,
    };
    let ter_match = judged.from(|r| judged.ter_ok(r));
    let ser_match = judged.from(|r| judged.ser_ok(r));
    let both = judged.from(|r| judged.ter_ok(r) && judged.ser_ok(r));
    let matched = both.and_then(|s| points.iter().copied().find(|r| r.steps == Some(s)));
    let fewest = points[0];
    let rule = fewest.baseline_rule.clone();
    let ter_target = baseline.and_then(|b| b.ter).or(optimal_ter);
    let ser_target = baseline.and_then(|b| b.ser).or(Some(0.0));
    let mut sentence = format!(
        "{label} vs {}: {}; {}",
        against(baseline, rule.as_deref(), qualify_baseline),
        judged.describe(ter_match, "TER", judged.closest(|r| r.ter, ter_target, 3)),
        judged.describe(ser_match, "SER", judged.closest(|r| r.ser, ser_target, 3))
    );
    if let Some(m) = matched {
        sentence.push_str(&matched_clause(m, baseline));
    }
    let fewest_matches = judged.ter_ok(fewest) && judged.ser_ok(fewest) && both == fewest.steps;
    if points.len() > 1 || matched.is_none() {
        sentence.push_str(&fewest_clause(fewest, fewest_matches));
    }
    sentence.push('.');
    sentence.push_str(&below_optimum_clause(points, optimal_ter));
    Verdict {
        task: task.to_string(),
        anchor: format!("task-{}", anchor(task)),
        series: label.to_string(),
        kind: VerdictKind::Formal,
        replay: false,
        metrics: Vec::new(),
        fewest_matches,
        no_signal: false,
        baseline: baseline.map(|b| b.key.clone()),
        baseline_unit: baseline.map(|b| b.unit.clone()),
        baseline_label: baseline
            .map(|b| format!("{} · {}", b.model, b.sampler.as_deref().unwrap_or("?"))),
        baseline_rule: rule,
        baseline_ter: baseline.and_then(|b| b.ter),
        baseline_ser: baseline.and_then(|b| b.ser),
        optimal_ter,
        ter_match_steps: ter_match,
        ser_match_steps: ser_match,
        match_steps: both,
        match_speedup: matched.and_then(speed),
        match_nfe: matched.and_then(|m| m.nfe),
        fewest_steps: fewest.steps,
        fewest_ter: fewest.ter,
        fewest_ter_infinite: fewest.ter.is_none() && fewest.zero_probability_samples > 0,
        fewest_ser: fewest.ser,
        fewest_speedup: speed(fewest),
        sentence,
        baseline_missing: false,
    }
}

/// One verdict table: the formal tasks' (TER and SER), or the text tasks sharing one set of
/// headline metrics (its columns).
#[derive(Debug, Clone, Serialize)]
pub struct VerdictTable {
    pub kind: VerdictKind,
    /// The headline metrics' labels, in column order (empty for a formal table).
    pub metrics: Vec<String>,
    pub rows: Vec<Verdict>,
}

/// The verdicts as tables, in the order their first rows come: one for the formal tasks, one
/// per set of headline metrics for the text tasks, so that no column is foreign to a row.
pub fn tables(verdicts: &[Verdict]) -> Vec<VerdictTable> {
    let mut out: Vec<VerdictTable> = Vec::new();
    for v in verdicts {
        let metrics: Vec<String> = v.metrics.iter().map(|m| m.label.clone()).collect();
        match out
            .iter_mut()
            .find(|t| t.kind == v.kind && t.metrics == metrics)
        {
            Some(t) => t.rows.push(v.clone()),
            None => out.push(VerdictTable {
                kind: v.kind,
                metrics,
                rows: vec![v.clone()],
            }),
        }
    }
    out
}

/// The one line a run with no AR model at all gets in place of a verdict table with an empty
/// baseline column (an oracle-only suite, such as the theory suite); `None` when some verdict
/// has a baseline or there is none.
pub fn no_ar_line(verdicts: &[Verdict]) -> Option<String> {
    if verdicts.is_empty() || verdicts.iter().any(|v| v.baseline.is_some()) {
        return None;
    }
    let formal = verdicts.iter().any(|v| v.kind == VerdictKind::Formal);
    Some(if formal {
        "the reference is each task's exact optimum — TER against exp(H/L), the lowest any model can reach, SER against 0 — so there is no speedup; the table per series is one click below."
    } else {
        "its text and code series have no reference to be judged against and no speedup; their values are below."
    }
    .to_string())
}

/// A task whose diffusion series have no AR baseline where that is a problem, not the suite's
/// design, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineWarning {
    pub task: String,
    pub message: String,
}

/// Per task, a warning when some finished diffusion series has no AR baseline and
/// * the suite named one, or several AR models make it ambiguous (the rule says which), or
/// * some cell of the task failed (the AR cell may be among them), or
/// * the run was filtered by model (`--models` may have left the AR model out), or
/// * the task has no exact optimum to judge against instead (text and code tasks).
///
/// Only a formal task in an unfiltered run whose suite has no AR model for it at all is judged
/// against its exact optimum without a warning: that is what such a suite asks for.
pub fn baseline_warnings(summary: &[CellSummary], filters: &RunFilters) -> Vec<BaselineWarning> {
    let mut tasks: Vec<&str> = Vec::new();
    for s in summary {
        if !tasks.contains(&s.task.as_str()) {
            tasks.push(&s.task);
        }
    }
    tasks
        .into_iter()
        .filter_map(|task| {
            let rows: Vec<&CellSummary> = summary.iter().filter(|s| s.task == task).collect();
            let orphans: Vec<&CellSummary> = rows
                .iter()
                .copied()
                .filter(|s| s.status == CellStatus::Ok && s.speedup_baseline.is_none())
                .filter(|s| s.baseline_rule.is_some() && s.steps.is_some())
                .collect();
            let first = orphans.first()?;
            let failed: Vec<&str> = rows
                .iter()
                .filter(|s| s.status == CellStatus::Failed)
                .map(|s| s.key.as_str())
                .collect();
            let mut reasons: Vec<String> = Vec::new();
            let mut rules: Vec<&str> = orphans
                .iter()
                .filter_map(|s| s.baseline_rule.as_deref())
                .filter(|r| *r != NO_AR_RULE)
                .collect();
            rules.sort_unstable();
            rules.dedup();
            reasons.extend(rules.iter().map(|r| r.to_string()));
            if !failed.is_empty() {
                reasons.push(format!(
                    "{} cell(s) of this task failed ({}{}), the AR cell possibly among them: see the failed cells, fix the cause and `run --resume`",
                    failed.len(),
                    failed.iter().take(3).copied().collect::<Vec<_>>().join(", "),
                    if failed.len() > 3 { ", …" } else { "" }
                ));
            }
            if !filters.models.is_empty() {
                reasons.push(format!(
                    "the run was filtered with `{}`, which may have left the AR model out",
                    filters.describe()
                ));
            }
            let fallback = if first.optimal_ter.is_some() {
                "the exact optimum (TER) and zero (SER)"
            } else {
                reasons.push(
                    "this task has no exact optimum to stand in for AR; add an autoregressive model (or a one-token-per-step sampler of the same model) to the suite".into(),
                );
                "nothing (their headline metrics are shown without a reference)"
            };
            if reasons.is_empty() {
                return None;
            }
            Some(BaselineWarning {
                task: task.to_string(),
                message: format!(
                    "{task}: {} diffusion cell(s) have no AR baseline ({}); they are judged against {fallback}, not AR, and have no speedup.",
                    orphans.len(),
                    reasons.join("; ")
                ),
            })
        })
        .collect()
}
