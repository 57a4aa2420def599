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
use crate::metrics::CellSummary;
use crate::results::{
    write_atomic, CellRecord, CellStatus, Manifest, RunDir, SampleRecord, TextCellRun,
};
use crate::results::{REPORT, SUMMARY};
use crate::suite::CellSpec;
use anyhow::{Context, Result};
use dlm_plugin_api::ErrorKind;
use minijinja::{context, Environment};
use serde::Serialize;

pub mod closed_form;
mod headline;
pub mod likelihood;
pub mod prompt_templates;
pub mod speed;
pub mod svg;
mod task;
pub mod theory_view;
mod training_table;
pub mod trajectories;
mod verdict;

pub use headline::HeadlineLine;
pub(crate) use task::replayed;
use training_table::training_rows;
pub use training_table::TrainingRow;
pub use verdict::{baseline_warnings, select_headline, BaselineWarning, Verdict, VerdictTable};

/// The machine-readable twin of `report.html`.
pub const REPORT_JSON: &str = "report.json";

/// Sample sequences shown per cell.
const SAMPLES_PER_CELL: usize = 4;

/// All templates, compiled into the binary so a report can be written anywhere. `report.html`
/// includes one part per section (`templates/report/`).
const TEMPLATES: &[(&str, &str)] = &[
    ("style.css", include_str!("../../../templates/style.css")),
    (
        "report.html",
        include_str!("../../../templates/report.html"),
    ),
    (
        "report/verdict.html",
        include_str!("../../../templates/report/verdict.html"),
    ),
    (
        "report/theory.html",
        include_str!("../../../templates/report/theory.html"),
    ),
    (
        "report/task_head.html",
        include_str!("../../../templates/report/task_head.html"),
    ),
    (
        "report/task_plots.html",
        include_str!("../../../templates/report/task_plots.html"),
    ),
    (
        "report/task_aup.html",
        include_str!("../../../templates/report/task_aup.html"),
    ),
    (
        "report/task_cost.html",
        include_str!("../../../templates/report/task_cost.html"),
    ),
    (
        "report/task_cells.html",
        include_str!("../../../templates/report/task_cells.html"),
    ),
    (
        "report/task_samples.html",
        include_str!("../../../templates/report/task_samples.html"),
    ),
    (
        "report/task_speed.html",
        include_str!("../../../templates/report/task_speed.html"),
    ),
    (
        "report/task_closed_form.html",
        include_str!("../../../templates/report/task_closed_form.html"),
    ),
    (
        "report/task_templates.html",
        include_str!("../../../templates/report/task_templates.html"),
    ),
    (
        "report/task_trajectories.html",
        include_str!("../../../templates/report/task_trajectories.html"),
    ),
    (
        "report/likelihood.html",
        include_str!("../../../templates/report/likelihood.html"),
    ),
    (
        "compare.html",
        include_str!("../../../templates/compare.html"),
    ),
    (
        "history.html",
        include_str!("../../../templates/history.html"),
    ),
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
    let mut manifest = dir.read_manifest()?;
    // The text cells' record follows the cells (a resumed or merged run has more of them),
    // in the summary's (suite) order.
    let by_unit: std::collections::HashMap<&str, &CellRecord> =
        cells.iter().map(|c| (c.unit.as_str(), c)).collect();
    let text_cells: Vec<TextCellRun> = summary
        .iter()
        .filter_map(|s| TextCellRun::of(by_unit.get(s.unit.as_str())?))
        .collect();
    if manifest.text_cells != text_cells {
        manifest.text_cells = text_cells;
        dir.write_manifest(&manifest)?;
    }
    let mut report = build(&manifest, &cells, &summary, &samples);
    report.likelihood = likelihood::sections(&crate::likelihood::read_records(&dir.path)?);
    write_atomic(
        &dir.file(REPORT_JSON),
        &serde_json::to_vec_pretty(&report.twin(&manifest, &summary))?,
    )?;
    let training = training_rows(&crate::training::read_training(dir)?);
    let html = render(&manifest, &report, &summary, &training)?;
    write_atomic(&dir.file(REPORT), html.as_bytes())?;
    Ok(summary)
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
            failed_groups => failure_groups(&failed),
            training => training,
            total => summary.len(),
            ok => summary.len() - failed.len(),
        })
        .context("cannot render the report")
}

