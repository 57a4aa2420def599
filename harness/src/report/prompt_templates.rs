//! "Prompt templates": for a text task whose samples were written in several prompt templates
//! (each sample names its own, `SampleRecord::template`, plugin API 1.8), the accuracy of every
//! model × sampler cell under each template, and per template the paired difference between
//! two cells over the same prompts, so a method that wins under one template and loses under
//! another is shown as such.
//!
//! * The metric is the task's first headline rate where higher is better (its accuracy), else
//!   its first higher-is-better rate, else "in support" (a text task's right answer).
//! * Accuracy per template: correct / scored with the Wilson 95% interval.
//! * Pairs: each cell against its AR baseline (the summary's `speedup_baseline`); where no
//!   cell of a (length, seed) has one, each cell against the first cell there. The two cells
//!   share the task, length and seed, so sample `i` of both answers the same prompt; the
//!   difference is over the samples both scored, with Agresti–Min's interval for matched
//!   proportions ([`PairedDifference`]).
//! * A pair "flips" when its interval lies above 0 under one template and below 0 under
//!   another.

use super::{anchor, fmt_num, replayed, sampler_settings, series_label};
use crate::metrics::{wilson_ci, CellSummary};
use crate::results::{CellRecord, CellStatus, SampleRecord};
use crate::stats::PairedDifference;
use dlm_plugin_api::{Better, MetricKind};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The section of one task.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateSection {
    pub task: String,
    pub anchor: String,
    /// The metric compared, by name (`in_support` where the task declares no rate).
    pub metric: String,
    pub metric_label: String,
    /// The templates, in the order the samples first use them.
    pub templates: Vec<String>,
    pub cells: Vec<TemplateCell>,
    pub pairs: Vec<TemplatePair>,
    /// One sentence per pair whose winner changes with the template.
    pub flips: Vec<String>,
}

/// One cell's accuracy under each template.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateCell {
    pub key: String,
    pub series: String,
    /// In the order of [`TemplateSection::templates`].
    pub per_template: Vec<TemplateAccuracy>,
}

/// Correct of scored under one template.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateAccuracy {
    pub template: String,
    pub n: usize,
    pub correct: usize,
    pub accuracy: Option<f64>,
    /// Wilson 95% interval.
    pub ci: Option<(f64, f64)>,
}

/// Cell `a` against cell `b`, template by template.
#[derive(Debug, Clone, Serialize)]
pub struct TemplatePair {
    pub a: String,
    pub a_key: String,
    pub b: String,
    pub b_key: String,
    /// Why `b`: `AR baseline` or `first cell` (no AR cell here).
    pub against: String,
    pub per_template: Vec<TemplateDifference>,
    /// Better under one template and worse under another (both intervals clear of 0).
    pub flip: bool,
}

/// The paired difference a − b under one template.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateDifference {
    pub template: String,
    /// `None` where no prompt of the template was scored in both cells.
    pub difference: Option<PairedDifference>,
    /// `better`, `worse` or `unclear` (the interval includes 0).
    pub outcome: &'static str,
}

/// Per sample of a cell: index → (template, right).
type Scored = BTreeMap<u64, (String, bool)>;

