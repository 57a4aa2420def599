//! The run report: `summary.json`, `report.json` and a self-contained `report.html`, all
//! derived from the run directory's JSONL files.
//!
//! The HTML is rendered with minijinja from `templates/` (compiled into the binary) with every
//! value auto-escaped; plots are inline SVG generated here ([`svg`]), so the page needs no
//! JavaScript, no fonts and no network. Layout: the run's identity, the verdict (per task and
//! model × sampler: from how many steps the MDM matches the AR reference, and its speedup
//! there), failed cells with their causes, then per task the plots, with the full table, the
//! quality-vs-cost plots and sample sequences one click below (`<details>`).

use crate::metrics::ordered_summary;
use crate::metrics::{self, CellSummary};
use crate::results::{write_atomic, CellRecord, CellStatus, Manifest, RunDir, SampleRecord};
use crate::results::{REPORT, SUMMARY};
use crate::suite::CellSpec;
use anyhow::{Context, Result};
use minijinja::{context, Environment};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use svg::{Chart, Frontier, HLine, Marker, Point, Scale, Series};

/// The machine-readable twin of `report.html`.
pub const REPORT_JSON: &str = "report.json";

/// Sample sequences shown per cell.
const SAMPLES_PER_CELL: usize = 4;

/// All templates, compiled into the binary so a report can be written anywhere.
const TEMPLATES: &[(&str, &str)] = &[
    ("style.css", include_str!("../../templates/style.css")),
    ("report.html", include_str!("../../templates/report.html")),
    ("compare.html", include_str!("../../templates/compare.html")),
    ("history.html", include_str!("../../templates/history.html")),
];

/// The template environment shared by the run report, the comparison and the history page.
/// Auto-escaping is on for every `*.html` template (minijinja decides by the name).
pub fn environment() -> Result<Environment<'static>> {
    let mut env = Environment::new();
    for (name, text) in TEMPLATES {
        env.add_template(name, text)?;
    }
    env.add_filter("num", |v: Option<f64>, digits: Option<usize>| -> String {
        fmt_num(v, digits.unwrap_or(4))
    });
    env.add_filter("pct", |v: Option<f64>| -> String {
        match v {
            Some(x) if x.is_finite() => format!("{:+.1}%", 100.0 * x),
            Some(x) if x.is_infinite() => "∞".to_string(),
            _ => "—".to_string(),
        }
    });
    env.add_filter(
        "signed",
        |v: Option<f64>, digits: Option<usize>| -> String {
            match v {
                Some(x) if x.is_finite() => format!("{x:+.*}", digits.unwrap_or(4)),
                Some(x) if x > 0.0 => "+∞".to_string(),
                Some(_) => "−∞".to_string(),
                None => "—".to_string(),
            }
        },
    );
    env.add_filter("short", |v: Option<String>| -> String {
        v.map(|s| s.chars().take(10).collect())
            .unwrap_or_else(|| "unknown".to_string())
    });
    Ok(env)
}

/// A number as the report prints it: fixed digits, `—` for missing or not finite.
pub fn fmt_num(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        Some(x) if x.is_infinite() => "∞".to_string(),
        _ => "—".to_string(),
    }
}

/// Recompute the summary from the run's files and write `summary.json`, `report.json` and
/// `report.html`.
pub fn write_all(dir: &RunDir, order: Option<&[CellSpec]>) -> Result<Vec<CellSummary>> {
    let (cells, samples) = dir.load_consistent()?;
    let summary = ordered_summary(&cells, &samples, order);
    write_atomic(&dir.file(SUMMARY), &serde_json::to_vec_pretty(&summary)?)?;
    let manifest = dir.read_manifest()?;
    let report = build(&manifest, &cells, &summary, &samples);
    write_atomic(
        &dir.file(REPORT_JSON),
        &serde_json::to_vec_pretty(&report.twin(&manifest, &summary))?,
    )?;
    let training = training_rows(&crate::training::read_training(dir)?);
    let html = render(&manifest, &report, &summary, &training)?;
    write_atomic(&dir.file(REPORT), html.as_bytes())?;
    Ok(summary)
}

/// One row of the report's training table.
#[derive(Debug, Serialize)]
pub struct TrainingRow {
    pub key: String,
    pub ok: bool,
    pub reused: bool,
    pub cause: Option<String>,
    pub steps: Option<usize>,
    pub batch_size: Option<usize>,
    pub tokens: Option<u64>,
    pub wall_seconds: Option<f64>,
    pub tokens_per_second: Option<f64>,
    pub final_loss: Option<f64>,
    /// Held-out NLL per token and whether it is an upper bound (MDM ELBO).
    pub validation_nll: Option<f64>,
    pub bound: bool,
    pub optimal_nll: Option<f64>,
    /// `exp(validation NLL)` against the optimal TER `exp(H/L)`, and the gap in percent.
    pub perplexity: Option<f64>,
    pub optimal_perplexity: Option<f64>,
    /// `exp` of the task's exact NLL of the same held-out sequences: the gap's reference.
    pub reference_perplexity: Option<f64>,
    pub gap_percent: Option<f64>,
    pub checkpoint: Option<String>,
    /// The checkpoint's file name (the full path is its hover text).
    pub checkpoint_name: Option<String>,
}

