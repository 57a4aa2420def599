//! `summary.json` and the HTML report, both derived from the run directory's JSONL files.

use crate::metrics::CellSummary;
use crate::results::{write_atomic, CellStatus, RunDir, REPORT, SUMMARY};
use crate::run::ordered_summary;
use crate::suite::CellSpec;
use anyhow::{Context, Result};
use minijinja::{context, Environment};

/// The report template, compiled into the binary so a report can be written anywhere.
const REPORT_TEMPLATE: &str = include_str!("../../templates/report.html");

/// Recompute the summary from the run's files and write `summary.json` and `report.html`.
pub fn write_all(dir: &RunDir, order: Option<&[CellSpec]>) -> Result<Vec<CellSummary>> {
    let (cells, samples) = dir.load_consistent()?;
    let summary = ordered_summary(&cells, &samples, order);
    write_atomic(&dir.file(SUMMARY), &serde_json::to_vec_pretty(&summary)?)?;
    let manifest = dir.read_manifest()?;
    let html = render_report(&manifest, &summary)?;
    write_atomic(&dir.file(REPORT), html.as_bytes())?;
    Ok(summary)
}

/// Render the run report. Every value is auto-escaped (the template name ends in `.html`).
pub fn render_report(
    manifest: &crate::results::Manifest,
    summary: &[CellSummary],
) -> Result<String> {
    let mut env = Environment::new();
    env.add_template("report.html", REPORT_TEMPLATE)?;
    env.add_filter("num", |v: Option<f64>, digits: Option<usize>| -> String {
        match v {
            Some(x) if x.is_finite() => format!("{x:.*}", digits.unwrap_or(4)),
            _ => "—".to_string(),
        }
    });
    let mut tasks: Vec<String> = Vec::new();
    for s in summary {
        if !tasks.contains(&s.task) {
            tasks.push(s.task.clone());
        }
    }
    let failed: Vec<&CellSummary> = summary
        .iter()
        .filter(|s| s.status == CellStatus::Failed)
        .collect();
    let by_task: Vec<(String, Vec<&CellSummary>)> = tasks
        .iter()
        .map(|t| (t.clone(), summary.iter().filter(|s| &s.task == t).collect()))
        .collect();
    env.get_template("report.html")?
        .render(context! {
            manifest => manifest,
            by_task => by_task,
            failed => failed,
            total => summary.len(),
        })
        .context("cannot render the report")
}
