//! The results table a run prints in the terminal when it ends, as lm-eval does: per task, one
//! row per model · sampler · steps, and the task's quality figures with their 95% CIs — TER and
//! SER for a task that declares no metrics of its own (formal languages), else the metrics it
//! declares (its headline ones, chosen as the report chooses them: accuracy, pass@k, …). Built
//! from the summary rows `summary.json` holds, so any run directory can print it. The HTML report has everything else.

use crate::results::CellStatus;
use crate::summary::CellSummary;
use std::collections::{BTreeMap, BTreeSet};

/// Declared metrics shown per task at most (the report shows them all).
const MAX_DECLARED: usize = 4;

/// One figure column.
#[derive(Debug, Clone, PartialEq)]
enum Figure {
    Ter,
    Ser,
    Declared {
        name: String,
        label: String,
        digits: usize,
    },
}

impl Figure {
    fn title(&self) -> &str {
        match self {
            Figure::Ter => "TER",
            Figure::Ser => "SER",
            Figure::Declared { label, .. } => label,
        }
    }

    fn text(&self, c: &CellSummary) -> String {
        if c.status == CellStatus::Failed {
            return "failed".into();
        }
        match self {
            // No TER with a sample outside the support: it is infinite.
            Figure::Ter if c.ter.is_none() && c.zero_probability_samples > 0 => "∞".into(),
            Figure::Ter => number(c.ter, c.ter_ci, 4),
            Figure::Ser => number(c.ser, c.ser_ci, 3),
            Figure::Declared { name, digits, .. } => match c.metrics.get(name) {
                Some(m) => number(m.value, m.ci, *digits),
                None => "—".into(),
            },
        }
    }
}

/// `0.123 [0.110, 0.135]`, or `—` without a value.
fn number(value: Option<f64>, ci: Option<(f64, f64)>, digits: usize) -> String {
    match (value, ci) {
        (Some(v), Some((lo, hi))) => format!("{v:.digits$} [{lo:.digits$}, {hi:.digits$}]"),
        (Some(v), None) => format!("{v:.digits$}"),
        (None, _) => "—".into(),
    }
}

/// The figures of one task's rows. A task that declares metrics (text and code tasks) is read
/// by its headline metrics as the report chooses them (at most [`MAX_DECLARED`]); a task that
/// declares none (formal languages) by TER and SER, where its rows have them.
fn figures(rows: &[&CellSummary]) -> Vec<Figure> {
    let mut declared: Vec<&dlm_plugin_api::MetricDecl> = Vec::new();
    for m in rows.iter().flat_map(|c| c.metrics.values()) {
        if !declared.iter().any(|d| d.name == m.declared.name) {
            declared.push(&m.declared);
        }
    }
    if !declared.is_empty() {
        // The report's rule, so the terminal and the page name the same metrics.
        let finished: Vec<&CellSummary> = rows
            .iter()
            .copied()
            .filter(|c| c.status != CellStatus::Failed)
            .collect();
        return crate::report::select_headline(declared, &finished)
            .into_iter()
            .take(MAX_DECLARED)
            .map(|h| Figure::Declared {
                name: h.def.name.clone(),
                label: h.def.label.clone(),
                digits: h.def.digits,
            })
            .collect();
    }
    let mut out = Vec::new();
    if rows
        .iter()
        .any(|c| c.ter.is_some() || c.zero_probability_samples > 0)
    {
        out.push(Figure::Ter);
    }
    if rows.iter().any(|c| c.ser.is_some()) {
        out.push(Figure::Ser);
    }
    out
}

/// The sampler as the row names it: its name, plus its schedule and parameters when the cell's
/// key carries them (`low_confidence@256,block_length=32` → `low_confidence,block_length=32`),
/// so two settings of one sampler stay two rows.
fn sampler_label(c: &CellSummary) -> String {
    let Some(name) = &c.sampler else {
        return "ground truth".into();
    };
    let settings = c.key.split('/').nth(2).and_then(|s| {
        let after = s.strip_prefix(name.as_str())?.strip_prefix('@')?;
        let rest = after.trim_start_matches(|ch: char| ch.is_ascii_digit());
        (!rest.is_empty()).then(|| rest.to_string())
    });
    format!("{name}{}", settings.unwrap_or_default())
}