fn training_rows(lines: &[crate::training::TrainLine]) -> Vec<TrainingRow> {
    lines
        .iter()
        .map(|l| {
            let r = l.record.as_ref();
            let v = r.and_then(|r| r.final_validation());
            let o = r.and_then(|r| r.optimal_nll_per_token);
            // The gap is measured against the true model's NLL of the same held-out sequences
            // where the task gives it (a finite set can sit below or above the entropy rate).
            let reference = r.and_then(|r| r.reference_nll());
            let against = reference.or(o);
            TrainingRow {
                key: l.key.clone(),
                ok: r.is_some(),
                reused: l.reused,
                cause: l.cause.clone(),
                steps: r.map(|r| r.output.steps),
                batch_size: r.map(|r| r.train.batch_size),
                tokens: r.map(|r| r.output.tokens),
                wall_seconds: r.map(|r| r.output.wall_seconds),
                tokens_per_second: r.map(|r| r.output.tokens_per_second),
                final_loss: r.map(|r| r.output.final_loss),
                validation_nll: v,
                bound: r.is_some_and(|r| r.output.bound),
                optimal_nll: o,
                perplexity: v.map(f64::exp),
                optimal_perplexity: o.map(f64::exp),
                reference_perplexity: reference.map(f64::exp),
                gap_percent: v.zip(against).map(|(v, o)| ((v - o).exp() - 1.0) * 100.0),
                checkpoint: r.map(|r| r.checkpoint.display().to_string()),
                checkpoint_name: r.and_then(|r| {
                    r.checkpoint
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                }),
            }
        })
        .collect()
}

/// Render the run report from a manifest, the cell records, their summaries and the samples.
pub fn render_report(
    manifest: &Manifest,
    cells: &[CellRecord],
    summary: &[CellSummary],
    samples: &[SampleRecord],
) -> Result<String> {
    let report = build(manifest, cells, summary, samples);
    render(manifest, &report, summary, &[])
}

fn render(
    manifest: &Manifest,
    report: &Report,
    summary: &[CellSummary],
    training: &[TrainingRow],
) -> Result<String> {
    let failed: Vec<&CellSummary> = summary
        .iter()
        .filter(|s| s.status == CellStatus::Failed)
        .collect();
    environment()?
        .get_template("report.html")?
        .render(context! {
            manifest => manifest,
            report => report,
            failed => failed,
            training => training,
            total => summary.len(),
            ok => summary.len() - failed.len(),
        })
        .context("cannot render the report")
}

/// Everything the template shows beyond the manifest and the summary rows.
#[derive(Debug, Serialize)]
pub struct Report {
    pub tasks: Vec<TaskSection>,
    pub verdicts: Vec<Verdict>,
    /// Series label → colour, for legends.
    pub legend: Vec<LegendEntry>,
    /// The paper's theorems checked on the run's oracle cells (`theory::analyse`), if it has
    /// the cells for them; `theory_view` is what the page shows of it.
    pub theory: Option<crate::theory::TheoryReport>,
    pub theory_view: Option<crate::theory_view::TheoryView>,
}

#[derive(Debug, Serialize)]
pub struct LegendEntry {
    pub label: String,
    pub color: String,
    pub ar: bool,
}

#[derive(Debug, Serialize)]
pub struct TaskSection {
    pub name: String,
    pub anchor: String,
    pub label: String,
    pub vocab_size: Option<usize>,
    pub lengths: Vec<usize>,
    pub optimal_ter: Option<f64>,
    pub support_log10_density: Option<f64>,
    pub details: Option<String>,
    pub verdict_lines: Vec<String>,
    pub legend: Vec<LegendEntry>,
    /// TER / SER / speedup against steps.
    pub plots: Vec<Plot>,
    /// Quality against cost (NFE, wall seconds).
    pub cost_plots: Vec<Plot>,
    pub rows: Vec<CellSummary>,
    /// Metrics this task declares (columns of the cell table, values in `rows[].metrics`).
    pub task_metrics: Vec<crate::registry::MetricDef>,
    pub ar_units: Vec<String>,
    pub samples: Vec<CellSamples>,
}

