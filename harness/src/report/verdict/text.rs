//! The verdict of a text or code task's series: its headline metrics (accuracy, step error,
//! pass@k, as the task declares them) against the AR baseline's, never TER or SER.

use super::{is_replay, speed, steps_word, Verdict, VerdictKind};
use crate::metrics::CellSummary;
use crate::registry::{Aggregate, Better, MetricDef};
use crate::report::{anchor, fmt_num, overlaps};
use dlm_plugin_api::{MetricDecl, TaskDescription};
use serde::Serialize;

/// A headline metric of a task, as its verdict and summary judge it.
#[derive(Debug, Clone)]
pub struct Headline {
    pub def: MetricDef,
}

impl Headline {
    /// A share (rate or pass@k): printed as a percentage in sentences; 0 (or 1 for a
    /// lower-is-better rate) is its worst value.
    fn is_share(&self) -> bool {
        matches!(self.def.aggregate, Aggregate::Rate | Aggregate::PassAtK(_))
    }

    /// The value no sample can be worse than, where the metric has one.
    fn worst(&self) -> Option<f64> {
        match (self.def.better, self.def.aggregate) {
            (Better::Higher, Aggregate::Rate | Aggregate::PassAtK(_)) => Some(0.0),
            (Better::Lower, Aggregate::Rate) => Some(1.0),
            _ => None,
        }
    }

    /// `a`'s CI lies entirely on the better side of `b`'s.
    fn better_than(&self, a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> bool {
        match (a, b, self.def.better) {
            (Some((a0, _)), Some((_, b1)), Better::Higher) => a0 > b1,
            (Some((_, a1)), Some((b0, _)), Better::Lower) => a1 < b0,
            _ => false,
        }
    }

    /// "0.410 [0.350, 0.470]" in the metric's digits.
    pub fn show(&self, r: &CellSummary) -> Option<String> {
        let v = self.def.value(r)?;
        let d = self.def.digits;
        Some(match self.def.ci(r) {
            Some((lo, hi)) => format!(
                "{} [{}, {}]",
                fmt_num(Some(v), d),
                fmt_num(Some(lo), d),
                fmt_num(Some(hi), d)
            ),
            None => fmt_num(Some(v), d),
        })
    }

    /// "41% [35, 47]" for shares, else as [`Headline::show`].
    pub fn show_short(&self, r: &CellSummary) -> Option<String> {
        if !self.is_share() {
            return self.show(r);
        }
        let pct = |x: f64| format!("{:.0}", 100.0 * x);
        let v = self.def.value(r)?;
        Some(match self.def.ci(r) {
            Some((lo, hi)) => format!("{}% [{}, {}]", pct(v), pct(lo), pct(hi)),
            None => format!("{}%", pct(v)),
        })
    }
}

/// The task's headline metrics: those its description marks ([`MetricDecl::headline`]), else
/// (a run written before API 1.6, or a task that marks none) its higher-is-better metrics;
/// only those with a value in some finished cell, so no column is always "—".
pub fn headline_metrics<'a>(
    descriptions: impl Iterator<Item = &'a TaskDescription>,
    ok: &[&CellSummary],
) -> Vec<Headline> {
    let mut declared: Vec<&MetricDecl> = Vec::new();
    for d in descriptions.flat_map(|t| t.metrics.iter()) {
        if !declared.iter().any(|m| m.name == d.name) {
            declared.push(d);
        }
    }
    select_headline(declared, ok)
}

/// [`headline_metrics`]'s rule on metrics already gathered (the terminal table gathers them
/// from the summary rows): the marked ones, else the higher-is-better ones, each only with a
/// value in some model cell.
pub fn select_headline(declared: Vec<&MetricDecl>, ok: &[&CellSummary]) -> Vec<Headline> {
    let marked = declared.iter().any(|d| d.headline);
    declared
        .into_iter()
        .filter(|d| {
            if marked {
                d.headline
            } else {
                d.better == Better::Higher
            }
        })
        .map(|d| Headline {
            def: MetricDef::declared(d),
        })
        // Model cells only: a value in the reference row alone leaves the column empty.
        .filter(|h| {
            ok.iter()
                .any(|r| r.sampler.is_some() && h.def.value(r).is_some())
        })
        .collect()
}

/// The first bullet of a text task's verdict: what it is judged on, in the task's words.
pub fn basis_line(headline: &[Headline]) -> String {
    let labels: Vec<&str> = headline.iter().map(|h| h.def.label.as_str()).collect();
    let programs = headline
        .iter()
        .any(|h| matches!(h.def.aggregate, Aggregate::PassAtK(_)));
    format!(
        "Judged on {} (the task's headline metrics) against AR: at AR's level where the 95% CIs overlap or the sampler's is better; both at 0% is no signal, not a match.{}",
        labels.join(", "),
        if programs {
            " pass@k: the chance that at least one of k samples is a passing program, averaged over problems."
        } else {
            ""
        }
    )
}

