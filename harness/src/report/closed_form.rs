//! "Closed-form accuracy": for a task that declares the exact value of one of its rate
//! metrics under a sampler (`TaskDescription::closed_forms`, plugin API 1.8: the
//! parallel-decoding tasks), every cell's sampled value with its 95% CI beside the closed
//! form at the cell's steps, whether the CI holds it, and a chart of the metric against steps
//! with the closed form as the reference line. Cells of other samplers (the adaptive ones)
//! have no closed form: their row shows the sampled value alone.
//!
//! Runs recorded before API 1.8 have no closed forms and get no section.

use super::svg::{Chart, HLine, Marker, Point, Scale, Series, PALETTE};
use super::{anchor, fmt_num, sampler_settings, Plot};
use crate::metrics::CellSummary;
use crate::results::{CellRecord, CellStatus};
use dlm_plugin_api::ClosedFormAccuracy;
use serde::Serialize;

/// One task's closed-form section.
#[derive(Debug, Serialize)]
pub struct ClosedFormSection {
    pub task: String,
    pub anchor: String,
    /// The metric's name and its label.
    pub metric: String,
    pub metric_label: String,
    /// The sampler the closed form assumes, and how it is derived.
    pub sampler: String,
    pub assumption: String,
    pub rows: Vec<ClosedFormRow>,
    /// Rows of the closed form's sampler whose CI holds it, of those with both.
    pub within: usize,
    pub compared: usize,
    pub plot: Plot,
}

/// One cell.
#[derive(Debug, Serialize)]
pub struct ClosedFormRow {
    pub key: String,
    /// `model · sampler`, with the sampler's settings where it states any.
    pub series: String,
    pub sampler: Option<String>,
    pub steps: Option<usize>,
    /// Generated tokens per network call of a sample.
    pub tokens_per_step: Option<f64>,
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    /// The closed form at this cell's steps; `None` for another sampler.
    pub closed_form: Option<f64>,
    /// The CI holds the closed form.
    pub within: Option<bool>,
    /// The model is the task's exact denoiser (the closed form is its expected value).
    pub exact: bool,
    pub ar: bool,
}

/// The section of `task`, if its description declares a closed form (the first one: the
/// tasks of today declare one).
pub fn section(
    task: &str,
    cells: &[CellRecord],
    summary: &[CellSummary],
) -> Option<ClosedFormSection> {
    let declared: &ClosedFormAccuracy = cells
        .iter()
        .filter(|c| c.cell.task.name == task)
        .filter_map(|c| c.task_description.as_ref())
        .find_map(|d| d.closed_forms.first())?;
    let record = |unit: &str| cells.iter().find(|c| c.unit == unit);
    let rows: Vec<ClosedFormRow> = summary
        .iter()
        .filter(|s| s.task == task && s.status == CellStatus::Ok && s.model != "reference")
        .map(|s| {
            let metric = s.metrics.get(&declared.metric);
            let value = metric.and_then(|m| m.value);
            let ci = metric.and_then(|m| m.ci);
            let closed_form = (s.sampler.as_deref() == Some(declared.sampler.as_str()))
                .then(|| s.steps.and_then(|k| declared.at(k)))
                .flatten();
            let cell = record(&s.unit);
            let settings = sampler_settings(s);
            let mut series = format!("{} · {}", s.model, s.sampler.as_deref().unwrap_or("—"));
            if !settings.is_empty() {
                series.push_str(&format!(" ({settings})"));
            }
            ClosedFormRow {
                key: s.key.clone(),
                series,
                sampler: s.sampler.clone(),
                steps: s.steps,
                tokens_per_step: s.tokens_per_forward,
                value,
                ci,
                within: closed_form.zip(ci).map(|(c, (lo, hi))| lo <= c && c <= hi),
                closed_form,
                exact: cell.is_some_and(|c| c.model_exact),
                ar: cell.is_some_and(|c| c.model_autoregressive),
            }
        })
        .collect();
    let label = summary
        .iter()
        .filter(|s| s.task == task)
        .find_map(|s| s.metrics.get(&declared.metric))
        .map_or_else(|| declared.metric.clone(), |m| m.declared.label.clone());
    let exact_rows = rows.iter().filter(|r| r.exact && r.within.is_some());
    let compared = exact_rows.clone().count();
    let within = exact_rows.filter(|r| r.within == Some(true)).count();
    let plot = plot(task, &label, declared, &rows);
    Some(ClosedFormSection {
        task: task.to_string(),
        anchor: format!("{}-closed-form", anchor(task)),
        metric: declared.metric.clone(),
        metric_label: label,
        sampler: declared.sampler.clone(),
        assumption: declared.assumption.clone(),
        rows,
        within,
        compared,
        plot,
    })
}