/// The rows shown: where a model · sampler (at one length and seed) ran more than two step
/// counts, its fewest and most steps only, and every failed cell. Says whether it left any out.
fn shown(rows: &[&CellSummary]) -> (Vec<usize>, bool) {
    type Series = (String, String, usize, u64);
    let series =
        |c: &CellSummary| -> Series { (c.model.clone(), sampler_label(c), c.length, c.seed) };
    let mut steps: BTreeMap<Series, BTreeSet<usize>> = BTreeMap::new();
    for c in rows {
        if let Some(s) = c.steps {
            steps.entry(series(c)).or_default().insert(s);
        }
    }
    let keep = |c: &CellSummary| -> bool {
        let (Some(s), Some(all)) = (c.steps, steps.get(&series(c))) else {
            return true;
        };
        c.status == CellStatus::Failed
            || all.len() <= 2
            || Some(&s) == all.first()
            || Some(&s) == all.last()
    };
    let kept: Vec<usize> = (0..rows.len()).filter(|&i| keep(rows[i])).collect();
    let cut = kept.len() < rows.len();
    (kept, cut)
}

/// The table for every task of `summary`, in the order the summary names them; empty when
/// there are no rows.
pub fn render(summary: &[CellSummary]) -> String {
    let mut tasks: Vec<&str> = Vec::new();
    for c in summary {
        if !tasks.contains(&c.task.as_str()) {
            tasks.push(&c.task);
        }
    }
    let mut out = String::new();
    for task in tasks {
        let rows: Vec<&CellSummary> = summary.iter().filter(|c| c.task == task).collect();
        out.push_str(&task_table(task, &rows));
        out.push('\n');
    }
    out
}

/// One task's table: a title line, a header and the rows, columns aligned.
fn task_table(task: &str, rows: &[&CellSummary]) -> String {
    let many = |f: &dyn Fn(&CellSummary) -> String| {
        rows.iter().map(|c| f(c)).collect::<BTreeSet<_>>().len() > 1
    };
    let (many_lengths, many_seeds) = (
        many(&|c| c.length.to_string()),
        many(&|c| c.seed.to_string()),
    );
    let figures = figures(rows);
    let (kept, cut) = shown(rows);

    let mut header = vec!["model · sampler".to_string(), "steps".to_string()];
    if many_lengths {
        header.push("L".into());
    }
    if many_seeds {
        header.push("seed".into());
    }
    header.extend(figures.iter().map(|f| f.title().to_string()));
    let mut table = vec![header];
    for &i in &kept {
        let c = rows[i];
        let steps = match c.steps {
            _ if crate::report::replayed(c) => "replay".to_string(),
            Some(_) if c.one_step_per_token => "1/token".to_string(),
            Some(s) => s.to_string(),
            None => "—".into(),
        };
        let mut row = vec![format!("{} · {}", c.model, sampler_label(c)), steps];
        if many_lengths {
            row.push(c.length.to_string());
        }
        if many_seeds {
            row.push(c.seed.to_string());
        }
        row.extend(figures.iter().map(|f| f.text(c)));
        table.push(row);
    }

    let mut title = format!("{task}: 95% CIs in brackets");
    if cut {
        title.push_str("; samplers with more than two step counts: fewest and most steps shown");
    }
    let mut out = format!("{title}\n");
    for (r, row) in aligned(&table, 1).into_iter().enumerate() {
        out.push_str("  ");
        out.push_str(row.trim_end());
        out.push('\n');
        if r == 0 {
            let width = row.trim_end().chars().count();
            out.push_str(&format!("  {}\n", "─".repeat(width)));
        }
    }
    out
}

/// Rows of cells padded to their column's width: the first `left` columns aligned left (names),
/// the rest right (numbers).
fn aligned(table: &[Vec<String>], left: usize) -> Vec<String> {
    let columns = table.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|j| {
            table
                .iter()
                .filter_map(|r| r.get(j))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    table
        .iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(j, s)| {
                    let pad = " ".repeat(widths[j] - s.chars().count());
                    if j < left {
                        format!("{s}{pad}")
                    } else {
                        format!("{pad}{s}")
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        })
        .collect()
}

#[cfg(test)]
mod tests;