/// One headline metric of one series against its baseline.
#[derive(Debug, Clone, Serialize)]
pub struct MetricVerdict {
    pub name: String,
    pub label: String,
    /// The baseline's value with its CI, formatted.
    pub baseline: Option<String>,
    /// Fewest steps from which the series is at the baseline's level (CIs overlap, or better)
    /// at every larger step count.
    pub match_steps: Option<usize>,
    /// The series is better than the baseline (CIs apart) where it first matches.
    pub better: bool,
    /// Set when the baseline and the series both sit at the metric's worst value at every
    /// step count ("both 0%: no signal"): nothing can be judged.
    pub no_signal: Option<String>,
    /// Judged at all: the baseline has a value and there is a signal. The series is at AR's
    /// level "in all" when it is on every judged metric.
    pub judged: bool,
    /// The series' best value, formatted, with its step count.
    pub best: Option<String>,
    /// The baseline's and the best value as the summary writes them ("41% [35, 47]").
    pub baseline_short: Option<String>,
    pub best_short: Option<String>,
    /// Where the best value is, and the value itself (to rank series by).
    pub best_steps: Option<usize>,
    pub best_value: Option<f64>,
    /// Larger values are better (else smaller).
    pub higher_is_better: bool,
    /// The value at the series' fewest steps, formatted, and as the table writes it.
    pub fewest: Option<String>,
    pub fewest_short: Option<String>,
}

/// Whether `r` is at `baseline`'s level on `h`: overlapping CIs or better, and not both at
/// the metric's worst value.
fn at_level(h: &Headline, r: &CellSummary, baseline: &CellSummary) -> bool {
    let (a, b) = (h.def.ci(r), h.def.ci(baseline));
    (overlaps(a, b) || h.better_than(a, b)) && !both_worst(h, r, baseline)
}

fn both_worst(h: &Headline, r: &CellSummary, baseline: &CellSummary) -> bool {
    match (h.worst(), h.def.value(r), h.def.value(baseline)) {
        (Some(w), Some(a), Some(b)) => a == w && b == w,
        _ => false,
    }
}

/// Fewest steps from which `test` holds at every larger step count.
fn from(points: &[&CellSummary], test: impl Fn(&CellSummary) -> bool) -> Option<usize> {
    let mut best = None;
    for r in points.iter().rev() {
        if !test(r) {
            break;
        }
        best = r.steps;
    }
    best
}

fn metric_verdict(
    h: &Headline,
    points: &[&CellSummary],
    baseline: Option<&CellSummary>,
    replay: bool,
) -> MetricVerdict {
    let match_steps = baseline.and_then(|b| from(points, |r| at_level(h, r, b)));
    let at_match = match_steps.and_then(|s| points.iter().find(|r| r.steps == Some(s)));
    let no_signal = baseline
        .filter(|b| points.iter().all(|r| both_worst(h, r, b)))
        .map(|_| {
            let w = h.worst().unwrap_or(0.0);
            format!("both {:.0}%: no signal", 100.0 * w)
        });
    let best_point = points
        .iter()
        .filter_map(|r| h.def.value(r).map(|v| (*r, v)))
        // The first of equals: the fewest steps reaching the best value.
        .reduce(|a, b| {
            let b_better = match h.def.better {
                Better::Lower => b.1 < a.1,
                _ => b.1 > a.1,
            };
            if b_better {
                b
            } else {
                a
            }
        })
        .map(|(r, _)| r);
    let best = best_point.and_then(|r| {
        let at = if replay || points.len() == 1 {
            String::new()
        } else {
            format!(" at {}", steps_word(r.steps.unwrap_or(0)))
        };
        h.show(r).map(|s| s + &at)
    });
    MetricVerdict {
        name: h.def.name.clone(),
        label: h.def.label.clone(),
        baseline: baseline.and_then(|b| h.show(b)),
        match_steps,
        better: match (at_match, baseline) {
            (Some(m), Some(b)) => h.better_than(h.def.ci(m), h.def.ci(b)),
            _ => false,
        },
        judged: baseline.is_some_and(|b| h.def.value(b).is_some()) && no_signal.is_none(),
        no_signal,
        best,
        baseline_short: baseline.and_then(|b| h.show_short(b)),
        best_short: best_point.and_then(|r| h.show_short(r)),
        best_steps: best_point.and_then(|r| r.steps).filter(|_| !replay),
        best_value: best_point.and_then(|r| h.def.value(r)),
        higher_is_better: h.def.better != Better::Lower,
        fewest: h.show(points[0]),
        fewest_short: h.show_short(points[0]),
    }
}

