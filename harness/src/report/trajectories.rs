//! "Trajectories": for a task whose cells were traced (suite `trace: true`, plugin API 1.8,
//! `crate::trace`), per model × sampler and steps: how often the answer was right after some
//! step and lost by the end, the mean first step at which it was right, and how left-to-right
//! the commit order was (Kendall's τ-b between position and commit step: its quartiles as a
//! box per cell, and its median against steps). Read from `summary.json`'s `trace`, so a run
//! without traces has no section.

use super::svg::{Chart, HLine, Marker, Point, Scale, Series, PALETTE};
use super::{anchor, fmt_num, sampler_settings, series_label, Plot};
use crate::metrics::CellSummary;
use crate::trace::TraceSummary;
use serde::Serialize;

/// The section of one task.
#[derive(Debug, Serialize)]
pub struct TrajectorySection {
    pub task: String,
    pub anchor: String,
    pub rows: Vec<TrajectoryRow>,
    /// τ against steps and the share lost against steps (not in the JSON twin).
    pub plots: Vec<Plot>,
    /// Why some cells' answers were not scored (one line per reason).
    pub notes: Vec<String>,
}

/// One traced cell.
#[derive(Debug, Clone, Serialize)]
pub struct TrajectoryRow {
    pub key: String,
    pub series: String,
    pub steps: Option<usize>,
    pub trace: TraceSummary,
    /// τ's quartiles drawn as a box on [−1, 1] (not in the JSON twin).
    pub tau_box: Option<String>,
}