/// The section of `task`, where its samples name at least two templates.
pub fn section(
    task: &str,
    cells: &[CellRecord],
    summary: &[CellSummary],
    samples: &[SampleRecord],
) -> Option<TemplateSection> {
    let records: HashMap<&str, &CellRecord> = cells.iter().map(|c| (c.unit.as_str(), c)).collect();
    let rows: Vec<&CellSummary> = summary
        .iter()
        .filter(|s| s.task == task && s.status == CellStatus::Ok)
        .filter(|s| {
            records
                .get(s.unit.as_str())
                .is_some_and(|c| !c.cell.is_reference())
        })
        .collect();
    let (metric, metric_label) = metric_of(
        rows.iter()
            .filter_map(|s| records.get(s.unit.as_str()).copied()),
    );
    let mut by_unit: HashMap<&str, Scored> = HashMap::new();
    let mut templates: Vec<String> = Vec::new();
    let units: HashSet<&str> = rows.iter().map(|s| s.unit.as_str()).collect();
    let mut ordered: Vec<&SampleRecord> = samples
        .iter()
        .filter(|s| units.contains(&s.unit.as_str()))
        .collect();
    ordered.sort_by_key(|s| s.index);
    for s in ordered {
        let Some(template) = &s.template else {
            continue;
        };
        let Some(right) = value_of(s, &metric) else {
            continue;
        };
        if !templates.contains(template) {
            templates.push(template.clone());
        }
        by_unit
            .entry(s.unit.as_str())
            .or_default()
            .insert(s.index, (template.clone(), right));
    }
    if templates.len() < 2 {
        return None;
    }
    let many_lengths = rows.iter().any(|s| s.length != rows[0].length);
    let many_seeds = rows.iter().any(|s| s.seed != rows[0].seed);
    let label = |s: &CellSummary| cell_label(s, many_lengths, many_seeds);
    let empty = Scored::new();
    let scored = |s: &CellSummary| by_unit.get(s.unit.as_str()).unwrap_or(&empty);
    let cells_out: Vec<TemplateCell> = rows
        .iter()
        .filter(|s| by_unit.contains_key(s.unit.as_str()))
        .map(|s| TemplateCell {
            key: s.key.clone(),
            series: label(s),
            per_template: templates.iter().map(|t| accuracy(scored(s), t)).collect(),
        })
        .collect();
    let pairs: Vec<TemplatePair> = pairs_of(&rows)
        .into_iter()
        .filter(|(a, b, _)| {
            by_unit.contains_key(a.unit.as_str()) && by_unit.contains_key(b.unit.as_str())
        })
        .map(|(a, b, against)| {
            let per_template: Vec<TemplateDifference> = templates
                .iter()
                .map(|t| difference(scored(a), scored(b), t))
                .collect();
            let flip = per_template.iter().any(|d| d.outcome == "better")
                && per_template.iter().any(|d| d.outcome == "worse");
            TemplatePair {
                a: label(a),
                a_key: a.key.clone(),
                b: label(b),
                b_key: b.key.clone(),
                against: against.to_string(),
                per_template,
                flip,
            }
        })
        .collect();
    let flips = pairs.iter().filter(|p| p.flip).map(flip_sentence).collect();
    Some(TemplateSection {
        task: task.to_string(),
        anchor: format!("templates-{}", anchor(task)),
        metric,
        metric_label,
        templates,
        cells: cells_out,
        pairs,
        flips,
    })
}

/// The metric compared: see the module doc.
fn metric_of<'a>(mut records: impl Iterator<Item = &'a CellRecord>) -> (String, String) {
    let declared = records
        .find_map(|c| c.task_description.as_ref())
        .map(|d| d.metrics.clone())
        .unwrap_or_default();
    let rate =
        |m: &&dlm_plugin_api::MetricDecl| m.kind == MetricKind::Rate && m.better == Better::Higher;
    declared
        .iter()
        .filter(rate)
        .find(|m| m.headline)
        .or_else(|| declared.iter().find(rate))
        .map(|m| (m.name.clone(), m.label.clone()))
        .unwrap_or_else(|| ("in_support".to_string(), "correct (in support)".to_string()))
}

/// A sample's value of the metric: a boolean (or 0/1) in `extra`, or `in_support`; `None`
/// where the task left it out.
fn value_of(s: &SampleRecord, metric: &str) -> Option<bool> {
    if metric == "in_support" {
        return Some(s.in_support);
    }
    match s.extra.get(metric)? {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::Number(n) => n.as_f64().map(|x| x >= 0.5),
        _ => None,
    }
}