/// The verdict of one series of a text task on its headline metrics.
pub(super) fn text_verdict(
    task: &str,
    label: &str,
    points: &[&CellSummary],
    baseline: Option<&CellSummary>,
    headline: &[Headline],
    against: String,
) -> Verdict {
    let replay = is_replay(points);
    let metrics: Vec<MetricVerdict> = headline
        .iter()
        .map(|h| metric_verdict(h, points, baseline, replay))
        .collect();
    let judged: Vec<&Headline> = headline
        .iter()
        .zip(&metrics)
        .filter(|(_, m)| m.judged)
        .map(|(h, _)| h)
        .collect();
    let all = match baseline {
        Some(b) if !judged.is_empty() => from(points, |r| judged.iter().all(|h| at_level(h, r, b))),
        _ => None,
    };
    let matched = all.and_then(|s| points.iter().copied().find(|r| r.steps == Some(s)));
    let fewest = points[0];
    let fewest_matches = all.is_some() && all == fewest.steps;
    let sentence = text_sentence(label, &against, points, matched, &metrics, replay);
    Verdict {
        task: task.to_string(),
        anchor: format!("task-{}", anchor(task)),
        series: label.to_string(),
        kind: VerdictKind::Text,
        replay,
        baseline: baseline.map(|b| b.key.clone()),
        baseline_unit: baseline.map(|b| b.unit.clone()),
        baseline_label: baseline
            .map(|b| format!("{} · {}", b.model, b.sampler.as_deref().unwrap_or("?"))),
        baseline_rule: fewest.baseline_rule.clone(),
        baseline_ter: None,
        baseline_ser: None,
        optimal_ter: None,
        ter_match_steps: None,
        ser_match_steps: None,
        match_steps: all,
        match_speedup: matched.and_then(speed),
        match_nfe: matched.and_then(|m| m.nfe).filter(|_| !replay),
        fewest_steps: (!replay).then_some(fewest.steps).flatten(),
        fewest_ter: None,
        fewest_ter_infinite: false,
        fewest_ser: None,
        fewest_speedup: speed(fewest),
        fewest_matches,
        no_signal: !metrics.is_empty() && metrics.iter().all(|m| m.no_signal.is_some()),
        metrics,
        sentence,
        baseline_missing: false,
    }
}

/// "llada · low_confidence vs AR (…): pass@1 at AR's level from 16 steps (AR 0.41 [0.35,
/// 0.47]); …. From 16 steps: 16 network calls per sample, 0.52× AR's tokens/s."
fn text_sentence(
    label: &str,
    against: &str,
    points: &[&CellSummary],
    matched: Option<&CellSummary>,
    metrics: &[MetricVerdict],
    replay: bool,
) -> String {
    let what = if replay {
        format!("{label} (replayed generations, no speed comparison)")
    } else {
        label.to_string()
    };
    if metrics.is_empty() {
        return format!("{what}: this task declares no quality metric to judge it on.");
    }
    let parts: Vec<String> = metrics
        .iter()
        .map(|m| {
            let ar = m
                .baseline
                .as_ref()
                .map(|b| format!(" (AR {b})"))
                .unwrap_or_default();
            let best = m.best.clone().unwrap_or_else(|| "—".into());
            match (&m.no_signal, m.match_steps, &m.baseline) {
                (Some(n), _, _) => format!("{} {n}", m.label),
                (None, _, None) if against == "no AR baseline" => format!("{} {best}", m.label),
                (None, _, None) => format!("{} {best} (AR has no value)", m.label),
                (None, Some(s), Some(_)) => format!(
                    "{} {} AR's level{}{ar}",
                    m.label,
                    if m.better { "above" } else { "at" },
                    match points.len() {
                        1 => String::new(),
                        _ if Some(s) == points[0].steps => " at every step count".into(),
                        _ => format!(" from {} on", steps_word(s)),
                    }
                ),
                (None, None, Some(_)) => {
                    format!("{} never at AR's level{ar}; best {best}", m.label)
                }
            }
        })
        .collect();
    let mut sentence = format!("{what} vs {against}: {}", parts.join("; "));
    if let Some(m) = matched.filter(|_| !replay) {
        sentence.push_str(&format!(
            ". From {}: {} network calls per sample{}",
            steps_word(m.steps.unwrap_or(0)),
            fmt_num(m.nfe, 1),
            speed(m)
                .map(|s| format!(", {s:.2}× AR's tokens/s"))
                .unwrap_or_default()
        ));
    }
    sentence.push('.');
    sentence
}