/// Failed cells grouped by what the user has to do, in [`ErrorKind::ALL`]'s order, then the
/// cells whose worker itself failed (a crash, a timeout, a limit); empty groups left out.
fn failure_groups<'a>(failed: &[&'a CellSummary]) -> Vec<serde_json::Value> {
    let group = |kind: Option<ErrorKind>| -> Vec<&'a CellSummary> {
        failed
            .iter()
            .copied()
            .filter(|s| s.error_kind == kind)
            .collect()
    };
    let mut groups: Vec<(String, String, Vec<&CellSummary>)> = ErrorKind::ALL
        .into_iter()
        .map(|kind| {
            let advice = match kind {
                ErrorKind::BadConfig => "fix the suite: the cause names the key",
                ErrorKind::BadData => "fix or replace the file or checkpoint the cause names",
                ErrorKind::Unsupported => "the component cannot do this: pick another one",
                _ => "a bug in a plugin or in dlm-bench: please report it with the cause",
            };
            (
                kind.label().to_string(),
                advice.to_string(),
                group(Some(kind)),
            )
        })
        .collect();
    groups.push((
        "not run, or the worker failed".into(),
        "the plugin could not be loaded or the model not trained, or the worker crashed, timed out or exceeded a limit: the cause says which".into(),
        group(None),
    ));
    groups
        .into_iter()
        .filter(|(_, _, cells)| !cells.is_empty())
        .map(|(label, advice, cells)| {
            serde_json::json!({"label": label, "advice": advice, "cells": cells})
        })
        .collect()
}

/// Everything the template shows beyond the manifest and the summary rows.
#[derive(Debug, Serialize)]
pub struct Report {
    pub tasks: Vec<TaskSection>,
    pub verdicts: Vec<Verdict>,
    /// One generated sentence per task: its best finding ([`headline::summarize`]).
    pub headline: Vec<HeadlineLine>,
    /// The verdicts as the page shows them: one table per task kind and headline metrics.
    pub verdict_tables: Vec<VerdictTable>,
    /// Set when the run has no AR cell at all (an oracle-only suite): what the verdicts are
    /// judged against instead, said in one line rather than an empty baseline column.
    pub no_ar_model: Option<String>,
    /// Series label → colour, for legends.
    pub legend: Vec<LegendEntry>,
    /// The paper's theorems checked on the run's oracle cells (`theory::analyse`), if it has
    /// the cells for them; `theory_view` is what the page shows of it.
    pub theory: Option<crate::theory::TheoryReport>,
    pub theory_view: Option<theory_view::TheoryView>,
    /// Tasks whose diffusion series lack an AR baseline they should have
    /// ([`baseline_warnings`]), shown above the verdict.
    pub baseline_warnings: Vec<BaselineWarning>,
    /// How the cells were timed: `--jobs`, CPU, cores, load ([`crate::results::timing_line`]).
    pub timing: Option<String>,
    /// The speed verdict's caveat when cells shared cores ([`crate::results::shared_cores_note`]).
    pub shared_cores: Option<String>,
    /// `run --tasks/--models/--limit` as given, when the run covers part of its suite.
    pub filters: Option<String>,
    /// "The price of speed" of each formal task whose cells vary the cache or the model's
    /// block size ([`speed::section`]); the template shows it in the task's section.
    pub speed: Vec<speed::SpeedSection>,
    /// Each task's declared closed-form accuracy against its cells ([`closed_form::section`]:
    /// parallel-decoding tasks, API 1.8); the template shows it in the task's section.
    pub closed_forms: Vec<closed_form::ClosedFormSection>,
    /// Accuracy per prompt template and the paired differences between samplers, for each
    /// task whose samples name several templates ([`prompt_templates::section`]).
    pub templates: Vec<prompt_templates::TemplateSection>,
    /// Each traced task's trajectories ([`trajectories::section`], suite `trace: true`).
    pub trajectories: Vec<trajectories::TrajectorySection>,
    /// The suite's `likelihood:` section per task ([`likelihood::sections`]; run files only).
    pub likelihood: Vec<likelihood::LikelihoodSection>,
}

#[derive(Debug, Serialize)]
pub struct LegendEntry {
    pub label: String,
    pub color: String,
    pub ar: bool,
    /// Replayed from a file (no network call): a reference line, not a series against steps.
    pub replayed: bool,
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
    /// Which columns of the "All cells" table have a value in some row of this task.
    pub columns: CellColumns,
    pub samples: Vec<CellSamples>,
    /// Text tasks: accuracy under parallelism per series (d3LLM's AUP).
    pub aup: Option<AupTable>,
    /// How the task's numbers are made, as its cells declare it (one entry per distinct
    /// declaration; usually one): scoring mode, template, data, filters, differences.
    pub provenance: Vec<dlm_plugin_api::TaskProvenance>,
    /// Why some declared metric has no value in some cell (e.g. pass@k with too few samples),
    /// each reason once.
    pub metric_notes: Vec<String>,
    /// How many of the task's documents its cells scored, where the suite selected some
    /// (`doc_ids:`, `docs_from_replay:`), e.g. "5 of 164 documents scored (…)".
    pub document_notes: Vec<String>,
}