#[derive(Debug, Serialize)]
pub struct Plot {
    pub title: String,
    /// Inline SVG, generated by [`svg`] with every text escaped.
    pub svg: Option<String>,
    /// Shown under the plot (omitted points, or why there is no plot).
    pub note: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CellSamples {
    pub key: String,
    pub unit: String,
    pub n: usize,
    pub shown: Vec<SampleView>,
}

/// One sample sequence, split around its first invalid position for highlighting.
#[derive(Debug, Serialize)]
pub struct SampleView {
    pub index: u64,
    pub before: String,
    pub bad: String,
    pub after: String,
    pub log_q: Option<f64>,
    pub in_support: bool,
    pub first_invalid: Option<usize>,
    /// Task-specific fields (`extra`) as JSON text; shown escaped.
    pub extra: Option<String>,
}

/// The verdict for one model × sampler series of a task.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub task: String,
    pub anchor: String,
    pub series: String,
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
}

impl Report {
    /// `report.json`: the verdicts, plot notes and the summary, without the SVG.
    pub fn twin(&self, manifest: &Manifest, summary: &[CellSummary]) -> serde_json::Value {
        let tasks: Vec<serde_json::Value> = self
            .tasks
            .iter()
            .map(|t| {
                serde_json::json!({
                    "task": t.name,
                    "label": t.label,
                    "optimal_ter": t.optimal_ter,
                    "verdict": t.verdict_lines,
                    "plots": t.plots.iter().chain(&t.cost_plots).map(|p| serde_json::json!({
                        "title": p.title, "drawn": p.svg.is_some(), "note": p.note,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::json!({
            "format": "dlm-bench report 1",
            "run": identity(manifest),
            "verdicts": self.verdicts,
            "theory": self.theory,
            "tasks": tasks,
            "failed": summary.iter().filter(|s| s.status == CellStatus::Failed)
                .map(|s| serde_json::json!({"key": s.key, "unit": s.unit, "cause": s.cause}))
                .collect::<Vec<_>>(),
            "cells": summary,
        })
    }
}

/// A run's identity as the JSON twins record it (the manifest without the suite text).
pub fn identity(m: &Manifest) -> serde_json::Value {
    serde_json::json!({
        "suite": m.suite_name,
        "suite_path": m.suite_path,
        "suite_hash": m.suite_hash,
        "git_commit": m.git_commit,
        "git_dirty": m.git_dirty,
        "dlm_bench_version": m.dlm_bench_version,
        "plugins": m.plugins.iter().map(|p| serde_json::json!({
            "name": p.name, "version": p.version, "api_version": p.api_version, "device": p.device,
        })).collect::<Vec<_>>(),
        "device": m.device,
        "host": m.host,
        "cpus": m.cpus,
        "toolchain": m.toolchain,
        "seeds": m.seeds,
        "started_at": m.started_at,
        "finished_at": m.finished_at,
    })
}

/// The label of a cell's line in the plots: `model · sampler`, plus the length and seed when
/// the task has several.
fn series_label(s: &CellSummary, many_lengths: bool, many_seeds: bool) -> String {
    let mut label = format!(
        "{} · {}",
        s.model,
        s.sampler.as_deref().unwrap_or("ground truth")
    );
    if many_lengths {
        label.push_str(&format!(" · L={}", s.length));
    }
    if many_seeds {
        label.push_str(&format!(" · seed {}", s.seed));
    }
    label
}

fn overlaps(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> bool {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => a0 <= b1 && b0 <= a1,
        _ => false,
    }
}

/// Assemble the report's sections from the summary rows.
pub fn build(
    manifest: &Manifest,
    cells: &[CellRecord],
    summary: &[CellSummary],
    samples: &[SampleRecord],
) -> Report {
    let _ = manifest;
    let ar_units: HashSet<&str> = cells
        .iter()
        .filter(|c| !c.cell.is_reference() && metrics::is_ar_cell(c))
        .map(|c| c.unit.as_str())
        .collect();
    let record: HashMap<&str, &CellRecord> = cells.iter().map(|c| (c.unit.as_str(), c)).collect();
    let mut by_unit: HashMap<&str, Vec<&SampleRecord>> = HashMap::new();
    for s in samples {
        by_unit.entry(s.unit.as_str()).or_default().push(s);
    }

    let mut task_names: Vec<&str> = Vec::new();
    for s in summary {
        if !task_names.contains(&s.task.as_str()) {
            task_names.push(&s.task);
        }
    }
    // Colours by series label, stable across tasks.
    let all_lengths: HashSet<usize> = summary.iter().map(|s| s.length).collect();
    let all_seeds: HashSet<u64> = summary.iter().map(|s| s.seed).collect();
    let (many_lengths, many_seeds) = (all_lengths.len() > 1, all_seeds.len() > 1);
    let mut colors: BTreeMap<String, String> = BTreeMap::new();
    let mut legend: Vec<LegendEntry> = Vec::new();
    for s in summary
        .iter()
        .filter(|s| s.model != "reference" && s.status == CellStatus::Ok)
    {
        let label = series_label(s, many_lengths, many_seeds);
        if !colors.contains_key(&label) {
            let color = svg::PALETTE[colors.len() % svg::PALETTE.len()].to_string();
            colors.insert(label.clone(), color.clone());
            legend.push(LegendEntry {
                label,
                color,
                ar: ar_units.contains(s.unit.as_str()),
            });
        }
    }

    let mut tasks = Vec::new();
    let mut verdicts = Vec::new();
    for task in task_names {
        let rows: Vec<&CellSummary> = summary.iter().filter(|s| s.task == task).collect();
        let description = rows
            .iter()
            .find_map(|r| record.get(r.unit.as_str()))
            .and_then(|c| c.task_description.as_ref())
            .or_else(|| {
                rows.iter()
                    .filter_map(|r| record.get(r.unit.as_str()))
                    .find_map(|c| c.task_description.as_ref())
            });
        let optimal_ter = rows.iter().find_map(|r| r.optimal_ter);
        let ok: Vec<&CellSummary> = rows
            .iter()
            .copied()
            .filter(|r| r.status == CellStatus::Ok)
            .collect();
        let is_ar = |r: &CellSummary| ar_units.contains(r.unit.as_str());
        let ar: Vec<&CellSummary> = ok
            .iter()
            .copied()
            .filter(|r| r.model != "reference" && is_ar(r))
            .collect();
        // MDM series: model × sampler (× length × seed), points sorted by steps.
        let mut series: Vec<(String, Vec<&CellSummary>)> = Vec::new();
        for r in ok
            .iter()
            .copied()
            .filter(|r| r.model != "reference" && !is_ar(r) && r.steps.is_some())
        {
            let label = series_label(r, many_lengths, many_seeds);
            match series.iter_mut().find(|(l, _)| *l == label) {
                Some((_, v)) => v.push(r),
                None => series.push((label, vec![r])),
            }
        }
        for (_, v) in &mut series {
            v.sort_by_key(|r| r.steps);
        }
        let color = |label: &str| colors.get(label).cloned().unwrap_or_else(|| "#333".into());
        let all_steps: Vec<f64> = series
            .iter()
            .flat_map(|(_, v)| v.iter().filter_map(|r| r.steps.map(|s| s as f64)))
            .collect();
        let steps_hint = (!all_steps.is_empty()).then(|| {
            (
                all_steps.iter().copied().fold(f64::INFINITY, f64::min),
                all_steps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )
        });

        // Verdicts.
        let mut verdict_lines = Vec::new();
        for (label, points) in &series {
            // Every point of a series shares model, task, length, seed and batch size, and so
            // its baseline (metrics::resolve_baselines).
            let first = points[0];
            let baseline = first
                .speedup_baseline
                .as_deref()
                .and_then(|key| ar.iter().copied().find(|a| a.key == key));
            let v = verdict(
                task,
                label,
                points,
                baseline,
                optimal_ter,
                many_lengths || many_seeds,
            );
            verdict_lines.push(v.sentence.clone());
            verdicts.push(v);
        }
        if series.is_empty() {
            verdict_lines.push(if ok.is_empty() {
                "No cell of this task finished.".to_string()
            } else {
                "No diffusion (step-count) cell finished for this task.".to_string()
            });
        }

        // Plots against steps.
        let ar_lines = |value: &dyn Fn(&CellSummary) -> Option<f64>,
                        ci: &dyn Fn(&CellSummary) -> Option<(f64, f64)>|
         -> Vec<HLine> {
            ar.iter()
                .filter_map(|a| {
                    let y = value(a)?;
                    let label = series_label(a, many_lengths, many_seeds);
                    Some(HLine {
                        y,
                        band: ci(a),
                        label: format!("AR {label}"),
                        color: color(&label),
                        dash: "6 3",
                        text: format!("AR {}", fmt_num(Some(y), 3)),
                    })
                })
                .collect()
        };
        let optimal_line = |lines: &mut Vec<HLine>| {
            if let Some(o) = optimal_ter {
                lines.push(HLine {
                    y: o,
                    band: None,
                    label: "optimal TER (exact)".into(),
                    color: "#111".into(),
                    dash: "2 3",
                    text: format!("optimal {}", fmt_num(Some(o), 3)),
                });
            }
        };
        let steps_series = |value: &dyn Fn(&CellSummary) -> Option<f64>,
                            ci: &dyn Fn(&CellSummary) -> Option<(f64, f64)>,
                            what: &str,
                            digits: usize|
         -> (Vec<Series>, Vec<String>) {
            let mut out = Vec::new();
            let mut omitted = Vec::new();
            for (label, points) in &series {
                let mut pts = Vec::new();
                let mut missing = Vec::new();
                for r in points {
                    let steps = r.steps.unwrap_or(0) as f64;
                    match value(r) {
                        Some(y) if y.is_finite() => {
                            let band = ci(r);
                            pts.push(Point {
                                x: steps,
                                y,
                                lo: band.map(|b| b.0),
                                hi: band.map(|b| b.1),
                                tip: format!(
                                    "{label}, {} steps: {what} {}{}",
                                    r.steps.unwrap_or(0),
                                    fmt_num(Some(y), digits),
                                    band.map(|(a, b)| format!(
                                        " [{}, {}]",
                                        fmt_num(Some(a), digits),
                                        fmt_num(Some(b), digits)
                                    ))
                                    .unwrap_or_default()
                                ),
                            })
                        }
                        _ => missing.push(r.steps.unwrap_or(0).to_string()),
                    }
                }
                if !missing.is_empty() {
                    omitted.push(format!("{label} at {} steps", missing.join(", ")));
                }
                out.push(Series {
                    name: label.clone(),
                    color: color(label),
                    points: pts,
                    line: true,
                    band: true,
                    marker: Marker::Circle,
                });
            }
            (out, omitted)
        };

        let mut plots = Vec::new();
        // TER against steps.
        {
            let (s, omitted) = steps_series(&|r| r.ter, &|r| r.ter_ci, "TER", 4);
            let mut hl = ar_lines(&|r| r.ter, &|r| r.ter_ci);
            optimal_line(&mut hl);
            let inf_ar: Vec<String> = ar
                .iter()
                .filter(|a| a.ter.is_none())
                .map(|a| series_label(a, many_lengths, many_seeds))
                .collect();
            let mut notes = Vec::new();
            if !omitted.is_empty() {
                notes.push(format!(
                    "Not drawn — TER is infinite (some samples have q(x) = 0): {}.",
                    omitted.join("; ")
                ));
            }
            if !inf_ar.is_empty() {
                notes.push(format!("AR with infinite TER: {}.", inf_ar.join(", ")));
            }
            let drawn = s.iter().any(|x| !x.points.is_empty());
            let y_scale = ter_scale(&s, &hl);
            let chart = Chart {
                title: format!("{task}: TER vs steps"),
                x_label: "sampling steps (log scale)".into(),
                y_label: format!(
                    "TER (generative perplexity{})",
                    if y_scale == Scale::Log10 { ", log" } else { "" }
                ),
                x_scale: Scale::Log2,
                y_scale,
                y_zero: false,
                series: s,
                hlines: hl,
                frontier: None,
                x_hint: steps_hint,
                message: (!drawn && !omitted.is_empty())
                    .then(|| "TER infinite at every step count (samples with q = 0)".to_string()),
            };
            plots.push(Plot {
                title: "TER vs steps".into(),
                svg: chart.has_data().then(|| chart.render()),
                note: if chart.has_data() {
                    (!notes.is_empty()).then(|| notes.join(" "))
                } else {
                    Some(format!(
                        "No finite TER to plot. {}",
                        if notes.is_empty() {
                            String::new()
                        } else {
                            notes.join(" ")
                        }
                    ))
                },
            });
        }
        // SER against steps.
        {
            let all_zero = ok.iter().all(|r| r.ser.unwrap_or(0.0) == 0.0);
            let (s, _) = steps_series(&|r| r.ser, &|r| r.ser_ci, "SER", 3);
            let hl = ar_lines(&|r| r.ser, &|r| r.ser_ci);
            let chart = Chart {
                title: format!("{task}: SER vs steps"),
                x_label: "sampling steps (log scale)".into(),
                y_label: "SER (share of samples with q = 0)".into(),
                x_scale: Scale::Log2,
                y_scale: Scale::Linear,
                y_zero: true,
                series: s,
                hlines: hl,
                frontier: None,
                x_hint: steps_hint,
                message: None,
            };
            let n_max = ok.iter().map(|r| r.n).max().unwrap_or(0);
            plots.push(if all_zero {
                Plot {
                    title: "SER vs steps".into(),
                    svg: None,
                    note: Some(format!(
                        "SER is 0 in every cell (no sample left the language's support; 95% upper bound {} at n = {n_max}), so there is no SER plot.",
                        fmt_num(Some(metrics::wilson_ci(0, n_max).1), 3)
                    )),
                }
            } else {
                Plot {
                    title: "SER vs steps".into(),
                    svg: chart.has_data().then(|| chart.render()),
                    note: (!chart.has_data()).then(|| "No SER to plot.".to_string()),
                }
            });
        }
        // Speedup against steps.
        {
            let (s, _) = steps_series(&|r| r.speedup, &|_| None, "speedup ×", 2);
            let hl = vec![HLine {
                y: 1.0,
                band: None,
                label: "AR throughput".into(),
                color: "#666".into(),
                dash: "6 3",
                text: "AR = 1×".into(),
            }];
            let chart = Chart {
                title: format!("{task}: speedup vs steps"),
                x_label: "sampling steps (log scale)".into(),
                y_label: "tokens/s relative to AR (log)".into(),
                x_scale: Scale::Log2,
                y_scale: Scale::Log2,
                y_zero: false,
                series: s,
                hlines: hl,
                frontier: None,
                x_hint: steps_hint,
                message: None,
            };
            let has = chart.series.iter().any(|s| !s.points.is_empty());
            plots.push(Plot {
                title: "Speedup vs steps".into(),
                svg: has.then(|| chart.render()),
                note: (!has).then(|| {
                    "No speedup to plot (no AR cell with the same task, length, seed and batch size finished)."
                        .to_string()
                }),
            });
        }

        // Quality against cost: every non-reference cell as a point, AR cells as squares.
        let mut cost_plots = Vec::new();
        let cost_defs: [(&str, &str, Scale); 2] = [
            ("NFE", "network calls per sample (log)", Scale::Log2),
            ("wall", "wall seconds for the cell (log)", Scale::Log10),
        ];
        let ser_all_zero = ok.iter().all(|r| r.ser.unwrap_or(0.0) == 0.0);
        for quality in ["TER", "SER"] {
            if quality == "SER" && ser_all_zero {
                cost_plots.push(Plot {
                    title: "SER vs cost".into(),
                    svg: None,
                    note: Some("SER is 0 in every cell, so there are no SER-vs-cost plots.".into()),
                });
                continue;
            }
            for (cost, cost_label, cost_scale) in cost_defs {
                let value = |r: &CellSummary| -> Option<(f64, Option<(f64, f64)>)> {
                    match quality {
                        "TER" => r.ter.map(|v| (v, r.ter_ci)),
                        _ => r.ser.map(|v| (v, r.ser_ci)),
                    }
                };
                let x_of = |r: &CellSummary| -> Option<f64> {
                    match cost {
                        "NFE" => r.nfe,
                        _ => r.wall_seconds,
                    }
                };
                let mut s_out = Vec::new();
                let mut omitted = 0usize;
                let mut push_series = |label: &str, pts: &[&CellSummary], marker: Marker| {
                    let mut points = Vec::new();
                    for r in pts {
                        match (x_of(r), value(r)) {
                            (Some(x), Some((y, ci))) if x > 0.0 && y.is_finite() => {
                                points.push(Point {
                                    x,
                                    y,
                                    lo: ci.map(|c| c.0),
                                    hi: ci.map(|c| c.1),
                                    tip: format!(
                                        "{label}{}: {quality} {}, {cost} {}",
                                        r.steps.map(|s| format!(", {s} steps")).unwrap_or_default(),
                                        fmt_num(Some(y), 4),
                                        fmt_num(Some(x), 3)
                                    ),
                                })
                            }
                            _ => omitted += 1,
                        }
                    }
                    s_out.push(Series {
                        name: label.to_string(),
                        color: color(label),
                        points,
                        line: marker == Marker::Circle,
                        band: false,
                        marker,
                    });
                };
                for (label, pts) in &series {
                    push_series(label, pts, Marker::Circle);
                }
                for a in &ar {
                    let label = series_label(a, many_lengths, many_seeds);
                    push_series(&label, &[*a], Marker::Square);
                }
                let mut hl = Vec::new();
                if quality == "TER" {
                    optimal_line(&mut hl);
                }
                let all_zero = quality == "SER" && ok.iter().all(|r| r.ser.unwrap_or(0.0) == 0.0);
                let y_scale = if quality == "TER" {
                    ter_scale(&s_out, &hl)
                } else {
                    Scale::Linear
                };
                let chart = Chart {
                    title: format!("{task}: {quality} vs {cost}"),
                    x_label: cost_label.into(),
                    y_label: if y_scale == Scale::Log10 {
                        format!("{quality} (log)")
                    } else {
                        quality.into()
                    },
                    x_scale: cost_scale,
                    y_scale,
                    y_zero: quality == "SER",
                    series: s_out,
                    hlines: hl,
                    frontier: match (quality, optimal_ter) {
                        ("TER", Some(o)) => Some(Frontier::Toward(o)),
                        ("TER", None) => Some(Frontier::Lower),
                        _ => Some(Frontier::Lower),
                    },
                    x_hint: None,
                    message: None,
                };
                let has = chart.series.iter().any(|s| !s.points.is_empty());
                cost_plots.push(Plot {
                    title: format!("{quality} vs {cost}"),
                    svg: (has && !all_zero).then(|| chart.render()),
                    note: if all_zero {
                        Some("SER is 0 in every cell.".into())
                    } else if !has {
                        Some(format!("No finite {quality} to plot."))
                    } else if omitted > 0 {
                        Some(format!(
                            "{omitted} cell(s) not drawn ({quality} infinite or no cost). Ringed: the efficiency–accuracy frontier (cells no cheaper cell beats in {}).",
                            if quality == "TER" { "closeness to the optimal TER" } else { "SER" }
                        ))
                    } else {
                        Some(format!(
                            "Ringed: the efficiency–accuracy frontier (cells no cheaper cell beats in {}).",
                            if quality == "TER" { "closeness to the optimal TER" } else { "SER" }
                        ))
                    },
                });
            }
        }

        // Sample sequences.
        let samples_view: Vec<CellSamples> = ok
            .iter()
            .map(|r| {
                let mut rows = by_unit.get(r.unit.as_str()).cloned().unwrap_or_default();
                rows.sort_by_key(|s| s.index);
                let mut chosen: Vec<&SampleRecord> = rows.iter().copied().take(2).collect();
                for s in rows.iter().filter(|s| !s.in_support) {
                    if chosen.len() >= SAMPLES_PER_CELL {
                        break;
                    }
                    if !chosen.iter().any(|c| c.index == s.index) {
                        chosen.push(s);
                    }
                }
                for s in rows.iter() {
                    if chosen.len() >= SAMPLES_PER_CELL {
                        break;
                    }
                    if !chosen.iter().any(|c| c.index == s.index) {
                        chosen.push(s);
                    }
                }
                chosen.sort_by_key(|s| s.index);
                CellSamples {
                    key: r.key.clone(),
                    unit: r.unit.clone(),
                    n: rows.len(),
                    shown: chosen.into_iter().map(sample_view).collect(),
                }
            })
            .collect();

        let mut lengths: Vec<usize> = rows.iter().map(|r| r.length).collect();
        lengths.sort();
        lengths.dedup();
        let task_legend: Vec<LegendEntry> = legend
            .iter()
            .filter(|l| {
                rows.iter().any(|r| {
                    r.model != "reference"
                        && r.status == CellStatus::Ok
                        && series_label(r, many_lengths, many_seeds) == l.label
                })
            })
            .map(|l| LegendEntry {
                label: l.label.clone(),
                color: l.color.clone(),
                ar: l.ar,
            })
            .collect();
        let task_metrics = crate::registry::declared(
            &cells
                .iter()
                .filter(|c| c.cell.task.name == task)
                .cloned()
                .collect::<Vec<_>>(),
        );
        tasks.push(TaskSection {
            task_metrics,
            name: task.to_string(),
            anchor: format!("task-{}", anchor(task)),
            label: description.map(|d| d.label.clone()).unwrap_or_default(),
            vocab_size: description.map(|d| d.vocab_size),
            lengths,
            optimal_ter,
            support_log10_density: description.and_then(|d| d.support_log10_density),
            details: description
                .filter(|d| !d.details.is_null())
                .map(|d| d.details.to_string()),
            verdict_lines,
            legend: task_legend,
            plots,
            cost_plots,
            rows: rows.iter().map(|r| (*r).clone()).collect(),
            ar_units: rows
                .iter()
                .filter(|r| is_ar(r))
                .map(|r| r.unit.clone())
                .collect(),
            samples: samples_view,
        });
    }
    let theory = crate::theory::analyse(cells, summary);
    Report {
        tasks,
        verdicts,
        legend,
        theory_view: theory.as_ref().map(crate::theory_view::view),
        theory,
    }
}

/// TER axes go logarithmic when the values span more than a factor of 4 (one-step samplers
/// reach many times the optimum; the interesting part is near it).
fn ter_scale(series: &[Series], hlines: &[HLine]) -> Scale {
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.y))
        .chain(hlines.iter().map(|h| h.y))
        .filter(|y| y.is_finite() && *y > 0.0)
        .collect();
    let (lo, hi) = ys
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), &y| (a.min(y), b.max(y)));
    if !ys.is_empty() && hi / lo > 4.0 {
        Scale::Log10
    } else {
        Scale::Linear
    }
}

/// An HTML id fragment: letters, digits and `-`.
pub fn anchor(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A sample for display: tokens separated by spaces (single digits would otherwise run
/// together), split around the first out-of-language token.
fn sample_view(s: &SampleRecord) -> SampleView {
    let join = |toks: &[u32]| -> String {
        let parts: Vec<String> = toks.iter().map(|t| t.to_string()).collect();
        parts.join(" ")
    };
    let (before, bad, after) = match s.first_invalid {
        Some(i) if i < s.tokens.len() => (
            join(&s.tokens[..i]),
            s.tokens[i].to_string(),
            join(&s.tokens[i + 1..]),
        ),
        _ => (join(&s.tokens), String::new(), String::new()),
    };
    SampleView {
        index: s.index,
        before: if !bad.is_empty() && !before.is_empty() {
            format!("{before} ")
        } else {
            before
        },
        after: if after.is_empty() {
            after
        } else {
            format!(" {after}")
        },
        bad,
        log_q: s.log_q,
        in_support: s.in_support,
        first_invalid: s.first_invalid,
        extra: (!s.extra.is_empty()).then(|| serde_json::to_string(&s.extra).unwrap_or_default()),
    }
}

/// The verdict of one MDM series against its AR baseline (or the exact optimum without one).
fn verdict(
    task: &str,
    label: &str,
    points: &[&CellSummary],
    baseline: Option<&CellSummary>,
    optimal_ter: Option<f64>,
    qualify_baseline: bool,
) -> Verdict {
    let ter_ok = |r: &CellSummary| -> bool {
        match baseline {
            Some(b) => r.ter.is_some() && overlaps(r.ter_ci, b.ter_ci),
            None => match (r.ter_ci, optimal_ter) {
                (Some((lo, hi)), Some(o)) => lo <= o && o <= hi,
                _ => false,
            },
        }
    };
    let ser_ok = |r: &CellSummary| -> bool {
        match baseline {
            Some(b) => overlaps(r.ser_ci, b.ser_ci),
            None => r.ser_ci.is_some_and(|(lo, _)| lo == 0.0),
        }
    };
    // Fewest steps from which the test holds at every larger step count.
    let from = |test: &dyn Fn(&CellSummary) -> bool| -> Option<usize> {
        let mut best = None;
        for r in points.iter().rev() {
            if test(r) {
                best = r.steps;
            } else {
                break;
            }
        }
        best
    };
    let ter_match = from(&ter_ok);
    let ser_match = from(&ser_ok);
    let both = from(&|r| ter_ok(r) && ser_ok(r));
    let at = |steps: Option<usize>| points.iter().find(|r| r.steps == steps && steps.is_some());
    let matched = at(both);
    let fewest = points[0];
    let rule = points[0].baseline_rule.clone();
    let against = match (baseline, &rule) {
        (Some(b), Some(rule)) => {
            let l = series_label(b, qualify_baseline, qualify_baseline);
            format!("AR ({l}; {rule})")
        }
        (Some(b), None) => {
            let l = series_label(b, qualify_baseline, qualify_baseline);
            format!("AR ({l})")
        }
        (None, Some(rule)) => format!("the exact optimum (no AR baseline: {rule})"),
        (None, None) => "the exact optimum (no AR cell)".to_string(),
    };
    let steps_word = |s: usize| {
        if s == 1 {
            "1 step".to_string()
        } else {
            format!("{s} steps")
        }
    };
    let within = if baseline.is_some() {
        "within the AR's 95% CI"
    } else {
        "consistent with the optimum"
    };
    let describe = |m: Option<usize>, what: &str, closest: String| -> String {
        match m {
            Some(s) if Some(s) == fewest.steps && points.len() > 1 => {
                format!("{what} {within} at every step count")
            }
            Some(s) if Some(s) == fewest.steps => format!("{what} {within}"),
            Some(s) => format!("{what} {within} from {} on", steps_word(s)),
            None => format!("{what} never {within}{closest}"),
        }
    };
    // The finite point closest to the baseline, for "never" verdicts.
    let closest = |value: &dyn Fn(&CellSummary) -> Option<f64>, target: Option<f64>, digits| {
        let target = match target {
            Some(t) => t,
            None => return String::new(),
        };
        points
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
    };
    let ter_target = baseline.and_then(|b| b.ter).or(optimal_ter);
    let ser_target = baseline.and_then(|b| b.ser).or(Some(0.0));
    let mut sentence = format!(
        "{label} vs {against}: {}; {}",
        describe(ter_match, "TER", closest(&|r| r.ter, ter_target, 3)),
        describe(ser_match, "SER", closest(&|r| r.ser, ser_target, 3))
    );
    if let Some(m) = matched {
        sentence.push_str(&format!(
            ". With both, from {}: {} network calls per sample{}",
            steps_word(m.steps.unwrap_or(0)),
            fmt_num(m.nfe, 1),
            match (m.speedup, baseline.and_then(|b| b.nfe)) {
                (Some(sp), Some(bn)) =>
                    format!(" (AR: {}), {:.2}× AR's tokens/s", fmt_num(Some(bn), 0), sp),
                (Some(sp), None) => format!(", {sp:.2}× AR's tokens/s"),
                _ => String::new(),
            }
        ));
    }
    if points.len() > 1 || matched.is_none() {
        sentence.push_str(&format!(
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
            fewest
                .speedup
                .map(|s| format!(", {s:.2}× AR's tokens/s"))
                .unwrap_or_default()
        ));
    }
    sentence.push('.');
    if let Some(o) = optimal_ter {
        let below: Vec<String> = points
            .iter()
            .filter(|r| r.ter_ci.is_some_and(|(_, hi)| hi < o))
            .map(|r| r.steps.unwrap_or(0).to_string())
            .collect();
        if !below.is_empty() {
            sentence.push_str(&format!(
                " TER below the optimum (at {} steps): those samples are less diverse than the language — generative perplexity rewards repetition.",
                below.join(", ")
            ));
        }
    }
    Verdict {
        task: task.to_string(),
        anchor: format!("task-{}", anchor(task)),
        series: label.to_string(),
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
        match_speedup: matched.and_then(|m| m.speedup),
        match_nfe: matched.and_then(|m| m.nfe),
        fewest_steps: fewest.steps,
        fewest_ter: fewest.ter,
        fewest_ter_infinite: fewest.ter.is_none() && fewest.zero_probability_samples > 0,
        fewest_ser: fewest.ser,
        fewest_speedup: fewest.speedup,
        sentence,
    }
}

pub mod svg;
