//! A text task's section: its declared metrics against steps, AUP, and completions with the
//! first wrong step highlighted.

use super::*;

impl TaskView<'_> {
    /// The task's declared metrics worth a plot against steps: those with a better direction,
    /// less the harness's collapse guards (shown in the table).
    pub(super) fn plotted_metrics(&self) -> Vec<dlm_plugin_api::MetricDecl> {
        let mut out: Vec<dlm_plugin_api::MetricDecl> = Vec::new();
        // In the order the task declares them.
        let declared = self
            .rows
            .iter()
            .filter_map(|r| self.run.record.get(r.unit.as_str()))
            .filter_map(|c| c.task_description.as_ref())
            .flat_map(|d| d.metrics.iter());
        for decl in declared {
            let guard = matches!(decl.name.as_str(), "empty_completion" | "masked_completion");
            if !guard
                && decl.better != dlm_plugin_api::Better::Neither
                && !out.iter().any(|d| d.name == decl.name)
            {
                out.push(decl.clone());
            }
        }
        out
    }

    /// A task-declared metric against steps, the AR cells as reference lines.
    pub(super) fn metric_plot(&self, decl: &dlm_plugin_api::MetricDecl) -> Plot {
        let name = decl.name.clone();
        let value = |r: &CellSummary| r.metrics.get(&name).and_then(|m| m.value);
        let ci = |r: &CellSummary| r.metrics.get(&name).and_then(|m| m.ci);
        let mut chart = self.steps_chart(&decl.label, decl.label.clone(), Scale::Linear, true);
        chart.series = self.steps_series(&value, &ci, &decl.label, decl.digits).0;
        chart.hlines = self.ar_lines(&value, &ci);
        let has = chart.series.iter().any(|s| !s.points.is_empty());
        Plot {
            title: format!("{} vs steps", decl.label),
            svg: has.then(|| chart.render()),
            note: (!has).then(|| format!("No {} to plot.", decl.label)),
        }
    }

    /// The task's provenance declarations, each distinct one once, in cell order.
    pub(super) fn provenance(&self) -> Vec<dlm_plugin_api::TaskProvenance> {
        let mut out: Vec<dlm_plugin_api::TaskProvenance> = Vec::new();
        for p in self.rows.iter().filter_map(|r| r.provenance.as_ref()) {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        out
    }

    /// Why declared metrics have no value (the harness's notes), each reason once, naming
    /// the cells.
    pub(super) fn metric_notes(&self) -> Vec<String> {
        let notes = self.rows.iter().flat_map(|r| {
            let notes = r.metrics.values().filter_map(|m| m.note.clone());
            notes.map(|note| (note, r.key.as_str()))
        });
        notes_naming_cells(notes)
    }

    /// How many of the task's documents were scored, for cells whose suite selects documents:
    /// each distinct count once, naming the cells.
    pub(super) fn document_notes(&self) -> Vec<String> {
        notes_naming_cells(self.rows.iter().filter_map(|r| {
            let d = r.documents?;
            Some((
                format!("{} of {} documents scored", d.scored, d.of),
                r.key.as_str(),
            ))
        }))
    }

    /// Text tasks: AUP of every series (and AR cell) on the task's accuracy metric, the pool
    /// being all of them.
    pub(super) fn aup(&self) -> Option<AupTable> {
        if !self.text {
            return None;
        }
        let metric = self.plotted_metrics().into_iter().find(|d| {
            d.kind == dlm_plugin_api::MetricKind::Rate && d.better == dlm_plugin_api::Better::Higher
        })?;
        let point = |r: &CellSummary| -> Option<(f64, f64)> {
            let accuracy = r.metrics.get(&metric.name)?.value?;
            Some((r.tokens_per_forward?, 100.0 * accuracy))
        };
        let mut groups: Vec<(String, Vec<(f64, f64)>)> = self
            .series
            .iter()
            .map(|(label, cells)| {
                (
                    label.clone(),
                    cells.iter().filter_map(|r| point(r)).collect(),
                )
            })
            .collect();
        for a in &self.ar {
            groups.push((self.run.label(a), point(a).into_iter().collect()));
        }
        let y_max = groups
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.1))
            .fold(0.0, f64::max);
        Some(AupTable {
            metric: metric.label.clone(),
            y_max,
            pool: groups.iter().map(|(l, _)| l.clone()).collect(),
            alpha: crate::stats::AUP_ALPHA,
            rows: groups
                .into_iter()
                .map(|(series, points)| AupRow {
                    aup: crate::stats::aup(&points, y_max, crate::stats::AUP_ALPHA),
                    series,
                    points,
                })
                .collect(),
        })
    }
}

/// Each distinct note once, in first-seen order, followed by the cells it concerns.
fn notes_naming_cells<'a>(notes: impl Iterator<Item = (String, &'a str)>) -> Vec<String> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for (note, key) in notes {
        match out.iter_mut().find(|(n, _)| *n == note) {
            Some((_, keys)) => keys.push(key),
            None => out.push((note, vec![key])),
        }
    }
    // A few cells by name are enough to find them; the table marks each one.
    const NAMED: usize = 4;
    out.into_iter()
        .map(|(note, keys)| {
            let more = keys.len().saturating_sub(NAMED);
            let named = keys[..keys.len().min(NAMED)].join(", ");
            match more {
                0 => format!("{note} ({named})"),
                _ => format!("{note} ({named} and {more} more cells)"),
            }
        })
        .collect()
}

/// A text task's sample: the completion (escaped by the template), its first wrong step's line
/// highlighted; the other per-sample figures as JSON.
pub(super) fn text_sample_view(s: &SampleRecord) -> SampleView {
    let completion = s
        .extra
        .get("completion")
        .and_then(|c| c.as_str())
        .unwrap_or_default()
        .to_string();
    let wrong_line = s
        .extra
        .get("first_wrong")
        .and_then(|w| w.as_str())
        .and_then(|w| w.strip_prefix("line "))
        .and_then(|w| w.split(':').next())
        .and_then(|n| n.parse::<usize>().ok());
    let (before, bad, after) = match wrong_line {
        Some(n) if n >= 1 && n <= completion.split('\n').count() => {
            let lines: Vec<&str> = completion.split('\n').collect();
            let mut before = lines[..n - 1].join("\n");
            if n > 1 {
                before.push('\n');
            }
            let mut after = lines[n..].join("\n");
            if n < lines.len() {
                after.insert(0, '\n');
            }
            (before, lines[n - 1].to_string(), after)
        }
        _ => (completion, String::new(), String::new()),
    };
    let mut extra = s.extra.clone();
    extra.remove("completion");
    SampleView {
        index: s.index,
        before,
        bad,
        after,
        log_q: None,
        in_support: s.in_support,
        first_invalid: None,
        extra: Some(serde_json::to_string(&extra).unwrap_or_default()),
    }
}