impl TrajectorySection {
    /// `report.json`'s entry: the rows without drawings.
    pub fn twin(&self) -> serde_json::Value {
        serde_json::json!({
            "task": self.task,
            "cells": self.rows.iter().map(|r| serde_json::json!({
                "key": r.key, "series": r.series, "steps": r.steps, "trace": r.trace,
            })).collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }
}

/// The section of `task`, if any of its cells was traced.
pub fn section(task: &str, summary: &[CellSummary]) -> Option<TrajectorySection> {
    let cells: Vec<&CellSummary> = summary.iter().filter(|s| s.task == task).collect();
    let many = |f: &dyn Fn(&CellSummary) -> u64| cells.iter().any(|s| f(s) != f(cells[0]));
    let (many_lengths, many_seeds) = (many(&|s| s.length as u64), many(&|s| s.seed));
    let rows: Vec<TrajectoryRow> = cells
        .iter()
        .filter_map(|s| {
            let trace = s.trace.clone()?;
            Some(TrajectoryRow {
                key: s.key.clone(),
                series: series_name(s, many_lengths, many_seeds),
                steps: s.steps,
                tau_box: trace.tau_quartiles.map(tau_box),
                trace,
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut notes: Vec<String> = Vec::new();
    for row in &rows {
        if let Some(why) = &row.trace.not_scored {
            let line = format!("{}: answers along the way not scored — {why}.", row.series);
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
    }
    Some(TrajectorySection {
        task: task.to_string(),
        anchor: format!("trajectories-{}", anchor(task)),
        plots: vec![tau_plot(task, &rows), lost_plot(task, &rows)],
        rows,
        notes,
    })
}

/// `model · sampler`, with its settings where the key states some.
fn series_name(s: &CellSummary, many_lengths: bool, many_seeds: bool) -> String {
    let settings = sampler_settings(s);
    let label = series_label(s, many_lengths, many_seeds);
    match settings.is_empty() {
        true => label,
        false => format!("{label} ({settings})"),
    }
}

/// A box of τ's minimum, quartiles and maximum on a [−1, 1] axis, 120 × 18 px.
fn tau_box(q: [f64; 5]) -> String {
    let x = |t: f64| 4.0 + (t.clamp(-1.0, 1.0) + 1.0) / 2.0 * 112.0;
    let [lo, q1, med, q3, hi] = q.map(x);
    format!(
        concat!(
            r##"<svg class="taubox" width="120" height="18" viewBox="0 0 120 18" role="img">"##,
            r##"<title>τ min {} · Q1 {} · median {} · Q3 {} · max {}</title>"##,
            r##"<line x1="60" y1="1" x2="60" y2="17" stroke="#ccc"/>"##,
            r##"<line x1="{lo:.1}" y1="9" x2="{hi:.1}" y2="9" stroke="#555"/>"##,
            r##"<rect x="{q1:.1}" y="4" width="{w:.1}" height="10" fill="#9ecae1" stroke="#555"/>"##,
            r##"<line x1="{med:.1}" y1="3" x2="{med:.1}" y2="15" stroke="#08306b" stroke-width="2"/>"##,
            "</svg>"
        ),
        fmt_num(Some(q[0]), 2),
        fmt_num(Some(q[1]), 2),
        fmt_num(Some(q[2]), 2),
        fmt_num(Some(q[3]), 2),
        fmt_num(Some(q[4]), 2),
        lo = lo,
        hi = hi,
        q1 = q1,
        w = (q3 - q1).max(0.5),
        med = med,
    )
}

/// A row's point: its value, an interval around it and the hover text.
type PointOf<'a> = &'a dyn Fn(&TrajectoryRow) -> Option<(f64, Option<(f64, f64)>, String)>;

/// One series per `model · sampler` over the rows with steps, points from `value`.
fn series_of(rows: &[TrajectoryRow], value: PointOf) -> Vec<Series> {
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        if !names.contains(&r.series.as_str()) {
            names.push(&r.series);
        }
    }
    names
        .iter()
        .enumerate()
        .map(|(i, name)| Series {
            name: name.to_string(),
            color: PALETTE[i % PALETTE.len()].to_string(),
            points: rows
                .iter()
                .filter(|r| r.series == *name)
                .filter_map(|r| {
                    let (y, ci, tip) = value(r)?;
                    Some(Point {
                        x: r.steps? as f64,
                        y,
                        lo: ci.map(|c| c.0),
                        hi: ci.map(|c| c.1),
                        tip,
                    })
                })
                .collect(),
            line: true,
            band: false,
            marker: Marker::Circle,
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

fn chart(task: &str, title: &str, y_label: &str, series: Vec<Series>, zero: HLine) -> Plot {
    let has = !series.is_empty();
    let chart = Chart {
        title: format!("{task}: {title}"),
        x_label: "steps (log)".into(),
        y_label: y_label.into(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        y_zero: true,
        series,
        hlines: vec![zero],
        frontier: None,
        x_hint: None,
        message: None,
        key: true,
    };
    Plot {
        title: title.to_string(),
        svg: has.then(|| chart.render()),
        note: (!has).then(|| format!("No {title} chart: no traced cell has a value.")),
    }
}

/// Median τ against steps, with its interquartile range as bars.
fn tau_plot(task: &str, rows: &[TrajectoryRow]) -> Plot {
    let series = series_of(rows, &|r| {
        let q = r.trace.tau_quartiles?;
        let tip = format!(
            "{} @ {} steps: τ median {} (IQR {} – {}), {} samples",
            r.series,
            r.steps.unwrap_or(0),
            fmt_num(Some(q[2]), 2),
            fmt_num(Some(q[1]), 2),
            fmt_num(Some(q[3]), 2),
            r.trace.tau_n
        );
        Some((q[2], Some((q[1], q[3])), tip))
    });
    let one = HLine {
        y: 1.0,
        band: None,
        label: "τ = 1: strictly left to right".into(),
        color: "#888".into(),
        dash: "4 3",
        text: "left→right".into(),
    };
    chart(
        task,
        "commit order τ vs steps",
        "Kendall τ (position, commit step)",
        series,
        one,
    )
}

/// The share of samples right after some step and wrong at the end, against steps.
fn lost_plot(task: &str, rows: &[TrajectoryRow]) -> Plot {
    let series = series_of(rows, &|r| {
        let lost = r.trace.lost?;
        let tip = format!(
            "{} @ {} steps: {} of {} scored samples right earlier and lost",
            r.series,
            r.steps.unwrap_or(0),
            fmt_num(Some(lost), 3),
            r.trace.scored
        );
        Some((lost, None, tip))
    });
    let zero = HLine {
        y: 0.0,
        band: None,
        label: "nothing lost".into(),
        color: "#888".into(),
        dash: "4 3",
        text: "0".into(),
    };
    chart(
        task,
        "right earlier, lost at the end",
        "share of samples",
        series,
        zero,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(sampler: &str, steps: usize, trace: Option<serde_json::Value>) -> CellSummary {
        let mut v = json!({
            "key": format!("arith/mdm/{sampler}@{steps}/L32/seed0"),
            "unit": format!("u-{sampler}-{steps}"), "task": "arith", "model": "mdm",
            "sampler": sampler, "steps": steps, "length": 32, "seed": 0, "batch_size": 8,
            "status": "ok", "n": 4, "zero_probability_samples": 0,
        });
        if let Some(t) = trace {
            v["trace"] = t;
        }
        serde_json::from_value(v).expect("a summary row")
    }

    fn trace(lost: f64, quartiles: [f64; 5]) -> serde_json::Value {
        json!({
            "traced": 4, "scored": 4, "final_correct": 0.5, "ever_correct": 0.5 + lost,
            "lost": lost, "mean_first_correct_step": 3.0, "mean_first_correct_fraction": 0.4,
            "mean_steps": 8.0, "tau_n": 4, "tau_mean": quartiles[2],
            "tau_quartiles": quartiles,
        })
    }

    #[test]
    fn traced_cells_make_a_section_and_untraced_runs_none() {
        let untraced = [row("low_confidence", 8, None)];
        assert!(section("arith", &untraced).is_none());
        let summary = [
            row(
                "low_confidence",
                4,
                Some(trace(0.25, [-0.2, 0.1, 0.3, 0.5, 0.9])),
            ),
            row(
                "low_confidence",
                8,
                Some(trace(0.0, [0.2, 0.4, 0.5, 0.7, 1.0])),
            ),
            row("left_to_right", 32, Some(trace(0.0, [1.0; 5]))),
        ];
        let s = section("arith", &summary).unwrap();
        assert_eq!(s.rows.len(), 3);
        assert!(s.plots.iter().all(|p| p.svg.is_some()), "{:?}", s.plots);
        let twin = s.twin();
        assert_eq!(twin["cells"][0]["trace"]["lost"], json!(0.25));
        assert!(twin["cells"][0].get("tau_box").is_none());
        assert!(s.rows[0].tau_box.as_ref().unwrap().contains("median 0.30"));
    }
}