/// The metric against steps of every model under the closed form's sampler (95% CI bars), the
/// closed form over the steps those cells used, and each AR cell as a horizontal line (its
/// steps are its length). Other samplers are in the table: on one chart they would hide the
/// comparison it is for.
fn plot(task: &str, label: &str, declared: &ClosedFormAccuracy, rows: &[ClosedFormRow]) -> Plot {
    let mut series: Vec<Series> = Vec::new();
    let hlines: Vec<HLine> = rows
        .iter()
        .filter(|r| r.ar)
        .filter_map(|r| {
            r.value.map(|y| HLine {
                y,
                band: r.ci,
                label: format!("{}: {label} {}", r.series, fmt_num(Some(y), 3)),
                color: "#555".into(),
                dash: "4 3",
                text: r.series.clone(),
            })
        })
        .collect();
    let compared = |r: &&ClosedFormRow| r.sampler.as_deref() == Some(declared.sampler.as_str());
    for row in rows.iter().filter(compared) {
        let (Some(steps), Some(value)) = (row.steps, row.value) else {
            continue;
        };
        let point = Point {
            x: steps as f64,
            y: value,
            lo: row.ci.map(|c| c.0),
            hi: row.ci.map(|c| c.1),
            tip: format!(
                "{}, {steps} steps: {} {}{}",
                row.series,
                label,
                fmt_num(Some(value), 3),
                row.closed_form
                    .map(|c| format!(" (closed form {})", fmt_num(Some(c), 3)))
                    .unwrap_or_default()
            ),
        };
        match series.iter_mut().find(|s| s.name == row.series) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                name: row.series.clone(),
                color: PALETTE[series.len() % PALETTE.len()].to_string(),
                points: vec![point],
                line: !row.ar,
                band: false,
                marker: if row.ar {
                    Marker::Square
                } else {
                    Marker::Circle
                },
            }),
        }
    }
    let mut steps: Vec<usize> = rows
        .iter()
        .filter(|r| r.closed_form.is_some())
        .filter_map(|r| r.steps)
        .collect();
    steps.sort_unstable();
    steps.dedup();
    let reference: Vec<Point> = steps
        .iter()
        .filter_map(|&k| {
            declared.at(k).map(|c| Point {
                x: k as f64,
                y: c,
                lo: None,
                hi: None,
                tip: format!("closed form, {k} steps: {}", fmt_num(Some(c), 4)),
            })
        })
        .collect();
    for s in &mut series {
        s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    if !reference.is_empty() {
        series.insert(
            0,
            Series {
                name: format!("closed form ({})", declared.sampler),
                color: "#111".into(),
                points: reference,
                line: true,
                band: false,
                marker: Marker::Circle,
            },
        );
    }
    let chart = Chart {
        title: format!("{task}: {label} vs steps"),
        x_label: "sampling steps (log)".into(),
        y_label: label.into(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        y_zero: true,
        series,
        hlines,
        frontier: None,
        x_hint: None,
        message: None,
        key: true,
    };
    let drawn = chart.series.iter().any(|s| !s.points.is_empty());
    Plot {
        title: format!("{label} vs steps"),
        svg: drawn.then(|| chart.render()),
        note: (!drawn).then(|| format!("No chart: no cell of {task} has a {label} value.")),
    }
}

impl ClosedFormSection {
    /// The section in `report.json`.
    pub fn twin(&self) -> serde_json::Value {
        serde_json::json!({
            "task": self.task,
            "metric": self.metric,
            "sampler": self.sampler,
            "assumption": self.assumption,
            "within": self.within,
            "compared": self.compared,
            "rows": self.rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_of_the_declared_sampler_is_compared_and_others_are_not() {
        let declared =
            ClosedFormAccuracy::new("correct", "random", "uniform order", [(1, 0.25), (4, 1.0)]);
        let row = |sampler: &str, steps: usize, value: f64, ci: (f64, f64)| ClosedFormRow {
            key: format!("t/oracle/{sampler}@{steps}"),
            series: format!("oracle · {sampler}"),
            sampler: Some(sampler.to_string()),
            steps: Some(steps),
            tokens_per_step: None,
            value: Some(value),
            ci: Some(ci),
            closed_form: (sampler == "random").then(|| declared.at(steps)).flatten(),
            within: None,
            exact: true,
            ar: false,
        };
        let rows = vec![
            row("random", 1, 0.27, (0.24, 0.30)),
            row("random", 4, 1.0, (0.99, 1.0)),
            row("threshold", 4, 0.9, (0.88, 0.92)),
        ];
        let p = plot("t", "accuracy", &declared, &rows);
        let svg = p.svg.expect("a chart");
        assert!(svg.contains("closed form (random)"), "{svg}");
        assert!(svg.contains("oracle · random"), "{svg}");
        // The adaptive sampler's cells are in the table only.
        assert!(!svg.contains("oracle · threshold"), "{svg}");
    }
}