/// The "All cells" table's optional columns for one task: a column is shown when some row has
/// a value in it (text and code tasks have no TER, entropy or first error), and a cell that
/// made no forwards (a replay) shows "—" for steps and every cost.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CellColumns {
    pub steps: bool,
    pub ter: bool,
    pub ser: bool,
    pub unigram_entropy: bool,
    pub first_error: bool,
    pub nfe: bool,
    pub tokens_per_forward: bool,
    pub wall: bool,
    pub tokens_per_second: bool,
    pub speedup: bool,
    /// Task-declared metrics with a value (or a note) in some row, by name.
    pub metrics: Vec<String>,
    /// Labels of declared metrics with no value in any row (not shown).
    pub empty_metrics: Vec<String>,
    /// Cells that made no forwards (replays): steps, NFE, tokens per forward, wall time,
    /// throughput and speedup do not apply.
    pub no_forwards: Vec<String>,
}

/// AUP of every series of a text task against one comparison pool.
#[derive(Debug, Clone, Serialize)]
pub struct AupTable {
    /// The accuracy metric (the task's first declared higher-is-better rate).
    pub metric: String,
    /// The best accuracy in the pool, in percent: AUP's reference `y_max` (of the pool's
    /// points only).
    pub y_max: f64,
    /// The series in the pool (every model series of the task in this run that made
    /// forwards).
    pub pool: Vec<String>,
    /// Series left out of the pool, with why (a replay makes no forwards, so it has no tokens
    /// per forward and no place on AUP's axis).
    pub left_out: Vec<String>,
    /// Penalty factor α of the quality weight.
    pub alpha: f64,
    /// Documents the CI resamples, and how many resamples it draws.
    pub documents: usize,
    pub resamples: usize,
    pub rows: Vec<AupRow>,
}

/// One series' AUP.
#[derive(Debug, Clone, Serialize)]
pub struct AupRow {
    pub series: String,
    pub aup: Option<f64>,
    /// Bootstrap 95% CI over documents ([`crate::stats::aup_ci`]).
    pub ci: Option<(f64, f64)>,
    /// (tokens per forward, accuracy %) points it was computed from.
    pub points: Vec<(f64, f64)>,
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
    /// A text task's cell: completions shown as a reader needs them ([`TextSampleView`]).
    pub text: bool,
    pub shown: Vec<SampleView>,
}

/// One sample sequence, split around its first invalid position for highlighting (a text
/// task's completion around its first wrong step's line).
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
    /// Text tasks: what a reader needs around the completion.
    pub text: Option<TextSampleView>,
}

