//! One task's section of the report: its verdicts, its plots against steps and cost, and a
//! few sample sequences per cell.

use super::svg::{self, Chart, Frontier, HLine, Marker, Point, Scale, Series};
use super::verdict::{verdict, Verdict};
use super::{
    anchor, fmt_num, sampler_settings, series_label, CellSamples, LegendEntry, Plot, SampleView,
};
use super::{AupRow, AupTable, TaskSection, SAMPLES_PER_CELL};
use crate::metrics::{self, CellSummary};
use crate::results::{CellRecord, CellStatus, SampleRecord};
use std::collections::{BTreeMap, HashMap, HashSet};

mod cells;
mod cost;
mod text;

use text::text_sample_view;

/// What every task section needs from the whole run: which cells are AR, the records and
/// samples by unit, and the series colours (stable across tasks).
pub(super) struct RunView<'a> {
    pub cells: &'a [CellRecord],
    ar_units: HashSet<&'a str>,
    record: HashMap<&'a str, &'a CellRecord>,
    by_unit: HashMap<&'a str, Vec<&'a SampleRecord>>,
    many_lengths: bool,
    many_seeds: bool,
    /// `(model, sampler)` pairs run with several settings (parameters, schedule): their
    /// series are told apart by the settings, never pooled.
    many_settings: HashSet<(&'a str, &'a str)>,
    colors: BTreeMap<String, String>,
    pub legend: Vec<LegendEntry>,
}

impl<'a> RunView<'a> {
    pub fn new(
        cells: &'a [CellRecord],
        summary: &'a [CellSummary],
        samples: &'a [SampleRecord],
    ) -> Self {
        let ar_units: HashSet<&str> = cells
            .iter()
            .filter(|c| !c.cell.is_reference() && metrics::is_ar_cell(c))
            .map(|c| c.unit.as_str())
            .collect();
        let record = cells.iter().map(|c| (c.unit.as_str(), c)).collect();
        let mut by_unit: HashMap<&str, Vec<&SampleRecord>> = HashMap::new();
        for s in samples {
            by_unit.entry(s.unit.as_str()).or_default().push(s);
        }
        let lengths: HashSet<usize> = summary.iter().map(|s| s.length).collect();
        let seeds: HashSet<u64> = summary.iter().map(|s| s.seed).collect();
        let mut settings: HashMap<(&str, &str), HashSet<String>> = HashMap::new();
        for s in summary {
            if let Some(sampler) = s.sampler.as_deref() {
                settings
                    .entry((s.model.as_str(), sampler))
                    .or_default()
                    .insert(sampler_settings(s));
            }
        }
        let mut run = RunView {
            cells,
            ar_units,
            record,
            by_unit,
            many_lengths: lengths.len() > 1,
            many_seeds: seeds.len() > 1,
            many_settings: settings
                .into_iter()
                .filter(|(_, set)| set.len() > 1)
                .map(|(pair, _)| pair)
                .collect(),
            colors: BTreeMap::new(),
            legend: Vec::new(),
        };
        for s in summary
            .iter()
            .filter(|s| s.model != "reference" && s.status == CellStatus::Ok)
        {
            let label = run.label(s);
            if !run.colors.contains_key(&label) {
                let color = svg::PALETTE[run.colors.len() % svg::PALETTE.len()].to_string();
                run.colors.insert(label.clone(), color.clone());
                run.legend.push(LegendEntry {
                    label,
                    color,
                    ar: run.ar_units.contains(s.unit.as_str()),
                    replayed: replayed(s),
                });
            }
        }
        run
    }

    /// Whether lengths or seeds must qualify a series label.
    pub fn qualified(&self) -> bool {
        self.many_lengths || self.many_seeds
    }

    fn label(&self, r: &CellSummary) -> String {
        let label = series_label(r, self.many_lengths, self.many_seeds);
        let pair = (r.model.as_str(), r.sampler.as_deref().unwrap_or(""));
        let settings = sampler_settings(r);
        if self.many_settings.contains(&pair) && !settings.is_empty() {
            format!("{label} · {settings}")
        } else {
            label
        }
    }

    fn color(&self, label: &str) -> String {
        self.colors
            .get(label)
            .cloned()
            .unwrap_or_else(|| "#333".into())
    }

    fn is_ar(&self, r: &CellSummary) -> bool {
        self.ar_units.contains(r.unit.as_str())
    }
}

