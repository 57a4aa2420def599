//! `export`: a finished run's `summary.json` as a CSV or Markdown table, one row per cell (task,
//! model, sampler, steps, length, seed, samples, status, then every metric some cell has, with
//! its 95% CI where it has one), for spreadsheets, papers and issue comments.
//!
//! CSV values are `summary.json`'s numbers printed in full (Rust's shortest round-trip form), so
//! they read back equal; an empty field is a figure the cell does not have. Markdown rounds to
//! each metric's digits and writes a CI as `value [low, high]`.

use crate::registry::{self, Aggregate, MetricDef};
use crate::results::{RunDir, SUMMARY};
use crate::summary::CellSummary;
use anyhow::{Context, Result};
use std::path::Path;

/// The table format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Markdown,
}

/// Where a column's figures come from.
enum Figure {
    /// A registry metric: its value and interval.
    Metric(MetricDef),
    /// A summary field without an interval.
    Plain(fn(&CellSummary) -> Option<f64>),
}

/// A column of figures: its value, and its interval where the metric has one.
struct Column {
    name: String,
    label: String,
    digits: usize,
    figure: Figure,
    /// The interval's column suffixes: a CI for quality metrics, the quartiles for timings.
    interval: Option<(&'static str, &'static str)>,
}

impl Column {
    fn of(def: MetricDef) -> Column {
        let interval = match def.aggregate {
            Aggregate::Timing => ("q1", "q3"),
            _ => ("ci_low", "ci_high"),
        };
        Column {
            name: def.name.clone(),
            label: def.label.clone(),
            digits: def.digits,
            interval: Some(interval),
            figure: Figure::Metric(def),
        }
    }

    fn plain(name: &str, digits: usize, value: fn(&CellSummary) -> Option<f64>) -> Column {
        Column {
            name: name.into(),
            label: name.replace('_', " "),
            digits,
            figure: Figure::Plain(value),
            interval: None,
        }
    }

    fn value(&self, s: &CellSummary) -> Option<f64> {
        match &self.figure {
            Figure::Metric(def) => def.value(s),
            Figure::Plain(value) => value(s),
        }
    }

    fn ci(&self, s: &CellSummary) -> Option<(f64, f64)> {
        match &self.figure {
            Figure::Metric(def) => def.ci(s),
            Figure::Plain(_) => None,
        }
    }
}

/// Read a run directory's summary rows.
pub fn load(run_dir: &Path) -> Result<Vec<CellSummary>> {
    let dir = RunDir::open_read_only(run_dir)?;
    let path = dir.file(SUMMARY);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {}: the run has no summary yet (unfinished?); write it with `dlm-bench report {}`",
            path.display(),
            run_dir.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a summary this dlm-bench can read; rewrite it with `dlm-bench report {}`",
            path.display(),
            run_dir.display()
        )
    })
}

/// "Filtered run: …" when the run covered part of its suite (`run --tasks/--models/--limit`).
pub fn filtered_note(run_dir: &Path) -> Result<Option<String>> {
    let manifest = RunDir::open_read_only(run_dir)?.read_manifest()?;
    Ok((!manifest.filters.is_empty()).then(|| {
        format!(
            "Filtered run of suite `{}` ({}): not every cell of the suite ran.",
            manifest.suite_name,
            manifest.filters.describe()
        )
    }))
}

/// The metric columns: every registry metric and the speed figures, where some cell has a value.
fn columns(rows: &[CellSummary]) -> Vec<Column> {
    let mut columns: Vec<Column> = registry::for_summaries(rows)
        .into_iter()
        .map(Column::of)
        .collect();
    columns.push(Column::plain("tokens_per_forward", 2, |s| {
        s.tokens_per_forward
    }));
    columns.push(Column::plain("speedup", 2, |s| s.speedup));
    columns.retain(|c| rows.iter().any(|r| c.value(r).is_some()));
    for c in &mut columns {
        if !rows.iter().any(|r| c.ci(r).is_some()) {
            c.interval = None;
        }
    }
    columns
}

/// The cell's identity fields, in column order.
fn identity(s: &CellSummary) -> Vec<String> {
    vec![
        s.task.clone(),
        s.model.clone(),
        s.sampler.clone().unwrap_or_default(),
        s.steps.map(|x| x.to_string()).unwrap_or_default(),
        s.length.to_string(),
        s.seed.to_string(),
        s.n.to_string(),
        serde_json::to_value(s.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
    ]
}

const IDENTITY: [&str; 8] = [
    "task", "model", "sampler", "steps", "length", "seed", "samples", "status",
];

/// The table of `rows` in `format`.
pub fn render(rows: &[CellSummary], format: Format) -> String {
    let columns = columns(rows);
    match format {
        Format::Csv => csv(rows, &columns),
        Format::Markdown => markdown(rows, &columns),
    }
}

fn csv(rows: &[CellSummary], columns: &[Column]) -> String {
    let mut header: Vec<String> = IDENTITY.iter().map(|s| s.to_string()).collect();
    for c in columns {
        header.push(c.name.clone());
        if let Some((low, high)) = c.interval {
            header.push(format!("{}_{low}", c.name));
            header.push(format!("{}_{high}", c.name));
        }
    }
    let number = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let mut out = csv_line(&header);
    for r in rows {
        let mut fields = identity(r);
        for c in columns {
            fields.push(number(c.value(r)));
            if c.interval.is_some() {
                let ci = c.ci(r);
                fields.push(number(ci.map(|x| x.0)));
                fields.push(number(ci.map(|x| x.1)));
            }
        }
        out.push_str(&csv_line(&fields));
    }
    out
}

/// One CSV record (RFC 4180: a field with a comma, quote or line break is quoted).
fn csv_line(fields: &[String]) -> String {
    let quoted: Vec<String> = fields
        .iter()
        .map(|f| {
            if f.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.clone()
            }
        })
        .collect();
    quoted.join(",") + "\n"
}

fn markdown(rows: &[CellSummary], columns: &[Column]) -> String {
    let mut header: Vec<String> = IDENTITY.iter().map(|s| s.to_string()).collect();
    header.extend(columns.iter().map(|c| match c.interval {
        Some(("q1", _)) => format!("{} [q1, q3]", c.label),
        Some(_) => format!("{} [95% CI]", c.label),
        None => c.label.clone(),
    }));
    let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
    let mut out = format!(
        "| {} |\n|{}\n",
        header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | "),
        " --- |".repeat(header.len())
    );
    for r in rows {
        let mut fields: Vec<String> = identity(r).iter().map(|f| cell(f)).collect();
        for c in columns {
            let d = c.digits;
            fields.push(match (c.value(r), c.ci(r)) {
                (None, _) => "—".into(),
                (Some(v), Some((lo, hi))) => format!("{v:.d$} [{lo:.d$}, {hi:.d$}]"),
                (Some(v), None) => format!("{v:.d$}"),
            });
        }
        out.push_str(&format!("| {} |\n", fields.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        let line = csv_line(&["a".into(), "b,c".into(), "say \"hi\"".into(), String::new()]);
        assert_eq!(line, "a,\"b,c\",\"say \"\"hi\"\"\",\n");
    }
}
