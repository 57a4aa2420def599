//! A text task's section: its declared metrics against steps, AUP, and completions with the
//! first wrong step highlighted.

use super::*;
use crate::report::TextSampleView;

impl<'a> TaskView<'a> {
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
        // A task that marks headline metrics is plotted on those, as its verdict judges it.
        if out.iter().any(|d| d.headline) {
            out.retain(|d| d.headline);
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

    /// Text tasks: AUP of every series (and AR cell) on the task's accuracy metric, with a
    /// bootstrap CI over documents. The pool is every series with tokens per forward; a series
    /// without (a replay makes no forwards) is left out and named, and `y_max` is the best
    /// accuracy of the pool's own points.
    pub(super) fn aup(&self) -> Option<AupTable> {
        if !self.text {
            return None;
        }
        let metric = self.plotted_metrics().into_iter().find(|d| {
            d.kind == dlm_plugin_api::MetricKind::Rate && d.better == dlm_plugin_api::Better::Higher
        })?;
        let accuracy = |r: &CellSummary| r.metrics.get(&metric.name).and_then(|m| m.value);
        let mut pool: Vec<(String, Vec<&CellSummary>)> = Vec::new();
        let mut left_out: Vec<String> = Vec::new();
        for (label, mut cells) in self.model_groups() {
            cells.sort_by_key(|r| r.steps);
            let (with, without): (Vec<&CellSummary>, Vec<&CellSummary>) = cells
                .into_iter()
                .filter(|r| accuracy(r).is_some())
                .partition(|r| r.tokens_per_forward.is_some_and(|t| t > 0.0));
            if !without.is_empty() {
                left_out.push(label.clone());
            }
            if !with.is_empty() {
                pool.push((label, with));
            }
        }
        let point = |r: &CellSummary| -> (f64, f64) {
            (
                r.tokens_per_forward.unwrap_or(0.0),
                100.0 * accuracy(r).unwrap_or(0.0),
            )
        };
        let y_max = pool
            .iter()
            .flat_map(|(_, cells)| cells.iter().map(|r| point(r).1))
            .fold(0.0, f64::max);
        let (documents, by_document) = self.document_points(&pool, &metric.name);
        let seed = dlm_plugin_api::hash::fnv1a_64(format!("aup {}", self.task).bytes());
        let cis = crate::stats::aup_ci(&by_document, documents, crate::stats::AUP_ALPHA, seed);
        Some(AupTable {
            metric: metric.label.clone(),
            y_max,
            pool: pool.iter().map(|(l, _)| l.clone()).collect(),
            left_out,
            alpha: crate::stats::AUP_ALPHA,
            documents,
            resamples: crate::stats::BOOTSTRAP_RESAMPLES,
            rows: pool
                .iter()
                .zip(cis)
                .map(|((series, cells), ci)| {
                    let points: Vec<(f64, f64)> = cells.iter().map(|r| point(r)).collect();
                    AupRow {
                        aup: crate::stats::aup(&points, y_max, crate::stats::AUP_ALPHA),
                        ci,
                        series: series.clone(),
                        points,
                    }
                })
                .collect(),
        })
    }

    /// The task's finished model cells (not the reference row) grouped by series label, in
    /// first-seen order: the diffusion series and each AR cell, replays included.
    fn model_groups(&self) -> Vec<(String, Vec<&'a CellSummary>)> {
        let mut groups: Vec<(String, Vec<&CellSummary>)> = Vec::new();
        for r in self.ok.iter().copied().filter(|r| r.model != "reference") {
            let label = self.run.label(r);
            match groups.iter_mut().find(|(l, _)| *l == label) {
                Some((_, cells)) => cells.push(r),
                None => groups.push((label, vec![r])),
            }
        }
        groups
    }

    /// The pool's documents (the prompt ids its cells' samples answer) and, per series and
    /// cell, the cell's mean score in percent on each of them: what AUP's bootstrap resamples.
    fn document_points(
        &self,
        pool: &[(String, Vec<&CellSummary>)],
        metric: &str,
    ) -> (usize, Vec<Vec<crate::stats::DocumentPoint>>) {
        let samples = |r: &CellSummary| -> Vec<&SampleRecord> {
            self.run
                .by_unit
                .get(r.unit.as_str())
                .cloned()
                .unwrap_or_default()
        };
        let prompt_id = |s: &SampleRecord| -> Option<String> {
            s.extra
                .get("prompt_id")
                .and_then(|p| p.as_str())
                .map(String::from)
        };
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for (_, cells) in pool {
            for s in cells.iter().flat_map(|r| samples(r)) {
                if let Some(id) = prompt_id(s) {
                    let next = index.len();
                    index.entry(id).or_insert(next);
                }
            }
        }
        let per_cell = |r: &CellSummary| -> crate::stats::DocumentPoint {
            let mut sums = vec![(0.0, 0usize); index.len()];
            for s in samples(r) {
                let value = s.extra.get(metric).and_then(crate::registry::json_number);
                if let (Some(id), Some(v)) = (prompt_id(s), value) {
                    let slot = &mut sums[index[&id]];
                    *slot = (slot.0 + 100.0 * v, slot.1 + 1);
                }
            }
            crate::stats::DocumentPoint {
                tokens_per_forward: r.tokens_per_forward.unwrap_or(0.0),
                per_document: sums
                    .into_iter()
                    .map(|(sum, n)| (n > 0).then(|| sum / n as f64))
                    .collect(),
            }
        };
        let points = pool
            .iter()
            .map(|(_, cells)| cells.iter().map(|r| per_cell(r)).collect())
            .collect();
        (index.len(), points)
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

/// Keys of a text sample's `extra` that the display shows in their own place, not in the
/// fields table.
const SHOWN_APART: [&str; 13] = [
    "completion",
    "stage",
    "failing_test",
    "prompt",
    "prompt_id",
    "reference",
    "gold",
    "code",
    "extracted_strict",
    "extracted_flexible",
    "cause",
    "message",
    "first_wrong",
];

/// A text task's sample: the completion (escaped by the template, whitespace kept), its first
/// wrong step's line highlighted, and what a reader needs around it ([`TextSampleView`]).
pub(super) fn text_sample_view(s: &SampleRecord) -> SampleView {
    let text_of = |key: &str| -> Option<String> {
        s.extra.get(key).and_then(|c| c.as_str()).map(String::from)
    };
    let completion = text_of("completion").unwrap_or_default();
    let first_wrong = text_of("first_wrong");
    let wrong_line = first_wrong
        .as_deref()
        .and_then(|w| w.strip_prefix("line "))
        .and_then(|w| w.split(':').next())
        .and_then(|n| n.parse::<usize>().ok());
    let (before, bad, after) = split_at_line(&completion, wrong_line);
    let flag = |key: &str| s.extra.get(key).and_then(|v| v.as_bool()) == Some(true);
    let passed = s.extra.get("passed").and_then(|v| v.as_bool());
    let (outcome, ok) = match passed {
        Some(p) => (if p { "pass" } else { "fail" }, p),
        None if s.in_support => ("correct", true),
        None => ("incorrect", false),
    };
    let mut causes: Vec<String> = Vec::new();
    if flag("empty_completion") {
        causes.push("empty completion".into());
    }
    if flag("masked_completion") {
        causes.push("masks left in the completion".into());
    }
    if let Some(cause) = text_of("cause") {
        let stage = text_of("stage")
            .map(|st| format!(" in {st}"))
            .unwrap_or_default();
        // A stage names its test ("test 3"); a bare test index only where it does not.
        let test = s
            .extra
            .get("failing_test")
            .and_then(|t| t.as_u64())
            .filter(|_| stage.is_empty())
            .map(|t| format!(" (test {t})"))
            .unwrap_or_default();
        let message = text_of("message")
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        causes.push(format!("{cause}{stage}{test}{message}"));
    }
    if let Some(w) = &first_wrong {
        causes.push(format!("first wrong step: {w}"));
    }
    let extracted: Vec<(String, String)> = ["strict", "flexible"]
        .iter()
        .filter_map(|filter| {
            let value = s.extra.get(&format!("extracted_{filter}"))?;
            let shown = value.as_str().unwrap_or("none found").to_string();
            Some((filter.to_string(), shown))
        })
        .collect();
    if !ok
        && causes.is_empty()
        && !extracted.is_empty()
        && extracted.iter().all(|e| e.1 == "none found")
    {
        causes.push("no answer found".into());
    }
    let (gold, gold_is_completion) = match (text_of("gold"), text_of("reference")) {
        (Some(g), _) => (Some(g), false),
        (None, Some(r)) => (Some(r), true),
        (None, None) => (None, false),
    };
    let gold_is_this =
        gold_is_completion && gold.as_deref().map(str::trim) == Some(completion.trim());
    let program = text_of("code").filter(|c| c.trim() != completion.trim());
    let fields = s
        .extra
        .iter()
        .filter(|(k, _)| !SHOWN_APART.contains(&k.as_str()))
        .map(|(k, v)| {
            let shown = match v {
                serde_json::Value::String(t) => t.clone(),
                serde_json::Value::Null => "—".into(),
                other => other.to_string(),
            };
            (k.clone(), shown)
        })
        .collect();
    SampleView {
        index: s.index,
        before,
        bad,
        after,
        log_q: None,
        in_support: s.in_support,
        first_invalid: None,
        extra: None,
        text: Some(TextSampleView {
            prompt_id: text_of("prompt_id"),
            prompt: text_of("prompt"),
            gold,
            gold_is_this,
            gold_is_completion,
            extracted,
            outcome: outcome.into(),
            ok,
            cause: (!causes.is_empty()).then(|| causes.join("; ")),
            program,
            fields,
        }),
    }
}

/// A completion split around its 1-based line `line` (kept whole when there is no such line),
/// the newlines kept on either side.
fn split_at_line(completion: &str, line: Option<usize>) -> (String, String, String) {
    let lines: Vec<&str> = completion.split('\n').collect();
    match line {
        Some(n) if n >= 1 && n <= lines.len() => {
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
        _ => (completion.to_string(), String::new(), String::new()),
    }
}