/// One task's cells, split into the AR baselines and the MDM series (model × sampler, × length
/// × seed where the run has several; points sorted by steps).
struct TaskView<'a> {
    run: &'a RunView<'a>,
    task: &'a str,
    rows: Vec<&'a CellSummary>,
    ok: Vec<&'a CellSummary>,
    ar: Vec<&'a CellSummary>,
    series: Vec<(String, Vec<&'a CellSummary>)>,
    optimal_ter: Option<f64>,
    /// The step range of every series, so that the steps plots share an x axis.
    steps_hint: Option<(f64, f64)>,
    /// A text task: completions scored by the task, no TER.
    text: bool,
}

/// A metric's value and CI, read off a summary row.
type Value<'f> = &'f dyn Fn(&CellSummary) -> Option<f64>;
type Ci<'f> = &'f dyn Fn(&CellSummary) -> Option<(f64, f64)>;

/// The task's section of the report and the verdicts of its series.
pub(super) fn section(
    run: &RunView,
    task: &str,
    summary: &[CellSummary],
) -> (TaskSection, Vec<Verdict>) {
    let view = TaskView::new(run, task, summary);
    let (verdict_lines, verdicts) = view.verdicts();
    let plots = if view.text {
        // Text tasks have no TER: their own metrics (accuracy, step errors) against steps.
        let mut plots: Vec<Plot> = view
            .plotted_metrics()
            .iter()
            .map(|d| view.metric_plot(d))
            .collect();
        plots.push(view.ser_plot());
        plots.push(view.speedup_plot());
        plots
    } else {
        vec![view.ter_plot(), view.ser_plot(), view.speedup_plot()]
    };
    let cost_plots = view.cost_plots();
    (
        view.into_section(verdict_lines, plots, cost_plots),
        verdicts,
    )
}

impl<'a> TaskView<'a> {
    fn new(run: &'a RunView<'a>, task: &'a str, summary: &'a [CellSummary]) -> Self {
        let rows: Vec<&CellSummary> = summary.iter().filter(|s| s.task == task).collect();
        let optimal_ter = rows.iter().find_map(|r| r.optimal_ter);
        let ok: Vec<&CellSummary> = rows
            .iter()
            .copied()
            .filter(|r| r.status == CellStatus::Ok)
            .collect();
        let ar: Vec<&CellSummary> = ok
            .iter()
            .copied()
            .filter(|r| r.model != "reference" && run.is_ar(r))
            .collect();
        let mut series: Vec<(String, Vec<&CellSummary>)> = Vec::new();
        for r in ok
            .iter()
            .copied()
            .filter(|r| r.model != "reference" && !run.is_ar(r) && r.steps.is_some())
        {
            let label = run.label(r);
            match series.iter_mut().find(|(l, _)| *l == label) {
                Some((_, v)) => v.push(r),
                None => series.push((label, vec![r])),
            }
        }
        for (_, v) in &mut series {
            v.sort_by_key(|r| r.steps);
        }
        let all_steps: Vec<f64> = series
            .iter()
            .flat_map(|(_, v)| v.iter().filter(|r| !replayed(r)))
            .filter_map(|r| r.steps.map(|s| s as f64))
            .collect();
        let steps_hint = (!all_steps.is_empty()).then(|| {
            (
                all_steps.iter().copied().fold(f64::INFINITY, f64::min),
                all_steps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )
        });
        let text = rows
            .iter()
            .filter_map(|r| run.record.get(r.unit.as_str()))
            .any(|c| {
                c.task_description
                    .as_ref()
                    .is_some_and(|d| d.text.is_some())
            });
        TaskView {
            run,
            task,
            rows,
            ok,
            ar,
            series,
            optimal_ter,
            steps_hint,
            text,
        }
    }

    /// One verdict per MDM series, against the baseline `metrics::resolve_baselines` chose.
    fn verdicts(&self) -> (Vec<String>, Vec<Verdict>) {
        let mut lines = Vec::new();
        let mut verdicts = Vec::new();
        // Text tasks are judged on their headline metrics, formal tasks on TER and SER.
        let headline = self.text.then(|| {
            let descriptions = self
                .rows
                .iter()
                .filter_map(|r| self.run.record.get(r.unit.as_str()))
                .filter_map(|c| c.task_description.as_ref());
            super::verdict::headline_metrics(descriptions, &self.ok)
        });
        if let Some(h) = headline.as_deref().filter(|h| !h.is_empty()) {
            lines.push(super::verdict::basis_line(h));
        }
        for (label, points) in &self.series {
            // Every point of a series shares model, task, length, seed and batch size, and so
            // its baseline.
            let baseline = points[0]
                .speedup_baseline
                .as_deref()
                .and_then(|key| self.ar.iter().copied().find(|a| a.key == key));
            let v = verdict(
                self.task,
                label,
                points,
                baseline,
                self.optimal_ter,
                self.run.qualified(),
                headline.as_deref(),
            );
            lines.push(v.sentence.clone());
            verdicts.push(v);
        }
        if self.series.is_empty() {
            lines.push(if self.ok.is_empty() {
                "No cell of this task finished.".to_string()
            } else {
                "No diffusion (step-count) cell finished for this task.".to_string()
            });
        }
        (lines, verdicts)
    }