/// A text task's sample beside its completion: the prompt, the gold answer, the extracted
/// answer, the outcome and its cause, and the scoring fields as a key/value table. Runs written
/// before the worker recorded the prompt and the reference (and the reasoning tasks their
/// extracted and gold answers) show what they have.
#[derive(Debug, Default, Serialize)]
pub struct TextSampleView {
    pub prompt_id: Option<String>,
    pub prompt: Option<String>,
    /// The gold answer (`gold`), else the reference completion (`reference`).
    pub gold: Option<String>,
    /// `gold` is a whole reference completion (shown in `<pre>`), not a short answer.
    pub gold_is_completion: bool,
    /// That reference completion is the completion itself (the reference row, a gold replay).
    pub gold_is_this: bool,
    /// The extracted answers: (filter, answer or "none found").
    pub extracted: Vec<(String, String)>,
    /// "pass"/"fail" (a task that records `passed`), else "correct"/"incorrect".
    pub outcome: String,
    pub ok: bool,
    /// Why it failed, where the task says (`cause`, `stage`, `failing_test`, `message`; the
    /// first wrong step; an empty or masked completion).
    pub cause: Option<String>,
    /// The program that ran (code tasks' `code`), when it differs from the completion.
    pub program: Option<String>,
    /// Every other scoring field, as (key, value) text.
    pub fields: Vec<(String, String)>,
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
                    "aup": t.aup,
                    "provenance": t.provenance,
                    "metric_notes": t.metric_notes,
                    "document_notes": t.document_notes,
                    "plots": t.plots.iter().chain(&t.cost_plots).map(|p| serde_json::json!({
                        "title": p.title, "drawn": p.svg.is_some(), "note": p.note,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::json!({
            "format": "dlm-bench report 1",
            "run": identity(manifest),
            "headline": self.headline.iter().map(|h| serde_json::json!({
                "task": h.task, "sentence": h.sentence,
            })).collect::<Vec<_>>(),
            "no_ar_model": self.no_ar_model,
            "verdicts": self.verdicts,
            "baseline_warnings": self.baseline_warnings,
            "timing": self.timing,
            "shared_cores": self.shared_cores,
            "filters": self.filters,
            "theory": self.theory,
            "price_of_speed": self.speed.iter().map(speed::SpeedSection::twin).collect::<Vec<_>>(),
            "closed_forms": self.closed_forms.iter().map(closed_form::ClosedFormSection::twin).collect::<Vec<_>>(),
            "prompt_templates": self.templates,
            "trajectories": self.trajectories.iter().map(trajectories::TrajectorySection::twin).collect::<Vec<_>>(),
            "likelihood": self.likelihood.iter().map(likelihood::LikelihoodSection::twin).collect::<Vec<_>>(),
            "tasks": tasks,
            "failed": summary.iter().filter(|s| s.status == CellStatus::Failed)
                .map(|s| serde_json::json!({
                    "key": s.key, "unit": s.unit, "cause": s.cause, "error_kind": s.error_kind,
                }))
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
        "sessions": m.sessions,
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

/// The sampler settings a cell's key states besides its name and steps (`block_length=8,
/// cache=dual`: a schedule and parameters), read from the key's `sampler@steps,…` segment
/// (`task/model/sampler@steps,…/L<length>/seed<seed>`); empty when it states none.
fn sampler_settings(s: &CellSummary) -> String {
    let head = format!("{}/{}/", s.task, s.model);
    let tail = format!("/L{}/seed{}", s.length, s.seed);
    let Some(middle) = s
        .key
        .strip_prefix(&head)
        .and_then(|rest| rest.find(&tail).map(|end| &rest[..end]))
    else {
        return String::new();
    };
    match middle.split_once(',') {
        Some((_, settings)) => settings.replace('"', "").replace(',', ", "),
        None => String::new(),
    }
}

fn overlaps(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> bool {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => a0 <= b1 && b0 <= a1,
        _ => false,
    }
}

/// An HTML id fragment: letters, digits and `-`.
pub fn anchor(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Assemble the report's sections from the summary rows: one section per task, in the order
/// the summary first names them.
pub fn build(
    manifest: &Manifest,
    cells: &[CellRecord],
    summary: &[CellSummary],
    samples: &[SampleRecord],
) -> Report {
    let run = task::RunView::new(cells, summary, samples);
    let mut task_names: Vec<&str> = Vec::new();
    for s in summary {
        if !task_names.contains(&s.task.as_str()) {
            task_names.push(&s.task);
        }
    }
    let mut tasks = Vec::new();
    let mut verdicts = Vec::new();
    let headline_order = task_names.clone();
    let mut speed = Vec::new();
    let mut closed_forms = Vec::new();
    let mut templates = Vec::new();
    let mut trajectories = Vec::new();
    for task in task_names {
        let (section, task_verdicts) = task::section(&run, task, summary);
        tasks.push(section);
        verdicts.extend(task_verdicts);
        speed.extend(speed::section(task, cells, summary));
        closed_forms.extend(closed_form::section(task, cells, summary));
        templates.extend(prompt_templates::section(task, cells, summary, samples));
        trajectories.extend(trajectories::section(task, summary));
    }
    let theory = crate::theory::analyse(cells, summary);
    let baseline_warnings = baseline_warnings(summary, &manifest.filters);
    for v in &mut verdicts {
        v.baseline_missing =
            v.baseline.is_none() && baseline_warnings.iter().any(|w| w.task == v.task);
    }
    let no_ar_model = (run.legend.iter().all(|l| !l.ar) && baseline_warnings.is_empty())
        .then(|| verdict::no_ar_line(&verdicts))
        .flatten();
    Report {
        tasks,
        headline: headline::summarize(&headline_order, &verdicts),
        verdict_tables: verdict::tables(&verdicts),
        no_ar_model,
        verdicts,
        baseline_warnings,
        timing: crate::results::timing_line(&manifest.sessions),
        shared_cores: crate::results::shared_cores_note(&manifest.sessions),
        filters: (!manifest.filters.is_empty()).then(|| manifest.filters.describe()),
        legend: run.legend,
        theory_view: theory.as_ref().map(theory_view::view),
        theory,
        speed,
        closed_forms,
        templates,
        trajectories,
        likelihood: Vec::new(),
    }
}