fn cell_label(s: &CellSummary, many_lengths: bool, many_seeds: bool) -> String {
    let mut label = series_label(s, many_lengths, many_seeds);
    // One step per token has no choice of steps, and a replay made no forwards.
    if let Some(steps) = s.steps.filter(|_| !s.one_step_per_token && !replayed(s)) {
        let unit = if steps == 1 { "step" } else { "steps" };
        label.push_str(&format!(" · {steps} {unit}"));
    }
    let settings = sampler_settings(s);
    if !settings.is_empty() {
        label.push_str(&format!(" · {settings}"));
    }
    label
}

/// Each cell with its AR baseline; where no cell of a (length, seed) has one, each cell
/// with the first cell there.
fn pairs_of<'a>(rows: &[&'a CellSummary]) -> Vec<(&'a CellSummary, &'a CellSummary, &'static str)> {
    let by_key: HashMap<&str, &CellSummary> = rows.iter().map(|s| (s.key.as_str(), *s)).collect();
    let mut pairs = Vec::new();
    let mut places: Vec<(usize, u64)> = Vec::new();
    for s in rows {
        if !places.contains(&(s.length, s.seed)) {
            places.push((s.length, s.seed));
        }
    }
    for (length, seed) in places {
        let here: Vec<&CellSummary> = rows
            .iter()
            .copied()
            .filter(|s| s.length == length && s.seed == seed)
            .collect();
        let with_baseline: Vec<(&CellSummary, &CellSummary)> = here
            .iter()
            .filter_map(|s| Some((*s, *by_key.get(s.speedup_baseline.as_deref()?)?)))
            .collect();
        if with_baseline.is_empty() {
            pairs.extend(here.iter().skip(1).map(|s| (*s, here[0], "first cell")));
        } else {
            pairs.extend(
                with_baseline
                    .into_iter()
                    .map(|(a, b)| (a, b, "AR baseline")),
            );
        }
    }
    pairs
}

fn accuracy(scored: &Scored, template: &str) -> TemplateAccuracy {
    let values: Vec<bool> = scored
        .values()
        .filter(|(t, _)| t == template)
        .map(|(_, right)| *right)
        .collect();
    let n = values.len();
    let correct = values.iter().filter(|r| **r).count();
    TemplateAccuracy {
        template: template.to_string(),
        n,
        correct,
        accuracy: (n > 0).then(|| correct as f64 / n as f64),
        ci: (n > 0).then(|| wilson_ci(correct, n)),
    }
}

/// a − b over the samples of `template` both cells scored, paired by sample index.
fn difference(a: &Scored, b: &Scored, template: &str) -> TemplateDifference {
    let (mut n, mut a_only, mut b_only) = (0, 0, 0);
    for (index, (t, right_a)) in a {
        let Some((t_b, right_b)) = b.get(index) else {
            continue;
        };
        if t != template || t_b != template {
            continue;
        }
        n += 1;
        match (right_a, right_b) {
            (true, false) => a_only += 1,
            (false, true) => b_only += 1,
            _ => {}
        }
    }
    let difference = PairedDifference::new(n, a_only, b_only);
    let outcome = match difference {
        Some(d) if d.a_better() => "better",
        Some(d) if d.b_better() => "worse",
        _ => "unclear",
    };
    TemplateDifference {
        template: template.to_string(),
        difference,
        outcome,
    }
}

fn flip_sentence(p: &TemplatePair) -> String {
    let list = |outcome: &str| -> String {
        p.per_template
            .iter()
            .filter(|d| d.outcome == outcome)
            .filter_map(|d| {
                let x = d.difference?;
                Some(format!(
                    "{} ({:+.3} [{}, {}])",
                    d.template,
                    x.difference,
                    fmt_num(Some(x.ci.0), 3),
                    fmt_num(Some(x.ci.1), 3)
                ))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{} against {}: better under {}, worse under {}",
        p.a,
        p.b,
        list("better"),
        list("worse")
    )
}

#[cfg(test)]
mod tests;