    /// The AR cells as dashed horizontal lines with their CI bands, and the replayed cells
    /// (their step count means nothing) as dotted ones.
    fn ar_lines(&self, value: Value, ci: Ci) -> Vec<HLine> {
        let replays = self.series.iter().flat_map(|(_, v)| v.iter());
        let fixed = replays.copied().filter(|r| replayed(r)).map(|r| (r, true));
        let ar = self.ar.iter().map(|a| (*a, false));
        ar.chain(fixed)
            .filter_map(|(a, replay)| {
                let y = value(a).filter(|y| y.is_finite())?;
                let label = self.run.label(a);
                let tag = if replay { "replay" } else { "AR" };
                Some(HLine {
                    y,
                    band: ci(a),
                    label: format!("{tag} {label}"),
                    color: self.run.color(&label),
                    dash: if replay { "2 2" } else { "6 3" },
                    text: format!("{tag} {}", fmt_num(Some(y), 3)),
                })
            })
            .collect()
    }

    fn optimal_line(&self, lines: &mut Vec<HLine>) {
        if let Some(o) = self.optimal_ter {
            lines.push(HLine {
                y: o,
                band: None,
                label: "optimal TER (exact)".into(),
                color: "#111".into(),
                dash: "2 3",
                text: format!("optimal {}", fmt_num(Some(o), 3)),
            });
        }
    }

    /// Each MDM series against steps, and the points not drawn (no finite value) by series.
    fn steps_series(
        &self,
        value: Value,
        ci: Ci,
        what: &str,
        digits: usize,
    ) -> (Vec<Series>, Vec<String>) {
        let mut out = Vec::new();
        let mut omitted = Vec::new();
        for (label, points) in &self.series {
            let mut pts = Vec::new();
            let mut missing = Vec::new();
            for r in points.iter().filter(|r| !replayed(r)) {
                let steps = r.steps.unwrap_or(0);
                match value(r) {
                    Some(y) if y.is_finite() => {
                        let band = ci(r);
                        pts.push(Point {
                            x: steps as f64,
                            y,
                            lo: band.map(|b| b.0),
                            hi: band.map(|b| b.1),
                            tip: format!(
                                "{label}, {steps} steps: {what} {}{}",
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
                    _ => missing.push(steps.to_string()),
                }
            }
            if !missing.is_empty() {
                omitted.push(format!("{label} at {} steps", missing.join(", ")));
            }
            out.push(Series {
                name: label.clone(),
                color: self.run.color(label),
                points: pts,
                line: true,
                band: true,
                marker: Marker::Circle,
            });
        }
        (out, omitted)
    }

    /// A chart against steps on a log2 axis shared by the task's steps plots.
    fn steps_chart(&self, what: &str, y_label: String, y_scale: Scale, y_zero: bool) -> Chart {
        Chart {
            title: format!("{}: {what} vs steps", self.task),
            x_label: "sampling steps (log scale)".into(),
            y_label,
            x_scale: Scale::Log2,
            y_scale,
            y_zero,
            series: Vec::new(),
            hlines: Vec::new(),
            frontier: None,
            x_hint: self.steps_hint,
            message: None,
            key: false,
        }
    }

    fn ter_plot(&self) -> Plot {
        let (series, omitted) = self.steps_series(&|r| r.ter, &|r| r.ter_ci, "TER", 4);
        let mut hlines = self.ar_lines(&|r| r.ter, &|r| r.ter_ci);
        self.optimal_line(&mut hlines);
        let infinite_ar: Vec<String> = self
            .ar
            .iter()
            .filter(|a| a.ter.is_none())
            .map(|a| self.run.label(a))
            .collect();
        let mut notes = Vec::new();
        if !omitted.is_empty() {
            notes.push(format!(
                "Not drawn — TER is infinite (some samples have q(x) = 0): {}.",
                omitted.join("; ")
            ));
        }
        if !infinite_ar.is_empty() {
            notes.push(format!("AR with infinite TER: {}.", infinite_ar.join(", ")));
        }
        if let Some(why) = self.no_ter_plot() {
            return Plot {
                title: "TER vs steps".into(),
                svg: None,
                note: Some(why),
            };
        }
        let y_scale = ter_scale(&series, &hlines);
        let log = if y_scale == Scale::Log10 { ", log" } else { "" };
        let mut chart = self.steps_chart(
            "TER",
            format!("TER (generative perplexity{log})"),
            y_scale,
            false,
        );
        chart.series = series;
        chart.hlines = hlines;
        Plot {
            title: "TER vs steps".into(),
            svg: Some(chart.render()),
            note: (!notes.is_empty()).then(|| notes.join(" ")),
        }
    }

    /// Why the task gets no TER plots, if it gets none: no diffusion cell, or TER infinite
    /// (samples with `q(x) = 0`) in most of them (a sparse language, where SER is the measure
    /// and a TER chart would be nearly empty).
    fn no_ter_plot(&self) -> Option<String> {
        let cells: Vec<&CellSummary> = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|r| !replayed(r))
            .collect();
        let infinite = cells.iter().filter(|r| r.ter.is_none()).count();
        if cells.is_empty() {
            Some("No TER plots: no diffusion cell finished.".into())
        } else if 2 * infinite > cells.len() {
            Some(format!(
                "No TER plots: TER is infinite (samples with q(x) = 0) in {infinite} of the {} diffusion cells; SER is this task's measure.",
                cells.len()
            ))
        } else {
            None
        }
    }

    fn ser_all_zero(&self) -> bool {
        self.ok.iter().all(|r| r.ser.unwrap_or(0.0) == 0.0)
    }

    fn ser_plot(&self) -> Plot {
        if self.ser_all_zero() {
            let n_max = self.ok.iter().map(|r| r.n).max().unwrap_or(0);
            return Plot {
                title: "SER vs steps".into(),
                svg: None,
                note: Some(format!(
                    "SER is 0 in every cell ({}; 95% upper bound {} at n = {n_max}), so there is no SER plot.",
                    if self.text {
                        "every sample scored right"
                    } else {
                        "no sample left the language's support"
                    },
                    fmt_num(Some(metrics::wilson_ci(0, n_max).1), 3)
                )),
            };
        }
        let mut chart = self.steps_chart("SER", self.ser_axis().into(), Scale::Linear, true);
        chart.series = self.steps_series(&|r| r.ser, &|r| r.ser_ci, "SER", 3).0;
        chart.hlines = self.ar_lines(&|r| r.ser, &|r| r.ser_ci);
        let has = chart.series.iter().any(|s| !s.points.is_empty());
        Plot {
            title: "SER vs steps".into(),
            svg: has.then(|| chart.render()),
            note: (!has).then(|| "No SER vs steps plot: no diffusion cell has an SER.".to_string()),
        }
    }

    /// What SER counts, in the task's own terms: a formal language's zero-probability
    /// samples, a code task's failing programs, a text task's samples scored wrong.
    fn ser_axis(&self) -> &'static str {
        let description = self
            .rows
            .iter()
            .filter_map(|r| self.run.record.get(r.unit.as_str()))
            .find_map(|c| c.task_description.as_ref());
        match description.and_then(|d| d.text.as_ref()) {
            None => "SER (share of samples with q = 0)",
            Some(t) if t.whole_programs => "SER (share of failing programs)",
            Some(_) => "SER (share scored wrong)",
        }
    }

    fn speedup_plot(&self) -> Plot {
        let mut chart = self.steps_chart(
            "speedup",
            "tokens/s relative to AR (log)".into(),
            Scale::Log2,
            false,
        );
        chart.series = self
            .steps_series(&|r| r.speedup, &|_| None, "speedup ×", 2)
            .0;
        chart.hlines = vec![HLine {
            y: 1.0,
            band: None,
            label: "AR throughput".into(),
            color: "#666".into(),
            dash: "6 3",
            text: "AR = 1×".into(),
        }];
        let has = chart.series.iter().any(|s| !s.points.is_empty());
        Plot {
            title: "Speedup vs steps".into(),
            svg: has.then(|| chart.render()),
            note: (!has).then(|| {
                "No speedup to plot (no AR cell with the same task, length, seed and batch size finished)."
                    .to_string()
            }),
        }
    }

    /// A few samples per finished cell: the first two, then out-of-language ones, then more.
    fn samples(&self) -> Vec<CellSamples> {
        self.ok
            .iter()
            .map(|r| {
                let mut rows = self
                    .run
                    .by_unit
                    .get(r.unit.as_str())
                    .cloned()
                    .unwrap_or_default();
                rows.sort_by_key(|s| s.index);
                let mut chosen: Vec<&SampleRecord> = rows.iter().copied().take(2).collect();
                let invalid_first = rows.iter().filter(|s| !s.in_support).chain(rows.iter());
                for s in invalid_first {
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
                    text: self.text,
                    shown: chosen
                        .into_iter()
                        .map(|s| {
                            if self.text {
                                text_sample_view(s)
                            } else {
                                sample_view(s)
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }

    fn into_section(
        self,
        verdict_lines: Vec<String>,
        plots: Vec<Plot>,
        cost_plots: Vec<Plot>,
    ) -> TaskSection {
        let run = self.run;
        let task = self.task;
        let rows = &self.rows;
        let description = rows
            .iter()
            .filter_map(|r| run.record.get(r.unit.as_str()))
            .find_map(|c| c.task_description.as_ref());
        let mut lengths: Vec<usize> = rows.iter().map(|r| r.length).collect();
        lengths.sort();
        lengths.dedup();
        let legend: Vec<LegendEntry> = run
            .legend
            .iter()
            .filter(|l| {
                rows.iter().any(|r| {
                    r.model != "reference" && r.status == CellStatus::Ok && run.label(r) == l.label
                })
            })
            .map(|l| LegendEntry {
                label: l.label.clone(),
                color: l.color.clone(),
                ar: l.ar,
                replayed: l.replayed,
            })
            .collect();
        let task_cells: Vec<CellRecord> = run
            .cells
            .iter()
            .filter(|c| c.cell.task.name == task)
            .cloned()
            .collect();
        let task_metrics = crate::registry::declared(&task_cells);
        TaskSection {
            columns: self.columns(&task_metrics),
            task_metrics,
            name: task.to_string(),
            anchor: format!("task-{}", anchor(task)),
            label: description.map(|d| d.label.clone()).unwrap_or_default(),
            vocab_size: description.map(|d| d.vocab_size),
            lengths,
            optimal_ter: self.optimal_ter,
            support_log10_density: description.and_then(|d| d.support_log10_density),
            details: description
                .filter(|d| !d.details.is_null())
                .map(|d| d.details.to_string()),
            verdict_lines,
            legend,
            samples: self.samples(),
            aup: self.aup(),
            provenance: self.provenance(),
            metric_notes: self.metric_notes(),
            document_notes: self.document_notes(),
            plots,
            cost_plots,
            rows: rows.iter().map(|r| (*r).clone()).collect(),
            ar_units: rows
                .iter()
                .filter(|r| run.is_ar(r))
                .map(|r| r.unit.clone())
                .collect(),
        }
    }
}

/// A cell whose samples cost no network call was replayed from a file, not sampled: its
/// step count means nothing, so it is a reference line, never a point against steps. Read off
/// `batch_nfe` (the forwards made): the charged NFE is also 0 for a model cell whose
/// completions are all empty (the counting rule), which did sample.
pub(crate) fn replayed(r: &CellSummary) -> bool {
    r.model != "reference" && r.batch_nfe.map(|n| n as f64).or(r.nfe) == Some(0.0)
}

/// TER axes go logarithmic when the values span more than a factor of 4 (one-step samplers
/// reach many times the optimum; the interesting part is near it).
pub(super) fn ter_scale(series: &[Series], hlines: &[HLine]) -> Scale {
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
        text: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(model: &str, sampler_label: &str) -> CellSummary {
        let sampler = sampler_label.split('@').next().unwrap();
        serde_json::from_value(json!({
            "key": format!("2gram-ser/{model}/{sampler_label}/L32/seed0"),
            "unit": format!("{model}-{sampler_label}"), "task": "2gram-ser", "model": model,
            "sampler": sampler, "steps": 8, "length": 32, "seed": 0, "batch_size": 8,
            "status": "ok", "n": 10, "zero_probability_samples": 0,
        }))
        .expect("a summary row")
    }

    #[test]
    fn series_run_with_several_settings_are_told_apart_by_them() {
        let summary = [
            row("mdm", "low_confidence@8,block_length=8"),
            row(
                "mdm",
                "low_confidence@8,block_length=8,cache=\"dual\",refresh=2",
            ),
            row("mdm", "eb@8,gamma=0.1"),
            row("ar", "ar@32"),
        ];
        assert_eq!(
            sampler_settings(&summary[1]),
            "block_length=8, cache=dual, refresh=2"
        );
        assert_eq!(sampler_settings(&summary[3]), "");
        let run = RunView::new(&[], &summary, &[]);
        let labels: Vec<String> = summary.iter().map(|s| run.label(s)).collect();
        assert_eq!(
            labels,
            [
                "mdm · low_confidence · block_length=8",
                "mdm · low_confidence · block_length=8, cache=dual, refresh=2",
                // One setting only: the label stays `model · sampler`.
                "mdm · eb",
                "ar · ar",
            ]
        );
    }
}
